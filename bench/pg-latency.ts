// Alert latency in PostgreSQL mode (issue 14): from the moment the local platform streams a transaction's
// log to the moment the chat sink is asked to send its alert, with rules, deliveries and chat claims in a
// shared PostgreSQL database as `FLOORWATCH_DATABASE_URL` sets them up in src/main.ts.
//
// Adapted from bench/alerts-latency.ts (same driver, instrumentation and figures), with the database
// stores instead of the files: openSharedDatabase (the real pool, migrations, PgRulesRepository,
// PgDeliveryLog, AdvisoryLocks), a ChatClaims in front of the real Dispatcher (the pipeline hands it
// what it recorded; it also hears the `floorwatch_deliveries` notifications, as main.ts wires it), and
// the real AlertPipeline with production defaults. In this mode every delivery is recorded `pending`
// (claims: `sendsAlone` is false), then the holder of the chat's claim reads it back (`openFor`),
// marks it `sending`, sends it and marks it `sent`: three writes and a read per alert.
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
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { cpus, loadavg } from 'node:os';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { type EnrichedEvent, Enricher } from '../src/alerts/enrich.ts';
import { AlertPipeline } from '../src/alerts/pipeline.ts';
import type { ChainEvent } from '../src/alerts/types.ts';
import { CurrencyDirectory } from '../src/bot/currencies.ts';
import { renderDiscord } from '../src/chat/discord/render.ts';
import { renderTelegram } from '../src/chat/telegram/render.ts';
import type { NewDelivery } from '../src/core/deliveries.ts';
import type { Reply } from '../src/core/reply.ts';
import type { Destination, WatchRule } from '../src/core/types.ts';
import { ChatClaims } from '../src/delivery/claims.ts';
import { Dispatcher } from '../src/delivery/dispatcher.ts';
import type { AlertSink } from '../src/delivery/sink.ts';
import type { ActivitySpec, DevnetInfo } from '../src/devnet/index.ts';
import { PlatformClient } from '../src/platform/client.ts';
import type { Network } from '../src/platform/networks.ts';
import type { EventLog } from '../src/platform/types.ts';
import type { PgDeliveryLog } from '../src/store/pg/deliveries.ts';
import { chatsOf, DELIVERIES_CHANNEL, openSharedDatabase, type SharedDatabase } from '../src/store/pg/index.ts';
import { startTestPostgres, type TestPostgres } from '../test/helpers/postgres.ts';
import { prng } from './_prng.ts';

const PER_BLOCK = 10;
const WARM_UP_SECONDS = 1;
const ROUND_SECONDS = 5;
const DESTINATIONS = 200;

interface Scenario {
  fanOut: number;
  eventsPerSecond: number;
  rounds: number;
  /** A diagnostic run, to locate the time (not the target's rate). */
  diagnostic?: string;
}

const ALL_SCENARIOS: Scenario[] = [
  { fanOut: 1, eventsPerSecond: 1_000, rounds: 3 },
  // Five alerts per event (5,000 alerts/s) is several times what one process drains through the
  // database (see pg-deliveries): left out. A lower rate shows whether the time is queueing.
  { fanOut: 1, eventsPerSecond: 250, rounds: 1, diagnostic: 'a quarter of the rate' },
];
const SCENARIOS = process.env.BENCH_ONLY ? ALL_SCENARIOS.slice(0, 1) : ALL_SCENARIOS;

/** Milliseconds on the machine's monotonic clock: the same in the devnet's process and in this one. */
const now = (): number => Number(process.hrtime.bigint()) / 1e6;

// ---------------------------------------------------------------------------------------------
// Timing records

interface TxnTimes {
  /** devnet.mine() called / returned (in the devnet's process; known once it reports the round). */
  mine?: number;
  mined?: number;
  /** The transaction's (last) log came out of the stream. */
  log?: number;
  enrichStart?: number;
  enrichEnd?: number;
  /** PgDeliveryLog.record() of its deliveries called / resolved (onRecorded). */
  recordStart?: number;
  recorded?: number;
  /** markSending() called, then send, for each of its alerts. */
  sending: number[];
  sends: number[];
}

