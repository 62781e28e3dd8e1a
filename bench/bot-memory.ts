// bot-memory: the real bot (the build `npm start` runs, with the local platform in-process)
// holding 100,000 watch rules in 10,000 chats (100 of the chats watch the local platform's collections, the
// others collections elsewhere), while the local chain mines activity that reaches those 100 chats.
// Samples the bot's resident memory every 100 ms from its start, and prints the peak over the whole run
// (start-up included; the kernel's high-water mark too, which no sample can miss), the peak in the first
// 30 s, and the settled figure (median of the last 20 s). Goal (issue 15): < 250 MB the whole time.
// Options (environment): BOT_MEMORY_SECONDS (run length after start-up, default 60), BOT_MEMORY_CHATS
// (default 10,000), BOT_MEMORY_TIMELINE=1 prints the samples; BENCH_NODE_FLAGS adds node flags.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ALERT_KINDS } from '../src/core/types.ts';
import { startDevnet } from '../src/devnet/index.ts';
import { startNodeFlags } from './_start.ts';

const CHATS = Number(process.env.BOT_MEMORY_CHATS ?? 10_000);
/** Chats whose rules watch the local platform's collections; the others watch collections elsewhere, as most do. */
const WATCHING_LOCAL = Math.min(CHATS, 100);
const RULES_PER_CHAT = 10;
const GOAL_MB = 250;
const RUN_MS = Number(process.env.BOT_MEMORY_SECONDS ?? 60) * 1000;
const SAMPLE_MS = 100;
const FIRST_MS = 30_000;
const SETTLED_MS = 20_000;
const ROOT = join(import.meta.dirname, '..');

/** The collections of the local platform, as the bot's own devnet (same seed) has them. */
const devnet = await startDevnet({ blockIntervalMs: 0 });
const collections = Object.entries(devnet.collections).flatMap(([network, list]) =>
  list.map((c) => ({ network, address: c.address, name: c.name })),
);
await devnet.close();

const rules = [];
let id = 1;
for (let chat = 0; chat < CHATS; chat++) {
  for (let i = 0; i < RULES_PER_CHAT; i++) {
    const local = collections[(chat * 7 + i) % collections.length];
    if (!local) throw new Error('no collections');
    const collection =
      chat < WATCHING_LOCAL
        ? local
        : {
            network: local.network,
            address: `0x${(chat * RULES_PER_CHAT + i).toString(16).padStart(40, '0')}`,
            name: `Collection ${chat * RULES_PER_CHAT + i}`,
          };
    rules.push({
      id: `r${id++}`,
      destination: { platform: 'console', chatId: `chat-${chat}` },
      network: collection.network,
      collection: collection.address,
      collectionName: collection.name,
      kinds: [ALERT_KINDS[i % ALERT_KINDS.length]],
      ...(i % 3 === 0 ? { minPrice: { value: String(i + 1), usd: true } } : {}),
      paused: false,
      createdBy: `telegram:${1_000_000 + chat}`,
      createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, chat)).toISOString(),
    });
  }
}
const dataDir = await mkdtemp(join(tmpdir(), 'floorwatch-memory-'));
await writeFile(join(dataDir, 'state.json'), JSON.stringify({ version: 3, chats: {}, rules, nextRuleNumber: id }));

// The bot as `npm start` runs it: built first.
execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
const spawned = Date.now();
const child = spawn(
  process.execPath,
  [...(process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? []), ...startNodeFlags(), 'dist/src/main.js'],
  {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      FLOORWATCH_DATA_DIR: dataDir,
      FLOORWATCH_DEVNET_BLOCK_MS: '1000',
      LOG_LEVEL: 'warn',
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  },
);
let stderr = '';
child.stderr.on('data', (chunk: Buffer) => {
  stderr += chunk.toString();
});
// The console chat answers /help once the bot takes commands: the end of start-up.
let readyMs: number | undefined;
child.stdout.on('data', () => {
  readyMs ??= Date.now() - spawned;
});
child.stdin.write('/help\n');

const status = async (): Promise<{ rss: number; hwm: number } | undefined> => {
  const text = await readFile(`/proc/${child.pid}/status`, 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(text)?.[1] ?? Number.NaN);
  return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
};

/** [ms since spawn, RSS MB] */
const samples: Array<[number, number]> = [];
let hwm = 0;
let runUntil = Number.POSITIVE_INFINITY;
while (child.exitCode === null) {
  const now = Date.now() - spawned;
  const s = await status();
  if (s) {
    samples.push([now, s.rss]);
    hwm = Math.max(hwm, s.hwm);
  }
  if (readyMs !== undefined && runUntil === Number.POSITIVE_INFINITY) runUntil = readyMs + RUN_MS;
  if (now >= runUntil || (readyMs === undefined && now > 60_000)) break;
  await new Promise((resolve) => setTimeout(resolve, SAMPLE_MS));
}
const delivered = (await readFile(join(dataDir, 'deliveries.jsonl'), 'utf8').catch(() => '')).split('\n').length - 1;
const exited = child.exitCode;
child.kill('SIGTERM');
await new Promise((resolve) => child.once('close', resolve));
await rm(dataDir, { recursive: true, force: true });
if (exited !== null) console.log(`the bot exited early (code ${exited})`);
if (readyMs === undefined) console.log('the bot never answered /help');
if (stderr.includes('"level":50')) console.log(`errors in the bot's log:\n${stderr.slice(0, 2_000)}`);

const maxOf = (from: number, to: number) =>
  Math.max(...samples.filter(([t]) => t >= from && t < to).map(([, mb]) => mb));
const end = samples.at(-1)?.[0] ?? 0;
const settled = samples
  .filter(([t]) => t >= end - SETTLED_MS)
  .map(([, mb]) => mb)
  .sort((a, b) => a - b);
const median = settled[Math.floor(settled.length / 2)] ?? Number.NaN;
const ready = readyMs ?? end;
const peak = Math.max(hwm, maxOf(0, Number.POSITIVE_INFINITY));
if (process.env.BOT_MEMORY_TIMELINE) {
  for (const [t, mb] of samples) console.log(`${(t / 1000).toFixed(1).padStart(6)} s ${mb.toFixed(0).padStart(4)} MB`);
}
const mb = (value: number) => `${value.toFixed(0)} MB`;
console.log(
  `${(CHATS * RULES_PER_CHAT).toLocaleString('en-US')} rules in ${CHATS.toLocaleString('en-US')} chats, local platform in-process, a block a second for ${Math.round((end - ready) / 1000)} s after start-up (${delivered.toLocaleString('en-US')} journal lines):`,
);
console.log(
  `start-up ${(ready / 1000).toFixed(1)} s, RSS peak ${mb(maxOf(0, ready + 1))}; first ${FIRST_MS / 1000} s peak ${mb(maxOf(0, FIRST_MS))}; settled ${mb(median)} (median of the last ${SETTLED_MS / 1000} s)`,
);
console.log(
  `peak over the whole run ${mb(peak)} (VmHWM ${mb(hwm)}): goal < ${GOAL_MB} MB the whole time ${peak < GOAL_MB ? 'met' : 'NOT met'}`,
);
