import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { deliveryId, JournalWriteError, type NewDelivery } from '../core/deliveries.ts';
import type { DeliveryLog, RulesChange, RulesRepository } from '../core/ports.ts';
import type { JournalBacklog, JournalWriteFailure, StreamHealth } from '../core/status.ts';
import { byDestination, type Destination, destinationKey } from '../core/types.ts';
import type { DeliveryQueue } from '../delivery/dispatcher.ts';
import type { PlatformClient } from '../platform/client.ts';
import type { EventFilter, EventLog, TransactionReceipt } from '../platform/types.ts';
import type { Backfill } from './backfill.ts';
import { classifyTransaction, TransactionAssembler } from './classify.ts';
import type { EnrichedEvent, Enricher } from './enrich.ts';
import type { MarketRecorder } from './market-history.ts';
import { alertsFor } from './render.ts';
import { admitsTokens, type MatchingRule, matchDestinations, RuleIndex } from './rule-index.ts';
import { NetworkStreams, type StreamOptionsForAlerts } from './streams.ts';
import type { ChainEvent, CollectionFollower } from './types.ts';

export interface AlertPipelineOptions {
  platform: PlatformClient;
  store: RulesRepository;
  journal: DeliveryLog;
  /** Where recorded deliveries go: this process's dispatcher, or the chat claims with a shared database. */
  dispatcher: DeliveryQueue;
  /**
   * Whether this process ingests a network's streams (default: every network). With a shared
   * database exactly one process does at a time; call {@link AlertPipeline.replan} when that changes.
   */
  ingests?: (network: string) => boolean;
  enricher: Enricher;
  logger: Logger;
  /**
   * The platform's marketplace contracts per network. Every network this process ingests that has
   * some is subscribed to them, watched or not, so that the market history records every sale from
   * start-up; events that match no rule still make no alert.
   */
  marketplaceContracts?: Readonly<Record<string, readonly string[]>>;
  /** Rule changes are gathered this long before the streams are re-planned. Default 1 s. */
  replanDelayMs?: number;
  /** A transaction's logs are complete once the next transaction starts, or after this quiet time. Default 2 ms. */
  flushDelayMs?: number;
  streams?: StreamOptionsForAlerts;
  /** Enrichment slower than this is given up: the alert goes out with what the chain says. Default 10 s. */
  enrichLimitMs?: number;
  /** How long a listing is remembered to recognise an identical relist. Default 24 h; 0 turns it off. */
  relistWindowMs?: number;
  /** Observes each alert handed to delivery (metrics, latency benchmarks). */
  onRecorded?: (event: ChainEvent, destinations: number) => void;
  /** What is done with alerts while the journal cannot be written. */
  journalRetry?: JournalRetryOptions;
  /** Reads back from the chain the blocks the streams did not show (start, reconnects); see backfill.ts. */
  backfill?: Backfill;
  /**
   * The market history: it is told every sale the streams show (a rule matched it or not), the
   * floors enrichment looks up and the reorgs, and gives sale alerts the token's last sale.
   */
  market?: MarketRecorder;
  /** Services that follow collections through the same streams (holder roles); see {@link CollectionFollower}. */
  followers?: readonly CollectionFollower[];
}

/**
 * Most deliveries kept in memory while the journal cannot be written (a disk that is full), each with
 * its rendered alert (a few KiB at most), so that an outage of hours cannot exhaust the process's
 * memory. An alert beyond it is dropped and counted
 * ({@link PipelineCounters.dropped}); a recorded one is never dropped for lack of room.
 */
export const MAX_UNRECORDED_DELIVERIES = 10_000;

/** The events after which who holds what has changed. */
const MOVES_TOKENS: ReadonlySet<ChainEvent['kind']> = new Set(['mint', 'burn', 'transfer', 'sale']);

/**
 * Alerts whose journal write failed ({@link JournalWriteError}: disk full, file size limit, I/O
 * error) wait in memory, in order, and are written again with back-off; later alerts queue behind
 * them, so that each chat still gets its alerts in the chain's order. Once the journal accepts them
 * they are recorded and delivered as usual, once. Reorgs queue with them (they are a few bytes and
 * must not overtake the alerts they reverse); they do not count against `maxDeliveries`.
 */
export interface JournalRetryOptions {
  /** Most deliveries kept; alerts beyond are dropped and counted. Default {@link MAX_UNRECORDED_DELIVERIES}. */
  maxDeliveries?: number;
  /** First delay before writing them again; doubles after each failed attempt. Default 1 s. */
  minDelayMs?: number;
  /** Longest delay between two attempts. Default 5 s. */
  maxDelayMs?: number;
}

