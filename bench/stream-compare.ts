// stream-compare: our SubscribeEvents reader against the official one (@0xsequence/indexer), on the same bytes.
//
// All readers run in this one process, warm. One local HTTP server on 127.0.0.1 (_stream-server.ts, a child
// process, so that its CPU is not counted as the readers') serves SubscribeEvents as NDJSON: a heartbeat at open,
// then LOGS `{"log":{...}}` lines of 1.2-2 KB shaped like wire-protocol.md §4.2, written in chunks of random size
// that cut lines, keys and characters anywhere. Every request gets the same bytes (seeded PRNG).
//
// Each round runs each reader once, one after the other (A B C, then C B A in the next round, so ours and
// the official one take turns going first), after a warm-up round that is not counted. For each run: logs/s
// (wall) and CPU per log (process.cpuUsage, user + system, so GC threads count; the kernel's part is shown
// too). Prints each reader's medians and ranges, the ratios of ours and the official one's runs of each
// round (median and range), and whether our reader takes at most 1/GOAL of the official one's CPU per log.
// A run is aborted after RUN_TIMEOUT_MS and no round starts after DEADLINE_MS.
//
// Each round also runs, on the same bytes, two bare readers: the floor of any reader that hands out every line
// parsed whole (lines found by a byte search, each decoded and JSON.parse'd, nothing else), over undici (`bare`;
// the official one's fetch is Node's own copy of it) and over Node's built-in node:http (`bare-http`, whose HTTP
// parser is native: the HTTP client under ours, whose streams go over node:http). The official reader's CPU over a bare one's, per round,
// is about the most any such reader can reach against it on this machine; how much ours costs above the bare
// one is printed too, and JSON.parse alone (each line decoded and parsed in this process, no socket).
//
// Here every reader is warm: its code compiled, its library loaded, its HTTP parser tiered up. bench/stream-fresh.ts
// runs each reader in a fresh process of its own instead, where those start-up costs count.
//
//   npx tsx bench/stream-compare.ts [--logs 40000] [--rounds 5] [--ascii] [--only ours|official|bare|bare-http]
//                                   [--min-chunk 1024] [--max-chunk 98304]
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { makeReader, READER_NAMES, type ReaderName, type StreamReader } from './_stream-readers.ts';
import { startStreamServer } from './_stream-server.ts';

const GOAL = 2;
/** A run that takes longer than this is aborted, and the benchmark fails. */
const RUN_TIMEOUT_MS = 60_000;
/** No round starts after this; the figures are of the rounds run until then. */
const DEADLINE_MS = 300_000;

function argument(name: string, fallback: number, max: number): number {
  const at = process.argv.indexOf(`--${name}`);
  const value = at === -1 ? fallback : Number(process.argv[at + 1]);
  if (!Number.isInteger(value) || value < 1 || value > max) {
    console.error(`--${name} takes a whole number from 1 to ${max}`);
    process.exit(2);
  }
  return value;
}

const LOGS = argument('logs', 40_000, 1_000_000);
const ROUNDS = argument('rounds', 5, 50);
const ASCII = process.argv.includes('--ascii');
/** Sizes of the server's writes, in bytes (what the reader gets per read is the socket's to say). */
const MIN_CHUNK = argument('min-chunk', 1_024, 1 << 20);
const MAX_CHUNK = argument('max-chunk', 96 * 1024, 1 << 20);
/** `--only NAME` runs one reader (for profiling with --cpu-prof); no comparison then. */
const ONLY = ((): ReaderName | undefined => {
  const at = process.argv.indexOf('--only');
  if (at === -1) return undefined;
  const name = READER_NAMES.find((reader) => reader === process.argv[at + 1]);
  if (name !== undefined) return name;
  console.error(`--only takes one of ${READER_NAMES.join(', ')}`);
  process.exit(2);
})();

// The readers (parent process)

interface Run {
  logs: number;
  wallMs: number;
  cpuUs: number;
  /** The kernel's part of {@link cpuUs} (socket reads). */
  systemUs: number;
  /** Sum of block numbers and decoded value counts, to check both readers saw the same records. */
  checksum: number;
}

const FILTER = { contractAddresses: ['0x0000000000000000000000000000000000000001'] };

async function measure(reader: StreamReader): Promise<Run> {
  const signal = AbortSignal.timeout(RUN_TIMEOUT_MS);
  const cpu = process.cpuUsage();
  const started = performance.now();
  const { logs, checksum } = await reader.read(signal);
  const wallMs = performance.now() - started;
  const used = process.cpuUsage(cpu);
  if (signal.aborted) throw new Error(`a run took longer than ${RUN_TIMEOUT_MS / 1000} s`);
  return { logs, wallMs, cpuUs: used.user + used.system, systemUs: used.system, checksum };
}

/** JSON.parse alone: each line of `body` decoded and parsed, in this process, nothing kept. CPU µs per log. */
function parseAlone(body: Buffer): number {
  const cpu = process.cpuUsage();
  let logs = 0;
  let checksum = 0;
  for (let start = 0, end = body.indexOf(0x0a); end !== -1; start = end + 1, end = body.indexOf(0x0a, start)) {
    if (end === start) continue;
    const { log } = JSON.parse(body.toString('utf8', start, end)) as { log: { blockNumber: number } };
    logs++;
    checksum += log.blockNumber;
  }
  const used = process.cpuUsage(cpu);
  if (logs !== LOGS || checksum === 0) throw new Error(`parsed ${logs} of ${LOGS} logs`);
  return (used.user + used.system) / LOGS;
}

