// stream-floor: what the floor of a whole-line stream reader is made of, without HTTP, on stream-fresh's bytes.
//
// stream-fresh's bare reader (lines split on bytes, each decoded as UTF-8 and JSON.parse'd, nothing else) is
// about the least any reader that parses every line whole can cost, and about 2.1x less than the official reader.
// This benchmark takes that floor apart in one warm process, on the chunks _stream-server.ts sends (the same
// seeded 1.2-2 KB SubscribeEvents lines, cut in pieces of 4-128 KiB), and measures ways of doing the same work
// that might cost less, every one of them keeping every line parsed whole:
//
//   parse       JSON.parse of lines decoded beforehand (not timed): the parse alone
//   parse-2b    the same lines as two-byte strings (V8 internalizes short string values only in one-byte text)
//   utf8        each line decoded alone as UTF-8, then parsed: the bare reader's work less its HTTP
//   latin1      our LineSplitter: a chunk that is all ASCII decoded as Latin-1 (a copy), others as UTF-8
//   sliced      a chunk's complete lines decoded in one copy, each line a slice of it (lines with other bytes
//               decoded alone as UTF-8)
//   array       a chunk's complete lines parsed as one JSON array (a copy of their bytes, newlines made commas)
//   ours        our LineSplitter, JSON.parse and the client's record check (records/read.ts eventLog): all of
//               our reader's work on a line less its HTTP and queueing
//
// Variants are interleaved, in a new order each round, so that the machine's load hits all alike; each prints
// CPU per log (process.cpuUsage: user + system, GC threads included) p10 / p50 / p90 over the rounds, and
// `uptime` before and after. --only NAME runs one variant alone (e.g. under `valgrind --tool=callgrind`, whose
// instruction counts do not depend on the load).
//
//   npx tsx bench/stream-floor.ts [--logs 50000] [--rounds 15] [--ascii] [--only NAME]
import { isAscii } from 'node:buffer';
import { execFileSync } from 'node:child_process';
import { LineSplitter, type LineVisitor } from '../src/platform/ndjson.ts';
import { eventLog } from '../src/platform/records/read.ts';
import { buildPayload } from './_stream-server.ts';

const VARIANTS = ['parse', 'parse-2b', 'utf8', 'latin1', 'sliced', 'array', 'ours'] as const;
type Variant = (typeof VARIANTS)[number];

function argument(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  const value = at === -1 ? fallback : Number(process.argv[at + 1]);
  if (!Number.isInteger(value) || value < 1) {
    console.error(`--${name} takes a whole number`);
    process.exit(2);
  }
  return value;
}

const LOGS = argument('logs', 50_000);
const ROUNDS = argument('rounds', 15);
const ASCII = process.argv.includes('--ascii');
const ONLY = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined;
if (ONLY !== undefined && !VARIANTS.includes(ONLY as Variant)) {
  console.error(`--only takes one of ${VARIANTS.join(', ')}`);
  process.exit(2);
}
const RUN: readonly Variant[] = ONLY === undefined ? VARIANTS : [ONLY as Variant];

const payload = buildPayload({ logs: LOGS, ascii: ASCII, minChunk: 4 * 1024, maxChunk: 128 * 1024 });
const { chunks } = payload;
const lines = Buffer.concat(chunks)
  .toString('utf8')
  .split('\n')
  .filter((line) => line.length > 0);
// Flat copies (a split's pieces may be slices of the whole text), and the same text as two-byte strings.
const oneByte = lines.map((line) => Buffer.from(line, 'utf8').toString('utf8'));
// V8 makes a string one-byte whenever its characters fit; a slice of a text that starts with U+0100 stays two-byte.
const twoByte = oneByte.map((line) => `\u0100${line}`.slice(1));

interface Slicing {
  utf8Slice(start: number, end: number): string;
  latin1Slice(start: number, end: number): string;
}

/** What each variant does with a parsed line: the block number, so that nothing is optimised away. */
let sum = 0;
const take = (value: unknown): void => {
  sum += (value as { log: { blockNumber: number } }).log.blockNumber;
};
const parseLine = (line: string): void => {
  if (line.length > 0) take(JSON.parse(line));
};

/** Splits chunks on bytes and hands each complete line, decoded by `decode`, to `parseLine`. */
function byLine(decode: (chunk: Buffer, start: number, end: number, ascii: boolean) => string): void {
  let pending: Buffer[] = [];
  for (const chunk of chunks) {
    const ascii = isAscii(chunk);
    let start = 0;
    for (let end = chunk.indexOf(0x0a); end !== -1; start = end + 1, end = chunk.indexOf(0x0a, start)) {
      if (pending.length > 0) {
        pending.push(chunk.subarray(start, end));
        parseLine(Buffer.concat(pending).toString('utf8'));
        pending = [];
      } else {
        parseLine(decode(chunk, start, end, ascii));
      }
    }
    if (start < chunk.length) pending.push(chunk.subarray(start));
  }
}

/** The lines of `text` (newline-separated, the last without its newline) as slices of it. */
function slicedLines(text: string): void {
  let start = 0;
  for (let index = text.indexOf('\n'); index !== -1; start = index + 1, index = text.indexOf('\n', start)) {
    parseLine(text.slice(start, index));
  }
  parseLine(start === 0 ? text : text.slice(start));
}

