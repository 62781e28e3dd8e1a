import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NO_CHAT_PLATFORM } from '../../src/main.ts';
import { LOCK_FILE } from '../../src/store/files/lock.ts';
import { type EntryPointRun, ROOT, runEntryPoint, spawnEntryPoint, waitUntil } from '../helpers/entry-point.ts';

/** Runs the entry point interactively-by-pipe: sends lines, keeps input open until stdout matches. */
/** Sends lines to the real entry point, keeps its input open until stdout matches (or 30 s), then ends it. */
async function converse(lines: string[], until: RegExp, env: Record<string, string>): Promise<EntryPointRun> {
  const running = spawnEntryPoint(env);
  running.child.stdin.write(lines.map((l) => `${l}\n`).join(''));
  await waitUntil(() => until.test(running.stdout), 30_000);
  running.child.stdin.end();
  return running.exited;
}

let dataDir: string;
beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'floorwatch-e2e-'));
});
afterEach(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

describe('npm start with piped input', () => {
  it('shows alerts in the terminal as the local chain mines them', async () => {
    const run = await converse(
      ['/watch add moon cats all'],
      /^(Sold|Sweep|Listed|Offer|Minted|Transferred|Burned|Cancelled(?: listing| offer)?): /m,
      {
        FLOORWATCH_DATA_DIR: dataDir,
        FLOORWATCH_DEVNET_BLOCK_MS: '150',
      },
    );
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Watching');
    expect(run.stdout).toMatch(
      /^(Sold|Sweep|Listed|Offer|Minted|Transferred|Burned|Cancelled(?: listing| offer)?): .*$/m,
    );
    expect(run.stdout).toMatch(/Moon Cats · devnet · block \d+/);
  });

  it('answers every line on stdout, keeps logs on stderr, and exits when the input ends', async () => {
    const run = await runEntryPoint('/floor moon cats count=2\n/help\n', { FLOORWATCH_DATA_DIR: dataDir });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Floor of Moon Cats');
    expect(run.stdout).toContain('Floorwatch commands');
    expect(run.stdout.indexOf('Floor of Moon Cats')).toBeLessThan(run.stdout.indexOf('Floorwatch commands'));
    expect(run.stdout).not.toContain('"level"');
    expect(run.stderr).toContain('"msg":"floorwatch started"');
  });

  it('stops cleanly on SIGTERM, well within its 10 s bound, with alert streams open', async () => {
    const running = spawnEntryPoint({ FLOORWATCH_DATA_DIR: dataDir, FLOORWATCH_DEVNET_BLOCK_MS: '200' });
    running.child.stdin.write('/watch add moon cats all\n');
    await waitUntil(() => running.stdout.includes('Watching'), 20_000);
    await new Promise((r) => setTimeout(r, 1_500));
    const signalled = Date.now();
    running.child.kill('SIGTERM');
    const { code, stderr } = await running.exited;
    expect(code).toBe(0);
    expect(Date.now() - signalled).toBeLessThan(10_000);
    expect(stderr).toContain('"reason":"SIGTERM"');
    expect(stderr).not.toContain('shutdown took too long');
  });

  it('GIVEN its reader goes away (npm start | head) WHEN it writes the next answer THEN it stops cleanly: exit 0, no stack trace, the data directory unlocked', async () => {
    const running = spawnEntryPoint({ FLOORWATCH_DATA_DIR: dataDir, FLOORWATCH_DEVNET_BLOCK_MS: '0' });
    running.child.stdin.on('error', () => undefined);
    running.child.stdin.write('/help\n');
    await waitUntil(() => running.stdout.includes('Floorwatch commands'), 30_000);
    expect(existsSync(join(dataDir, LOCK_FILE))).toBe(true);
    // As `head` does once it has its lines: the read end of the pipe is closed.
    running.child.stdout.destroy();
    running.child.stdin.write('/help\n/floor moon cats\n');
    const timer = setTimeout(() => running.child.kill('SIGKILL'), 20_000);
    const { code, stderr } = await running.exited;
    clearTimeout(timer);
    expect(code).toBe(0);
    expect(stderr).toContain('"reason":"output closed"');
    expect(stderr).not.toMatch(/Unhandled 'error' event|Error: write EPIPE|^\s+at /m);
    expect(existsSync(join(dataDir, LOCK_FILE))).toBe(false);
  });

  it('refuses a bad configuration with every problem named, and no secret echoed', async () => {
    const run = await runEntryPoint('', {
      FLOORWATCH_DATA_DIR: dataDir,
      LOG_LEVEL: 'chatty',
      FLOORWATCH_API_URL: 'https://x.example/?key=S3CRET',
    });
    expect(run.code).toBe(78);
    expect(run.stderr).toContain('LOG_LEVEL must be one of');
    expect(run.stderr).toContain('FLOORWATCH_METADATA_URL');
    expect(run.stderr).not.toContain('S3CRET');
  });

  it('GIVEN FLOORWATCH_DEFAULT_NETWORK that the local platform does not have THEN it refuses to start, naming the variable and the networks', async () => {
    const run = await runEntryPoint('/floor moon cats\n', {
      FLOORWATCH_DATA_DIR: dataDir,
      FLOORWATCH_DEFAULT_NETWORK: 'mainnet',
    });
    expect(run.code).toBe(78);
    expect(run.stderr).toContain(
      'FLOORWATCH_DEFAULT_NETWORK "mainnet" is not a network of the platform (devnet, devnet-l2).',
    );
    expect(run.stdout).toBe('');
  });

  it('GIVEN no chat platform and standard input /dev/null (docker run -d) THEN it says no chat platform is configured, naming the variables, and exits 78 instead of 0', async () => {
    const detached = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', FLOORWATCH_DATA_DIR: dataDir, FLOORWATCH_DEVNET_BLOCK_MS: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    detached.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => detached.on('close', resolve));
    expect(code).toBe(78);
    expect(stderr).toContain(`floorwatch: ${NO_CHAT_PLATFORM}`);
    expect(NO_CHAT_PLATFORM).toMatch(
      /no chat platform is configured \(set DISCORD_TOKEN and DISCORD_APPLICATION_ID, or TELEGRAM_BOT_TOKEN\)/,
    );
    // The lock is released: the stop is the ordinary one.
    expect(existsSync(join(dataDir, LOCK_FILE))).toBe(false);
  }, 60_000);

  it('GIVEN no chat platform and an empty pipe THEN the same, 78; piped commands still run and end with 0', async () => {
    const empty = await runEntryPoint('', { FLOORWATCH_DATA_DIR: dataDir, FLOORWATCH_DEVNET_BLOCK_MS: '0' });
    expect(empty.code).toBe(78);
    expect(empty.stderr).toContain(NO_CHAT_PLATFORM);
    const piped = await runEntryPoint('/help\n', { FLOORWATCH_DATA_DIR: dataDir, FLOORWATCH_DEVNET_BLOCK_MS: '0' });
    expect(piped.code).toBe(0);
    expect(piped.stdout).toContain('Floorwatch commands');
    expect(piped.stderr).not.toContain('no chat platform');
  }, 60_000);

  it('refuses to start on a corrupt state file and leaves it as it was', async () => {
    const file = join(dataDir, 'state.json');
    await writeFile(file, '{"version":2,"chats":');
    const run = await runEntryPoint('/help\n', { FLOORWATCH_DATA_DIR: dataDir });
    expect(run.code).toBe(78);
    expect(run.stderr).toContain(`${file}: is not valid JSON`);
    expect(run.stdout).toBe('');
    expect(await readFile(file, 'utf8')).toBe('{"version":2,"chats":');
  });
});

describe('npm start on a terminal', () => {
  it('keeps logs off the prompt: they go to the data directory, and the terminal is told where', async () => {
    // `script` gives the bot a real pseudo-terminal, as a person's shell would.
    const child = spawn(
      'script',
      ['-qfec', `${JSON.stringify(process.execPath)} --import tsx src/main.ts`, '/dev/null'],
      {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? '',
          FLOORWATCH_DATA_DIR: dataDir,
          FLOORWATCH_DEVNET_BLOCK_MS: '0',
        },
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    let screen = '';
    child.stdout.on('data', (chunk: Buffer) => {
      screen += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    child.stdin.write('/help\n');
    await waitUntil(() => screen.includes('Floorwatch commands'), 30_000);
    child.stdin.write('\u0004');
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 15_000))]);
    child.kill('SIGKILL');
    expect(screen).toContain('Floorwatch commands');
    expect(screen).toContain(`logs go to ${join(dataDir, 'floorwatch.log')}`);
    expect(screen).not.toContain('"level"');
    expect(await readFile(join(dataDir, 'floorwatch.log'), 'utf8')).toContain('"msg":"floorwatch started"');
  });
});

