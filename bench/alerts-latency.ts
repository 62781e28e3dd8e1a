// Alert latency through the real pipeline (issue 5, issue 15): from the moment the local platform streams a
// transaction's log to the moment the chat adapter is asked to send its alert.
//
// The local platform (devnet, scale small) runs in a CHILD PROCESS, as the real platform runs on another
// machine: its mining, HTTP answers and stream writes do not share the bot's event loop (the machine has
// 2 cores; both processes share them, and the round trips of enrichment still go over local HTTP). The bot
// side is the production code: a real PlatformClient (undici, HTTP and ndjson streams), StateStore and
// DeliveryJournal (fsync on, as in production) in a temp dir held by its lease (lockDataDir, whose check
// fences each journal write and each send, as src/main.ts wires it), the real Dispatcher and createAlerts() with
// production defaults (flushDelayMs 2), and sinks that note the time when `send` is called (maxBatch 1,
// minIntervalMs 0), then convert the alert as the adapters will (renderDiscord / renderTelegram).
//
// "Streamed" is when the child calls `devnet.mine()`: the devnet builds the block and writes its logs to
// the open streams synchronously inside that call (Miner#mine -> chain.commit -> StreamHub#onBlock), so
// nothing can be received before it. Both processes read the same monotonic clock
// (process.hrtime), so times compare across them; the time the call takes is printed as the error bound.
// Blocks of 10 listings are mined by the child on a fixed schedule (every 10 ms for 1,000 events/s),
// alternating between the devnet's two networks, in rounds of ROUND_SECONDS after a warm-up; each round
// is drained before the next. The machine is shared: its load average is printed with the figures.
//
// 200 destinations (2 in 3 on Discord) watch the devnet's 10 collections through token filters, each
// token by `fanOut` destinations: fan-out 1 is one alert per event (1,000 alerts/s), fan-out 5 is five
// (5,000 alerts/s). Listings name their token, so every event matches. Two diagnostic runs locate the
// time: the journal without fsync (not production), and a quarter of the rate.
//
// 200 destinations also serve 50 chats an event, at 100 events/s (5,000 alerts/s, as 5 chats at 1,000).
//
// Figures: per round, p50 / p99 over all its alerts; per scenario, p50 / p99 over all the alerts of all
// its rounds pooled (every sample, not medians of rounds); at the end, whether each goal is met over all
// samples: 1 chat an event p50 < 5 ms and p99 < 50 ms, 5 chats p99 < 50 ms, 50 chats p99 < 100 ms.
//
// Where the time goes: the bench notes, per transaction, when its log comes out of the platform
// client's stream (a wrapper around indexer.subscribeEvents), when enrichment starts (the transaction
// was classified: the assembler released it) and ends (a subclass of Enricher), when journal.record()
// is called for its deliveries and when it resolved (the pipeline's onRecorded option), when
// markSending() (only for an alert that was not recorded as sending, see NewDelivery.sendingAlone)
// and send are called; and the duration of every journal.record, markSending,
// markFinal, getOrders and getCollectible call. Instrumentation lives in the benches only (bench/_latency.ts,
// shared with pg-latency, which also runs the devnet's process, the rounds and the figures).
//
//   npm run bench -- alerts-latency
//   BENCH_NO_COMPACT=1 npm run bench -- alerts-latency   (diagnostic: the journal never compacts)
//   BENCH_ONLY=1 npm run bench -- alerts-latency         (only the 1-chat scenario, e.g. for --cpu-prof)
//   BENCH_ONLY=5,50 npm run bench -- alerts-latency      (only the 5- and 50-chat scenarios)
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { type Alerts, createAlerts } from '../src/alerts/index.ts';
import { Dispatcher } from '../src/delivery/dispatcher.ts';
import type { PlatformClient } from '../src/platform/client.ts';
import { FileCompletenessStore } from '../src/store/files/completeness.ts';
import { DeliveryJournal } from '../src/store/files/journal/journal.ts';
import { lockDataDir } from '../src/store/files/lock.ts';
import { FileMarketHistory } from '../src/store/files/market-history.ts';
import { StateStore } from '../src/store/files/state.ts';
import {
  alertsDeps,
  DESTINATIONS,
  type DevnetProcess,
  forgetTimes,
  type LatencyBench,
  measureRounds,
  rulesFor,
  runLatencyBench,
  type Scenario,
  sleep,
  timeJournal,
  timingSinks,
  type Watched,
} from './_latency.ts';

interface JournalScenario extends Scenario {
  fsync: boolean;
}

