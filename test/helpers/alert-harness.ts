import { join } from 'node:path';
import pino, { type Logger } from 'pino';
import { type Alerts, createAlerts, type JournalRetryOptions } from '../../src/alerts/index.ts';
import type { AlertStatus } from '../../src/bot/command.ts';
import { Dispatcher } from '../../src/delivery/dispatcher.ts';
import type { DevnetOptions } from '../../src/devnet/index.ts';
import { devnetLinks } from '../../src/main.ts';
import { Links } from '../../src/market/links.ts';
import type { CallReport } from '../../src/platform/index.ts';
import { DeliveryJournal } from '../../src/store/files/journal/journal.ts';
import { FileMarketHistory } from '../../src/store/files/market-history.ts';
import { type Harness, startHarness } from './bot-harness.ts';
import { RecordingSink } from './recording-sink.ts';
import { marketplacesOf, streamsFollow } from './streams.ts';

export interface AlertHarness extends Harness {
  journal: DeliveryJournal;
  dispatcher: Dispatcher;
  alerts: Alerts;
  console: RecordingSink;
  telegram: RecordingSink;
  /** Waits until the streams follow the current rules (after /watch changes). */
  planned: () => Promise<void>;
  /** Stops the alert path and the dispatcher, as a shutdown does, and opens new ones on the same journal. */
  restart: () => Promise<void>;
}

export interface AlertHarnessOptions {
  retries?: number;
  onCall?: (report: CallReport) => void;
  /** Where the delivery journal lives (default: the harness's data directory). */
  journalDir?: string;
  journalRetry?: JournalRetryOptions;
  /** Receives the alert path's and the dispatcher's logs (default: silent). */
  logger?: Logger;
}

export async function startAlertHarness(
  options: DevnetOptions = {},
  extra: AlertHarnessOptions = {},
): Promise<AlertHarness> {
  let status: (() => Promise<AlertStatus>) | undefined;
  const h = await startHarness(options, {
    ...(extra.retries === undefined ? {} : { retries: extra.retries }),
    ...(extra.onCall ? { onCall: extra.onCall } : {}),
    alerts: () => (status as () => Promise<AlertStatus>)(),
  });
  const logger = extra.logger ?? pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const consoleSink = new RecordingSink('console', 10);
  const telegramSink = new RecordingSink('telegram', 1);
  const sinks = new Map([
    ['console' as const, consoleSink],
    ['telegram' as const, telegramSink],
  ]);
  const file = join(extra.journalDir ?? h.dataDir, 'deliveries.jsonl');
  const market = await FileMarketHistory.open(join(h.dataDir, 'market-history.jsonl'), { logger });
  const build = async (journal: DeliveryJournal) => {
    const dispatcher = new Dispatcher({ journal, sinks, logger, retryDelayMs: 20, maxRetryDelayMs: 200 });
    const alerts = createAlerts({
      platform: h.platform,
      rules: h.store,
      deliveries: journal,
      queue: dispatcher,
      currencies: h.engine.currencies,
      links: new Links(devnetLinks(h.devnet), h.devnet.networks),
      market,
      logger,
      marketplaceContracts: marketplacesOf(h.devnet),
      replanDelayMs: 20,
      flushDelayMs: 5,
      streams: { reconnect: { initialDelayMs: 20, maxDelayMs: 200 } },
      ...(extra.journalRetry ? { journalRetry: extra.journalRetry } : {}),
    });
    await dispatcher.resume();
    await alerts.start();
    return { dispatcher, alerts };
  };
  const journal = await DeliveryJournal.open(file, { fsync: false });
  const first = await build(journal);
  status = async () => {
    const stats = await harness.journal.counts();
    const alerts = harness.alerts.status();
    return {
      streams: alerts.streams,
      journal: { records: stats.records, pending: stats.pending + stats.sending, failed: stats.failed },
      counters: alerts.counters,
      backlog: alerts.backlog,
    };
  };
  const harness: AlertHarness = {
    ...h,
    journal,
    dispatcher: first.dispatcher,
    alerts: first.alerts,
    console: consoleSink,
    telegram: telegramSink,
    async planned() {
      const deadline = Date.now() + 10_000;
      for (;;) {
        await new Promise((resolve) => setTimeout(resolve, 40));
        const health = harness.alerts.status().streams;
        if (streamsFollow(health, h.store.rules, marketplacesOf(h.devnet))) return;
        if (Date.now() > deadline) throw new Error(`streams not planned: ${JSON.stringify(health)}`);
      }
    },
    async restart() {
      await harness.alerts.stop();
      await harness.dispatcher.stop();
      await harness.journal.close();
      harness.journal = await DeliveryJournal.open(file, { fsync: false });
      const next = await build(harness.journal);
      harness.dispatcher = next.dispatcher;
      harness.alerts = next.alerts;
    },
    async close() {
      await harness.alerts.stop();
      await harness.dispatcher.stop();
      await harness.journal.close();
      await market.close();
      await h.close();
    },
  };
  return harness;
}
