import { errors } from './errors.ts';
import { type EncodedLog, type EventDef, type EventValue, encodeLog } from './events.ts';
import { hashText } from './hex.ts';
import { Prng } from './prng.ts';

type Undo = () => void;

/** One log of a mined transaction. */
export interface LogRecord {
  /** Sequence number of the log on its network. */
  id: number;
  def: EventDef;
  contractAddress: string;
  /** Indexer contract type: ERC721, ERC1155 or SEQ_MARKETPLACE. */
  contractType: string;
  encoded: EncodedLog;
  /** Every address argument, lower-case (for the `accounts` filter). */
  addresses: string[];
  /** Token ids the log is about, including the token of a marketplace request. */
  tokenIds: string[];
  /** The collection a marketplace log is about. */
  tokenContract: string | undefined;
  /** Position of the log in its block (Ethereum's logIndex). */
  logIndex: number;
  /** The NDJSON line of this log while its block is being delivered. */
  line?: string | undefined;
}

export interface TxnRecord {
  hash: string;
  index: number;
  from: string;
  to: string;
  value: bigint;
  gasUsed: number;
  effectiveGasPrice: bigint;
  logs: LogRecord[];
  undo: Undo[];
  block: BlockRecord;
}

export interface BlockRecord {
  number: number;
  hash: string;
  parentHash: string;
  /** Seconds since the epoch. */
  timestamp: number;
  /** The timestamp as ISO 8601, as logs carry it. */
  iso: string;
  txns: TxnRecord[];
  final: boolean;
}

/** A transaction being built: its logs and the undo of its state changes. */
export class PendingTxn {
  readonly logs: LogRecord[] = [];
  readonly undo: Undo[] = [];
  value = 0n;

  constructor(
    readonly from: string,
    readonly to: string,
  ) {}

  log(
    def: EventDef,
    contractAddress: string,
    contractType: string,
    values: readonly EventValue[],
    meta: { tokenIds: string[]; tokenContract?: string },
  ): void {
    const addresses: string[] = [];
    def.types.forEach((type, i) => {
      if (type === 'address') addresses.push(String(values[i]).toLowerCase());
    });
    this.logs.push({
      id: 0,
      logIndex: 0,
      def,
      contractAddress,
      contractType,
      encoded: encodeLog(def, values),
      addresses,
      tokenIds: meta.tokenIds,
      tokenContract: meta.tokenContract,
    });
  }

  /** Records how to reverse a state change of this transaction. */
  onUndo(undo: Undo): void {
    this.undo.push(undo);
  }

  rollback(): void {
    for (let i = this.undo.length - 1; i >= 0; i--) this.undo[i]?.();
    this.undo.length = 0;
  }
}

export interface ChainEvents {
  /** A block was added; `finalized` are the blocks that became final with it (possibly itself). */
  onBlock(block: BlockRecord, finalized: readonly BlockRecord[]): void;
  /** Blocks were removed by a reorganisation, newest first; their state is already rolled back. */
  onReorg(removed: readonly BlockRecord[]): void;
}

/**
 * The simulated chain of one network: a window of recent blocks with the undo of every
 * transaction, so that a reorganisation can roll the state back. A block is final once
 * `finalityDepth` blocks sit on top of it; final blocks cannot be reorganised.
 */
export class Chain {
  readonly chainId: number;
  readonly finalityDepth: number;
  readonly blocks: BlockRecord[] = [];
  head: { number: number; hash: string; timestamp: number };
  readonly #listeners: ChainEvents[] = [];
  readonly #clock: () => number;
  #nonce = 0;
  #logId = 0;

  constructor(fields: {
    chainId: number;
    headNumber: number;
    seed: number;
    finalityDepth: number;
    clock: () => number;
  }) {
    this.chainId = fields.chainId;
    this.finalityDepth = fields.finalityDepth;
    this.#clock = fields.clock;
    this.head = {
      number: fields.headNumber,
      hash: hashText(`${fields.chainId}:head:${fields.seed}`),
      timestamp: Math.floor(fields.clock() / 1000),
    };
  }

  listen(listener: ChainEvents): void {
    this.#listeners.push(listener);
  }

  /** Number and timestamp (ms) the next block will have. */
  nextBlock(): { number: number; timestampMs: number } {
    const timestamp = Math.max(this.head.timestamp + 1, Math.floor(this.#clock() / 1000));
    return { number: this.head.number + 1, timestampMs: timestamp * 1000 };
  }

  /** Seals the transactions into the next block and announces it. */
  commit(pending: readonly PendingTxn[], timestampMs: number): BlockRecord {
    this.#nonce++;
    const number = this.head.number + 1;
    const hash = hashText(`${this.chainId}:${number}:${this.head.hash}:${this.#nonce}`);
    const block: BlockRecord = {
      number,
      hash,
      parentHash: this.head.hash,
      timestamp: Math.floor(timestampMs / 1000),
      iso: new Date(Math.floor(timestampMs / 1000) * 1000).toISOString(),
      txns: [],
      final: false,
    };
    let logIndex = 0;
    // Transaction hashes: drawn from a generator seeded with the block hash (unique per block), far
    // cheaper than hashing each transaction on the mining hot path.
    const txnHashes = Prng.fromHex(hash);
    pending.forEach((txn, index) => {
      for (const log of txn.logs) {
        log.id = ++this.#logId;
        log.logIndex = logIndex++;
      }
      const record: TxnRecord = {
        hash: `0x${txnHashes.hex(32)}`,
        index,
        from: txn.from,
        to: txn.to,
        value: txn.value,
        gasUsed: 21_000 + txn.logs.length * 38_000,
        effectiveGasPrice: 1_500_000_000n + BigInt(number % 1000) * 1_000_000n,
        logs: txn.logs,
        undo: txn.undo,
        block,
      };
      block.txns.push(record);
    });
    this.blocks.push(block);
    this.head = { number, hash, timestamp: block.timestamp };
    const finalized: BlockRecord[] = [];
    for (const candidate of this.blocks) {
      if (!candidate.final && candidate.number <= number - this.finalityDepth) {
        candidate.final = true;
        for (const txn of candidate.txns) txn.undo = [];
        finalized.push(candidate);
      }
    }
    const keep = this.finalityDepth + 2;
    if (this.blocks.length > keep) this.blocks.splice(0, this.blocks.length - keep);
    for (const listener of this.#listeners) listener.onBlock(block, finalized);
    return block;
  }

  /** Blocks that a reorganisation may still remove. */
  get reorganisable(): number {
    return this.blocks.filter((b) => !b.final).length;
  }

  /** Removes the last `depth` blocks, rolling back their transactions, newest first. */
  reorg(depth: number): BlockRecord[] {
    if (!Number.isInteger(depth) || depth < 1 || depth > this.reorganisable) {
      throw errors.invalidArgument(
        `depth: expected an integer from 1 to ${this.reorganisable} (blocks not yet final; finality depth ${this.finalityDepth}), got ${depth}`,
      );
    }
    const removed = this.blocks.splice(this.blocks.length - depth, depth).reverse();
    for (const block of removed) {
      for (let t = block.txns.length - 1; t >= 0; t--) {
        const txn = block.txns[t] as TxnRecord;
        for (let u = txn.undo.length - 1; u >= 0; u--) txn.undo[u]?.();
        txn.undo = [];
      }
    }
    const oldest = removed[removed.length - 1] as BlockRecord;
    this.head = { number: oldest.number - 1, hash: oldest.parentHash, timestamp: this.head.timestamp };
    for (const listener of this.#listeners) listener.onReorg(removed);
    return removed;
  }
}