const txns = new Map<string, TxnTimes>();
/**
 * The timing record of a transaction, created by whichever comes first: the devnet's report of its
 * block comes after the round, long after its log was streamed.
 */
function timesOf(hash: string): TxnTimes {
  let times = txns.get(hash);
  if (!times) {
    times = { sending: [], sends: [] };
    txns.set(hash, times);
  }
  return times;
}
/** Sends of transactions the devnet did not report as mined in a round (cannot happen). */
let orphanSends = 0;
/** Durations of calls, for the round in progress. */
const calls = {
  record: [] as number[],
  openFor: [] as number[],
  markSending: [] as number[],
  markSent: [] as number[],
  markFinal: [] as number[],
  getOrders: [] as number[],
  getCollectible: [] as number[],
};

/** `${network}:${txnHash}:${collection}:${kind}@${blockHash}>${platform}:${chatId}` -> txnHash. */
const txnOf = (id: string): string => id.split(':')[1] ?? '';

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

const ms = (v: number): string => (Number.isNaN(v) ? '-' : v < 10 ? v.toFixed(2) : v.toFixed(1));

function summary(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  return `p50 ${ms(percentile(sorted, 50))} ms, p95 ${ms(percentile(sorted, 95))} ms, p99 ${ms(percentile(sorted, 99))} ms, max ${ms(sorted.at(-1) ?? Number.NaN)} ms`;
}

/** `p50 / p99` in ms. */
function seg(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  return `${ms(percentile(sorted, 50))} / ${ms(percentile(sorted, 99))}`;
}

const GOAL_P50_MS = 10;
const GOAL_P99_MS = 100;

/** The pooled figures of the production scenarios, for the closing verdict. */
const verdicts: Array<{ fanOut: number; p50: number; p99: number; met: boolean; rounds: number; samples: number }> = [];

// ---------------------------------------------------------------------------------------------
// Instrumented parts (this file only)

/** A chat adapter that notes when it is asked to send, then converts the alert as the real ones will. */
class TimingSink implements AlertSink {
  readonly platform: 'discord' | 'telegram';
  readonly maxBatch = 1;
  readonly minIntervalMs = 0;
  #next = 1;

  constructor(platform: 'discord' | 'telegram') {
    this.platform = platform;
  }

