// Builds and posts digests for 1,000 chats with 5 collections each, through the real DigestService,
// platform client, journal and dispatcher, on the local platform, in two cases: chats that share
// their collections (each distinct analytics filter must be fetched, and each chart drawn, once per
// run) and chats that each pick their own (1,000 distinct filters and charts). Charts are drawn by a
// ChartPool, as in the bot. Prints the total time against the goal, where it goes, and how long the
// event loop was blocked meanwhile (the longest wait a command or alert would have had).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import pino from 'pino';
import type { CollectionKey } from '../src/core/settings.ts';
import { Dispatcher } from '../src/delivery/dispatcher.ts';
import type { AlertSink } from '../src/delivery/sink.ts';
import { startDevnet } from '../src/devnet/index.ts';
import type { ChartRenderer } from '../src/digests/chart.ts';
import { ChartPool } from '../src/digests/chart-pool.ts';
import { DigestService, type DigestTiming } from '../src/digests/digest-service.ts';
import { CurrencyDirectory } from '../src/market/currencies.ts';
import { PlatformClient } from '../src/platform/client.ts';
import { DeliveryJournal } from '../src/store/files/journal/journal.ts';
import { FileMarketHistory } from '../src/store/files/market-history.ts';
import { StateStore } from '../src/store/files/state.ts';

const CHATS = 1_000;
const PER_CHAT = 5;
const GOAL_MS = 30_000;

const devnet = await startDevnet({ seed: 1 });
const calls = new Map<string, number>();
const platform = new PlatformClient({
  endpoints: devnet.endpoints,
  networks: devnet.networks,
  accessKey: devnet.accessKey,
  secretToken: devnet.secretToken,
  projectId: devnet.projectId,
  onCall: (report) => calls.set(report.operation, (calls.get(report.operation) ?? 0) + 1),
});
const logger = pino({ level: 'silent' });
const pool = new ChartPool();
const collections: CollectionKey[] = Object.entries(devnet.collections).flatMap(([network, list]) =>
  list.filter((c) => !c.hostile).map((c) => ({ network, address: c.address, name: c.name })),
);

/** Every way to pick `k` of `n` items, as index lists, in lexicographic order. */
function combinations(n: number, k: number): number[][] {
  const out: number[][] = [];
  const walk = (from: number, picked: number[]) => {
    if (picked.length === k) {
      out.push(picked);
      return;
    }
    for (let i = from; i < n; i++) walk(i + 1, [...picked, i]);
  };
  walk(0, []);
  return out;
}

