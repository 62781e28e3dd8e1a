/**
 * A local stand-in of Discord (REST API v10 and the gateway) for running the real discord.js client
 * offline, as shared/reference/offline-chat-apis.md describes. It keeps what a bot posts, answers
 * like Discord (message objects, error codes, rate limits with headers, nonce dedupe) and lets a
 * test inject interactions and failures.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';

export interface FakeGuild {
  id: string;
  name: string;
  channels: string[];
  /**
   * Roles besides @everyone (whose id is the guild's), as GUILD_CREATE lists them. `position`
   * defaults to the place in the list (the first is 1, just above @everyone); `permissions` is a
   * bitfield string (default "0"); `managed` roles belong to an integration.
   */
  roles?: FakeRole[];
  /** The roles the bot's member has (its highest one decides which roles it may give). */
  botRoles?: string[];
  /** Permissions of @everyone (default "0"). */
  everyonePermissions?: string;
  /** User ids of the members (role changes of anyone else answer 404 Unknown Member). */
  members?: string[];
  /** Channels of `channels` that are announcement channels (type 5): their messages can be crossposted. */
  announcementChannels?: string[];
  /** Channels of `channels` that are forums (type 15): their posts are threads (type 11) whose parent is the forum. */
  forums?: string[];
  /** Threads of the guild's channels (forum posts included); GUILD_CREATE lists the public ones not archived. */
  threads?: FakeThread[];
}

export interface FakeRole {
  id: string;
  name: string;
  mentionable: boolean;
  position?: number;
  permissions?: string;
  managed?: boolean;
}

/** Discord's permission bits the stand-in checks. */
export const PERMISSIONS = { administrator: 1n << 3n, manageRoles: 1n << 28n } as const;

/**
 * A thread as the stand-in keeps it: types 10 (in an announcement channel), 11 (public, and forum
 * posts) and 12 (private). A test archives or locks it by changing the object that
 * {@link FakeDiscord.thread} returns.
 */
export interface FakeThread {
  id: string;
  parentId: string;
  type: 10 | 11 | 12;
  name?: string;
  archived?: boolean;
  locked?: boolean;
}

/** Discord's channel types the stand-in serves. */
export const CHANNEL_TYPE = {
  text: 0,
  dm: 1,
  groupDm: 3,
  announcement: 5,
  announcementThread: 10,
  publicThread: 11,
  privateThread: 12,
  forum: 15,
} as const;

/**
 * Discord's rate limits (docs: Topics > Rate Limits): 50 requests a second per bot across the API
 * (interaction callbacks and webhooks with a token are exempt), and per-route buckets, of which the
 * stand-in keeps the one alerts meet: 5 messages per 5 s per channel. Discord publishes no
 * algorithm for the global limit; the stand-in keeps it as a bucket of 50 refilled at 50 a second.
 * Past a limit it answers 429 with `retry_after` (seconds) and the `X-RateLimit-*` headers; the global
 * one says `global: true`, `X-RateLimit-Global: true` and `X-RateLimit-Scope: global`.
 */
export const DISCORD_RATE_LIMITS = {
  globalPerSecond: 50,
  messagesPerChannel: 5,
  channelWindowMs: 5_000,
} as const;

/** A 429 the stand-in answered under its rate limits. */
export interface RateLimitRefusal {
  method: string;
  path: string;
  global: boolean;
  retryAfter: number;
  at: number;
}

/** Crossposts Discord allows per announcement channel in an hour. */
export const CROSSPOSTS_PER_HOUR = 10;
/** A message's flag once published to the following servers. */
const CROSSPOSTED_FLAG = 1;

export interface FakeDiscordOptions {
  token?: string;
  applicationId?: string;
  guilds?: FakeGuild[];
  /** The gateway address that `GET /gateway/bot` gives (default: this stand-in's own gateway). */
  gatewayUrl?: string;
  /** The shard count that `GET /gateway/bot` recommends (default 1). */
  recommendedShards?: number;
}

/** A gateway session's shard: `[shard_id, num_shards]`, as IDENTIFY sends it. */
export type ShardPair = [id: number, count: number];

/**
 * The shard that receives a guild's events: `(guild_id >> 22) % num_shards`, as Discord routes them.
 * Direct messages (no guild) go to shard 0.
 */
export function shardOf(guildId: string | null, count: number): number {
  if (guildId === null) return 0;
  return Number((BigInt(guildId) >> 22n) % BigInt(count));
}

/** Gateway close code of an IDENTIFY with a shard id not below its shard count. */
export const INVALID_SHARD = 4010;

export interface RecordedCall {
  seq: number;
  method: string;
  /** Decoded path below the API root, e.g. `/v10/webhooks/1/tok/messages/@original`. */
  path: string;
  query: URLSearchParams;
  /** Whether the request carried the bot token (interaction callbacks do not). */
  authorized: boolean;
  /** JSON body, or `payload_json` of a multipart body. */
  body: Record<string, unknown> | undefined;
  /** Files of a multipart body, in order (`files[n]` fields). */
  files: Array<{ field: string; name: string; size: number; contentType: string; data: Buffer }>;
  status: number;
  /** When the request arrived (ms since the epoch). */
  at: number;
}

export type FakeMessage = {
  id: string;
  channel_id: string;
  content: string;
  embeds: unknown[];
  components: unknown[];
  attachments: Array<{ id: string; filename: string; size: number; url: string }>;
  flags: number;
  nonce?: string;
  edited_timestamp: string | null;
  [key: string]: unknown;
};

interface Injected {
  method: string;
  pattern: RegExp;
  remaining: number;
  status: number;
  retryAfterSeconds?: number;
}

