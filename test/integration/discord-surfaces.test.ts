/**
 * Where the bot works on Discord besides plain text channels: threads and forum posts, announcement
 * channels (crossposting), through the real discord.js client against the stand-in.
 */
import { REST } from 'discord.js';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CommandEngine } from '../../src/bot/engine.ts';
import { loadCommands } from '../../src/bot/registry.ts';
import {
  CROSSPOSTS_PER_HOUR,
  type DiscordAdapter,
  type DiscordConfig,
  DiscordSink,
  registerCommands,
  restOptions,
  startDiscord,
} from '../../src/chat/discord/adapter.ts';
import type { Reply } from '../../src/core/reply.ts';
import { DeliveryError } from '../../src/delivery/sink.ts';
import type { DevnetCollectionInfo } from '../../src/devnet/index.ts';
import { COMMANDS_DIR, nativeSymbolsOf } from '../../src/main.ts';
import { FakeDiscord, type InteractionSpec } from '../fakes/discord.ts';
import { type Harness, startHarness } from '../helpers/bot-harness.ts';

const GUILD = '1100000000000000100';
const TEXT = '1100000000000000200';
const ANNOUNCEMENTS = '1100000000000000210';
const FORUM = '1100000000000000220';
const PUBLIC_THREAD = '1100000000000000301';
const PRIVATE_THREAD = '1100000000000000302';
const FORUM_POST = '1100000000000000303';
const ARCHIVED_THREAD = '1100000000000000304';
const LOCKED_THREAD = '1100000000000000305';
const DELETED_THREAD = '1100000000000000306';
const NO_THREAD_RIGHTS = '1100000000000000307';
const ADMIN = { id: '1100000000000000778', username: 'admin' };
const OPERATOR = { id: '1100000000000000777', username: 'operator' };
const COLLECTOR = { id: '1100000000000000779', username: 'collector' };
/** A server that has not installed the bot, where a member uses the app installed to their account. */
const FOREIGN_GUILD = '1100000000000000400';
const FOREIGN_CHANNEL = '1100000000000000401';
/** A group DM among people, where the bot is not a recipient. */
const GROUP_DM = '1100000000000000402';
const MANAGE_GUILD = String(1n << 5n);
/** View Channel, Send Messages, Embed Links, Send Messages in Threads. */
const VIEW = 1n << 10n;
const SEND = 1n << 11n;
const EMBED = 1n << 14n;
const SEND_IN_THREADS = 1n << 38n;

let h: Harness;
let fake: FakeDiscord;
let adapter: DiscordAdapter;
let config: DiscordConfig;
let moonCats: DevnetCollectionInfo;
let engine: CommandEngine;

type Embed = {
  title?: string;
  description?: string;
  fields?: Array<{ name: string; value: string }>;
  footer?: { text: string };
};
type Answer = { embeds: Embed[]; ephemeral: boolean };

/** Sends an interaction and returns the bot's answer (these commands answer without deferral). */
async function interact(spec: InteractionSpec): Promise<Answer> {
  const { id } = fake.dispatchInteraction(spec);
  const callback = await fake.nextCall('POST', new RegExp(`^/interactions/${id}/`), 15_000);
  const data = (callback.body?.data ?? {}) as { embeds?: Embed[]; flags?: number };
  expect(Number(callback.body?.type)).toBe(4);
  return { embeds: data.embeds ?? [], ephemeral: ((data.flags ?? 0) & 64) !== 0 };
}

function text(answer: Answer): string {
  return answer.embeds
    .map((e) => [e.title, e.description, ...(e.fields ?? []).flatMap((f) => [f.name, f.value])].join('\n'))
    .join('\n');
}

/** An interaction through the app installed to COLLECTOR's account, in a server without the bot. */
const inForeignServer = {
  install: 'user',
  guildId: FOREIGN_GUILD,
  channelId: FOREIGN_CHANNEL,
  user: COLLECTOR,
} as const;
/** The same person in a group DM with friends. */
const inGroupDm = { install: 'user', guildId: null, context: 2, channelId: GROUP_DM, user: COLLECTOR } as const;

const alert = (title: string): Reply => ({ title, tone: 'sale', lines: ['Sold for 1 DEV'] });

function titlesIn(channelId: string): string[] {
  return (fake.messages.get(channelId) ?? []).flatMap((m) => (m.embeds as Embed[]).map((e) => e.title ?? ''));
}