/** The whole answer body for {@link parseAlone}, fetched anew each round (nothing holds 60 MB in between). */
async function wholeBody(pool: Pool): Promise<Buffer> {
  const response = await pool.request({
    path: '/rpc/Indexer/SubscribeEvents',
    method: 'POST',
    body: JSON.stringify({ filter: FILTER }),
    signal: AbortSignal.timeout(RUN_TIMEOUT_MS),
  });
  return Buffer.from(await response.body.arrayBuffer());
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

async function compare(): Promise<void> {
  const server = await startStreamServer({ logs: LOGS, ascii: ASCII, minChunk: MIN_CHUNK, maxChunk: MAX_CHUNK });
  const opened: StreamReader[] = [];
  let pool: Pool | undefined;
  try {
    const { base, ready } = server;
    const mb = (ready.bytes / (1024 * 1024)).toFixed(1);
    console.log(
      `stream-compare: ${LOGS.toLocaleString('en-US')} logs per run (${mb} MB, lines ${ready.minLine}-${ready.maxLine} bytes, ` +
        `mean ${Math.round(ready.bytes / LOGS)}, ${ready.multiByte} with multi-byte text), ${ROUNDS} rounds after a warm-up`,
    );
    // The floors (bare readers) run only when both readers do, not while one is profiled.
    const names: ReaderName[] = ONLY === undefined ? [...READER_NAMES] : [ONLY];
    const readers = {} as Record<ReaderName, StreamReader>;
    for (const name of names) {
      readers[name] = await makeReader(name, base);
      opened.push(readers[name]);
    }
    pool = new Pool(base, { connections: 1 });
    const runs: Record<ReaderName, Run[]> = { ours: [], official: [], bare: [], 'bare-http': [] };
    const parseAloneUs: number[] = [];
    const deadline = performance.now() + DEADLINE_MS;
    for (let round = 0; round <= ROUNDS; round++) {
      if (performance.now() > deadline) {
        console.log(`  (stopped after ${round - 1} rounds: ${DEADLINE_MS / 1000} s passed)`);
        break;
      }
      for (const name of round % 2 === 0 ? names : [...names].reverse()) {
        const run = await measure(readers[name]);
        if (run.logs !== LOGS) throw new Error(`${name} read ${run.logs} of ${LOGS} logs`);
        if (round > 0) runs[name].push(run);
      }
      if (new Set(names.map((name) => runs[name].at(-1)?.checksum)).size > 1) {
        throw new Error('the readers saw different records');
      }
      if (round > 0 && ONLY === undefined) parseAloneUs.push(parseAlone(await wholeBody(pool)));
    }

    const n = (x: number) => Math.round(x).toLocaleString('en-US');
    const summary = (name: ReaderName) => {
      const perSecond = runs[name].map((r) => (r.logs / r.wallMs) * 1_000);
      const cpuPerLog = runs[name].map((r) => r.cpuUs / r.logs);
      const systemPerLog = median(runs[name].map((r) => r.systemUs / r.logs));
      console.log(
        `  ${name.padEnd(9)} ${n(median(perSecond)).padStart(8)} logs/s (${n(Math.min(...perSecond))}-${n(Math.max(...perSecond))}), ` +
          `CPU ${median(cpuPerLog).toFixed(1)} µs/log (${Math.min(...cpuPerLog).toFixed(1)}-${Math.max(...cpuPerLog).toFixed(1)}; ` +
          `kernel ${systemPerLog.toFixed(1)})`,
      );
    };
    for (const name of names) summary(name);
    if (runs.ours.length === 0 || runs.official.length === 0) return;
    // Each round's runs ran back to back, so their ratio is the least disturbed by a busy machine.
    const range = (values: number[]) =>
      `${median(values).toFixed(2)}x (rounds ${Math.min(...values).toFixed(2)}-${Math.max(...values).toFixed(2)})`;
    const cpuRatios = runs.ours.map((ours, i) => (runs.official[i] as Run).cpuUs / ours.cpuUs);
    const speedRatios = runs.ours.map((ours, i) => (runs.official[i] as Run).wallMs / ours.wallMs);
    console.log(`  ours vs official: ${range(cpuRatios)} less CPU per log, ${range(speedRatios)} logs/s`);
    const cpuRatio = median(cpuRatios);
    console.log(
      cpuRatio >= GOAL
        ? `  goal ${GOAL}x (median CPU per log): met`
        : `  goal ${GOAL}x (median CPU per log): NOT met (${cpuRatio.toFixed(2)}x)`,
    );

    // The floor, per round: what the official reader's CPU is over a bare reader's, and ours above it.
    for (const floor of ['bare', 'bare-http'] as const) {
      const boundRatios = runs[floor].map((bare, i) => (runs.official[i] as Run).cpuUs / bare.cpuUs);
      const above = runs[floor].map((bare, i) => ((runs.ours[i] as Run).cpuUs - bare.cpuUs) / bare.logs);
      console.log(
        `  floor: ${floor} reaches ${range(boundRatios)} less CPU per log than the official one; ` +
          `ours costs ${median(above).toFixed(1)} µs/log more than it (rounds ${Math.min(...above).toFixed(1)}-${Math.max(...above).toFixed(1)})`,
      );
    }
    console.log(
      `  JSON.parse alone (each line decoded and parsed, in this process): ${median(parseAloneUs).toFixed(1)} µs/log ` +
        `(${Math.min(...parseAloneUs).toFixed(1)}-${Math.max(...parseAloneUs).toFixed(1)})`,
    );
  } finally {
    await pool?.close();
    for (const reader of opened) await reader.close();
    server.stop();
  }
}

await compare();
// The official reader leaves its 11 s watchdog interval running after a stream ends; it would hold the
// process for up to 22 s. Run alone, the benchmark exits; through bench/run.ts it just waits.
if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) process.exit();