export interface InteractionOptions {
  /** Channel of the interaction; the first channel of the first guild when not given. */
  channelId?: string;
  /** `null` for a direct message. */
  guildId?: string | null;
  user?: { id: string; username: string };
  /** Member permissions as a bitfield string ("0" = none, "32" = Manage Server, "8" = Administrator). */
  permissions?: string;
  /** When Discord created the interaction (its id says so); default now. */
  createdAt?: number;
  /** The bot's permissions in the channel (`app_permissions`), a bitfield string; default most text permissions. */
  appPermissions?: string;
  /**
   * How the app is installed where the interaction happens: `guild` (the bot is a member; the
   * default) or `user` (installed to the person's account only: `authorizing_integration_owners`
   * is `{"1": user}`, and the guild, when there is one, may be one the bot is not in).
   */
  install?: 'guild' | 'user';
  /**
   * The interaction's `context` for a user install without a guild: 1 the bot's DM (the default
   * without a guild), 2 a DM between other users or a group DM (`channel.type` 1 or 3).
   */
  context?: 1 | 2;
}

export type InteractionSpec =
  | ({
      kind: 'command';
      name: string;
      subcommand?: string;
      options?: Record<string, string | number>;
    } & InteractionOptions)
  | ({
      kind: 'autocomplete';
      name: string;
      subcommand?: string;
      options?: Record<string, string | number>;
      /** The option being typed, with its text so far. */
      focused: { name: string; value: string };
    } & InteractionOptions)
  | ({
      kind: 'button';
      customId: string;
      /** The message that holds the button (defaults to a bare bot message in the channel). */
      message?: FakeMessage;
    } & InteractionOptions);

const API_PREFIX = '/api';
const DISCORD_EPOCH = 1_420_070_400_000n;
const CDN = 'https://cdn.discordapp.test/attachments';

/** What a route handler answers: status, JSON payload, headers. */
type Answered = [status: number, payload?: unknown, headers?: Record<string, string>];

/** A file a message carries, as the API shows it. */
type FakeAttachment = FakeMessage['attachments'][number];

/** Discord's limits on a message's content and embeds (docs: Embed Limits), as it enforces them. */
const MESSAGE_LIMITS = {
  content: 2000,
  embeds: 10,
  title: 256,
  description: 4096,
  fields: 25,
  fieldName: 256,
  fieldValue: 1024,
  footer: 2048,
  author: 256,
  embedTotal: 6000,
};

type EmbedBody = {
  title?: string;
  description?: string;
  fields?: Array<{ name?: string; value?: string }>;
  footer?: { text?: string };
  author?: { name?: string };
};

/**
 * What Discord says of a message body past its limits (400, code 50035 "Invalid Form Body", the
 * errors keyed by the path of each field), or undefined when it is within them. The embeds' total
 * counts titles, descriptions, field names and values, footers and author names of all of them.
 */
function formBodyErrors(body: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (!body) return undefined;
  const errors: Record<string, unknown> = {};
  // Nested by the path of the field, as Discord gives them: {embeds: {0: {description: {_errors}}}}.
  const set = (path: string, code: string, message: string) => {
    const keys = path.split('.');
    let at = errors;
    for (const key of keys) {
      at[key] ??= {};
      at = at[key] as Record<string, unknown>;
    }
    at._errors = [{ code, message }];
  };
  const tooLong = (path: string, value: string | undefined, max: number) => {
    if ((value?.length ?? 0) > max) set(path, 'BASE_TYPE_MAX_LENGTH', `Must be ${max} or fewer in length.`);
  };
  if (typeof body.content === 'string') tooLong('content', body.content, MESSAGE_LIMITS.content);
  const embeds = Array.isArray(body.embeds) ? (body.embeds as EmbedBody[]) : [];
  if (embeds.length > MESSAGE_LIMITS.embeds) set('embeds', 'BASE_TYPE_MAX_LENGTH', 'Must be 10 or fewer in length.');
  let total = 0;
  embeds.forEach((embed, i) => {
    tooLong(`embeds.${i}.title`, embed.title, MESSAGE_LIMITS.title);
    tooLong(`embeds.${i}.description`, embed.description, MESSAGE_LIMITS.description);
    tooLong(`embeds.${i}.footer.text`, embed.footer?.text, MESSAGE_LIMITS.footer);
    tooLong(`embeds.${i}.author.name`, embed.author?.name, MESSAGE_LIMITS.author);
    const fields = embed.fields ?? [];
    if (fields.length > MESSAGE_LIMITS.fields)
      set(`embeds.${i}.fields`, 'BASE_TYPE_MAX_LENGTH', 'Must be 25 or fewer in length.');
    fields.forEach((field, f) => {
      tooLong(`embeds.${i}.fields.${f}.name`, field.name, MESSAGE_LIMITS.fieldName);
      tooLong(`embeds.${i}.fields.${f}.value`, field.value, MESSAGE_LIMITS.fieldValue);
      total += (field.name?.length ?? 0) + (field.value?.length ?? 0);
    });
    total += (embed.title?.length ?? 0) + (embed.description?.length ?? 0);
    total += (embed.footer?.text?.length ?? 0) + (embed.author?.name?.length ?? 0);
  });
  if (total > MESSAGE_LIMITS.embedTotal)
    set('embeds', 'MAX_EMBED_SIZE_EXCEEDED', 'Embed size exceeds maximum size of 6000');
  return Object.keys(errors).length > 0 ? errors : undefined;
}

