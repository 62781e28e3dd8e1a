// Alert latency in PostgreSQL mode (issue 14): from the moment the local platform streams a transaction's
// log to the moment the chat sink is asked to send its alert, with rules, deliveries and chat claims in a
// shared PostgreSQL database as `FLOORWATCH_DATABASE_URL` sets them up in src/main.ts.
//
// The same driver, instrumentation and figures as bench/alerts-latency.ts (both use bench/_latency.ts),
// with the database stores instead of the files: openSharedDatabase (the real pool, migrations,
// PgRulesRepository, PgDeliveryLog, Leases: every write fenced by a lease's token, every send by the
// chat's claim), a ChatClaims in front of the real Dispatcher (the
// pipeline hands it what it recorded; it also hears the `floorwatch_deliveries` notifications, as
// main.ts wires it), and the alert path from createAlerts() with production defaults. In this mode every delivery
// is recorded `pending` (claims: `sendsAlone` is false), then the holder of the chat's claim reads it
// back (`openFor`), marks it `sending`, sends it and marks it `sent`: three writes and a read per alert.
//
// Processes: the local platform (devnet, scale small) runs in a CHILD PROCESS, as the real platform runs
// on another machine, so that its mining, HTTP answers and stream writes do not run on the measured
// process's event loop; PostgreSQL is the embedded one of the tests (test/helpers/postgres.ts, its own
// processes; FLOORWATCH_TEST_DATABASE_URL uses yours). The machine has 2 cores, shared by the three.
// "Streamed" is when the child calls `devnet.mine()` (the devnet writes the block's logs to the open
// streams inside that call); both processes read the same monotonic clock (process.hrtime).
// Blocks of 10 listings every 10 ms (1,000 events/s), alternating the devnet's two networks, 200
// destinations (2 in 3 on Discord) watching its tokens, each token by `fanOut` destinations; sinks with
// maxBatch 1 and minIntervalMs 0 that note the time of `send`, then render as the adapters do.
//
// Figures: per round, p50 / p99 over all its alerts; per scenario, p50 / p99 over all the alerts of all
// its rounds pooled; at the end, whether the goal (p50 < 10 ms and p99 < 100 ms over all samples) is
// met. Where the time goes: per transaction, when its log leaves the client's stream, enrichment
// starts and ends, PgDeliveryLog.record() is called and resolves, markSending() is called (after the
// claim's openFor read and the lane queue) and send is called; and the duration of every record,
// openFor, markSending, markSent, getOrders and getCollectible call.
//
//   npm run bench -- pg-latency
//   BENCH_ONLY=1 npm run bench -- pg-latency         (only the 1-chat scenario)
import pino from 'pino';
import { type Alerts, createAlerts } from '../src/alerts/index.ts';
import { ChatClaims } from '../src/delivery/claims.ts';
import { Dispatcher } from '../src/delivery/dispatcher.ts';
import type { PlatformClient } from '../src/platform/client.ts';
import {
  chatsOf,
  DELIVERIES_CHANNEL,
  openSharedDatabase,
  PgMarketHistory,
  type SharedDatabase,
} from '../src/store/pg/index.ts';
import { startTestPostgres, type TestPostgres } from '../test/helpers/postgres.ts';
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
  timeCalls,
  timeJournal,
  timesOf,
  timingSinks,
  type Watched,
} from './_latency.ts';

const ALL_SCENARIOS: Scenario[] = [
  { fanOut: 1, eventsPerSecond: 1_000, rounds: 3 },
  // Five alerts per event (5,000 alerts/s) is several times what one process drains through the
  // database (see pg-deliveries): left out. A lower rate shows whether the time is queueing.
  { fanOut: 1, eventsPerSecond: 250, rounds: 1, diagnostic: 'a quarter of the rate' },
];
const SCENARIOS = process.env.BENCH_ONLY ? ALL_SCENARIOS.slice(0, 1) : ALL_SCENARIOS;

