/**
 * One sale watched by many chats, delivered through the real path against the stand-ins with their
 * real limits: the sale's deliveries (one payload shared by all chats, as the pipeline records an
 * event) go through the DeliveryRecorder into the fsync'd DeliveryJournal, the Dispatcher's lanes,
 * and the real sinks: grammy (createBot, with its global pacer) against FakeTelegram keeping
 * Telegram's flood limits, and discord.js's REST (restOptions, with its global limit) against
 * FakeDiscord keeping Discord's global and per-channel limits. Shared by the fan-out test (a few
 * hundred chats) and bench/fanout-rate.ts (2,000 chats a platform), which prints the figures.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REST } from 'discord.js';
import pino from 'pino';
import { ButtonCodec } from '../../src/bot/buttons.ts';
import { DISCORD_GLOBAL_REQUESTS_PER_SECOND, DiscordSink, restOptions } from '../../src/chat/discord/adapter.ts';
import { DISCORD_LIMITS } from '../../src/chat/discord/render.ts';
import { IMAGES_BY_URL, type ImageSource } from '../../src/chat/images/images.ts';
import { createBot } from '../../src/chat/telegram/bot.ts';
import { TelegramOutbox } from '../../src/chat/telegram/outbox.ts';
import { TelegramSink } from '../../src/chat/telegram/sink.ts';
import type { NewDelivery } from '../../src/core/deliveries.ts';
import type { Reply } from '../../src/core/reply.ts';
import type { Destination } from '../../src/core/types.ts';
import { Dispatcher } from '../../src/delivery/dispatcher.ts';
import { RatePacer } from '../../src/delivery/pacer.ts';
import { DeliveryRecorder } from '../../src/delivery/recording.ts';
import { type AlertSink, encodePayload } from '../../src/delivery/sink.ts';
import { DeliveryJournal } from '../../src/store/files/journal/journal.ts';
import { StateStore } from '../../src/store/files/state.ts';
import { DISCORD_RATE_LIMITS, FakeDiscord } from '../fakes/discord.ts';
import { FakeTelegram, TELEGRAM_FLOOD_LIMITS } from '../fakes/telegram.ts';

export interface FanoutOptions {
  telegramChats: number;
  discordChannels: number;
  /** Sales, one after the other, each watched by every chat. */
  sales: number;
  /** Every n-th Telegram chat is a group (20 messages a minute); the others are private chats. */
  groupEvery?: number;
  /** The journal's fsync (on, as in production, by default). */
  fsync?: boolean;
  /** Gives up waiting for the messages after this long. */
  timeoutMs: number;
}

/** What one platform's chats got. */
export interface PlatformFigures {
  platform: Destination['platform'];
  chats: number;
  /** Messages the chats got (a Discord message may carry several sales). */
  messages: number;
  /** Sales that arrived, over all chats (expected: chats x sales). */
  delivered: number;
  /** From the first message to the last, in seconds. */
  seconds: number;
  /**
   * Messages a second in steady state: those that started before the run's last second, over the
   * time from the first to that point. (messages - 1) / seconds would count the last burst of a
   * client that sends a second's worth at once (discord.js) as if it took no time.
   */
  perSecond: number;
  /** The platform's global limit, in messages (requests) a second. */
  ceiling: number;
  /** 429s the stand-in answered, and how many chats got more than one. */
  refusals: number;
  chatsRefusedTwice: number;
  globalRefusals: number;
  /** The limits that refused: bot, chat or group (Telegram), global or route (Discord). */
  refusedScopes: string[];
  /** Chats whose sales did not arrive in order, or arrived twice. */
  outOfOrder: number;
  duplicated: number;
  /** Time between two messages in a row, ms: p50, p99 and the longest. */
  gapMs: { p50: number; p99: number; max: number };
  /** Calls to the image source: once per alert and platform (twice on Telegram: private chats and groups). */
  imageLookups: number;
}

const SALE = /Sale #(\d+) of Moon Cat/g;
const GUILD = '1100000000000000100';

/** The sale's alert, as the pipeline renders it (one Reply for all its chats). */
function saleReply(n: number): Reply {
  return {
    title: `Sale #${n} of Moon Cat #7`,
    url: 'https://market.example/token/7',
    tone: 'sale',
    lines: ['1.25 DEV ($2,431.10)', 'Seller 0x12…ab, buyer 0x34…cd'],
    fields: [
      { name: 'Floor', value: '1.10 DEV', inline: true },
      { name: 'Last sale', value: '1.00 DEV', inline: true },
    ],
    buttons: [[{ label: 'Buy', url: 'https://market.example/token/7' }]],
  };
}

