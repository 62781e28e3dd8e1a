import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Devnet, type DevnetCollectionInfo, startDevnet } from '../../src/devnet/index.ts';
import { type RunningBot, startBot } from '../../src/main.ts';
import { FakeDiscord } from '../fakes/discord.ts';
import { FakeTelegram } from '../fakes/telegram.ts';
import { askDiscord, askTelegram } from '../helpers/chat-commands.ts';
import { collectionNamed, mineBlock, platformEnv } from '../helpers/devnet-data.ts';
import { endSuite } from '../helpers/suite-end.ts';
import { sleep, until } from '../helpers/waiting.ts';

/*
 * Floor and best-offer alerts end to end: the bot (src/main.ts) against a local platform started
 * apart, whose blocks are mined through its control API over HTTP; rules set and alerts read
 * through the real discord.js and grammY clients against their stand-ins.
 */

let devnet: Devnet;
let cats: DevnetCollectionInfo;
let tg: FakeTelegram;
let discord: FakeDiscord;
let bot: RunningBot;
let dataDir: string;

const TG_CHAT = 601;

/** Mines one block through the platform's control API. */
const mine = (activity: Array<Record<string, unknown>>) => mineBlock(devnet, activity);

/** The collection's cheapest listing and best offer as the platform has them, with their currencies. */
async function levels(): Promise<{
  floor: number;
  floorToken: string;
  currency: string;
  top: number;
  offerCurrency: string;
}> {
  const read = async (side: 'listing' | 'offer') =>
    (
      await bot.platform.marketplace.listCollectibles({
        network: 'devnet',
        side,
        contractAddress: cats.address,
        filter: { includeEmpty: false },
        page: { pageSize: 50 },
      })
    ).collectibles.flatMap((c) => (c.order ? [{ order: c.order, tokenId: c.metadata.tokenId }] : []));
  const listings = (await read('listing')).sort((a, b) => a.order.priceUSD - b.order.priceUSD);
  const offers = (await read('offer')).sort((a, b) => b.order.priceUSD - a.order.priceUSD);
  const first = listings[0];
  if (!first) throw new Error('nothing listed');
  return {
    floor: Number(first.order.priceAmountFormatted),
    floorToken: first.tokenId,
    currency: first.order.priceCurrencyAddress,
    offerCurrency: offers[0]?.order.priceCurrencyAddress ?? 'WDEV',
    top: Number(offers[0]?.order.priceAmountFormatted ?? 0),
  };
}

/** Telegram messages to the chat whose text matches. */
const telegramTexts = (pattern: RegExp) =>
  tg.calls
    .filter((c) => /^send(Message|Photo)$/.test(c.method) && String(c.params.chat_id) === String(TG_CHAT))
    .map((c) => String(c.params.text ?? c.params.caption ?? ''))
    .filter((text) => pattern.test(text));

/** Discord messages in the guild's first channel whose embed matches. */
const discordEmbeds = (pattern: RegExp) =>
  (discord.messages.get(discord.channelId) ?? [])
    .map((m) => JSON.stringify(m.embeds))
    .filter((text) => pattern.test(text));

const telegramCommand = (text: string, answered: RegExp) => askTelegram(tg, TG_CHAT, text, answered);
const discordCommand = (subcommand: string, options: Record<string, string>) =>
  askDiscord(discord, { name: 'watch', subcommand, options });

beforeAll(async () => {
  devnet = await startDevnet({ scale: 'small', heartbeatIntervalMs: 1_000, blockIntervalMs: 0 });
  cats = collectionNamed(devnet, 'Moon Cats');
  tg = await FakeTelegram.start();
  discord = await FakeDiscord.start();
  dataDir = await mkdtemp(join(tmpdir(), 'floorwatch-moves-'));
  bot = await startBot({
    env: {
      ...platformEnv(devnet),
      FLOORWATCH_DATA_DIR: dataDir,
      FLOORWATCH_TOKEN_URL: `${devnet.url}/market/{network}/{collection}/{tokenId}`,
      FLOORWATCH_LOG_LEVEL: 'info',
      ...tg.env,
      ...discord.env,
    },
    stdin: new PassThrough(),
    logDestination: join(dataDir, 'test.log'),
  });
}, 120_000);

afterAll(() => endSuite({ bot, closing: [discord, tg, devnet], dataDir }));