export class FakeDiscord {
  readonly token: string;
  readonly applicationId: string;
  readonly guilds: FakeGuild[];
  readonly botUser: { id: string; username: string; discriminator: string; bot: true; avatar: null; global_name: null };
  readonly calls: RecordedCall[] = [];
  /** Commands as registered: `global`, and per guild id. */
  readonly commands = { global: [] as unknown[], guild: new Map<string, unknown[]>() };
  /** Messages posted per channel, including interaction answers. */
  readonly messages = new Map<string, FakeMessage[]>();
  /** Channels that answer 404 Unknown Channel. */
  readonly unknownChannels = new Set<string>();
  /** The roles of each member, by guild id then user id (what the role routes changed). */
  readonly memberRoles = new Map<string, Map<string, Set<string>>>();
  /** Threads by id, from the guilds' `threads` (a deleted one goes to `unknownChannels`). */
  readonly threads = new Map<string, FakeThread>();
  /**
   * Whether the bot has Manage Threads where its threads are: without it, a locked thread cannot be
   * unarchived by the bot (403, code 50013), as on Discord.
   */
  botManagesThreads = false;
  /** When each announcement channel's messages were crossposted (its hourly limit counts these). */
  readonly crossposts = new Map<string, number[]>();
  /**
   * Channels the bot is not in: a server that has only a member's user install of the app, a DM
   * between other people, a group DM. The bot's own requests there answer 403 Missing Access
   * (50001); interactions from them are answered through their callback and webhook as anywhere.
   */
  readonly foreignChannels = new Set<string>();
  /** The DM channel of each person the bot opened one with (`POST /users/@me/channels`), by user id. */
  readonly dmChannels = new Map<string, string>();
  /** Gateway connections that identified. */
  identified = 0;
  /** The `shard` of every IDENTIFY, in order (`[0, 1]` when the client sent none). */
  readonly identifiedShards: ShardPair[] = [];
  readonly #server: Server;
  readonly #wss = new WebSocketServer({ noServer: true });
  readonly #sockets = new Set<WebSocket>();
  /** Identified (or resumed) sessions by connection. */
  readonly #sessions = new Map<WebSocket, { id: string; shard: ShardPair }>();
  /** Shards of the sessions handed out, by session id (what a RESUME names). */
  readonly #sessionShards = new Map<string, ShardPair>();
  readonly #recommendedShards: number;
  readonly #injected: Injected[] = [];
  /** The rate limits in force (none unless {@link enforceRateLimits} was called). */
  #limits:
    | {
        limits: typeof DISCORD_RATE_LIMITS;
        tokens: number;
        refilledAt: number;
        channels: Map<string, { count: number; resetAt: number }>;
      }
    | undefined;
  /** Every 429 answered under the rate limits, in order. */
  readonly rateLimitRefusals: RateLimitRefusal[] = [];
  readonly #originals = new Map<string, FakeMessage>();
  readonly #gatewayUrl: string | undefined;
  readonly #waiters = new Set<() => void>();
  readonly #taken = new Set<number>();
  #id = 0n;
  #seq = 0;
  #port = 0;

