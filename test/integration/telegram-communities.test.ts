// Where Telegram communities talk: forum topics, anonymous admins and channels, driven through the
// real grammy client against the Bot API stand-in, with the real engine, stores, pipeline and sinks.
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Alerts, createAlerts } from '../../src/alerts/index.ts';
import { startTelegram, type TelegramAdapter, type TelegramConfig } from '../../src/chat/telegram/adapter.ts';
import { ALLOWED_UPDATES } from '../../src/chat/telegram/updates.ts';
import { Dispatcher } from '../../src/delivery/dispatcher.ts';
import { pauseRulesOfUnreachable } from '../../src/delivery/unreachable.ts';
import { DigestService } from '../../src/digests/digest-service.ts';
import { DeliveryJournal } from '../../src/store/files/journal/journal.ts';
import { FileMarketHistory } from '../../src/store/files/market-history.ts';
import { StateStore } from '../../src/store/files/state.ts';
import { openSharedDatabase } from '../../src/store/pg/index.ts';
import { FakeTelegram, GROUP_ANONYMOUS_BOT, type TelegramCall, THREAD_NOT_FOUND } from '../fakes/telegram.ts';
import { type Harness, startHarness } from '../helpers/bot-harness.ts';
import { collectionNamed, listedToken } from '../helpers/devnet-data.ts';
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.ts';
import { marketplacesOf, streamsFollow } from '../helpers/streams.ts';

const SENDS = ['sendMessage', 'sendPhoto'];
const silent = pino({ level: 'silent' });

let h: Harness;
let tg: FakeTelegram;
let adapter: TelegramAdapter;
let journal: DeliveryJournal;
let dispatcher: Dispatcher;
let pipeline: Alerts;
let market: FileMarketHistory;

function config(fake: FakeTelegram): TelegramConfig {
  return { token: fake.token, apiRoot: fake.url, webhookUrl: undefined, webhookSecret: undefined, webhookPort: 0 };
}

function htmlOf(call: TelegramCall): string {
  return String(call.params.text ?? call.params.caption ?? '');
}

/** Successful sends to a chat (any of its topics) since call `from` whose HTML contains `match`. */
function sentTo(fake: FakeTelegram, chatId: number, from: number, match = ''): TelegramCall[] {
  return fake.calls
    .slice(from)
    .filter(
      (c) =>
        SENDS.includes(c.method) &&
        c.status === 200 &&
        String(c.params.chat_id) === String(chatId) &&
        htmlOf(c).includes(match),
    );
}

/** Queues an update with `inject` and returns the bot's next message to `chatId`. */
async function answerTo(fake: FakeTelegram, chatId: number, inject: () => unknown): Promise<TelegramCall> {
  const from = fake.calls.length;
  inject();
  return fake.waitFor(() => sentTo(fake, chatId, from)[0]);
}

/** Resolves when the pipeline's streams follow every rule in the store. */
async function planned(): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 40));
    if (streamsFollow(pipeline.status().streams, h.store.rules, marketplacesOf(h.devnet))) return;
    if (Date.now() > deadline) throw new Error('streams not planned');
  }
}

async function mineSale(collection: string): Promise<void> {
  const address = collectionNamed(h.devnet, collection).address;
  const tokenId = await listedToken(h.platform, address);
  await h.devnet.mine('devnet', [{ kind: 'sale', collection: address, tokenId }]);
}

async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

beforeAll(async () => {
  h = await startHarness();
  tg = await FakeTelegram.start();
  adapter = await startTelegram({
    config: config(tg),
    engine: h.engine,
    logger: silent,
    botInfo: tg.botInfo(),
    groupIntervalMs: 20,
  });
  journal = await DeliveryJournal.open(join(h.dataDir, 'deliveries.jsonl'), { fsync: false });
  dispatcher = new Dispatcher({
    journal,
    sinks: new Map([['telegram' as const, adapter.sink]]),
    logger: silent,
    retryDelayMs: 20,
    maxRetryDelayMs: 200,
    // As main wires it: a chat (or topic) that cannot be posted to any more has its rules paused.
    onUnreachable: pauseRulesOfUnreachable(h.store, silent),
  });
  market = await FileMarketHistory.open(join(h.dataDir, 'market-history.jsonl'), { logger: silent });
  pipeline = createAlerts({
    platform: h.platform,
    market,
    rules: h.store,
    deliveries: journal,
    queue: dispatcher,
    currencies: h.engine.currencies,
    logger: silent,
    marketplaceContracts: marketplacesOf(h.devnet),
    replanDelayMs: 20,
    flushDelayMs: 5,
    streams: { reconnect: { initialDelayMs: 20, maxDelayMs: 200 } },
  });
  await pipeline.start();
});

