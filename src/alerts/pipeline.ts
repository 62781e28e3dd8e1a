import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import type { PlatformClient } from '../platform/client.ts';
import type { EventFilter, EventLog, TransactionReceipt } from '../platform/types.ts';
import { type DeliveryJournal, deliveryId, type NewDelivery } from '../store/journal.ts';
import type { StateStore } from '../store/state.ts';
import { classifyTransaction, TransactionAssembler } from './classify.ts';
import type { Dispatcher } from './delivery.ts';
import type { EnrichedEvent, Enricher } from './enrich.ts';
import { alertsFor } from './render.ts';
import { matchDestinations, RuleIndex } from './rule-index.ts';
import { NetworkStreams, type StreamHealth, type StreamOptionsForAlerts } from './streams.ts';
import { type ChainEvent, type Destination, destinationKey, type WatchRule } from './types.ts';

export interface AlertPipelineOptions {
  platform: PlatformClient;
  store: StateStore;
  journal: DeliveryJournal;
  dispatcher: Dispatcher;
  enricher: Enricher;
  logger: Logger;
  /** The platform's marketplace contracts per network: their logs are subscribed to as well. */
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
}

/** An event waiting for its enrichment, or a reorg waiting for the events before it. */
type Slot =
  | { kind: 'event'; event: ChainEvent; rules: WatchRule[]; enriched: EnrichedEvent | undefined }
  | { kind: 'reorg'; txnHash: string };

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
}

/**
 * From the indexer's streams to journaled deliveries: plans one events stream per network from the
 * watch rules, groups logs into transactions, classifies them, finds the matching rules through the
 * index, enriches each event once, renders one alert per destination, records the deliveries in the
 * journal before anything is sent, and hands them to the dispatcher. Receipts close deliveries when
 * final and turn sent alerts into "reversed" edits when reorganised.
 */
export class AlertPipeline {
  readonly counters: PipelineCounters = { logs: 0, events: 0, matched: 0, deliveries: 0, reorged: 0, relists: 0 };
  readonly #options: AlertPipelineOptions;
  /** Recent listings by what makes them identical, with the transaction that made each. */
  readonly #listings: LRUCache<string, { network: string; txnHash: string }> | undefined;
  readonly #index = new RuleIndex();
  readonly #networks = new Map<string, NetworkState>();
  #watched = new Map<string, Set<string>>();
  #replanTimer: NodeJS.Timeout | undefined;
  #planning: Promise<void> = Promise.resolve();
  #stopped = false;

