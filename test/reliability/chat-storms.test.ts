import { join } from 'node:path';
import { REST } from 'discord.js';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ButtonCodec } from '../../src/bot/buttons.ts';
import { DiscordSink } from '../../src/chat/discord/adapter.ts';
import { DISCORD_LIMITS } from '../../src/chat/discord/render.ts';
import { startTelegram, type TelegramAdapter } from '../../src/chat/telegram/adapter.ts';
import type { NewDelivery } from '../../src/core/deliveries.ts';
import type { Reply } from '../../src/core/reply.ts';
import type { Destination } from '../../src/core/types.ts';
import { Dispatcher } from '../../src/delivery/dispatcher.ts';
import { encodePayload } from '../../src/delivery/sink.ts';
import { DeliveryJournal } from '../../src/store/files/journal/journal.ts';
import { FakeDiscord } from '../fakes/discord.ts';
import { FakeTelegram } from '../fakes/telegram.ts';
import { type Harness, startHarness } from '../helpers/bot-harness.ts';

/*
 * Issue 9: the chat platforms answer 429 storms and 5xx while alerts go out. Deliveries go through
 * the real DeliveryJournal and Dispatcher to the real Telegram sink (grammy, against the Bot API
 * stand-in) and the real Discord sink (@discordjs/rest, against the Discord stand-in). Every alert
 * arrives exactly once (told apart by its title): delayed by the storm, never lost, never doubled.
 *
 * Telegram's retry_after is in whole seconds and its pace is one message a second per chat, so the
 * Telegram part spreads 40 alerts over 8 chats; Discord merges a burst into messages of 10 embeds.
 */

const SENDS = ['sendMessage', 'sendPhoto'];
const TG_CHATS = Array.from({ length: 8 }, (_, i) => String(7_001 + i));
const TG_PER_CHAT = 5;
const DC_CHANNELS = Array.from({ length: 4 }, (_, i) => String(1_100_000_000_000_000_301n + BigInt(i)));
const DC_PER_CHANNEL = 15;
const GUILD = '1100000000000000100';

let h: Harness;
let tg: FakeTelegram;
let telegram: TelegramAdapter;
let discord: FakeDiscord;
let rest: REST;
let journal: DeliveryJournal;
let dispatcher: Dispatcher;
const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

/** A distinct alert: titles have one length, so none is a prefix of another. */
const titleOf = (platform: string, chat: string, n: number) =>
  `Storm ${platform} ${chat} #${String(n).padStart(3, '0')}`;

function deliveries(platform: Destination['platform'], chats: readonly string[], perChat: number): NewDelivery[] {
  return chats.flatMap((chatId, c) =>
    Array.from({ length: perChat }, (_, n) => {
      const reply: Reply = { title: titleOf(platform, chatId, n), lines: ['A storm test alert.'], tone: 'info' };
      return {
        eventId: `devnet:0x${platform}${c}${n}:0x0:listing`,
        destination: { platform, chatId },
        network: 'devnet',
        txnHash: `0x${c.toString(16)}${n.toString(16)}`,
        blockNumber: 1_000 + n,
        payload: encodePayload(reply),
      };
    }),
  );
}