  async send(_chatId: string, replies: readonly Reply[], key: string): Promise<string> {
    timesOf(txnOf(key)).sends.push(now());
    if (this.platform === 'telegram') for (const reply of replies) renderTelegram(reply);
    else renderDiscord(replies);
    return String(this.#next++);
  }

  async edit(): Promise<void> {}
}

class TimedEnricher extends Enricher {
  override async enrich(event: ChainEvent, collectionName: string): Promise<EnrichedEvent> {
    const times = timesOf(event.txnHash);
    times.enrichStart ??= now();
    const enriched = await super.enrich(event, collectionName);
    times.enrichEnd = now();
    return enriched;
  }
}

/** Notes when each log comes out of the platform client's event streams (what the pipeline reads). */
function timeStreams(platform: PlatformClient): void {
  const indexer = platform.indexer;
  const subscribe = indexer.subscribeEvents.bind(indexer);
  indexer.subscribeEvents = (args, options) => {
    const inner = subscribe(args, options);
    return (async function* timed(): AsyncGenerator<EventLog, void, undefined> {
      for await (const log of inner) {
        timesOf(log.txnHash).log = now();
        yield log;
      }
    })();
  };
}

/** Wraps an async method of `target` to note each call's duration in `into`, and `before` its start. */
function timeCalls<T extends object, K extends keyof T>(
  target: T,
  name: K,
  into: () => number[],
  before?: (args: unknown[], now: number) => void,
): void {
  const original = (target[name] as (...args: unknown[]) => Promise<unknown>).bind(target);
  (target as Record<K, unknown>)[name] = async (...args: unknown[]) => {
    const start = now();
    before?.(args, start);
    try {
      return await original(...args);
    } finally {
      into().push(now() - start);
    }
  };
}

function timeJournal(journal: PgDeliveryLog): void {
  timeCalls(
    journal,
    'record',
    () => calls.record,
    (args, at) => {
      const first = (args[0] as NewDelivery[])[0];
      if (first) timesOf(first.txnHash).recordStart ??= at;
    },
  );
  timeCalls(
    journal,
    'markSending',
    () => calls.markSending,
    (args, at) => timesOf(txnOf(args[0] as string)).sending.push(at),
  );
  timeCalls(journal, 'markSent', () => calls.markSent);
  timeCalls(journal, 'openFor', () => calls.openFor);
  timeCalls(journal, 'markFinal', () => calls.markFinal);
}

function timePlatform(platform: PlatformClient): void {
  timeCalls(platform.marketplace, 'getOrders', () => calls.getOrders);
  timeCalls(platform.marketplace, 'getCollectible', () => calls.getCollectible);
}

// ---------------------------------------------------------------------------------------------
// Set-up

const sleep = (msToWait: number) => new Promise<void>((resolve) => setTimeout(resolve, msToWait));

interface Watched {
  network: string;
  collection: string;
  name: string;
  tokenId: string;
}

/** Every token of every collection of the devnet, from the platform (ListCollectibles, empty ones included). */
async function tokensOf(info: DevnetInfo, platform: PlatformClient): Promise<Watched[]> {
  const out: Watched[] = [];
  // Pages may be 0- or 1-based (the devnet's page 0 is its page 1): tokens are deduplicated.
  const seen = new Set<string>();
  for (const [network, collections] of Object.entries(info.collections)) {
    for (const c of collections) {
      for (let page = 0; ; page++) {
        const { collectibles, page: next } = await platform.marketplace.listCollectibles({
          network,
          side: 'listing',
          contractAddress: c.address,
          filter: { includeEmpty: true },
          page: { page, pageSize: 200 },
        });
        for (const item of collectibles) {
          const key = `${network}|${c.address.toLowerCase()}|${item.metadata.tokenId}`;
          if (seen.has(key)) continue;
          seen.add(key);
          out.push({ network, collection: c.address.toLowerCase(), name: c.name, tokenId: item.metadata.tokenId });
        }
        if (!next.more || collectibles.length === 0) break;
      }
    }
  }
  return out;
}

const destinationOf = (d: number): Destination => ({
  platform: d % 3 === 0 ? 'telegram' : 'discord',
  chatId: String(700_000_000_000 + d),
});

/** One rule per (destination, collection) with the tokens it watches; token i is watched by `fanOut` destinations. */
function rulesFor(tokens: readonly Watched[], fanOut: number): Array<Omit<WatchRule, 'id'>> {
  const byKey = new Map<string, Omit<WatchRule, 'id'> & { tokenIds: string[] }>();
  tokens.forEach((token, i) => {
    for (let j = 0; j < fanOut; j++) {
      const d = (i + j * Math.floor(DESTINATIONS / fanOut)) % DESTINATIONS;
      const key = `${d}|${token.network}|${token.collection}`;
      let rule = byKey.get(key);
      if (!rule) {
        rule = {
          destination: destinationOf(d),
          network: token.network,
          collection: token.collection,
          collectionName: token.name,
          kinds: ['listing', 'offer', 'sale'],
          tokenIds: [],
          paused: false,
          createdBy: `discord:${d}`,
          createdAt: '2026-11-21T00:00:00Z',
        };
        byKey.set(key, rule);
      }
      rule.tokenIds.push(token.tokenId);
    }
  });
  return [...byKey.values()];
}

const SEGMENTS = {
  stream: 'stream (mine called -> log out of the client)',
  assembly: 'held by the assembler',
  enrich: 'enrichment',
  chain: "waiting its turn in the network's chain",
  record: 'PgDeliveryLog.record()',
  lane: 'claim (openFor) and lane queue',
  sending: 'markSending()',
} as const;
type Segment = keyof typeof SEGMENTS;

interface RoundResult {
  latencies: number[];
  events: number;
  alerts: number;
  missing: number;
  seconds: number;
  mineCall: number[];
  segments: Record<Segment, number[]>;
}

/** What the round's transactions went through, from their timing records (which it forgets). */
function collect(hashes: readonly string[], fanOut: number, seconds: number): RoundResult {
  const result: RoundResult = {
    latencies: [],
    events: hashes.length,
    alerts: 0,
    missing: 0,
    seconds,
    mineCall: [],
    segments: { stream: [], assembly: [], enrich: [], chain: [], record: [], lane: [], sending: [] },
  };
  const blocks = new Set<number>();
  const add = (segment: Segment, from: number | undefined, to: number | undefined) => {
    if (from !== undefined && to !== undefined) result.segments[segment].push(to - from);
  };
  for (const hash of hashes) {
    const t = timesOf(hash);
    txns.delete(hash);
    if (t.mine === undefined || t.mined === undefined) continue; // cannot happen: the devnet reported it
    if (!blocks.has(t.mine)) {
      blocks.add(t.mine);
      result.mineCall.push(t.mined - t.mine);
    }
    if (t.sends.length < fanOut) result.missing += fanOut - t.sends.length;
    for (const sent of t.sends) result.latencies.push(sent - t.mine);
    result.alerts += t.sends.length;
    add('stream', t.mine, t.log);
    add('assembly', t.log, t.enrichStart);
    add('enrich', t.enrichStart, t.enrichEnd);
    add('chain', t.enrichEnd, t.recordStart);
    add('record', t.recordStart, t.recorded);
    // A lone alert for an idle chat is recorded as sending: no markSending() before its send.
    if (t.sending.length === 0) for (const sent of t.sends) add('lane', t.recorded, sent);
    t.sending.forEach((sending, i) => {
      add('lane', t.recorded, sending);
      add('sending', sending, t.sends[i]);
    });
  }
  return result;
}

async function scenario(
  postgres: TestPostgres,
  devnet: DevnetProcess,
  platform: PlatformClient,
  tokens: readonly Watched[],
  sc: Scenario,
) {
  const logger = pino({ level: 'silent' });
  let lostLocks = 0;
  let pipeline: AlertPipeline | undefined;
  let dispatcher: Dispatcher | undefined;
  let claims: ChatClaims | undefined;
  let shared: SharedDatabase | undefined;
  try {
    // A database of its own per scenario: the deliveries of the one before do not weigh on it.
    const url = await postgres.freshDatabase();
    shared = await openSharedDatabase({ url, poolSize: 10 }, logger, () => lostLocks++);
    const store = shared.rules;
    const journal = shared.deliveries;
    const rules = rulesFor(tokens, sc.fanOut);
    for (const rule of rules) await store.addRule(rule, 1_000);
    timeJournal(journal);
    const sinks = new Map<AlertSink['platform'], AlertSink>([
      ['discord', new TimingSink('discord')],
      ['telegram', new TimingSink('telegram')],
    ]);
    dispatcher = new Dispatcher({ journal, sinks, logger });
    const chatClaims = new ChatClaims({ locks: shared.locks, log: journal, dispatcher, logger });
    claims = chatClaims;
    const origin = journal.origin;
    await shared.db.listen(DELIVERIES_CHANNEL, (payload) => chatClaims.noticed(chatsOf(payload, origin)));
    await chatClaims.start();
    const marketplaceContracts = Object.fromEntries(devnet.info.networks.map((n) => [n.name, [n.marketplaceContract]]));
    const enricher = new TimedEnricher(platform, new CurrencyDirectory(platform, nativeSymbols(devnet.info)), logger);
    pipeline = new AlertPipeline({
      platform,
      store,
      journal,
      dispatcher: chatClaims,
      enricher,
      logger,
      marketplaceContracts,
      // The bench lists the same tokens over and over, often at a price seen before: every listing
      // is to alert, so identical relists are not left out here.
      relistWindowMs: 0,
      onRecorded: (event) => {
        timesOf(event.txnHash).recorded = now();
      },
    });
    await pipeline.start();

    const byNetwork = new Map<string, Watched[]>();
    for (const token of tokens) byNetwork.set(token.network, [...(byNetwork.get(token.network) ?? []), token]);
    const networks = [...byNetwork.keys()];
    const random = prng(sc.fanOut * 1_000 + sc.eventsPerSecond);
    let failedBlocks = 0;

    /**
     * Has the devnet mine blocks of PER_BLOCK listings at the scenario's rate for `seconds`; returns the
     * transactions once they are all mined (their logs are streamed meanwhile).
     */
    const drive = async (seconds: number): Promise<{ hashes: string[]; seconds: number; cpuMs: number }> => {
      const interval = (1000 * PER_BLOCK) / sc.eventsPerSecond;
      const count = Math.round((seconds * 1000) / interval);
      const blocks = Array.from({ length: count }, (_, k) => {
        const network = networks[k % networks.length] as string;
        const candidates = byNetwork.get(network) as Watched[];
        const specs: ActivitySpec[] = Array.from({ length: PER_BLOCK }, () => {
          const token = candidates[Math.floor(random() * candidates.length)] as Watched;
          return { kind: 'listing', collection: token.collection, tokenId: token.tokenId };
        });
        return { network, specs };
      });
      const driven = await devnet.drive(blocks, interval);
      const hashes: string[] = [];
      for (const block of driven.blocks) {
        if (!block) {
          failedBlocks++;
          continue;
        }
        for (const hash of block.txnHashes) {
          const times = timesOf(hash);
          times.mine = block.called;
          times.mined = block.returned;
          hashes.push(hash);
        }
      }
      return { hashes, seconds: driven.seconds, cpuMs: driven.cpuMs };
    };

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

    const warm = await drive(WARM_UP_SECONDS);
    await settle(warm.hashes);
    for (const hash of warm.hashes) txns.delete(hash);
    const results: RoundResult[] = [];
    for (let round = 0; round < sc.rounds; round++) {
      for (const list of Object.values(calls)) list.length = 0;
      const loop = monitorEventLoopDelay({ resolution: 1 });
      loop.enable();
      const gcPauses: number[] = [];
      const gc = new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) gcPauses.push(entry.duration);
      });
      gc.observe({ entryTypes: ['gc'] });
      const cpu0 = process.cpuUsage();
      const { hashes, seconds, cpuMs: devnetCpuMs } = await drive(ROUND_SECONDS);
      const drainFrom = now();
      await settle(hashes);
      const drainMs = now() - drainFrom;
      const cpu = process.cpuUsage(cpu0);
      loop.disable();
      gc.disconnect();
      const result = collect(hashes, sc.fanOut, seconds);
      results.push(result);
      const cpuMs = (cpu.user + cpu.system) / 1000;
      console.log(
        `  round ${round + 1}: ${summary(result.latencies)} over all ${result.latencies.length} samples (${result.alerts} alerts of ${result.events} events, ${Math.round(result.events / result.seconds)} events/s mined, all sent and recorded ${ms(drainMs)} ms after the round's mining ended${result.missing ? `, ${result.missing} alerts MISSING` : ''})`,
      );
      console.log(
        `    where the time goes, p50 / p99 ms: ${(Object.keys(SEGMENTS) as Segment[]).map((k) => `${SEGMENTS[k]} ${seg(result.segments[k])}`).join(', ')}`,
      );
      console.log(
        `    calls, p50 / p99 ms: record ${seg(calls.record)} (${calls.record.length}), openFor ${seg(calls.openFor)} (${calls.openFor.length}), markSending ${seg(calls.markSending)} (${calls.markSending.length}), markSent ${seg(calls.markSent)} (${calls.markSent.length}), markFinal ${seg(calls.markFinal)} (${calls.markFinal.length}), getOrders ${seg(calls.getOrders)} (${calls.getOrders.length}), getCollectible ${seg(calls.getCollectible)} (${calls.getCollectible.length}); devnet.mine() ${seg(result.mineCall)} (${result.mineCall.length} blocks)`,
      );
      console.log(
        `    bot process CPU until drained (client, pipeline, pg client, claims, dispatcher, GC): ${(cpuMs / hashes.length).toFixed(2)} ms/event, ${Math.round(((cpuMs / hashes.length) * sc.eventsPerSecond) / 10)}% of one core at this rate; devnet process CPU while mining ${(devnetCpuMs / hashes.length).toFixed(2)} ms/event; bot event-loop delay p50 ${ms(loop.percentile(50) / 1e6)} ms, p99 ${ms(loop.percentile(99) / 1e6)} ms, max ${ms(loop.max / 1e6)} ms; GC pauses ${gcPauses.length}, ${ms(gcPauses.reduce((a, b) => a + b, 0))} ms in all, max ${ms(Math.max(0, ...gcPauses))} ms`,
      );
    }
    const all = results.flatMap((r) => r.latencies).sort((a, b) => a - b);
    const events = results.reduce((n, r) => n + r.events, 0);
    const seconds = results.reduce((n, r) => n + r.seconds, 0);
    const p50 = percentile(all, 50);
    const p99 = percentile(all, 99);
    const perRound = (p: number) =>
      results.map((r) =>
        percentile(
          [...r.latencies].sort((a, b) => a - b),
          p,
        ),
      );
    const range = (values: number[]) => `${ms(Math.min(...values))}-${ms(Math.max(...values))}`;
    const met = p50 < GOAL_P50_MS && p99 < GOAL_P99_MS;
    if (!sc.diagnostic)
      verdicts.push({ fanOut: sc.fanOut, p50, p99, met, rounds: results.length, samples: all.length });
    const targets = sc.diagnostic
      ? `diagnostic: ${sc.diagnostic}`
      : `goal p50 < ${GOAL_P50_MS} ms: ${p50 < GOAL_P50_MS ? 'met' : 'NOT met'}, p99 < ${GOAL_P99_MS} ms: ${p99 < GOAL_P99_MS ? 'met' : 'NOT met'}`;
    console.log(
      `pg-latency at ${sc.eventsPerSecond} events/s, fan-out ${sc.fanOut}, all ${all.length} samples of ${results.length} round(s) pooled: p50 ${ms(p50)} ms, p95 ${ms(percentile(all, 95))} ms, p99 ${ms(p99)} ms, max ${ms(all.at(-1) ?? Number.NaN)} ms (${Math.round(events / seconds)} events/s and ${Math.round(all.length / seconds)} alerts/s achieved${results.length > 1 ? `; per round p50 ${range(perRound(50))} ms, p99 ${range(perRound(99))} ms` : ''}; ${targets})`,
    );
    for (const times of txns.values()) orphanSends += times.sends.length;
    const { rows } = await shared.db.pool.query<{ state: string; count: string }>(
      'SELECT state, count(*) AS count FROM deliveries GROUP BY state ORDER BY state',
    );
    console.log(
      `  deliveries table: ${rows.map((r) => `${r.state} ${r.count}`).join(', ')}; ${rules.length} rules for ${DESTINATIONS} destinations; failed blocks ${failedBlocks}, orphan sends ${orphanSends}, lock connection lost ${lostLocks} times`,
    );
  } finally {
    await pipeline?.stop();
    await dispatcher?.stop();
    claims?.stop();
    await shared?.close();
    txns.clear();
  }
}

