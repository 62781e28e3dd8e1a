/**
 * The alert path, built in one place: ingest (streams planned from the rules, logs assembled into
 * events, each network's events kept in order) -> match (one look-up per event in the rule index)
 * -> relists -> enrich (once per event) -> render (once per event, a copy per role) -> journal-first
 * recording (delivery/recording.ts) -> the delivery queue. Receipts close deliveries when final and
 * turn sent alerts into "reversed" edits when reorganised.
 */
import type { Logger } from 'pino';
import type { NewDelivery } from '../core/deliveries.ts';
import type { MarketHistory, TokenSale } from '../core/market.ts';
import type { CompletenessStore, DeliveryLog, RulesRepository } from '../core/ports.ts';
import type { AlertCounters, JournalBacklog, StreamHealth } from '../core/status.ts';
import type { DeliveryQueue } from '../delivery/dispatcher.ts';
import { DeliveryRecorder, type JournalRetryOptions, type RecordingItem } from '../delivery/recording.ts';
import type { CurrencyDirectory } from '../market/currencies.ts';
import type { Links } from '../market/links.ts';
import type { PlatformClient } from '../platform/client.ts';
import type { Backfill } from './backfill.ts';
import { type CardClose, ListingCards } from './cards.ts';
import { type EnrichedEvent, Enricher } from './enrich.ts';
import { Ingest } from './ingest.ts';
import { MarketRecorder } from './market.ts';
import { type EventMatch, Matcher } from './match.ts';
import { type MoveCounters, MoveWatcher } from './moves.ts';
import { Relists } from './relists.ts';
import { alertsFor } from './render.ts';
import { BuyerHoldings, type BuyerHolds, DEFAULT_WHALE_USD, heldFor, isWhale, saleProfit } from './sale-context.ts';
import type { StreamOptionsForAlerts } from './streams.ts';
import type { ChainEvent, CollectionFollower } from './types.ts';

export type { JournalRetryOptions } from '../delivery/recording.ts';

/** What the alert path is built from. */
export interface AlertsDeps {
  platform: PlatformClient;
  /** The watch rules: indexed at start, followed as they change. */
  rules: RulesRepository;
  /** Where deliveries are recorded before they are sent. */
  deliveries: DeliveryLog;
  /** Where recorded deliveries go: this process's dispatcher, or the chat claims with a shared database. */
  queue: DeliveryQueue;
  /** Currencies of order prices (symbols, decimals, USD rates). */
  currencies: CurrencyDirectory;
  /** Adds the token page, the transaction page and where to buy a listing to the alerts. */
  links?: Links | undefined;
  logger: Logger;
  /**
   * Whether this process ingests a network's streams (default: every network). With a shared
   * database exactly one process does at a time; call {@link Alerts.replan} when that changes.
   */
  ingests?: ((network: string) => boolean) | undefined;
  /**
   * The platform's marketplace contracts per network. Every network this process ingests that has
   * some is subscribed to them, watched or not, so that the market history records every sale from
   * start-up; events that match no rule still make no alert.
   */
  marketplaceContracts?: Readonly<Record<string, readonly string[]>> | undefined;
  /** Services that follow collections through the alert streams (holder roles). */
  followers?: readonly CollectionFollower[];
  /**
   * The market history: it is told every sale the streams show (a rule matched it or not, priced in
   * batches), the floors enrichment looks up and the reorgs; it gives sale alerts the token's last
   * sale, and remembers listings to recognise relists.
   */
  market: MarketHistory;
  /** Sales are priced and written to the market history this often. Default 2 s. */
  marketFlushMs?: number;
  /** Reads back from the chain the blocks the streams did not show (start, reconnects); see backfill.ts. */
  backfill?: Backfill | undefined;
  /** Rule changes are gathered this long before the streams are re-planned. Default 1 s. */
  replanDelayMs?: number;
  /** A transaction's logs are complete once the next transaction starts, or after this quiet time. Default 2 ms. */
  flushDelayMs?: number;
  streams?: StreamOptionsForAlerts;
  /** Enrichment slower than this is given up: the alert goes out with what the chain says. Default 10 s. */
  enrichLimitMs?: number;
  /** How long a listing is remembered to recognise an identical relist. Default 24 h; 0 turns it off. */
  relistWindowMs?: number;
  /** What is done with alerts while the journal cannot be written. */
  journalRetry?: JournalRetryOptions;
  /** Observes each alert handed to delivery, with how many destinations it reached (metrics, benchmarks). */
  onRecorded?: (event: ChainEvent, destinations: number) => void;
  /** The enrichment stage, when not the default one (benchmarks time it). */
  enricher?: Enricher;
  /** Floor and best-offer rules: events are gathered this long before the level is looked up. Default 1 s. */
  moveCheckDelayMs?: number;
  /** Sales worth at least this many US dollars are marked as a whale's (FLOORWATCH_WHALE_USD; 0: never). Default $10,000. */
  whaleUsd?: number | undefined;
  /** Where the record's completeness is counted: events seen, blocks read back, blocks missed. */
  completeness?: CompletenessStore | undefined;
  /**
   * How long after its alert a listing's message is edited to say SOLD, CANCELLED or EXPIRED
   * (alerts/cards.ts). Default 24 h; 0 never; at most 48 h.
   */
  listingEditWindowMs?: number;
  /** How often the ingesting process looks for listings that expired. Default 30 s. */
  listingExpiryCheckMs?: number;
}

