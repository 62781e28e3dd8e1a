import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Devnet, type DevnetCollectionInfo, startDevnet } from '../../src/devnet/index.ts';
import { type RunningBot, startBot } from '../../src/main.ts';
import { platformEnv } from '../helpers/devnet-data.ts';

/*
 * Issue 14 part 4: the bot runs (src/main.ts, in this process) against a local platform started by
 * the test, as against a real one, with FLOORWATCH_RPC_URL pointing at the platform's JSON-RPC. It is
 * stopped and started again on the same data directory while the chain goes on; alerts are counted in
 * the terminal chat's output (one "Sold: " line per sale alert, its footer naming the block).
 */

let devnet: Devnet;
let cats: DevnetCollectionInfo;
let dataDir: string;
let logFile: string;
const bots: RunningBot[] = [];

interface Run {
  bot: RunningBot;
  out: () => string;
  input: PassThrough;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

async function start(env: Record<string, string> = {}): Promise<Run> {
  let text = '';
  const stdout = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  const input = new PassThrough();
  const bot = await startBot({
    env: {
      ...platformEnv(devnet),
      FLOORWATCH_DATA_DIR: dataDir,
      FLOORWATCH_LOG_LEVEL: 'info',
      ...env,
    },
    stdin: input,
    stdout,
    logDestination: logFile,
  });
  bots.push(bot);
  return { bot, out: () => text, input };
}

/** Block numbers named by the sale alerts of an output, in order. */
function saleBlocks(out: string): number[] {
  const blocks: number[] = [];
  const pattern = /^Sold: [\s\S]*?block (\d+)/gm;
  for (let match = pattern.exec(out); match; match = pattern.exec(out)) blocks.push(Number(match[1]));
  return blocks;
}

const sales = (out: string) => (out.match(/^Sold: /gm) ?? []).length;

async function mineSales(count: number): Promise<number[]> {
  const blocks: number[] = [];
  for (let i = 0; i < count; i++) {
    // A fresh listing each time: the small dataset runs out of them.
    const mined = await devnet.mine('devnet', [
      { kind: 'listing', collection: cats.address },
      { kind: 'sale', collection: cats.address },
    ]);
    blocks.push(mined.blockNumber);
  }
  return blocks;
}

async function stop(run: Run): Promise<void> {
  await run.bot.stop();
  bots.splice(bots.indexOf(run.bot), 1);
}

beforeAll(async () => {
  devnet = await startDevnet({ scale: 'small', heartbeatIntervalMs: 1_000 });
  const found = devnet.collections.devnet?.find((c) => c.name === 'Moon Cats');
  if (!found) throw new Error('no Moon Cats');
  cats = found;
  dataDir = await mkdtemp(join(tmpdir(), 'floorwatch-backfill-'));
  logFile = join(dataDir, 'test.log');
});

afterAll(async () => {
  for (const bot of bots) await bot.stop();
  await devnet.close();
  await rm(dataDir, { recursive: true, force: true });
});

describe('nothing missed while down', () => {
  it('GIVEN a bot stopped while 50 sales are mined WHEN it starts again THEN it posts 50 sale alerts, none twice', async () => {
    const first = await start();
    first.input.write('/watch add moon cats all\n');
    await until(() => first.out().includes('Watching'), 'the watch rule');
    await until(() => first.bot.alerts.status().streams[0]?.events === 'connected', 'the events stream');
    // First start: no cursor yet, alerts begin at the head (written within a second).
    await until(() => existsSync(join(dataDir, 'cursors.json')), 'the cursor file');
    const [live] = await mineSales(1);
    await until(() => sales(first.out()) === 1, 'the live sale alert');
    expect(saleBlocks(first.out())).toEqual([live]);
    await stop(first);

    const missed = await mineSales(50);

    const second = await start();
    await until(() => sales(second.out()) >= 50, '50 sale alerts', 30_000);
    await sleep(1_500);
    expect(saleBlocks(second.out())).toEqual(missed);
    expect(second.bot.alerts.status().streams[0]?.gaps).toEqual([]);
    // The stream goes on after the backfill.
    const [after] = await mineSales(1);
    await until(() => sales(second.out()) === 51, 'the next live sale');
    expect(saleBlocks(second.out())).toEqual([...missed, after]);
    const cursors = JSON.parse(await readFile(join(dataDir, 'cursors.json'), 'utf8'));
    await stop(second);
    expect(cursors).toMatchObject({ v: 1, networks: { devnet: expect.any(Number) } });
    const saved = JSON.parse(await readFile(join(dataDir, 'cursors.json'), 'utf8'));
    expect(saved.networks.devnet).toBeGreaterThanOrEqual(missed.at(-1) as number);
  });

  it('GIVEN an events stream that drops while sales are mined, and no receipts WHEN it reconnects THEN the missed sales are read back, and a BLOCK_REMOVED log reverses an alert like a reorged receipt', async () => {
    devnet.setFaults([
      { operation: 'SubscribeEvents', dropStreamAfterMs: 1_500, times: 1 },
      // No receipts at all: the reversal below can only come from the events stream's BLOCK_REMOVED logs.
      { operation: 'SubscribeReceipts', errorRate: 1, errorStatus: 503 },
    ]);
    const run = await start();
    try {
      await until(() => run.bot.alerts.status().streams[0]?.events === 'connected', 'the events stream');
      await until(() => run.bot.alerts.status().streams[0]?.events === 'reconnecting', 'the drop');
      // The client waits at least 250 ms before it connects again.
      const missed = await mineSales(5);
      await until(() => sales(run.out()) >= 5, 'the missed sales', 15_000);
      expect(saleBlocks(run.out())).toEqual(missed);
      expect(run.bot.alerts.status().streams[0]?.reconnects).toBeGreaterThan(0);
      expect(run.bot.alerts.status().streams[0]?.gaps).toEqual([]);

      await devnet.mine('devnet', [{ kind: 'listing', collection: cats.address }]);
      const sale = await devnet.mine('devnet', [{ kind: 'sale', collection: cats.address }]);
      await until(() => sales(run.out()) === 6, 'the sale about to be reorganised');
      expect(saleBlocks(run.out()).at(-1)).toBe(sale.blockNumber);
      await until(
        async () =>
          (await run.bot.journal.deliveriesOf('devnet', sale.txnHashes[0] ?? '')).some((r) => r.state === 'sent'),
        'the sale alert sent',
      );
      await devnet.reorg('devnet', 1);
      await until(() => /^Reversed: Sold: /m.test(run.out()), 'the edit');
      await sleep(500);
      expect(run.out()).not.toMatch(/^Reversed: Listed: /m);
      expect((await run.bot.journal.deliveriesOf('devnet', sale.txnHashes[0] ?? '')).every((r) => r.reorged)).toBe(
        true,
      );
      expect(run.bot.alerts.status().counters.reorged).toBe(1);
    } finally {
      devnet.clearFaults();
      await stop(run);
    }
  });

  it('GIVEN more missed blocks than FLOORWATCH_BACKFILL_MAX_BLOCKS WHEN the bot starts THEN it reads back the last ones and reports the older ones as a gap', async () => {
    const missed = await mineSales(30);
    const run = await start({ FLOORWATCH_BACKFILL_MAX_BLOCKS: '20' });
    try {
      await until(() => sales(run.out()) >= 20, '20 sale alerts', 20_000);
      await sleep(1_000);
      expect(saleBlocks(run.out())).toEqual(missed.slice(10));
      const gaps = run.bot.alerts.status().streams[0]?.gaps ?? [];
      expect(gaps).toHaveLength(1);
      expect(gaps[0]).toMatchObject({ network: 'devnet', toBlock: missed[9] });
      expect(gaps[0]?.fromBlock).toBeLessThanOrEqual(missed[0] as number);
    } finally {
      await stop(run);
    }
  });
});