// ---------------------------------------------------------------------------------------------
// The devnet's process

interface DriveRequest {
  kind: 'drive';
  blocks: Array<{ network: string; specs: ActivitySpec[] }>;
  intervalMs: number;
}
/** Per block: when mine() was called and returned, and its transactions; null when it failed. */
interface Driven {
  kind: 'driven';
  blocks: Array<{ called: number; returned: number; txnHashes: string[] } | null>;
  seconds: number;
  /** CPU of the devnet's process while it mined (user + system). */
  cpuMs: number;
}
interface DevnetReady {
  kind: 'ready';
  info: DevnetInfo;
  networks: Network[];
}

/** Runs in the child: starts the devnet, then mines what the bench asks, on its schedule. */
async function serveDevnet(): Promise<void> {
  const { startDevnet } = await import('../src/devnet/index.ts');
  const devnet = await startDevnet({ scale: 'small' });
  process.on('message', (message: DriveRequest) => {
    void (async () => {
      const out: Driven['blocks'] = [];
      const cpu0 = process.cpuUsage();
      const start = now();
      for (const [k, block] of message.blocks.entries()) {
        const wait = start + k * message.intervalMs - now();
        if (wait > 0) await sleep(wait);
        const called = now();
        try {
          const result = await devnet.mine(block.network, block.specs);
          out.push({ called, returned: now(), txnHashes: result.txnHashes });
        } catch {
          out.push(null);
        }
      }
      const seconds = (now() - start) / 1000;
      const cpu = process.cpuUsage(cpu0);
      process.send?.({ kind: 'driven', blocks: out, seconds, cpuMs: (cpu.user + cpu.system) / 1000 } satisfies Driven);
    })();
  });
  process.on('disconnect', () => void devnet.close().finally(() => process.exit(0)));
  process.send?.({ kind: 'ready', info: devnet.info(), networks: devnet.networks } satisfies DevnetReady);
}