beforeAll(async () => {
  h = await startHarness();
  const found = h.devnet.collections.devnet?.find((c) => c.name === 'Moon Cats');
  if (!found) throw new Error('devnet has no Moon Cats');
  moonCats = found;
  fake = await FakeDiscord.start({
    guilds: [
      {
        id: GUILD,
        name: 'Test Guild',
        channels: [TEXT, ANNOUNCEMENTS, FORUM],
        announcementChannels: [ANNOUNCEMENTS],
        forums: [FORUM],
        threads: [
          { id: PUBLIC_THREAD, parentId: TEXT, type: 11, name: 'drops' },
          { id: PRIVATE_THREAD, parentId: TEXT, type: 12, name: 'whales' },
          { id: FORUM_POST, parentId: FORUM, type: 11, name: 'Moon Cats sales' },
          { id: ARCHIVED_THREAD, parentId: TEXT, type: 11, archived: true },
          { id: LOCKED_THREAD, parentId: TEXT, type: 11, archived: true, locked: true },
          { id: DELETED_THREAD, parentId: TEXT, type: 11 },
          // Private: the bot has not joined it, so discord.js has no channel object for it.
          { id: NO_THREAD_RIGHTS, parentId: TEXT, type: 12 },
        ],
      },
    ],
  });
  engine = new CommandEngine({
    platform: h.platform,
    store: h.store,
    logger: pino({ level: 'silent' }),
    settings: {
      operators: [`discord:${OPERATOR.id}`],
      projectId: h.devnet.projectId,
      allowlistAudience: 1,
      defaultNetwork: 'devnet',
      version: 'test',
    },
    commands: await loadCommands(COMMANDS_DIR),
    nativeSymbols: nativeSymbolsOf(h.devnet),
    userLimit: { capacity: 1_000, refillPerSecond: 1_000 },
    chatLimit: { capacity: 1_000, refillPerSecond: 1_000 },
  });
  config = {
    token: fake.token,
    applicationId: fake.applicationId,
    guildId: fake.guildId,
    apiRoot: fake.api,
    managePermission: 'ManageGuild',
  };
  adapter = await startDiscord({
    config,
    engine,
    logger: pino({ level: 'silent' }),
    clientOptions: { rest: { retries: 1, timeout: 5_000 } },
    deferAfterMs: 5_000,
    // As main wires it: the chat's setting, which /settings crosspost=on writes.
    crosspostIn: (channelId) => h.store.chat(`discord:${channelId}`).crosspost === true,
  });
});

afterAll(async () => {
  await adapter?.stop();
  await fake?.close();
  await h?.close();
});

