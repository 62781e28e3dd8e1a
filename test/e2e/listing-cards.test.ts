import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Devnet, type DevnetCollectionInfo, startDevnet } from '../../src/devnet/index.ts';
import { type RunningBot, startBot } from '../../src/main.ts';
import { FakeDiscord } from '../fakes/discord.ts';
import { FakeTelegram, type StoredMessage } from '../fakes/telegram.ts';
import { askDiscord, askTelegram } from '../helpers/chat-commands.ts';
import { collectionNamed, mineBlock, platformEnv } from '../helpers/devnet-data.ts';
import { endSuite } from '../helpers/suite-end.ts';
import { sleep, until } from '../helpers/waiting.ts';

/*
 * Listing cards that follow the token, end to end: the bot (src/main.ts) against a local platform
 * whose blocks are mined through its control API over HTTP; listing alerts read, and their edits
 * seen, through the real grammY and discord.js clients against their stand-ins. A listing alert is
 * edited to SOLD, CANCELLED or EXPIRED once; a reorganised sale opens it again; a reversed alert
 * loses its transaction link; an edit the chat refused before a restart is made after it.
 */

let devnet: Devnet;
let cats: DevnetCollectionInfo;
let tg: FakeTelegram;
let discord: FakeDiscord;
let bot: RunningBot;
let dataDir: string;

const TG_CHAT = 602;
const EXPLORER = 'http://explorer.test/tx/';

/** Mines one block through the platform's control API. */
const mine = (activity: Array<Record<string, unknown>>) => mineBlock(devnet, activity);

function env(): Record<string, string> {
  return {
    ...platformEnv(devnet),
    FLOORWATCH_DATA_DIR: dataDir,
    FLOORWATCH_TOKEN_URL: `${devnet.url}/market/{network}/{collection}/{tokenId}`,
    FLOORWATCH_EXPLORER_URLS: `devnet=${EXPLORER}{txnHash}`,
    FLOORWATCH_LISTING_EXPIRY_CHECK_SECONDS: '1',
    FLOORWATCH_LOG_LEVEL: 'info',
    ...tg.env,
    ...discord.env,
  };
}

async function startTheBot(): Promise<RunningBot> {
  return startBot({ env: env(), stdin: new PassThrough(), logDestination: join(dataDir, 'test.log') });
}

/** The Telegram message (as the chat holds it now) whose text or caption holds `needle`. */
function telegramMessage(needle: string): StoredMessage | undefined {
  return [...tg.messages.values()].find(
    (m) => m.chat.id === TG_CHAT && (m.caption ?? m.text ?? '').includes(needle) && m.message_id > 0,
  );
}
const telegramText = (m: StoredMessage) => m.caption ?? m.text ?? '';
/** Edits of a Telegram message. */
const telegramEdits = (m: StoredMessage) =>
  tg.calls.filter(
    (c) =>
      /^editMessage(Text|Caption)$/.test(c.method) &&
      String(c.params.chat_id) === String(TG_CHAT) &&
      Number(c.params.message_id) === m.message_id &&
      c.status === 200,
  ).length;

/** The Discord alert (as the channel holds it now) whose embeds hold `needle`. */
function discordMessage(needle: string) {
  return (discord.messages.get(discord.channelId) ?? []).find((m) => JSON.stringify(m.embeds).includes(needle));
}
const discordEdits = (id: string) =>
  discord.calls.filter((c) => c.method === 'PATCH' && c.path.endsWith(`/channels/${discord.channelId}/messages/${id}`))
    .length;

/** Lists a token; resolves once both chats show its alert, with the listing's order and token. */
async function listed(price: string, extra: Record<string, unknown> = {}) {
  const mined = await mine([{ kind: 'listing', collection: cats.address, price, currency: 'DEV', ...extra }]);
  const txn = mined.transactions[0];
  if (!txn?.orderIds[0] || !txn.tokenIds[0]) throw new Error('no listing mined');
  const needle = `for ${price} `;
  const tgAlert = await until(() => telegramMessage(needle), `the Telegram alert of the listing at ${price}`);
  const dcAlert = await until(() => discordMessage(needle), `the Discord alert of the listing at ${price}`);
  expect(telegramText(tgAlert)).toContain('Buy on');
  expect(JSON.stringify(dcAlert.embeds)).toContain('Buy on');
  return { orderId: txn.orderIds[0], tokenId: txn.tokenIds[0], txnHash: txn.txnHash, needle, tgAlert, dcAlert };
}