/** Counters of what went through, for /status and metrics. */
export interface PipelineCounters {
  logs: number;
  events: number;
  matched: number;
  deliveries: number;
  reorged: number;
  /** Listings that repeat one seen within the relist window. */
  relists: number;
  /**
   * Deliveries never recorded nor sent: the journal could not be written and the alerts kept for it
   * were at their limit ({@link JournalRetryOptions.maxDeliveries}), or the process stopped (or the
   * journal refused them for another reason, such as being closed) before they could be written.
   */
  dropped: number;
}

/** A batch of rendered alerts, or a reorg, that the journal has not recorded yet. */
type Unrecorded =
  | { kind: 'alerts'; events: readonly ChainEvent[]; perEvent: readonly NewDelivery[][]; deliveries: number }
  | { kind: 'reorg'; network: string; txnHash: string };

/** Since the journal's writes began to fail, as the pipeline saw it. */
interface Outage {
  startedAt: number;
  /** The failure that started it: still reported while alerts wait, even if a smaller write got through. */
  failure: JournalWriteFailure;
  /** Delay before the next attempt. */
  delayMs: number;
  /** Deliveries kept in memory, then recorded. */
  recorded: number;
  dropped: number;
  full: boolean;
}

/**
 * An event waiting for its enrichment, a reorg waiting for the events before it, or a backfill
 * checkpoint: reached once the events before it are recorded.
 */
type Slot =
  | { kind: 'event'; event: ChainEvent; rules: MatchingRule[]; enriched: EnrichedEvent | undefined }
  | { kind: 'reorg'; txnHash: string }
  | { kind: 'checkpoint'; reached: () => void };

interface NetworkState {
  assembler: TransactionAssembler;
  flushTimer: NodeJS.Timeout | undefined;
  streams: NetworkStreams;
  /**
   * Events of this network in arrival order. Whatever their enrichment time, they are recorded in
   * this order, and all that are ready are recorded with one durable journal write.
   */
  slots: Slot[];
  draining: Promise<void> | undefined;
  /** Block of the transaction the assembler holds, if it holds one. */
  assembling: number | undefined;
}

/**
 * From the indexer's streams to journaled deliveries: plans one events stream per network from the
 * watch rules, groups logs into transactions, classifies them, finds the matching rules through the
 * index, enriches each event once, renders one alert per destination, records the deliveries in the
 * journal before anything is sent, and hands them to the dispatcher. Receipts close deliveries when
 * final and turn sent alerts into "reversed" edits when reorganised.
 */
export class AlertPipeline {
  readonly counters: PipelineCounters = {
    logs: 0,
    events: 0,
    matched: 0,
    deliveries: 0,
    reorged: 0,
    relists: 0,
    dropped: 0,
  };
  readonly #options: AlertPipelineOptions;
  /** Recent listings by what makes them identical, with the transaction that made each. */
  readonly #listings: LRUCache<string, { network: string; txnHash: string }> | undefined;
  #index = new RuleIndex();
  /** Whether the index holds the rules (it does in a process that ingests some network). */
  #indexed = false;
  /** Index loads, one at a time. */
  #indexing: Promise<void> = Promise.resolve();
  /** The load that has not finished yet, if any (asking again while it runs waits for it). */
  #loading: Promise<void> | undefined;
  /** Rule changes heard while the index loads, applied once it has. */
  #heldChanges: RulesChange[] | undefined;
  readonly #networks = new Map<string, NetworkState>();
  /** What each network's streams were last planned from: planning again from the same is skipped. */
  readonly #plannedFrom = new Map<string, { index: RuleIndex; version: number; ingested: boolean; followed: number }>();
  /** Moves when a follower's collections change. */
  #followedVersion = 0;
  #replanTimer: NodeJS.Timeout | undefined;
  #planning: Promise<void> = Promise.resolve();
  #stopped = false;
  /** Waits for the journal, oldest first; empty while the disk is fine. */
  readonly #unrecorded: Unrecorded[] = [];
  #unrecordedDeliveries = 0;
  #outage: Outage | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #retrying: Promise<void> | undefined;
  /** Transactions already reversed, by network, hash and block: receipts and BLOCK_REMOVED logs both say it. */
  readonly #reorgsSeen = new LRUCache<string, true>({ max: 10_000 });
  /** The marketplace contracts (lower case) of the networks the platform client knows: followed without rules. */
  readonly #marketplaces = new Map<string, ReadonlySet<string>>();

