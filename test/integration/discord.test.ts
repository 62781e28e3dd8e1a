import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, GatewayIntentBits } from 'discord.js';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CommandDefinition, isGroup } from '../../src/bot/command.ts';
import { CommandEngine } from '../../src/bot/engine.ts';
import { loadCommands } from '../../src/bot/registry.ts';
import {
  DEFER_AFTER_MS,
  type DiscordAdapter,
  type DiscordAdapterOptions,
  type DiscordConfig,
  EXPIRED_BUTTON_TEXT,
  nonceOf,
  startDiscord,
} from '../../src/chat/discord/adapter.ts';
import { EXTRA_OPTIONS, toApplicationCommands } from '../../src/chat/discord/commands.ts';
import { DISCORD_LIMITS } from '../../src/chat/discord/render.ts';
import { ChatImages, imageHostsOf } from '../../src/chat/images/images.ts';
import { ChatStartError } from '../../src/chat/start-error.ts';
import type { Reply } from '../../src/core/reply.ts';
import { DeliveryError } from '../../src/delivery/sink.ts';
import type { DevnetCollectionInfo } from '../../src/devnet/index.ts';
import { COMMANDS_DIR, nativeSymbolsOf } from '../../src/main.ts';
import { FakeDiscord, type FakeMessage, type InteractionSpec, type RecordedCall } from '../fakes/discord.ts';
import { type Harness, startHarness } from '../helpers/bot-harness.ts';
import { listedToken } from '../helpers/devnet-data.ts';

const OPERATOR = { id: '1100000000000000777', username: 'operator' };
const ADMIN = { id: '1100000000000000778', username: 'admin' };
const MEMBER = { id: '1100000000000000779', username: 'member' };
const MANAGE_GUILD = String(1n << 5n);
const NO_PERMISSIONS = '0';
const ALERTS_CHANNEL = '1100000000000000201';
const COLLECTORS_ROLE = '1100000000000000701';
const STAFF_ROLE = '1100000000000000702';
const GONE_CHANNEL = '1100000000000000202';
const ERROR_COLOR = 0xed4245;

let h: Harness;
let fake: FakeDiscord;
let engine: CommandEngine;
let adapter: DiscordAdapter;
let config: DiscordConfig;
let moonCats: DevnetCollectionInfo;
let images: ChatImages;
/** Serves a PNG, an image type chats fetch themselves. */
let pngServer: Server;
let pngUrl: string;

type Embed = {
  title?: string;
  color?: number;
  description?: string;
  fields?: Array<{ name: string; value: string }>;
  footer?: { text: string };
  image?: { url: string };
  thumbnail?: { url: string };
};
type Button = { type: number; style: number; label: string; custom_id?: string; url?: string };
type MessageBody = {
  content?: string;
  embeds?: Embed[];
  components?: Array<{ components: Button[] }>;
  allowed_mentions?: { parse?: string[]; roles?: string[] };
  flags?: number;
};

interface Answer {
  /** Interaction callback type (4 reply, 5 deferred, 7 update, 8 autocomplete). */
  type: number;
  message: MessageBody;
  ephemeral: boolean;
  files: RecordedCall['files'];
  /** From the interaction's dispatch to its callback (answer or deferral). */
  callbackMs: number;
  /** The message as the stand-in keeps it (attachments, resolved image URLs). */
  stored: () => FakeMessage | undefined;
}

/** Sends an interaction and returns what the bot answered, following a deferral to its edit. */
async function interact(spec: InteractionSpec): Promise<Answer> {
  const sent = Date.now();
  const { id, token } = fake.dispatchInteraction(spec);
  const callback = await fake.nextCall('POST', new RegExp(`^/interactions/${id}/`), 10_000);
  const type = Number(callback.body?.type);
  const common = { type, callbackMs: callback.at - sent, stored: () => fake.original(token) };
  if (type !== 5 && type !== 6) {
    const message = (callback.body?.data ?? {}) as MessageBody;
    return { ...common, message, ephemeral: ((message.flags ?? 0) & 64) !== 0, files: callback.files };
  }
  const next = await fake.nextCall('*', new RegExp(`^/webhooks/\\d+/${token}`), 10_000);
  const final = next.method === 'DELETE' ? await fake.nextCall('POST', new RegExp(`^/webhooks/\\d+/${token}$`)) : next;
  const message = (final.body ?? {}) as MessageBody;
  return { ...common, message, ephemeral: ((message.flags ?? 0) & 64) !== 0, files: final.files };
}

function isPng(file: RecordedCall['files'][number] | undefined, width: number, height: number): boolean {
  if (!file) return false;
  const header = [file.data.subarray(1, 4).toString(), file.data.readUInt32BE(16), file.data.readUInt32BE(20)];
  return JSON.stringify(header) === JSON.stringify(['PNG', width, height]);
}