afterAll(async () => {
  await adapter?.stop();
  await pipeline?.stop();
  await dispatcher?.stop();
  await journal?.close();
  await market?.close();
  await tg?.close();
  await h?.close();
});

describe('forum topics', () => {
  const forum = -100900;
  const admin = 5;

  it('GIVEN a command typed in a topic THEN the answer goes to that topic, as a reply; in General, without a thread', async () => {
    const topic = tg.openTopic(forum, 'Floor talk');
    const inTopic = await answerTo(tg, forum, () => tg.injectTopicText(forum, topic, 1, '/help'));
    expect(htmlOf(inTopic)).toContain('Floorwatch commands');
    expect(inTopic.params.message_thread_id).toBe(topic);
    expect(inTopic.params.reply_parameters).toMatchObject({ message_id: expect.any(Number) });
    const inGeneral = await answerTo(tg, forum, () => tg.injectText(forum, 1, '/help'));
    expect(inGeneral.params.message_thread_id).toBeUndefined();
  });

  it('GIVEN a button pressed on an answer in a topic THEN its new message goes to that topic', async () => {
    tg.admins.set(String(forum), [admin]);
    const topic = tg.openTopic(forum, 'Buttons');
    const added = await answerTo(tg, forum, () =>
      tg.injectTopicText(forum, topic, admin, '/watch add glitch gardens listing'),
    );
    expect(htmlOf(added)).toContain('Watching');
    const sample = (added.params.reply_markup as { inline_keyboard: Array<Array<{ callback_data?: string }>> })
      .inline_keyboard[0]?.[0]?.callback_data;
    expect(sample).toBeDefined();
    const stored = [...tg.messages.values()].find((m) => m.chat.id === forum && m.text === htmlOf(added));
    expect(stored?.message_thread_id).toBe(topic);
    const answer = await answerTo(tg, forum, () => tg.pressButton(forum, admin, stored?.message_id ?? 0, sample ?? ''));
    expect(answer.params.message_thread_id).toBe(topic);
  });

  it('GIVEN a rule added in a topic and one in General THEN each alert goes where its rule was added, and the topic survives a restart of the state file', async () => {
    tg.admins.set(String(forum), [admin]);
    const topic = tg.openTopic(forum, 'Moon Cats sales');
    await answerTo(tg, forum, () => tg.injectTopicText(forum, topic, admin, '/watch add moon cats sale'));
    await answerTo(tg, forum, () => tg.injectText(forum, admin, '/watch add moon cats sale'));
    const topicKey = `telegram:${forum}/${topic}`;
    expect((await h.store.rulesOf(topicKey)).map((r) => r.destination)).toEqual([
      { platform: 'telegram', chatId: `${forum}/${topic}` },
    ]);
    await h.store.flush();
    // What a restarted bot reads back from its state file.
    const reread = await StateStore.open(join(h.dataDir, 'state.json'));
    expect((await reread.rulesOf(topicKey)).map((r) => r.destination.chatId)).toEqual([`${forum}/${topic}`]);
    await planned();
    const from = tg.calls.length;
    await mineSale('Moon Cats');
    await tg.waitFor(() => (sentTo(tg, forum, from, 'Sold: ').length >= 2 ? true : undefined));
    const threads = sentTo(tg, forum, from, 'Sold: ').map((c) => c.params.message_thread_id);
    expect(threads.sort()).toEqual([topic, undefined]);
  });

  it('GIVEN a digest set in a topic THEN it is posted into that topic', async () => {
    tg.admins.set(String(forum), [admin]);
    const topic = tg.openTopic(forum, 'Daily');
    const set = await answerTo(tg, forum, () =>
      tg.injectTopicText(forum, topic, admin, '/digest set 09:00 UTC moon cats'),
    );
    expect(htmlOf(set)).toMatch(/digest/i);
    const topicKey = `telegram:${forum}/${topic}`;
    expect(h.store.chat(topicKey).digest).toBeDefined();
    expect(h.store.chat(`telegram:${forum}`).digest).toBeUndefined();
    const digests = new DigestService({
      platform: h.platform,
      store: h.store,
      journal,
      dispatcher,
      currencies: h.engine.currencies,
      logger: silent,
      projectId: h.devnet.projectId,
    });
    const from = tg.calls.length;
    await digests.run([topicKey], new Date());
    const posted = await tg.waitFor(() => sentTo(tg, forum, from)[0], 30_000);
    expect(posted.params.message_thread_id).toBe(topic);
  });

  it('GIVEN a topic that was deleted THEN its rules pause on "message thread not found", and the other topics and General go on', async () => {
    const group = -100901;
    tg.admins.set(String(group), [admin]);
    const gone = tg.openTopic(group, 'Gone soon');
    const kept = tg.openTopic(group, 'Kept');
    await answerTo(tg, group, () => tg.injectTopicText(group, gone, admin, '/watch add moon cats sale'));
    await answerTo(tg, group, () => tg.injectTopicText(group, kept, admin, '/watch add moon cats sale'));
    await answerTo(tg, group, () => tg.injectText(group, admin, '/watch add moon cats sale'));
    await planned();
    tg.deleteTopic(group, gone);
    const from = tg.calls.length;
    await mineSale('Moon Cats');
    await tg.waitFor(() => (sentTo(tg, group, from, 'Sold: ').length >= 2 ? true : undefined));
    const refused = await tg.waitFor(() =>
      tg.calls.slice(from).find((c) => c.params.message_thread_id === gone && c.status === 400),
    );
    expect(refused.method).toMatch(/^send/);
    const rulesOf = async (thread?: number) =>
      h.store.rulesOf(`telegram:${group}${thread === undefined ? '' : `/${thread}`}`);
    await eventually(async () => (await rulesOf(gone)).every((r) => r.paused));
    expect((await rulesOf(kept)).map((r) => r.paused)).toEqual([false]);
    expect((await rulesOf()).map((r) => r.paused)).toEqual([false]);
    expect(
      sentTo(tg, group, from, 'Sold: ')
        .map((c) => c.params.message_thread_id)
        .sort(),
    ).toEqual([kept, undefined]);
  });

  it('GIVEN an alert in a topic THEN the sink edits it in its group (an edit names no thread)', async () => {
    const topic = tg.openTopic(-100903, 'Edits');
    const messageId = await adapter.sink.send(`-100903/${topic}`, [{ title: 'Sold: first' }], 'e1');
    const edit = tg.nextCall('editMessageText');
    await adapter.sink.edit(`-100903/${topic}`, messageId, [{ title: 'Reversed: first' }]);
    const edited = await edit;
    expect(edited).toMatchObject({ status: 200, params: { chat_id: '-100903', message_id: Number(messageId) } });
    expect(tg.messages.get(`-100903:${messageId}`)?.message_thread_id).toBe(topic);
  });

  it('GIVEN a send to a deleted topic THEN the sink reports it as permanent', async () => {
    const topic = tg.openTopic(-100902, 'x');
    tg.deleteTopic(-100902, topic);
    const failed = await adapter.sink.send(`-100902/${topic}`, [{ title: 'x' }], 'k').catch((e: unknown) => e);
    expect(failed).toMatchObject({ permanent: true, message: expect.stringContaining(THREAD_NOT_FOUND) });
  });
});

