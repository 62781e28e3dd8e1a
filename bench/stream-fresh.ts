// stream-fresh: our SubscribeEvents reader against the official one (@0xsequence/indexer), each run in a fresh
// process of its own, as a program that starts, reads a stream and exits runs them, and warm, side by side.
//
// stream-compare runs the readers one after the other in one warm process; here every run is a new node process
// (spawned with `npm start`'s node flags unless --node-flags says otherwise) that loads only its reader's
// library, reads LOGS logs once from a _stream-server.ts server in another process and exits. The reader's code
// is bundled with esbuild beforehand as the bot's build bundles it (valibot bundled, `dependencies` such as
// undici loaded from node_modules), so no TypeScript is compiled in the measured processes.
//
// Each process reports its CPU (process.cpuUsage: user + system of all its threads, GC and compilers included)
// for its whole life and for the reading alone (from the request to the last log), per log. Runs are
// interleaved (ours, official, bare, then the other way round) so that a change of the machine's load hits all
// readers alike; each reader's samples are printed with their percentiles, and the ratios of the official
// reader's CPU over ours per round.
//
// Both conditions in one run: after its first read (the fresh condition) each process reads the stream
// --warm-reads more times (default 3), its code compiled, tiered up and its library loaded (the warm condition,
// as in stream-compare, but each reader alone in its process). The table puts fresh and warm side by side, with
// percentiles over all samples; `uptime` is printed before and after.
//
// The bare readers (lines split on bytes, decoded, JSON.parse'd, nothing else; `bare` over undici, `bare-http`
// over node:http, the HTTP client under ours) are the floor of any reader that parses every line whole.
//
// --baseline DIR also runs our reader as another checkout of the project has it (DIR, e.g. a `git worktree` of main,
// bundled from its own sources), as one more reader named `baseline`, interleaved with the others: a change is
// measured against the code before it in the same run, which a comparison across runs, minutes apart on a shared
// machine, cannot do.
//
// --callgrind counts instructions instead (valgrind's callgrind, which counts them whatever the machine's load):
// each run is a process under callgrind for its whole life, and one that only loads the reader and exits; the
// reading's instructions are the difference (no warm reads then). About 50 times slower: use --runs 1.
//
//   npx tsx bench/stream-fresh.ts [--logs 100000] [--runs 10] [--warm-reads 3] [--min-chunk 4096] [--max-chunk 131072] [--ascii]
//                                 [--readers ours,official,bare,bare-http] [--node-flags "--max-semi-space-size=4"]
//                                 [--baseline ../main] [--callgrind]
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { startNodeFlags } from './_start.ts';
import type { FreshRun } from './_stream-fresh-child.ts';
import { READER_NAMES, type ReaderName } from './_stream-readers.ts';
import { startStreamServer } from './_stream-server.ts';

const GOAL = 2;
const ROOT = join(import.meta.dirname, '..');
/** Where the children's bundles go: ignored by git, Biome and tsc, and packages resolve from there as from the project. */
const CACHE = join(ROOT, 'node_modules', '.cache');
const CALLGRIND = process.argv.includes('--callgrind');
/** A process that runs longer than this is killed, and the benchmark fails. */
const RUN_TIMEOUT_MS = CALLGRIND ? 3_600_000 : 180_000;

function argument(name: string, fallback: number, max: number): number {
  const at = process.argv.indexOf(`--${name}`);
  const value = at === -1 ? fallback : Number(process.argv[at + 1]);
  if (!Number.isInteger(value) || value < 1 || value > max) {
    console.error(`--${name} takes a whole number from 1 to ${max}`);
    process.exit(2);
  }
  return value;
}

function textArgument(name: string): string | undefined {
  const at = process.argv.indexOf(`--${name}`);
  return at === -1 ? undefined : (process.argv[at + 1] ?? '');
}