function withinLimits(message: MessageBody): void {
  const embeds = message.embeds ?? [];
  expect(embeds.length).toBeGreaterThan(0);
  expect(embeds.length).toBeLessThanOrEqual(DISCORD_LIMITS.embedsPerMessage);
  let total = 0;
  for (const embed of embeds) {
    expect(embed.title?.length ?? 0).toBeLessThanOrEqual(DISCORD_LIMITS.title);
    expect(embed.description?.length ?? 0).toBeLessThanOrEqual(DISCORD_LIMITS.description);
    expect(embed.fields?.length ?? 0).toBeLessThanOrEqual(DISCORD_LIMITS.fields);
    for (const field of embed.fields ?? []) {
      expect(field.name.length).toBeLessThanOrEqual(DISCORD_LIMITS.fieldName);
      expect(field.value.length).toBeLessThanOrEqual(DISCORD_LIMITS.fieldValue);
    }
    total += (embed.title?.length ?? 0) + (embed.description?.length ?? 0) + (embed.footer?.text.length ?? 0);
    total += (embed.fields ?? []).reduce((n, f) => n + f.name.length + f.value.length, 0);
  }
  expect(total).toBeLessThanOrEqual(DISCORD_LIMITS.embedTotal);
  expect(message.allowed_mentions?.parse).toEqual([]);
  for (const row of message.components ?? []) {
    expect(row.components.length).toBeLessThanOrEqual(DISCORD_LIMITS.buttonsPerRow);
    for (const button of row.components) expect((button.custom_id ?? '').length).toBeLessThanOrEqual(100);
  }
}

function text(message: MessageBody): string {
  return (message.embeds ?? [])
    .map((e) => [e.title, e.description, ...(e.fields ?? []).flatMap((f) => [f.name, f.value])].join('\n'))
    .join('\n');
}

function button(message: MessageBody, label: RegExp): Button | undefined {
  return (message.components ?? []).flatMap((r) => r.components).find((b) => label.test(b.label));
}

/** A token of Moon Cats with more listings than one page shows, from the platform. */
async function tokenWithManyListings(): Promise<{ collection: DevnetCollectionInfo; tokenId: string }> {
  for (const collection of h.devnet.collections.devnet ?? []) {
    const { collectibles } = await h.platform.marketplace.listCollectibles({
      network: 'devnet',
      side: 'listing',
      contractAddress: collection.address,
      filter: { includeEmpty: false },
      page: { pageSize: 40 },
    });
    for (const item of collectibles) {
      const { listings } = await h.platform.marketplace.listListingsForCollectible({
        network: 'devnet',
        contractAddress: collection.address,
        tokenId: item.metadata.tokenId,
        page: { pageSize: 6 },
      });
      if (listings.length >= 6) return { collection, tokenId: item.metadata.tokenId };
    }
  }
  throw new Error('no token with more than one page of listings');
}

function labels(commands: readonly CommandDefinition[]): string[] {
  return commands.flatMap((c) => (isGroup(c) ? c.subcommands.map((s) => `${c.name} ${s.name}`) : [c.name]));
}

beforeAll(async () => {
  h = await startHarness();
  const found = h.devnet.collections.devnet?.find((c) => c.name === 'Moon Cats');
  if (!found) throw new Error('devnet has no Moon Cats');
  moonCats = found;
  fake = await FakeDiscord.start({
    guilds: [
      {
        id: '1100000000000000100',
        name: 'Test Guild',
        channels: ['1100000000000000200', ALERTS_CHANNEL],
        roles: [
          { id: COLLECTORS_ROLE, name: 'collectors', mentionable: true },
          { id: STAFF_ROLE, name: 'staff', mentionable: false },
        ],
      },
    ],
  });
  fake.unknownChannels.add(GONE_CHANNEL);
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
  pngServer = createServer((_, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.alloc(64)));
  await new Promise<void>((resolve) => pngServer.listen(0, '127.0.0.1', resolve));
  pngUrl = `http://127.0.0.1:${(pngServer.address() as AddressInfo).port}/photo.png`;
  // As the bot allows them: the platform's hosts and ports, and here the photo server as one of them.
  images = new ChatImages({
    logger: pino({ level: 'silent' }),
    allowHosts: [...imageHostsOf(Object.values(h.devnet.endpoints)), new URL(pngUrl).host],
  });
  adapter = await startDiscord(mainAdapterOptions());
});

/**
 * The adapter most tests talk to. It defers only past 2.5 s, so that answers stay direct on a
 * loaded machine; the deferral tests start one with the defaults.
 */
function mainAdapterOptions(): DiscordAdapterOptions {
  return {
    config,
    engine,
    logger: pino({ level: 'silent' }),
    clientOptions: { rest: { retries: 1, timeout: 5_000 } },
    deferAfterMs: 2_500,
    images,
  };
}

afterAll(async () => {
  await adapter?.stop();
  await fake?.close();
  await images?.close();
  pngServer?.closeAllConnections();
  await new Promise((resolve) => pngServer?.close(resolve));
  await h?.close();
});