describe('anonymous admins', () => {
  it('GIVEN an admin posting as the group THEN they may manage rules, settings and digests, without a getChatMember', async () => {
    const group = -100910;
    const topic = tg.openTopic(group, 'Admins');
    const before = tg.callsOf('getChatMember').length;
    const added = await answerTo(tg, group, () =>
      tg.injectAnonymousAdmin(group, '/watch add moon cats sale', { signature: 'Owner' }),
    );
    expect(htmlOf(added)).toContain('Watching');
    const settings = await answerTo(tg, group, () => tg.injectAnonymousAdmin(group, '/settings network devnet'));
    expect(htmlOf(settings)).not.toMatch(/needs a chat admin/);
    const digest = await answerTo(tg, group, () =>
      tg.injectAnonymousAdmin(group, '/digest set 09:00 UTC moon cats', { threadId: topic }),
    );
    expect(htmlOf(digest)).not.toMatch(/needs a chat admin/);
    expect(digest.params.message_thread_id).toBe(topic);
    expect(await h.store.rulesOf(`telegram:${group}`)).toHaveLength(1);
    expect(h.store.chat(`telegram:${group}/${topic}`).digest).toBeDefined();
    const asked = tg.callsOf('getChatMember').slice(before);
    expect(asked.filter((c) => c.params.user_id === GROUP_ANONYMOUS_BOT.id)).toEqual([]);
  });

  it('GIVEN a member posting as their own channel THEN the bot does not take it for an admin', async () => {
    const group = -100911;
    const from = tg.calls.length;
    tg.injectAsChat(group, -100777, '/watch add moon cats sale');
    // A command after it, answered, shows the first was read and left alone.
    await answerTo(tg, group, () => tg.injectText(group, 1, '/help'));
    expect(sentTo(tg, group, from)).toHaveLength(1);
    expect(await h.store.rulesOf(`telegram:${group}`)).toEqual([]);
  });
});

