// Alert latency through the real pipeline (issue 5): from the moment the local platform streams a
// transaction's log to the moment the chat adapter is asked to send its alert.
//
// In-process devnet (scale small), a real PlatformClient, StateStore and DeliveryJournal (fsync on, as
// in production) in a temp dir, the real Dispatcher and AlertPipeline with production defaults
// (flushDelayMs 2), and sinks that note performance.now() when `send` is called (maxBatch 1,
// minIntervalMs 0), then convert the alert as the adapters will (renderDiscord / renderTelegram).
//
// "Streamed" is when `devnet.mine()` is called: the devnet builds the block and writes its logs to the
// open streams synchronously inside that call (Miner#mine -> chain.commit -> StreamHub#onBlock), so
// nothing can be received before it returns; the time the call takes is printed as the error bound.
// Blocks of 10 listings are mined on a fixed schedule (every 10 ms for 1,000 events/s), alternating
// between the devnet's two networks, in rounds of ROUND_SECONDS after a warm-up; each round is
// drained before the next. The machine is shared: its load average is printed with the figures.
//
// 200 destinations (2 in 3 on Discord) watch the devnet's 10 collections through token filters, each
// token by `fanOut` destinations: fan-out 1 is one alert per event (1,000 alerts/s), fan-out 5 is five
// (5,000 alerts/s). Listings name their token, so every event matches. Two diagnostic runs locate the
// time: the journal without fsync (not production), and a quarter of the rate.
//
// Where the time goes: the bench notes, per transaction, when its log comes out of the platform
// client's stream (a wrapper around indexer.subscribeEvents), when enrichment starts (the transaction
// was classified: the assembler released it) and ends (a subclass of Enricher), when journal.record()
// is called for its deliveries and when it resolved (the pipeline's onRecorded option), when
// markSending() (only for an alert that was not recorded as sending, see NewDelivery.sendingAlone)
// and send are called; and the duration of every journal.record, markSending,
// markFinal, getOrders and getCollectible call. Instrumentation lives in this file only.
//
// Note: the devnet shares this process's event loop, so its HTTP answers to the enrichment calls, its
// stream writes and the mining itself count into the figures (against the real platform that CPU is
// elsewhere, and the network round trip is added instead).
//
//   npm run bench -- alerts-latency
//   BENCH_NO_COMPACT=1 npm run bench -- alerts-latency   (diagnostic: the journal never compacts)
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
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
import { Dispatcher } from '../src/delivery/dispatcher.ts';
import type { AlertSink } from '../src/delivery/sink.ts';
import { type ActivitySpec, type Devnet, startDevnet } from '../src/devnet/index.ts';
import { nativeSymbolsOf } from '../src/main.ts';
import { PlatformClient } from '../src/platform/client.ts';
import type { EventLog } from '../src/platform/types.ts';
import { DeliveryJournal } from '../src/store/journal.ts';
import { StateStore } from '../src/store/state.ts';
import { prng } from './_prng.ts';

const PER_BLOCK = 10;
const WARM_UP_SECONDS = 1;
const ROUND_SECONDS = 5;
const DESTINATIONS = 200;

interface Scenario {
  fanOut: number;
  eventsPerSecond: number;
  fsync: boolean;
  rounds: number;
  /** A diagnostic run, to locate the time (not the production set-up, or not the target's rate). */
  diagnostic?: string;
}

const SCENARIOS: Scenario[] = [
  { fanOut: 1, eventsPerSecond: 1_000, fsync: true, rounds: 3 },
  { fanOut: 5, eventsPerSecond: 1_000, fsync: true, rounds: 1 },
  { fanOut: 1, eventsPerSecond: 1_000, fsync: false, rounds: 1, diagnostic: 'journal fsync OFF' },
  { fanOut: 1, eventsPerSecond: 250, fsync: true, rounds: 1, diagnostic: 'a quarter of the rate' },
];

// ---------------------------------------------------------------------------------------------
// Timing records

