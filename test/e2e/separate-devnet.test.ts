// A local platform run on its own, as a newcomer does it: `npm run devnet -- --write-env .env` in one
// terminal, the bot in another with that file. The bot reads the networks and marketplace contracts
// from the devnet's description, so a sale mined through the control API (background blocks paused,
// so the token just shown is still for sale) alerts. And a bot pointed at a platform whose marketplace
// contracts it does not know says so at start instead of never alerting sales.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DevnetInfo } from '../../src/devnet/index.ts';
import { ROOT, type RunningEntryPoint, spawnEntryPoint, waitUntil } from '../helpers/entry-point.ts';

let dir: string;
let devnetProcess: ChildProcessWithoutNullStreams;
let devnetOutput = '';
let info: DevnetInfo;

async function until(check: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  await waitUntil(check, timeoutMs);
  if (!check()) throw new Error(`timed out waiting for ${what}`);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'floorwatch-separate-devnet-'));
  // A .env the operator already had: a chat setting to keep, and a platform setting the devnet replaces.
  await writeFile(join(dir, '.env'), 'FLOORWATCH_OPERATORS=telegram:42\nFLOORWATCH_NETWORKS=polygon\n');
  devnetProcess = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/devnet/cli.ts', '--port', '0', '--scale', 'small', '--block-interval', '500', '--quiet'],
    { cwd: ROOT, env: { PATH: process.env.PATH ?? '' }, stdio: 'pipe' },
  );
  devnetProcess.stdin.end();
  devnetProcess.stdout.on('data', (chunk: Buffer) => {
    devnetOutput += chunk.toString();
  });
  await until(() => devnetOutput.includes('FLOORWATCH_SECRET_TOKEN='), 'the devnet to start');
  const url = /^FLOORWATCH_PLATFORM_URL=(.+)$/m.exec(devnetOutput)?.[1] ?? '';
  info = (await (await fetch(`${url}/devnet/info`)).json()) as DevnetInfo;
}, 60_000);

afterAll(async () => {
  if (devnetProcess && devnetProcess.exitCode === null) {
    const exited = new Promise((resolve) => devnetProcess.on('close', resolve));
    devnetProcess.kill('SIGTERM');
    await exited;
  }
  await rm(dir, { recursive: true, force: true });
}, 30_000);

