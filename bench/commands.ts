// Engine overhead per command over the raw platform call, with warm caches, and start-up time of
// the real entry point to its first answer. Prints figures; asserts nothing.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHarness } from '../test/helpers/bot-harness.ts';
import { startNodeFlags } from './_start.ts';

const ROUNDS = 300;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

async function timed(fn: () => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < 20; i++) await fn();
  const out: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const started = performance.now();
    await fn();
    out.push(performance.now() - started);
  }
  return out;
}

const h = await startHarness({ scale: 'full' });
const moonCats = h.devnet.collections.devnet?.find((c) => c.name === 'Moon Cats');
if (!moonCats) throw new Error('no Moon Cats');
const target = { network: 'devnet', contractAddress: moonCats.address };

const cases = [
  {
    name: '/traits (one TokenCollectionFilters call)',
    raw: () => h.platform.metadata.tokenCollectionFilters(target),
    command: `/traits ${moonCats.address}`,
  },
  {
    name: '/floor (one ListCollectibles call)',
    raw: () =>
      h.platform.marketplace.listCollectibles({
        ...target,
        side: 'listing',
        filter: { includeEmpty: false },
        page: { pageSize: 5 },
      }),
    command: `/floor ${moonCats.address} count=5`,
  },
];
for (const c of cases) {
  const raw = await timed(c.raw);
  const engine = await timed(() => h.run(c.command));
  const overhead = percentile(engine, 50) - percentile(raw, 50);
  console.log(
    `${c.name}: raw call p50 ${percentile(raw, 50).toFixed(2)} ms, through the engine p50 ${percentile(engine, 50).toFixed(2)} ms p99 ${percentile(engine, 99).toFixed(2)} ms -> engine overhead p50 ${overhead.toFixed(2)} ms (target < 2 ms: ${overhead < 2 ? 'met' : 'NOT met'})`,
  );
}
await h.close();

// Start-up: build once, then spawn the built entry point (what `npm start` and the Docker image run) with
// one piped command; time to the "started" log line and to the answer. The sources through tsx for comparison.
const ROOT = join(import.meta.dirname, '..');
execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });

async function startUp(args: string[]): Promise<{ ready: number; answer: number }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'floorwatch-bench-'));
  const started = performance.now();
  const result = await new Promise<{ ready: number; answer: number }>((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', FLOORWATCH_DATA_DIR: dataDir },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let ready = Number.NaN;
    let answer = Number.NaN;
    child.stderr.on('data', (chunk: Buffer) => {
      if (Number.isNaN(ready) && chunk.toString().includes('floorwatch started')) ready = performance.now() - started;
    });
    child.stdout.on('data', () => {
      if (Number.isNaN(answer)) answer = performance.now() - started;
    });
    child.on('error', reject);
    child.on('close', () => resolve({ ready, answer }));
    child.stdin.end('/help\n');
  });
  await rm(dataDir, { recursive: true, force: true });
  return result;
}

for (const [name, args] of [
  ['built (node dist/src/main.js)', [...startNodeFlags(), 'dist/src/main.js']],
  ['sources through tsx (node --import tsx src/main.ts)', ['--import', 'tsx', 'src/main.ts']],
] as const) {
  const startups: Array<{ ready: number; answer: number }> = [];
  for (let i = 0; i < 7; i++) startups.push(await startUp([...args]));
  const ready = percentile(
    startups.map((s) => s.ready),
    50,
  );
  const answer = percentile(
    startups.map((s) => s.answer),
    50,
  );
  console.log(
    `start-up, ${name}, local platform included, median of 7: ready ${ready.toFixed(0)} ms, first answer ${answer.toFixed(0)} ms (goal < 1500 ms to the first answer, aim 1000 ms: ${answer < 1000 ? 'aim met' : answer < 1500 ? 'goal met' : 'NOT met'})`,
  );
}