describe('Discord threads and forum posts', () => {
  it('GIVEN /watch add in a public thread, a private thread and a forum post THEN each rule alerts into its own thread', async () => {
    for (const thread of [PUBLIC_THREAD, PRIVATE_THREAD, FORUM_POST]) {
      const answer = await interact({
        kind: 'command',
        name: 'watch',
        subcommand: 'add',
        options: { collection: `devnet:${moonCats.address}` },
        channelId: thread,
        user: ADMIN,
        permissions: MANAGE_GUILD,
      });
      expect(text(answer)).toContain('Watching');
      const rules = await h.store.rulesOf(`discord:${thread}`);
      expect(rules.map((r) => r.destination)).toEqual([{ platform: 'discord', chatId: thread }]);
      const destination = rules[0]?.destination.chatId ?? '';
      await adapter.sink.send(destination, [alert(`Sold in ${thread}`)], `thread-${thread}`);
      expect(titlesIn(thread)).toEqual([`Sold in ${thread}`]);
    }
    // Nothing went to the threads' parents.
    expect(titlesIn(TEXT)).toEqual([]);
    expect(titlesIn(FORUM)).toEqual([]);
  });

  it('GIVEN a thread where the bot lacks "Send Messages in Threads" THEN /watch add and /digest set say so and keep nothing; Send Messages alone is enough in a channel', async () => {
    const withoutThreads = String(VIEW | SEND | EMBED);
    const watch = await interact({
      kind: 'command',
      name: 'watch',
      subcommand: 'add',
      options: { collection: `devnet:${moonCats.address}` },
      channelId: NO_THREAD_RIGHTS,
      user: ADMIN,
      permissions: MANAGE_GUILD,
      appPermissions: withoutThreads,
    });
    expect(text(watch)).toContain('"Send Messages in Threads"');
    expect(text(watch)).not.toContain('Watching');
    const digest = await interact({
      kind: 'command',
      name: 'digest',
      subcommand: 'set',
      options: { time: '09:00', timezone: 'UTC' },
      channelId: NO_THREAD_RIGHTS,
      user: ADMIN,
      permissions: MANAGE_GUILD,
      appPermissions: String(VIEW | SEND_IN_THREADS),
    });
    expect(text(digest)).toContain('"Embed Links"');
    expect(await h.store.rulesOf(`discord:${NO_THREAD_RIGHTS}`)).toEqual([]);
    expect(h.store.chat(`discord:${NO_THREAD_RIGHTS}`).digest).toBeUndefined();
    const inChannel = await interact({
      kind: 'command',
      name: 'watch',
      subcommand: 'add',
      options: { collection: `devnet:${moonCats.address}` },
      channelId: TEXT,
      user: ADMIN,
      permissions: MANAGE_GUILD,
      appPermissions: withoutThreads,
    });
    expect(text(inChannel)).toContain('Watching');
  });

  it('GIVEN an archived thread THEN the bot reopens it and the alert arrives there', async () => {
    const id = await adapter.sink.send(ARCHIVED_THREAD, [alert('Sold: archived')], 'archived-1');
    const refused = await fake.nextCall('POST', new RegExp(`^/channels/${ARCHIVED_THREAD}/messages$`));
    expect(refused.status).toBe(400);
    const reopened = await fake.nextCall('PATCH', new RegExp(`^/channels/${ARCHIVED_THREAD}$`));
    expect(reopened.body).toEqual({ archived: false });
    expect(fake.thread(ARCHIVED_THREAD).archived).toBe(false);
    expect(fake.messages.get(ARCHIVED_THREAD)?.map((m) => m.id)).toEqual([id]);
  });

  it('GIVEN a locked archived thread or a deleted thread THEN the failure is permanent (the dispatcher pauses its rules, as for a deleted channel); with Manage Threads a locked one is reopened', async () => {
    const locked = await adapter.sink.send(LOCKED_THREAD, [alert('Sold: locked')], 'locked-1').catch((e) => e);
    expect(locked).toBeInstanceOf(DeliveryError);
    expect((locked as DeliveryError).permanent).toBe(true);
    expect((locked as DeliveryError).message).toContain('archived');
    expect(fake.messages.get(LOCKED_THREAD) ?? []).toEqual([]);

    fake.unknownChannels.add(DELETED_THREAD);
    const deleted = await adapter.sink.send(DELETED_THREAD, [alert('Sold: gone')], 'deleted-1').catch((e) => e);
    expect(deleted).toBeInstanceOf(DeliveryError);
    expect((deleted as DeliveryError).permanent).toBe(true);
    expect((deleted as DeliveryError).message).toContain('10003');

    fake.botManagesThreads = true;
    try {
      await adapter.sink.send(LOCKED_THREAD, [alert('Sold: locked, reopened')], 'locked-2');
      expect(titlesIn(LOCKED_THREAD)).toEqual(['Sold: locked, reopened']);
    } finally {
      fake.botManagesThreads = false;
    }
  });
});