describe('Discord command registration', () => {
  it('registers exactly the registry as guild commands at start-up, with the token and nothing global', async () => {
    const put = await fake.nextCall('PUT', /^\/applications\/\d+\/guilds\/\d+\/commands$/);
    expect(put.authorized).toBe(true);
    const registered = fake.commands.guild.get(fake.guildId) as Array<{
      name: string;
      options: Array<{ name: string; type: number; options?: Array<{ name: string }> }>;
    }>;
    expect(registered.map((c) => c.name)).toEqual(engine.commands.map((c) => c.name));
    expect(fake.commands.global).toEqual([]);
    for (const command of engine.commands) {
      const found = registered.find((c) => c.name === command.name);
      if (isGroup(command)) {
        expect(found?.options.map((o) => o.name)).toEqual(command.subcommands.map((s) => s.name));
        expect(found?.options.every((o) => o.type === 1)).toBe(true);
        for (const sub of command.subcommands) {
          const names = found?.options.find((o) => o.name === sub.name)?.options?.map((o) => o.name) ?? [];
          const own = names.filter(
            (n) => !Object.values(EXTRA_OPTIONS).includes(n as 'network') || sub.options.some((o) => o.name === n),
          );
          expect(new Set(own)).toEqual(new Set(sub.options.map((o) => o.name)));
        }
      } else {
        const names = found?.options.map((o) => o.name) ?? [];
        const own = names.filter(
          (n) => !Object.values(EXTRA_OPTIONS).includes(n as 'network') || command.options.some((o) => o.name === n),
        );
        expect(new Set(own)).toEqual(new Set(command.options.map((o) => o.name)));
      }
    }
  });

  it('maps option types, bounds, choices, autocomplete and member permissions', () => {
    const body = toApplicationCommands(engine.commands, 'ManageGuild') as unknown as Array<{
      name: string;
      default_member_permissions: string | null;
      options: Array<Record<string, unknown> & { name: string; options?: Array<Record<string, unknown>> }>;
    }>;
    const floor = body.find((c) => c.name === 'floor');
    expect(floor?.default_member_permissions).toBeNull();
    expect(floor?.options.find((o) => o.name === 'collection')).toMatchObject({
      type: 3,
      required: true,
      autocomplete: true,
    });
    expect(floor?.options.find((o) => o.name === 'count')).toMatchObject({ type: 4, min_value: 1, max_value: 10 });
    expect(floor?.options.find((o) => o.name === 'network')).toMatchObject({ type: 3, autocomplete: true });
    expect(floor?.options.find((o) => o.name === 'traits')).toMatchObject({ type: 3, required: false });
    // Discord refuses a required option after an optional one.
    for (const command of body) {
      for (const options of [command.options, ...command.options.map((o) => o.options ?? [])]) {
        const firstOptional = options.findIndex((o) => o.required !== true);
        if (firstOptional >= 0) expect(options.slice(firstOptional).some((o) => o.required === true)).toBe(false);
      }
    }
    expect(body.find((c) => c.name === 'unpublish')?.default_member_permissions).toBe('8');
    expect(body.find((c) => c.name === 'project')?.default_member_permissions).toBe('8');
    // A group with a subcommand for everyone stays visible; the engine checks the others.
    expect(body.find((c) => c.name === 'watch')?.default_member_permissions).toBeNull();
    const channels = toApplicationCommands(
      [{ name: 'x', description: 'x', permission: 'manage', options: [], run: async () => ({}) }],
      'ManageChannels',
    )[0] as { default_member_permissions: string };
    expect(channels.default_member_permissions).toBe(String(1n << 4n));
  });
});