  constructor(options: AlertPipelineOptions) {
    this.#options = options;
    for (const [network, contracts] of Object.entries(options.marketplaceContracts ?? {})) {
      if (contracts.length === 0) continue;
      if (options.platform.networks.find(network)) {
        this.#marketplaces.set(network, new Set(contracts.map((contract) => contract.toLowerCase())));
      } else {
        options.logger.warn({ network }, 'marketplace contracts name a network the platform client does not know');
      }
    }
    const window = options.relistWindowMs ?? 24 * 60 * 60 * 1000;
    this.#listings = window > 0 ? new LRUCache({ max: 50_000, ttl: window }) : undefined;
  }

  /** Replays the journal, indexes the rules, opens the streams. Resolves once they are connected. */
  async start(): Promise<void> {
    const { journal, dispatcher, store, logger } = this.#options;
    const unfinished = journal.unfinished();
    const edits = journal.pendingEdits();
    if (unfinished.length || edits.length) {
      logger.info({ unfinished: unfinished.length, edits: edits.length }, 'resuming deliveries from the journal');
    }
    dispatcher.enqueue(unfinished);
    dispatcher.enqueueEdits(edits);
    store.onRulesChanged((change) => this.#rulesChanged(change));
    for (const follower of this.#options.followers ?? []) {
      follower.onCollectionsChanged(() => {
        this.#followedVersion++;
        this.#schedulePlan();
      });
    }
    await this.#refreshIndex();
    await this.#plan();
    this.#options.backfill?.started();
  }

  /**
   * Stops the streams; deliveries already recorded stay in the journal for the next start. Alerts
   * still waiting for the journal get one last attempt; those it does not take are lost (counted as
   * dropped).
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#replanTimer);
    for (const state of this.#networks.values()) {
      clearTimeout(state.flushTimer);
      state.streams.stop();
    }
    await this.#idle();
    clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    await this.#retrying;
    if (this.#unrecorded.length > 0) await this.#retry();
    await this.#options.backfill
      ?.flush()
      .catch((error: unknown) => this.#options.logger.error({ err: error }, 'could not save the block cursors'));
    if (this.#unrecordedDeliveries > 0) {
      this.counters.dropped += this.#unrecordedDeliveries;
      this.#options.logger.error(
        { lost: this.#unrecordedDeliveries, failure: this.#options.journal.writeFailure() },
        'stopped while the journal could not be written: alerts kept in memory are lost',
      );
    }
    this.#unrecorded.length = 0;
    this.#unrecordedDeliveries = 0;
    this.#outage = undefined;
  }

  health(): StreamHealth[] {
    return [...this.#networks.values()].map((s) => s.streams.health());
  }

  /** What waits in memory for the journal (nothing while the disk is fine), and why. */
  backlog(): JournalBacklog {
    return {
      queued: this.#unrecordedDeliveries,
      reorgs: this.#unrecorded.length === 0 ? 0 : this.#unrecorded.filter((u) => u.kind === 'reorg').length,
      failure: this.#options.journal.writeFailure() ?? this.#outage?.failure,
    };
  }

  /** Resolves when every event received so far has been recorded (tests, benchmarks). */
  async settled(): Promise<void> {
    for (const state of this.#networks.values()) {
      clearTimeout(state.flushTimer);
      state.flushTimer = undefined;
      const rest = state.assembler.flush();
      if (rest) this.#transaction(this.#networkOf(state), rest);
    }
    await this.#idle();
  }

  /** Resolves when every network's slots are recorded. */
  async #idle(): Promise<void> {
    for (;;) {
      const busy = [...this.#networks.values()].filter((s) => s.draining || s.slots.length > 0);
      if (busy.length === 0) return;
      await Promise.all(busy.map((s) => s.draining ?? new Promise((resolve) => setTimeout(resolve, 5))));
    }
  }

  /** Pauses the rules of a destination that cannot be posted to any more. */
  async destinationUnreachable(destination: Destination, reason: string): Promise<void> {
    const key = destinationKey(destination);
    const rules = (await this.#options.store.rulesOf(key)).filter((r) => !r.paused);
    for (const rule of rules) await this.#options.store.updateRule(rule.id, (r) => ({ ...r, paused: true }));
    this.#options.logger.warn(
      { destination: key, rules: rules.map((r) => r.id), reason },
      'destination unreachable: its rules are paused',
    );
  }

  #networkOf(state: NetworkState): string {
    return state.streams.network;
  }

  /** Networks with active watch rules, as this process's index has them (none when it ingests nothing). */
  watchedNetworks(): string[] {
    return this.#index.networks();
  }

