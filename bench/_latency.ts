// Shared by the alert-latency benchmarks, alerts-latency (file stores) and pg-latency (PostgreSQL); run.ts
// lists no file starting with `_`. Each bench sets up the bot side of a scenario (its stores, dispatcher
// and pipeline, wired with the instrumented parts below) and says what differs in its figures; this
// module runs the rest: the local platform in a child process and the schedule it mines on, the timing
// records and the instrumentation that fills them, the rounds of a scenario and all the printed figures.
//
// The local platform (devnet, scale small) runs in a CHILD PROCESS (this file, with `--devnet-child`), as
// the real platform runs on another machine: its mining, HTTP answers and stream writes do not share the
// measured process's event loop. "Streamed" is when the child calls `devnet.mine()`: the devnet builds the
// block and writes its logs to the open streams synchronously inside that call (Miner#mine ->
// chain.commit -> StreamHub#onBlock), so nothing can be received before it. Both processes read the same
// monotonic clock (process.hrtime), so times compare across them.
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { cpus, loadavg } from 'node:os';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { type EnrichedEvent, Enricher } from '../src/alerts/enrich.ts';
import type { AlertsDeps } from '../src/alerts/index.ts';
import type { ChainEvent } from '../src/alerts/types.ts';
import { renderDiscord } from '../src/chat/discord/render.ts';
import { renderTelegram } from '../src/chat/telegram/render.ts';
import type { NewDelivery } from '../src/core/deliveries.ts';
import type { DeliveryLog } from '../src/core/ports.ts';
import type { Reply } from '../src/core/reply.ts';
import type { Destination, WatchRule } from '../src/core/types.ts';
import type { AlertSink } from '../src/delivery/sink.ts';
import type { ActivitySpec, DevnetInfo } from '../src/devnet/index.ts';
import { CurrencyDirectory } from '../src/market/currencies.ts';
import { PlatformClient } from '../src/platform/client.ts';
import type { Network } from '../src/platform/networks.ts';
import type { EventLog } from '../src/platform/types.ts';
import { prng } from './_prng.ts';

const PER_BLOCK = 10;
const WARM_UP_SECONDS = 1;
const ROUND_SECONDS = 5;
export const DESTINATIONS = 200;

export interface Scenario {
  fanOut: number;
  eventsPerSecond: number;
  rounds: number;
  /** A diagnostic run, to locate the time (not the production set-up, or not the target's rate). */
  diagnostic?: string;
  /** This scenario's goal over all samples, in ms, when it is not the bench's. */
  goal?: { p50?: number; p99: number };
}

/** What a latency bench says differently; the rest of its output is this module's. */
export interface LatencyBench<S extends Scenario> {
  /** Opens the line of a scenario's pooled figures. */
  name: string;
  /** The goal over all samples, in ms, of a scenario that names none. */
  goal: { p50?: number; p99: number };
  /** Said of the set-up in the opening line, before how latency is measured (ends with `; `). */
  setUp: string;
  /** Said of a scenario after its fan-out, in its heading and in its pooled figures. */
  heading?: (sc: S) => string;
  pooled?: (sc: S) => string;
  /** What the bot's stores call the segments that differ between them. */
  segments: { record: string; lane: string };
  /** The timed calls (see timeCalls) in the order they are printed, each with the name printed. */
  calls: Record<string, string>;
  /** What the bot process's CPU time covers. */
  cpu: string;
  /** Whether each round says how long after its mining all was sent and recorded. */
  drainTime: boolean;
}

/** Milliseconds on the machine's monotonic clock: the same in the devnet's process and in this one. */
export const now = (): number => Number(process.hrtime.bigint()) / 1e6;

export const sleep = (msToWait: number) => new Promise<void>((resolve) => setTimeout(resolve, msToWait));

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
  /** The delivery log's record() of its deliveries called / resolved (onRecorded). */
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
export function timesOf(hash: string): TxnTimes {
  let times = txns.get(hash);
  if (!times) {
    times = { sending: [], sends: [] };
    txns.set(hash, times);
  }
  return times;
}
/** Forgets every timing record (at the end of a scenario). */
export const forgetTimes = (): void => txns.clear();
/** Sends of transactions the devnet did not report as mined in a round (cannot happen). */
let orphanSends = 0;
/** Durations of calls, for the round in progress, by the name of the method called. */
const calls = new Map<string, number[]>();
function callsTo(name: string): number[] {
  let list = calls.get(name);
  if (!list) {
    list = [];
    calls.set(name, list);
  }
  return list;
}

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

