/**
 * The digests, built in one place: the schedule of every chat's digest, the service that gathers and
 * renders one, the pool of workers that draw its charts; each due digest is recorded and handed to
 * the delivery queue like an alert.
 */
import type { Logger } from 'pino';
import type { MarketHistoryView } from '../core/market.ts';
import type { CompletenessStore, DeliveryLog, RulesRepository } from '../core/ports.ts';
import type { Reply } from '../core/reply.ts';
import type { DigestSettings } from '../core/settings.ts';
import type { DeliveryQueue } from '../delivery/dispatcher.ts';
import type { CurrencyDirectory } from '../market/currencies.ts';
import type { PlatformClient } from '../platform/client.ts';
import { ChartPool } from './chart-pool.ts';
import { DigestService } from './digest-service.ts';
import { DigestScheduler } from './scheduler.ts';

export interface DigestsDeps {
  platform: PlatformClient;
  rules: RulesRepository;
  deliveries: DeliveryLog;
  /** Where recorded digests go, as alerts do. */
  queue: DeliveryQueue;
  currencies: CurrencyDirectory;
  logger: Logger;
  projectId: number | undefined;
  /** The bot's record of sales and floors, for the charts. */
  market: Pick<MarketHistoryView, 'daily' | 'floor' | 'since'>;
  /** `file:` URL of the chart worker's script (`.ts` from the sources, `.js` from the build). */
  chartWorkerUrl: URL;
  /** Whether this process posts the digests now (with a shared database, the holder of their lease). */
  posts: () => boolean;
  /** How complete the bot's record is: each digest shows its period's figures. */
  completeness?: Pick<CompletenessStore, 'days'>;
}

export interface Digests {
  /** The digest of a chat as it would be posted now. */
  preview(chatKey: string, digest: DigestSettings): Promise<Reply>;
  /** When a digest's schedule fires next. */
  nextRun(digest: DigestSettings): Date | null;
  /** Schedules every digest, and posts, once, those missed while stopped (when not too late). */
  start(): Promise<void>;
  /** Posts the digests missed meanwhile (this process just began to post them). */
  catchUp(): Promise<void>;
  /** Stops the schedule; a run in progress keeps its charts until it ends. */
  stop(): Promise<void>;
}

export function createDigests(deps: DigestsDeps): Digests {
  const charts = new ChartPool({ workerUrl: deps.chartWorkerUrl });
  const service = new DigestService({
    platform: deps.platform,
    store: deps.rules,
    journal: deps.deliveries,
    dispatcher: deps.queue,
    currencies: deps.currencies,
    logger: deps.logger,
    projectId: deps.projectId,
    charts,
    market: deps.market,
    ...(deps.completeness ? { completeness: deps.completeness } : {}),
  });
  const scheduler = new DigestScheduler({
    store: deps.rules,
    logger: deps.logger,
    // Each due digest is also recorded once: a second process that posts it changes nothing.
    run: async (chatKeys, dueAt) => {
      if (deps.posts()) await service.run(chatKeys, dueAt);
    },
  });
  return {
    preview: async (chatKey, digest) => (await service.build(chatKey, digest, new Date())).reply,
    nextRun: (digest) => scheduler.nextRun(digest.hour, digest.minute, digest.timeZone),
    start: () => scheduler.start(),
    catchUp: () => scheduler.catchUp(),
    async stop() {
      await scheduler.stop();
      await charts.close();
    },
  };
}
