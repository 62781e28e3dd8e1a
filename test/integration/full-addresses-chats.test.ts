/**
 * Issue 29, item 7: lists of addresses (/holders, /project audience) give each address whole in a
 * code span to copy. Through the real grammy and discord.js clients against the stand-ins, which
 * read a message as the real APIs do (Telegram's HTML into text and entities, within 4,096
 * characters; Discord's embed limits, refused with 50035 past them), on the worst a platform may
 * answer: 25 holders with balances near 2^256, and contacts whose names carry markup and mentions.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MessageEntity } from 'grammy/types';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CommandEngine } from '../../src/bot/engine.ts';
import { loadCommands } from '../../src/bot/registry.ts';
import { type DiscordAdapter, startDiscord } from '../../src/chat/discord/adapter.ts';
import { DISCORD_LIMITS } from '../../src/chat/discord/render.ts';
import { startTelegram, type TelegramAdapter } from '../../src/chat/telegram/adapter.ts';
import { COMMANDS_DIR } from '../../src/main.ts';
import type { PlatformClient } from '../../src/platform/index.ts';
import { StateStore } from '../../src/store/files/state.ts';
import { FakeDiscord, type InteractionSpec } from '../fakes/discord.ts';
import { FakeTelegram, type StoredMessage } from '../fakes/telegram.ts';
import { ADDR, createTestClient, PROJECT_ID, wireContractInfo } from '../helpers/platform-fixtures.ts';
import { RpcTestServer, reply } from '../helpers/rpc-test-server.ts';

const SEARCH = '/meta/rpc/Metadata/SearchMetadata';
const BALANCES = '/idx/polygon/rpc/Indexer/GetTokenBalancesByContract';
const AUDIENCE = '/api/rpc/Builder/GetAudience';
const TELEGRAM_OPERATOR = 99;
const TELEGRAM_GROUP = -100_777;
const DISCORD_OPERATOR = { id: '1100000000000000777', username: 'operator' };
const HOSTILE_NAME = '<b>x</b> & *y* _z_ `q` ||s|| @everyone <@1100000000000000779> \u202Eevil';

/** A distinct address for each i, with letters (a checksum-free lower-case form). */
function addressOf(i: number): string {
  return `0x${(0xabc0_0000 + i).toString(16).padStart(8, '0')}${'de'.repeat(16)}`;
}

/** 30 holders with balances as an ERC-1155 of 18 decimals has them (22 digits), in their order. */
const HOLDERS = Array.from({ length: 30 }, (_, i) => ({
  address: addressOf(i),
  balance: (BigInt(100 - i) * 10n ** 20n).toString(),
}));
/** The same holders with balances near 2^255 (77 digits, under the 2^256 the client accepts). */
const HUGE_HOLDERS = HOLDERS.map((h, i) => ({
  address: h.address,
  balance: (2n ** 255n / 64n + BigInt(30 - i) * 10n ** 70n).toString(),
}));

function balancesAnswer(holders: ReadonlyArray<{ address: string; balance: string }>) {
  return reply.json({
    balances: holders.map((h, i) => ({
      contractAddress: ADDR.collection,
      accountAddress: h.address,
      balance: h.balance,
      tokenID: String(i + 1),
      chainId: 137,
    })),
    page: { page: 1, pageSize: 1000, more: false },
  });
}
/** 25 contacts with hostile names, and 5 more than the 20 shown. */
const CONTACTS = Array.from({ length: 25 }, (_, i) => ({
  id: i + 1,
  audienceId: 1,
  address: addressOf(100 + i),
  name: `${HOSTILE_NAME} ${i}`,
  email: '',
}));

let server: RpcTestServer;
let client: PlatformClient;
let dataDir: string;
let engine: CommandEngine;
let store: StateStore;
let tg: FakeTelegram;
let telegram: TelegramAdapter;
let discord: FakeDiscord;
let discordAdapter: DiscordAdapter;