/** The pooled figures of the production scenarios, for the closing verdict. */
const verdicts: Array<{
  fanOut: number;
  eventsPerSecond: number;
  goal: { p50?: number; p99: number };
  p50: number;
  p99: number;
  met: boolean;
  rounds: number;
  samples: number;
}> = [];

/** `p50 < 5 ms and p99 < 50 ms`, or `p99 < 100 ms`. */
const goalText = (goal: { p50?: number; p99: number }): string =>
  `${goal.p50 === undefined ? '' : `p50 < ${goal.p50} ms and `}p99 < ${goal.p99} ms`;

// ---------------------------------------------------------------------------------------------
// Instrumented parts (in the benches only, not in src)

/**
 * A chat adapter that notes when it is asked to send, then converts the alert as the real ones do:
 * once per alert (the dispatcher hands each chat of an event the same Reply), not once per chat.
 */
export class TimingSink implements AlertSink {
  readonly platform: 'discord' | 'telegram';
  readonly maxBatch = 1;
  readonly minIntervalMs = 0;
  readonly #rendered = new WeakSet<Reply>();
  #next = 1;

  constructor(platform: 'discord' | 'telegram') {
    this.platform = platform;
  }

  async send(_chatId: string, replies: readonly Reply[], key: string): Promise<string> {
    timesOf(txnOf(key)).sends.push(now());
    const only = replies.length === 1 ? replies[0] : undefined;
    if (only && this.#rendered.has(only)) return String(this.#next++);
    if (only) this.#rendered.add(only);
    if (this.platform === 'telegram') for (const reply of replies) renderTelegram(reply);
    else renderDiscord(replies);
    return String(this.#next++);
  }

  async edit(): Promise<void> {}
}

/** Both sinks, Discord's and Telegram's, for a Dispatcher. */
export const timingSinks = (): Map<AlertSink['platform'], AlertSink> =>
  new Map<AlertSink['platform'], AlertSink>([
    ['discord', new TimingSink('discord')],
    ['telegram', new TimingSink('telegram')],
  ]);

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
  // The pipeline reads logs a batch at a time (subscribeEventBatches): each log of a batch left the
  // client when its batch did.
  const subscribe = indexer.subscribeEventBatches.bind(indexer);
  indexer.subscribeEventBatches = (args, options) => {
    const inner = subscribe(args, options);
    return (async function* timed(): AsyncGenerator<EventLog[], void, undefined> {
      for await (const batch of inner) {
        const at = now();
        for (const log of batch) timesOf(log.txnHash).log = at;
        yield batch;
      }
    })();
  };
}

/**
 * Wraps an async method of `target` to note each call's duration under the method's name, and
 * `before` its start.
 */
export function timeCalls<T extends object, K extends keyof T & string>(
  target: T,
  name: K,
  before?: (args: unknown[], now: number) => void,
): void {
  const original = (target[name] as (...args: unknown[]) => Promise<unknown>).bind(target);
  (target as Record<K, unknown>)[name] = async (...args: unknown[]) => {
    const start = now();
    before?.(args, start);
    try {
      return await original(...args);
    } finally {
      callsTo(name).push(now() - start);
    }
  };
}

/** Times the delivery log's record, markSending and markFinal calls, and notes when they start. */
export function timeJournal(journal: DeliveryLog): void {
  timeCalls(journal, 'record', (args, at) => {
    const first = (args[0] as NewDelivery[])[0];
    if (first) timesOf(first.txnHash).recordStart ??= at;
  });
  timeCalls(journal, 'markSending', (args, at) => timesOf(txnOf(args[0] as string)).sending.push(at));
  timeCalls(journal, 'markFinal');
}

function timePlatform(platform: PlatformClient): void {
  timeCalls(platform.marketplace, 'getOrders');
  timeCalls(platform.marketplace, 'getCollectible');
}

// ---------------------------------------------------------------------------------------------
// Set-up

export interface Watched {
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
export function rulesFor(tokens: readonly Watched[], fanOut: number): Array<Omit<WatchRule, 'id'>> {
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

/** The native coin's symbol per network (what the bot reads from the platform's configuration). */
function nativeSymbols(info: DevnetInfo): Record<string, string> {
  const out: Record<string, string> = {};
  for (const network of info.networks) {
    const native = network.currencies.find((c) => /^0x0{40}$/.test(c.address));
    if (native) out[network.name] = native.symbol;
  }
  return out;
}

/**
 * The createAlerts deps the benches share (theirs add the stores and the queue the deliveries go to):
 * the timed enricher, the devnet's marketplace contracts, and onRecorded noting when a transaction's
 * deliveries were recorded; production defaults otherwise.
 */
export function alertsDeps(devnet: DevnetProcess, platform: PlatformClient, logger: Logger) {
  const marketplaceContracts = Object.fromEntries(devnet.info.networks.map((n) => [n.name, [n.marketplaceContract]]));
  const currencies = new CurrencyDirectory(platform, nativeSymbols(devnet.info));
  const enricher = new TimedEnricher(platform, currencies, logger);
  return {
    platform,
    currencies,
    enricher,
    logger,
    marketplaceContracts,
    // The bench lists the same tokens over and over, often at a price seen before: every listing
    // is to alert, so identical relists are not left out here.
    relistWindowMs: 0,
    onRecorded: (event) => {
      timesOf(event.txnHash).recorded = now();
    },
  } satisfies Partial<AlertsDeps>;
}

// ---------------------------------------------------------------------------------------------
// Rounds and figures

type Segment = 'stream' | 'assembly' | 'enrich' | 'chain' | 'record' | 'lane' | 'sending';

/** The printed name of each segment, in order. */
function segmentNames(named: LatencyBench<Scenario>['segments']): Record<Segment, string> {
  return {
    stream: 'stream (mine called -> log out of the client)',
    assembly: 'held by the assembler',
    enrich: 'enrichment',
    chain: "waiting its turn in the network's chain",
    record: named.record,
    lane: named.lane,
    sending: 'markSending()',
  };
}

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

/** Observes this process while a round runs: CPU, event-loop delay and GC pauses. */
function observeProcess() {
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const gcPauses: number[] = [];
  const gc = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gcPauses.push(entry.duration);
  });
  gc.observe({ entryTypes: ['gc'] });
  const cpu0 = process.cpuUsage();
  return {
    stop() {
      const cpu = process.cpuUsage(cpu0);
      loop.disable();
      gc.disconnect();
      return { cpuMs: (cpu.user + cpu.system) / 1000, loop, gcPauses };
    },
  };
}

/**
 * Runs a scenario once its bot side is set up: a warm-up, then its rounds, each drained (`settle`)
 * before the next; prints each round's figures and the scenario's pooled ones, and notes its verdict.
 * Returns what the bench prints after them.
 */
export async function measureRounds<S extends Scenario>(
  bench: LatencyBench<S>,
  devnet: DevnetProcess,
  tokens: readonly Watched[],
  sc: S,
  settle: (hashes: readonly string[]) => Promise<void>,
): Promise<{ failedBlocks: number; orphanSends: number }> {
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

  const segments = segmentNames(bench.segments);
  const warm = await drive(WARM_UP_SECONDS);
  await settle(warm.hashes);
  for (const hash of warm.hashes) txns.delete(hash);
  const results: RoundResult[] = [];
  for (let round = 0; round < sc.rounds; round++) {
    for (const list of calls.values()) list.length = 0;
    const observed = observeProcess();
    const { hashes, seconds, cpuMs: devnetCpuMs } = await drive(ROUND_SECONDS);
    const drainFrom = now();
    await settle(hashes);
    const drainMs = now() - drainFrom;
    const { cpuMs, loop, gcPauses } = observed.stop();
    const result = collect(hashes, sc.fanOut, seconds);
    results.push(result);
    const drained = bench.drainTime ? `, all sent and recorded ${ms(drainMs)} ms after the round's mining ended` : '';
    console.log(
      `  round ${round + 1}: ${summary(result.latencies)} over all ${result.latencies.length} samples (${result.alerts} alerts of ${result.events} events, ${Math.round(result.events / result.seconds)} events/s mined${drained}${result.missing ? `, ${result.missing} alerts MISSING` : ''})`,
    );
    console.log(
      `    where the time goes, p50 / p99 ms: ${(Object.keys(segments) as Segment[]).map((k) => `${segments[k]} ${seg(result.segments[k])}`).join(', ')}`,
    );
    const timed = Object.entries(bench.calls).map(([name, label]) => {
      const list = callsTo(name);
      return `${label} ${seg(list)} (${list.length})`;
    });
    console.log(
      `    calls, p50 / p99 ms: ${timed.join(', ')}; devnet.mine() ${seg(result.mineCall)} (${result.mineCall.length} blocks)`,
    );
    console.log(
      `    bot process CPU until drained (${bench.cpu}): ${(cpuMs / hashes.length).toFixed(2)} ms/event, ${Math.round(((cpuMs / hashes.length) * sc.eventsPerSecond) / 10)}% of one core at this rate; devnet process CPU while mining ${(devnetCpuMs / hashes.length).toFixed(2)} ms/event; bot event-loop delay p50 ${ms(loop.percentile(50) / 1e6)} ms, p99 ${ms(loop.percentile(99) / 1e6)} ms, max ${ms(loop.max / 1e6)} ms; GC pauses ${gcPauses.length}, ${ms(gcPauses.reduce((a, b) => a + b, 0))} ms in all, max ${ms(Math.max(0, ...gcPauses))} ms`,
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
  const goal = sc.goal ?? bench.goal;
  const p50Met = goal.p50 === undefined || p50 < goal.p50;
  const met = p50Met && p99 < goal.p99;
  if (!sc.diagnostic) {
    verdicts.push({
      fanOut: sc.fanOut,
      eventsPerSecond: sc.eventsPerSecond,
      goal,
      p50,
      p99,
      met,
      rounds: results.length,
      samples: all.length,
    });
  }
  const targets = sc.diagnostic
    ? `diagnostic: ${sc.diagnostic}`
    : `goal ${goal.p50 === undefined ? '' : `p50 < ${goal.p50} ms: ${p50Met ? 'met' : 'NOT met'}, `}p99 < ${goal.p99} ms: ${p99 < goal.p99 ? 'met' : 'NOT met'}`;
  console.log(
    `${bench.name} at ${sc.eventsPerSecond} events/s, fan-out ${sc.fanOut}${bench.pooled?.(sc) ?? ''}, all ${all.length} samples of ${results.length} round(s) pooled: p50 ${ms(p50)} ms, p95 ${ms(percentile(all, 95))} ms, p99 ${ms(p99)} ms, max ${ms(all.at(-1) ?? Number.NaN)} ms (${Math.round(events / seconds)} events/s and ${Math.round(all.length / seconds)} alerts/s achieved${results.length > 1 ? `; per round p50 ${range(perRound(50))} ms, p99 ${range(perRound(99))} ms` : ''}; ${targets})`,
  );
  for (const times of txns.values()) orphanSends += times.sends.length;
  return { failedBlocks, orphanSends };
}

const loadAverage = () => `${loadavg()[0]?.toFixed(1)} on ${cpus().length} CPUs`;

/**
 * The bench: starts the devnet's process and a timed platform client, runs `scenario` for each of
 * `scenarios` (which sets up the bot side and calls measureRounds), then prints the verdicts.
 */
export async function runLatencyBench<S extends Scenario>(
  bench: LatencyBench<S>,
  scenarios: readonly S[],
  scenario: (sc: S, devnet: DevnetProcess, platform: PlatformClient, tokens: readonly Watched[]) => Promise<void>,
): Promise<void> {
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
    console.log(`machine load average (1 min) at the start: ${loadAverage()}`);
    console.log(
      `devnet (in a child process): ${tokens.length} tokens in ${Object.values(info.collections).flat().length} collections on ${info.networks.length} networks; blocks of ${PER_BLOCK} listings alternating networks; ${WARM_UP_SECONDS} s warm-up then rounds of ${ROUND_SECONDS} s; flushDelayMs 2 (default); ${bench.setUp}latency = send called - devnet.mine() called`,
    );
    for (const sc of scenarios) {
      console.log(
        `${sc.diagnostic ? `diagnostic (${sc.diagnostic}): ` : ''}${sc.eventsPerSecond} events/s, fan-out ${sc.fanOut} (each event alerts ${sc.fanOut} of ${DESTINATIONS} destinations)${bench.heading?.(sc) ?? ''}:`,
      );
      await scenario(sc, devnet, platform, tokens);
      console.log(`  machine load average (1 min) after the scenario: ${loadAverage()}`);
    }
    console.log(`goals over all samples (machine load average now ${loadAverage()}):`);
    for (const v of verdicts) {
      console.log(
        `  ${v.fanOut} chat${v.fanOut === 1 ? '' : 's'} per event at ${v.eventsPerSecond} events/s: p50 ${ms(v.p50)} ms, p99 ${ms(v.p99)} ms over all ${v.samples} samples of ${v.rounds} rounds; goal ${goalText(v.goal)}: ${v.met ? 'MET' : 'NOT met'}`,
      );
    }
  } finally {
    await platform.close();
    await devnet.close();
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
export interface DevnetProcess {
  info: DevnetInfo;
  networks: Network[];
  drive(blocks: DriveRequest['blocks'], intervalMs: number): Promise<Driven>;
  close(): Promise<void>;
}

async function startDevnetProcess(): Promise<DevnetProcess> {
  // The child runs this module, not the bench that imports it: it needs the devnet, not the bot's stores.
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

if (process.argv.includes('--devnet-child')) await serveDevnet();