/** Counts what it is asked: how often an alert was made into a message. */
function countingImages(): ImageSource & { calls: number } {
  const source = {
    calls: 0,
    show: (url: string | undefined) => {
      source.calls++;
      return IMAGES_BY_URL.show(url);
    },
  };
  return source;
}

/** See {@link PlatformFigures.gapMs}; times sorted, in ms. */
function gapsOf(times: readonly number[]): PlatformFigures['gapMs'] {
  const gaps = times
    .slice(1)
    .map((t, i) => t - (times[i] as number))
    .sort((a, b) => a - b);
  const at = (p: number) => gaps[Math.min(gaps.length - 1, Math.ceil(p * gaps.length) - 1)] ?? 0;
  return { p50: at(0.5), p99: at(0.99), max: gaps.at(-1) ?? 0 };
}

/** See {@link PlatformFigures.perSecond}; times sorted, in ms. */
function steadyRate(times: readonly number[]): number {
  const first = times[0];
  const last = times.at(-1);
  if (first === undefined || last === undefined || last - first <= 2_000) return 0;
  const until = last - 1_000;
  return (times.filter((t) => t < until).length / (until - first)) * 1_000;
}

/** Sales in the order each chat got them, and the time of each message. */
function figures(
  platform: Destination['platform'],
  chats: readonly string[],
  messages: ReadonlyArray<{ chatId: string; text: string; at: number }>,
  sales: number,
  ceiling: number,
  refused: ReadonlyArray<{ key: string; global: boolean; scope: string }>,
  imageLookups: number,
): PlatformFigures {
  const got = new Map<string, number[]>(chats.map((c) => [c, []]));
  for (const m of messages) got.get(m.chatId)?.push(...[...m.text.matchAll(SALE)].map((x) => Number(x[1])));
  const times = messages.map((m) => m.at).sort((a, b) => a - b);
  const seconds = times.length > 1 ? ((times.at(-1) as number) - (times[0] as number)) / 1_000 : 0;
  const perChat = new Map<string, number>();
  for (const r of refused) perChat.set(r.key, (perChat.get(r.key) ?? 0) + 1);
  const expected = Array.from({ length: sales }, (_, i) => i);
  const lists = [...got.values()];
  return {
    platform,
    chats: chats.length,
    messages: messages.length,
    delivered: lists.reduce((n, l) => n + new Set(l).size, 0),
    seconds,
    perSecond: steadyRate(times),
    gapMs: gapsOf(times),
    ceiling,
    refusals: refused.length,
    chatsRefusedTwice: [...perChat.values()].filter((n) => n > 1).length,
    refusedScopes: [...new Set(refused.map((r) => r.scope))],
    globalRefusals: refused.filter((r) => r.global).length,
    outOfOrder: lists.filter((l) => l.join() !== expected.filter((s) => l.includes(s)).join()).length,
    duplicated: lists.reduce((n, l) => n + l.length - new Set(l).size, 0),
    imageLookups,
  };
}