const BENCH: LatencyBench<Scenario> = {
  name: 'pg-latency',
  goal: { p50: 10, p99: 100 },
  setUp: 'PostgreSQL embedded (own processes), pool 10; ',
  segments: { record: 'PgDeliveryLog.record()', lane: 'claim (openFor) and lane queue' },
  calls: {
    record: 'record',
    openFor: 'openFor',
    markSending: 'markSending',
    markSent: 'markSent',
    markFinal: 'markFinal',
    getOrders: 'getOrders',
    getCollectible: 'getCollectible',
  },
  cpu: 'client, pipeline, pg client, claims, dispatcher, GC',
  drainTime: true,
};

async function scenario(
  postgres: TestPostgres,
  sc: Scenario,
  devnet: DevnetProcess,
  platform: PlatformClient,
  tokens: readonly Watched[],
) {
  const logger = pino({ level: 'silent' });
  let lostLeases = 0;
  let pipeline: Alerts | undefined;
  let dispatcher: Dispatcher | undefined;
  let claims: ChatClaims | undefined;
  let shared: SharedDatabase | undefined;
  try {
    // A database of its own per scenario: the deliveries of the one before do not weigh on it.
    const url = await postgres.freshDatabase();
    shared = await openSharedDatabase({ url, poolSize: 10 }, logger, () => lostLeases++);
    const store = shared.rules;
    const journal = shared.deliveries;
    const rules = rulesFor(tokens, sc.fanOut);
    for (const rule of rules) await store.addRule(rule, 1_000);
    timeJournal(journal);
    timeCalls(journal, 'markSent');
    timeCalls(journal, 'openFor');
    // As src/main.ts wires them: sends fenced by the chats' claims, records by the networks' ingest leases.
    dispatcher = new Dispatcher({ journal, sinks: timingSinks(), logger, fence: shared.leases });
    const chatClaims = new ChatClaims({ leases: shared.leases, log: journal, dispatcher, logger });
    for (const network of platform.networks.all) await shared.leases.tryLock('ingest', network.name);
    claims = chatClaims;
    const origin = journal.origin;
    await shared.db.listen(DELIVERIES_CHANNEL, (payload) => chatClaims.noticed(chatsOf(payload, origin)));
    await chatClaims.start();
    pipeline = createAlerts({
      ...alertsDeps(devnet, platform, logger),
      market: await PgMarketHistory.open(shared.db, { logger }),
      rules: store,
      deliveries: journal,
      queue: chatClaims,
    });
    await pipeline.start();

    /**
     * Until every alert of `hashes` was sent (or 120 s passed) and every outcome recorded: the claims
     * read deliveries back from the database before the dispatcher has them, so an idle dispatcher
     * does not mean the round is over; an overloaded round drains for a long while after its mining.
     */
    const settle = async (hashes: readonly string[]) => {
      await sleep(50);
      await pipeline?.settled();
      const deadline = Date.now() + 120_000;
      while (Date.now() < deadline && hashes.some((h) => timesOf(h).sends.length < sc.fanOut)) await sleep(10);
      await dispatcher?.drained();
    };

    const { failedBlocks, orphanSends } = await measureRounds(BENCH, devnet, tokens, sc, settle);
    const { rows } = await shared.db.pool.query<{ state: string; count: string }>(
      'SELECT state, count(*) AS count FROM deliveries GROUP BY state ORDER BY state',
    );
    console.log(
      `  deliveries table: ${rows.map((r) => `${r.state} ${r.count}`).join(', ')}; ${rules.length} rules for ${DESTINATIONS} destinations; failed blocks ${failedBlocks}, orphan sends ${orphanSends}, leases lost ${lostLeases} times`,
    );
  } finally {
    await pipeline?.stop();
    await dispatcher?.stop();
    claims?.stop();
    await shared?.close();
    forgetTimes();
  }
}

const postgres = await startTestPostgres();
try {
  await runLatencyBench(BENCH, SCENARIOS, (sc, devnet, platform, tokens) =>
    scenario(postgres, sc, devnet, platform, tokens),
  );
} finally {
  await postgres.stop();
}