interface TxnTimes {
  /** devnet.mine() called / returned. */
  mine: number;
  mined: number;
  /** The transaction's (last) log came out of the stream. */
  log?: number;
  enrichStart?: number;
  enrichEnd?: number;
  /** journal.record() of its deliveries called / resolved (onRecorded). */
  recordStart?: number;
  recorded?: number;
  /** markSending() called, then send, for each of its alerts. */
  sending: number[];
  sends: number[];
}

const txns = new Map<string, TxnTimes>();
/** Sends whose transaction was not noted yet (cannot happen: the mine call returns first). */
let orphanSends = 0;
/** Durations of calls, for the round in progress. */
const calls = {
  record: [] as number[],
  markSending: [] as number[],
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

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};

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
    const now = performance.now();
    const times = txns.get(txnOf(key));
    if (times) times.sends.push(now);
    else orphanSends++;
    if (this.platform === 'telegram') for (const reply of replies) renderTelegram(reply);
    else renderDiscord(replies);
    return String(this.#next++);
  }

  async edit(): Promise<void> {}
}

class TimedEnricher extends Enricher {
  override async enrich(event: ChainEvent, collectionName: string): Promise<EnrichedEvent> {
    const times = txns.get(event.txnHash);
    if (times) times.enrichStart ??= performance.now();
    const enriched = await super.enrich(event, collectionName);
    if (times) times.enrichEnd = performance.now();
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
        const times = txns.get(log.txnHash);
        if (times) times.log = performance.now();
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
    const start = performance.now();
    before?.(args, start);
    try {
      return await original(...args);
    } finally {
      into().push(performance.now() - start);
    }
  };
}