describe('Discord interactions', () => {
  it('every command of the registry answers an interaction with embeds within limits and pings nobody', async () => {
    const collection = `devnet:${moonCats.address}`;
    const token = await listedToken(h.platform, moonCats.address);
    const { balances } = await h.platform.indexer.getTokenBalancesByContract({
      network: 'devnet',
      filter: { contractAddresses: [moonCats.address], contractStatus: 'ALL' },
      page: { pageSize: 1 },
    });
    const holder = balances[0]?.accountAddress ?? '';
    const { contacts } = await h.platform.builder.getAudience({ audienceId: 1 });
    const target = h.devnet.collections['devnet-l2']?.at(-1);
    const ruleId = () => h.store.rules.find((r) => r.destination.chatId === fake.channelId)?.id ?? 'r0';
    const plan: Array<[string, () => Record<string, string | number>]> = [
      ['help', () => ({})],
      ['floor', () => ({ collection: 'Moon Cats', count: 3 })],
      ['listings', () => ({ collection, token })],
      ['offers', () => ({ collection, token })],
      ['token', () => ({ collection, token })],
      ['search', () => ({ text: 'moon' })],
      ['traits', () => ({ collection })],
      ['holders', () => ({ collection, count: 3 })],
      ['holdings', () => ({ collection, address: holder })],
      ['buy', () => ({ collection, token, wallet: '0x1111111111111111111111111111111111111111' })],
      ['stats', () => ({ days: 7 })],
      ['status', () => ({})],
      ['settings', () => ({})],
      ['allowlist', () => ({ address: contacts[0]?.address ?? '' })],
      ['unpublish', () => ({ collection: target?.id ?? 1 })],
      ['project contracts', () => ({})],
      ['project sources', () => ({})],
      ['project sponsors', () => ({ network: 'devnet' })],
      ['project audience', () => ({ id: 1 })],
      ['alias set', () => ({ name: 'cats', collection })],
      ['alias list', () => ({})],
      ['alias remove', () => ({ name: 'cats' })],
      ['watch add', () => ({ collection, kinds: 'sale', min: '0.5 DUSD' })],
      ['watch list', () => ({})],
      ['watch test', () => ({ rule: ruleId() })],
      ['watch pause', () => ({ rule: ruleId() })],
      ['watch resume', () => ({ rule: ruleId() })],
      ['watch remove', () => ({ rule: ruleId() })],
      ['digest set', () => ({ time: '09:00', timezone: 'Europe/Paris' })],
      ['digest show', () => ({})],
      ['digest off', () => ({})],
    ];
    const planned = new Map(plan);
    // Unplanned commands (added later, or needing services this engine lacks, like /digest preview) must
    // still answer with an embed; planned ones must succeed.
    const order = [...plan.map(([label]) => label), ...labels(engine.commands).filter((l) => !planned.has(l))];
    expect(order.filter((label) => labels(engine.commands).includes(label))).toHaveLength(order.length);
    for (const label of order) {
      const options = planned.get(label) ?? (() => ({}));
      const [name = '', subcommand] = label.split(' ');
      const answer = await interact({
        kind: 'command',
        name,
        ...(subcommand ? { subcommand } : {}),
        options: options(),
        user: OPERATOR,
        permissions: MANAGE_GUILD,
      });
      expect(answer.type, label).toBe(4);
      withinLimits(answer.message);
      // A failure is ephemeral; every command here succeeds.
      if (planned.has(label)) {
        expect((answer.message.embeds ?? [])[0]?.color, `${label}: ${text(answer.message)}`).not.toBe(ERROR_COLOR);
      }
      if (label === 'buy') expect(answer.files.map((f) => f.name)).toContain('checkout-steps.json');
      if (label === 'unpublish') expect(answer.ephemeral).toBe(true);
      // The rule's minimum keeps the currency it was given in.
      if (label === 'watch add' || label === 'watch list') expect(text(answer.message)).toContain('min 0.5 DUSD');
    }
  });

  it('a slash command error is ephemeral and says what is wrong', async () => {
    const answer = await interact({ kind: 'command', name: 'floor', options: { collection: 'zzz no such thing' } });
    expect(answer.ephemeral).toBe(true);
    expect(text(answer.message)).toContain('No collection matches "zzz no such thing" on devnet.');
  });

  it('autocomplete offers the chat aliases, watched collections and the platform search, and networks', async () => {
    await h.store.updateChat(`discord:${fake.channelId}`, (s) => {
      s.aliases = {};
      s.aliases.kitties = { alias: 'kitties', network: 'devnet', address: moonCats.address, name: 'Moon Cats' };
    });
    const empty = await interact({ kind: 'autocomplete', name: 'floor', focused: { name: 'collection', value: '' } });
    expect(empty.type).toBe(8);
    const emptyChoices = (empty.message as { choices?: Array<{ name: string; value: string }> }).choices ?? [];
    expect(emptyChoices.map((c) => c.value)).toContain('kitties');
    const typed = await interact({
      kind: 'autocomplete',
      name: 'floor',
      focused: { name: 'collection', value: 'moon' },
    });
    const choices = (typed.message as { choices?: Array<{ name: string; value: string }> }).choices ?? [];
    // Moon Cats is offered once, under the chat's alias; the search adds the others.
    expect(choices.map((c) => c.name)).toEqual(
      expect.arrayContaining(['kitties (Moon Cats)', 'Moon Cats Rescue (devnet)']),
    );
    expect(choices.filter((c) => c.name.includes('Moon Cats (') || c.value === `devnet:${moonCats.address}`)).toEqual(
      [],
    );
    expect(choices.find((c) => c.name === 'Moon Cats Rescue (devnet)')?.value).toMatch(/^devnet:0x[0-9a-f]{40}$/);
    expect(choices.length).toBeLessThanOrEqual(25);
    const networks = await interact({
      kind: 'autocomplete',
      name: 'watch',
      subcommand: 'add',
      focused: { name: 'network', value: 'dev' },
    });
    const names = ((networks.message as { choices?: Array<{ name: string }> }).choices ?? []).map((c) => c.name);
    expect(names).toEqual(expect.arrayContaining(['devnet', 'devnet-l2']));
  });

  it('a "More" button on /listings updates the message in place with the next page', async () => {
    const { collection, tokenId } = await tokenWithManyListings();
    const first = await interact({
      kind: 'command',
      name: 'listings',
      options: { collection: `devnet:${collection.address}`, token: tokenId },
    });
    const more = button(first.message, /More/);
    expect(more?.custom_id).toBeDefined();
    expect((first.message.embeds ?? [])[0]?.footer?.text).toContain('page 1');
    const next = await interact({ kind: 'button', customId: more?.custom_id ?? '' });
    expect(next.type).toBe(7);
    expect((next.message.embeds ?? [])[0]?.footer?.text).toContain('page 2');
    expect(button(next.message, /Cheaper/)).toBeDefined();
    withinLimits(next.message);
  });

  it('an operator confirms /unpublish with its button; the answers are ephemeral replies', async () => {
    const target = h.devnet.collections['devnet-l2']?.at(-2);
    if (!target) throw new Error('no collection on devnet-l2');
    const ask = await interact({
      kind: 'command',
      name: 'unpublish',
      options: { collection: target.id },
      user: OPERATOR,
    });
    expect(ask.ephemeral).toBe(true);
    const confirm = button(ask.message, /Confirm/);
    const refused = await interact({
      kind: 'button',
      customId: confirm?.custom_id ?? '',
      user: ADMIN,
      permissions: '8',
    });
    expect(refused.ephemeral).toBe(true);
    expect(text(refused.message)).toMatch(/operators may run/);
    const done = await interact({ kind: 'button', customId: confirm?.custom_id ?? '', user: OPERATOR });
    expect(done.type).toBe(4);
    expect((done.message.embeds ?? [])[0]?.title).toBe('Collection unpublished');
  });

  it('an unknown or expired button says so, only to the person who pressed it', async () => {
    for (const customId of ['r0:#notstoredanywhere0000000', 'something-else']) {
      const answer = await interact({ kind: 'button', customId });
      expect(answer.type).toBe(4);
      expect(answer.ephemeral).toBe(true);
      expect(text(answer.message)).toContain(EXPIRED_BUTTON_TEXT);
    }
  });

  it('a member without Manage Server cannot add a watch rule; a member with it can', async () => {
    const options = { collection: `devnet:${moonCats.address}`, kinds: 'listing' };
    const before = h.store.rules.length;
    const denied = await interact({
      kind: 'command',
      name: 'watch',
      subcommand: 'add',
      options,
      user: MEMBER,
      permissions: NO_PERMISSIONS,
    });
    expect(denied.ephemeral).toBe(true);
    expect(h.store.rules.length).toBe(before);
    const allowed = await interact({
      kind: 'command',
      name: 'watch',
      subcommand: 'add',
      options,
      user: ADMIN,
      permissions: MANAGE_GUILD,
    });
    expect((allowed.message.embeds ?? [])[0]?.title).toBe('Watching');
    const rule = h.store.rules.at(-1);
    expect(rule?.destination).toEqual({ platform: 'discord', chatId: fake.channelId });
    expect(rule?.createdBy).toBe(`discord:${ADMIN.id}`);
  });

  it('GIVEN mention= on a watch rule THEN a mentionable role is taken, while @everyone, a role of no server and a role only privileged members may ping are refused unless the person may ping it', async () => {
    const add = (role: string, permissions: string) =>
      interact({
        kind: 'command',
        name: 'watch',
        subcommand: 'add',
        options: { collection: `devnet:${moonCats.address}`, kinds: 'sale', mention: role },
        user: ADMIN,
        permissions,
      });
    const before = h.store.rules.length;
    expect(text((await add(fake.guildId, MANAGE_GUILD)).message)).toContain("That is the server's everyone role");
    expect(text((await add('1100000000000000999', MANAGE_GUILD)).message)).toContain('This server has no role');
    const staff = text((await add(STAFF_ROLE, MANAGE_GUILD)).message);
    expect(staff).toContain('the permission to mention all roles');
    expect(h.store.rules.length).toBe(before);
    expect((await add(COLLECTORS_ROLE, MANAGE_GUILD)).message.embeds?.[0]?.title).toBe('Watching');
    expect(h.store.rules.at(-1)?.mentionRole).toBe(COLLECTORS_ROLE);
    const MENTION_EVERYONE = String(0x20 | (1 << 17));
    expect((await add(STAFF_ROLE, MENTION_EVERYONE)).message.embeds?.[0]?.title).toBe('Watching');
    expect(h.store.rules.at(-1)?.mentionRole).toBe(STAFF_ROLE);
    for (const rule of h.store.rules.slice(before)) await h.store.updateRule(rule.id, () => null);
  });

  it('GIVEN the traits option of /floor THEN its filters apply, and a key given twice, or also given as an option, is refused', async () => {
    const floor = (options: Record<string, string | number>) =>
      interact({ kind: 'command', name: 'floor', options: { collection: `devnet:${moonCats.address}`, ...options } });
    const filtered = await floor({ traits: 'background=aurora' });
    expect(filtered.message.embeds?.[0]?.title).toContain('Floor of Moon Cats');
    expect(text((await floor({ traits: 'background=aurora background=void' })).message)).toContain(
      'background is given twice',
    );
    expect(text((await floor({ count: 2, traits: 'count=5' })).message)).toContain('count is given twice');
  });

  it('in a direct message the person is the chat: they may change its settings without any permission', async () => {
    const answer = await interact({
      kind: 'command',
      name: 'settings',
      options: { network: 'devnet-l2' },
      guildId: null,
      channelId: '1100000000000000300',
      user: MEMBER,
    });
    expect(answer.ephemeral).toBe(false);
    expect(text(answer.message)).toContain('Default network is now');
    expect(h.store.chat('discord:1100000000000000300').network).toBe('devnet-l2');
  });

  it('a slow command is deferred within the deadline and its answer arrives as an edit', async () => {
    const slow = await startDiscordAgainst({ deferAfterMs: 100 });
    h.devnet.setFaults({ latencyMs: 400 });
    try {
      const answer = await interact({ kind: 'command', name: 'status' });
      expect(answer.type).toBe(5);
      withinLimits(answer.message);
      const error = await interact({ kind: 'command', name: 'floor', options: { collection: 'zzz nothing' } });
      expect(error.type).toBe(5);
      expect(error.ephemeral).toBe(true);
    } finally {
      h.devnet.clearFaults();
      await slow.stop();
    }
  });
});