describe('the built bot (what npm start and the Docker image run)', () => {
  it("GIVEN npm start's script after a build THEN it answers from dist/ without building again, in one process", async () => {
    execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'ignore' });
    const stamp = join(ROOT, 'dist', '.build-stamp');
    const builtAt = statSync(stamp).mtimeMs;
    const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } };
    const [command, ...args] = pkg.scripts.start.split(/\s+/);
    expect(command).toBe('node');
    const run = spawnSync(process.execPath, args, {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', FLOORWATCH_DATA_DIR: dataDir, FLOORWATCH_DEVNET_BLOCK_MS: '0' },
      input: '/help\n',
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('Floorwatch commands');
    expect(statSync(stamp).mtimeMs).toBe(builtAt);
  }, 90_000);

  it('GIVEN npm run build THEN node dist/src/main.js answers, loads every command and draws a digest chart in its worker thread', async () => {
    execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'ignore' });
    const child = spawn(process.execPath, ['dist/src/main.js'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', FLOORWATCH_DATA_DIR: dataDir, FLOORWATCH_DEVNET_BLOCK_MS: '0' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    child.stdin.end('/help\n/floor moon cats count=1\n/digest set 09:00 UTC 1 moon cats\n/digest preview\n');
    expect(await exited).toBe(0);
    expect(stdout).toContain('Floorwatch commands');
    expect(stdout).toContain('Floor of Moon Cats');
    expect(stdout).toMatch(/attachment: .*digest-chart\.png/);
    expect(stderr).toMatch(/"commands":\d+/);
    const loaded = Number(/"commands":(\d+)/.exec(stderr)?.[1]);
    const files = (await readdir(join(ROOT, 'commands'))).filter((f) => f.endsWith('.ts'));
    expect(loaded).toBe(files.length);
    expect(stderr).not.toContain('"level":50');
  });
});