/** The devnet in a child process, as the bench sees it. */
interface DevnetProcess {
  info: DevnetInfo;
  networks: Network[];
  drive(blocks: DriveRequest['blocks'], intervalMs: number): Promise<Driven>;
  close(): Promise<void>;
}

async function startDevnetProcess(): Promise<DevnetProcess> {
  const child = fork(fileURLToPath(import.meta.url), ['--devnet-child'], { stdio: 'inherit' });
  const exited = once(child, 'exit').then(([code]) => {
    throw new Error(`the devnet's process exited (${code})`);
  });
  exited.catch(() => undefined);
  const [ready] = (await Promise.race([once(child, 'message'), exited])) as [DevnetReady];
  return {
    info: ready.info,
    networks: ready.networks,
    async drive(blocks, intervalMs) {
      const answer = once(child, 'message');
      child.send({ kind: 'drive', blocks, intervalMs } satisfies DriveRequest);
      const [driven] = (await Promise.race([answer, exited])) as [Driven];
      return driven;
    },
    async close() {
      const gone = once(child, 'exit');
      child.disconnect();
      await gone;
    },
  };
}

/** The native coin's symbol per network (what the bot reads from the platform's configuration). */
function nativeSymbols(info: DevnetInfo): Record<string, string> {
  const out: Record<string, string> = {};
  for (const network of info.networks) {
    const native = network.currencies.find((c) => /^0x0{40}$/.test(c.address));
    if (native) out[network.name] = native.symbol;
  }
  return out;
}