describe('floor and best-offer alerts', () => {
  it('GIVEN floor rules on Telegram (a line) and Discord (a change) WHEN a cheaper listing is cancelled before the look-up THEN nobody is alerted; WHEN the floor really falls THEN both chats get old -> new with the Buy link; a further fall within the cooldown alerts nobody until it has passed', async () => {
    const start = await levels();
    const line = (start.floor * 0.8).toFixed(4);
    const added = await telegramCommand(`/watch add moon cats floor below=${line} every=1h`, /Watching/);
    expect(added).toContain(`Floor of Moon Cats (devnet) when it falls below ${line}`);
    const onDiscord = await discordCommand('add', { collection: 'moon cats', kinds: 'floor', change: '10%' });
    expect(onDiscord).toContain('when it moves 10%');
    expect(onDiscord).toContain('at most every 1h');

    // A stale floor: listed far under the floor and cancelled at once; the look-up sees the old floor.
    const cheap = (start.floor * 0.5).toFixed(4);
    const tokenId = start.floorToken;
    const listed = await mine([
      { kind: 'listing', collection: cats.address, tokenId, price: cheap, currency: start.currency },
    ]);
    const orderId = listed.transactions[0]?.orderIds[0];
    await mine([{ kind: 'cancel', collection: cats.address, orderId }]);
    await until(() => (bot.alerts.status().moves.refused > 0 ? true : undefined), 'the refused move');
    await bot.alerts.settled();
    expect(telegramTexts(/Floor of Moon Cats (fell|rose)/)).toEqual([]);
    expect(discordEmbeds(/Floor of Moon Cats (fell|rose)/)).toEqual([]);

    // The floor falls for real: both rules alert once, with the listing that sets the new floor.
    const low = (start.floor * 0.5).toFixed(4);
    await mine([{ kind: 'listing', collection: cats.address, tokenId, price: low, currency: start.currency }]);
    const [tgAlert] = await until(() => {
      const found = telegramTexts(/Floor of Moon Cats fell below/);
      return found.length ? found : undefined;
    }, 'the Telegram floor alert');
    expect(tgAlert).toContain(`→ ${Number(low)}`);
    expect(tgAlert).toMatch(/Change.*-\d+(\.\d)?%/s);
    expect(tgAlert).toContain(`#${tokenId}`);
    expect(tgAlert).toContain('Buy on');
    const [dcAlert] = await until(() => {
      const found = discordEmbeds(/Floor of Moon Cats fell \d+%/);
      return found.length ? found : undefined;
    }, 'the Discord floor alert');
    expect(dcAlert).toContain('Buy on');
    expect(dcAlert).toContain(`/market/devnet/${cats.address}/${tokenId}`);

    // Lower again within the hour: the line is already crossed, the change rule waits for its cooldown.
    const lower = (start.floor * 0.3).toFixed(4);
    await bot.alerts.settled();
    const checks = bot.alerts.status().moves.checks;
    await mine([{ kind: 'listing', collection: cats.address, tokenId, price: lower, currency: start.currency }]);
    await until(() => (bot.alerts.status().moves.checks > checks ? true : undefined), 'the next look-up');
    await bot.alerts.settled();
    expect(telegramTexts(/Floor of Moon Cats (fell|rose)/)).toHaveLength(1);
    expect(discordEmbeds(/Floor of Moon Cats (fell|rose)/)).toHaveLength(1);

    // The hour has passed (the rule's last alert moved back): the next move of the floor alerts, from the last alerted level.
    const chatKey = `discord:${discord.channelId}`;
    const [rule] = (await bot.store.rulesOf(chatKey)).filter((r) => r.move);
    if (!rule?.move) throw new Error('no Discord floor rule');
    const lastAlertAt = new Date(Date.now() - 2 * 3_600_000).toISOString();
    await bot.store.updateRule(rule.id, (r) => (r.move ? { ...r, move: { ...r.move, lastAlertAt } } : r));
    const lowest = (start.floor * 0.25).toFixed(4);
    await mine([{ kind: 'listing', collection: cats.address, tokenId, price: lowest, currency: start.currency }]);
    const second = await until(() => {
      const found = discordEmbeds(/Floor of Moon Cats fell \d+%/);
      return found.length === 2 ? found[1] : undefined;
    }, 'the Discord alert after the cooldown');
    expect(second).toContain(`${Number(low)} → ${Number(lowest)}`);
    await bot.alerts.settled();
    expect(telegramTexts(/Floor of Moon Cats (fell|rose)/)).toHaveLength(1);

    // /watch list shows the rules readably; /watch test shows a sample of a floor rule.
    const listed2 = await telegramCommand('/watch list', /Alert rules/);
    expect(listed2).toContain(
      `Floor of Moon Cats (devnet) when it falls below ${line}, from ${Number(low)} (last alert), at most every 1h`,
    );
    const id = /(r\d+)/.exec(listed2)?.[1];
    const sample = await telegramCommand(`/watch test ${id}`, /\[Sample\] Floor of Moon Cats/);
    expect(sample).toContain(`→ ${Number(lowest)}`);
  }, 180_000);

  it('GIVEN an offer-top rule WHEN a higher offer than the line is mined THEN the chat is told the best offer rose above it, once', async () => {
    const { top, offerCurrency } = await levels();
    const line = (Math.max(top, 0.01) * 1.5).toFixed(4);
    const added = await telegramCommand(`/watch add moon cats offer-top above=${line}`, /Watching/);
    expect(added).toContain(`Best offer of Moon Cats (devnet) when it rises above ${line}`);
    const high = (Math.max(top, 0.01) * 2).toFixed(4);
    await mine([{ kind: 'offer', collection: cats.address, price: high, currency: offerCurrency }]);
    const [alert] = await until(() => {
      const found = telegramTexts(/Best offer of Moon Cats rose above/);
      return found.length ? found : undefined;
    }, 'the best-offer alert');
    expect(alert).toContain(`→ ${Number(high)} WDEV`);
    await mine([
      { kind: 'offer', collection: cats.address, price: (Number(high) * 2).toFixed(4), currency: offerCurrency },
    ]);
    await sleep(1_500);
    await bot.alerts.settled();
    expect(telegramTexts(/Best offer of Moon Cats (fell|rose)/)).toHaveLength(1);
  }, 120_000);

  it('refuses move options on event rules and event filters on move rules, with a clear message', async () => {
    expect(await telegramCommand('/watch add moon cats sale change=10%', /kinds/)).toMatch(/floor|offer-top/);
    expect(await telegramCommand('/watch add moon cats floor min=1', /follows the level alone/)).toContain(
      'without min=',
    );
    expect(await telegramCommand('/watch add moon cats floor every=10s', /every/)).toMatch(/between 1m and 7d/);
  }, 60_000);
});