/** A second adapter on the same stand-in, which then gets the interactions (the first one is paused). */
async function startDiscordAgainst(extra: { deferAfterMs?: number }): Promise<{ stop: () => Promise<void> }> {
  await adapter.stop();
  const second = await startDiscord({
    config,
    engine,
    logger: pino({ level: 'silent' }),
    registerCommands: false,
    images,
    ...extra,
  });
  return {
    async stop() {
      await second.stop();
      adapter = await startDiscord({ ...mainAdapterOptions(), registerCommands: false });
    },
  };
}

describe('Discord deferral of slow answers', () => {
  const floor = (createdAt?: number): InteractionSpec => ({
    kind: 'command',
    name: 'floor',
    options: { collection: `devnet:${moonCats.address}`, count: 2 },
    ...(createdAt === undefined ? {} : { createdAt }),
  });

  it('GIVEN a command slower than 1 s THEN it is deferred 1 s after Discord created it, and at once the next time until it is quick again; /help never', async () => {
    const quick = await startDiscordAgainst({});
    try {
      expect(DEFER_AFTER_MS).toBe(1_000);
      h.devnet.setFaults({ latencyMs: 1_300 });
      const help = await interact({ kind: 'command', name: 'help' });
      expect(help.type).toBe(4);
      const first = await interact(floor());
      expect(first.type).toBe(5);
      expect(first.callbackMs).toBeGreaterThanOrEqual(900);
      expect(first.callbackMs).toBeLessThan(1_800);
      withinLimits(first.message);
      // It was slow: the next run is deferred without waiting for a timer.
      const second = await interact(floor());
      expect(second.type).toBe(5);
      expect(second.callbackMs).toBeLessThan(800);
      h.devnet.clearFaults();
      const third = await interact(floor());
      expect(third.type).toBe(5);
      // The third was quick: the fourth is answered directly.
      const fourth = await interact(floor());
      expect(fourth.type).toBe(4);
      expect((await interact({ kind: 'command', name: 'help' })).type).toBe(4);
    } finally {
      h.devnet.clearFaults();
      await quick.stop();
    }
  });

  it('GIVEN an interaction that reaches the bot 900 ms after Discord created it THEN a slow answer is deferred within 100 ms or so', async () => {
    const quick = await startDiscordAgainst({});
    try {
      h.devnet.setFaults({ latencyMs: 1_300 });
      const late = await interact(floor(Date.now() - 900));
      expect(late.type).toBe(5);
      expect(late.callbackMs).toBeLessThan(800);
      // Created now, a quick answer still goes directly.
      h.devnet.clearFaults();
      expect((await interact({ kind: 'command', name: 'settings' })).type).toBe(4);
    } finally {
      h.devnet.clearFaults();
      await quick.stop();
    }
  });
});