const LOGS = argument('logs', 100_000, 1_000_000);
const RUNS = argument('runs', 10, 100);
/** Reads after the first in each process (the warm condition); none under callgrind. */
const WARM_READS = CALLGRIND ? 0 : argument('warm-reads', 3, 100);
const MIN_CHUNK = argument('min-chunk', 4 * 1024, 1 << 20);
const MAX_CHUNK = argument('max-chunk', 128 * 1024, 1 << 20);
const ASCII = process.argv.includes('--ascii');
/** Another checkout whose reader runs as `baseline` (--baseline). */
const BASELINE = ((): string | undefined => {
  const dir = textArgument('baseline');
  return dir === undefined ? undefined : resolve(dir);
})();
/** A reader of _stream-readers.ts, or `baseline`: ours as the --baseline checkout has it. */
type RunName = ReaderName | 'baseline';
const READERS = ((): RunName[] => {
  const names = (textArgument('readers') ?? READER_NAMES.join(',')).split(',');
  for (const name of names) {
    if (!READER_NAMES.includes(name as ReaderName)) {
      console.error(`--readers takes a list of ${READER_NAMES.join(', ')}`);
      process.exit(2);
    }
  }
  return BASELINE === undefined ? (names as RunName[]) : [...(names as RunName[]), 'baseline'];
})();
const NODE_FLAGS = ((): string[] => {
  const flags = textArgument('node-flags');
  return flags === undefined ? startNodeFlags() : flags.split(/\s+/).filter(Boolean);
})();

/** Bundles the child as scripts/build.mjs bundles the bot: runtime dependencies stay packages, the rest is inlined. */
async function bundleChild(out: string, root = ROOT): Promise<string> {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
  await build({
    absWorkingDir: root,
    entryPoints: { child: 'bench/_stream-fresh-child.ts' },
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    outdir: out,
    outExtension: { '.js': '.mjs' },
    logLevel: 'warning',
    // The official client is a package of its own, loaded from node_modules as its users load it.
    external: [...Object.keys(pkg.dependencies ?? {}), '@0xsequence/indexer'],
  });
  return join(out, 'child.mjs');
}

interface ChildResult {
  run: FreshRun;
  /** Instructions of the process's whole life, under --callgrind. */
  instructions: number | undefined;
}

function runChild(script: string, reader: RunName, base: string, loadOnly = false): Promise<ChildResult> {
  const node = [
    ...NODE_FLAGS,
    script,
    '--reader',
    reader === 'baseline' ? 'ours' : reader,
    '--base',
    base,
    '--logs',
    String(LOGS),
    '--warm-reads',
    String(loadOnly ? 0 : WARM_READS),
    '--timeout-s',
    String(RUN_TIMEOUT_MS / 1000),
    ...(loadOnly ? ['--load-only'] : []),
  ];
  const [command, args] = CALLGRIND
    ? ['valgrind', ['--tool=callgrind', '--callgrind-out-file=/dev/null', process.execPath, ...node]]
    : [process.execPath, node];
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      stdio: ['ignore', 'pipe', CALLGRIND ? 'pipe' : 'inherit'],
      timeout: RUN_TIMEOUT_MS,
    });
    let out = '';
    let err = '';
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (text: string) => {
      out += text;
    });
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (text: string) => {
      err += text;
    });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code !== 0) {
        process.stderr.write(err);
        return reject(new Error(`the ${reader} process ended with ${signal ?? `code ${code}`}`));
      }
      const collected = /Collected\s*:\s*(\d+)/.exec(err)?.[1];
      resolve({
        run: JSON.parse(out.trim().split('\n').at(-1) ?? '') as FreshRun,
        instructions: collected === undefined ? undefined : Number(collected),
      });
    });
  });
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const at = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[at] as number;
}

const load = () =>
  loadavg()
    .map((x) => x.toFixed(1))
    .join(' ');

/** The machine's load as `uptime` says it (the load average of the last 1, 5 and 15 minutes). */
const uptime = (): string => {
  try {
    return execFileSync('uptime', { encoding: 'utf8' }).trim();
  } catch {
    return `load average ${load()}`;
  }
};

/** One fresh process's figures; instructions only under --callgrind. */
interface Sample {
  run: FreshRun;
  wholeInstructions?: number;
  /** A whole run's instructions less those of a process that only loaded the reader. */
  readInstructions?: number;
}