  /**
   * Indexes the rules, in a process that ingests some network; one that ingests none (another
   * process leads them all, with a shared database) keeps no index: it matches nothing. Once loaded,
   * the index follows the store's changes.
   */
  #refreshIndex(): Promise<void> {
    const ingests = this.#options.ingests;
    const any = !ingests || this.#options.platform.networks.all.some((n) => ingests(n.name));
    if (any && !this.#indexed) return this.#loading ?? this.#reloadIndex();
    if (!any && this.#indexed) {
      this.#indexed = false;
      this.#index = new RuleIndex();
    }
    return this.#indexing;
  }

  /** Reads every rule into a new index, then applies the changes heard meanwhile, and uses it. */
  #reloadIndex(): Promise<void> {
    const load = this.#indexing.then(async () => {
      if (this.#indexed) return;
      this.#heldChanges = [];
      try {
        const index = new RuleIndex();
        for await (const page of this.#options.store.allRules()) for (const rule of page) index.add(rule);
        const held = this.#heldChanges;
        this.#heldChanges = undefined;
        for (const change of held) if (!change.all) applyChange(index, change);
        this.#index = index;
        this.#indexed = true;
        // Everything changed meanwhile (the store lost its feed of changes): read it all once more.
        if (held.some((change) => change.all)) this.#rulesChanged({ all: true });
      } finally {
        this.#heldChanges = undefined;
      }
    });
    this.#loading = load;
    this.#indexing = load
      .catch((error: unknown) => {
        this.#options.logger.error({ err: error }, 'could not read the watch rules');
      })
      .finally(() => {
        if (this.#loading === load) this.#loading = undefined;
      });
    return load;
  }