/** Runs the fan-out and returns each platform's figures (see {@link PlatformFigures}). */
export async function runFanout(options: FanoutOptions): Promise<PlatformFigures[]> {
  const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const dir = await mkdtemp(join(tmpdir(), 'floorwatch-fanout-'));
  const groupEvery = options.groupEvery ?? 10;
  const telegramChats = Array.from({ length: options.telegramChats }, (_, i) =>
    i % groupEvery === groupEvery - 1 ? String(-1_001_000_000_000 - i) : String(8_000_000 + i),
  );
  const discordChannels = Array.from({ length: options.discordChannels }, (_, i) =>
    String(1_100_000_000_000_100_000n + BigInt(i)),
  );
  const tg = await FakeTelegram.start();
  const discord = await FakeDiscord.start({
    guilds: [{ id: GUILD, name: 'Fan-out Guild', channels: discordChannels }],
  });
  tg.enforceFloodLimits();
  discord.enforceRateLimits();
  const store = await StateStore.open(join(dir, 'state.json'));
  const { bot } = createBot(
    { token: tg.token, apiRoot: tg.url, webhookUrl: undefined, webhookSecret: undefined, webhookPort: 0 },
    tg.botInfo(),
  );
  const telegramImages = countingImages();
  const discordImages = countingImages();
  const rest = new REST({
    ...restOptions({
      token: discord.token,
      applicationId: discord.applicationId,
      guildId: undefined,
      apiRoot: discord.api,
      managePermission: 'ManageGuild',
    }),
    version: '10',
  }).setToken(discord.token);
  const journal = await DeliveryJournal.open(join(dir, 'deliveries.jsonl'), { fsync: options.fsync ?? true });
  const sinks = new Map<Destination['platform'], AlertSink>([
    ['telegram', new TelegramSink(new TelegramOutbox(bot.api, new ButtonCodec(store, 64), logger, telegramImages))],
    [
      'discord',
      // As startDiscord makes it: alert requests paced under the bot's global limit.
      new DiscordSink(rest, new ButtonCodec(store, DISCORD_LIMITS.customId - 3), discordImages, {
        pacer: new RatePacer(DISCORD_GLOBAL_REQUESTS_PER_SECOND),
      }),
    ],
  ]);
  const dispatcher = new Dispatcher({ journal, sinks, logger });
  const recorder = new DeliveryRecorder<number>({ log: journal, queue: dispatcher, logger });
  try {
    const destinations: Destination[] = [
      ...telegramChats.map((chatId) => ({ platform: 'telegram' as const, chatId })),
      ...discordChannels.map((chatId) => ({ platform: 'discord' as const, chatId })),
    ];
    for (let sale = 0; sale < options.sales; sale++) {
      const payload = encodePayload(saleReply(sale));
      const deliveries = destinations.map(
        (destination): NewDelivery => ({
          eventId: `devnet:0x${(0xa0 + sale).toString(16)}:0xc0:sale#0@0xb${sale}`,
          destination,
          network: 'devnet',
          txnHash: `0x${(0xa0 + sale).toString(16)}`,
          blockNumber: 1_000 + sale,
          kind: 'sale',
          payload,
        }),
      );
      await recorder.record([{ subject: sale, deliveries }]);
    }
    const expected = destinations.length * options.sales;
    const deadline = Date.now() + options.timeoutMs;
    const sentTelegram = () => tg.calls.filter((c) => /^send(Message|Photo)$/.test(c.method) && c.status === 200);
    const sentDiscord = () =>
      discord.calls.filter((c) => c.method === 'POST' && /^\/v10\/channels\/\d+\/messages$/.test(c.path));
    const arrived = () =>
      sentTelegram().length +
      sentDiscord()
        .filter((c) => c.status === 200)
        .reduce((n, c) => n + ((c.body?.embeds as unknown[] | undefined)?.length ?? 0), 0);
    while (arrived() < expected && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    await Promise.race([dispatcher.drained(), new Promise((resolve) => setTimeout(resolve, 5_000))]);
    const telegramMessages = sentTelegram().map((c) => ({
      chatId: String(c.params.chat_id),
      text: String(c.params.text ?? c.params.caption ?? ''),
      at: c.at,
    }));
    const discordMessages = sentDiscord()
      .filter((c) => c.status === 200)
      .map((c) => ({
        chatId: /^\/v10\/channels\/(\d+)\/messages$/.exec(c.path)?.[1] ?? '',
        text: ((c.body?.embeds as Array<{ title?: string }> | undefined) ?? []).map((e) => e.title ?? '').join('\n'),
        at: c.at,
      }));
    return [
      figures(
        'telegram',
        telegramChats,
        telegramMessages,
        options.sales,
        TELEGRAM_FLOOD_LIMITS.perBotPerSecond,
        tg.floodRefusals.map((r) => ({ key: r.chatId, global: r.scope === 'bot', scope: r.scope })),
        telegramImages.calls,
      ),
      figures(
        'discord',
        discordChannels,
        discordMessages,
        options.sales,
        DISCORD_RATE_LIMITS.globalPerSecond,
        discord.rateLimitRefusals.map((r) => ({ key: r.path, global: r.global, scope: r.global ? 'global' : 'route' })),
        discordImages.calls,
      ),
    ];
  } finally {
    await recorder.stop();
    await dispatcher.stop();
    await journal.close();
    rest.clearHashSweeper();
    rest.clearHandlerSweeper();
    await tg.close();
    await discord.close();
    await store.flush();
    await rm(dir, { recursive: true, force: true });
  }
}