describe('Discord announcement channels', () => {
  it('GIVEN /settings crosspost=on THEN it is refused outside an announcement channel and kept in one', async () => {
    const elsewhere = await interact({
      kind: 'command',
      name: 'settings',
      options: { crosspost: 'on' },
      channelId: TEXT,
      user: ADMIN,
      permissions: MANAGE_GUILD,
    });
    expect(text(elsewhere)).toContain('announcement channel only');
    expect(h.store.chat(`discord:${TEXT}`).crosspost).toBeUndefined();
    const member = await interact({
      kind: 'command',
      name: 'settings',
      options: { crosspost: 'on' },
      channelId: ANNOUNCEMENTS,
      permissions: '0',
    });
    expect(text(member)).toMatch(/Manage Server/);
    expect(h.store.chat(`discord:${ANNOUNCEMENTS}`).crosspost).toBeUndefined();
    const on = await interact({
      kind: 'command',
      name: 'settings',
      options: { crosspost: 'on' },
      channelId: ANNOUNCEMENTS,
      user: ADMIN,
      permissions: MANAGE_GUILD,
    });
    expect(text(on)).toContain('published to the servers that follow this channel');
    expect(on.embeds[0]?.fields).toContainEqual(expect.objectContaining({ name: 'Crosspost', value: 'on' }));
    expect(h.store.chat(`discord:${ANNOUNCEMENTS}`).crosspost).toBe(true);
  });

  it(`GIVEN crosspost on THEN each alert is published, up to ${CROSSPOSTS_PER_HOUR} an hour; past it alerts are posted in the channel only, without waiting`, async () => {
    expect(h.store.chat(`discord:${ANNOUNCEMENTS}`).crosspost).toBe(true);
    const ids: string[] = [];
    for (let i = 0; i < CROSSPOSTS_PER_HOUR + 2; i++) {
      ids.push(await adapter.sink.send(ANNOUNCEMENTS, [alert(`Sold: news ${i}`)], `news-${i}`));
    }
    const stored = fake.messages.get(ANNOUNCEMENTS) ?? [];
    expect(stored.map((m) => m.id)).toEqual(ids);
    const published = stored.filter((m) => (m.flags & 1) === 1).map((m) => m.id);
    expect(published).toEqual(ids.slice(0, CROSSPOSTS_PER_HOUR));
    const crossposts = fake.calls.filter((c) => c.path.endsWith('/crosspost'));
    expect(crossposts).toHaveLength(CROSSPOSTS_PER_HOUR);
    expect(crossposts.every((c) => c.status === 200 && c.authorized)).toBe(true);
    // A resend of a published alert (same nonce) publishes nothing twice.
    await adapter.sink.send(ANNOUNCEMENTS, [alert('Sold: news 0')], 'news-0');
    expect(fake.calls.filter((c) => c.path.endsWith('/crosspost'))).toHaveLength(CROSSPOSTS_PER_HOUR);
    // The other channels are not published.
    expect(
      fake.calls.some((c) => c.path.includes(`/channels/${TEXT}/messages/`) && c.path.endsWith('/crosspost')),
    ).toBe(false);
  });

  it('GIVEN a process that does not know the channel spent its hour (a restart) THEN Discord’s 429 on the crosspost does not hold the alert', async () => {
    // A fresh sink, as after a restart: it has counted nothing, Discord has.
    const rest = new REST({ ...restOptions(config), retries: 1, timeout: 5_000 }).setToken(config.token);
    const restarted = new DiscordSink(rest, engine.buttonCodec(90), undefined, {
      crosspostIn: (channelId) => h.store.chat(`discord:${channelId}`).crosspost === true,
    });
    const started = Date.now();
    const id = await restarted.send(ANNOUNCEMENTS, [alert('Sold: after restart')], 'news-restart');
    expect(Date.now() - started).toBeLessThan(10_000);
    const refused = fake.calls.filter((c) => c.path.endsWith(`/messages/${id}/crosspost`));
    expect(refused.map((c) => c.status)).toEqual([429]);
    expect(fake.messages.get(ANNOUNCEMENTS)?.find((m) => m.id === id)?.flags).toBe(0);
    // The next one is not even tried: Discord said how long to wait.
    const next = await restarted.send(ANNOUNCEMENTS, [alert('Sold: after restart 2')], 'news-restart-2');
    expect(fake.calls.filter((c) => c.path.endsWith(`/messages/${next}/crosspost`))).toEqual([]);
  });
});