  #rulesChanged(change: RulesChange): void {
    if (this.#heldChanges) this.#heldChanges.push(change);
    else if (change.all) {
      if (this.#indexed) {
        this.#indexed = false;
        this.#reloadIndex().catch(() => {});
      }
    } else if (this.#indexed) applyChange(this.#index, change);
    this.#schedulePlan();
  }

  /** Plans the streams again once changes stop arriving for a moment. */
  #schedulePlan(): void {
    clearTimeout(this.#replanTimer);
    this.#replanTimer = setTimeout(() => {
      this.#planning = this.#planning
        .then(() => this.#indexing)
        .then(() => this.#plan())
        .catch((error: unknown) => {
          this.#options.logger.error({ err: error }, 'could not re-plan the alert streams');
        });
    }, this.#options.replanDelayMs ?? 1_000);
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

  /** One events filter per network: the watched collections plus the marketplace contracts. */
  async #plan(): Promise<void> {
    if (this.#stopped) return;
    const index = this.#index;
    const followed = (this.#options.followers ?? []).flatMap((f) => f.networks());
    const networks = new Set([...index.networks(), ...followed, ...this.#networks.keys()]);
    const plans: Promise<void>[] = [];
    for (const network of networks) {
      if (!this.#options.platform.networks.find(network)) {
        this.#options.logger.warn({ network }, 'rules name a network the platform client does not know');
        continue;
      }
      plans.push(this.#planNetwork(index, network));
    }
    for (const network of this.#marketplaces.keys()) {
      const ingested = this.#options.ingests?.(network) ?? true;
      if (ingested && !networks.has(network)) plans.push(this.#planNetwork(index, network));
    }
    await Promise.all(plans);
    this.#options.logger.debug(
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
    const ingested = this.#options.ingests?.(network) ?? true;
    const version = index.collectionsVersion(network);
    const last = this.#plannedFrom.get(network);
    const followed = this.#followedVersion;
    if (last?.index === index && last.version === version && last.ingested === ingested && last.followed === followed) {
      return Promise.resolve();
    }
    this.#plannedFrom.set(network, { index, version, ingested, followed });
    const more = [
      ...(this.#options.marketplaceContracts?.[network] ?? []),
      ...(this.#options.followers ?? []).flatMap((f) => f.collections(network)),
    ];
    const filter: EventFilter = { contractAddresses: ingested ? index.packedCollections(network, more) : [] };
    return this.#state(network)
      .streams.plan(filter)
      .catch((error: unknown) => {
        this.#plannedFrom.delete(network);
        throw error;
      });
  }

  #state(network: string): NetworkState {
    let state = this.#networks.get(network);
    if (!state) {
      const created: NetworkState = {
        assembler: new TransactionAssembler(),
        flushTimer: undefined,
        slots: [],
        draining: undefined,
        assembling: undefined,
        streams: new NetworkStreams(
          this.#options.platform,
          network,
          { onLog: (log) => this.#log(created, log), onReceipt: (receipt) => this.#receipt(network, receipt) },
          this.#options.logger,
          this.#options.streams,
        ),
      };
      // Begin backfill hooks: read-back logs take the streams' entry point.
      created.streams.useBackfill(
        this.#options.backfill?.network(network, {
          deliver: (log) => this.#log(created, log),
          flush: () => this.#flush(created),
          checkpoint: (block, reached) => this.#checkpoint(created, block, reached),
          contracts: () => ({
            size: created.streams.contractCount(),
            lists: (size) => created.streams.contractLists(size),
            has: (address) =>
              this.#index.watches(network, address) ||
              this.#marketplaces.get(network)?.has(address) === true ||
              this.#followed(network, address),
          }),
          gap: (from, to) => created.streams.reportGap(from, to),
        }),
      );
      // End backfill hooks.
      state = created;
      this.#networks.set(network, state);
    }
    return state;
  }

  #flush(state: NetworkState): void {
    clearTimeout(state.flushTimer);
    state.flushTimer = undefined;
    state.assembling = undefined;
    const rest = state.assembler.flush();
    if (rest) this.#transaction(this.#networkOf(state), rest);
  }

  /** `reached` runs once every event of the blocks up to `block` received so far is recorded. */
  #checkpoint(state: NetworkState, block: number, reached: () => void): void {
    // A transaction of those blocks still being assembled is complete by now (its logs came together).
    if (state.assembling !== undefined && state.assembling <= block) this.#flush(state);
    state.slots.push({ kind: 'checkpoint', reached });
    this.#drain(state);
  }

  #log(state: NetworkState, log: EventLog): void {
    this.counters.logs++;
    const network = this.#networkOf(state);
    // Begin BLOCK_REMOVED: the stream says the log's block left the chain, as a reorged receipt would.
    if (log.type === 'BLOCK_REMOVED') {
      this.#reorged(network, log.txnHash, log.blockHash);
      return;
    }
    // End BLOCK_REMOVED.
    state.assembling = log.blockNumber;
    const complete = state.assembler.push(log);
    if (complete) this.#transaction(network, complete);
    clearTimeout(state.flushTimer);
    state.flushTimer = setTimeout(() => {
      state.flushTimer = undefined;
      state.assembling = undefined;
      const rest = state.assembler.flush();
      if (rest) this.#transaction(network, rest);
    }, this.#options.flushDelayMs ?? 2);
  }

  #transaction(network: string, logs: EventLog[]): void {
    const state = this.#state(network);
    const marketplaces = this.#marketplaces.get(network);
    const { events, skipped } = classifyTransaction(logs, {
      network,
      isCollection: (address) => this.#index.watches(network, address) || this.#followed(network, address),
      ...(marketplaces ? { isMarketplace: (address: string) => marketplaces.has(address) } : {}),
    });
    for (const bad of skipped) this.#options.logger.warn({ network, ...bad }, 'skipped a log');
    const market = this.#options.market;
    for (const event of events) {
      this.counters.events++;
      this.#handOver(event);
      let rules = this.#index.candidates(event);
      const lastSale = rules.length > 0 ? this.#lastSale(event) : undefined;
      if (market && event.kind === 'sale') market.sale(event);
      if (rules.length === 0) continue;
      if (this.#isRelist(event)) {
        this.counters.relists++;
        rules = rules.filter((rule) => rule.showRelists === true);
        if (rules.length === 0) continue;
      }
      this.counters.matched++;
      const collectionName = rules[0]?.collectionName ?? event.collection;
      // Enrichment starts at once; recording waits its turn so alerts keep the chain's order.
      const slot: Slot = { kind: 'event', event, rules, enriched: undefined };
      state.slots.push(slot);
      void this.#options.enricher
        .enrichWithin(event, collectionName, this.#options.enrichLimitMs ?? 10_000, {
          floor: rules.some((rule) => rule.floorPercent !== undefined),
        })
        .catch((error: unknown) => {
          this.#options.logger.error({ event: event.id, err: error }, 'enrichment failed');
          return this.#options.enricher.bare(event, collectionName);
        })
        .then((enriched) => {
          const sample = enriched.floorSample;
          if (market && sample) market.floor(event.network, event.collection, sample.usd, sample.at);
          slot.enriched = lastSale ? { ...enriched, details: { ...enriched.details, lastSale } } : enriched;
          this.#drain(state);
        });
    }
  }

  #followed(network: string, collection: string): boolean {
    return (this.#options.followers ?? []).some((f) => f.watches(network, collection));
  }

  /** Tokens that changed hands go to the followers of their collection, with the wallets involved. */
  #handOver(event: ChainEvent): void {
    if (!MOVES_TOKENS.has(event.kind)) return;
    for (const follower of this.#options.followers ?? []) {
      if (!follower.watches(event.network, event.collection)) continue;
      const accounts = [event.from, event.to, ...event.accounts].filter((a): a is string => a !== undefined);
      follower.tokensMoved({ network: event.network, collection: event.collection, accounts: [...new Set(accounts)] });
    }
  }

  /** The previous recorded sale of the token a one-token sale sold. */
  #lastSale(event: ChainEvent): { at: string; usd?: number } | undefined {
    const token = event.tokens.length === 1 ? event.tokens[0] : undefined;
    const found =
      token && event.kind === 'sale' && this.#options.market?.lastSale(event.network, event.collection, token.tokenId);
    if (!found) return undefined;
    const at = new Date(found.at).toISOString();
    return found.usd === undefined ? { at } : { at, usd: found.usd };
  }

  /**
   * A listing identical to one seen within the window (same token, seller, price and currency) whose
   * transaction was not reorganised away (a listing re-mined after a reorg is news).
   */
  #isRelist(event: ChainEvent): boolean {
    if (!this.#listings || event.kind !== 'listing' || !event.from || !event.price) return false;
    const tokens = event.tokens.map((t) => `${t.tokenId}x${t.amount}`).join(',');
    const key = `${event.network}|${event.collection}|${tokens}|${event.from}|${event.price.perToken}|${event.price.currency}`;
    const earlier = this.#listings.get(key);
    this.#listings.set(key, { network: event.network, txnHash: event.txnHash });
    if (!earlier || earlier.txnHash === event.txnHash) return false;
    return !this.#options.journal.byTransaction(earlier.network, earlier.txnHash).some((r) => r.reorged);
  }

  /** Records the ready slots at the head of the queue, in order, as long as there are some. */
  #drain(state: NetworkState): void {
    if (state.draining) return;
    const isReady = (slot: Slot | undefined) =>
      slot !== undefined && (slot.kind !== 'event' || slot.enriched !== undefined);
    const run = async () => {
      while (isReady(state.slots[0])) {
        const ready: Slot[] = [];
        while (isReady(state.slots[0])) {
          const slot = state.slots.shift() as Slot;
          ready.push(slot);
          if (slot.kind !== 'event') break;
        }
        const events = ready.filter((r): r is Extract<Slot, { kind: 'event' }> => r.kind === 'event');
        await this.#record(
          events.map((e) => ({ event: e.event, rules: e.rules, enriched: e.enriched as EnrichedEvent })),
        );
        const last = ready.at(-1);
        if (last?.kind === 'reorg') await this.#reorg(this.#networkOf(state), last.txnHash);
        // Alerts kept in memory for the journal are not recorded: the cursor must not pass them.
        else if (last?.kind === 'checkpoint' && this.#unrecorded.length === 0) last.reached();
      }
    };
    // `.finally` runs after the assignment, even when `run` has nothing to do; a head that became
    // ready while the last batch was written starts the next drain.
    state.draining = run().finally(() => {
      state.draining = undefined;
      if (isReady(state.slots[0])) this.#drain(state);
    });
  }

  /**
   * Renders and records the deliveries of several events with one durable journal write, or keeps
   * them for later when the journal cannot take them (or still holds older ones back).
   */
  async #record(
    batch: ReadonlyArray<{ event: ChainEvent; rules: readonly MatchingRule[]; enriched: EnrichedEvent }>,
  ): Promise<void> {
    let alerts: Extract<Unrecorded, { kind: 'alerts' }>;
    try {
      const perEvent = batch.map(({ event, rules, enriched }) => this.#deliveries(event, rules, enriched));
      const deliveries = perEvent.reduce((sum, list) => sum + list.length, 0);
      if (deliveries === 0) return;
      alerts = { kind: 'alerts', events: batch.map((b) => b.event), perEvent, deliveries };
    } catch (error) {
      this.#options.logger.error({ events: batch.length, err: error }, 'could not render alerts');
      return;
    }
    if (this.#unrecorded.length > 0) {
      this.#keep(alerts);
      return;
    }
    try {
      await this.#commit(alerts);
      if (this.#outage) this.#recovered();
    } catch (error) {
      if (error instanceof JournalWriteError) this.#keep(alerts, error);
      else this.#options.logger.error({ events: batch.length, err: error }, 'could not record alerts');
    }
  }

  /** Records rendered alerts with one durable write and hands the new deliveries to the dispatcher. */
  async #commit({ events, perEvent }: Extract<Unrecorded, { kind: 'alerts' }>): Promise<void> {
    const { journal, dispatcher } = this.#options;
    const all = perEvent.flat();
    // An alert that will be sent alone (a lone one for a chat with nothing queued, or any on a
    // platform without merged messages) is recorded as sending: that saves a durable write on its
    // way. Several for one chat that merges bursts stay pending, to be merged.
    for (const list of byDestination(all).values()) {
      const first = list[0];
      // Decided at each attempt: a batch written again later finds its chats in another state.
      const alone = first !== undefined && dispatcher.sendsAlone(first.destination, list.length);
      for (const delivery of list) delivery.sendingAlone = alone;
    }
    const recorded = await journal.record(all);
    this.counters.deliveries += recorded.length;
    const fresh = new Set(recorded.map((r) => r.id));
    events.forEach((event, index) => {
      const count = (perEvent[index] ?? []).filter((d) => fresh.has(deliveryId(d.eventId, d.destination))).length;
      this.#options.onRecorded?.(event, count);
    });
    dispatcher.enqueue(recorded);
  }

  #deliveries(event: ChainEvent, rules: readonly MatchingRule[], enriched: EnrichedEvent): NewDelivery[] {
    const { logger } = this.#options;
    if (enriched.missing.length)
      logger.warn({ event: event.id, missing: enriched.missing }, 'alert without some details');
    const tokens = enriched.details.event.tokens;
    const admitted = rules.filter((rule) => admitsTokens(rule, event, tokens));
    const matched = matchDestinations(admitted, enriched.price, enriched.traits, (rule) =>
      logger.warn(
        { event: event.id, rule: rule.id },
        'price unknown: a rule with a minimum price or a floor percentage is not served',
      ),
    );
    if (matched.length === 0) return [];
    // The block is part of the id: a transaction re-mined after a reorg is a new event.
    const eventId = `${event.id}@${event.blockHash}`;
    return alertsFor(enriched.details, matched, (destination, reply) => ({
      eventId,
      destination,
      network: event.network,
      txnHash: event.txnHash,
      blockNumber: event.blockNumber,
      kind: event.kind,
      ...(enriched.price?.usd === undefined ? {} : { usd: enriched.price.usd }),
      payload: reply,
    }));
  }

