import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommandEngine } from '../../src/bot/engine.ts';
import { type DiscordAdapter, startDiscord } from '../../src/chat/discord/adapter.ts';
import { startTelegram, type TelegramAdapter } from '../../src/chat/telegram/adapter.ts';
import { FakeDiscord, type RecordedCall } from '../fakes/discord.ts';
import { FakeTelegram, type TelegramCall } from '../fakes/telegram.ts';
import { type Harness, startHarness } from '../helpers/bot-harness.ts';

/*
 * Issue 13, item 6: floods. Every message a person sends counts against their rate limit, whatever
 * it turns out to be (unknown command, denied command, a line that does not parse, plain text in a
 * private chat, a button press); a flood gets at most the bucket's capacity in answers and one
 * "slow down", then silence until the bucket has a token again. The real grammy and discord.js
 * clients run against the chat API stand-ins.
 */

const CAPACITY = 3;
/** One token every 10 s: the window outlasts each test. */
const REFILL_PER_SECOND = 0.1;
const SENDS = ['sendMessage', 'sendPhoto'];
const SLOW_DOWN = /Slow down a little: try again in \d+ s\./;
const GUILD = '1100000000000000100';
const CHANNEL_A = '1100000000000000201';
const CHANNEL_B = '1100000000000000202';
const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

let h: Harness;
/** Added to the engines' clock, to end a rate-limit window without waiting for it. */
let clockShiftMs = 0;