async function main(): Promise<void> {
  const postgres = await startTestPostgres();
  const devnet = await startDevnetProcess();
  const { info } = devnet;
  const platform = new PlatformClient({
    endpoints: info.endpoints,
    networks: devnet.networks,
    accessKey: info.accessKey,
    secretToken: info.secretToken,
    projectId: info.projectId,
  });
  timeStreams(platform);
  timePlatform(platform);
  try {
    const tokens = await tokensOf(info, platform);
    console.log(`machine load average (1 min) at the start: ${loadavg()[0]?.toFixed(1)} on ${cpus().length} CPUs`);
    console.log(
      `devnet (in a child process): ${tokens.length} tokens in ${Object.values(info.collections).flat().length} collections on ${info.networks.length} networks; blocks of ${PER_BLOCK} listings alternating networks; ${WARM_UP_SECONDS} s warm-up then rounds of ${ROUND_SECONDS} s; flushDelayMs 2 (default); PostgreSQL embedded (own processes), pool 10; latency = send called - devnet.mine() called`,
    );
    for (const sc of SCENARIOS) {
      console.log(
        `${sc.diagnostic ? `diagnostic (${sc.diagnostic}): ` : ''}${sc.eventsPerSecond} events/s, fan-out ${sc.fanOut} (each event alerts ${sc.fanOut} of ${DESTINATIONS} destinations):`,
      );
      await scenario(postgres, devnet, platform, tokens, sc);
      console.log(
        `  machine load average (1 min) after the scenario: ${loadavg()[0]?.toFixed(1)} on ${cpus().length} CPUs`,
      );
    }
    console.log(`goal at 1,000 events/s: p50 < ${GOAL_P50_MS} ms and p99 < ${GOAL_P99_MS} ms over all samples`);
    for (const v of verdicts) {
      console.log(
        `  ${v.fanOut} chat${v.fanOut === 1 ? '' : 's'} per event: p50 ${ms(v.p50)} ms, p99 ${ms(v.p99)} ms over all ${v.samples} samples of ${v.rounds} rounds: ${v.met ? 'MET' : 'NOT met'}`,
      );
    }
  } finally {
    await platform.close();
    await devnet.close();
    await postgres.stop();
  }
}

if (process.argv.includes('--devnet-child')) await serveDevnet();
else await main();