describe('channels', () => {
  const channel = -100920;

  it('asks Telegram for channel posts', () => {
    expect(ALLOWED_UPDATES).toContain('channel_post');
    // grammy names them on its first poll; Telegram keeps them for the later ones.
    const polled = tg.callsOf('getUpdates').find((c) => Array.isArray(c.params.allowed_updates));
    expect(polled?.params.allowed_updates).toContain('channel_post');
  });

  it('GIVEN a command posted in a channel THEN it runs as an admin, is answered as a post, and its rule alerts in the channel', async () => {
    const answer = await answerTo(tg, channel, () => tg.injectChannelPost(channel, '/watch add moon cats sale'));
    expect(htmlOf(answer)).toContain('Watching');
    const posted = [...tg.messages.values()].find((m) => m.chat.id === channel && m.text === htmlOf(answer));
    expect(posted?.chat.type).toBe('channel');
    expect(posted?.sender_chat?.id).toBe(channel);
    const digest = await answerTo(tg, channel, () => tg.injectChannelPost(channel, '/digest set 10:00 UTC moon cats'));
    expect(htmlOf(digest)).not.toMatch(/needs a chat admin/);
    expect(h.store.chat(`telegram:${channel}`).digest).toBeDefined();
    expect(await h.store.rulesOf(`telegram:${channel}`)).toHaveLength(1);
    await planned();
    const from = tg.calls.length;
    await mineSale('Moon Cats');
    const alert = await tg.waitFor(() => sentTo(tg, channel, from, 'Sold: ')[0]);
    expect(alert.params.message_thread_id).toBeUndefined();
  });
});

describe('forum topics with PostgreSQL', () => {
  let postgres: TestPostgres;
  let fake: FakeTelegram;

  beforeAll(async () => {
    postgres = await startTestPostgres();
    fake = await FakeTelegram.start();
  }, 120_000);
  afterAll(async () => {
    await fake?.close();
    await postgres?.stop();
    // Stopping the server takes long on a busy machine (the whole suite runs several).
  }, 60_000);

  it("GIVEN alerts to two topics of one group THEN they keep the group's pace between them", async () => {
    const group = -100931;
    const [first, second] = [fake.openTopic(group, 'One'), fake.openTopic(group, 'Two')];
    const paced = await startTelegram({
      config: config(fake),
      engine: h.engine,
      logger: silent,
      botInfo: fake.botInfo(),
      groupIntervalMs: 500,
    });
    try {
      const asked = Date.now();
      await paced.sink.send(`${group}/${first}`, [{ title: 'one' }], 'p1');
      await paced.sink.send(`${group}/${second}`, [{ title: 'two' }], 'p2');
      const [one, two] = sentTo(fake, group, 0);
      expect([one?.params.message_thread_id, two?.params.message_thread_id]).toEqual([first, second]);
      // Telegram counts a group's messages whatever their topic: the second waits for the first's interval.
      expect((two?.at ?? 0) - asked).toBeGreaterThanOrEqual(500);
    } finally {
      await paced.stop();
    }
  });

  it('GIVEN a rule and a digest added in a topic THEN after a restart the database still sends them to that topic', async () => {
    const url = await postgres.freshDatabase();
    const forum = -100930;
    fake.admins.set(String(forum), [7]);
    const topic = fake.openTopic(forum, 'Sales');
    const first = await openSharedDatabase({ url, poolSize: 2 }, silent, () => {});
    const engine = h.engineWith({ store: first.rules });
    const bot = await startTelegram({ config: config(fake), engine, logger: silent, botInfo: fake.botInfo() });
    try {
      const added = await answerTo(fake, forum, () =>
        fake.injectTopicText(forum, topic, 7, '/watch add moon cats sale'),
      );
      expect(htmlOf(added)).toContain('Watching');
      expect(added.params.message_thread_id).toBe(topic);
      await answerTo(fake, forum, () => fake.injectTopicText(forum, topic, 7, '/digest set 09:00 UTC moon cats'));
    } finally {
      await bot.stop();
      await first.close();
    }
    const again = await openSharedDatabase({ url, poolSize: 2 }, silent, () => {});
    const restarted = await startTelegram({
      config: config(fake),
      engine: h.engineWith({ store: again.rules }),
      logger: silent,
      botInfo: fake.botInfo(),
    });
    try {
      const key = `telegram:${forum}/${topic}`;
      const [rule] = await again.rules.rulesOf(key);
      expect(rule?.destination).toEqual({ platform: 'telegram', chatId: `${forum}/${topic}` });
      expect(again.rules.chat(key).digest).toBeDefined();
      const from = fake.calls.length;
      await restarted.sink.send(rule?.destination.chatId ?? '', [{ title: 'Sold: Moon Cats' }], 'pg-1');
      const [alert] = sentTo(fake, forum, from, 'Sold: ');
      expect(alert?.params.message_thread_id).toBe(topic);
    } finally {
      await restarted.stop();
      await again.close();
    }
  }, 60_000);
});
