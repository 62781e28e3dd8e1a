// pg-memory (issue 14): the real bot on a shared PostgreSQL holding 1,000,000 watch rules in 100,000 chats
// (100 of the chats watch the local platform's collections, the others each rule a collection of its own
// elsewhere: about 999,000 distinct collections, the worst case for the rule index and the streams'
// filters), two processes of it at once: the first takes the ingest lock of every network (it loads the
// rule index and opens the streams), the second starts once the first is up and only takes chats'
// deliveries and commands (it holds no rules: commands read a chat's rules from the database). Goal:
// < 300 MB per process.
//
// - PostgreSQL: the embedded one of the tests (test/helpers/postgres.ts), or FLOORWATCH_TEST_DATABASE_URL.
//   The schema comes from the bot's own migrations; the rules go in with multi-row INSERTs from unnest()
//   (20,000 rows a statement), in the JSON the repository writes.
// - The local platform runs in this (the bench's) process, mining a random block a second on each
//   network; the bots reach it over HTTP as they would a real platform (FLOORWATCH_*_URL), so their
//   figures do not include a platform of their own (bot-memory's bot hosts it in-process).
// - The bots are the build `npm start` runs (same esbuild command as `npm run build`, into a private
//   directory under node_modules/.cache, so that it does not race other runs that rebuild dist/), with
//   the terminal chat as their only chat (alerts are printed to their stdout).
// - Each bot is sampled every 100 ms from /proc (VmRSS, and VmHWM, which no sample can miss), and a
//   preload module (written by this bench, loaded with --import, no change to the bot) reports its
//   process.memoryUsage() every 250 ms, for where the memory goes: V8 heap used/total, external and
//   array buffers, and the rest of RSS (code, stacks, the allocator's free pages).
//
// Figures per process: start-up (to its first answer of /help), RSS peak during start-up, peak after it,
// settled (median of the last 20 s), VmHWM; the breakdown at the RSS peak and when settled.
// - The first 20 SubscribeEvents streams opened drop once, 25 s after they open (a devnet fault): the
//   ingesting process reconnects them and reads the missed blocks back over JSON-RPC, as after any
//   connection reset; the figures include that.
// Options (environment): PG_MEMORY_SECONDS (run length once both are up, default 60), PG_MEMORY_RULES
// (default 1,000,000), PG_MEMORY_DROPS (streams that drop, default 20), PG_MEMORY_TIMELINE=1 prints the
// samples, PG_MEMORY_LOGS=<dir> keeps each bot's log there; BENCH_NODE_FLAGS adds node flags.
import { execFileSync, fork, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { RuleIndex } from '../src/alerts/rule-index.ts';
import { ALERT_KINDS, type WatchRule } from '../src/core/types.ts';
import { startDevnet } from '../src/devnet/index.ts';
import { Database } from '../src/store/pg/database.ts';
import { PgRulesRepository } from '../src/store/pg/rules.ts';
import { startTestPostgres } from '../test/helpers/postgres.ts';
import { startNodeFlags } from './_start.ts';

const RULES = Number(process.env.PG_MEMORY_RULES ?? 1_000_000);
const RULES_PER_CHAT = 10;
const CHATS = Math.ceil(RULES / RULES_PER_CHAT);
const WATCHING_LOCAL = Math.min(CHATS, 100);
const GOAL_MB = 300;
const RUN_MS = Number(process.env.PG_MEMORY_SECONDS ?? 60) * 1000;
const SAMPLE_MS = 100;
/** SubscribeEvents streams that drop once, this long after they open (then reconnect and read back). */
const DROPPED_STREAMS = Number(process.env.PG_MEMORY_DROPS ?? 20);
const DROP_AFTER_MS = 25_000;
const SETTLED_MS = 20_000;
const BATCH = 20_000;
const ROOT = join(import.meta.dirname, '..');
const BUILD_DIR = join(ROOT, 'node_modules', '.cache', 'floorwatch-bench-pg-memory');

const mb = (value: number) => (Number.isFinite(value) ? `${value.toFixed(0)} MB` : '-');
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The build of `npm run build`, into BUILD_DIR instead of dist/. */
function build(): void {
  const pkg = JSON.parse(execFileSync('cat', [join(ROOT, 'package.json')], { encoding: 'utf8' })) as {
    scripts: { build: string };
  };
  const command = pkg.scripts.build.slice(pkg.scripts.build.indexOf('esbuild '));
  if (!command.includes('--outdir=dist ')) throw new Error(`unexpected build script: ${pkg.scripts.build}`);
  execFileSync('sh', ['-c', command.replace('--outdir=dist ', `--outdir=${BUILD_DIR} `)], {
    cwd: ROOT,
    stdio: 'inherit',
    env: { ...process.env, PATH: `${join(ROOT, 'node_modules', '.bin')}:${process.env.PATH ?? ''}` },
  });
}

/** Loaded into each bot with --import: its process.memoryUsage() every 250 ms, as JSON lines, to a file. */
const PRELOAD = `
import { appendFileSync } from 'node:fs';
const file = process.env.BENCH_MEMORY_FILE;
const timer = setInterval(() => {
  const m = process.memoryUsage();
  appendFileSync(file, JSON.stringify({ t: Date.now(), rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, arrayBuffers: m.arrayBuffers }) + '\\n');
}, 250);
timer.unref();
`;

interface Usage {
  t: number;
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
}

function breakdown(u: Usage | undefined): string {
  if (!u) return '-';
  const m = (v: number) => mb(v / 1024 / 1024);
  return `RSS ${m(u.rss)} = V8 heap ${m(u.heapTotal)} (used ${m(u.heapUsed)}) + external ${m(u.external)} (array buffers ${m(u.arrayBuffers)}) + other ${m(u.rss - u.heapTotal - u.external)} (code, stacks, allocator)`;
}

// ---------------------------------------------------------------------------------------------
// Where the memory goes: the rules' part, measured alone in a child process with --expose-gc.

interface Breakdown {
  rules: number;
  loadMs: number;
  base: NodeJS.MemoryUsage;
  loaded: NodeJS.MemoryUsage;
  indexed: NodeJS.MemoryUsage;
  peakHeapUsed: number;
  peakRss: number;
}

/** Holds what is measured, so that a GC cannot take it before its figure is read. */
const kept: unknown[] = [];

async function breakdownChild(url: string): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc');
  const settled = () => {
    gc();
    gc();
    return process.memoryUsage();
  };
  const logger = pino({ level: 'silent' });
  const base = settled();
  let peakHeapUsed = 0;
  let peakRss = 0;
  const timer = setInterval(() => {
    const m = process.memoryUsage();
    peakHeapUsed = Math.max(peakHeapUsed, m.heapUsed);
    peakRss = Math.max(peakRss, m.rss);
  }, 5);
  const db = await Database.open(url, { logger, poolSize: 2 });
  const store = await PgRulesRepository.open(db, { logger });
  const loaded = settled();
  const started = Date.now();
  // As the pipeline of the ingesting process loads its index: page by page from the store.
  const index = new RuleIndex();
  for await (const page of store.allRules()) for (const rule of page) index.add(rule);
  const loadMs = Date.now() - started;
  clearInterval(timer);
  kept.push(store, index);
  const indexed = settled();
  const report: Breakdown = {
    rules: index.size,
    loadMs,
    base,
    loaded,
    indexed,
    peakHeapUsed,
    peakRss,
  };
  const status = await readFile('/proc/self/status', 'utf8');
  report.peakRss = Math.max(report.peakRss, Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024);
  process.send?.(report);
  await db.close();
}