interface ChatDigest {
  collections: CollectionKey[];
  days: number;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

async function runCase(label: string, digestOf: (i: number) => ChatDigest): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'floorwatch-bench-digests-'));
  const store = await StateStore.open(join(dir, 'state.json'));
  const journal = await DeliveryJournal.open(join(dir, 'deliveries.jsonl'));
  let posted = 0;
  const sink: AlertSink = {
    platform: 'telegram',
    maxBatch: 1,
    minIntervalMs: 0,
    send: async () => String(++posted),
    edit: async () => undefined,
  };
  const dispatcher = new Dispatcher({ journal, sinks: new Map([['telegram', sink]]), logger });
  const chatKeys = Array.from({ length: CHATS }, (_, i) => `telegram:-${100_000 + i}`);
  await store.updateChats(
    chatKeys.map((chatKey, i) => {
      const { collections: picked, days } = digestOf(i);
      return [
        chatKey,
        (s) => {
          s.digest = {
            hour: 9,
            minute: 0,
            timeZone: 'UTC',
            days,
            collections: picked,
            setAt: '2026-01-01T00:00:00.000Z',
          };
        },
      ] as const;
    }),
  );
  const distinctFilters = new Set(
    chatKeys.map((k) => {
      const digest = store.chat(k).digest;
      return JSON.stringify([digest?.days, digest?.collections.map((c) => c.address).sort()]);
    }),
  );
  const spent: DigestTiming = { gatherMs: 0, chartMs: 0, journalMs: 0 };
  const charts = { drawn: 0, onLoopMs: 0 };
  const measured: ChartRenderer = {
    render: (title, series) => {
      const started = performance.now();
      const png = pool.render(title, series);
      charts.drawn++;
      charts.onLoopMs += performance.now() - started;
      return png;
    },
  };
  // The bot's market record, as the running bot has it: recording for over a week, a priced sale and a
  // floor a day for every collection, so that the charts carry their floor and volume panels.
  const recordedSince = Date.now() - 8 * 86_400_000;
  const sales = collections.flatMap((collection, c) =>
    Array.from({ length: 7 }, (_, day) => ({
      k: 'sale',
      n: collection.network,
      c: collection.address,
      at: Date.now() - day * 86_400_000 - 60_000,
      tx: `0x${(c * 7 + day + 1).toString(16).padStart(64, '0')}`,
      t: [[String(day + 1), '1', 100 + day * 10]],
    })),
  );
  await writeFile(
    join(dir, 'market-history.jsonl'),
    [{ k: 'history', v: 1, since: recordedSince }, ...sales].map((line) => `${JSON.stringify(line)}\n`).join(''),
  );
  const market = await FileMarketHistory.open(join(dir, 'market-history.jsonl'), { logger });
  for (const collection of collections) {
    for (let day = 6; day >= 0; day--) {
      await market.floor(collection.network, collection.address, 50 + day * 3, Date.now() - day * 86_400_000);
    }
  }
  const service = new DigestService({
    market,
    platform,
    store,
    journal,
    dispatcher,
    currencies: new CurrencyDirectory(platform),
    logger,
    projectId: devnet.projectId,
    charts: measured,
    onTiming: (_chat, timing) => {
      spent.gatherMs += timing.gatherMs;
      spent.chartMs += timing.chartMs;
      spent.journalMs += timing.journalMs;
    },
  });
  calls.clear();
  const stalls = monitorEventLoopDelay({ resolution: 10 });
  stalls.enable();
  const loop = performance.eventLoopUtilization();
  const started = performance.now();
  await service.run(chatKeys, new Date());
  const built = performance.now() - started;
  await dispatcher.drained();
  const total = performance.now() - started;
  const busy = performance.eventLoopUtilization(loop);
  stalls.disable();
  console.log(
    `digests, ${label}: ${CHATS} chats x ${PER_CHAT} collections, ${distinctFilters.size} distinct filters: all ${posted} posted in ${seconds(total)} (goal < ${seconds(GOAL_MS)}: ${total < GOAL_MS ? 'met' : 'NOT met'})`,
  );
  console.log(
    `  summed over the ${posted} chats (4 built at a time): gathering ${seconds(spent.gatherMs)}, waiting for the chart ${seconds(spent.chartMs)}, journal writes ${seconds(spent.journalMs)}; posting finished ${seconds(total - built)} after the run`,
  );
  console.log(
    `  charts: ${charts.drawn} drawn by ${pool.size} worker thread${pool.size === 1 ? '' : 's'}, ${seconds(charts.onLoopMs)} of it on the event loop (building the SVG)`,
  );
  console.log(
    `  event loop: ${(busy.utilization * 100).toFixed(0)}% busy (the local platform shares it), longest stall ${(stalls.max / 1e6).toFixed(0)} ms, p99 ${(stalls.percentile(99) / 1e6).toFixed(0)} ms`,
  );
  console.log(
    `  platform calls: WalletsTxnSentTotal ${calls.get('Analytics/WalletsTxnSentTotal') ?? 0}, DailyWalletTxnConversionRate ${calls.get('Analytics/DailyWalletTxnConversionRate') ?? 0}; ListCollectibles ${calls.get('Marketplace/ListCollectibles') ?? 0} for ${collections.length} collections`,
  );
  await market.close();
  await dispatcher.stop();
  await journal.close();
  await rm(dir, { recursive: true, force: true });
}

const sets = combinations(collections.length, PER_CHAT);
const pick = (indexes: readonly number[]) =>
  indexes.map((i) => collections[i]).filter((c): c is CollectionKey => c !== undefined);

await runCase('shared collections', (i) => ({
  collections: pick(Array.from({ length: PER_CHAT }, (_, j) => (i + j * 3) % collections.length)),
  days: 7,
}));
// Each chat its own filter: a distinct set of collections, and past the number of sets, another
// number of days.
await runCase('each chat its own collections', (i) => ({
  collections: pick(sets[i % sets.length] ?? []),
  days: 1 + Math.floor(i / sets.length),
}));

await pool.close();
await platform.close();
await devnet.close();
