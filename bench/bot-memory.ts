// bot-memory: the real bot (the build `npm start` runs, with the local platform in-process)
// holding 100,000 watch rules in 10,000 chats (100 of the chats watch the local platform's collections, the
// others collections elsewhere), while the local chain mines activity that reaches those 100 chats.
// Prints the resident memory after start-up and after a minute of alerts. Goal (issue 15): < 250 MB.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ALERT_KINDS } from '../src/core/types.ts';
import { startDevnet } from '../src/devnet/index.ts';

const CHATS = Number(process.argv[3] ?? 10_000);
/** Chats whose rules watch the local platform's collections; the others watch collections elsewhere, as most do. */
const WATCHING_LOCAL = Math.min(CHATS, 100);
const RULES_PER_CHAT = 10;
const GOAL_MB = 250;
const RUN_MS = Number(process.argv[2] ?? 60_000);
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
await writeFile(
  join(dataDir, 'state.json'),
  JSON.stringify({ version: 2, chats: {}, buttons: {}, rules, nextRuleNumber: id }),
);

// The bot as `npm start` runs it: built first.
execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
const child = spawn(
  process.execPath,
  [...(process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? []), '--enable-source-maps', 'dist/src/main.js'],
  {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      FLOORWATCH_DATA_DIR: dataDir,
      FLOORWATCH_DEVNET_BLOCK_MS: '1000',
      LOG_LEVEL: 'warn',
    },
    stdio: ['pipe', 'ignore', 'pipe'],
  },
);
let stderr = '';
child.stderr.on('data', (chunk: Buffer) => {
  stderr += chunk.toString();
});
const rssMb = async (): Promise<number> => {
  const status = await readFile(`/proc/${child.pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN) / 1024;
};
const peakMb = async (): Promise<number> => {
  const status = await readFile(`/proc/${child.pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN) / 1024;
};

const started = Date.now();
// The journal file appears once the bot has started (the pipeline opens it before the chat).
for (;;) {
  await new Promise((resolve) => setTimeout(resolve, 250));
  const journal = await readFile(join(dataDir, 'deliveries.jsonl'), 'utf8').catch(() => undefined);
  if (journal !== undefined || Date.now() - started > 60_000 || child.exitCode !== null) break;
}
await new Promise((resolve) => setTimeout(resolve, 5_000));
const afterStart = await rssMb();
const samples: number[] = [];
const until = Date.now() + RUN_MS;
while (Date.now() < until && child.exitCode === null) {
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  samples.push(await rssMb());
}
const peak = await peakMb();
const delivered = (await readFile(join(dataDir, 'deliveries.jsonl'), 'utf8').catch(() => '')).split('\n').length;
child.kill('SIGTERM');
await new Promise((resolve) => child.once('close', resolve));
await rm(dataDir, { recursive: true, force: true });
if (stderr.includes('"level":50')) console.log(`errors in the bot's log:\n${stderr.slice(0, 2_000)}`);

const last = samples.at(-1) ?? afterStart;
console.log(
  `${(CHATS * RULES_PER_CHAT).toLocaleString('en-US')} rules in ${CHATS.toLocaleString('en-US')} chats, local platform in-process, a block a second for ${Math.round(RUN_MS / 1000)} s (${delivered.toLocaleString('en-US')} journal lines):`,
);
console.log(
  `RSS after start-up ${afterStart.toFixed(0)} MB; during alerts max ${Math.max(afterStart, ...samples).toFixed(0)} MB, at the end ${last.toFixed(0)} MB; peak (VmHWM, start-up included) ${peak.toFixed(0)} MB (goal < ${GOAL_MB} MB: ${Math.max(afterStart, ...samples) < GOAL_MB ? 'met' : 'NOT met'})`,
);