describe('Discord user installs', () => {
  it('GIVEN global registration THEN every command installs to servers and accounts (integration_types 0, 1) and runs in servers, the bot DM and other DMs (contexts 0, 1, 2); guild registration omits them', async () => {
    await registerCommands({ config: { ...config, guildId: undefined }, commands: engine.commands });
    const global = fake.commands.global as Array<{ name: string; integration_types?: number[]; contexts?: number[] }>;
    expect(global.map((c) => c.name)).toEqual(engine.commands.map((c) => c.name));
    for (const command of global) {
      expect(command.integration_types, command.name).toEqual([0, 1]);
      expect(command.contexts, command.name).toEqual([0, 1, 2]);
    }
    const guild = (fake.commands.guild.get(GUILD) ?? []) as Array<Record<string, unknown>>;
    expect(guild.length).toBeGreaterThan(0);
    expect(guild.some((c) => 'integration_types' in c || 'contexts' in c)).toBe(false);
  });

  it('GIVEN a market command in a server without the bot THEN it answers through the interaction, for all to see, and the bot posts nothing there', async () => {
    fake.foreignChannels.add(FOREIGN_CHANNEL);
    fake.foreignChannels.add(GROUP_DM);
    const from = fake.calls.length;
    const floor = await interact({
      kind: 'command',
      name: 'floor',
      options: { collection: 'Moon Cats' },
      ...inForeignServer,
    });
    expect(text(floor)).toContain('Moon Cats');
    expect(floor.ephemeral).toBe(false);
    const posted = fake.calls
      .slice(from)
      .filter((c) => c.authorized && c.path.includes(`/channels/${FOREIGN_CHANNEL}`));
    expect(posted).toEqual([]);
  });

  it('GIVEN /watch add through a user install THEN the rule is the person’s own: it needs no server permission, is answered only to them, and its alerts reach their DM', async () => {
    const answer = await interact({
      kind: 'command',
      name: 'watch',
      subcommand: 'add',
      options: { collection: `devnet:${moonCats.address}`, kinds: 'sale' },
      permissions: '0',
      ...inForeignServer,
    });
    expect(text(answer)).toContain('Watching');
    expect(answer.ephemeral).toBe(true);
    expect(answer.embeds[0]?.footer?.text).toContain('your alerts and digests go to your DM with the bot');
    const opened = fake.calls.find((c) => c.method === 'POST' && c.path.endsWith('/users/@me/channels'));
    expect(opened?.body).toEqual({ recipient_id: COLLECTOR.id });
    const dm = fake.dmChannels.get(COLLECTOR.id) ?? '';
    expect(dm).not.toBe('');
    expect(await h.store.rulesOf(`discord:${FOREIGN_CHANNEL}`)).toEqual([]);
    const rules = await h.store.rulesOf(`discord:${dm}`);
    expect(rules.map((r) => [r.destination, r.createdBy])).toEqual([
      [{ platform: 'discord', chatId: dm }, `discord:${COLLECTOR.id}`],
    ]);
    await adapter.sink.send(rules[0]?.destination.chatId ?? '', [alert('Sold: for the collector')], 'personal-1');
    expect(titlesIn(dm)).toEqual(['Sold: for the collector']);
    expect(titlesIn(FOREIGN_CHANNEL)).toEqual([]);
  });

  it('GIVEN the same person in a group DM and in their DM with the bot THEN they see the same personal rules (limits count per person); only the group DM’s answer is hidden from others', async () => {
    const dm = fake.dmChannels.get(COLLECTOR.id) ?? '';
    const [rule] = await h.store.rulesOf(`discord:${dm}`);
    expect(rule).toBeDefined();
    const inGroup = await interact({ kind: 'command', name: 'watch', subcommand: 'list', ...inGroupDm });
    expect(text(inGroup)).toContain(rule?.id ?? 'no rule');
    expect(inGroup.ephemeral).toBe(true);
    const inBotDm = await interact({
      kind: 'command',
      name: 'watch',
      subcommand: 'list',
      guildId: null,
      channelId: dm,
      user: COLLECTOR,
    });
    expect(text(inBotDm)).toContain(rule?.id ?? 'no rule');
    expect(inBotDm.ephemeral).toBe(false);
    // Another person's install has rules of its own.
    const other = await interact({
      kind: 'command',
      name: 'watch',
      subcommand: 'list',
      ...inGroupDm,
      user: { id: '1100000000000000780', username: 'friend' },
    });
    expect(text(other)).not.toContain(rule?.id ?? 'no rule');
  });

  it('GIVEN an operator command through a user install THEN it is refused with the reason, even for an operator; the bot DM is fine', async () => {
    const refused = await interact({
      kind: 'command',
      name: 'project',
      subcommand: 'contracts',
      ...inForeignServer,
      user: OPERATOR,
    });
    expect(text(refused)).toContain("/project is for the bot's operators");
    expect(text(refused)).toContain('installed to your account only');
    expect(refused.ephemeral).toBe(true);
    const inDm = await interact({
      kind: 'command',
      name: 'project',
      subcommand: 'contracts',
      guildId: null,
      channelId: '1100000000000000403',
      user: OPERATOR,
    });
    expect(text(inDm)).not.toContain('installed to your account only');
  });
});