describe('npm start: verifying a wallet in the terminal chat', () => {
  it('GIVEN the local platform WHEN a newcomer pastes the signature of the printed signing command THEN the wallet is verified (an EOA and a counterfactual contract wallet)', async () => {
    const running = spawnEntryPoint({ FLOORWATCH_DATA_DIR: dataDir, FLOORWATCH_DEVNET_BLOCK_MS: '0' });
    try {
      running.child.stdin.write('/verify\n');
      await waitUntil(() => running.stdout.includes('Test wallets of the local platform'), 30_000);
      const wallets = [...running.stdout.matchAll(/^(\d)\. (0x[0-9a-f]{40}) (.+)$/gm)];
      const eoa = wallets.find((w) => w[3] === 'EOA')?.[2];
      const counterfactual = wallets.find((w) => w[3]?.includes('ERC-6492'))?.[2];
      expect(eoa).toBeDefined();
      expect(counterfactual).toBeDefined();
      for (const [at, address] of [eoa, counterfactual].entries()) {
        const before = running.stdout.length;
        running.child.stdin.write(`/verify address ${address}\n`);
        const printed = /(npm run --silent devnet -- sign --wallet \d '[^']*')/;
        await waitUntil(() => printed.test(running.stdout.slice(before)), 30_000);
        const command = printed.exec(running.stdout.slice(before))?.[1] ?? '';
        // Run exactly as printed, by a shell, as a person pasting it would.
        const signature = execFileSync('bash', ['-c', command], {
          cwd: ROOT,
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'pipe'],
        }).trim();
        expect(signature).toMatch(/^0x[0-9a-f]+$/);
        running.child.stdin.write(`/verify signature ${signature}\n`);
        await waitUntil(
          () => (running.stdout.match(/is verified for the terminal chat/g) ?? []).length === at + 1,
          30_000,
        );
      }
      running.child.stdin.write('/verify list\n');
      await waitUntil(() => running.stdout.includes('Your wallets in the terminal chat'), 30_000);
    } finally {
      running.child.stdin.end();
    }
    const run = await running.exited;
    expect(run.code).toBe(0);
    const list = run.stdout.slice(run.stdout.indexOf('Your wallets in the terminal chat'));
    expect(list).toContain(' EOA, verified ');
    expect(list).toContain(' contract wallet, verified ');
    // Stored in a file of its own; state.json knows nothing of wallets.
    expect(await readFile(join(dataDir, 'wallets.jsonl'), 'utf8')).toContain('"kind":"contract"');
    const state = await readFile(join(dataDir, 'state.json'), 'utf8').catch(() => '');
    expect(state).not.toMatch(/0x[0-9a-f]{40}/);
  }, 120_000);
});
