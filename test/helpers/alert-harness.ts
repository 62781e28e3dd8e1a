import { join } from 'node:path';
import pino from 'pino';
import { Dispatcher } from '../../src/alerts/delivery.ts';
import { Enricher } from '../../src/alerts/enrich.ts';
import { AlertPipeline } from '../../src/alerts/pipeline.ts';
import type { AlertStatus } from '../../src/bot/command.ts';
import type { DevnetOptions } from '../../src/devnet/index.ts';
import type { CallReport } from '../../src/platform/index.ts';
import { DeliveryJournal } from '../../src/store/journal.ts';
import { type Harness, startHarness } from './bot-harness.ts';
import { RecordingSink } from './recording-sink.ts';

export interface AlertHarness extends Harness {
  journal: DeliveryJournal;
  dispatcher: Dispatcher;
  pipeline: AlertPipeline;
  console: RecordingSink;
  telegram: RecordingSink;
  /** Waits until the streams follow the current rules (after /watch changes). */
  planned: () => Promise<void>;
  /** Stops the pipeline and the dispatcher, as a shutdown does, and opens new ones on the same journal. */
  restart: () => Promise<void>;
}

export async function startAlertHarness(
  options: DevnetOptions = {},
  extra: { retries?: number; onCall?: (report: CallReport) => void } = {},
): Promise<AlertHarness> {
  let status: (() => AlertStatus) | undefined;
  const h = await startHarness(options, { ...extra, alerts: () => (status as () => AlertStatus)() });
  const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const consoleSink = new RecordingSink('console', 10);
  const telegramSink = new RecordingSink('telegram', 1);
  const sinks = new Map([
    ['console' as const, consoleSink],
    ['telegram' as const, telegramSink],
  ]);
  const file = join(h.dataDir, 'deliveries.jsonl');
  const build = async (journal: DeliveryJournal) => {
    const dispatcher = new Dispatcher({ journal, sinks, logger, retryDelayMs: 20, maxRetryDelayMs: 200 });
    const marketplaceContracts = Object.fromEntries(
      h.devnet.info().networks.map((n) => [n.name, [n.marketplaceContract]]),
    );
    const pipeline = new AlertPipeline({
      platform: h.platform,
      store: h.store,
      journal,
      dispatcher,
      enricher: new Enricher(h.platform, h.engine.currencies, logger),
      logger,
      marketplaceContracts,
      replanDelayMs: 20,
      flushDelayMs: 5,
      streams: { reconnect: { initialDelayMs: 20, maxDelayMs: 200 } },
    });
    await pipeline.start();
    return { dispatcher, pipeline };
  };
  const journal = await DeliveryJournal.open(file, { fsync: false });
  const first = await build(journal);
  status = () => {
    const stats = harness.journal.stats();
    return {
      streams: harness.pipeline.health(),
      journal: { records: stats.records, pending: stats.pending + stats.sending, failed: stats.failed },
      counters: harness.pipeline.counters,
    };
  };
  const harness: AlertHarness = {
    ...h,
    journal,
    dispatcher: first.dispatcher,
    pipeline: first.pipeline,
    console: consoleSink,
    telegram: telegramSink,
    async planned() {
      const wanted = h.store.rules.filter((r) => !r.paused);
      const deadline = Date.now() + 10_000;
      for (;;) {
        await new Promise((resolve) => setTimeout(resolve, 40));
        const health = harness.pipeline.health();
        const ready = wanted.every((rule) => {
          const stream = health.find((s) => s.network === rule.network);
          return stream?.events === 'connected' && stream.contracts > 0;
        });
        if (ready) return;
        if (Date.now() > deadline) throw new Error(`streams not planned: ${JSON.stringify(health)}`);
      }
    },
    async restart() {
      await harness.pipeline.stop();
      await harness.dispatcher.stop();
      await harness.journal.close();
      harness.journal = await DeliveryJournal.open(file, { fsync: false });
      const next = await build(harness.journal);
      harness.dispatcher = next.dispatcher;
      harness.pipeline = next.pipeline;
    },
    async close() {
      await harness.pipeline.stop();
      await harness.dispatcher.stop();
      await harness.journal.close();
      await h.close();
    },
  };
  return harness;
}
