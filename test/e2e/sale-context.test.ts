import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Devnet, type DevnetCollectionInfo, startDevnet } from '../../src/devnet/index.ts';
import { type RunningBot, startBot } from '../../src/main.ts';
import { shortAddress } from '../../src/market/format.ts';
import { FakeDiscord } from '../fakes/discord.ts';
import { FakeTelegram } from '../fakes/telegram.ts';
import { askDiscord, askTelegram } from '../helpers/chat-commands.ts';
import { collectionNamed, listedToken, platformEnv } from '../helpers/devnet-data.ts';
import { endSuite } from '../helpers/suite-end.ts';
import { sleep, until } from '../helpers/waiting.ts';

/*
 * Sale context end to end: the bot (src/main.ts) against a local platform whose blocks are mined
 * through its control API over HTTP; sale rules set and alerts read through the real discord.js and
 * grammY clients against their stand-ins. A token is bought, then sold on by its buyer: the second
 * alert says how long it was held and the profit; buyers are new or hold N; a sale worth more than
 * FLOORWATCH_WHALE_USD is marked; a failing balance look-up still lets the alert out, without the line.
 */

let devnet: Devnet;
let cats: DevnetCollectionInfo;
let tg: FakeTelegram;
let discord: FakeDiscord;
let bot: RunningBot;
let dataDir: string;

const TG_CHAT = 701;
/** DEV is worth $2,450 on the local platform: 1 DEV is no whale's, 3 DEV is. */
const WHALE_USD = 5_000;
const ALICE = `0x${'a11ce'.padEnd(40, '1')}`;
const BOB = `0x${'b0b'.padEnd(40, '2')}`;
const CAROL = `0x${'ca501'.padEnd(40, '3')}`;
const DAVE = `0x${'da7e'.padEnd(40, '4')}`;

interface Mined {
  transactions: Array<{ txnHash: string; orderIds: string[]; tokenIds: string[] }>;
}