/** Occurrences of each expected title among the texts the chat received. */
function tally(expected: readonly string[], received: readonly string[]) {
  const counts = new Map(expected.map((t) => [t, 0]));
  for (const text of received) {
    for (const match of text.matchAll(/Storm \w+ \d+ #\d{3}/g)) {
      const seen = counts.get(match[0]);
      if (seen !== undefined) counts.set(match[0], seen + 1);
    }
  }
  const values = [...counts.values()];
  return {
    delivered: values.filter((n) => n > 0).length,
    lost: values.filter((n) => n === 0).length,
    duplicated: values.reduce((sum, n) => sum + Math.max(0, n - 1), 0),
  };
}

async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

beforeAll(async () => {
  h = await startHarness({ blockIntervalMs: 0 });
  tg = await FakeTelegram.start();
  telegram = await startTelegram({
    config: { token: tg.token, apiRoot: tg.url, webhookUrl: undefined, webhookSecret: undefined, webhookPort: 0 },
    engine: h.engine,
    logger,
    botInfo: tg.botInfo(),
    groupIntervalMs: 50,
  });
  discord = await FakeDiscord.start({ guilds: [{ id: GUILD, name: 'Storm Guild', channels: DC_CHANNELS }] });
  rest = new REST({ api: discord.api, version: '10', retries: 3, timeout: 5_000 }).setToken(discord.token);
  journal = await DeliveryJournal.open(join(h.dataDir, 'deliveries.jsonl'), { fsync: false });
  dispatcher = new Dispatcher({
    journal,
    sinks: new Map([
      ['telegram' as const, telegram.sink],
      ['discord' as const, new DiscordSink(rest, new ButtonCodec(h.store, DISCORD_LIMITS.customId - 3))],
    ]),
    logger,
    retryDelayMs: 20,
    maxRetryDelayMs: 200,
  });
});

afterAll(async () => {
  await dispatcher?.stop();
  await journal?.close();
  await telegram?.stop();
  rest?.clearHashSweeper();
  rest?.clearHandlerSweeper();
  await tg?.close();
  await discord?.close();
  await h?.close();
});

describe('chat platforms in a 429 storm', () => {
  it(`GIVEN ${TG_CHATS.length * TG_PER_CHAT} Telegram and ${DC_CHANNELS.length * DC_PER_CHANNEL} Discord alerts WHEN the chat APIs answer 429s and 5xx THEN each arrives exactly once, later`, async () => {
    // Telegram: 3 storm-wide 429s, then per chat two 429s (retry_after 1 s) and two 502s. At most
    // 7 failures can hit one alert, under the dispatcher's 8 attempts.
    tg.fail(SENDS, { code: 429, description: 'Too Many Requests: retry after 1', retryAfter: 1 }, 3);
    for (const chatId of TG_CHATS) {
      tg.fail(SENDS, { code: 429, description: 'Too Many Requests: retry after 1', retryAfter: 1, chatId }, 2);
      tg.fail(SENDS, { code: 502, description: 'Bad Gateway', chatId }, 2);
    }
    // Discord: per channel three 429s (the REST client waits them out) and four 502s in a row (more
    // than its 3 retries: the dispatcher retries the send under the same nonce).
    for (const channel of DC_CHANNELS) {
      discord.rateLimit('POST', new RegExp(`^/channels/${channel}/messages$`), 300, 3);
      discord.fail('POST', new RegExp(`^/channels/${channel}/messages$`), 502, 4);
    }

    const tgFrom = tg.calls.length;
    const dcFrom = discord.calls.length;
    const started = Date.now();
    const news = [
      ...deliveries('telegram', TG_CHATS, TG_PER_CHAT),
      ...deliveries('discord', DC_CHANNELS, DC_PER_CHANNEL),
    ];
    dispatcher.enqueue(await journal.record(news));
    const total = news.length;
    await until(() => journal.stats().sent === total, 60_000, `${total} alerts sent (${journal.stats().sent} so far)`);
    await dispatcher.drained();
    const seconds = (Date.now() - started) / 1000;

    const tgCalls = tg.calls.slice(tgFrom).filter((c) => SENDS.includes(c.method));
    const tgTexts = [...tg.messages.values()].map((m) => m.text ?? m.caption ?? '');
    const tgExpected = TG_CHATS.flatMap((chat) =>
      Array.from({ length: TG_PER_CHAT }, (_, n) => titleOf('telegram', chat, n)),
    );
    const tgResult = tally(tgExpected, tgTexts);

    const dcCalls = discord.calls
      .slice(dcFrom)
      .filter((c) => c.method === 'POST' && /\/channels\/\d+\/messages$/.test(c.path));
    const dcMessages = DC_CHANNELS.flatMap((channel) => discord.messages.get(channel) ?? []);
    const dcTexts = dcMessages.flatMap((m) => (m.embeds as Array<{ title?: string }>).map((e) => e.title ?? ''));
    const dcExpected = DC_CHANNELS.flatMap((chat) =>
      Array.from({ length: DC_PER_CHANNEL }, (_, n) => titleOf('discord', chat, n)),
    );
    const dcResult = tally(dcExpected, dcTexts);

    const count = (calls: Array<{ status: number }>, status: number) => calls.filter((c) => c.status === status).length;
    console.log(
      `chat storms: telegram ${tgExpected.length} alerts to ${TG_CHATS.length} chats, ${tgCalls.length} sends ` +
        `(429: ${count(tgCalls, 429)}, 502: ${count(tgCalls, 502)}), ${tgResult.delivered} delivered, ` +
        `${tgResult.lost} lost, ${tgResult.duplicated} duplicated; discord ${dcExpected.length} alerts to ` +
        `${DC_CHANNELS.length} channels in ${dcMessages.length} messages, ${dcCalls.length} posts ` +
        `(429: ${count(dcCalls, 429)}, 502: ${count(dcCalls, 502)}), ${dcResult.delivered} delivered, ` +
        `${dcResult.lost} lost, ${dcResult.duplicated} duplicated; all sent in ${seconds.toFixed(1)} s`,
    );

    expect(tgResult).toEqual({ delivered: tgExpected.length, lost: 0, duplicated: 0 });
    expect(dcResult).toEqual({ delivered: dcExpected.length, lost: 0, duplicated: 0 });
    expect(count(tgCalls, 429)).toBe(3 + 2 * TG_CHATS.length);
    expect(count(tgCalls, 502)).toBe(2 * TG_CHATS.length);
    expect(count(dcCalls, 429)).toBe(3 * DC_CHANNELS.length);
    expect(count(dcCalls, 502)).toBe(4 * DC_CHANNELS.length);
    // Delayed, as asked: no chat got a message within a second of being told to wait.
    for (const chatId of TG_CHATS) {
      const calls = tgCalls.filter((c) => String(c.params.chat_id) === chatId);
      const limited = calls.find((c) => c.status === 429);
      const after = calls.find((c) => c.status === 200 && limited && c.at > limited.at);
      expect(limited, chatId).toBeDefined();
      expect((after?.at ?? 0) - (limited?.at ?? 0), chatId).toBeGreaterThanOrEqual(950);
    }
    // Discord merged each channel's burst: two messages of at most 10 embeds per channel.
    expect(dcMessages).toHaveLength(DC_CHANNELS.length * Math.ceil(DC_PER_CHANNEL / DISCORD_LIMITS.embedsPerMessage));
    expect(journal.stats()).toMatchObject({ records: total, sent: total, pending: 0, sending: 0, failed: 0 });
  }, 90_000);
});