beforeAll(async () => {
  server = await RpcTestServer.start();
  server.route(SEARCH, reply.json({ tokenMetadata: [], contractInfo: [wireContractInfo()] }));
  server.route(BALANCES, balancesAnswer(HOLDERS));
  server.route(
    AUDIENCE,
    reply.json({
      audience: {
        id: 1,
        projectId: PROJECT_ID,
        name: 'Allowlist <i>',
        contactCount: CONTACTS.length,
        createdAt: '2026-01-01T00:00:00Z',
        updatedAt: '2026-01-02T00:00:00Z',
        deletedAt: null,
      },
      contacts: CONTACTS,
      contracts: [],
    }),
  );
  client = createTestClient(server);
  dataDir = await mkdtemp(join(tmpdir(), 'floorwatch-full-addresses-'));
  store = await StateStore.open(join(dataDir, 'state.json'));
  engine = new CommandEngine({
    platform: client,
    store,
    logger: pino({ level: 'silent' }),
    settings: {
      operators: [`telegram:${TELEGRAM_OPERATOR}`, `discord:${DISCORD_OPERATOR.id}`],
      projectId: PROJECT_ID,
      allowlistAudience: 1,
      defaultNetwork: 'polygon',
      version: 'test',
    },
    commands: await loadCommands(COMMANDS_DIR),
    userLimit: { capacity: 1_000, refillPerSecond: 1_000 },
    chatLimit: { capacity: 1_000, refillPerSecond: 1_000 },
  });
  tg = await FakeTelegram.start();
  telegram = await startTelegram({
    config: { token: tg.token, apiRoot: tg.url, webhookUrl: undefined, webhookSecret: undefined, webhookPort: 0 },
    engine,
    logger: pino({ level: 'silent' }),
    botInfo: tg.botInfo(),
    groupIntervalMs: 50,
  });
  discord = await FakeDiscord.start({
    guilds: [{ id: '1100000000000000100', name: 'Test Guild', channels: ['1100000000000000200'], roles: [] }],
  });
  discordAdapter = await startDiscord({
    config: {
      token: discord.token,
      applicationId: discord.applicationId,
      guildId: discord.guildId,
      apiRoot: discord.api,
      managePermission: 'ManageGuild',
    },
    engine,
    logger: pino({ level: 'silent' }),
    clientOptions: { rest: { retries: 1, timeout: 5_000 } },
    deferAfterMs: 2_500,
  });
});