async function sample(script: string, reader: RunName, base: string): Promise<Sample> {
  const { run, instructions } = await runChild(script, reader, base);
  if (instructions === undefined) return { run };
  const loaded = await runChild(script, reader, base, true);
  return {
    run,
    wholeInstructions: instructions,
    readInstructions: instructions - (loaded.instructions ?? Number.NaN),
  };
}

async function main(): Promise<void> {
  mkdirSync(CACHE, { recursive: true });
  // A directory of its own: another run of this benchmark bundling meanwhile cannot change what this one runs.
  const out = mkdtempSync(join(CACHE, 'stream-fresh-'));
  const script = await bundleChild(out);
  // The baseline's bundle sits beside ours, so that its packages resolve from this checkout's node_modules too.
  const baselineScript = BASELINE === undefined ? script : await bundleChild(join(out, 'baseline'), BASELINE);
  const server = await startStreamServer({ logs: LOGS, ascii: ASCII, minChunk: MIN_CHUNK, maxChunk: MAX_CHUNK });
  const samples = new Map<RunName, Sample[]>(READERS.map((reader) => [reader, []]));
  const of = (reader: RunName): Sample[] => samples.get(reader) ?? [];
  try {
    const { ready } = server;
    console.log(`uptime: ${uptime()}`);
    console.log(
      `stream-fresh: ${LOGS.toLocaleString('en-US')} logs per process (${(ready.bytes / (1024 * 1024)).toFixed(1)} MB, ` +
        `lines ${ready.minLine}-${ready.maxLine} bytes, ${ready.multiByte} with multi-byte text), written in chunks of ` +
        `${MIN_CHUNK}-${MAX_CHUNK} bytes; ${RUNS} fresh processes per reader, interleaved, each reading it ${1 + WARM_READS} times` +
        `${CALLGRIND ? ', under callgrind' : ''}${BASELINE === undefined ? '' : `; baseline: ours as in ${BASELINE}`}; ` +
        `node ${process.version} ${NODE_FLAGS.join(' ') || '(no flags)'}; load ${load()}`,
    );
    for (let round = 0; round < RUNS; round++) {
      for (const reader of round % 2 === 0 ? READERS : [...READERS].reverse()) {
        of(reader).push(await sample(reader === 'baseline' ? baselineScript : script, reader, server.base));
      }
      const checksums = new Set(READERS.map((reader) => of(reader).at(-1)?.run.checksum));
      if (checksums.size !== 1) throw new Error('the readers saw different records');
    }
  } finally {
    server.stop();
    rmSync(out, { recursive: true, force: true });
  }

  const fixed = (x: number) => x.toFixed(1);
  const p50 = (values: number[]) => percentile(values, 50);
  const spread = (values: number[], digits = fixed) =>
    `${digits(percentile(values, 10))} / ${digits(p50(values))} / ${digits(percentile(values, 90))}`;
  const thousands = (x: number) => Math.round(x).toLocaleString('en-US');
  const runsOf = (reader: RunName) => of(reader).map((s) => s.run);
  const freshWhole = (run: FreshRun) => run.freshUs / LOGS;
  const freshRead = (run: FreshRun) => run.readUs / LOGS;
  const warmReads = (run: FreshRun) => run.warmReadUs.map((us) => us / LOGS);
  // Fresh and warm side by side: CPU per log, p10 / p50 / p90 over every sample.
  const columns = ['fresh: start-up + 1st read', 'fresh: 1st read only', `warm: reads 2-${1 + WARM_READS}`];
  console.log(`  CPU per log in µs (user + system), p10 / p50 / p90 over all samples`);
  console.log(`    ${'reader'.padEnd(10)}${columns.map((c) => c.padEnd(29)).join('')}`);
  for (const reader of READERS) {
    const runs = runsOf(reader);
    const cells = [runs.map(freshWhole), runs.map(freshRead), runs.flatMap(warmReads)].map((values) =>
      values.length === 0 ? '-' : `${spread(values)} (n=${values.length})`,
    );
    console.log(`    ${reader.padEnd(10)}${cells.map((c) => c.padEnd(29)).join('')}`);
  }
  console.log('  every sample, µs/log:');
  for (const reader of READERS) {
    const runs = runsOf(reader);
    console.log(`    ${reader} fresh, start-up + 1st read: ${runs.map(freshWhole).map(fixed).join(', ')}`);
    console.log(`    ${reader} fresh, 1st read only:       ${runs.map(freshRead).map(fixed).join(', ')}`);
    if (WARM_READS > 0) {
      console.log(
        `    ${reader} warm (per process):        ${runs.map((r) => warmReads(r).map(fixed).join(' ')).join(', ')}`,
      );
    }
  }
  for (const reader of READERS) {
    const runs = runsOf(reader);
    if (CALLGRIND) {
      const per = (pick: (s: Sample) => number | undefined) => of(reader).map((s) => (pick(s) ?? Number.NaN) / LOGS);
      console.log(
        `  ${reader} instructions/log: whole process ${spread(
          per((s) => s.wholeInstructions),
          thousands,
        )}, reading only ${spread(
          per((s) => s.readInstructions),
          thousands,
        )}`,
      );
    }
    console.log(
      `  ${reader}: node start-up p50 ${(p50(runs.map((r) => r.bootUs)) / 1000).toFixed(0)} ms, loading the reader p50 ` +
        `${(p50(runs.map((r) => r.loadUs)) / 1000).toFixed(0)} ms CPU; 1st read: kernel p50 ` +
        `${fixed(p50(runs.map((r) => r.readSystemUs / LOGS)))} µs/log, wall p50 ${p50(runs.map((r) => r.readMs)).toFixed(0)} ms; ` +
        `peak RSS p50 ${(p50(runs.map((r) => r.maxRssKb)) / 1024).toFixed(0)} MB`,
    );
  }
  if (!READERS.includes('ours') || !READERS.includes('official')) {
    console.log(`uptime: ${uptime()}`);
    return;
  }
  // Each round's processes ran one after the other, so their ratio is the least disturbed by a busy machine;
  // warm reads are paired by their place in the round (the n-th warm read of each process).
  const pairs = <T>(pick: (s: Sample) => T[]): Array<[T, T]> =>
    of('ours').flatMap((ours, i) => {
      const official = of('official')[i];
      if (official === undefined) return [];
      const o = pick(ours);
      const f = pick(official);
      return o.map((value, j) => [value, f[j] as T] as [T, T]);
    });
  const ratios = (pick: (s: Sample) => Array<number | undefined>) =>
    pairs(pick).map(([ours, official]) => (official ?? Number.NaN) / (ours ?? Number.NaN));
  const range = (values: number[]) =>
    `${p50(values).toFixed(2)}x (p10 ${percentile(values, 10).toFixed(2)}, lowest ${Math.min(...values).toFixed(2)})`;
  const verdict = (values: number[]) => (p50(values) >= GOAL ? 'met' : `NOT met (${p50(values).toFixed(2)}x)`);
  const whole = ratios((s) => [s.run.freshUs]);
  const reading = ratios((s) => [s.run.readUs]);
  const warm = ratios((s) => s.run.warmReadUs);
  console.log(
    `  official over ours, CPU per log: fresh start-up + 1st read ${range(whole)}, fresh 1st read ${range(reading)}` +
      (warm.length > 0 ? `, warm ${range(warm)}` : ''),
  );
  console.log(
    `  goal ${GOAL}x (median of the pairs): fresh start-up + 1st read ${verdict(whole)}, fresh 1st read ${verdict(reading)}` +
      (warm.length > 0 ? `, warm ${verdict(warm)}` : ''),
  );
  if (CALLGRIND) {
    const wholeIr = ratios((s) => [s.wholeInstructions]);
    const readIr = ratios((s) => [s.readInstructions]);
    console.log(`  official over ours, instructions: whole process ${range(wholeIr)}, reading only ${range(readIr)}`);
  }
  console.log(`uptime: ${uptime()}`);
}

await main();