/**
 * The longest a sale alert waits for its buyer's holdings (within the enrichment budget): the line is
 * a nicety, and alerts of a network are recorded in chain order, so a slow call would hold up the next.
 */
const BUYER_LIMIT_MS = 2_000;

/** What /status, /readyz and the metrics read of the alert path. Plain data. */
export interface AlertsStatus {
  streams: StreamHealth[];
  counters: AlertCounters;
  /** Alerts waiting in memory for the delivery journal, and why. */
  backlog: JournalBacklog;
  /** Networks with active watch rules, as this process's index has them (none when it ingests nothing). */
  watchedNetworks: string[];
  /** Floor and best-offer rules: look-ups, alerts, and moves the look-up did not confirm. */
  moves: MoveCounters;
}

/** The running alert path. */
export interface Alerts {
  /** Indexes the rules and opens the streams. Resolves once they are connected. */
  start(): Promise<void>;
  /**
   * Stops the streams; deliveries already recorded stay in the journal for the next start. Alerts
   * still waiting for the journal get one last attempt; those it does not take are lost (counted as
   * dropped).
   */
  stop(): Promise<void>;
  /** Opens or closes streams now, e.g. when this process starts or stops ingesting a network. */
  replan(): Promise<void>;
  status(): AlertsStatus;
  /** Resolves when every event received so far has been recorded, its sales too (tests, benchmarks). */
  settled(): Promise<void>;
}

/**
 * An event once enriched (undefined: it alerts nobody), waiting for its turn to be recorded; a sale or
 * cancel with the listing cards it may close (applied after the alerts before it are recorded).
 */
interface Ready {
  match: EventMatch | undefined;
  enriched: EnrichedEvent | undefined;
  close?: CardClose | undefined;
}

/** What a sale alert learns besides its enrichment: the token's previous sale and its buyer's holdings. */
interface SaleLookups {
  previous: Promise<TokenSale | undefined> | undefined;
  buyer: Promise<BuyerHolds | undefined> | undefined;
}

/**
 * Builds the alert path: the only way to make one (main, tests and benchmarks use it).
 *
 * @example
 * const alerts = createAlerts({ platform, rules, deliveries, queue: dispatcher, currencies, logger });
 * await alerts.start();
 * // ... alerts.status().streams
 * await alerts.stop();
 */
