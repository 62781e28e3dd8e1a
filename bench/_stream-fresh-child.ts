// One run of stream-fresh: a fresh process that loads one reader, reads the whole stream once and exits. The
// parent bundles this file with esbuild (as the bot's build bundles it) and runs the bundle with node.
//
//   node child.mjs --reader NAME --base http://127.0.0.1:PORT --logs N [--warm-reads 0] [--timeout-s 120] [--load-only]
//
// --warm-reads N reads the stream N more times after the first, in the same process: the first read is the
// fresh condition (nothing compiled, tiered up or loaded before it), the others the warm one (as stream-compare's
// readers, but each reader alone in its process).
// --load-only loads the reader and exits without reading (under callgrind, the reading's instructions are a
// whole run's less a load-only run's). A run that takes longer than --timeout-s fails, whatever a reader makes of
// the abort (ours ends its iterator quietly on an abort, as its contract says).
//
// Prints one JSON line (FreshRun) on stdout. CPU is process.cpuUsage() (getrusage: user + system of every
// thread of the process, GC and compiler threads included), so `wholeUs` is everything since exec.
import { makeReader, READER_NAMES, type ReaderName } from './_stream-readers.ts';

const bootCpu = process.cpuUsage();

/** What one fresh process measured; CPU in µs, times in ms. */
export interface FreshRun {
  reader: ReaderName;
  logs: number;
  checksum: number;
  /** CPU from exec until this module ran (node's own start-up). */
  bootUs: number;
  /** CPU of loading the reader's library and making the reader. */
  loadUs: number;
  /** CPU of reading the stream: from the request to the last log. */
  readUs: number;
  /** Of {@link readUs}, the kernel's part. */
  readSystemUs: number;
  /** CPU from exec to the end of the first read: a process that starts, reads the stream once and stops. */
  freshUs: number;
  /** CPU of each read after the first (--warm-reads), in order. */
  warmReadUs: number[];
  /** CPU of the whole life of the process, until it exits. */
  wholeUs: number;
  readMs: number;
  wholeMs: number;
  maxRssKb: number;
}

function option(name: string): string {
  const at = process.argv.indexOf(`--${name}`);
  const value = at === -1 ? undefined : process.argv[at + 1];
  if (value === undefined) throw new Error(`--${name} is needed`);
  return value;
}

const name = option('reader') as ReaderName;
if (!READER_NAMES.includes(name)) throw new Error(`no reader ${name}`);
const base = option('base');
const expected = Number(option('logs'));
const warmReads = Number(process.argv.includes('--warm-reads') ? option('warm-reads') : 0);
const timeoutMs = Number(process.argv.includes('--timeout-s') ? option('timeout-s') : 120) * 1000;
const total = (usage: NodeJS.CpuUsage) => usage.user + usage.system;

const loadStart = process.cpuUsage();
const reader = await makeReader(name, base);
const loadUs = total(process.cpuUsage(loadStart));

let logs = 0;
let checksum = 0;
let readUs = 0;
let readSystemUs = 0;
let readMs = 0;
let freshUs = 0;
const warmReadUs: number[] = [];

/** One whole read of the stream: its CPU (user, system) and wall time; fails unless every log came. */
async function readOnce(): Promise<{ used: NodeJS.CpuUsage; ms: number }> {
  const signal = AbortSignal.timeout(timeoutMs);
  const started = performance.now();
  const before = process.cpuUsage();
  ({ logs, checksum } = await reader.read(signal));
  const used = process.cpuUsage(before);
  if (signal.aborted) throw new Error(`${name} did not read the stream within ${timeoutMs / 1000} s`);
  if (logs !== expected) throw new Error(`${name} read ${logs} of ${expected} logs`);
  return { used, ms: performance.now() - started };
}

if (!process.argv.includes('--load-only')) {
  const first = await readOnce();
  freshUs = total(process.cpuUsage());
  readMs = first.ms;
  readUs = total(first.used);
  readSystemUs = first.used.system;
  for (let i = 0; i < warmReads; i++) warmReadUs.push(total((await readOnce()).used));
}
await reader.close();
const run: FreshRun = {
  reader: name,
  logs,
  checksum,
  bootUs: total(bootCpu),
  loadUs,
  readUs,
  readSystemUs,
  freshUs,
  warmReadUs,
  wholeUs: total(process.cpuUsage()),
  readMs,
  wholeMs: performance.now(),
  maxRssKb: process.resourceUsage().maxRSS,
};
process.stdout.write(`${JSON.stringify(run)}\n`, () => process.exit(0));
