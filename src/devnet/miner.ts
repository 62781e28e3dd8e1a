import {
  type ActivityKind,
  ActivityRunner,
  type ActivitySpec,
  type MinedTransaction,
  type PendingSummary,
} from './activity.ts';
import type { PendingTxn } from './chain.ts';
import { errors, RpcError } from './errors.ts';
import type { DevnetState, NetworkState } from './state.ts';

/** What a mined block contained. */
export interface MineResult {
  network: string;
  blockNumber: number;
  blockHash: string;
  txnHashes: string[];
  transactions: MinedTransaction[];
}

export interface ReorgResult {
  network: string;
  depth: number;
  /** Removed blocks, newest first. */
  removedBlocks: Array<{ number: number; hash: string }>;
  /** Transactions of the removed blocks; their receipts were sent again with `reorged: true`. */
  reorgedTxnHashes: string[];
  head: { number: number; hash: string };
}

export interface MinerLogger {
  debug?(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

const RANDOM_KINDS: ReadonlyArray<readonly [ActivityKind | 'sweep', number]> = [
  ['listing', 30],
  ['offer', 18],
  ['sale', 15],
  ['transfer', 10],
  ['cancel', 10],
  ['mint', 8],
  ['sweep', 4],
  ['burn', 2],
];

/** Mines blocks: with given activity (control API), or random activity on a timer. */
export class Miner {
  readonly #state: DevnetState;
  readonly #runners = new Map<NetworkState, ActivityRunner>();
  readonly #logger: MinerLogger | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(state: DevnetState, logger?: MinerLogger) {
    this.#state = state;
    this.#logger = logger;
    for (const network of state.networks) this.#runners.set(network, new ActivityRunner(network, state.accounts));
  }

  network(ref: string | undefined): NetworkState {
    const network = ref === undefined ? this.#state.networks[0] : this.#state.network(ref);
    if (!network) {
      throw errors.invalidArgument(
        `network: unknown network ${JSON.stringify(ref)}; this devnet serves ${this.#state.describeNetworks()}`,
      );
    }
    return network;
  }

  /** Mines one block with exactly this activity, one transaction per item; all or nothing. */
  mine(network: NetworkState, specs: readonly ActivitySpec[]): MineResult {
    const runner = this.#runner(network);
    const next = network.chain.nextBlock();
    const built: Array<{ txn: PendingTxn; summary: PendingSummary }> = [];
    try {
      specs.forEach((spec, i) => {
        built.push(runner.apply(spec, `activity[${i}]`, next));
      });
    } catch (error) {
      for (let i = built.length - 1; i >= 0; i--) built[i]?.txn.rollback();
      throw error;
    }
    return this.#commit(network, built, next.timestampMs);
  }

  /** Mines one block of random activity; items that do not fit the current state are left out. */
  mineRandom(network: NetworkState): MineResult {
    const runner = this.#runner(network);
    const prng = network.prng;
    const next = network.chain.nextBlock();
    const built: Array<{ txn: PendingTxn; summary: PendingSummary }> = [];
    const count = prng.weighted([2, 4, 4, 3, 2, 1]);
    const weights = RANDOM_KINDS.map(([, w]) => w);
    for (let i = 0; i < count; i++) {
      const kind = RANDOM_KINDS[prng.weighted(weights)]?.[0] ?? 'listing';
      const spec: ActivitySpec = kind === 'sweep' ? { kind: 'sale', count: prng.int(2, 4) } : { kind };
      try {
        built.push(runner.apply(spec, 'random', next));
      } catch (error) {
        if (!(error instanceof RpcError)) throw error;
      }
    }
    return this.#commit(network, built, next.timestampMs);
  }

  reorg(network: NetworkState, depth: number): ReorgResult {
    const removed = network.chain.reorg(depth);
    const head = network.chain.head;
    this.#logger?.debug?.({ network: network.name, depth, head: head.number }, 'devnet reorg');
    return {
      network: network.name,
      depth,
      removedBlocks: removed.map((b) => ({ number: b.number, hash: b.hash })),
      reorgedTxnHashes: removed.flatMap((b) => b.txns.map((t) => t.hash)),
      head: { number: head.number, hash: head.hash },
    };
  }

  /** Mines random blocks on every network every `intervalMs`, with an occasional shallow reorg. */
  start(intervalMs: number): void {
    this.stop();
    if (intervalMs <= 0) return;
    this.#timer = setInterval(() => {
      for (const network of this.#state.networks) {
        try {
          const reorganisable = network.chain.reorganisable;
          if (reorganisable > 0 && network.prng.chance(0.03)) {
            this.reorg(network, network.prng.int(1, Math.min(2, reorganisable)));
          }
          this.mineRandom(network);
        } catch (error) {
          this.#logger?.warn({ err: error, network: network.name }, 'devnet block failed');
        }
      }
    }, intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #runner(network: NetworkState): ActivityRunner {
    const runner = this.#runners.get(network);
    if (!runner) throw new Error(`no runner for ${network.name}`);
    return runner;
  }

  #commit(
    network: NetworkState,
    built: Array<{ txn: PendingTxn; summary: PendingSummary }>,
    timestampMs: number,
  ): MineResult {
    const block = network.chain.commit(
      built.map((b) => b.txn),
      timestampMs,
    );
    const transactions = block.txns.map((txn, i) => ({ txnHash: txn.hash, ...(built[i]?.summary as PendingSummary) }));
    this.#logger?.debug?.(
      { network: network.name, block: block.number, txns: transactions.map((t) => t.kind) },
      'devnet block',
    );
    return {
      network: network.name,
      blockNumber: block.number,
      blockHash: block.hash,
      txnHashes: block.txns.map((t) => t.hash),
      transactions,
    };
  }
}
