import type { BlockRecord, Chain } from './chain.ts';

/** Options of {@link ChainHistory}. */
export interface HistoryLimits {
  /** Most blocks kept (default {@link DEFAULT_HISTORY_BLOCKS}). */
  blocks?: number;
  /** Most logs kept in those blocks (default {@link DEFAULT_HISTORY_LOGS}): a busy chain keeps fewer blocks. */
  logs?: number;
}

export const DEFAULT_HISTORY_BLOCKS = 20_000;
export const DEFAULT_HISTORY_LOGS = 200_000;

/**
 * The canonical blocks of one simulated chain since the devnet started, for the JSON-RPC endpoint
 * (see chain-rpc.ts): blocks removed by a reorganisation leave it, the oldest are pruned past the
 * limits like a node that does not keep all history. The chain itself only keeps the blocks a reorg
 * may still remove; this holds the records it lets go of (their undo lists are empty by then).
 */
export class ChainHistory {
  /** The head when the devnet started: no block up to it holds a log. */
  readonly genesis: { number: number; hash: string; timestamp: number };
  readonly #blocks: BlockRecord[] = [];
  readonly #byHash = new Map<string, BlockRecord>();
  readonly #maxBlocks: number;
  readonly #maxLogs: number;
  #logs = 0;
  /** Lowest block number still served with its logs (blocks below it were pruned). */
  #oldest: number;

  constructor(chain: Chain, limits: HistoryLimits = {}) {
    this.genesis = { ...chain.head };
    this.#oldest = chain.head.number + 1;
    this.#maxBlocks = Math.max(1, limits.blocks ?? DEFAULT_HISTORY_BLOCKS);
    this.#maxLogs = Math.max(1, limits.logs ?? DEFAULT_HISTORY_LOGS);
    chain.listen({
      onBlock: (block) => this.#add(block),
      onReorg: (removed) => this.#remove(removed),
    });
  }

  /** Number of the newest canonical block. */
  get head(): number {
    return this.#blocks.at(-1)?.number ?? this.genesis.number;
  }

  /** Lowest block whose logs are still kept; ranges below it (and above the genesis) are pruned. */
  get oldest(): number {
    return this.#oldest;
  }

  /** A canonical block since the start, or undefined (unknown, pruned, or not mined yet). */
  block(number: number): BlockRecord | undefined {
    const first = this.#blocks[0];
    if (!first) return undefined;
    return this.#blocks[number - first.number];
  }

  byHash(hash: string): BlockRecord | undefined {
    return this.#byHash.get(hash.toLowerCase());
  }

  /** The kept canonical blocks from `from` to `to` (inclusive), oldest first. */
  range(from: number, to: number): BlockRecord[] {
    const first = this.#blocks[0];
    if (!first || to < from) return [];
    const start = Math.max(0, from - first.number);
    const end = Math.min(this.#blocks.length, to - first.number + 1);
    return start < end ? this.#blocks.slice(start, end) : [];
  }

  #add(block: BlockRecord): void {
    this.#blocks.push(block);
    this.#byHash.set(block.hash, block);
    this.#logs += logCount(block);
    while (this.#blocks.length > this.#maxBlocks || (this.#logs > this.#maxLogs && this.#blocks.length > 1)) {
      const pruned = this.#blocks.shift() as BlockRecord;
      this.#byHash.delete(pruned.hash);
      this.#logs -= logCount(pruned);
      this.#oldest = pruned.number + 1;
    }
  }

  #remove(removed: readonly BlockRecord[]): void {
    for (const block of removed) {
      if (this.#blocks.at(-1) !== block) continue;
      this.#blocks.pop();
      this.#byHash.delete(block.hash);
      this.#logs -= logCount(block);
    }
  }
}

function logCount(block: BlockRecord): number {
  let count = 0;
  for (const txn of block.txns) count += txn.logs.length;
  return count;
}
