/**
 * Ingest: the indexer's streams of each network this process ingests, planned from the watch rules
 * and the marketplace contracts; logs assembled into events (assembly.ts); each network's events kept
 * in the chain's order however long their enrichment takes ({@link NetworkOrder}); receipts (final,
 * reorged) and BLOCK_REMOVED logs; and the hooks a backfill reads missed blocks back through.
 */
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import type { ReadBack } from '../core/reply.ts';
import type { StreamHealth } from '../core/status.ts';
import type { PlatformClient } from '../platform/client.ts';
import type { EventFilter, EventLog, TransactionReceipt } from '../platform/types.ts';
import { NetworkAssembly } from './assembly.ts';
import type { Backfill } from './backfill.ts';
import type { Matcher } from './match.ts';
import type { RuleIndex } from './rule-index.ts';
import { NetworkStreams, type StreamOptionsForAlerts } from './streams.ts';
import type { ChainEvent, CollectionFollower } from './types.ts';

/** Where a network's queue hands what reached its head, in order. */
export interface OrderedSink<E> {
  /** Records the values of events that are ready, in order (several at once: one durable write). */
  record(network: string, values: E[]): Promise<void>;
  /** Applies a reorg, after every event before it. */
  reorg(network: string, txnHash: string): Promise<void>;
  /** Whether a checkpoint reached now is safe: nothing before it waits in memory for the journal. */
  mayPass(): boolean;
}

type Slot<E> =
  | { kind: 'event'; value: E | undefined }
  | { kind: 'reorg'; txnHash: string }
  | { kind: 'checkpoint'; reached: () => void };

/**
 * One network's events in arrival order, each waiting for its value (its enrichment), reorgs waiting
 * for the events before them, and backfill checkpoints, reached once the events before them are
 * recorded. Whatever their enrichment time, events are recorded in this order, and all that are
 * ready are recorded together.
 */
export class NetworkOrder<E> {
  readonly network: string;
  readonly #sink: OrderedSink<E>;
  readonly #slots: Array<Slot<E>> = [];
  #draining: Promise<void> | undefined;

  constructor(network: string, sink: OrderedSink<E>) {
    this.network = network;
    this.#sink = sink;
  }

  /** Takes the next place for an event; call the returned function with its value once it is ready. */
  place(): (value: E) => void {
    const slot: Slot<E> = { kind: 'event', value: undefined };
    this.#slots.push(slot);
    return (value) => {
      slot.value = value;
      this.#drain();
    };
  }

  /** A reorg, in the queue after the events before it: it cannot overtake the alert it reverses. */
  reorg(txnHash: string): void {
    this.#slots.push({ kind: 'reorg', txnHash });
    this.#drain();
  }

  /** `reached` runs once every event placed so far is recorded. */
  checkpoint(reached: () => void): void {
    this.#slots.push({ kind: 'checkpoint', reached });
    this.#drain();
  }

  /** Something is queued or being recorded. */
  get busy(): boolean {
    return this.#draining !== undefined || this.#slots.length > 0;
  }

  /** The drain under way, if any. */
  get draining(): Promise<void> | undefined {
    return this.#draining;
  }