/** Splits chunks on bytes and hands `region` each chunk's complete lines after the first: [start, end at a newline). */
function byRegion(region: (chunk: Buffer, start: number, end: number) => void): void {
  let pending: Buffer[] = [];
  for (const chunk of chunks) {
    const first = chunk.indexOf(0x0a);
    if (first === -1) {
      pending.push(chunk);
      continue;
    }
    pending.push(chunk.subarray(0, first));
    parseLine(Buffer.concat(pending).toString('utf8'));
    pending = [];
    const last = chunk.lastIndexOf(0x0a);
    if (last > first) region(chunk, first + 1, last);
    if (last + 1 < chunk.length) pending.push(chunk.subarray(last + 1));
  }
}

function sliced(chunk: Buffer, start: number, end: number): void {
  const bytes = chunk as unknown as Slicing;
  if (isAscii(chunk.subarray(start, end))) {
    slicedLines(bytes.latin1Slice(start, end));
    return;
  }
  for (let index = chunk.indexOf(0x0a, start); start <= end; index = chunk.indexOf(0x0a, start)) {
    const stop = index === -1 || index > end ? end : index;
    parseLine(bytes.utf8Slice(start, stop));
    start = stop + 1;
  }
}

/** The region as one JSON array; a blank line (a heartbeat) would make it invalid, so the lines go one by one then. */
function asArray(chunk: Buffer, start: number, end: number): void {
  const copy = Buffer.allocUnsafe(end - start + 2);
  copy[0] = 0x5b;
  chunk.copy(copy, 1, start, end);
  copy[copy.length - 1] = 0x5d;
  for (let index = copy.indexOf(0x0a, 1); index !== -1; index = copy.indexOf(0x0a, index + 1)) copy[index] = 0x2c;
  const bytes = copy as unknown as Slicing;
  const text = isAscii(copy) ? bytes.latin1Slice(0, copy.length) : bytes.utf8Slice(0, copy.length);
  let parsed: unknown[];
  try {
    parsed = JSON.parse(text) as unknown[];
  } catch {
    sliced(chunk, start, end);
    return;
  }
  for (const value of parsed) take(value);
}

const latin1Visitor: LineVisitor = {
  line(line) {
    parseLine(line);
    return true;
  },
};
const oursVisitor: LineVisitor = {
  line(line) {
    if (line.length === 0) return true;
    const record = JSON.parse(line) as { log: unknown };
    sum += eventLog(record.log).blockNumber;
    return true;
  },
};

const WORK: Record<Variant, () => void> = {
  parse: () => {
    for (const line of oneByte) take(JSON.parse(line));
  },
  'parse-2b': () => {
    for (const line of twoByte) take(JSON.parse(line));
  },
  utf8: () => byLine((chunk, start, end) => (chunk as unknown as Slicing).utf8Slice(start, end)),
  latin1: () => {
    const splitter = new LineSplitter();
    for (const chunk of chunks) splitter.each(chunk, latin1Visitor);
  },
  sliced: () => byRegion(sliced),
  array: () => byRegion(asArray),
  ours: () => {
    const splitter = new LineSplitter();
    for (const chunk of chunks) splitter.each(chunk, oursVisitor);
  },
};

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number;
}

const uptime = (): string => execFileSync('uptime', { encoding: 'utf8' }).trim();

console.log(`uptime: ${uptime()}`);
console.log(
  `stream-floor: ${LOGS.toLocaleString('en-US')} logs (${(payload.bytes / (1024 * 1024)).toFixed(1)} MB, ${payload.multiByte} ` +
    `with multi-byte text) in ${chunks.length} chunks of 4-128 KiB; ${ROUNDS} rounds + 1 warm-up, interleaved; node ${process.version}`,
);
const samples = new Map<Variant, number[]>(RUN.map((variant) => [variant, []]));
for (let round = 0; round <= ROUNDS; round++) {
  // A new order each round: every variant runs first, last and in between as often.
  const order = RUN.map((_, i) => RUN[(i + round) % RUN.length] as Variant);
  for (const variant of round % 2 === 0 ? order : order.reverse()) {
    sum = 0;
    const before = process.cpuUsage();
    WORK[variant]();
    const used = process.cpuUsage(before);
    if (sum === 0) throw new Error(`${variant} parsed nothing`);
    if (round > 0) samples.get(variant)?.push((used.user + used.system) / LOGS);
  }
}
const p50 = (variant: Variant) => percentile(samples.get(variant) ?? [], 50);
console.log(
  `  CPU per log in µs, p10 / p50 / p90 over ${ROUNDS} rounds${RUN.includes('utf8') ? '; p50 against utf8' : ''}`,
);
for (const variant of RUN) {
  const values = samples.get(variant) ?? [];
  const spread = [10, 50, 90].map((p) => percentile(values, p).toFixed(2)).join(' / ');
  const against = RUN.includes('utf8') ? `  ${((100 * (p50(variant) - p50('utf8'))) / p50('utf8')).toFixed(1)}%` : '';
  console.log(`    ${variant.padEnd(10)}${spread}${against}`);
}
console.log(`uptime: ${uptime()}`);
