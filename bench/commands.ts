// Engine overhead per command over the raw platform call, with warm caches, and start-up time of
// the real entry point to its first answer: built, through tsx, and `npm start` as typed (first start,
// nothing changed, after a source change). Prints figures; asserts nothing.
import { execFileSync, spawn } from 'node:child_process';
import { appendFile, cp, mkdtemp, rm, symlink } from 'node:fs/promises';
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

// Start-up: build once, then spawn the built entry point (what the Docker image runs) with one piped
// command; time to the "started" log line and to the answer. The sources through tsx for comparison.
const ROOT = join(import.meta.dirname, '..');
execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });

/** Spawns `command args` in `cwd` with `/help` piped in; times the "started" log line and the answer. */
async function startUp(
  command: string,
  args: string[],
  cwd = ROOT,
): Promise<{ ready: number; answer: number; code: number | null }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'floorwatch-bench-'));
  const started = performance.now();
  const result = await new Promise<{ ready: number; answer: number; code: number | null }>((resolve, reject) => {
    const child = spawn(command, args, {
      cwd,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', FLOORWATCH_DATA_DIR: dataDir },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let ready = Number.NaN;
    let answer = Number.NaN;
    let stdout = '';
    child.stderr.on('data', (chunk: Buffer) => {
      if (Number.isNaN(ready) && chunk.toString().includes('floorwatch started')) ready = performance.now() - started;
    });
    // npm prints its own lines first: the answer is the first line of /help's.
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (Number.isNaN(answer) && stdout.includes('Floorwatch commands')) answer = performance.now() - started;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ ready, answer, code }));
    child.stdin.end('/help\n');
  });
  await rm(dataDir, { recursive: true, force: true });
  return result;
}

function describe(samples: number[]): string {
  const all = samples.map((s) => s.toFixed(0)).join(', ');
  return `p50 ${percentile(samples, 50).toFixed(0)} ms, p90 ${percentile(samples, 90).toFixed(0)} ms, max ${Math.max(...samples).toFixed(0)} ms (samples: ${all})`;
}

function verdict(samples: number[]): string {
  const p50 = percentile(samples, 50);
  return p50 < 1000 ? 'aim met' : p50 < 1500 ? 'goal met' : 'NOT met';
}

const SAMPLES = 7;
for (const [name, args] of [
  ['built (node dist/src/main.js, as the Docker image runs it)', [...startNodeFlags(), 'dist/src/main.js']],
  ['sources through tsx (node --import tsx src/main.ts)', ['--import', 'tsx', 'src/main.ts']],
] as const) {
  const startups: Array<{ ready: number; answer: number }> = [];
  for (let i = 0; i < SAMPLES; i++) startups.push(await startUp(process.execPath, [...args]));
  console.log(
    `start-up, ${name}, local platform included, ${SAMPLES} fresh processes: first answer ${describe(startups.map((s) => s.answer))}; "started" logged ${describe(startups.map((s) => s.ready))}`,
  );
}

// `npm start` exactly as a person types it (npm, the build check, the bot), in a copy of the project
// (its node_modules linked) so that a source can be changed without touching the checkout: the first
// start builds dist/, a second start with nothing changed builds nothing, and a start after a source
// changed builds again.
const copy = await mkdtemp(join(tmpdir(), 'floorwatch-bench-start-'));
try {
  for (const entry of ['src', 'commands', 'scripts', 'package.json', 'package-lock.json', 'tsconfig.json']) {
    await cp(join(ROOT, entry), join(copy, entry), { recursive: true });
  }
  await symlink(join(ROOT, 'node_modules'), join(copy, 'node_modules'), 'dir');
  const npmStart = () => startUp('npm', ['start'], copy);
  const scenarios: Array<[string, () => Promise<void>]> = [
    ['first start (no dist/: it builds)', () => rm(join(copy, 'dist'), { recursive: true, force: true })],
    ['again, nothing changed', async () => {}],
    [
      'after a source change (commands/help.ts edited: it builds again)',
      () => appendFile(join(copy, 'commands', 'help.ts'), `// changed ${Date.now()}\n`),
    ],
  ];
  for (const [name, before] of scenarios) {
    const answers: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      await before();
      const run = await npmStart();
      if (run.code !== 0 || Number.isNaN(run.answer)) throw new Error(`npm start failed (exit ${run.code})`);
      answers.push(run.answer);
    }
    console.log(
      `npm start as typed, ${name}, ${SAMPLES} fresh processes: first answer ${describe(answers)} (goal < 1500 ms, aim 1000 ms: ${verdict(answers)})`,
    );
  }
} finally {
  await rm(copy, { recursive: true, force: true });
}