const ALL_SCENARIOS: JournalScenario[] = [
  { fanOut: 1, eventsPerSecond: 1_000, fsync: true, rounds: 3 },
  { fanOut: 5, eventsPerSecond: 1_000, fsync: true, rounds: 3, goal: { p99: 50 } },
  // 50 chats an event at a tenth of the rate: the same 5,000 alerts/s as 5 chats at 1,000 events/s.
  { fanOut: 50, eventsPerSecond: 100, fsync: true, rounds: 3, goal: { p99: 100 } },
  { fanOut: 1, eventsPerSecond: 1_000, fsync: false, rounds: 1, diagnostic: 'journal fsync OFF' },
  { fanOut: 1, eventsPerSecond: 250, fsync: true, rounds: 1, diagnostic: 'a quarter of the rate' },
];
/** BENCH_ONLY=1 (or 5, 50, or a list: 1,5): only the production scenarios of those fan-outs. */
const only = process.env.BENCH_ONLY?.split(',').map(Number);
const SCENARIOS = only ? ALL_SCENARIOS.filter((sc) => !sc.diagnostic && only.includes(sc.fanOut)) : ALL_SCENARIOS;

const BENCH: LatencyBench<JournalScenario> = {
  name: 'alerts-latency',
  goal: { p50: 5, p99: 50 },
  setUp: '',
  heading: (sc) => `, journal fsync ${sc.fsync ? 'on' : 'OFF'}`,
  pooled: (sc) => `, fsync ${sc.fsync ? 'on' : 'OFF'}`,
  segments: { record: 'journal.record()', lane: 'lane queue' },
  calls: {
    record: 'journal.record',
    markSending: 'markSending',
    markFinal: 'markFinal',
    getOrders: 'getOrders',
    getCollectible: 'getCollectible',
  },
  cpu: 'client, pipeline, journal, dispatcher, GC',
  drainTime: false,
};

async function scenario(
  sc: JournalScenario,
  devnet: DevnetProcess,
  platform: PlatformClient,
  tokens: readonly Watched[],
) {
  const dir = await mkdtemp(join(tmpdir(), 'floorwatch-bench-latency-'));
  const logger = pino({ level: 'silent' });
  let compactionErrors = 0;
  let pipeline: Alerts | undefined;
  let dispatcher: Dispatcher | undefined;
  let journal: DeliveryJournal | undefined;
  let market: FileMarketHistory | undefined;
  // The data directory's lease, as src/main.ts takes it: it fences every journal write and every send.
  let leaseLost = 0;
  const lock = await lockDataDir(dir, { onLost: () => leaseLost++ });
  const fence = () => lock.check();
  try {
    const store = await StateStore.open(join(dir, 'state.json'), { fence });
    const rules = rulesFor(tokens, sc.fanOut);
    for (const rule of rules) await store.addRule(rule, 1_000);
    journal = await DeliveryJournal.open(join(dir, 'deliveries.jsonl'), {
      fsync: sc.fsync,
      ...(process.env.BENCH_NO_COMPACT ? { compactAfterBytes: 1e12 } : {}),
      onCompactionError: () => compactionErrors++,
      fence,
    });
    timeJournal(journal);
    // As src/main.ts wires them: the chat's zone for late alerts' notes, the record's completeness counted.
    dispatcher = new Dispatcher({
      journal,
      sinks: timingSinks(),
      logger,
      fence: lock,
      timeZoneOf: (destination) => store.chat(`${destination.platform}:${destination.chatId}`).digest?.timeZone,
    });
    const completeness = await FileCompletenessStore.open(join(dir, 'completeness.json'));
    market = await FileMarketHistory.open(join(dir, 'market-history.jsonl'), { logger });
    pipeline = createAlerts({
      ...alertsDeps(devnet, platform, logger),
      market,
      rules: store,
      deliveries: journal,
      queue: dispatcher,
      completeness,
    });
    await pipeline.start();

    const settle = async () => {
      await sleep(50);
      await pipeline?.settled();
      await dispatcher?.drained();
    };
    const { failedBlocks, orphanSends } = await measureRounds(BENCH, devnet, tokens, sc, settle);
    const stats = journal.stats();
    console.log(
      `  journal ${stats.records} records, ${(stats.bytes / 1024 / 1024).toFixed(1)} MiB; ${rules.length} rules for ${DESTINATIONS} destinations; failed blocks ${failedBlocks}, orphan sends ${orphanSends}, compaction errors ${compactionErrors}, data-directory lease lost ${leaseLost} times`,
    );
  } finally {
    await pipeline?.stop();
    await dispatcher?.stop();
    await journal?.close();
    await market?.close();
    await lock.release();
    await rm(dir, { recursive: true, force: true });
    forgetTimes();
  }
}

await runLatencyBench(BENCH, SCENARIOS, scenario);