async function tightEngine(): Promise<CommandEngine> {
  return h.engineWith({
    logger,
    now: () => new Date(Date.now() + clockShiftMs),
    userLimit: { capacity: CAPACITY, refillPerSecond: REFILL_PER_SECOND },
    chatLimit: { capacity: 100, refillPerSecond: 10 },
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  h = await startHarness();
});

afterAll(async () => {
  await h?.close();
});

describe('floods on Telegram', () => {
  let tg: FakeTelegram;
  let adapter: TelegramAdapter;

  const textOf = (call: TelegramCall) => String(call.params.text ?? call.params.caption ?? '');
  const sentTo = (chatId: number, from = 0) =>
    tg.calls.slice(from).filter((c) => SENDS.includes(c.method) && String(c.params.chat_id) === String(chatId));

  /** Waits until `count` messages went to the chat, then a little longer to see that no more follow. */
  async function settled(chatId: number, count: number, from = 0): Promise<TelegramCall[]> {
    await tg.waitFor(() => sentTo(chatId, from).length >= count || undefined);
    await sleep(600);
    return sentTo(chatId, from);
  }

  beforeAll(async () => {
    tg = await FakeTelegram.start();
    adapter = await startTelegram({
      config: { token: tg.token, apiRoot: tg.url, webhookUrl: undefined, webhookSecret: undefined, webhookPort: 0 },
      engine: await tightEngine(),
      logger,
      botInfo: tg.botInfo(),
      groupIntervalMs: 50,
    });
  });

  afterAll(async () => {
    await adapter?.stop();
    await tg?.close();
  });

  it(`GIVEN 50 unknown commands from one person THEN ${CAPACITY} answers and one "slow down", and another person in another chat is still answered`, async () => {
    const from = tg.calls.length;
    for (let i = 0; i < 50; i++) tg.injectText(501, 501, `/nosuch${i}`);
    tg.injectText(502, 502, '/nosuch');
    const other = await settled(502, 1, from);
    const flooded = await settled(501, CAPACITY + 1, from);

    expect(other.map(textOf)).toEqual([expect.stringContaining('Unknown command')]);
    expect(flooded.filter((c) => textOf(c).includes('Unknown command'))).toHaveLength(CAPACITY);
    expect(flooded.filter((c) => SLOW_DOWN.test(textOf(c)))).toHaveLength(1);
    expect(flooded).toHaveLength(CAPACITY + 1);
    // Nothing else was asked of the Bot API for the refused messages either: no typing action.
    const typing = tg.calls
      .slice(from)
      .filter((c) => c.method === 'sendChatAction' && String(c.params.chat_id) === '501');
    expect(typing).toHaveLength(CAPACITY);
  });

  it('GIVEN the window of a flood ends THEN the person is answered again, and told again when they go on', async () => {
    const from = tg.calls.length;
    tg.injectText(501, 501, '/nosuch');
    await sleep(600);
    expect(sentTo(501, from)).toEqual([]);

    clockShiftMs += 1_000 / REFILL_PER_SECOND;
    tg.injectText(501, 501, '/nosuch');
    tg.injectText(501, 501, '/nosuch');
    tg.injectText(501, 501, '/nosuch');
    const answers = (await settled(501, 2, from)).map(textOf);
    expect(answers).toHaveLength(2);
    expect(answers).toEqual(
      expect.arrayContaining([expect.stringContaining('Unknown command'), expect.stringMatching(SLOW_DOWN)]),
    );
  });

  it('GIVEN plain text, a line that does not parse and a denied command THEN each counts, in any chat of the person', async () => {
    const person = 503;
    const group = -100_503;
    const from = tg.calls.length;
    tg.injectText(person, person, 'hello');
    tg.injectText(person, person, '/floor "moon');
    tg.injectText(group, person, '/watch add moon cats');
    tg.injectText(person, person, '/nosuch');
    tg.injectText(person, person, 'hello again');
    tg.injectText(person, person, '/floor "moon');
    tg.injectText(group, person, '/watch add moon cats');
    tg.injectText(group, person, 'talk in the group is not for the bot');

    const privately = (await settled(person, 3, from)).map(textOf);
    const inGroup = sentTo(group, from).map(textOf);
    expect(privately).toHaveLength(3);
    expect(privately).toEqual(
      expect.arrayContaining([
        expect.stringContaining('I answer commands'),
        expect.stringContaining('A quote is not closed'),
        expect.stringMatching(SLOW_DOWN),
      ]),
    );
    expect(inGroup).toEqual([
      expect.stringContaining('/watch add needs a chat admin (Telegram: group administrator).'),
    ]);
  });

  it('GIVEN button presses past the limit THEN the first refusal is a notice to the presser, the next ones a bare acknowledgement', async () => {
    const person = 504;
    const from = tg.calls.length;
    tg.injectText(person, person, '/help');
    const [help] = await settled(person, 1, from);
    const message = [...tg.messages.values()].find(
      (m) => m.chat.id === person && (m.text ?? m.caption) === textOf(help as TelegramCall),
    );
    if (!message) throw new Error('the /help answer was not stored');

    const presses = Array.from({ length: 4 }, () => {
      return tg.pressButton(person, person, message.message_id, '#gone').callback_query.id;
    });
    const answers = await tg.waitFor(() => {
      const found = presses.map((id) =>
        tg.callsOf('answerCallbackQuery').find((c) => c.params.callback_query_id === id),
      );
      return found.every(Boolean) ? (found as TelegramCall[]) : undefined;
    });
    expect(answers.map((a) => a.params.text)).toEqual([
      'This button no longer works. Run the command again.',
      'This button no longer works. Run the command again.',
      expect.stringMatching(SLOW_DOWN),
      undefined,
    ]);
    await sleep(300);
    expect(sentTo(person, from)).toHaveLength(1);
  });
});

describe('floods on Discord', () => {
  let fake: FakeDiscord;
  let adapter: DiscordAdapter;
  const MEMBER = { id: '1100000000000000601', username: 'flooder' };
  const OTHER = { id: '1100000000000000602', username: 'patient' };

  type Outcome = { type: number; ephemeral: boolean; text: string; deleted: boolean };

  /** What became of an interaction: its callback, and whether its deferred placeholder was deleted. */
  async function outcomeOf(id: string, token: string): Promise<Outcome> {
    const callback = await fake.nextCall('POST', new RegExp(`^/interactions/${id}/`), 10_000);
    const data = (callback.body?.data ?? {}) as {
      flags?: number;
      embeds?: Array<{ title?: string; description?: string }>;
    };
    const type = Number(callback.body?.type);
    let deleted = false;
    if (type === 5) {
      await fake.nextCall('DELETE', new RegExp(`^/webhooks/\\d+/${token}/messages/@original$`), 10_000);
      deleted = true;
    }
    return {
      type,
      ephemeral: ((data.flags ?? 0) & 64) !== 0,
      // Markdown escapes removed: the text as the person reads it.
      text: (data.embeds ?? [])
        .map((e) => `${e.title ?? ''}\n${e.description ?? ''}`)
        .join('\n')
        .replace(/\\(.)/g, '$1'),
      deleted,
    };
  }

  const webhookCalls = (token: string): RecordedCall[] =>
    fake.calls.filter((c) => c.path.includes(`/webhooks/`) && c.path.includes(token) && c.method !== 'DELETE');

  beforeAll(async () => {
    fake = await FakeDiscord.start({ guilds: [{ id: GUILD, name: 'Flood Guild', channels: [CHANNEL_A, CHANNEL_B] }] });
    adapter = await startDiscord({
      config: {
        token: fake.token,
        applicationId: fake.applicationId,
        guildId: fake.guildId,
        apiRoot: fake.api,
        managePermission: 'ManageGuild',
      },
      engine: await tightEngine(),
      logger,
      clientOptions: { rest: { retries: 1, timeout: 5_000 } },
    });
  });

  afterAll(async () => {
    await adapter?.stop();
    await fake?.close();
  });

  it(`GIVEN 12 slash commands from one member THEN ${CAPACITY} answers, one ephemeral "slow down", and the rest acknowledged with nothing left to see`, async () => {
    const sent = Array.from({ length: 12 }, () =>
      fake.dispatchInteraction({ kind: 'command', name: 'nosuch', channelId: CHANNEL_A, user: MEMBER }),
    );
    const other = fake.dispatchInteraction({ kind: 'command', name: 'nosuch', channelId: CHANNEL_B, user: OTHER });
    const outcomes: Outcome[] = [];
    for (const { id, token } of sent) outcomes.push(await outcomeOf(id, token));
    const otherOutcome = await outcomeOf(other.id, other.token);

    const answered = outcomes.filter((o) => o.type === 4 && o.text.includes('Unknown command'));
    const told = outcomes.filter((o) => o.type === 4 && SLOW_DOWN.test(o.text));
    const silent = outcomes.filter((o) => o.type === 5);
    expect(answered).toHaveLength(CAPACITY);
    expect(told).toEqual([expect.objectContaining({ ephemeral: true })]);
    // A slash command cannot be acknowledged without a message: an ephemeral placeholder, deleted at once.
    expect(silent).toHaveLength(12 - CAPACITY - 1);
    for (const o of silent) expect(o).toMatchObject({ ephemeral: true, deleted: true });
    expect(otherOutcome).toMatchObject({ type: 4, text: expect.stringContaining('Unknown command') });

    await sleep(300);
    for (const { token } of sent) expect(webhookCalls(token)).toEqual([]);
  });

  it('GIVEN a member already told to slow down WHEN they press buttons THEN each press is acknowledged without a word', async () => {
    const presses = Array.from({ length: 3 }, () =>
      fake.dispatchInteraction({ kind: 'button', customId: 'r0:/help', channelId: CHANNEL_A, user: MEMBER }),
    );
    for (const { id, token } of presses) {
      const callback = await fake.nextCall('POST', new RegExp(`^/interactions/${id}/`), 10_000);
      // Deferred update: the message stays as it was, and nothing is posted.
      expect(callback.body).toEqual({ type: 6 });
      await sleep(50);
      expect(webhookCalls(token)).toEqual([]);
    }
  });
});
