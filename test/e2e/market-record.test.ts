import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Devnet, type MineResult, startDevnet } from '../../src/devnet/index.ts';
import { formatUsd } from '../../src/market/format.ts';
import { PlatformClient } from '../../src/platform/client.ts';
import { collectionNamed, listedToken, platformEnv } from '../helpers/devnet-data.ts';
import { type RunningEntryPoint, spawnEntryPoint } from '../helpers/entry-point.ts';

/*
 * The real entry point (a child process, as `npm start` runs it) against a local platform started
 * here as if it were a real one. The bot has no watch rule at all: the marketplace contract is still
 * subscribed from start-up, so a sale mined through the platform's control API is in what /collection
 * shows, and alerts nobody.
 */

let devnet: Devnet;
let client: PlatformClient;
let dataDir: string;
let bot: RunningEntryPoint | undefined;

async function until(check: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Sends a line and waits for its answer, recognised by `answered` in the output after it. */
async function ask(line: string, answered: (out: string) => boolean, what: string): Promise<string> {
  const running = bot as RunningEntryPoint;
  const from = running.stdout.length;
  running.child.stdin.write(`${line}\n`);
  await until(() => answered(running.stdout.slice(from)), what);
  return running.stdout.slice(from);
}

/** Asks again, a quarter of a second apart, until the answer is the one wanted. */
async function askUntil(
  line: string,
  answered: (out: string) => boolean,
  wanted: (out: string) => boolean,
  what: string,
): Promise<string> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const out = await ask(line, answered, line);
    if (wanted(out)) return out;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last answer:\n${out}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

beforeAll(async () => {
  devnet = await startDevnet({ scale: 'small', heartbeatIntervalMs: 1_000 });
  client = new PlatformClient({
    endpoints: devnet.endpoints,
    networks: devnet.networks,
    accessKey: devnet.accessKey,
    secretToken: devnet.secretToken,
    projectId: devnet.projectId,
  });
  dataDir = await mkdtemp(join(tmpdir(), 'floorwatch-market-record-'));
});

afterAll(async () => {
  if (bot && bot.child.exitCode === null) {
    bot.child.stdin.end();
    await bot.exited;
  }
  await client?.close();
  await devnet?.close();
  await rm(dataDir, { recursive: true, force: true });
});

describe('the market record of a bot without watch rules', () => {
  it('GIVEN no watch rule WHEN a sale is mined on the platform THEN /collection shows it, since the bot began recording, and no alert is posted', async () => {
    bot = spawnEntryPoint({ ...platformEnv(devnet), FLOORWATCH_DATA_DIR: dataDir });
    const cats = collectionNamed(devnet, 'Moon Cats');

    // The marketplace stream opens with no rule: /status says so before anything is mined.
    const status = await askUntil(
      '/status',
      (out) => out.includes('Alerts: '),
      (out) => out.includes('devnet: events connected'),
      'the marketplace stream',
    );
    expect(status).toMatch(/✅ devnet: events connected, receipts connected, 1 contract,/);
    expect(await ask('/watch list', (out) => out.includes('No rules yet'), '/watch list')).toContain('No rules yet');

    const tokenId = await listedToken(client, cats.address);
    const response = await fetch(`${devnet.url}/devnet/mine`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ network: 'devnet', activity: [{ kind: 'sale', collection: cats.address, tokenId }] }),
    });
    expect(response.status).toBe(200);
    const mined = (await response.json()) as MineResult;
    const orderId = mined.transactions[0]?.orderIds[0] ?? '';
    const { orders } = await client.marketplace.getOrders({
      network: 'devnet',
      input: [{ contractAddress: cats.address, orderId }],
    });
    const usd = formatUsd(orders[0]?.priceUSD);
    expect(usd).toBeDefined();

    // Sales are priced and written every 2 s: ask until the record has it.
    const answer = await askUntil(
      '/collection moon cats',
      (out) => out.includes('— Moon Cats · devnet'),
      (out) => /1 sale · /.test(out),
      'the sale in /collection',
    );
    expect(answer).toMatch(/^Since \d\d:\d\d UTC (today|yesterday):\n {2}1 sale · \$[\d,.]+ volume\b/m);
    expect(/^ {2}1 sale · (\$[\d,.]+) volume/m.exec(answer)?.[1]).toBe(usd);
    expect(answer).toMatch(/recording began at \d\d:\d\d UTC (today|yesterday): sales before then are not counted/);
    expect(answer).not.toContain('Last 24 hours');

    const running = bot;
    running.child.stdin.end();
    const { code, stdout, stderr } = await running.exited;
    expect(code).toBe(0);
    expect(stdout).not.toMatch(/^(Sold|Sweep): /m);
    expect(stderr).not.toContain('"level":50');
  }, 60_000);
});