describe('Discord images', () => {
  const tokenImage = (tokenId: number) => `${h.devnet.url}/assets/devnet/${moonCats.address}/${tokenId}.svg`;

  it('GIVEN a command whose answer has an SVG token image THEN it is uploaded as a PNG that the embed shows', async () => {
    const answer = await interact({
      kind: 'command',
      name: 'floor',
      options: { collection: `devnet:${moonCats.address}`, count: 2 },
    });
    const thumbnail = (answer.message.embeds ?? [])[0]?.thumbnail?.url ?? '';
    expect(thumbnail).toMatch(/^attachment:\/\/image-[0-9a-f]{16}\.png$/);
    const file = answer.files.find((f) => `attachment://${f.name}` === thumbnail);
    expect(isPng(file, 512, 512)).toBe(true);
    expect(answer.files.filter((f) => f.name.endsWith('.png'))).toHaveLength(1);
    // Discord resolves the reference to the uploaded file.
    const stored = answer.stored();
    const uploaded = stored?.attachments.find((a) => a.filename === file?.name);
    expect((stored?.embeds[0] as Embed | undefined)?.thumbnail?.url).toBe(uploaded?.url);
  });

  it('GIVEN an alert burst with SVG images THEN each is uploaded once and shown in its embed; an edit uploads them again in place of the old ones', async () => {
    const alert = (title: string, image: string): Reply => ({ title, tone: 'sale', lines: ['Sold'], image });
    const replies = [alert('Sold: G', tokenImage(1)), alert('Sold: H', tokenImage(2)), alert('Sold: I', tokenImage(1))];
    const id = await adapter.sink.send(ALERTS_CHANNEL, replies, 'key-images');
    const post = await fake.nextCall('POST', new RegExp(`^/channels/${ALERTS_CHANNEL}/messages$`));
    expect(post.files.map((f) => f.name)).toHaveLength(2);
    expect(post.files.every((f) => isPng(f, 512, 512))).toBe(true);
    expect(post.body?.attachments).toEqual(post.files.map((f, i) => ({ id: i, filename: f.name })));
    const posted = fake.messages.get(ALERTS_CHANNEL)?.find((m) => m.id === id);
    const shown = ((posted?.embeds ?? []) as Embed[]).map((e) => e.image?.url);
    const urls = posted?.attachments.map((a) => a.url) ?? [];
    expect(shown).toEqual([urls[0], urls[1], urls[0]]);
    expect(urls.every((u) => u.startsWith('https://cdn.discordapp.test/'))).toBe(true);

    await adapter.sink.edit(ALERTS_CHANNEL, id, [{ ...alert('Reversed: Sold: G', tokenImage(1)), tone: 'warning' }]);
    const patch = await fake.nextCall('PATCH', new RegExp(`^/channels/${ALERTS_CHANNEL}/messages/${id}$`));
    expect(patch.files.map((f) => f.name)).toEqual([post.files[0]?.name]);
    expect(posted?.attachments.map((a) => a.filename)).toEqual([post.files[0]?.name]);
    expect(((posted?.embeds ?? []) as Embed[])[0]?.image?.url).toBe(posted?.attachments[0]?.url);
  });

  it('GIVEN ten alerts with an image and a thumbnail each THEN the ten files a message carries go to the images first', async () => {
    const replies: Reply[] = Array.from({ length: 10 }, (_, i) => ({
      title: `Sold: burst ${i}`,
      tone: 'sale',
      image: tokenImage(10 + i),
      thumbnail: tokenImage(30 + i),
    }));
    const id = await adapter.sink.send(ALERTS_CHANNEL, replies, 'key-ten-images');
    const post = await fake.nextCall('POST', new RegExp(`^/channels/${ALERTS_CHANNEL}/messages$`));
    expect(post.files).toHaveLength(10);
    const posted = fake.messages.get(ALERTS_CHANNEL)?.find((m) => m.id === id);
    const embeds = (posted?.embeds ?? []) as Embed[];
    expect(embeds.map((e) => e.image?.url)).toEqual(posted?.attachments.map((a) => a.url));
    expect(embeds.every((e) => e.thumbnail === undefined)).toBe(true);
  });

  it('GIVEN a PNG image THEN it stays a link; GIVEN an image that cannot be shown THEN the alert goes without it', async () => {
    const broken = `${h.devnet.url}/assets/devnet/${moonCats.address}/999999999.svg`;
    const id = await adapter.sink.send(
      ALERTS_CHANNEL,
      [
        { title: 'Sold: J', tone: 'sale', image: pngUrl },
        { title: 'Sold: K', tone: 'sale', image: broken, thumbnail: 'http://127.0.0.1:9/unreachable.png' },
      ],
      'key-other-images',
    );
    const post = await fake.nextCall('POST', new RegExp(`^/channels/${ALERTS_CHANNEL}/messages$`));
    expect(post.files).toEqual([]);
    const posted = fake.messages.get(ALERTS_CHANNEL)?.find((m) => m.id === id);
    const [png, none] = (posted?.embeds ?? []) as Embed[];
    expect(png?.image?.url).toBe(pngUrl);
    expect(none?.image).toBeUndefined();
    expect(none?.thumbnail).toBeUndefined();
    expect(none?.title).toBe('Sold: K');
  });
});