afterAll(async () => {
  await discordAdapter?.stop();
  await discord?.close();
  await telegram?.stop();
  await tg?.close();
  await client?.close();
  await server?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** Types a line in the group; the message the bot sent there, as the stand-in read it. */
async function telegramAnswer(line: string): Promise<StoredMessage> {
  const from = tg.calls.length;
  tg.injectText(TELEGRAM_GROUP, TELEGRAM_OPERATOR, line);
  const call = await tg.waitFor(() =>
    tg.calls.slice(from).find((c) => c.method === 'sendMessage' && String(c.params.chat_id) === String(TELEGRAM_GROUP)),
  );
  // Refused (bad HTML, too long): the test shows Telegram's words.
  expect(call.status, JSON.stringify(call.params.text)).toBe(200);
  const stored = [...tg.messages.values()].find(
    (m) => m.chat.id === TELEGRAM_GROUP && m.text === String(call.params.text),
  );
  if (!stored) throw new Error('message not stored');
  return stored;
}

/** The text a Telegram reader taps to copy: each code span of the message, as Telegram read it. */
function codeSpans(message: StoredMessage): string[] {
  const text = message.shown?.text ?? '';
  return (message.shown?.entities ?? [])
    .filter((e: MessageEntity) => e.type === 'code')
    .map((e) => text.slice(e.offset, e.offset + e.length));
}

type Embed = { title?: string; description?: string; fields?: Array<{ name: string; value: string }> };

/** Runs a slash command through discord.js; the message of its answer, as the stand-in accepted it. */
async function discordAnswer(spec: Extract<InteractionSpec, { kind: 'command' }>) {
  const { id } = discord.dispatchInteraction({ ...spec, user: DISCORD_OPERATOR, permissions: String(1n << 5n) });
  const callback = await discord.nextCall('POST', new RegExp(`^/interactions/${id}/`), 10_000);
  // Refused past a limit, the stand-in answers 400 (50035) like Discord.
  expect(callback.status, JSON.stringify(callback.body)).toBe(204);
  expect(Number(callback.body?.type)).toBe(4);
  return (callback.body?.data ?? {}) as {
    embeds?: Embed[];
    allowed_mentions?: { parse?: string[] };
  };
}

/**
 * The code spans of a Discord description as Discord's markdown reads them: a backslash escapes the
 * next character (an escaped backtick opens no code span).
 */
function discordCodeSpans(embed: Embed | undefined): string[] {
  const text = embed?.description ?? '';
  const spans: string[] = [];
  let open: number | undefined;
  for (let i = 0; i < text.length; i++) {
    if (open === undefined && text[i] === '\\') i++;
    else if (text[i] === '`') {
      if (open === undefined) open = i + 1;
      else {
        spans.push(text.slice(open, i));
        open = undefined;
      }
    }
  }
  return spans;
}

const RANKED = HOLDERS.slice(0, 25).map((h) => h.address);
const SHOWN_CONTACTS = CONTACTS.slice(0, 20).map((c) => c.address);

describe('whole addresses to copy, through the real chat clients', () => {
  it('GIVEN 25 holders WHEN /holders asks for 25 on Telegram THEN Telegram reads the HTML, and each of the 25 lines gives its whole address as a code span to tap', async () => {
    server.route(BALANCES, balancesAnswer(HOLDERS));
    const message = await telegramAnswer(`/holders ${ADDR.collection} 25`);
    expect(codeSpans(message)).toEqual(RANKED);
    const lines = (message.shown?.text ?? '').split('\n');
    const total = HOLDERS.reduce((sum, h) => sum + BigInt(h.balance), 0n);
    for (const [i, address] of RANKED.entries()) {
      const share = Number((BigInt(HOLDERS[i]?.balance ?? '0') * 10_000n) / total) / 100;
      expect(lines).toContain(
        `${i + 1}. ${address.slice(0, 6)}…${address.slice(-4)} holds ${HOLDERS[i]?.balance} (${share}%) · ${address}`,
      );
    }
  });

  it('GIVEN 25 holders with 77-digit balances WHEN /holders asks for 25 on Telegram THEN Telegram accepts the message, and every code span in it is a whole address, in rank order: a line that does not fit is cut as text, never into a partial address to copy', async () => {
    server.route(BALANCES, balancesAnswer(HUGE_HOLDERS));
    const message = await telegramAnswer(`/holders ${ADDR.collection} 25`);
    const spans = codeSpans(message);
    expect(spans.length).toBeGreaterThanOrEqual(24);
    expect(spans).toEqual(RANKED.slice(0, spans.length));
    server.route(BALANCES, balancesAnswer(HOLDERS));
  });

  it('GIVEN contacts named with markup and mentions WHEN /project audience runs on Telegram THEN the names are shown as typed, inert, and each shown contact gives its whole address to tap', async () => {
    const message = await telegramAnswer('/project audience 1');
    expect(codeSpans(message)).toEqual(SHOWN_CONTACTS);
    const text = message.shown?.text ?? '';
    // The markup of the names is text, not formatting: the only entities are the bot's own.
    expect(text).toContain('<b>x<');
    expect(text).toContain('b> & *y* _z_ `q` ||s||');
    expect((message.shown?.entities ?? []).map((e) => e.type).sort()).toEqual(
      ['bold', 'bold', ...SHOWN_CONTACTS.map(() => 'code')].sort(),
    );
    expect(text).not.toContain('@everyone');
    expect(text).not.toContain('\u202E');
    expect(text).toContain(`… and ${CONTACTS.length - 20} more`);
    const first = CONTACTS[0];
    expect(text).toContain(`${first?.address.slice(0, 6)}…${first?.address.slice(-4)} · `);
  });

  it('GIVEN 25 holders, with 22-digit and then 77-digit balances WHEN /holders asks for 25 on Discord THEN Discord accepts the embed, and its description gives each of the 25 whole addresses in a code span', async () => {
    for (const holders of [HOLDERS, HUGE_HOLDERS]) {
      server.route(BALANCES, balancesAnswer(holders));
      const message = await discordAnswer({
        kind: 'command',
        name: 'holders',
        options: { collection: ADDR.collection, count: 25 },
      });
      const [embed] = message.embeds ?? [];
      expect(embed?.description?.length ?? 0).toBeLessThanOrEqual(DISCORD_LIMITS.description);
      expect(discordCodeSpans(embed)).toEqual(RANKED);
      expect(message.allowed_mentions?.parse).toEqual([]);
    }
    server.route(BALANCES, balancesAnswer(HOLDERS));
  });

  it('GIVEN contacts named with markup and mentions WHEN /project audience runs on Discord THEN the names are escaped, nobody is pinged, and each shown contact gives its whole address in a code span', async () => {
    const message = await discordAnswer({
      kind: 'command',
      name: 'project',
      subcommand: 'audience',
      options: { id: 1 },
    });
    const [embed] = message.embeds ?? [];
    expect(discordCodeSpans(embed)).toEqual(SHOWN_CONTACTS);
    const description = embed?.description ?? '';
    expect(description).toContain('\\*y\\*');
    expect(description).not.toContain('@everyone');
    expect(description).not.toContain('<@1100000000000000779>');
    expect(message.allowed_mentions?.parse).toEqual([]);
    expect(description).toContain(`… and ${CONTACTS.length - 20} more`);
  });
});

describe('the stand-ins refuse what the real APIs refuse', () => {
  async function telegramSend(text: string): Promise<{ status: number; description?: string }> {
    const response = await fetch(`${tg.url}/bot${tg.token}/sendMessage`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ chat_id: TELEGRAM_GROUP, text, parse_mode: 'HTML' }),
    });
    const body = (await response.json()) as { description?: string };
    return { status: response.status, ...(body.description ? { description: body.description } : {}) };
  }

  it("GIVEN HTML that Telegram cannot read, or a text past 4,096 characters once read THEN the Telegram stand-in answers 400 with Telegram's words; tags do not count toward the limit", async () => {
    expect(await telegramSend('<foo>x</foo>')).toMatchObject({ status: 400 });
    expect((await telegramSend('<b>x')).description).toMatch(/^Bad Request: can't parse entities/);
    expect((await telegramSend('a < b')).description).toMatch(/^Bad Request: can't parse entities/);
    expect(await telegramSend('x'.repeat(4097))).toEqual({
      status: 400,
      description: 'Bad Request: message is too long',
    });
    expect((await telegramSend(`<code>${'x'.repeat(4096)}</code>`)).status).toBe(200);
  });

  it('GIVEN an embed past one of its limits THEN the Discord stand-in answers 400 Invalid Form Body (50035), and takes it within them', async () => {
    const send = async (embed: Record<string, unknown>) =>
      fetch(`${discord.api}/v10/channels/${discord.channelId}/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bot ${discord.token}` },
        body: JSON.stringify({ embeds: [embed] }),
      });
    const tooLong = await send({ description: 'x'.repeat(4097) });
    expect(tooLong.status).toBe(400);
    expect(await tooLong.json()).toMatchObject({
      code: 50035,
      errors: { embeds: { 0: { description: { _errors: [{ code: 'BASE_TYPE_MAX_LENGTH' }] } } } },
    });
    expect((await send({ fields: [{ name: 'Contacts', value: 'x'.repeat(1025) }] })).status).toBe(400);
    // Each part within its limit, all of them past the embed's 6,000 characters.
    const total = await send({
      description: 'x'.repeat(4096),
      fields: [
        { name: 'a', value: 'x'.repeat(1000) },
        { name: 'b', value: 'x'.repeat(1000) },
      ],
    });
    expect(total.status).toBe(400);
    expect(await total.json()).toMatchObject({
      errors: { embeds: { _errors: [{ code: 'MAX_EMBED_SIZE_EXCEEDED' }] } },
    });
    expect((await send({ description: 'x'.repeat(4096) })).status).toBe(200);
  });
});