function timeJournal(journal: DeliveryJournal): void {
  timeCalls(
    journal,
    'record',
    () => calls.record,
    (args, now) => {
      const first = (args[0] as NewDelivery[])[0];
      const times = first && txns.get(first.txnHash);
      if (times) times.recordStart ??= now;
    },
  );
  timeCalls(
    journal,
    'markSending',
    () => calls.markSending,
    (args, now) => txns.get(txnOf(args[0] as string))?.sending.push(now),
  );
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
async function tokensOf(devnet: Devnet, platform: PlatformClient): Promise<Watched[]> {
  const out: Watched[] = [];
  // Pages may be 0- or 1-based (the devnet's page 0 is its page 1): tokens are deduplicated.
  const seen = new Set<string>();
  for (const [network, collections] of Object.entries(devnet.collections)) {
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
  record: 'journal.record()',
  lane: 'lane queue',
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
    const t = txns.get(hash) as TxnTimes;
    txns.delete(hash);
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

async function scenario(devnet: Devnet, platform: PlatformClient, tokens: readonly Watched[], sc: Scenario) {
  const dir = await mkdtemp(join(tmpdir(), 'floorwatch-bench-latency-'));
  const logger = pino({ level: 'silent' });
  let compactionErrors = 0;
  let pipeline: AlertPipeline | undefined;
  let dispatcher: Dispatcher | undefined;
  let journal: DeliveryJournal | undefined;
  try {
    const store = await StateStore.open(join(dir, 'state.json'));
    const rules = rulesFor(tokens, sc.fanOut);
    for (const rule of rules) await store.addRule(rule, 1_000);
    journal = await DeliveryJournal.open(join(dir, 'deliveries.jsonl'), {
      fsync: sc.fsync,
      ...(process.env.BENCH_NO_COMPACT ? { compactAfterBytes: 1e12 } : {}),
      onCompactionError: () => compactionErrors++,
    });
    timeJournal(journal);
    const sinks = new Map<AlertSink['platform'], AlertSink>([
      ['discord', new TimingSink('discord')],
      ['telegram', new TimingSink('telegram')],
    ]);
    dispatcher = new Dispatcher({ journal, sinks, logger });
    const marketplaceContracts = Object.fromEntries(
      devnet.info().networks.map((n) => [n.name, [n.marketplaceContract]]),
    );
    const enricher = new TimedEnricher(platform, new CurrencyDirectory(platform, nativeSymbolsOf(devnet)), logger);
    pipeline = new AlertPipeline({
      platform,
      store,
      journal,
      dispatcher,
      enricher,
      logger,
      marketplaceContracts,
      // The bench lists the same tokens over and over, often at a price seen before: every listing
      // is to alert, so identical relists are not left out here.
      relistWindowMs: 0,
      onRecorded: (event) => {
        const times = txns.get(event.txnHash);
        if (times) times.recorded = performance.now();
      },
    });
    await pipeline.start();

    const byNetwork = new Map<string, Watched[]>();
    for (const token of tokens) byNetwork.set(token.network, [...(byNetwork.get(token.network) ?? []), token]);
    const networks = [...byNetwork.keys()];
    const random = prng(sc.fanOut * 1_000 + sc.eventsPerSecond);
    let failedBlocks = 0;

    /** Mines blocks of PER_BLOCK listings at the scenario's rate for `seconds`; returns the transactions. */
    const drive = async (seconds: number): Promise<{ hashes: string[]; seconds: number }> => {
      const interval = (1000 * PER_BLOCK) / sc.eventsPerSecond;
      const blocks = Math.round((seconds * 1000) / interval);
      const hashes: string[] = [];
      const start = performance.now();
      for (let k = 0; k < blocks; k++) {
        const wait = start + k * interval - performance.now();
        if (wait > 0) await sleep(wait);
        const network = networks[k % networks.length] as string;
        const candidates = byNetwork.get(network) as Watched[];
        const specs: ActivitySpec[] = Array.from({ length: PER_BLOCK }, () => {
          const token = candidates[Math.floor(random() * candidates.length)] as Watched;
          return { kind: 'listing', collection: token.collection, tokenId: token.tokenId };
        });
        const called = performance.now();
        try {
          const result = await devnet.mine(network, specs);
          const returned = performance.now();
          for (const hash of result.txnHashes) {
            txns.set(hash, { mine: called, mined: returned, sending: [], sends: [] });
            hashes.push(hash);
          }
        } catch {
          failedBlocks++;
        }
      }
      return { hashes, seconds: (performance.now() - start) / 1000 };
    };

    const settle = async () => {
      await sleep(50);
      await pipeline?.settled();
      await dispatcher?.drained();
    };

    const warm = await drive(WARM_UP_SECONDS);
    await settle();
    for (const hash of warm.hashes) txns.delete(hash);
    const results: RoundResult[] = [];
    for (let round = 0; round < sc.rounds; round++) {
      for (const list of Object.values(calls)) list.length = 0;
      const loop = monitorEventLoopDelay({ resolution: 1 });
      loop.enable();
      const cpu0 = process.cpuUsage();
      const { hashes, seconds } = await drive(ROUND_SECONDS);
      await settle();
      const cpu = process.cpuUsage(cpu0);
      loop.disable();
      const result = collect(hashes, sc.fanOut, seconds);
      results.push(result);
      const cpuMs = (cpu.user + cpu.system) / 1000;
      console.log(
        `  round ${round + 1}: ${summary(result.latencies)} (${result.alerts} alerts of ${result.events} events, ${Math.round(result.events / result.seconds)} events/s mined${result.missing ? `, ${result.missing} alerts MISSING` : ''})`,
      );
      console.log(
        `    where the time goes, p50 / p99 ms: ${(Object.keys(SEGMENTS) as Segment[]).map((k) => `${SEGMENTS[k]} ${seg(result.segments[k])}`).join(', ')}`,
      );
      console.log(
        `    calls, p50 / p99 ms: journal.record ${seg(calls.record)} (${calls.record.length}), markSending ${seg(calls.markSending)} (${calls.markSending.length}), markFinal ${seg(calls.markFinal)} (${calls.markFinal.length}), getOrders ${seg(calls.getOrders)} (${calls.getOrders.length}), getCollectible ${seg(calls.getCollectible)} (${calls.getCollectible.length}); devnet.mine() ${seg(result.mineCall)} (${result.mineCall.length} blocks)`,
      );
      console.log(
        `    process CPU until drained (mining, devnet server, pipeline, journal, GC): ${(cpuMs / hashes.length).toFixed(2)} ms/event, ${Math.round(((cpuMs / hashes.length) * sc.eventsPerSecond) / 10)}% of one core at this rate; event-loop delay p50 ${ms(loop.percentile(50) / 1e6)} ms, p99 ${ms(loop.percentile(99) / 1e6)} ms, max ${ms(loop.max / 1e6)} ms`,
      );
    }
    const all = results.flatMap((r) => r.latencies).sort((a, b) => a - b);
    const events = results.reduce((n, r) => n + r.events, 0);
    const seconds = results.reduce((n, r) => n + r.seconds, 0);
    const p50 = median(
      results.map((r) =>
        percentile(
          [...r.latencies].sort((a, b) => a - b),
          50,
        ),
      ),
    );
    const p99 = median(
      results.map((r) =>
        percentile(
          [...r.latencies].sort((a, b) => a - b),
          99,
        ),
      ),
    );
    const targets = sc.diagnostic
      ? `diagnostic: ${sc.diagnostic}`
      : `targets p50 < 5 ms: ${p50 < 5 ? 'met' : 'NOT met'}, p99 < 50 ms: ${p99 < 50 ? 'met' : 'NOT met'}`;
    console.log(
      `alerts-latency at ${sc.eventsPerSecond} events/s, fan-out ${sc.fanOut}, fsync ${sc.fsync ? 'on' : 'OFF'}: p50 ${ms(percentile(all, 50))} ms, p95 ${ms(percentile(all, 95))} ms, p99 ${ms(percentile(all, 99))} ms, max ${ms(all.at(-1) ?? Number.NaN)} ms (${all.length} alerts, ${Math.round(events / seconds)} events/s and ${Math.round(all.length / seconds)} alerts/s achieved${results.length > 1 ? `; median of the ${results.length} rounds: p50 ${ms(p50)} ms, p99 ${ms(p99)} ms` : ''}; ${targets})`,
    );
    const stats = journal.stats();
    console.log(
      `  journal ${stats.records} records, ${(stats.bytes / 1024 / 1024).toFixed(1)} MiB; ${rules.length} rules for ${DESTINATIONS} destinations; failed blocks ${failedBlocks}, orphan sends ${orphanSends}, compaction errors ${compactionErrors}`,
    );
  } finally {
    await pipeline?.stop();
    await dispatcher?.stop();
    await journal?.close();
    await rm(dir, { recursive: true, force: true });
    txns.clear();
  }
}

const devnet = await startDevnet({ scale: 'small' });
const platform = new PlatformClient({
  endpoints: devnet.endpoints,
  networks: devnet.networks,
  accessKey: devnet.accessKey,
  secretToken: devnet.secretToken,
  projectId: devnet.projectId,
});
timeStreams(platform);
timePlatform(platform);
try {
  const tokens = await tokensOf(devnet, platform);
  console.log(`machine load average (1 min) at the start: ${loadavg()[0]?.toFixed(1)} on ${cpus().length} CPUs`);
  console.log(
    `devnet: ${tokens.length} tokens in ${Object.values(devnet.collections).flat().length} collections on ${devnet.networks.length} networks; blocks of ${PER_BLOCK} listings alternating networks; ${WARM_UP_SECONDS} s warm-up then rounds of ${ROUND_SECONDS} s; flushDelayMs 2 (default); latency = send called - devnet.mine() called`,
  );
  for (const sc of SCENARIOS) {
    console.log(
      `${sc.diagnostic ? `diagnostic (${sc.diagnostic}): ` : ''}${sc.eventsPerSecond} events/s, fan-out ${sc.fanOut} (each event alerts ${sc.fanOut} of ${DESTINATIONS} destinations), journal fsync ${sc.fsync ? 'on' : 'OFF'}:`,
    );
    await scenario(devnet, platform, tokens, sc);
    console.log(
      `  machine load average (1 min) after the scenario: ${loadavg()[0]?.toFixed(1)} on ${cpus().length} CPUs`,
    );
  }
} finally {
  await platform.close();
  await devnet.close();
}