  private constructor(options: FakeDiscordOptions) {
    this.token = options.token ?? `fake.${randomBytes(12).toString('hex')}`;
    this.applicationId = options.applicationId ?? '1100000000000000001';
    this.guilds = options.guilds ?? [
      { id: '1100000000000000100', name: 'Test Guild', channels: ['1100000000000000200'] },
    ];
    this.botUser = {
      id: this.applicationId,
      username: 'Floorwatch',
      discriminator: '0',
      bot: true,
      avatar: null,
      global_name: null,
    };
    this.#gatewayUrl = options.gatewayUrl;
    this.#recommendedShards = options.recommendedShards ?? 1;
    for (const guild of this.guilds) for (const thread of guild.threads ?? []) this.threads.set(thread.id, thread);
    this.#server = createServer((req, res) => {
      void this.#route(req, res).catch((error: unknown) => {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ message: String(error), code: 0 }));
      });
    });
    this.#server.on('upgrade', (req, socket, head) => {
      this.#wss.handleUpgrade(req, socket, head, (ws) => this.#gateway(ws));
    });
  }

  static async start(options: FakeDiscordOptions = {}): Promise<FakeDiscord> {
    const fake = new FakeDiscord(options);
    await new Promise<void>((resolve) => fake.#server.listen(0, '127.0.0.1', resolve));
    fake.#port = (fake.#server.address() as AddressInfo).port;
    return fake;
  }

  /** The REST base for `new Client({ rest: { api } })` (ends in /api). */
  get api(): string {
    return `http://127.0.0.1:${this.#port}${API_PREFIX}`;
  }

  /** The bot's environment for this stand-in (its first guild as DISCORD_GUILD_ID). */
  get env(): Record<string, string> {
    return {
      DISCORD_TOKEN: this.token,
      DISCORD_APPLICATION_ID: this.applicationId,
      DISCORD_GUILD_ID: this.guildId,
      DISCORD_API_ROOT: this.api,
    };
  }

  get channelId(): string {
    return this.guilds[0]?.channels[0] ?? '1';
  }

  get guildId(): string {
    return this.guilds[0]?.id ?? '1';
  }

  /** A thread of the guilds (to archive, lock or delete it in a test); throws for an unknown id. */
  thread(id: string): FakeThread {
    const found = this.threads.get(id);
    if (!found) throw new Error(`no thread ${id}`);
    return found;
  }

  /** The channel object of a guild channel or thread as the API and interactions carry it. */
  channelObject(channelId: string, guildId: string): Record<string, unknown> {
    const thread = this.threads.get(channelId);
    if (thread) {
      return {
        id: thread.id,
        type: thread.type,
        guild_id: guildId,
        parent_id: thread.parentId,
        name: thread.name ?? 'thread',
        owner_id: '1100000000000000999',
        message_count: 0,
        member_count: 1,
        rate_limit_per_user: 0,
        flags: 0,
        thread_metadata: {
          archived: thread.archived ?? false,
          locked: thread.locked ?? false,
          auto_archive_duration: 1440,
          archive_timestamp: new Date(0).toISOString(),
          ...(thread.type === CHANNEL_TYPE.privateThread ? { invitable: true } : {}),
        },
      };
    }
    const guild = this.guilds.find((g) => g.id === guildId);
    const type = guild?.announcementChannels?.includes(channelId)
      ? CHANNEL_TYPE.announcement
      : guild?.forums?.includes(channelId)
        ? CHANNEL_TYPE.forum
        : CHANNEL_TYPE.text;
    const position = Math.max(0, guild?.channels.indexOf(channelId) ?? 0);
    return { id: channelId, type, guild_id: guildId, name: `channel-${position}`, position, permission_overwrites: [] };
  }

  /** A snowflake of `at` (default now), as Discord's ids are: its creation time is in its top bits. */
  nextId(at = Date.now()): string {
    this.#id++;
    return String(((BigInt(Math.floor(at)) - DISCORD_EPOCH) << 22n) | (this.#id & 0xfffn));
  }

  /**
   * From now on, keeps Discord's global and per-channel message limits (see
   * {@link DISCORD_RATE_LIMITS}), answering past them with 429; each is listed in
   * {@link rateLimitRefusals}. Off by default: most tests are not about pace.
   */
  enforceRateLimits(limits: typeof DISCORD_RATE_LIMITS = DISCORD_RATE_LIMITS): void {
    this.#limits = { limits, tokens: limits.globalPerSecond, refilledAt: Date.now(), channels: new Map() };
  }

  /**
   * The 429 of a request past a limit, or the bucket headers of a request that may go (counted);
   * undefined when no limit applies.
   */
  #rateLimit(method: string, route: string): { refused?: Answered; headers: Record<string, string> } | undefined {
    const state = this.#limits;
    if (!state) return undefined;
    const now = Date.now();
    const { limits } = state;
    state.tokens = Math.min(
      limits.globalPerSecond,
      state.tokens + ((now - state.refilledAt) / 1_000) * limits.globalPerSecond,
    );
    state.refilledAt = now;
    const refuse = (global: boolean, retryAfter: number, headers: Record<string, string>) => {
      this.rateLimitRefusals.push({ method, path: route, global, retryAfter, at: now });
      return {
        headers: {},
        refused: [
          429,
          { message: 'You are being rate limited.', retry_after: retryAfter, global, code: 0 },
          { 'retry-after': String(Math.ceil(retryAfter)), ...headers },
        ] as Answered,
      };
    };
    if (state.tokens < 1) {
      const retryAfter = Number(((1 - state.tokens) / limits.globalPerSecond).toFixed(3));
      return refuse(true, retryAfter, { 'x-ratelimit-global': 'true', 'x-ratelimit-scope': 'global' });
    }
    const channel = method === 'POST' ? /^\/channels\/(\d+)\/messages$/.exec(route)?.[1] : undefined;
    let headers: Record<string, string> = {};
    if (channel) {
      let bucket = state.channels.get(channel);
      if (!bucket || bucket.resetAt <= now) {
        bucket = { count: 0, resetAt: now + limits.channelWindowMs };
        state.channels.set(channel, bucket);
      }
      const resetAfter = ((bucket.resetAt - now) / 1_000).toFixed(3);
      const bucketHeaders = (remaining: number) => ({
        'x-ratelimit-limit': String(limits.messagesPerChannel),
        'x-ratelimit-remaining': String(remaining),
        'x-ratelimit-reset': (bucket.resetAt / 1_000).toFixed(3),
        'x-ratelimit-reset-after': resetAfter,
        'x-ratelimit-bucket': 'channel-messages',
      });
      if (bucket.count >= limits.messagesPerChannel) {
        return refuse(false, Number(resetAfter), { ...bucketHeaders(0), 'x-ratelimit-scope': 'user' });
      }
      bucket.count++;
      headers = bucketHeaders(limits.messagesPerChannel - bucket.count);
    }
    state.tokens -= 1;
    return { headers };
  }

  /** The next `count` requests matching answer 429 with `retry_after` and rate-limit headers. */
  rateLimit(method: string, pattern: RegExp, retryAfterMs: number, count = 1): void {
    this.#injected.push({ method, pattern, remaining: count, status: 429, retryAfterSeconds: retryAfterMs / 1000 });
  }

  /** The next `count` requests matching answer with a server error. */
  fail(method: string, pattern: RegExp, status = 500, count = 1): void {
    this.#injected.push({ method, pattern, remaining: count, status });
  }

  /**
   * The first matching call not yet returned by an earlier `nextCall`, waiting for it if needed.
   * Calls are matched against the path below /api/v10; `*` matches any method.
   */
  async nextCall(method: string, pathPattern: RegExp, timeoutMs = 5_000): Promise<RecordedCall> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.calls.find(
        (c) =>
          !this.#taken.has(c.seq) &&
          (method === '*' || c.method === method) &&
          pathPattern.test(c.path.replace(/^\/v10/, '')),
      );
      if (found) {
        this.#taken.add(found.seq);
        return found;
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${method} ${pathPattern} within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, left);
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.#waiters.add(done);
      });
    }
  }

  /**
   * Sends INTERACTION_CREATE to the session(s) of the shard that Discord routes the guild to
   * ({@link shardOf}); returns the interaction's id and token. Throws when no session holds it.
   */
  dispatchInteraction(spec: InteractionSpec): { id: string; token: string } {
    const id = this.nextId(spec.createdAt);
    const token = `itoken-${randomBytes(8).toString('hex')}`;
    const guildId = spec.guildId === undefined ? this.guildId : spec.guildId;
    const channelId = spec.channelId ?? this.channelId;
    const user = spec.user ?? { id: '1100000000000000500', username: 'member' };
    const fullUser = { ...user, discriminator: '0', avatar: null, global_name: user.username };
    const userInstall = spec.install === 'user';
    // A user install answers in a DM between other people or a group DM too (context 2).
    const context = guildId ? 0 : (spec.context ?? 1);
    const privateChannel =
      context === 2
        ? { id: channelId, type: CHANNEL_TYPE.groupDm, name: null, recipients: [fullUser] }
        : { id: channelId, type: CHANNEL_TYPE.dm, recipients: [fullUser] };
    const base: Record<string, unknown> = {
      id,
      application_id: this.applicationId,
      token,
      version: 1,
      channel_id: channelId,
      channel: guildId ? this.channelObject(channelId, guildId) : privateChannel,
      locale: 'en-US',
      app_permissions: spec.appPermissions ?? '2248473465835073',
      entitlements: [],
      // The installs that let this interaction happen: "0" the guild's, "1" the person's own.
      authorizing_integration_owners: userInstall ? { '1': user.id } : guildId ? { '0': guildId } : { '1': user.id },
      context,
      attachment_size_limit: 10_485_760,
    };
    if (guildId) {
      base.guild_id = guildId;
      base.guild_locale = 'en-US';
      base.member = {
        user: fullUser,
        roles: [],
        joined_at: new Date(0).toISOString(),
        deaf: false,
        mute: false,
        flags: 0,
        permissions: spec.permissions ?? '0',
      };
    } else {
      base.user = fullUser;
    }
    if (spec.kind === 'button') {
      base.type = 3;
      base.message = spec.message ?? this.#message(channelId, { content: '' });
      base.data = { custom_id: spec.customId, component_type: 2 };
    } else {
      const leaves = Object.entries(spec.options ?? {}).map(([name, value]) => ({
        name,
        type: typeof value === 'number' ? 4 : 3,
        value,
      }));
      if (spec.kind === 'autocomplete') {
        const at = leaves.findIndex((o) => o.name === spec.focused.name);
        const focused = { name: spec.focused.name, type: 3, value: spec.focused.value, focused: true };
        if (at >= 0) leaves.splice(at, 1, focused);
        else leaves.push(focused);
      }
      const options = spec.subcommand ? [{ name: spec.subcommand, type: 1, options: leaves }] : leaves;
      base.type = spec.kind === 'command' ? 2 : 4;
      base.data = { id: this.#commandId(spec.name), name: spec.name, type: 1, options };
    }
    this.#dispatch('INTERACTION_CREATE', base, guildId);
    return { id, token };
  }

  /** The message an interaction's answer created or edited (`@original`). */
  original(token: string): FakeMessage | undefined {
    return this.#originals.get(token);
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.terminate();
    this.#wss.close();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #commandId(name: string): string {
    const all = [...this.commands.global, ...[...this.commands.guild.values()].flat()] as Array<{
      id?: string;
      name?: string;
    }>;
    return all.find((c) => c.name === name)?.id ?? '1100000000000000900';
  }

  #message(channelId: string, fields: Partial<FakeMessage>): FakeMessage {
    return {
      id: this.nextId(),
      channel_id: channelId,
      type: 0,
      author: this.botUser,
      content: '',
      embeds: [],
      components: [],
      attachments: [],
      mentions: [],
      mention_roles: [],
      mention_everyone: false,
      pinned: false,
      tts: false,
      timestamp: new Date().toISOString(),
      edited_timestamp: null,
      flags: 0,
      ...fields,
    };
  }

  /**
   * A message's files after a create or an edit, as Discord keeps them: with an `attachments`
   * list, exactly the files listed (kept ones by id, new uploads by their index); without one, the
   * files it had plus the uploads. Embed images and thumbnails that say `attachment://name` are
   * given the file's URL; a name that matches no file stays as it is (Discord shows nothing then).
   */
  #withFiles(
    message: FakeMessage,
    body: Record<string, unknown> | Partial<FakeMessage> | undefined,
    files: RecordedCall['files'],
    existing: readonly FakeAttachment[],
  ): FakeMessage {
    const upload = (index: number): FakeAttachment | undefined => {
      const file = files[index];
      if (!file) return undefined;
      const id = this.nextId();
      return { id, filename: file.name, size: file.size, url: `${CDN}/${message.channel_id}/${id}/${file.name}` };
    };
    const listed = body?.attachments as Array<{ id: string | number }> | undefined;
    const attachments: FakeAttachment[] = Array.isArray(listed)
      ? listed.flatMap((entry) => {
          const kept = existing.find((a) => a.id === String(entry.id));
          const added = kept ? undefined : upload(Number(entry.id));
          return kept ? [kept] : added ? [added] : [];
        })
      : [...existing, ...files.flatMap((_, index) => upload(index) ?? [])];
    message.attachments = attachments;
    // A copy: the recorded request keeps the references as sent.
    message.embeds = structuredClone(message.embeds);
    for (const embed of message.embeds as Array<Record<string, { url?: string } | undefined>>) {
      for (const slot of ['image', 'thumbnail']) {
        const url = embed[slot]?.url;
        const name = url?.startsWith('attachment://') ? url.slice('attachment://'.length) : undefined;
        const file = name === undefined ? undefined : attachments.find((a) => a.filename === name);
        if (file) embed[slot] = { url: file.url };
      }
    }
    return message;
  }

  #gateway(ws: WebSocket): void {
    this.#sockets.add(ws);
    ws.on('close', () => {
      this.#sockets.delete(ws);
      this.#sessions.delete(ws);
    });
    const send = (payload: unknown) => ws.send(JSON.stringify(payload));
    send({ op: 10, d: { heartbeat_interval: 41_250 }, s: null, t: null });
    ws.on('message', (raw) => {
      const message = JSON.parse(String(raw)) as { op: number; d: Record<string, unknown> | null };
      if (message.op === 1) send({ op: 11, d: null, s: null, t: null });
      else if (message.op === 2) this.#identify(ws, message.d?.shard);
      else if (message.op === 6) {
        const sessionId = String(message.d?.session_id ?? '');
        const shard = this.#sessionShards.get(sessionId);
        if (shard) this.#sessions.set(ws, { id: sessionId, shard });
        this.#send(ws, 'RESUMED', {});
      }
    });
  }

  /** READY with the guilds of the session's shard only, then one GUILD_CREATE for each of them. */
  #identify(ws: WebSocket, requested: unknown): void {
    const pair = Array.isArray(requested) ? requested.map(Number) : [0, 1];
    const [shardId = 0, count = 1] = pair;
    if (!Number.isInteger(shardId) || !Number.isInteger(count) || count < 1 || shardId < 0 || shardId >= count) {
      ws.close(INVALID_SHARD, 'Invalid shard.');
      return;
    }
    const shard: ShardPair = [shardId, count];
    this.identified++;
    this.identifiedShards.push(shard);
    const sessionId = randomBytes(8).toString('hex');
    this.#sessions.set(ws, { id: sessionId, shard });
    this.#sessionShards.set(sessionId, shard);
    const guilds = this.guilds.filter((g) => shardOf(g.id, count) === shardId);
    this.#send(ws, 'READY', {
      v: 10,
      user: this.botUser,
      guilds: guilds.map((g) => ({ id: g.id, unavailable: true })),
      session_id: sessionId,
      resume_gateway_url: `ws://127.0.0.1:${this.#port}/gateway`,
      application: { id: this.applicationId, flags: 0 },
      shard,
    });
    for (const guild of guilds) this.#send(ws, 'GUILD_CREATE', this.#guildPayload(guild));
  }

  #guildPayload(guild: FakeGuild): Record<string, unknown> {
    return {
      id: guild.id,
      name: guild.name,
      icon: null,
      owner_id: '1100000000000000999',
      unavailable: false,
      member_count: 2,
      large: false,
      joined_at: new Date(0).toISOString(),
      features: [],
      roles: this.rolesOf(guild),
      emojis: [],
      stickers: [],
      channels: guild.channels.map((id) => this.channelObject(id, guild.id)),
      // Only active threads come with the guild, and no private thread (the bot has joined none).
      threads: (guild.threads ?? [])
        .filter((t) => !t.archived && t.type !== CHANNEL_TYPE.privateThread && !this.unknownChannels.has(t.id))
        .map((t) => this.channelObject(t.id, guild.id)),
      members: [],
      presences: [],
      voice_states: [],
      stage_instances: [],
      guild_scheduled_events: [],
      soundboard_sounds: [],
    };
  }

  /** A guild's roles as the API shows them, @everyone first. */
  rolesOf(guild: FakeGuild): Array<Record<string, unknown> & { id: string; name: string; position: number }> {
    return [
      {
        id: guild.id,
        name: '@everyone',
        permissions: guild.everyonePermissions ?? '0',
        position: 0,
        color: 0,
        hoist: false,
        managed: false,
        mentionable: false,
        flags: 0,
      },
      ...(guild.roles ?? []).map((role, i) => ({
        ...role,
        permissions: role.permissions ?? '0',
        position: role.position ?? i + 1,
        color: 0,
        hoist: false,
        managed: role.managed ?? false,
        flags: 0,
      })),
    ];
  }

  /** The role ids a member of a guild has now. */
  rolesOfMember(guildId: string, userId: string): string[] {
    return [...(this.memberRoles.get(guildId)?.get(userId) ?? [])];
  }

  /**
   * Whether the bot may give `roleId` in `guild`, as Discord decides: Manage Roles (or Administrator)
   * from its roles, the role not managed, and strictly below the bot's highest role.
   */
  #mayGive(guild: FakeGuild, roleId: string): boolean {
    const roles = this.rolesOf(guild);
    const role = roles.find((r) => r.id === roleId);
    const mine = roles.filter((r) => r.id === guild.id || (guild.botRoles ?? []).includes(r.id));
    const bits = mine.reduce((sum, r) => sum | BigInt(String(r.permissions)), 0n);
    if ((bits & (PERMISSIONS.manageRoles | PERMISSIONS.administrator)) === 0n) return false;
    if (!role || role.managed === true) return false;
    const top = mine.reduce((a, b) => (b.position > a.position ? b : a));
    return top.position > role.position;
  }

  #send(ws: WebSocket, t: string, d: unknown): void {
    ws.send(JSON.stringify({ op: 0, t, s: ++this.#seq, d }));
  }

  /** Sends an event to every session of the shard that holds `guildId` (shard 0 for none). */
  #dispatch(t: string, d: unknown, guildId: string | null): void {
    const targets = [...this.#sessions].filter(([, s]) => shardOf(guildId, s.shard[1]) === s.shard[0]);
    if (targets.length === 0) {
      throw new Error(
        this.#sessions.size === 0 ? 'no gateway connection' : `no gateway session holds the shard of guild ${guildId}`,
      );
    }
    for (const [ws] of targets) this.#send(ws, t, d);
  }

  #isForum(channelId: string): boolean {
    return this.guilds.some((g) => g.forums?.includes(channelId));
  }

  #isAnnouncement(channelId: string): boolean {
    return this.guilds.some((g) => g.announcementChannels?.includes(channelId));
  }

  /**
   * `PATCH /channels/{thread}` with `archived`/`locked`: unarchives a thread unless it is locked
   * and the bot lacks Manage Threads (403, 50013), as Discord does. Other channels are not modelled.
   */
  #modifyThread(id: string, body: Record<string, unknown> | undefined): Answered {
    if (this.unknownChannels.has(id)) return [404, { message: 'Unknown Channel', code: 10003 }];
    const thread = this.threads.get(id);
    if (!thread) return [400, { message: 'Cannot execute action on this channel type', code: 50024 }];
    const changesLock = typeof body?.locked === 'boolean' && body.locked !== (thread.locked ?? false);
    if ((thread.locked || changesLock) && !this.botManagesThreads) {
      return [403, { message: 'Missing Permissions', code: 50013 }];
    }
    if (typeof body?.archived === 'boolean') thread.archived = body.archived;
    if (typeof body?.locked === 'boolean') thread.locked = body.locked;
    const guild = this.guilds.find((g) => g.threads?.includes(thread));
    return [200, this.channelObject(id, guild?.id ?? this.guildId)];
  }

  /**
   * `POST /channels/{id}/messages/{id}/crosspost`: publishes a message of an announcement channel,
   * at most {@link CROSSPOSTS_PER_HOUR} an hour per channel (429 with the wait beyond), once per
   * message (40033), in announcement channels only (50024).
   */
  #crosspost(channelId: string, messageId: string): Answered {
    if (this.unknownChannels.has(channelId)) return [404, { message: 'Unknown Channel', code: 10003 }];
    if (!this.#isAnnouncement(channelId)) {
      return [400, { message: 'Cannot execute action on this channel type', code: 50024 }];
    }
    const message = this.messages.get(channelId)?.find((m) => m.id === messageId);
    if (!message) return [404, { message: 'Unknown Message', code: 10008 }];
    if (message.flags & CROSSPOSTED_FLAG) {
      return [400, { message: 'This message has already been crossposted.', code: 40033 }];
    }
    const now = Date.now();
    const recent = (this.crossposts.get(channelId) ?? []).filter((at) => at > now - 3_600_000);
    this.crossposts.set(channelId, recent);
    const oldest = recent[0];
    if (recent.length >= CROSSPOSTS_PER_HOUR && oldest !== undefined) {
      const after = (oldest + 3_600_000 - now) / 1000;
      return [
        429,
        { message: 'You are being rate limited.', retry_after: after, global: false },
        {
          'retry-after': String(Math.ceil(after)),
          'x-ratelimit-limit': String(CROSSPOSTS_PER_HOUR),
          'x-ratelimit-remaining': '0',
          'x-ratelimit-reset-after': String(after),
          'x-ratelimit-bucket': `crosspost-${channelId}`,
          'x-ratelimit-scope': 'user',
        },
      ];
    }
    recent.push(now);
    message.flags |= CROSSPOSTED_FLAG;
    return [200, message];
  }

  async #read(req: IncomingMessage): Promise<Pick<RecordedCall, 'body' | 'files'>> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    if (raw.length === 0) return { body: undefined, files: [] };
    const type = req.headers['content-type'] ?? '';
    if (type.startsWith('multipart/form-data')) {
      const form = await new Response(raw, { headers: { 'content-type': type } }).formData();
      const files: RecordedCall['files'] = [];
      let body: Record<string, unknown> | undefined;
      for (const [field, value] of form) {
        if (typeof value === 'string') {
          if (field === 'payload_json') body = JSON.parse(value) as Record<string, unknown>;
        } else {
          const data = Buffer.from(await value.arrayBuffer());
          files.push({ field, name: value.name, size: value.size, contentType: value.type, data });
        }
      }
      return { body, files };
    }
    return { body: JSON.parse(raw.toString('utf8')) as Record<string, unknown>, files: [] };
  }

  async #route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const path = decodeURIComponent(url.pathname.slice(API_PREFIX.length));
    const method = req.method ?? 'GET';
    const at = Date.now();
    const { body, files } = await this.#read(req);
    const call: RecordedCall = {
      at,
      seq: this.calls.length,
      method,
      path,
      query: url.searchParams,
      authorized: req.headers.authorization === `Bot ${this.token}`,
      body,
      files,
      status: 0,
    };
    let limitHeaders: Record<string, string> = {};
    const answer = (status: number, payload?: unknown, answerHeaders: Record<string, string> = {}) => {
      const headers = { ...limitHeaders, ...answerHeaders };
      call.status = status;
      this.calls.push(call);
      res.writeHead(status, payload === undefined ? headers : { 'content-type': 'application/json', ...headers });
      res.end(payload === undefined ? undefined : JSON.stringify(payload));
      for (const wake of this.#waiters) wake();
      this.#waiters.clear();
    };
    const route = path.replace(/^\/v10/, '');
    const injected = this.#injected.find((i) => i.remaining > 0 && i.method === method && i.pattern.test(route));
    if (injected) {
      injected.remaining--;
      if (injected.status === 429) {
        const after = String(injected.retryAfterSeconds ?? 1);
        return answer(
          429,
          { message: 'You are being rate limited.', retry_after: injected.retryAfterSeconds ?? 1, global: false },
          {
            'retry-after': after,
            'x-ratelimit-limit': '5',
            'x-ratelimit-remaining': '0',
            'x-ratelimit-reset-after': after,
            'x-ratelimit-bucket': 'fakebucket',
            'x-ratelimit-scope': 'user',
          },
        );
      }
      return answer(injected.status, { message: 'Internal Server Error', code: 0 });
    }
    const interactionRoute = /^\/interactions\/\d+\/[^/]+\/callback$/.test(route) || route.startsWith('/webhooks/');
    if (!interactionRoute && !call.authorized) return answer(401, { message: '401: Unauthorized', code: 0 });
    const limited = interactionRoute ? undefined : this.#rateLimit(method, route);
    if (limited?.refused) return answer(...limited.refused);
    limitHeaders = limited?.headers ?? {};
    if (method === 'POST' || method === 'PATCH') {
      // An interaction callback carries its message in `data`.
      const isCallback = /^\/interactions\/\d+\/[^/]+\/callback$/.test(route);
      const sent = isCallback ? (body?.data as Record<string, unknown> | undefined) : body;
      const errors = formBodyErrors(sent);
      if (errors) return answer(400, { message: 'Invalid Form Body', code: 50035, errors });
    }

    if (method === 'GET' && route === '/gateway/bot') {
      return answer(200, {
        url: this.#gatewayUrl ?? `ws://127.0.0.1:${this.#port}/gateway`,
        shards: this.#recommendedShards,
        session_start_limit: { total: 1000, remaining: 999, reset_after: 0, max_concurrency: 1 },
      });
    }
    const commands = /^\/applications\/(\d+)(?:\/guilds\/(\d+))?\/commands$/.exec(route);
    if (commands) {
      const guild = commands[2];
      if (method === 'PUT') {
        const list = ((body as unknown as unknown[]) ?? []).map((c) => ({
          ...(c as Record<string, unknown>),
          id: this.nextId(),
          application_id: this.applicationId,
          version: this.nextId(),
          ...(guild ? { guild_id: guild } : {}),
        }));
        if (guild) this.commands.guild.set(guild, list);
        else this.commands.global = list;
        return answer(200, list);
      }
      if (method === 'GET') return answer(200, guild ? (this.commands.guild.get(guild) ?? []) : this.commands.global);
    }
    const callback = /^\/interactions\/(\d+)\/([^/]+)\/callback$/.exec(route);
    if (method === 'POST' && callback) {
      const token = callback[2] ?? '';
      const type = Number(body?.type);
      const data = (body?.data ?? {}) as Partial<FakeMessage>;
      if (type === 4 || type === 5 || type === 7 || type === 6) {
        const message = this.#message(this.channelId, { ...data, flags: Number(data.flags ?? 0) });
        this.#originals.set(token, this.#withFiles(message, data, files, []));
      }
      return answer(204);
    }
    const webhookMessage = /^\/webhooks\/(\d+)\/([^/]+)\/messages\/(@original|\d+)$/.exec(route);
    if (webhookMessage) {
      const token = webhookMessage[2] ?? '';
      if (method === 'DELETE') {
        this.#originals.delete(token);
        return answer(204);
      }
      const current = this.#originals.get(token) ?? this.#message(this.channelId, {});
      const next = { ...current, ...(body ?? {}), edited_timestamp: new Date().toISOString() } as FakeMessage;
      this.#originals.set(token, this.#withFiles(next, body, files, current.attachments));
      return answer(200, next);
    }
    if (method === 'POST' && /^\/webhooks\/(\d+)\/([^/]+)$/.test(route)) {
      const message = this.#message(this.channelId, { ...(body ?? {}), flags: Number(body?.flags ?? 0) });
      return answer(200, this.#withFiles(message, body, files, []));
    }
    const guildRoute = /^\/guilds\/(\d+)\/(roles|members\/(\d+)(?:\/roles\/(\d+))?)$/.exec(route);
    if (guildRoute) {
      const guild = this.guilds.find((g) => g.id === guildRoute[1]);
      if (!guild) return answer(404, { message: 'Unknown Guild', code: 10004 });
      if (guildRoute[2] === 'roles' && method === 'GET') return answer(200, this.rolesOf(guild));
      const userId = guildRoute[3] ?? '';
      const roleId = guildRoute[4];
      const isBot = userId === this.botUser.id;
      if (!isBot && !(guild.members ?? []).includes(userId))
        return answer(404, { message: 'Unknown Member', code: 10007 });
      if (roleId === undefined && method === 'GET') {
        const roles = isBot ? (guild.botRoles ?? []) : this.rolesOfMember(guild.id, userId);
        const user = isBot
          ? this.botUser
          : { id: userId, username: `user${userId.slice(-4)}`, discriminator: '0', avatar: null, global_name: null };
        return answer(200, { user, roles, joined_at: new Date(0).toISOString(), deaf: false, mute: false, flags: 0 });
      }
      if (roleId !== undefined && (method === 'PUT' || method === 'DELETE')) {
        if (!this.rolesOf(guild).some((r) => r.id === roleId))
          return answer(404, { message: 'Unknown Role', code: 10011 });
        if (!this.#mayGive(guild, roleId)) return answer(403, { message: 'Missing Permissions', code: 50013 });
        const byUser = this.memberRoles.get(guild.id) ?? new Map<string, Set<string>>();
        this.memberRoles.set(guild.id, byUser);
        const roles = byUser.get(userId) ?? new Set<string>();
        byUser.set(userId, roles);
        if (method === 'PUT') roles.add(roleId);
        else roles.delete(roleId);
        return answer(204);
      }
    }
    if (method === 'POST' && route === '/users/@me/channels') {
      const recipient = typeof body?.recipient_id === 'string' ? body.recipient_id : '';
      if (!/^\d+$/.test(recipient)) return answer(400, { message: 'Invalid Form Body', code: 50035 });
      const dm = this.dmChannels.get(recipient) ?? this.nextId();
      this.dmChannels.set(recipient, dm);
      const user = { id: recipient, username: 'member', discriminator: '0', avatar: null, global_name: null };
      return answer(200, { id: dm, type: CHANNEL_TYPE.dm, last_message_id: null, flags: 0, recipients: [user] });
    }
    const crosspost = /^\/channels\/(\d+)\/messages\/(\d+)\/crosspost$/.exec(route);
    if (method === 'POST' && crosspost) return answer(...this.#crosspost(crosspost[1] ?? '', crosspost[2] ?? ''));
    const channelOnly = /^\/channels\/(\d+)$/.exec(route);
    if (method === 'PATCH' && channelOnly) return answer(...this.#modifyThread(channelOnly[1] ?? '', body));
    const channel = /^\/channels\/(\d+)\/messages(?:\/(\d+))?$/.exec(route);
    if (channel) {
      const channelId = channel[1] ?? '';
      const messageId = channel[2];
      if (this.unknownChannels.has(channelId)) return answer(404, { message: 'Unknown Channel', code: 10003 });
      if (this.foreignChannels.has(channelId)) return answer(403, { message: 'Missing Access', code: 50001 });
      const thread = this.threads.get(channelId);
      if (thread?.archived && method !== 'GET') return answer(400, { message: 'Thread is archived', code: 50083 });
      if (this.#isForum(channelId) && method === 'POST') {
        // A forum takes posts (threads), not messages.
        return answer(400, { message: 'Cannot send messages in a forum channel', code: 50008 });
      }
      const list = this.messages.get(channelId) ?? [];
      this.messages.set(channelId, list);
      if (method === 'GET' && !messageId) return answer(200, [...list].reverse());
      if (method === 'POST' && !messageId) {
        const nonce = typeof body?.nonce === 'string' ? body.nonce : undefined;
        const existing = nonce && body?.enforce_nonce === true ? list.find((x) => x.nonce === nonce) : undefined;
        if (existing) return answer(200, existing);
        const message = this.#message(channelId, {
          content: typeof body?.content === 'string' ? body.content : '',
          embeds: (body?.embeds as unknown[]) ?? [],
          components: (body?.components as unknown[]) ?? [],
          ...(nonce ? { nonce } : {}),
        });
        list.push(this.#withFiles(message, body, files, []));
        return answer(200, message);
      }
      const found = list.find((x) => x.id === messageId);
      if (!found) return answer(404, { message: 'Unknown Message', code: 10008 });
      if (method === 'GET') return answer(200, found);
      if (method === 'PATCH') {
        const kept = found.attachments;
        Object.assign(found, body ?? {}, { edited_timestamp: new Date().toISOString() });
        this.#withFiles(found, body, files, kept);
        return answer(200, found);
      }
    }
    return answer(404, { message: '404: Not Found', code: 0 });
  }
}