  /** Records the ready slots at the head of the queue, in order, as long as there are some. */
  #drain(): void {
    if (this.#draining) return;
    const isReady = (slot: Slot<E> | undefined) =>
      slot !== undefined && (slot.kind !== 'event' || slot.value !== undefined);
    const run = async () => {
      while (isReady(this.#slots[0])) {
        const ready: Array<Slot<E>> = [];
        while (isReady(this.#slots[0])) {
          const slot = this.#slots.shift() as Slot<E>;
          ready.push(slot);
          if (slot.kind !== 'event') break;
        }
        const values: E[] = [];
        for (const slot of ready) if (slot.kind === 'event') values.push(slot.value as E);
        if (values.length > 0) await this.#sink.record(this.network, values);
        const last = ready.at(-1);
        if (last?.kind === 'reorg') await this.#sink.reorg(this.network, last.txnHash);
        // Alerts kept in memory for the journal are not recorded: the cursor must not pass them.
        else if (last?.kind === 'checkpoint' && this.#sink.mayPass()) last.reached();
      }
    };
    // `.finally` runs after the assignment, even when `run` has nothing to do; a head that became
    // ready while the last batch was written starts the next drain.
    this.#draining = run().finally(() => {
      this.#draining = undefined;
      if (isReady(this.#slots[0])) this.#drain();
    });
  }
}

/** The events after which who holds what has changed. */
const MOVES_TOKENS: ReadonlySet<ChainEvent['kind']> = new Set(['mint', 'burn', 'transfer', 'sale']);

export interface IngestOptions<E> {
  platform: PlatformClient;
  logger: Logger;
  /** The rule index the streams are planned from and the classifier asks which collections are watched. */
  matcher: Matcher;
  /**
   * Whether this process ingests a network's streams (default: every network). With a shared
   * database exactly one process does at a time; call {@link Ingest.replan} when that changes.
   */
  ingests?: ((network: string) => boolean) | undefined;
  /**
   * The platform's marketplace contracts per network. Every network this process ingests that has
   * some is subscribed to them, watched or not, so that the market history records every sale from
   * start-up; events that match no rule still make no alert.
   */
  marketplaceContracts?: Readonly<Record<string, readonly string[]>> | undefined;
  /** Services that follow collections through the same streams (holder roles); see {@link CollectionFollower}. */
  followers?: readonly CollectionFollower[] | undefined;
  /** Rule changes are gathered this long before the streams are re-planned. Default 1 s. */
  replanDelayMs?: number | undefined;
  /** A transaction's logs are complete once the next transaction starts, or after this quiet time. Default 2 ms. */
  flushDelayMs?: number | undefined;
  streams?: StreamOptionsForAlerts | undefined;
  /** Reads back from the chain the blocks the streams did not show (start, reconnects); see backfill.ts. */
  backfill?: Backfill | undefined;
  /** Receives each transaction's events, with the network's queue that keeps them in order. */
  onEvents: (events: ChainEvent[], order: NetworkOrder<E>) => void;
  /** A transaction left the chain (a reorged receipt, or its logs again as BLOCK_REMOVED): once per block. */
  onReorged: (network: string, txnHash: string) => void;
  /** A transaction's receipt is final. */
  onFinal: (network: string, txnHash: string) => void;
  /** Where each network's queue hands its events and reorgs. */
  sink: OrderedSink<E>;
  /** Blocks read back from the chain by a backfill run (the record's completeness). */
  onReadBack?: ((network: string, blocks: number) => void) | undefined;
  /** Blocks whose events were not seen and will not be: a stream gap, or beyond the backfill's limit. */
  onMissed?: ((network: string, blocks: number) => void) | undefined;
}

interface NetworkState<E> {
  streams: NetworkStreams;
  assembly: NetworkAssembly;
  order: NetworkOrder<E>;
}

/** The blocks of a network's latest backfill run: their events are marked read back, and why. */
interface ReadBackRange {
  fromBlock: number;
  toBlock: number;
  why: ReadBack;
}

/** The streams of every network, planned from the rules; see the module comment. */
export class Ingest<E> {
  /** Event logs received from the streams (and read back by a backfill). */
  logs = 0;
  readonly #o: IngestOptions<E>;
  readonly #networks = new Map<string, NetworkState<E>>();
  /** What each network's streams were last planned from: planning again from the same is skipped. */
  readonly #plannedFrom = new Map<string, { index: RuleIndex; version: number; ingested: boolean; followed: number }>();
  /** Moves when a follower's collections change. */
  #followedVersion = 0;
  /** The marketplace contracts (lower case) of the networks the platform client knows: followed without rules. */
  readonly #marketplaces = new Map<string, ReadonlySet<string>>();
  /** Transactions already reversed, by network, hash and block: receipts and BLOCK_REMOVED logs both say it. */
  readonly #reorgsSeen = new LRUCache<string, true>({ max: 10_000 });
  #replanTimer: NodeJS.Timeout | undefined;
  #planning: Promise<void> = Promise.resolve();
  #stopped = false;

  constructor(options: IngestOptions<E>) {
    this.#o = options;
    for (const [network, contracts] of Object.entries(options.marketplaceContracts ?? {})) {
      if (contracts.length === 0) continue;
      if (options.platform.networks.find(network)) {
        this.#marketplaces.set(network, new Set(contracts.map((contract) => contract.toLowerCase())));
      } else {
        options.logger.warn({ network }, 'marketplace contracts name a network the platform client does not know');
      }
    }
  }

  /** Indexes the rules (and follows them), opens the streams. Resolves once they are connected. */
  async start(): Promise<void> {
    this.#o.matcher.follow(() => this.#schedulePlan());
    for (const follower of this.#o.followers ?? []) {
      follower.onCollectionsChanged(() => {
        this.#followedVersion++;
        this.#schedulePlan();
      });
    }
    await this.#refreshIndex();
    await this.#plan();
    this.#o.backfill?.started();
  }

  /** Opens or closes streams now, e.g. when this process starts or stops ingesting a network. */
  replan(): Promise<void> {
    const run = this.#planning.then(async () => {
      await this.#refreshIndex();
      return this.#plan();
    });
    this.#planning = run.catch(() => {});
    return run;
  }

  /** Stops the streams; then waits for every event received to be recorded. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#replanTimer);
    for (const state of this.#networks.values()) {
      state.assembly.stop();
      state.streams.stop();
    }
    await this.idle();
  }

  health(): StreamHealth[] {
    return [...this.#networks.values()].map((s) => s.streams.health());
  }

  /** Ends the transactions being assembled, then waits until every event received is recorded. */
  async settled(): Promise<void> {
    for (const state of this.#networks.values()) state.assembly.flush();
    await this.idle();
  }

  /** Resolves when every network's queue is recorded. */
  async idle(): Promise<void> {
    for (;;) {
      const busy = [...this.#networks.values()].filter((s) => s.order.busy);
      if (busy.length === 0) return;
      await Promise.all(busy.map((s) => s.order.draining ?? new Promise((resolve) => setTimeout(resolve, 5))));
    }
  }

  /** Whether this process keeps an index: it does when it ingests some network. */
  #refreshIndex(): Promise<void> {
    const ingests = this.#o.ingests;
    const any = !ingests || this.#o.platform.networks.all.some((n) => ingests(n.name));
    return this.#o.matcher.refresh(any);
  }

  #schedulePlan(): void {
    clearTimeout(this.#replanTimer);
    this.#replanTimer = setTimeout(() => {
      this.#planning = this.#planning
        .then(() => this.#o.matcher.loaded())
        .then(() => this.#plan())
        .catch((error: unknown) => {
          this.#o.logger.error({ err: error }, 'could not re-plan the alert streams');
        });
    }, this.#o.replanDelayMs ?? 1_000);
  }

  /** One events filter per network: the watched collections plus the marketplace contracts. */
  async #plan(): Promise<void> {
    if (this.#stopped) return;
    const index = this.#o.matcher.index;
    const followed = (this.#o.followers ?? []).flatMap((f) => f.networks());
    const networks = new Set([...index.networks(), ...followed, ...this.#networks.keys()]);
    const plans: Promise<void>[] = [];
    for (const network of networks) {
      if (!this.#o.platform.networks.find(network)) {
        this.#o.logger.warn({ network }, 'rules name a network the platform client does not know');
        continue;
      }
      plans.push(this.#planNetwork(index, network));
    }
    for (const network of this.#marketplaces.keys()) {
      const ingested = this.#o.ingests?.(network) ?? true;
      if (ingested && !networks.has(network)) plans.push(this.#planNetwork(index, network));
    }
    await Promise.all(plans);
    this.#o.logger.debug(
      { networks: index.networks().map((n) => `${n}:${index.collectionCount(n)}`) },
      'alert streams planned',
    );
  }

  /**
   * Subscribes a network's streams to its watched collections and the marketplace contracts. Not
   * async: the contracts (packed, however many: a million watched collections are no million strings)
   * are split into the streams' shares before this returns, and not kept while they connect.
   */
  #planNetwork(index: RuleIndex, network: string): Promise<void> {
    // A network another process ingests gets no streams here (an empty filter closes them).
    const ingested = this.#o.ingests?.(network) ?? true;
    const version = index.collectionsVersion(network);
    const last = this.#plannedFrom.get(network);
    const followed = this.#followedVersion;
    if (last?.index === index && last.version === version && last.ingested === ingested && last.followed === followed) {
      return Promise.resolve();
    }
    this.#plannedFrom.set(network, { index, version, ingested, followed });
    const more = [
      ...(this.#o.marketplaceContracts?.[network] ?? []),
      ...(this.#o.followers ?? []).flatMap((f) => f.collections(network)),
    ];
    const filter: EventFilter = { contractAddresses: ingested ? index.packedCollections(network, more) : [] };
    return this.#state(network)
      .streams.plan(filter)
      .catch((error: unknown) => {
        this.#plannedFrom.delete(network);
        throw error;
      });
  }

  #state(network: string): NetworkState<E> {
    let state = this.#networks.get(network);
    if (state) return state;
    const { matcher, logger } = this.#o;
    const marketplaces = this.#marketplaces.get(network);
    const order = new NetworkOrder<E>(network, this.#o.sink);
    let readBack: ReadBackRange | undefined;
    const assembly = new NetworkAssembly({
      network,
      isCollection: (address) => matcher.watches(network, address) || this.#followed(network, address),
      marketplaces,
      flushDelayMs: this.#o.flushDelayMs,
      onEvents: (events) => {
        // Logs of those blocks came only from the backfill run (the streams' copies are duplicates, dropped).
        if (readBack) {
          for (const event of events) {
            if (event.blockNumber >= readBack.fromBlock && event.blockNumber <= readBack.toBlock)
              event.readBack = readBack.why;
          }
        }
        this.#handOver(events);
        this.#o.onEvents(events, order);
      },
      logger,
    });
    const log = (entry: EventLog) => this.#log(network, assembly, entry);
    const streams = new NetworkStreams(
      this.#o.platform,
      network,
      {
        onLog: log,
        onReceipt: (receipt) => this.#receipt(network, receipt),
        onGap: (from, to) => this.#o.onMissed?.(network, to - from + 1),
      },
      logger,
      this.#o.streams,
    );
    // Begin backfill hooks: read-back logs take the streams' entry point.
    streams.useBackfill(
      this.#o.backfill?.network(network, {
        deliver: log,
        flush: () => assembly.flush(),
        checkpoint: (block, reached) => {
          // A transaction of those blocks still being assembled is complete by now (its logs came together).
          assembly.flushThrough(block);
          order.checkpoint(reached);
        },
        contracts: () => ({
          size: streams.contractCount(),
          lists: (size) => streams.contractLists(size),
          has: (address) =>
            matcher.watches(network, address) ||
            marketplaces?.has(address) === true ||
            this.#followed(network, address),
        }),
        gap: (from, to) => streams.reportGap(from, to),
        readBack: (fromBlock, toBlock, why) => {
          readBack = { fromBlock, toBlock, why };
          this.#o.onReadBack?.(network, toBlock - fromBlock + 1);
        },
      }),
    );
    // End backfill hooks.
    state = { streams, assembly, order };
    this.#networks.set(network, state);
    return state;
  }

  #followed(network: string, collection: string): boolean {
    return (this.#o.followers ?? []).some((f) => f.watches(network, collection));
  }

  /** Tokens that changed hands go to the followers of their collection, with the wallets involved. */
  #handOver(events: readonly ChainEvent[]): void {
    const followers = this.#o.followers ?? [];
    if (followers.length === 0) return;
    for (const event of events) {
      if (!MOVES_TOKENS.has(event.kind)) continue;
      for (const follower of followers) {
        if (!follower.watches(event.network, event.collection)) continue;
        const accounts = [event.from, event.to, ...event.accounts].filter((a): a is string => a !== undefined);
        follower.tokensMoved({
          network: event.network,
          collection: event.collection,
          accounts: [...new Set(accounts)],
        });
      }
    }
  }

  #log(network: string, assembly: NetworkAssembly, log: EventLog): void {
    this.logs++;
    // Begin BLOCK_REMOVED: the stream says the log's block left the chain, as a reorged receipt would.
    if (log.type === 'BLOCK_REMOVED') {
      this.#reorged(network, log.txnHash, log.blockHash);
      return;
    }
    // End BLOCK_REMOVED.
    assembly.push(log);
  }

  #receipt(network: string, receipt: TransactionReceipt): void {
    if (receipt.reorged) this.#reorged(network, receipt.txnHash, receipt.blockHash);
    else if (receipt.final) this.#o.onFinal(network, receipt.txnHash);
  }

  /** A transaction left the chain: once per block, queued after the events before it. */
  #reorged(network: string, txnHash: string, blockHash: string | undefined): void {
    const key = `${network}|${txnHash.toLowerCase()}|${String(blockHash).toLowerCase()}`;
    if (this.#reorgsSeen.has(key)) return;
    this.#reorgsSeen.set(key, true);
    this.#o.onReorged(network, txnHash);
    this.#state(network).order.reorg(txnHash);
  }
}
