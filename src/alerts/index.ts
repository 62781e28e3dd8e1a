/**
 * The alert path, built in one place: ingest (streams planned from the rules, logs assembled into
 * events, each network's events kept in order) -> match (one look-up per event in the rule index)
 * -> relists -> enrich (once per event) -> render (once per event, a copy per role) -> journal-first
 * recording (delivery/recording.ts) -> the delivery queue. Receipts close deliveries when final and
 * turn sent alerts into "reversed" edits when reorganised.
 */
import type { Logger } from 'pino';
import type { CurrencyDirectory } from '../bot/currencies.ts';
import type { Links } from '../bot/links.ts';
import type { NewDelivery } from '../core/deliveries.ts';
import type { DeliveryLog, RulesRepository } from '../core/ports.ts';
import type { AlertCounters, JournalBacklog, StreamHealth } from '../core/status.ts';
import type { DeliveryQueue } from '../delivery/dispatcher.ts';
import { DeliveryRecorder, type JournalRetryOptions, type RecordingItem } from '../delivery/recording.ts';
import type { PlatformClient } from '../platform/client.ts';
import type { Backfill } from './backfill.ts';
import { type EnrichedEvent, Enricher } from './enrich.ts';
import { Ingest } from './ingest.ts';
import type { MarketRecorder } from './market-history.ts';
import { type EventMatch, Matcher } from './match.ts';
import { Relists } from './relists.ts';
import { alertsFor } from './render.ts';
import type { StreamOptionsForAlerts } from './streams.ts';
import type { ChainEvent } from './types.ts';

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
  /**
   * The market history: it is told every sale the streams show (a rule matched it or not), the
   * floors enrichment looks up and the reorgs, and gives sale alerts the token's last sale.
   */
  market?: MarketRecorder | undefined;
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
}

/** What /status, /readyz and the metrics read of the alert path. Plain data. */
export interface AlertsStatus {
  streams: StreamHealth[];
  counters: AlertCounters;
  /** Alerts waiting in memory for the delivery journal, and why. */
  backlog: JournalBacklog;
  /** Networks with active watch rules, as this process's index has them (none when it ingests nothing). */
  watchedNetworks: string[];
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
  /** Resolves when every event received so far has been recorded (tests, benchmarks). */
  settled(): Promise<void>;
}

/** An event once enriched, waiting for its turn to be recorded. */
interface Ready {
  match: EventMatch;
  enriched: EnrichedEvent;
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
  const { platform, logger, market } = deps;
  const counters = { events: 0, matched: 0, relists: 0 };
  const matcher = new Matcher(deps.rules, logger);
  const relists = new Relists({
    log: deps.deliveries,
    ...(deps.relistWindowMs === undefined ? {} : { windowMs: deps.relistWindowMs }),
  });
  const enricher =
    deps.enricher ?? new Enricher(platform, deps.currencies, logger.child({ component: 'enrich' }), deps.links);
  const enrichLimitMs = deps.enrichLimitMs ?? 10_000;
  const recorder = new DeliveryRecorder<ChainEvent>({
    log: deps.deliveries,
    queue: deps.queue,
    logger,
    ...(deps.journalRetry ? { retry: deps.journalRetry } : {}),
    ...(deps.onRecorded ? { onRecorded: deps.onRecorded } : {}),
  });

  /** The previous recorded sale of the token a one-token sale sold. */
  const lastSaleOf = (event: ChainEvent): { at: string; usd?: number } | undefined => {
    const token = event.tokens.length === 1 ? event.tokens[0] : undefined;
    const found = token && event.kind === 'sale' && market?.lastSale(event.network, event.collection, token.tokenId);
    if (!found) return undefined;
    const at = new Date(found.at).toISOString();
    return found.usd === undefined ? { at } : { at, usd: found.usd };
  };

  /** An event's deliveries: one per destination its match reaches, its message rendered once. */
  const deliveriesOf = ({ match, enriched }: Ready): NewDelivery[] => {
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
  };

  const ingest = new Ingest<Ready>({
    platform,
    logger,
    matcher,
    ingests: deps.ingests,
    marketplaceContracts: deps.marketplaceContracts,
    replanDelayMs: deps.replanDelayMs,
    flushDelayMs: deps.flushDelayMs,
    streams: deps.streams,
    backfill: deps.backfill,
    onEvents: (events, order) => {
      for (const event of events) {
        counters.events++;
        const match = matcher.match(event);
        const lastSale = match ? lastSaleOf(event) : undefined;
        if (market && event.kind === 'sale') market.sale(event);
        if (!match) continue;
        if (relists.isRelist(event)) {
          counters.relists++;
          if (!match.onlyRelists()) continue;
        }
        counters.matched++;
        const collectionName = match.collectionName;
        // Enrichment starts at once; recording waits its turn so alerts keep the chain's order.
        const ready = order.place();
        void enricher
          .enrichWithin(event, collectionName, enrichLimitMs, { floor: match.wantsFloor })
          .catch((error: unknown) => {
            logger.error({ event: event.id, err: error }, 'enrichment failed');
            return enricher.bare(event, collectionName);
          })
          .then((enriched) => {
            const sample = enriched.floorSample;
            if (market && sample) market.floor(event.network, event.collection, sample.usd, sample.at);
            ready({
              match,
              enriched: lastSale ? { ...enriched, details: { ...enriched.details, lastSale } } : enriched,
            });
          });
      }
    },
    onReorged: (network, txnHash) => market?.reorged(network, txnHash),
    onFinal: (network, txnHash) => recorder.final(network, txnHash),
    sink: {
      record: async (_network, batch) => {
        let items: Array<RecordingItem<ChainEvent>>;
        try {
          items = batch.map((ready) => ({ subject: ready.match.event, deliveries: deliveriesOf(ready) }));
        } catch (error) {
          logger.error({ events: batch.length, err: error }, 'could not render alerts');
          return;
        }
        await recorder.record(items);
      },
      reorg: (network, txnHash) => recorder.reorg(network, txnHash),
      mayPass: () => !recorder.waiting,
    },
  });

  return {
    start: () => ingest.start(),
    async stop() {
      await ingest.stop();
      await recorder.stop();
      await deps.backfill
        ?.flush()
        .catch((error: unknown) => logger.error({ err: error }, 'could not save the block cursors'));
      recorder.abandon();
    },
    replan: () => ingest.replan(),
    status: () => ({
      streams: ingest.health(),
      counters: { logs: ingest.logs, ...counters, ...recorder.counters },
      backlog: recorder.backlog(),
      watchedNetworks: matcher.networks(),
    }),
    settled: () => ingest.settled(),
  };
}