export function createAlerts(deps: AlertsDeps): Alerts {
  const { platform, logger } = deps;
  const counters = { events: 0, matched: 0, relists: 0 };
  const matcher = new Matcher(deps.rules, logger);
  const market = new MarketRecorder({
    history: deps.market,
    platform,
    logger: logger.child({ component: 'market-history' }),
    flushMs: deps.marketFlushMs,
  });
  const relists = new Relists({
    history: deps.market,
    ...(deps.relistWindowMs === undefined ? {} : { windowMs: deps.relistWindowMs }),
  });
  const enricher =
    deps.enricher ?? new Enricher(platform, deps.currencies, logger.child({ component: 'enrich' }), deps.links);
  const enrichLimitMs = deps.enrichLimitMs ?? 10_000;
  const holdings = new BuyerHoldings(platform, { logger: logger.child({ component: 'sale-context' }) });
  const buyerLimitMs = Math.min(enrichLimitMs, BUYER_LIMIT_MS);
  const whaleUsd = deps.whaleUsd ?? DEFAULT_WHALE_USD;
  const cards = new ListingCards({
    deliveries: deps.deliveries,
    queue: deps.queue,
    links: deps.links,
    logger: logger.child({ component: 'listing-cards' }),
    windowMs: deps.listingEditWindowMs,
    checkEveryMs: deps.listingExpiryCheckMs,
    networks: () => platform.networks.all.map((n) => n.name).filter((name) => deps.ingests?.(name) ?? true),
  });
  const recorder = new DeliveryRecorder<ChainEvent>({
    log: deps.deliveries,
    queue: deps.queue,
    logger,
    ...(deps.journalRetry ? { retry: deps.journalRetry } : {}),
    ...(deps.onRecorded ? { onRecorded: deps.onRecorded } : {}),
  });

  // Floor and best-offer alerts have their own recorder: they are no chain event, and wait for no
  // other alert (the journal and the queue are the same).
  const moves = new MoveWatcher({
    platform,
    rules: deps.rules,
    recorder: new DeliveryRecorder<string>({
      log: deps.deliveries,
      queue: deps.queue,
      logger,
      ...(deps.journalRetry ? { retry: deps.journalRetry } : {}),
    }),
    currencies: deps.currencies,
    links: deps.links,
    logger: logger.child({ component: 'moves' }),
    ingests: deps.ingests,
    checkDelayMs: deps.moveCheckDelayMs,
  });
  let movesStarted: Promise<void> | undefined;
  /** Move rules are read only by a process that ingests some network (the one that checks them). */
  const startMoves = () => {
    const ingestsSome = deps.ingests === undefined || platform.networks.all.some((n) => deps.ingests?.(n.name));
    if (ingestsSome) movesStarted ??= moves.start();
    return movesStarted;
  };

  /** The previous recorded sale of the token a one-token sale sold. */
  const previousSaleOf = (event: ChainEvent): Promise<TokenSale | undefined> | undefined => {
    const token = event.tokens.length === 1 ? event.tokens[0] : undefined;
    if (!token || event.kind !== 'sale') return undefined;
    return market.lastSale(event.network, event.collection, token.tokenId);
  };

  /**
   * What a matched event needs before it can be recorded: whether it only repeats a listing (then
   * only the rules that show relists stay), and its enrichment. Never rejects.
   */
  const prepare = async (match: EventMatch, lookups: SaleLookups): Promise<Ready> => {
    const event = match.event;
    if (await relists.isRelist(event).catch(() => false)) {
      counters.relists++;
      if (!match.onlyRelists()) return { match, enriched: undefined };
    }
    counters.matched++;
    const collectionName = match.collectionName;
    const [enriched, previous, buyer] = await Promise.all([
      enricher
        .enrichWithin(event, collectionName, enrichLimitMs, { floor: match.wantsFloor })
        .catch((error: unknown) => {
          logger.error({ event: event.id, err: error }, 'enrichment failed');
          return enricher.bare(event, collectionName);
        }),
      lookups.previous?.catch(() => undefined),
      lookups.buyer && within(lookups.buyer, buyerLimitMs),
    ]);
    const sample = enriched.floorSample;
    if (sample) market.floor(event.network, event.collection, sample.usd, sample.at);
    if (event.kind !== 'sale') return { match, enriched };
    const details = { ...enriched.details };
    if (previous) {
      details.lastSale = {
        at: new Date(previous.at).toISOString(),
        ...(previous.usd === undefined ? {} : { usd: previous.usd }),
      };
    }
    const held = heldFor(event, previous);
    if (held !== undefined) details.heldForMs = held;
    const profit = saleProfit(event, previous, enriched.price);
    if (profit) details.profit = profit;
    if (buyer) details.buyerHolds = { units: buyer.units.toString(), isNew: buyer.isNew };
    if (isWhale(enriched.price?.usd, whaleUsd)) details.whale = true;
    return { match, enriched: { ...enriched, details } };
  };

  /** An event's deliveries: one per destination its match reaches, its message rendered once. */
  const deliveriesOf = ({ match, enriched }: Ready): NewDelivery[] => {
    if (!enriched || !match) return [];
    const event = match.event;
    if (enriched.missing.length)
      logger.warn({ event: event.id, missing: enriched.missing }, 'alert without some details');
    const matched = match.destinations(enriched, (rule) =>
      logger.warn(
        { event: event.id, rule: rule.id },
        'price unknown: a rule with a minimum price or a floor percentage is not served',
      ),
    );
    if (matched.length === 0) return [];
    // The block is part of the id: a transaction re-mined after a reorg is a new event.
    const eventId = `${event.id}@${event.blockHash}`;
    const listing = cards.watchOf(enriched.details);
    return alertsFor(enriched.details, matched, (destination, reply) => ({
      eventId,
      destination,
      network: event.network,
      txnHash: event.txnHash,
      blockNumber: event.blockNumber,
      kind: event.kind,
      ...(enriched.price?.usd === undefined ? {} : { usd: enriched.price.usd }),
      ...(listing ? { listing } : {}),
      payload: reply,
    }));
  };

  const ingest = new Ingest<Ready>({
    platform,
    logger,
    matcher,
    ingests: deps.ingests,
    marketplaceContracts: deps.marketplaceContracts,
    followers: deps.followers,
    replanDelayMs: deps.replanDelayMs,
    flushDelayMs: deps.flushDelayMs,
    streams: deps.streams,
    backfill: deps.backfill,
    onReadBack: (network, blocks) => deps.completeness?.add(network, { blocksReadBack: blocks }),
    onMissed: (network, blocks) => deps.completeness?.add(network, { blocksMissed: blocks }),
    onEvents: (events, order) => {
      // One transaction's events, of one network: counted in memory, written every few seconds.
      const first = events[0];
      if (first) deps.completeness?.add(first.network, { events: events.length });
      for (const event of events) {
        counters.events++;
        moves.event(event);
        holdings.moved(event);
        const match = matcher.match(event);
        // Asked before the sale is recorded: a sale is not its own last sale. The buyers of the
        // events of one batch are asked in one call.
        const lookups: SaleLookups = {
          previous: match ? previousSaleOf(event) : undefined,
          buyer: match && event.kind === 'sale' ? holdings.buyerOf(event) : undefined,
        };
        if (event.kind === 'sale') market.sale(event);
        if (!match) {
          const close = cards.closeOf(event);
          if (close) order.place()({ match: undefined, enriched: undefined, close });
          continue;
        }
        // Enrichment starts at once; recording waits its turn so alerts keep the chain's order.
        const place = order.place();
        void prepare(match, lookups).then((ready) =>
          place({ ...ready, close: cards.closeOf(event, ready.enriched?.details) }),
        );
      }
    },
    onReorged: (network, txnHash) => market.reorged(network, txnHash),
    onFinal: (network, txnHash) => recorder.final(network, txnHash),
    sink: {
      record: async (_network, batch) => {
        let items: Array<RecordingItem<ChainEvent>>;
        try {
          items = batch.flatMap((ready) =>
            ready.match ? [{ subject: ready.match.event, deliveries: deliveriesOf(ready) }] : [],
          );
        } catch (error) {
          logger.error({ events: batch.length, err: error }, 'could not render alerts');
          return;
        }
        await recorder.record(items);
        // After the alerts before them: a listing sold in the next block is recorded by now.
        cards.closed(batch.flatMap((ready) => (ready.close ? [ready.close] : [])));
      },
      reorg: async (network, txnHash) => {
        // The closes before it first: a sale reorganised away must open the card it closed.
        await cards.settled();
        await recorder.reorg(network, txnHash);
      },
      mayPass: () => !recorder.waiting,
    },
  });

  return {
    async start() {
      await Promise.all([ingest.start(), startMoves()]);
      cards.start();
    },
    async stop() {
      await ingest.stop();
      await cards.stop();
      await moves.stop();
      await recorder.stop();
      await market.close();
      await deps.backfill
        ?.flush()
        .catch((error: unknown) => logger.error({ err: error }, 'could not save the block cursors'));
      recorder.abandon();
    },
    async replan() {
      await Promise.all([ingest.replan(), startMoves()]);
    },
    status: () => ({
      streams: ingest.health(),
      counters: { logs: ingest.logs, ...counters, ...recorder.counters },
      backlog: recorder.backlog(),
      watchedNetworks: matcher.networks(),
      moves: { ...moves.counters },
    }),
    async settled() {
      await ingest.settled();
      await cards.settled();
      await moves.settled();
      await market.flush();
    },
  };
}

/** What `promise` resolves to within `limitMs`; undefined when it rejects or is later. */
function within<T>(promise: Promise<T | undefined>, limitMs: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(resolve, limitMs, undefined);
  });
  return Promise.race([promise.catch(() => undefined), late]).finally(() => clearTimeout(timer));
}