async function control(path: string, body: unknown, method = 'POST'): Promise<unknown> {
  const response = await fetch(`${devnet.url}/devnet/${path}`, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return response.json();
}

/** Mines one transaction through the platform's control API. */
async function mine(activity: Record<string, unknown>): Promise<Mined['transactions'][number]> {
  const mined = (await control('mine', { network: 'devnet', activity: [activity] })) as Mined;
  const txn = mined.transactions[0];
  if (!txn) throw new Error('nothing mined');
  return txn;
}

/** Lists `tokenId` at `price` DEV (by its owner, or `from`) and sells that listing to `to`. */
async function listAndSell(tokenId: string, price: string, to: string, from?: string): Promise<string> {
  const listed = await mine({
    kind: 'listing',
    collection: cats.address,
    tokenId,
    price,
    currency: 'DEV',
    ...(from ? { from } : {}),
  });
  const sold = await mine({ kind: 'sale', orderId: listed.orderIds[0], to });
  return sold.txnHash;
}

/** The Telegram and Discord alerts of a transaction, once both have arrived. */
async function alertsOf(txnHash: string, timeoutMs = 30_000): Promise<{ telegram: string; discord: string }> {
  const tx = shortAddress(txnHash);
  const telegram = await until(
    () =>
      tg.calls
        .filter((c) => /^send(Message|Photo)$/.test(c.method) && String(c.params.chat_id) === String(TG_CHAT))
        .map((c) => String(c.params.text ?? c.params.caption ?? ''))
        .find((text) => text.includes(`tx ${tx}`)),
    `the Telegram alert of ${txnHash}`,
    timeoutMs,
  );
  const embed = await until(
    () =>
      (discord.messages.get(discord.channelId) ?? [])
        .map((m) => JSON.stringify(m.embeds))
        .find((text) => text.includes(`tx ${tx}`)),
    `the Discord alert of ${txnHash}`,
    timeoutMs,
  );
  return { telegram, discord: embed };
}

beforeAll(async () => {
  devnet = await startDevnet({ scale: 'small', heartbeatIntervalMs: 1_000, blockIntervalMs: 0 });
  cats = collectionNamed(devnet, 'Moon Cats');
  tg = await FakeTelegram.start();
  discord = await FakeDiscord.start();
  dataDir = await mkdtemp(join(tmpdir(), 'floorwatch-sale-context-'));
  bot = await startBot({
    env: {
      ...platformEnv(devnet),
      FLOORWATCH_DATA_DIR: dataDir,
      FLOORWATCH_WHALE_USD: `$${WHALE_USD}`,
      FLOORWATCH_LOG_LEVEL: 'info',
      ...tg.env,
      ...discord.env,
    },
    stdin: new PassThrough(),
    logDestination: join(dataDir, 'test.log'),
  });
  await askTelegram(tg, TG_CHAT, '/watch add moon cats sale', /Watching/);
  await askDiscord(discord, { name: 'watch', subcommand: 'add', options: { collection: 'moon cats', kinds: 'sale' } });
  // The rules reach the streams' plan (re-planned a second after a change).
  await sleep(1_500);
}, 120_000);

afterAll(() => endSuite({ bot, closing: [discord, tg, devnet], dataDir }));

describe('sale context', () => {
  it('GIVEN a token bought by a new collector WHEN they sell it on for more THEN the alert says how long they held it and their profit, the buyers are new, and the bigger sale is a whale', async () => {
    const tokenId = await listedToken(bot.platform, cats.address);
    const first = await listAndSell(tokenId, '1', ALICE);
    const bought = await alertsOf(first);
    expect(bought.telegram).toContain(`${shortAddress(ALICE)}</code> · new to the collection`);
    expect(bought.discord).toContain(`${shortAddress(ALICE)}\` · new to the collection`);
    // Whoever sold it first bought it before the bot began recording: no holding time, no profit.
    for (const text of [bought.telegram, bought.discord]) {
      expect(text).not.toMatch(/Held for|Profit|Loss|Whale/);
    }

    // The purchase is priced and recorded (every 2 s) before ALICE sells it on.
    await bot.alerts.settled();
    const resale = await listAndSell(tokenId, '3', BOB, ALICE);
    const { telegram, discord: embed } = await alertsOf(resale);
    expect(telegram).toMatch(/^<b>🐋 Whale · Sold: /);
    expect(telegram).toMatch(/<b>Held for<\/b> under a minute/);
    expect(telegram).toMatch(/<b>Profit<\/b> \+2 \w+ \(\+200%\)/);
    expect(telegram).toContain(`${shortAddress(BOB)}</code> · new to the collection`);
    expect(embed).toContain('"title":"🐋 Whale · Sold: ');
    expect(embed).toContain('{"name":"Held for","value":"under a minute","inline":true}');
    expect(embed).toMatch(/\{"name":"Profit","value":"\+2 \w+ \\\\\(\+200%\\\\\)","inline":true\}/);
    expect(embed).toContain(`${shortAddress(BOB)}\` · new to the collection`);
  }, 120_000);

  it('GIVEN a collector who already holds one WHEN they buy another THEN the alert says how many they now hold', async () => {
    const [tokenId] = (
      await bot.platform.indexer.getTokenBalancesByContract({
        network: 'devnet',
        filter: { contractAddresses: [cats.address], contractStatus: 'ALL' },
        omitMetadata: true,
        page: { pageSize: 50 },
      })
    ).balances
      .filter((b) => b.accountAddress.toLowerCase() !== BOB && b.tokenID !== undefined)
      .map((b) => b.tokenID as string);
    if (!tokenId) throw new Error('no token held by another wallet');
    const txnHash = await listAndSell(tokenId, '0.5', BOB);
    const { telegram, discord: embed } = await alertsOf(txnHash);
    expect(telegram).toContain(`${shortAddress(BOB)}</code> · now holds 2`);
    expect(embed).toContain(`${shortAddress(BOB)}\` · now holds 2`);
    expect(telegram).not.toContain('Whale');
  }, 120_000);

  it('GIVEN the platform failing every balance look-up WHEN a sale is mined THEN its alert still goes out, without the holdings', async () => {
    const tokenId = await listedToken(bot.platform, cats.address);
    await control('faults', { operation: 'GetTokenBalancesByContract', errorRate: 1 });
    try {
      const txnHash = await listAndSell(tokenId, '0.25', CAROL);
      const { telegram, discord: embed } = await alertsOf(txnHash);
      expect(telegram).toContain(`<code>${shortAddress(CAROL)}</code>`);
      expect(telegram).not.toMatch(/new to the collection|now holds/);
      expect(embed).toContain(`\`${shortAddress(CAROL)}\``);
      expect(embed).not.toMatch(/new to the collection|now holds/);
    } finally {
      await control('faults', undefined, 'DELETE');
    }
    // It was asked, and failed: said in the log.
    expect(await readFile(join(dataDir, 'test.log'), 'utf8')).toContain('could not read buyers’ balances');
  }, 120_000);

  it('GIVEN a balance look-up far slower than the budget WHEN a sale is mined THEN its alert does not wait for it', async () => {
    const tokenId = await listedToken(bot.platform, cats.address);
    await control('faults', { operation: 'GetTokenBalancesByContract', latencyMs: 12_000, times: 1 });
    try {
      const txnHash = await listAndSell(tokenId, '0.25', DAVE);
      // Well before the answer would come (the look-up gives up after 2 s).
      const { telegram } = await alertsOf(txnHash, 10_000);
      expect(telegram).toContain(`<code>${shortAddress(DAVE)}</code>`);
      expect(telegram).not.toMatch(/new to the collection|now holds/);
      // The look-up was made (the slow answer was spent on it), and is still on its way.
      expect(await control('faults', undefined, 'GET')).toEqual({
        faults: [{ operation: 'GetTokenBalancesByContract', latencyMs: 12_000, times: 0 }],
      });
    } finally {
      await control('faults', undefined, 'DELETE');
    }
  }, 120_000);
});