describe('the bot and a local platform run on its own', () => {
  it('GIVEN npm run devnet THEN it prints the three lines to paste into .env', () => {
    expect(devnetOutput).toContain('To point the bot at this devnet, put these lines in .env');
    expect(devnetOutput).toContain(`FLOORWATCH_PLATFORM_URL=${info.url}\n`);
    expect(devnetOutput).toContain(`FLOORWATCH_ACCESS_KEY=${info.accessKey}\n`);
    expect(devnetOutput).toContain(`FLOORWATCH_SECRET_TOKEN=${info.secretToken}\n`);
  });

  it('GIVEN the settings written by --write-env WHEN the bot starts with them and a sale of the token /floor showed is mined THEN the sale alerts, with the devnet pages as links', async () => {
    // A second devnet process writes the file; its own (same seed, other port) stays up for the bot.
    const writer = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'src/devnet/cli.ts',
        '--port',
        '0',
        '--scale',
        'small',
        '--block-interval',
        '500',
        '--quiet',
        '--write-env',
        join(dir, '.env'),
      ],
      { cwd: ROOT, env: { PATH: process.env.PATH ?? '' }, stdio: 'pipe' },
    );
    writer.stdin.end();
    let written = '';
    writer.stdout.on('data', (chunk: Buffer) => {
      written += chunk.toString();
    });

    const writerExited = new Promise((resolve) => writer.on('close', resolve));
    let bot: RunningEntryPoint | undefined;
    try {
      await until(() => written.includes("Wrote the bot's settings"), 'the --write-env devnet');
      expect(written).toContain('(commented out there: FLOORWATCH_NETWORKS)');
      const file = await readFile(join(dir, '.env'), 'utf8');
      expect(file).toContain('FLOORWATCH_OPERATORS=telegram:42\n');
      expect(file).toContain('# FLOORWATCH_NETWORKS=polygon');
      const env = Object.fromEntries(
        Object.entries(parseEnv(file)).filter((entry): entry is [string, string] => entry[1] !== undefined),
      );
      expect(Object.keys(env).sort()).toEqual([
        'FLOORWATCH_ACCESS_KEY',
        'FLOORWATCH_OPERATORS',
        'FLOORWATCH_PLATFORM_URL',
        'FLOORWATCH_SECRET_TOKEN',
      ]);
      const writerUrl = env.FLOORWATCH_PLATFORM_URL ?? '';
      expect(writerUrl).not.toBe(info.url);

      bot = spawnEntryPoint({ ...env, FLOORWATCH_DATA_DIR: join(dir, 'data') });
      const running = bot;
      running.child.stdin.write('/watch add moon cats sale\n');
      await until(() => running.stdout.includes('Watching'), 'the watch rule');
      expect(running.stderr).toContain('using the platform described at FLOORWATCH_PLATFORM_URL');
      expect(running.stderr).not.toContain('no marketplace contract');
      // Streams open in the background, and follow the new rule's collection a moment later: /status
      // says when devnet's events stream has both the marketplace contract and Moon Cats.
      const deadline = Date.now() + 30_000;
      let status = '';
      while (!/devnet: events connected, receipts connected, 2 contracts/.test(status) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        const from = running.stdout.length;
        running.child.stdin.write('/status\n');
        await until(() => running.stdout.slice(from).includes('Uptime'), '/status');
        status = running.stdout.slice(from);
      }
      expect(status).toMatch(/devnet: events connected, receipts connected, 2 contracts/);

      // Paused, the simulated market cannot buy the token /floor shows before the sale asked for.
      expect(await (await control(writerUrl, '/devnet/pause')).json()).toMatchObject({ paused: true });
      const from = running.stdout.length;
      running.child.stdin.write('/floor moon cats count=1\n');
      await until(() => /Moon Cat #(\d+):/.test(running.stdout.slice(from)), '/floor');
      const tokenId = /Moon Cat #(\d+):/.exec(running.stdout.slice(from))?.[1] ?? '';
      const cats = info.collections.devnet?.find((c) => c.name === 'Moon Cats')?.address ?? '';
      const mined = await control(writerUrl, '/devnet/mine', {
        network: 'devnet',
        activity: [{ kind: 'sale', collection: cats, tokenId }],
      });
      expect(mined.status).toBe(200);
      await until(() => running.stdout.includes(`Sold: Moon Cat #${tokenId}`), 'the sale alert');
      const alert = running.stdout.slice(running.stdout.indexOf(`Sold: Moon Cat #${tokenId}`));
      expect(alert).toContain(`${writerUrl}/market/devnet/${cats}/${tokenId}`);
      expect(alert).toContain(`${writerUrl}/explorer/devnet/tx/0x`);

      running.child.stdin.end();
      expect((await running.exited).code).toBe(0);
    } finally {
      if (bot && bot.child.exitCode === null) bot.child.kill('SIGKILL');
      writer.kill('SIGTERM');
      await writerExited;
    }
  }, 120_000);

  it('GIVEN a platform whose marketplace contracts are not configured WHEN the bot starts THEN it warns, naming the network and the variable', async () => {
    const network = info.networks[0];
    const bot = spawnEntryPoint({
      FLOORWATCH_METADATA_URL: info.endpoints.metadataUrl,
      FLOORWATCH_MARKETPLACE_URL: info.endpoints.marketplaceUrl,
      FLOORWATCH_INDEXER_URL: info.endpoints.indexerUrl,
      FLOORWATCH_RELAYER_URL: info.endpoints.relayerUrl,
      FLOORWATCH_API_URL: info.endpoints.apiUrl,
      FLOORWATCH_ACCESS_KEY: info.accessKey,
      FLOORWATCH_NETWORKS: `${network?.name}:${network?.chainId}`,
      FLOORWATCH_DATA_DIR: join(dir, 'data-without-contracts'),
    });
    bot.child.stdin.end('/help\n');
    const { code, stderr } = await bot.exited;
    expect(code).toBe(0);
    const warning = stderr.split('\n').find((line) => line.includes('no marketplace contract'));
    expect(warning).toBeDefined();
    expect(JSON.parse(warning ?? '{}')).toMatchObject({
      level: 40,
      networks: ['devnet'],
      msg: expect.stringContaining('Set FLOORWATCH_MARKETPLACE_CONTRACTS, e.g. devnet:0x'),
    });
  }, 60_000);
});

/** A request to a devnet's control API. */
async function control(base: string, path: string, body: unknown = {}): Promise<Response> {
  return fetch(`${base}${path}`, { method: 'POST', body: JSON.stringify(body) });
}