  constructor(options: AlertPipelineOptions) {
    this.#options = options;
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
    this.#index.replaceAll(store.rules);
    store.onRulesChanged(() => this.#rulesChanged());
    await this.#plan();
  }

  /** Stops the streams; deliveries already recorded stay in the journal for the next start. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#replanTimer);
    for (const state of this.#networks.values()) {
      clearTimeout(state.flushTimer);
      state.streams.stop();
    }
    await this.#idle();
  }

  health(): StreamHealth[] {
    return [...this.#networks.values()].map((s) => s.streams.health());
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
    const rules = this.#options.store.rules.filter((r) => destinationKey(r.destination) === key && !r.paused);
    for (const rule of rules) await this.#options.store.updateRule(rule.id, (r) => ({ ...r, paused: true }));
    this.#options.logger.warn(
      { destination: key, rules: rules.map((r) => r.id), reason },
      'destination unreachable: its rules are paused',
    );
  }

  #networkOf(state: NetworkState): string {
    return state.streams.network;
  }

  #rulesChanged(): void {
    this.#index.replaceAll(this.#options.store.rules);
    clearTimeout(this.#replanTimer);
    this.#replanTimer = setTimeout(() => {
      this.#planning = this.#planning
        .then(() => this.#plan())
        .catch((error: unknown) => {
          this.#options.logger.error({ err: error }, 'could not re-plan the alert streams');
        });
    }, this.#options.replanDelayMs ?? 1_000);
  }

  /** One events filter per network: the watched collections plus the marketplace contracts. */
  async #plan(): Promise<void> {
    if (this.#stopped) return;
    this.#watched = this.#index.collectionsByNetwork();
    const networks = new Set([...this.#watched.keys(), ...this.#networks.keys()]);
    const plans: Promise<void>[] = [];
    for (const network of networks) {
      if (!this.#options.platform.networks.find(network)) {
        this.#options.logger.warn({ network }, 'rules name a network the platform client does not know');
        continue;
      }
      const collections = [...(this.#watched.get(network) ?? [])].sort();
      const marketplaces = collections.length ? (this.#options.marketplaceContracts?.[network] ?? []) : [];
      const filter: EventFilter = { contractAddresses: [...collections, ...marketplaces.map((m) => m.toLowerCase())] };
      plans.push(this.#state(network).streams.plan(filter));
    }
    await Promise.all(plans);
    this.#options.logger.debug(
      { networks: [...this.#watched].map(([n, c]) => `${n}:${c.size}`) },
      'alert streams planned',
    );
  }

  #state(network: string): NetworkState {
    let state = this.#networks.get(network);
    if (!state) {
      const created: NetworkState = {
        assembler: new TransactionAssembler(),
        flushTimer: undefined,
        slots: [],
        draining: undefined,
        streams: new NetworkStreams(
          this.#options.platform,
          network,
          { onLog: (log) => this.#log(created, log), onReceipt: (receipt) => this.#receipt(network, receipt) },
          this.#options.logger,
          this.#options.streams,
        ),
      };
      state = created;
      this.#networks.set(network, state);
    }
    return state;
  }

  #log(state: NetworkState, log: EventLog): void {
    this.counters.logs++;
    const network = this.#networkOf(state);
    const complete = state.assembler.push(log);
    if (complete) this.#transaction(network, complete);
    clearTimeout(state.flushTimer);
    state.flushTimer = setTimeout(() => {
      state.flushTimer = undefined;
      const rest = state.assembler.flush();
      if (rest) this.#transaction(network, rest);
    }, this.#options.flushDelayMs ?? 2);
  }

  #transaction(network: string, logs: EventLog[]): void {
    const state = this.#state(network);
    const watched = this.#watched.get(network);
    const marketplaces = new Set((this.#options.marketplaceContracts?.[network] ?? []).map((m) => m.toLowerCase()));
    const { events, skipped } = classifyTransaction(logs, {
      network,
      isCollection: (address) => watched?.has(address) === true,
      ...(marketplaces.size ? { isMarketplace: (address: string) => marketplaces.has(address) } : {}),
    });
    for (const bad of skipped) this.#options.logger.warn({ network, ...bad }, 'skipped a log');
    for (const event of events) {
      this.counters.events++;
      let rules = this.#index.candidates(event);
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
          slot.enriched = enriched;
          this.#drain(state);
        });
    }
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
      slot !== undefined && (slot.kind === 'reorg' || slot.enriched !== undefined);
    const run = async () => {
      while (isReady(state.slots[0])) {
        const ready: Slot[] = [];
        while (isReady(state.slots[0])) {
          const slot = state.slots.shift() as Slot;
          ready.push(slot);
          if (slot.kind === 'reorg') break;
        }
        const events = ready.filter((r): r is Extract<Slot, { kind: 'event' }> => r.kind === 'event');
        try {
          await this.#record(
            events.map((e) => ({ event: e.event, rules: e.rules, enriched: e.enriched as EnrichedEvent })),
          );
        } catch (error) {
          this.#options.logger.error({ events: events.length, err: error }, 'could not record alerts');
        }
        const last = ready.at(-1);
        if (last?.kind === 'reorg') await this.#reorg(this.#networkOf(state), last.txnHash);
      }
    };
    // `.finally` runs after the assignment, even when `run` has nothing to do; a head that became
    // ready while the last batch was written starts the next drain.
    state.draining = run().finally(() => {
      state.draining = undefined;
      if (isReady(state.slots[0])) this.#drain(state);
    });
  }

  /** Renders and records the deliveries of several events with one durable journal write. */
  async #record(
    batch: ReadonlyArray<{ event: ChainEvent; rules: readonly WatchRule[]; enriched: EnrichedEvent }>,
  ): Promise<void> {
    const { journal, dispatcher } = this.#options;
    const perEvent = batch.map(({ event, rules, enriched }) => this.#deliveries(event, rules, enriched));
    const all = perEvent.flat();
    if (all.length === 0) return;
    // An alert that will be sent alone (a lone one for a chat with nothing queued, or any on a
    // platform without merged messages) is recorded as sending: that saves a durable write on its
    // way. Several for one chat that merges bursts stay pending, to be merged.
    const perDestination = new Map<string, NewDelivery[]>();
    for (const delivery of all) {
      const key = destinationKey(delivery.destination);
      const list = perDestination.get(key);
      if (list) list.push(delivery);
      else perDestination.set(key, [delivery]);
    }
    for (const list of perDestination.values()) {
      const first = list[0];
      if (first && dispatcher.sendsAlone(first.destination, list.length)) {
        for (const delivery of list) delivery.sendingAlone = true;
      }
    }
    const recorded = await journal.record(all);
    this.counters.deliveries += recorded.length;
    const fresh = new Set(recorded.map((r) => r.id));
    batch.forEach(({ event }, index) => {
      const count = (perEvent[index] ?? []).filter((d) => fresh.has(deliveryId(d.eventId, d.destination))).length;
      this.#options.onRecorded?.(event, count);
    });
    dispatcher.enqueue(recorded);
  }

  #deliveries(event: ChainEvent, rules: readonly WatchRule[], enriched: EnrichedEvent): NewDelivery[] {
    const { logger } = this.#options;
    if (enriched.missing.length)
      logger.warn({ event: event.id, missing: enriched.missing }, 'alert without some details');
    const matched = matchDestinations(rules, enriched.price, enriched.traits, (rule) =>
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
      payload: reply,
    }));
  }

  #receipt(network: string, receipt: TransactionReceipt): void {
    const { journal, logger } = this.#options;
    if (receipt.reorged) {
      // In the queue, after the events before it: a reorg cannot overtake the alert it reverses.
      const state = this.#state(network);
      state.slots.push({ kind: 'reorg', txnHash: receipt.txnHash });
      this.#drain(state);
    } else if (receipt.final && journal.byTransaction(network, receipt.txnHash).length > 0) {
      // Out of the queue: finality only decides how long records are kept, and the journal
      // groups these writes with the others.
      void journal
        .markFinal(network, receipt.txnHash)
        .catch((error: unknown) =>
          logger.error({ network, txnHash: receipt.txnHash, err: error }, 'could not mark a transaction final'),
        );
    }
  }

  async #reorg(network: string, txnHash: string): Promise<void> {
    const { journal, dispatcher, logger } = this.#options;
    try {
      if (journal.byTransaction(network, txnHash).length === 0) return;
      const edits = await journal.markReorged(network, txnHash);
      this.counters.reorged++;
      logger.info({ network, txnHash, edits: edits.length }, 'transaction reorganised away');
      dispatcher.enqueueEdits(edits);
    } catch (error) {
      logger.error({ network, txnHash, err: error }, 'could not apply a reorg');
    }
  }
}