async function measureBreakdown(url: string): Promise<Breakdown> {
  const child = fork(fileURLToPath(import.meta.url), ['--breakdown', url], {
    stdio: 'inherit',
    execArgv: [...process.execArgv, '--expose-gc'],
  });
  const [report] = (await once(child, 'message')) as [Breakdown];
  await once(child, 'exit');
  return report;
}

async function main(): Promise<void> {
  const postgres = await startTestPostgres();
  const devnet = await startDevnet({ blockIntervalMs: 1000 });
  const dirs: string[] = [];
  const children: Array<ReturnType<typeof spawn>> = [];
  try {
    const url = await postgres.freshDatabase();
    const logger = pino({ level: 'silent' });
    const db = await Database.open(url, { logger, poolSize: 2 });
    const collections = Object.entries(devnet.collections).flatMap(([network, list]) =>
      list.map((c) => ({ network, address: c.address, name: c.name })),
    );
    const insertStart = Date.now();
    let bytes = 0;
    for (let from = 0; from < RULES; from += BATCH) {
      const ids: string[] = [];
      const chats: string[] = [];
      const texts: string[] = [];
      for (let n = from; n < Math.min(RULES, from + BATCH); n++) {
        const chat = Math.floor(n / RULES_PER_CHAT);
        const i = n % RULES_PER_CHAT;
        const local = collections[(chat * 7 + i) % collections.length];
        if (!local) throw new Error('no collections');
        const collection =
          chat < WATCHING_LOCAL
            ? local
            : {
                network: local.network,
                address: `0x${n.toString(16).padStart(40, '0')}`,
                name: `Collection ${n}`,
              };
        const rule: WatchRule = {
          id: `r${n + 1}`,
          destination: { platform: 'console', chatId: `chat-${chat}` },
          network: collection.network,
          collection: collection.address.toLowerCase(),
          collectionName: collection.name,
          kinds: [ALERT_KINDS[i % ALERT_KINDS.length] as WatchRule['kinds'][number]],
          ...(i % 3 === 0 ? { minPrice: { value: String(i + 1), usd: true } } : {}),
          paused: false,
          createdBy: `telegram:${1_000_000 + chat}`,
          createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, chat % 86_400)).toISOString(),
        };
        const text = JSON.stringify(rule);
        bytes += text.length;
        ids.push(rule.id);
        chats.push(`console:chat-${chat}`);
        texts.push(text);
      }
      await db.pool.query(
        `INSERT INTO rules (id, chat_key, rule)
         SELECT id, chat_key, rule::jsonb FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS t(id, chat_key, rule, n)
         ORDER BY n`,
        [ids, chats, texts],
      );
    }
    await db.pool.query(`SELECT setval('rule_numbers', $1)`, [RULES]);
    const { rows } = await db.pool.query<{ count: string; size: string }>(
      `SELECT count(*) AS count, pg_total_relation_size('rules') AS size FROM rules`,
    );
    await db.close();
    console.log(
      `${Number(rows[0]?.count).toLocaleString('en-US')} rules in ${CHATS.toLocaleString('en-US')} chats inserted in ${((Date.now() - insertStart) / 1000).toFixed(1)} s (multi-row INSERT from unnest, ${BATCH.toLocaleString('en-US')} a statement; ${mb(bytes / 1024 / 1024)} of JSON, table with indexes ${mb(Number(rows[0]?.size) / 1024 / 1024)})`,
    );

    build();
    const preload = join(await mkdtemp(join(tmpdir(), 'floorwatch-pg-memory-preload-')), 'memory-usage.mjs');
    dirs.push(join(preload, '..'));
    await writeFile(preload, PRELOAD);
    const info = devnet.info();

    interface Bot {
      name: string;
      child: ReturnType<typeof spawn>;
      spawned: number;
      readyMs: number | undefined;
      stderr: string;
      alerts: number;
      samples: Array<[number, number]>;
      hwm: number;
      usageFile: string;
    }

    const startBotProcess = async (name: string): Promise<Bot> => {
      const dataDir = await mkdtemp(join(tmpdir(), `floorwatch-pg-memory-${name}-`));
      dirs.push(dataDir);
      await mkdir(dataDir, { recursive: true });
      const usageFile = join(dataDir, 'memory-usage.jsonl');
      const child = spawn(
        process.execPath,
        [
          ...(process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? []),
          ...startNodeFlags(),
          '--import',
          preload,
          join(BUILD_DIR, 'src', 'main.js'),
        ],
        {
          cwd: ROOT,
          env: {
            PATH: process.env.PATH ?? '',
            FLOORWATCH_METADATA_URL: info.endpoints.metadataUrl,
            FLOORWATCH_MARKETPLACE_URL: info.endpoints.marketplaceUrl,
            FLOORWATCH_INDEXER_URL: info.endpoints.indexerUrl,
            FLOORWATCH_RELAYER_URL: info.endpoints.relayerUrl,
            FLOORWATCH_API_URL: info.endpoints.apiUrl,
            FLOORWATCH_ACCESS_KEY: info.accessKey,
            FLOORWATCH_SECRET_TOKEN: info.secretToken,
            FLOORWATCH_PROJECT_ID: String(info.projectId),
            FLOORWATCH_NETWORKS: info.networks.map((n) => `${n.name}:${n.chainId}`).join(','),
            FLOORWATCH_MARKETPLACE_CONTRACTS: info.networks.map((n) => `${n.name}:${n.marketplaceContract}`).join(','),
            FLOORWATCH_RPC_URL: info.chainRpcUrl,
            FLOORWATCH_DATABASE_URL: url,
            FLOORWATCH_DATA_DIR: dataDir,
            LOG_LEVEL: 'info',
            BENCH_MEMORY_FILE: usageFile,
          },
          stdio: ['pipe', 'pipe', 'pipe'],
        },
      );
      children.push(child);
      const bot: Bot = {
        name,
        child,
        spawned: Date.now(),
        readyMs: undefined,
        stderr: '',
        alerts: 0,
        samples: [],
        hwm: 0,
        usageFile,
      };
      child.stderr?.on('data', (chunk: Buffer) => {
        if (bot.stderr.length < 2_000_000) bot.stderr += chunk.toString();
      });
      // The terminal chat answers /help once the bot takes commands: the end of start-up. Alerts follow.
      child.stdout?.on('data', (chunk: Buffer) => {
        bot.readyMs ??= Date.now() - bot.spawned;
        bot.alerts += chunk.toString().split('\n').length - 1;
      });
      child.stdin?.write('/help\n');
      return bot;
    };

    const status = async (pid: number | undefined): Promise<{ rss: number; hwm: number } | undefined> => {
      const text = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => undefined);
      if (text === undefined) return undefined;
      const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(text)?.[1] ?? Number.NaN);
      return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
    };

    const bots: Bot[] = [];
    const sampleAll = async () => {
      for (const bot of bots) {
        if (bot.child.exitCode !== null) continue;
        const s = await status(bot.child.pid);
        if (!s) continue;
        bot.samples.push([Date.now() - bot.spawned, s.rss]);
        bot.hwm = Math.max(bot.hwm, s.hwm);
      }
    };
    const waitReady = async (bot: Bot) => {
      while (bot.readyMs === undefined) {
        if (bot.child.exitCode !== null)
          throw new Error(`bot ${bot.name} exited (${bot.child.exitCode}):\n${bot.stderr}`);
        if (Date.now() - bot.spawned > 180_000) throw new Error(`bot ${bot.name} never answered /help`);
        await sampleAll();
        await sleep(SAMPLE_MS);
      }
    };

    // Streams drop now and then (a proxy restarts, a connection is reset): some of the ingesting
    // process's streams drop once, so that it reconnects and reads the missed blocks back.
    devnet.setFaults({ operation: 'SubscribeEvents', dropStreamAfterMs: DROP_AFTER_MS, times: DROPPED_STREAMS });
    const first = await startBotProcess('first');
    bots.push(first);
    await waitReady(first);
    const second = await startBotProcess('second');
    bots.push(second);
    await waitReady(second);
    const until = Date.now() + RUN_MS;
    while (Date.now() < until && bots.every((b) => b.child.exitCode === null)) {
      await sampleAll();
      await sleep(SAMPLE_MS);
    }

    // Read before any stops: a process that stops gives its locks to the other.
    const leading = new Map(bots.map((b) => [b, (b.stderr.match(/this process now leads ingest/g) ?? []).length]));
    const readBack = new Map(
      bots.map((b) => [b, (b.stderr.match(/read back the blocks the streams did not show/g) ?? []).length]),
    );
    const exitedEarly = new Map(bots.map((b) => [b, b.child.exitCode]));
    await Promise.all(
      bots.map(async (bot) => {
        const gone = new Promise((resolve) => bot.child.once('close', resolve));
        if (bot.child.exitCode === null) bot.child.kill('SIGTERM');
        await gone;
      }),
    );
    if (process.env.PG_MEMORY_LOGS) {
      for (const bot of bots) await writeFile(join(process.env.PG_MEMORY_LOGS, `${bot.name}.log`), bot.stderr);
    }
    for (const bot of bots) {
      const exited = exitedEarly.get(bot);
      if (exited !== null) console.log(`bot ${bot.name} exited early (code ${exited})`);
      if (bot.stderr.includes('"level":50')) {
        const errors = bot.stderr.split('\n').filter((l) => l.includes('"level":50'));
        console.log(
          `errors in ${bot.name}'s log (${errors.length}):\n${errors.slice(0, 5).join('\n').slice(0, 2_000)}`,
        );
      }
    }

    const networks = info.networks.length;
    console.log(
      `two bot processes on the database, local platform in the bench's process (a random block a second on each of ${networks} networks), ${RUN_MS / 1000} s once both were up; goal < ${GOAL_MB} MB per process:`,
    );
    const verdicts: string[] = [];
    for (const bot of bots) {
      const ready = bot.readyMs ?? 0;
      const maxOf = (from: number, to: number) =>
        Math.max(...bot.samples.filter(([t]) => t >= from && t < to).map(([, v]) => v));
      const end = bot.samples.at(-1)?.[0] ?? 0;
      const settled = bot.samples
        .filter(([t]) => t >= end - SETTLED_MS)
        .map(([, v]) => v)
        .sort((a, b) => a - b);
      const median = settled[Math.floor(settled.length / 2)] ?? Number.NaN;
      const peak = Math.max(bot.hwm, maxOf(0, Number.POSITIVE_INFINITY));
      const usage = (await readFile(bot.usageFile, 'utf8').catch(() => ''))
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Usage);
      const atPeak = usage.reduce<Usage | undefined>((a, u) => (a && a.rss >= u.rss ? a : u), undefined);
      const atEnd = usage.at(-1);
      const led = leading.get(bot) ?? 0;
      const role =
        led > 0
          ? `leads ingestion (${led} of ${networks} networks; ${readBack.get(bot) ?? 0} read-backs of missed blocks after stream drops)`
          : 'does not ingest';
      if (process.env.PG_MEMORY_TIMELINE) {
        for (const [t, v] of bot.samples) console.log(`${bot.name} ${(t / 1000).toFixed(1).padStart(6)} s ${mb(v)}`);
      }
      console.log(
        `  ${bot.name} (${role}): start-up ${(ready / 1000).toFixed(1)} s, RSS peak during start-up ${mb(maxOf(0, ready + 1))}, after it ${mb(maxOf(ready + 1, Number.POSITIVE_INFINITY))}, settled ${mb(median)} (median of the last ${SETTLED_MS / 1000} s); VmHWM ${mb(bot.hwm)}; ${bot.alerts} lines on its terminal chat (alerts)`,
      );
      console.log(`    at its highest sampled RSS: ${breakdown(atPeak)}`);
      console.log(`    at the end:                 ${breakdown(atEnd)}`);
      verdicts.push(`${bot.name} peak ${mb(peak)}, settled ${mb(median)}: ${peak < GOAL_MB ? 'met' : 'NOT met'}`);
    }
    console.log(`goal < ${GOAL_MB} MB the whole time: ${verdicts.join('; ')}`);
    const b = await measureBreakdown(url);
    const d = (x: number, y: number) => mb((x - y) / 1024 / 1024);
    const perRule = (x: number, y: number) => `${Math.round((x - y) / b.rules)} B/rule`;
    console.log(
      `where the rules' memory goes (one process, --expose-gc, figures after a full GC): PgRulesRepository.open keeps ${d(b.loaded.heapUsed, b.base.heapUsed)} of heap (it holds no rules); reading ${b.rules.toLocaleString('en-US')} rules page by page into the pipeline's RuleIndex took ${(b.loadMs / 1000).toFixed(1)} s, and the index keeps ${d(b.indexed.heapUsed, b.loaded.heapUsed)} of heap and ${d(b.indexed.arrayBuffers, b.loaded.arrayBuffers)} of typed arrays (${perRule(b.indexed.heapUsed + b.indexed.arrayBuffers, b.loaded.heapUsed + b.loaded.arrayBuffers)} in all); while reading, RSS reached ${mb(b.peakRss / 1024 / 1024)} (VmHWM); settled: RSS ${mb(b.indexed.rss / 1024 / 1024)}, heap used ${mb(b.indexed.heapUsed / 1024 / 1024)} (a bare process: ${mb(b.base.rss / 1024 / 1024)}, ${mb(b.base.heapUsed / 1024 / 1024)})`,
    );
  } finally {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await devnet.close();
    await postgres.stop();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  }
}

const at = process.argv.indexOf('--breakdown');
if (at >= 0) await breakdownChild(process.argv[at + 1] as string);
else await main();