beforeAll(async () => {
  devnet = await startDevnet({ scale: 'small', heartbeatIntervalMs: 1_000, blockIntervalMs: 0 });
  cats = collectionNamed(devnet, 'Moon Cats');
  tg = await FakeTelegram.start();
  discord = await FakeDiscord.start();
  dataDir = await mkdtemp(join(tmpdir(), 'floorwatch-cards-'));
  bot = await startTheBot();
  await askTelegram(tg, TG_CHAT, '/watch add moon cats listing', /Watching/);
  const rule = { collection: 'moon cats', kinds: 'listing' };
  await askDiscord(discord, { name: 'watch', subcommand: 'add', options: rule }, /Watching/);
  // The streams are open once a listing is alerted (a first start begins at the head).
  let warm = 0;
  await until(async () => {
    const price = `1.${++warm}09`;
    await mine([{ kind: 'listing', collection: cats.address, price, currency: 'DEV' }]);
    await sleep(400);
    return telegramMessage(`for ${price} `) ? true : undefined;
  }, 'the streams');
}, 120_000);

afterAll(() => endSuite({ bot, closing: [discord, tg, devnet], dataDir }));

describe('listing cards that follow the token', () => {
  it('GIVEN a listing alert on Telegram and Discord WHEN the listing is bought THEN both messages are edited once to SOLD with price, buyer and transaction, keep the card and lose the Buy link', async () => {
    const listing = await listed('3.31');
    const sale = await mine([{ kind: 'sale', orderId: listing.orderId }]);
    const saleTxn = sale.transactions[0];
    if (!saleTxn) throw new Error('no sale mined');
    const tgCard = await until(() => {
      const m = telegramMessage(listing.needle);
      return m && telegramText(m).includes('SOLD') ? m : undefined;
    }, 'the Telegram card edited to SOLD');
    const text = telegramText(tgCard);
    expect(text).toMatch(/SOLD · Listed: .* for 3\.31 /);
    expect(text).toContain('Sold for 3.31 ');
    // The buyer sent the sale's transaction.
    expect(text).toContain(`to <code>${saleTxn.from.toLowerCase().slice(0, 6)}`);
    expect(text).toContain(`${EXPLORER}${saleTxn.txnHash}`);
    expect(text).not.toContain('Buy on');
    expect(tgCard.photo).toBeDefined();

    const dcCard = await until(() => {
      const m = discordMessage(listing.needle);
      return m && JSON.stringify(m.embeds).includes('SOLD') ? m : undefined;
    }, 'the Discord card edited to SOLD');
    const embeds = JSON.stringify(dcCard.embeds);
    expect(embeds).toContain('SOLD · Listed:');
    expect(embeds).toContain('Sold for 3.31 ');
    expect(embeds).toContain(`${EXPLORER}${saleTxn.txnHash}`);
    expect(embeds).not.toContain('Buy on');
    expect(embeds).toContain('"image"');

    await bot.alerts.settled();
    await sleep(1_500);
    expect(telegramEdits(tgCard)).toBe(1);
    expect(discordEdits(dcCard.id)).toBe(1);
  }, 90_000);

  it('GIVEN a listing alert WHEN its seller sells the token through another order (an offer accepted) THEN the card says SOLD too', async () => {
    const listing = await listed('3.38');
    const offer = await mine([
      { kind: 'offer', collection: cats.address, tokenId: listing.tokenId, price: '0.5', currency: 'WDEV' },
    ]);
    const offerId = offer.transactions[0]?.orderIds[0];
    if (!offerId) throw new Error('no offer mined');
    await mine([{ kind: 'sale', orderId: offerId }]);
    const tgCard = await until(() => {
      const m = telegramMessage(listing.needle);
      return m && telegramText(m).includes('SOLD') ? m : undefined;
    }, 'the Telegram card edited to SOLD');
    // Not through its own order: the listing's price is not what was paid, and no rule priced the sale.
    expect(telegramText(tgCard)).not.toContain('Sold for 3.38');
    expect(telegramText(tgCard)).toMatch(/Sold to <code>0x/);
  }, 90_000);

  it('GIVEN a listing alert WHEN the listing is cancelled THEN both messages say CANCELLED, once, without the Buy link', async () => {
    const listing = await listed('3.32');
    await mine([{ kind: 'cancel', collection: cats.address, orderId: listing.orderId }]);
    const tgCard = await until(() => {
      const m = telegramMessage(listing.needle);
      return m && telegramText(m).includes('CANCELLED') ? m : undefined;
    }, 'the Telegram card edited to CANCELLED');
    expect(telegramText(tgCard)).toContain('The seller cancelled this listing');
    expect(telegramText(tgCard)).not.toContain('Buy on');
    const dcCard = await until(() => {
      const m = discordMessage(listing.needle);
      return m && JSON.stringify(m.embeds).includes('CANCELLED') ? m : undefined;
    }, 'the Discord card edited to CANCELLED');
    expect(JSON.stringify(dcCard.embeds)).not.toContain('Buy on');
    await sleep(1_500);
    expect(telegramEdits(tgCard)).toBe(1);
    expect(discordEdits(dcCard.id)).toBe(1);
  }, 90_000);

  it('GIVEN a listing alert WHEN the listing expires THEN both messages say EXPIRED, once', async () => {
    const listing = await listed('3.33', { expiresIn: 2 });
    const tgCard = await until(() => {
      const m = telegramMessage(listing.needle);
      return m && telegramText(m).includes('EXPIRED') ? m : undefined;
    }, 'the Telegram card edited to EXPIRED');
    expect(telegramText(tgCard)).toContain('This listing expired');
    expect(telegramText(tgCard)).not.toContain('Buy on');
    const dcCard = await until(() => {
      const m = discordMessage(listing.needle);
      return m && JSON.stringify(m.embeds).includes('EXPIRED') ? m : undefined;
    }, 'the Discord card edited to EXPIRED');
    await sleep(2_500);
    expect(telegramEdits(tgCard)).toBe(1);
    expect(discordEdits(dcCard.id)).toBe(1);
  }, 90_000);

  it('GIVEN a card edited to SOLD WHEN the sale is reorganised away THEN the card shows the listing again, says the sale was reversed and has its Buy link back', async () => {
    const listing = await listed('3.34');
    const sale = await mine([{ kind: 'sale', orderId: listing.orderId }]);
    await until(() => {
      const m = telegramMessage(listing.needle);
      return m && telegramText(m).includes('SOLD') ? m : undefined;
    }, 'the card edited to SOLD');
    await devnet.reorg('devnet', 1);
    const tgCard = await until(() => {
      const m = telegramMessage(listing.needle);
      return m && telegramText(m).includes('was reversed') ? m : undefined;
    }, 'the Telegram card edited back');
    const text = telegramText(tgCard);
    expect(text).not.toContain('SOLD');
    expect(text).toContain('Buy on');
    expect(text).not.toContain(`${EXPLORER}${sale.transactions[0]?.txnHash}`);
    const dcCard = await until(() => {
      const m = discordMessage(listing.needle);
      return m && JSON.stringify(m.embeds).includes('was reversed') ? m : undefined;
    }, 'the Discord card edited back');
    expect(JSON.stringify(dcCard.embeds)).not.toContain('SOLD');
    expect(JSON.stringify(dcCard.embeds)).toContain('Buy on');
  }, 90_000);

  it('GIVEN a listing alert WHEN its own block is reorganised away THEN the reversed message links no transaction page (nor a Buy page) on Telegram and Discord', async () => {
    const listing = await listed('3.35');
    expect(telegramText(listing.tgAlert)).toContain(`${EXPLORER}${listing.txnHash}`);
    expect(JSON.stringify(listing.dcAlert.embeds)).toContain(`${EXPLORER}${listing.txnHash}`);
    await devnet.reorg('devnet', 1);
    const tgCard = await until(() => {
      const m = telegramMessage(listing.needle);
      return m && telegramText(m).includes('Reversed') ? m : undefined;
    }, 'the reversed Telegram alert');
    expect(telegramText(tgCard)).not.toContain(EXPLORER);
    expect(telegramText(tgCard)).not.toContain('Buy on');
    const dcCard = await until(() => {
      const m = discordMessage(listing.needle);
      return m && JSON.stringify(m.embeds).includes('Reversed') ? m : undefined;
    }, 'the reversed Discord alert');
    expect(JSON.stringify(dcCard.embeds)).not.toContain(EXPLORER);
  }, 90_000);

  it('GIVEN two listings merged into one Discord message WHEN one sells and the other is cancelled THEN each part of the message says its own state', async () => {
    // The chat's lane is busy (its send waits out a 429): the next two alerts queue and go out merged.
    discord.rateLimit('POST', new RegExp(`/channels/${discord.channelId}/messages$`), 1_500);
    await mine([{ kind: 'listing', collection: cats.address, price: '3.371', currency: 'DEV' }]);
    const both = await mine([
      { kind: 'listing', collection: cats.address, price: '3.372', currency: 'DEV' },
      { kind: 'listing', collection: cats.address, price: '3.373', currency: 'DEV' },
    ]);
    const [first, second] = both.transactions;
    if (!first?.orderIds[0] || !second?.orderIds[0]) throw new Error('no listings mined');
    const merged = await until(() => {
      const m = discordMessage('for 3.372 ');
      return m && JSON.stringify(m.embeds).includes('for 3.373 ') ? m : undefined;
    }, 'the merged Discord message');
    expect(merged.embeds).toHaveLength(2);
    await mine([{ kind: 'sale', orderId: first.orderIds[0] }]);
    await until(() => {
      const m = discordMessage('for 3.372 ');
      return m && JSON.stringify(m.embeds?.[0]).includes('SOLD') ? m : undefined;
    }, 'the first part edited to SOLD');
    const afterSale = discordMessage('for 3.372 ');
    expect(JSON.stringify(afterSale?.embeds?.[1])).not.toMatch(/SOLD|CANCELLED/);
    expect(JSON.stringify(afterSale?.embeds?.[1])).toContain('Buy on');
    await mine([{ kind: 'cancel', collection: cats.address, orderId: second.orderIds[0] }]);
    const edited = await until(() => {
      const m = discordMessage('for 3.372 ');
      return m && JSON.stringify(m.embeds?.[1]).includes('CANCELLED') ? m : undefined;
    }, 'the second part edited to CANCELLED');
    expect(JSON.stringify(edited.embeds?.[0])).toContain('SOLD');
    expect(JSON.stringify(edited.embeds)).not.toContain('Buy on');
    await sleep(1_500);
    expect(discordEdits(edited.id)).toBe(2);
  }, 90_000);

  it('GIVEN a listing of 3 ERC-1155 units WHEN one sells through it and its seller sells another through an offer THEN the card stays a listing; WHEN the last 2 sell THEN it says SOLD', async () => {
    const potions = collectionNamed(devnet, 'Pixel Potions');
    await askTelegram(tg, TG_CHAT, '/watch add pixel potions listing,sale', /Watching/);
    const { balances } = await bot.platform.indexer.getTokenBalancesByContract({
      network: 'devnet',
      filter: { contractAddresses: [potions.address], contractStatus: 'ALL' },
    });
    const holding = balances.find((b) => BigInt(b.balance) >= 4n);
    if (!holding) throw new Error('no wallet holds 4 units of a Pixel Potions token');
    const seller = holding.accountAddress;
    const token = { collection: potions.address, tokenId: holding.tokenID };
    const listing = await mine([
      { kind: 'listing', ...token, from: seller, quantity: '3', price: '2.47', currency: 'DEV' },
    ]);
    const orderId = listing.transactions[0]?.orderIds[0];
    if (!orderId) throw new Error('no listing mined');
    // The card shows what the listing asks for all its units.
    const needle = '×3 for 7.41 ';
    const card = await until(() => telegramMessage(needle), 'the Telegram alert of the 3 units');
    /** Mines a sale and waits for its own alert, so that the bot has read it. */
    const sold = async (spec: Record<string, unknown>) => {
      const mined = await mine([{ kind: 'sale', ...spec }]);
      const txnHash = mined.transactions[0]?.txnHash ?? '';
      await until(() => telegramMessage(`${EXPLORER}${txnHash}`), `the alert of sale ${txnHash}`);
      await bot.alerts.settled();
    };

    await sold({ orderId, quantity: '1' });
    const offer = await mine([{ kind: 'offer', ...token, quantity: '1', price: '0.5', currency: 'WDEV' }]);
    const offerId = offer.transactions[0]?.orderIds[0];
    if (!offerId) throw new Error('no offer mined');
    await sold({ orderId: offerId, from: seller, quantity: '1' });
    await sleep(1_500);
    expect(telegramText(telegramMessage(needle) ?? card)).not.toContain('SOLD');
    expect(telegramEdits(card)).toBe(0);

    await sold({ orderId, quantity: '2' });
    const closed = await until(() => {
      const m = telegramMessage(needle);
      return m && telegramText(m).includes('SOLD') ? m : undefined;
    }, 'the card of the 3 units edited to SOLD');
    expect(telegramText(closed)).not.toContain('Buy on');
    await sleep(1_000);
    expect(telegramEdits(closed)).toBe(1);
  }, 90_000);

  it('GIVEN a sold listing whose edit Telegram refused (429) WHEN the bot restarts THEN the edit is made after the restart, once', async () => {
    const listing = await listed('3.36');
    tg.fail(['editMessageCaption', 'editMessageText'], {
      code: 429,
      description: 'Too Many Requests',
      retryAfter: 120,
    });
    await mine([{ kind: 'sale', orderId: listing.orderId }]);
    await until(
      () => tg.calls.some((c) => /^editMessage/.test(c.method) && c.status === 429) || undefined,
      'the refused edit',
    );
    await until(() => {
      const m = discordMessage(listing.needle);
      return m && JSON.stringify(m.embeds).includes('SOLD') ? m : undefined;
    }, 'the Discord card edited to SOLD');
    expect(telegramText(listing.tgAlert)).not.toContain('SOLD');
    await bot.stop();
    bot = await startTheBot();
    const tgCard = await until(() => {
      const m = telegramMessage(listing.needle);
      return m && telegramText(m).includes('SOLD') ? m : undefined;
    }, 'the Telegram card edited to SOLD after the restart');
    expect(telegramText(tgCard)).toContain('Sold for 3.36 ');
    await sleep(1_500);
    expect(telegramEdits(tgCard)).toBe(1);
    expect(discordEdits(discordMessage(listing.needle)?.id ?? '')).toBe(1);
  }, 120_000);
});