  /** Queues what the journal did not take, or drops and counts it when the queue is full. */
  #keep(entry: Unrecorded, error?: JournalWriteError): void {
    const { logger } = this.#options;
    const limit = this.#options.journalRetry?.maxDeliveries ?? MAX_UNRECORDED_DELIVERIES;
    const starting = this.#outage === undefined;
    const outage: Outage = this.#outage ?? {
      startedAt: Date.now(),
      failure: this.#options.journal.writeFailure() ?? failureOf(error, new Date().toISOString()),
      delayMs: this.#options.journalRetry?.minDelayMs ?? 1_000,
      recorded: 0,
      dropped: 0,
      full: false,
    };
    this.#outage = outage;
    if (entry.kind === 'alerts' && this.#unrecordedDeliveries + entry.deliveries > limit) {
      this.counters.dropped += entry.deliveries;
      outage.dropped += entry.deliveries;
    } else {
      if (entry.kind === 'alerts') this.#unrecordedDeliveries += entry.deliveries;
      this.#unrecorded.push(entry);
    }
    if (starting) {
      logger.error(
        { code: error?.code, err: error, queued: this.#unrecordedDeliveries, dropped: outage.dropped, limit },
        'cannot write the delivery journal: new alerts are kept in memory and written again with back-off',
      );
    } else if (outage.dropped > 0 && !outage.full) {
      outage.full = true;
      logger.warn(
        { queued: this.#unrecordedDeliveries, dropped: outage.dropped, limit },
        'the alerts kept for the journal reached their limit: newer ones are dropped until it accepts writes',
      );
    }
    this.#scheduleRetry();
  }

  #scheduleRetry(): void {
    const outage = this.#outage;
    if (!outage || this.#retryTimer || this.#retrying || this.#stopped || this.#unrecorded.length === 0) return;
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      void this.#retry();
    }, outage.delayMs);
  }

  /** Writes the kept alerts and reorgs, oldest first, until the queue is empty or a write fails. */
  #retry(): Promise<void> {
    if (this.#retrying) return this.#retrying;
    const run = async () => {
      for (let head = this.#unrecorded[0]; head; head = this.#unrecorded[0]) {
        try {
          if (head.kind === 'alerts') await this.#commit(head);
          else await this.#applyReorg(head.network, head.txnHash);
        } catch (error) {
          if (error instanceof JournalWriteError) {
            const outage = this.#outage;
            if (outage) {
              const max = this.#options.journalRetry?.maxDelayMs ?? 5_000;
              outage.delayMs = Math.min(max, outage.delayMs * 2);
            }
            return;
          }
          this.#options.logger.error({ err: error }, 'could not record alerts kept for the journal; they are dropped');
          if (head.kind === 'alerts') this.counters.dropped += head.deliveries;
        }
        this.#unrecorded.shift();
        if (head.kind === 'alerts') {
          this.#unrecordedDeliveries -= head.deliveries;
          if (this.#outage) this.#outage.recorded += head.deliveries;
        }
      }
      this.#recovered();
    };
    this.#retrying = run().finally(() => {
      this.#retrying = undefined;
      this.#scheduleRetry();
    });
    return this.#retrying;
  }

  /** The journal took a write and nothing waits any more: the outage is over. */
  #recovered(): void {
    const outage = this.#outage;
    if (!outage || this.#unrecorded.length > 0) return;
    this.#outage = undefined;
    this.#options.logger.info(
      {
        recorded: outage.recorded,
        dropped: outage.dropped,
        seconds: Math.round((Date.now() - outage.startedAt) / 1000),
      },
      'the delivery journal accepts writes again: the alerts kept in memory are recorded',
    );
  }

  #receipt(network: string, receipt: TransactionReceipt): void {
    const { journal, logger } = this.#options;
    if (receipt.reorged) {
      this.#reorged(network, receipt.txnHash, receipt.blockHash);
    } else if (receipt.final && journal.mayHold(network, receipt.txnHash)) {
      // Out of the queue: finality only decides how long records are kept, and the journal
      // groups these writes with the others. Lost, it only keeps them longer: a journal that
      // cannot write is reported by the alerts that wait for it, not once per receipt.
      void journal
        .markFinal(network, receipt.txnHash)
        .catch((error: unknown) =>
          logger[error instanceof JournalWriteError ? 'debug' : 'error'](
            { network, txnHash: receipt.txnHash, err: error },
            'could not mark a transaction final',
          ),
        );
    }
  }

  /** A transaction left the chain (a reorged receipt, or its logs again as BLOCK_REMOVED): once per block. */
  #reorged(network: string, txnHash: string, blockHash: string | undefined): void {
    const key = `${network}|${txnHash.toLowerCase()}|${String(blockHash).toLowerCase()}`;
    if (this.#reorgsSeen.has(key)) return;
    this.#reorgsSeen.set(key, true);
    this.#options.market?.reorged(network, txnHash);
    // In the queue, after the events before it: a reorg cannot overtake the alert it reverses.
    const state = this.#state(network);
    state.slots.push({ kind: 'reorg', txnHash });
    this.#drain(state);
  }

  async #reorg(network: string, txnHash: string): Promise<void> {
    const reorg: Unrecorded = { kind: 'reorg', network, txnHash };
    if (this.#unrecorded.length > 0) {
      this.#keep(reorg);
      return;
    }
    try {
      await this.#applyReorg(network, txnHash);
    } catch (error) {
      if (error instanceof JournalWriteError) this.#keep(reorg, error);
      else this.#options.logger.error({ network, txnHash, err: error }, 'could not apply a reorg');
    }
  }

  async #applyReorg(network: string, txnHash: string): Promise<void> {
    const { journal, dispatcher, logger } = this.#options;
    if (!journal.mayHold(network, txnHash)) return;
    const edits = await journal.markReorged(network, txnHash);
    this.counters.reorged++;
    logger.info({ network, txnHash, edits: edits.length }, 'transaction reorganised away');
    dispatcher.enqueueEdits(edits);
  }
}

/** A journal failure as the journal would report it, for an error it did not keep (it recovered meanwhile). */
function failureOf(error: JournalWriteError | undefined, at: string): JournalWriteFailure {
  return {
    since: at,
    at,
    code: error?.code,
    message: error?.message ?? 'the journal refused a write',
    failures: 1,
    broken: false,
  };
}

function applyChange(index: RuleIndex, change: Exclude<RulesChange, { all: true }>): void {
  for (const { id, rule } of change.rules) {
    if (rule) index.add(rule);
    else index.remove(id);
  }
}