describe('Discord alert delivery', () => {
  const alert = (title: string): Reply => ({
    title,
    tone: 'sale',
    lines: ['Sold for 1 DEV'],
    mentionRoles: ['123456789012'],
  });

  it('an alert burst arrives in the right channel as one message with embeds, and a reorg edits it', async () => {
    const id = await adapter.sink.send(ALERTS_CHANNEL, [alert('Sold: A'), alert('Sold: B')], 'key-burst-1');
    const post = await fake.nextCall('POST', new RegExp(`^/channels/${ALERTS_CHANNEL}/messages$`));
    expect(post.authorized).toBe(true);
    expect(post.body?.nonce).toBe(nonceOf('key-burst-1'));
    expect(String(post.body?.nonce).length).toBeLessThanOrEqual(25);
    expect(post.body?.enforce_nonce).toBe(true);
    expect(post.body?.allowed_mentions).toEqual({ parse: [], roles: ['123456789012'], users: [] });
    const posted = fake.messages.get(ALERTS_CHANNEL)?.find((m) => m.id === id);
    expect(posted?.embeds).toHaveLength(2);
    expect(posted?.content).toBe('<@&123456789012>');
    expect(fake.messages.get(fake.channelId)?.some((m) => m.id === id) ?? false).toBe(false);
    await adapter.sink.edit(ALERTS_CHANNEL, id, [{ title: 'Reorganised away: Sold: A', tone: 'warning' }]);
    const patch = await fake.nextCall('PATCH', new RegExp(`^/channels/${ALERTS_CHANNEL}/messages/${id}$`));
    expect(((patch.body?.embeds ?? []) as Embed[])[0]?.title).toBe('Reorganised away: Sold: A');
    expect(posted?.edited_timestamp).not.toBeNull();
  });

  it('the same idempotency key sent twice gives one message (enforced nonce)', async () => {
    const first = await adapter.sink.send(ALERTS_CHANNEL, [alert('Sold: C')], 'key-dup');
    const second = await adapter.sink.send(ALERTS_CHANNEL, [alert('Sold: C')], 'key-dup');
    expect(second).toBe(first);
    expect(
      fake.messages.get(ALERTS_CHANNEL)?.filter((m) => m.embeds.some((e) => (e as Embed).title === 'Sold: C')),
    ).toHaveLength(1);
  });

  it('a 429 from Discord delays the message, which then arrives once', async () => {
    const route = new RegExp(`^/v10/channels/${ALERTS_CHANNEL}/messages$`);
    fake.rateLimit('POST', new RegExp(`^/channels/${ALERTS_CHANNEL}/messages$`), 300);
    const from = fake.calls.length;
    const started = Date.now();
    const id = await adapter.sink.send(ALERTS_CHANNEL, [alert('Sold: D')], 'key-429');
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    const posts = fake.calls.slice(from).filter((c) => c.method === 'POST' && route.test(c.path));
    expect(posts.map((c) => c.status)).toEqual([429, 200]);
    expect(posts[1]?.body?.nonce).toBe(posts[0]?.body?.nonce);
    const matching = fake.messages
      .get(ALERTS_CHANNEL)
      ?.filter((m) => m.embeds.some((e) => (e as Embed).title === 'Sold: D'));
    expect(matching?.map((m) => m.id)).toEqual([id]);
  });

  it('an unknown channel is a permanent failure; a server error is a transient one', async () => {
    const gone = await adapter.sink.send(GONE_CHANNEL, [alert('Sold: E')], 'key-gone').catch((e: unknown) => e);
    expect(gone).toBeInstanceOf(DeliveryError);
    expect((gone as DeliveryError).permanent).toBe(true);
    expect((gone as DeliveryError).message).toContain('10003');
    expect((gone as DeliveryError).message).not.toContain(fake.token);
    fake.fail('POST', new RegExp(`^/channels/${ALERTS_CHANNEL}/messages$`), 502, 2);
    const down = await adapter.sink.send(ALERTS_CHANNEL, [alert('Sold: F')], 'key-502').catch((e: unknown) => e);
    expect(down).toBeInstanceOf(DeliveryError);
    expect((down as DeliveryError).permanent).toBe(false);
  });
});

describe('Discord client wiring', () => {
  it('a plain discord.js client reaches the stand-in and becomes ready with the guild', async () => {
    const client = new Client({ intents: [GatewayIntentBits.Guilds], rest: { api: fake.api } });
    const ready = new Promise<void>((resolve) => client.once('clientReady', () => resolve()));
    client.on('error', () => undefined);
    try {
      await client.login(fake.token);
      await ready;
      expect(client.guilds.cache.has(fake.guildId)).toBe(true);
    } finally {
      await client.destroy();
    }
  });
});

describe('Discord start-up failures', () => {
  it('GIVEN an API root that cannot be reached THEN startDiscord fails with a ChatStartError naming it', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise((resolve) => server.close(resolve));
    const apiRoot = `http://127.0.0.1:${port}/api`;
    const failed = await startDiscord({
      config: { ...config, apiRoot },
      engine,
      logger: pino({ level: 'silent' }),
      registerCommands: false,
      clientOptions: { rest: { retries: 0, timeout: 2_000 } },
    }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(ChatStartError);
    expect(failed).toMatchObject({ platform: 'discord', failure: 'unreachable', address: apiRoot, exitCode: 69 });
    expect((failed as Error).message).toBe(`Discord: cannot reach the API at ${apiRoot} (ECONNREFUSED).`);
  });

  it('GIVEN a token the API refuses THEN startDiscord fails with a ChatStartError that does not quote it', async () => {
    const failed = await startDiscord({
      config: { ...config, token: 'MTEwMA.wrong-token.abcdefghijklmnop' },
      engine,
      logger: pino({ level: 'silent' }),
      registerCommands: false,
    }).catch((e: unknown) => e);
    expect(failed).toMatchObject({ platform: 'discord', failure: 'refused', exitCode: 78 });
    expect((failed as Error).message).toMatch(
      /^Discord: the API at http:\/\/127\.0\.0\.1:\d+\/api refused DISCORD_TOKEN /,
    );
    expect((failed as Error).message).not.toContain('wrong-token');
  });
});
