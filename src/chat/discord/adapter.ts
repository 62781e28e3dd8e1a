/**
 * The Discord adapter: a discord.js client that turns interactions into engine invocations and
 * Replies into messages, and an {@link AlertSink} that posts alerts through the client's REST
 * queue. It converts and forwards; deciding what to answer is the engine's.
 */
import { createHash } from 'node:crypto';
import {
  type APIActionRowComponent,
  type APIButtonComponent,
  type APIMessage,
  type ApplicationCommandOptionChoiceData,
  type AutocompleteInteraction,
  type ButtonInteraction,
  ButtonStyle,
  ChannelType,
  type ChatInputCommandInteraction,
  Client,
  type ClientOptions,
  type CommandInteractionOption,
  ComponentType,
  DefaultRestOptions,
  DiscordAPIError,
  Events,
  GatewayIntentBits,
  HTTPError,
  type Interaction,
  InteractionContextType,
  MessageFlags,
  PermissionFlagsBits,
  type PermissionsBitField,
  RateLimitError,
  REST,
  type RESTOptions,
  Routes,
} from 'discord.js';
import type { Logger } from 'pino';
import * as v from 'valibot';
import type { ButtonCodec } from '../../bot/buttons.ts';
import type {
  Actor,
  ChatRef,
  CommandDefinition,
  DiscordManagePermission,
  RoleMentionCheck,
} from '../../bot/command.ts';
import type { CommandEngine, Invocation } from '../../bot/engine.ts';
import { type ArgError, tokenize } from '../../bot/options.ts';
import type { Reply } from '../../core/reply.ts';
import { RatePacer } from '../../delivery/pacer.ts';
import { type AlertSink, DeliveryError } from '../../delivery/sink.ts';
import { ChatImages, IMAGES_BY_URL, type ImageSource } from '../images/images.ts';
import { ChatStartError, networkFailureOf, shownAddress } from '../start-error.ts';
import { EXTRA_OPTIONS, toApplicationCommands } from './commands.ts';
import { renderWithImages } from './media.ts';
import { DISCORD_LIMITS, type DiscordButton, type DiscordMessage } from './render.ts';
import { DiscordMembership } from './roles.ts';

/** The Discord settings the adapter runs with: main hands it the configuration's `discord` section. */
export interface DiscordConfig {
  token: string;
  applicationId: string;
  /** Register commands in this guild only (instant, for development); global otherwise. */
  guildId: string | undefined;
  /** REST base for a proxy or a test stand-in (ends in /api). */
  apiRoot: string | undefined;
  /** Discord permission that lets a member manage the bot's settings in a channel. */
  managePermission: DiscordManagePermission;
  /**
   * The gateway shards this process opens (`ids` of `count`); all shards of discord.js's default
   * (one) when undefined.
   */
  shards?: { ids: number[]; count: number } | undefined;
  /**
   * Requests a second to Discord across the bot (50 when undefined, Discord's global limit): discord.js's
   * REST queue keeps it for every lane and command. Raise it only for a bot whose limit Discord raised.
   */
  requestsPerSecond?: number | undefined;
}

/** What a member sees when a button's action cannot be found (an old stored action, a foreign id). */
export const EXPIRED_BUTTON_TEXT = 'This button no longer works. Run the command again.';

/** Discord errors that mean the bot cannot post to that channel at all. */
const PERMANENT_CODES = new Set([
  10003, // Unknown Channel
  10004, // Unknown Guild
  10008, // Unknown Message (an edit of a deleted message)
  50001, // Missing Access
  50013, // Missing Permissions
]);

/** Discord's answer to a message sent to an archived thread. */
const THREAD_ARCHIVED = 50083;
/** Crossposts Discord allows per announcement channel in an hour. */
export const CROSSPOSTS_PER_HOUR = 10;
const HOUR_MS = 3_600_000;

/** Discord's message nonce is at most 25 characters. */
const NONCE_LENGTH = 25;
/** `u` or `r`, one base-36 digit that keeps ids unique in a message, and `:`. */
const CUSTOM_ID_PREFIX = 3;
const AUTOCOMPLETE_CHOICES = 25;
const READY_TIMEOUT_MS = 120_000;
const CHOICE_TEXT = 100;
/**
 * When an interaction not yet answered is deferred. Discord allows 3 s from the interaction's
 * creation to the answer's arrival; the gateway's delivery, a busy event loop and the callback's
 * own trip eat into that, so the deferral leaves well over a second for them.
 */
export const DEFER_AFTER_MS = 1_000;

export interface DiscordAdapterOptions {
  config: DiscordConfig;
  /** Runs the commands; also answers autocomplete and keeps long button actions. */
  engine: CommandEngine;
  logger: Logger;
  /** Overrides of the discord.js client options (tests point `rest.api` at a stand-in). */
  clientOptions?: Partial<ClientOptions>;
  /**
   * How long after its creation an interaction may wait for its answer before it is deferred
   * (default {@link DEFER_AFTER_MS}); commands that were slower than that the last time are
   * deferred at once.
   */
  deferAfterMs?: number;
  /** Makes the images of answers and alerts showable (SVG drawn as PNG); default: one of its own. */
  images?: ChatImages;
  /** Deadline of an autocomplete answer; an empty list is sent after it. */
  autocompleteTimeoutMs?: number;
  /**
   * Register the application commands at start-up (default true). With `config.shards`, only the
   * process holding shard 0 registers them.
   */
  registerCommands?: boolean;
  /**
   * How long the gateway may take to let the bot in at start-up (default 2 minutes). discord.js
   * retries an unreachable gateway forever; past this the start fails with a ChatStartError.
   */
  readyTimeoutMs?: number;
  /**
   * Whether what is posted in a channel is published to the servers that follow it (`/settings
   * crosspost=on` in an announcement channel); never when not given.
   */
  crosspostIn?: (channelId: string) => boolean;
}

export interface DiscordAdapter {
  sink: AlertSink;
  /** Gives and takes the servers' roles for holder roles. */
  membership: DiscordMembership;
  client: Client;
  /** True while the gateway session is ready (health checks). */
  ready(): boolean;
  stop(): Promise<void>;
}

/**
 * The REST base of a configuration (the stand-in's or Discord's). A rate-limited crosspost fails at
 * once instead of waiting: its limit is 10 an hour per channel, and a wait of up to an hour would
 * hold that channel's alerts behind it.
 */
/** Discord's global limit of a bot: requests a second across all routes (interactions exempt). */
export const DISCORD_GLOBAL_REQUESTS_PER_SECOND = 50;

/**
 * discord.js's REST queue keeps the global limit for every request of the bot (commands, roles and
 * alerts alike) and each route under the bucket Discord's headers describe, and retries a 429 after
 * its retry_after (a global one holds all routes back). It lets a whole second's worth go at once;
 * alert sends and edits are also spaced evenly by the sink's pacer (see DiscordSink), a little
 * under the same limit, so that discord.js's window never has to hold them back.
 */
export function restOptions(config: DiscordConfig): Partial<RESTOptions> {
  return {
    makeRequest: requestWithEncodedForm,
    rejectOnRateLimit: (limited) => limited.route.endsWith('/crosspost'),
    globalRequestsPerSecond: config.requestsPerSecond ?? DISCORD_GLOBAL_REQUESTS_PER_SECOND,
    ...(config.apiRoot ? { api: config.apiRoot } : {}),
  };
}

/**
 * discord.js's REST sends uploads as a FormData body through undici's global dispatcher. The
 * global dispatcher is whichever undici loaded first: when it is the platform client's undici 7,
 * it cannot read a FormData made by discord.js's undici 6 ("action is not a function"), and every
 * message with a file fails. Encoding the form to bytes first works with either.
 */
const requestWithEncodedForm: RESTOptions['makeRequest'] = async (url, init) => {
  if (!(init.body instanceof FormData)) return DefaultRestOptions.makeRequest(url, init);
  const encoded = new Response(init.body);
  const headers = new Headers(init.headers as ConstructorParameters<typeof Headers>[0]);
  headers.set('content-type', encoded.headers.get('content-type') ?? 'multipart/form-data');
  const body = new Uint8Array(await encoded.arrayBuffer());
  return DefaultRestOptions.makeRequest(url, { ...init, body, headers: Object.fromEntries(headers) });
};

/**
 * Replaces the bot's application commands with the registry's: in one guild when `guildId` is set
 * (instant, for development), globally otherwise.
 */
export async function registerCommands(options: {
  config: DiscordConfig;
  commands: readonly CommandDefinition[];
  rest?: REST;
}): Promise<{ scope: 'guild' | 'global'; count: number }> {
  const { config, commands } = options;
  const rest = options.rest ?? new REST(restOptions(config)).setToken(config.token);
  const body = toApplicationCommands(commands, config.managePermission, config.guildId ? 'guild' : 'global');
  const route = config.guildId
    ? Routes.applicationGuildCommands(config.applicationId, config.guildId)
    : Routes.applicationCommands(config.applicationId);
  await rest.put(route, { body });
  return { scope: config.guildId ? 'guild' : 'global', count: body.length };
}

/**
 * Logs in, registers the commands and answers interactions until `stop`. With `config.shards`, it
 * opens gateway sessions for those shards only and answers the interactions Discord routes to them;
 * alerts go through REST and reach any channel whichever shards the process holds.
 */
export async function startDiscord(options: DiscordAdapterOptions): Promise<DiscordAdapter> {
  const { config, engine, logger } = options;
  const extra = options.clientOptions ?? {};
  const client = new Client({
    intents: [GatewayIntentBits.Guilds],
    // Only this process's shards: Discord sends each guild's events to shard (guild_id >> 22) % count.
    ...(config.shards ? { shards: config.shards.ids, shardCount: config.shards.count } : {}),
    ...extra,
    rest: { ...restOptions(config), ...extra.rest },
  });
  const codec = engine.buttonCodec(DISCORD_LIMITS.customId - CUSTOM_ID_PREFIX);
  const images = options.images ?? new ChatImages({ logger });
  const handler = new InteractionHandler(options, codec, images);
  // The interaction's channel type, which discord.js keeps only for channels it has cached (not an
  // archived thread, nor a channel of a server the bot is not in). Raw comes first, synchronously.
  client.on(Events.Raw, (packet: { t?: unknown; d?: unknown }) => {
    if (packet.t === 'INTERACTION_CREATE') handler.noteRaw(packet.d);
  });

  client.on(Events.Error, (error) => logger.error({ err: scrub(error, config.token) }, 'discord client error'));
  client.on(Events.ShardDisconnect, (_event, shard) => logger.warn({ shard }, 'discord gateway disconnected'));
  client.on(Events.InteractionCreate, (interaction) => {
    void handler.handle(interaction).catch((error: unknown) => {
      // Not the error itself: its URL would carry the interaction's token.
      const code = error instanceof DiscordAPIError ? error.code : undefined;
      const reason = error instanceof Error ? error.message : String(error);
      logger.warn({ code, reason: reason.split(config.token).join('[redacted]') }, 'discord interaction not answered');
    });
  });
  const ready = new Promise<void>((resolve) => client.once(Events.ClientReady, () => resolve()));
  const connecting = client.login(config.token).then(() => ready);
  // Settles after a time-out too, once the client is destroyed: nobody awaits it then.
  connecting.catch(() => undefined);
  const timeoutMs = options.readyTimeoutMs ?? READY_TIMEOUT_MS;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(gatewayTimeout(client, timeoutMs)), timeoutMs);
  });
  try {
    await Promise.race([connecting, late]);
  } catch (error) {
    await client.destroy();
    if (!options.images) await images.close();
    throw startError(scrub(error, config.token), shownAddress(client.rest.options.api));
  } finally {
    clearTimeout(timer);
  }
  logger.info(
    { user: client.user?.tag, guilds: client.guilds.cache.size, ...(config.shards ? { shards: config.shards } : {}) },
    'discord connected',
  );
  // Commands are the application's, not a shard's: with shards split across processes, the one
  // holding shard 0 registers them, so that N replicas do not overwrite them N times at each start.
  const registers = config.shards === undefined || config.shards.ids.includes(0);
  if (options.registerCommands !== false && registers) {
    // The commands registered before stay in place: a failure here must not keep the bot offline.
    await registerCommands({ config, commands: engine.commands, rest: client.rest }).then(
      (registered) => logger.info(registered, 'discord commands registered'),
      (error: unknown) =>
        logger.error({ reason: deliveryErrorOf(error).message }, 'discord commands could not be registered'),
    );
  }
  return {
    client,
    sink: new DiscordSink(client.rest, codec, images, {
      logger,
      pacer: new RatePacer(config.requestsPerSecond ?? DISCORD_GLOBAL_REQUESTS_PER_SECOND),
      ...(options.crosspostIn ? { crosspostIn: options.crosspostIn } : {}),
    }),
    membership: new DiscordMembership(client.rest, () => client.user?.id),
    ready: () => client.isReady(),
    async stop() {
      await client.destroy();
      if (!options.images) await images.close();
    },
  };
}

/**
 * A failed login as one line for the operator: the REST root could not be reached (the gateway's
 * address is asked there first), or it refused the token. Anything else is passed on.
 */
function startError(error: unknown, address: string): unknown {
  if (error instanceof ChatStartError) return error;
  const cause = { cause: error };
  const code = (error as { code?: unknown } | undefined)?.code;
  if (code === 'TokenInvalid' || (error instanceof DiscordAPIError && error.status === 401)) {
    const text = `Discord: the API at ${address} refused DISCORD_TOKEN (401 Unauthorized); check the bot's token in the Developer Portal.`;
    return new ChatStartError('discord', 'refused', address, text, cause);
  }
  const reason =
    networkFailureOf(error) ??
    (error instanceof HTTPError || (error instanceof DiscordAPIError && error.status >= 500)
      ? `HTTP ${error.status}`
      : undefined);
  if (reason === undefined) return error;
  const text = `Discord: cannot reach the API at ${address} (${reason}).`;
  return new ChatStartError('discord', 'unreachable', address, text, cause);
}

/** The gateway (whose address the REST API gave) did not let the bot in within the start-up deadline. */
function gatewayTimeout(client: Client, timeoutMs: number): ChatStartError {
  const gateway = client.ws.gateway;
  const address = gateway ? shownAddress(gateway) : shownAddress(client.rest.options.api);
  const what = gateway ? 'the gateway' : 'the API';
  const text = `Discord: cannot reach ${what} at ${address} (no session within ${Math.round(timeoutMs / 1000)} s).`;
  return new ChatStartError('discord', 'unreachable', address, text);
}

/** An error whose message cannot carry the token (discord.js puts nothing there, this makes sure). */
function scrub(error: unknown, token: string): unknown {
  if (error instanceof Error && token.length >= 4 && error.message.includes(token)) {
    const clean = new Error(error.message.split(token).join('[redacted]'));
    clean.name = error.name;
    return clean;
  }
  return error;
}

type Payload = {
  content?: string;
  embeds: DiscordMessage['embeds'];
  components: APIActionRowComponent<APIButtonComponent>[];
  allowedMentions: DiscordMessage['allowedMentions'];
  files: Array<{ attachment: Buffer; name: string }>;
};

type Ready = Payload & { ephemeral: boolean };

const STYLES: Record<DiscordButton['style'], ButtonStyle> = {
  primary: ButtonStyle.Primary,
  secondary: ButtonStyle.Secondary,
  success: ButtonStyle.Success,
  danger: ButtonStyle.Danger,
  link: ButtonStyle.Link,
};

/** Button rows with each action encoded into a custom id that says whether it replaces the message. */
async function componentsOf(
  rows: DiscordButton[][],
  codec: ButtonCodec,
): Promise<APIActionRowComponent<APIButtonComponent>[]> {
  let index = 0;
  const out: APIActionRowComponent<APIButtonComponent>[] = [];
  for (const row of rows) {
    const components: APIButtonComponent[] = [];
    for (const button of row) {
      if (button.url) {
        components.push({ type: ComponentType.Button, style: ButtonStyle.Link, label: button.label, url: button.url });
      } else if (button.action) {
        const mode = button.replaces ? 'u' : 'r';
        const customId = `${mode}${(index++).toString(36)}:${await codec.encode(button.action)}`;
        const style = STYLES[button.style] as Exclude<ButtonStyle, ButtonStyle.Link | ButtonStyle.Premium>;
        components.push({ type: ComponentType.Button, style, label: button.label, custom_id: customId });
      }
    }
    if (components.length) out.push({ type: ComponentType.ActionRow, components });
  }
  return out;
}

async function payloadOf(replies: readonly Reply[], codec: ButtonCodec, images: ImageSource): Promise<Ready> {
  const { message, files } = await renderWithImages(replies, images);
  return {
    ...(message.content === undefined ? {} : { content: message.content }),
    embeds: message.embeds,
    components: await componentsOf(message.buttons, codec),
    allowedMentions: message.allowedMentions,
    files: files.map((f) => ({ attachment: Buffer.from(f.data), name: f.name })),
    ephemeral: message.ephemeral,
  };
}

/** Resolves with the value, or with `undefined` once `ms` have passed. */
function within<T>(work: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

type Answerable = ChatInputCommandInteraction | ButtonInteraction;

/**
 * Whether the interaction came through the app installed to the person's account only, from a
 * channel the bot cannot post in: a DM between other people or a group DM (context 2), or a server
 * that has not installed the bot (no guild install among the authorizing integrations).
 */
export function botIsAbsent(interaction: Interaction): boolean {
  if (interaction.context === InteractionContextType.PrivateChannel) return true;
  return interaction.inGuild() && interaction.authorizingIntegrationOwners.guildId === null;
}

/** What {@link InteractionHandler.noteRaw} reads of an INTERACTION_CREATE payload. */
const RAW_INTERACTION = v.object({ id: v.string(), channel: v.optional(v.object({ type: v.number() })) });
/** Raw channel types kept for interactions not yet handled (discord.js drops some: never handled). */
const RAW_KEPT = 1_000;
/** Threads: posting there takes Send Messages in Threads instead of Send Messages. */
const THREAD_TYPES: ReadonlySet<number> = new Set([
  ChannelType.AnnouncementThread,
  ChannelType.PublicThread,
  ChannelType.PrivateThread,
]);

/**
 * The permissions, by the names Discord's settings show, that the bot lacks to post alerts (embeds)
 * in a channel: `app_permissions` are the bot's own there, overwrites included (Administrator implies all).
 */
export function missingToPost(permissions: Readonly<PermissionsBitField>, thread: boolean): string[] {
  const needed: Array<[bigint, string]> = [
    [PermissionFlagsBits.ViewChannel, 'View Channel'],
    thread
      ? [PermissionFlagsBits.SendMessagesInThreads, 'Send Messages in Threads']
      : [PermissionFlagsBits.SendMessages, 'Send Messages'],
    [PermissionFlagsBits.EmbedLinks, 'Embed Links'],
  ];
  return needed.filter(([flag]) => !permissions.has(flag, true)).map(([, name]) => name);
}

class InteractionHandler {
  readonly #options: DiscordAdapterOptions;
  readonly #codec: ButtonCodec;
  readonly #images: ChatImages;
  /** Commands (`watch add`) whose last answer took longer than the deferral delay. */
  readonly #slow = new Set<string>();
  /** Channel types of interactions received and not yet handled, by interaction id. */
  readonly #channelTypes = new Map<string, number | undefined>();
  /** The channel type of each interaction being handled. */
  readonly #channelType = new WeakMap<Interaction, number | undefined>();

  constructor(options: DiscordAdapterOptions, codec: ButtonCodec, images: ChatImages) {
    this.#options = options;
    this.#codec = codec;
    this.#images = images;
  }

  /** Keeps the channel type of an interaction as Discord sent it, for {@link #chat}. */
  noteRaw(data: unknown): void {
    const parsed = v.safeParse(RAW_INTERACTION, data);
    if (!parsed.success) return;
    // Interactions discord.js drops never reach `handle`: the oldest entries go first.
    if (this.#channelTypes.size >= RAW_KEPT) {
      const oldest = this.#channelTypes.keys().next();
      if (!oldest.done) this.#channelTypes.delete(oldest.value);
    }
    this.#channelTypes.set(parsed.output.id, parsed.output.channel?.type);
  }

  async handle(interaction: Interaction): Promise<void> {
    this.#channelType.set(interaction, this.#channelTypes.get(interaction.id));
    this.#channelTypes.delete(interaction.id);
    if (interaction.isChatInputCommand()) await this.#command(interaction);
    else if (interaction.isAutocomplete()) await this.#autocomplete(interaction);
    else if (interaction.isButton()) await this.#button(interaction);
  }

  /**
   * The chat an interaction concerns: its channel, or, through the person's own install where the
   * bot is not ({@link botIsAbsent}), their DM with the bot (opened once, then cached by discord.js).
   */
  async #chatOf(interaction: Interaction): Promise<ChatRef> {
    if (!botIsAbsent(interaction)) return this.#chat(interaction);
    const dm = await interaction.user.createDM();
    return { platform: 'discord', id: dm.id, kind: 'private', viaUserInstall: true };
  }

  /** The interaction's channel as a chat (rate limits; {@link #chatOf} for what a command concerns). */
  #chat(interaction: Interaction): ChatRef {
    const id = interaction.channelId ?? interaction.user.id;
    if (!interaction.inGuild()) return { platform: 'discord', id, kind: 'private' };
    const type = this.#channelType.get(interaction) ?? interaction.channel?.type;
    const missing = missingToPost(interaction.appPermissions, type !== undefined && THREAD_TYPES.has(type));
    return {
      platform: 'discord',
      id,
      guildId: interaction.guildId,
      kind: 'group',
      community: { id: interaction.guildId, name: interaction.guild?.name ?? 'this server' },
      ...(missing.length ? { botMissing: missing } : {}),
      ...(type === ChannelType.GuildAnnouncement ? { publishes: true } : {}),
    };
  }

  #actor(interaction: Interaction): Actor {
    const name = interaction.user.globalName ?? interaction.user.username;
    // Through a person's own install, they act for themselves: a server's permissions mean nothing there.
    if (botIsAbsent(interaction)) return { id: interaction.user.id, ...(name ? { name } : {}), canManage: false };
    const permission = PermissionFlagsBits[this.#options.config.managePermission];
    const canManage = interaction.inGuild() && (interaction.memberPermissions?.has(permission, true) ?? false);
    const canManageRoles =
      interaction.inGuild() && (interaction.memberPermissions?.has(PermissionFlagsBits.ManageRoles, true) ?? false);
    const actor: Actor = { id: interaction.user.id, ...(name ? { name } : {}), canManage, canManageRoles };
    if (interaction.inGuild()) actor.mayMention = (roleId) => roleMention(interaction, roleId);
    return actor;
  }

  /**
   * Counts the interaction against the person's and the chat's rate limits. When refused, answers
   * it here: "slow down" once, then only the acknowledgement Discord requires (see `#acknowledge`).
   */
  async #admitted(interaction: Answerable, command?: string): Promise<boolean> {
    const admission = this.#options.engine.admit(this.#chat(interaction), interaction.user, command);
    if (admission.status === 'ok') return true;
    if (admission.status === 'notify') await this.#answer(interaction, Promise.resolve(admission.reply), 'reply', '');
    else await this.#acknowledge(interaction);
    return false;
  }

  /**
   * Acknowledges an interaction without showing anything. A button press has a callback for that
   * (deferred update: the message stays as it was). A slash command has none: every answer to it
   * is a message, so it is deferred ephemerally (seen only by that person) and the placeholder
   * deleted at once. Neither call counts against the bot's global rate limit.
   */
  async #acknowledge(interaction: Answerable): Promise<void> {
    if (interaction.isButton()) {
      await interaction.deferUpdate();
      return;
    }
    await interaction.deferReply({ flags: MessageFlags.Ephemeral });
    await interaction.deleteReply();
  }

  async #command(interaction: ChatInputCommandInteraction): Promise<void> {
    if (!(await this.#admitted(interaction, interaction.commandName))) return;
    const invocation = toInvocation(
      interaction.commandName,
      interaction.options.data,
      await this.#chatOf(interaction),
      this.#actor(interaction),
    );
    const label = [invocation.command, invocation.subcommand].filter(Boolean).join(' ');
    await this.#answer(interaction, this.#options.engine.run(invocation), 'reply', label);
  }

  async #button(interaction: ButtonInteraction): Promise<void> {
    if (!(await this.#admitted(interaction))) return;
    const match = /^([ur])[0-9a-z]:([\s\S]+)$/.exec(interaction.customId);
    const action = match?.[2] === undefined ? undefined : this.#codec.decode(match[2]);
    const work = action
      ? this.#chatOf(interaction).then((chat) => this.#options.engine.runLine(action, chat, this.#actor(interaction)))
      : Promise.resolve(undefined);
    const expired: Reply = { tone: 'warning', ephemeral: true, lines: [EXPIRED_BUTTON_TEXT] };
    await this.#answer(
      interaction,
      work.then((reply) => reply ?? expired),
      match?.[1] === 'u' && action ? 'update' : 'reply',
      action ? (/^\s*\/([\w-]+)/.exec(action)?.[1]?.toLowerCase() ?? '') : '',
    );
  }

  /**
   * Answers within Discord's 3 s: directly when the answer (images included) is ready in time,
   * else defers and edits later. `label` names the command for {@link #deferDelay}.
   */
  async #answer(interaction: Answerable, work: Promise<Reply>, mode: 'reply' | 'update', label: string): Promise<void> {
    const started = performance.now();
    const ready = work.then((reply) => payloadOf([reply], this.#codec, this.#images));
    // Settles when the answer is ready, whether or not it was deferred.
    void ready.then(
      () => this.#timed(label, performance.now() - started),
      () => undefined,
    );
    const delay = this.#deferDelay(interaction, label);
    const early = delay > 0 ? await within(ready, delay) : undefined;
    const original = interaction.isButton() ? interaction.message.flags.has(MessageFlags.Ephemeral) : false;
    if (early) {
      const { ephemeral, ...body } = early;
      // An ephemeral answer (an error) to a paging button must not replace a message others see.
      if (mode === 'update' && interaction.isButton() && (!ephemeral || original)) {
        await interaction.update({ ...body, attachments: [] });
      } else {
        await interaction.reply({ ...body, ...(ephemeral ? { flags: MessageFlags.Ephemeral } : {}) });
      }
      return;
    }
    if (mode === 'update' && interaction.isButton()) await interaction.deferUpdate();
    else await interaction.deferReply();
    const { ephemeral, ...body } = await ready;
    if (mode === 'update' ? ephemeral && !original : ephemeral) {
      // A deferred answer is public; an answer meant for one person goes as an ephemeral follow-up.
      if (mode === 'reply') await interaction.deleteReply();
      await interaction.followUp({ ...body, flags: MessageFlags.Ephemeral });
    } else {
      // Listing the new files only: an image of the message's former content must not linger.
      await interaction.editReply({ ...body, attachments: [] });
    }
  }

  /**
   * How long an interaction may wait for its answer before it is deferred: until
   * `deferAfterMs` after Discord created it (its id says when; a clock ahead of Discord's only
   * makes the deferral earlier) and never longer than that after it arrived. A command that was
   * slower than that the last time it ran is deferred at once, so its deferral is not left to a
   * timer on a busy event loop. Instant answers (help, settings) are never deferred.
   */
  #deferDelay(interaction: Answerable, label: string): number {
    if (this.#slow.has(label)) return 0;
    const limit = this.#options.deferAfterMs ?? DEFER_AFTER_MS;
    return Math.max(0, Math.min(limit, interaction.createdTimestamp + limit - Date.now()));
  }

  #timed(label: string, ms: number): void {
    // Only names of registered commands: the set stays as small as the registry.
    if (!label || !this.#options.engine.find(label.split(' ')[0] ?? '')) return;
    if (ms > (this.#options.deferAfterMs ?? DEFER_AFTER_MS)) this.#slow.add(label);
    else this.#slow.delete(label);
  }

  async #autocomplete(interaction: AutocompleteInteraction): Promise<void> {
    const focused = interaction.options.getFocused(true);
    const choices = await within(
      this.#choices(interaction, focused.name, String(focused.value)).catch(() => []),
      this.#options.autocompleteTimeoutMs ?? 2_500,
    );
    await interaction.respond(choices ?? []);
  }

  async #choices(
    interaction: AutocompleteInteraction,
    optionName: string,
    text: string,
  ): Promise<ApplicationCommandOptionChoiceData<string>[]> {
    const network = interaction.options.data
      .flatMap((o) => [o, ...(o.options ?? [])])
      .find((o) => o.name === EXTRA_OPTIONS.network && typeof o.value === 'string')?.value as string | undefined;
    return this.#options.engine.complete({
      chat: await this.#chatOf(interaction),
      command: interaction.commandName,
      subcommand: interaction.options.getSubcommand(false) ?? undefined,
      option: optionName,
      text,
      network,
      limit: AUTOCOMPLETE_CHOICES,
      maxLength: CHOICE_TEXT,
    });
  }
}

/** {@link Actor.mayMention} from the server's roles (cached with the Guilds intent, or resolved with the option) and the member's permissions. */
function roleMention(interaction: Interaction<'cached' | 'raw'>, roleId: string): RoleMentionCheck {
  if (roleId === interaction.guildId) return 'everyone';
  // A role picked in the option comes resolved with the interaction, also when the server is not cached.
  const picked = interaction.isChatInputCommand() ? interaction.options.resolved?.roles?.get(roleId) : undefined;
  const role = interaction.guild?.roles.cache.get(roleId) ?? picked;
  if (!role) return 'unknown_role';
  if (role.mentionable || interaction.memberPermissions?.has(PermissionFlagsBits.MentionEveryone, true)) return 'ok';
  return 'not_mentionable';
}

/**
 * A slash command's options as the engine's invocation: every option by name as text, the
 * subcommand from the interaction, and the `traits` option split into `name=value` words.
 */
export function toInvocation(
  command: string,
  data: readonly CommandInteractionOption[],
  chat: ChatRef,
  actor: Actor,
): Invocation {
  const sub = data.find((o) => o.options !== undefined && o.value === undefined);
  const leaves = sub ? (sub.options ?? []) : data;
  const named = new Map<string, string>();
  const positional: string[] = [];
  let refused: ArgError | undefined;
  const given = leaves.filter((o) => o.value !== undefined && o.value !== null);
  for (const option of given) {
    if (option.name !== EXTRA_OPTIONS.traits) named.set(option.name.toLowerCase(), String(option.value));
  }
  // The traits text after the options, so that a key in it that one of them has is refused, as typed twice.
  for (const option of given) {
    if (option.name !== EXTRA_OPTIONS.traits) continue;
    const words = tokenize(String(option.value));
    if (!words.ok) {
      refused ??= words.error;
      continue;
    }
    for (const [key, word] of words.value.named) {
      const earlier = named.get(key);
      if (earlier !== undefined) refused ??= { code: 'repeated_option', option: key, allowed: [earlier, word] };
      else named.set(key, word);
    }
    positional.push(...words.value.positional);
  }
  return { chat, actor, command, subcommand: sub?.name, args: { positional, named }, ...(refused ? { refused } : {}) };
}

/** Discord's nonce (at most 25 characters) of a delivery's idempotency key. */
export function nonceOf(idempotencyKey: string): string {
  return createHash('sha256').update(idempotencyKey).digest('base64url').slice(0, NONCE_LENGTH);
}

/** A REST failure as the dispatcher understands it. */
export function deliveryErrorOf(error: unknown): DeliveryError {
  if (error instanceof DeliveryError) return error;
  if (error instanceof DiscordAPIError) {
    const code = typeof error.code === 'number' ? error.code : Number(error.code);
    const message = `Discord answered ${error.status} (code ${error.code}): ${error.message}`;
    if (PERMANENT_CODES.has(code)) return new DeliveryError(message, { permanent: true, cause: error });
    const raw = error.rawError as { retry_after?: unknown };
    const retryAfterMs = typeof raw.retry_after === 'number' ? Math.ceil(raw.retry_after * 1000) : undefined;
    return new DeliveryError(message, {
      permanent: false,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      cause: error,
    });
  }
  if (error instanceof RateLimitError) {
    return new DeliveryError(`Discord rate limit on ${error.route}`, {
      permanent: false,
      retryAfterMs: error.retryAfter,
      cause: error,
    });
  }
  if (error instanceof HTTPError) {
    return new DeliveryError(`Discord answered ${error.status}`, { permanent: false, cause: error });
  }
  const reason = error instanceof Error ? error.message : String(error);
  return new DeliveryError(`Discord could not be reached: ${reason}`, { permanent: false, cause: error });
}

/** A message as the REST client posts it: its JSON body and its uploads. */
interface RestMessage {
  body: Record<string, unknown>;
  files: Array<{ name: string; data: Buffer }>;
}

/**
 * Alerts to Discord channels through the client's REST queue, which keeps Discord's per-route and
 * global rate limits and retries 429s itself. With a `pacer` (the adapter gives one at the bot's
 * global limit), sends and edits of all channels are spaced evenly under it: thousands of channels
 * of one sale would otherwise reach Discord in bursts of a second's worth, which arrive spread out
 * and overlap the next second (global 429s). A burst is one message of up to 10 embeds; the
 * enforced nonce makes a resend after a crash return the message already posted.
 */
export class DiscordSink implements AlertSink {
  readonly platform = 'discord';
  readonly maxBatch = DISCORD_LIMITS.embedsPerMessage;
  readonly minIntervalMs = 100;
  readonly #rest: REST;
  readonly #codec: ButtonCodec;
  readonly #images: ImageSource;
  readonly #crosspostIn: (channelId: string) => boolean;
  readonly #logger: Logger | undefined;
  readonly #pacer: RatePacer | undefined;
  /** Per announcement channel: when its last crossposts went, and until when Discord refuses more. */
  readonly #crossposts = new Map<string, { times: number[]; refusedUntil: number }>();
  /** The body of each alert lately sent alone (see #sendBody); gone with the alert. */
  readonly #rendered = new WeakMap<Reply, Promise<RestMessage>>();

  /**
   * `images` defaults to showing every image by its address (no SVG drawn); `crosspostIn` says
   * which channels publish what is posted there (none by default).
   */
  constructor(
    rest: REST,
    codec: ButtonCodec,
    images: ImageSource = IMAGES_BY_URL,
    options: { crosspostIn?: (channelId: string) => boolean; logger?: Logger; pacer?: RatePacer } = {},
  ) {
    this.#rest = rest;
    this.#codec = codec;
    this.#images = images;
    this.#crosspostIn = options.crosspostIn ?? (() => false);
    this.#logger = options.logger;
    this.#pacer = options.pacer;
  }

  async send(chatId: string, replies: readonly Reply[], idempotencyKey: string): Promise<string> {
    const { body, files } = await this.#sendBody(replies);
    await this.#pacer?.take();
    const message = (await this.#inThread(chatId, () =>
      this.#rest.post(Routes.channelMessages(chatId), {
        body: { ...body, nonce: nonceOf(idempotencyKey), enforce_nonce: true },
        ...(files.length ? { files } : {}),
      }),
    )) as APIMessage;
    if (this.#crosspostIn(chatId)) await this.#crosspost(chatId, message);
    return message.id;
  }

  async edit(chatId: string, messageId: string, replies: readonly Reply[]): Promise<void> {
    const { body, files } = await this.#body(replies);
    await this.#pacer?.take();
    await this.#inThread(chatId, () =>
      this.#rest.patch(Routes.channelMessage(chatId, messageId), { body, ...(files.length ? { files } : {}) }),
    );
  }

  /**
   * Runs a request to a channel; when the channel is an archived thread (50083), unarchives it and
   * runs it once more. A thread the bot may not reopen (locked, and no Manage Threads) is a
   * permanent failure, like a deleted channel: its rules are paused.
   */
  async #inThread<T>(chatId: string, request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (error) {
      if (!(error instanceof DiscordAPIError && error.code === THREAD_ARCHIVED)) throw deliveryErrorOf(error);
    }
    try {
      await this.#rest.patch(Routes.channel(chatId), { body: { archived: false } });
    } catch (error) {
      const failure = deliveryErrorOf(error);
      if (!failure.permanent) throw failure;
      throw new DeliveryError(`the thread is archived and the bot cannot reopen it (${failure.message})`, {
        permanent: true,
        cause: error,
      });
    }
    try {
      return await request();
    } catch (error) {
      throw deliveryErrorOf(error);
    }
  }

  /**
   * Publishes a message of an announcement channel to the servers that follow it, within Discord's
   * limit of {@link CROSSPOSTS_PER_HOUR} an hour per channel. Past it (or when Discord refuses),
   * the alert stays posted in the channel only: the delivery has succeeded either way, and a
   * failure here is logged, never retried.
   */
  async #crosspost(chatId: string, message: APIMessage): Promise<void> {
    // A resend of a message already posted (the same nonce) may be published already.
    if (((message.flags ?? 0) & MessageFlags.Crossposted) !== 0) return;
    const now = Date.now();
    const state = this.#crossposts.get(chatId) ?? { times: [], refusedUntil: 0 };
    state.times = state.times.filter((at) => at > now - HOUR_MS);
    this.#crossposts.set(chatId, state);
    if (state.times.length >= CROSSPOSTS_PER_HOUR || state.refusedUntil > now) {
      this.#logger?.info(
        { channel: chatId, message: message.id },
        'crosspost limit reached: posted in the channel only',
      );
      return;
    }
    state.times.push(now);
    try {
      await this.#rest.post(Routes.channelMessageCrosspost(chatId, message.id));
    } catch (error) {
      if (error instanceof RateLimitError) state.refusedUntil = now + error.retryAfter;
      const reason = error instanceof RateLimitError ? 'rate limited' : deliveryErrorOf(error).message;
      this.#logger?.warn({ channel: chatId, message: message.id, reason }, 'alert not crossposted');
    }
  }

  /**
   * The body of a message of one alert, made once for all the chats it goes to: the dispatcher hands
   * every chat of an event the same Reply, and nothing in the body depends on the chat (the nonce is
   * added per send). Images are drawn and buttons stored once, not once per chat.
   */
  #sendBody(replies: readonly Reply[]): Promise<RestMessage> {
    const only = replies.length === 1 ? replies[0] : undefined;
    if (!only) return this.#body(replies);
    let made = this.#rendered.get(only);
    if (!made) {
      made = this.#body(replies);
      this.#rendered.set(only, made);
      made.catch(() => this.#rendered.delete(only));
    }
    return made;
  }

  /**
   * The message as REST data. `attachments` lists exactly the uploads: on an edit, Discord keeps
   * the former files otherwise, and an image that the new embed no longer shows would hang below it.
   */
  async #body(replies: readonly Reply[]): Promise<RestMessage> {
    const payload = await payloadOf(replies, this.#codec, this.#images);
    const mentions = payload.allowedMentions;
    return {
      body: {
        ...(payload.content === undefined ? {} : { content: payload.content }),
        embeds: payload.embeds,
        components: payload.components,
        allowed_mentions: { parse: mentions.parse, roles: mentions.roles, users: mentions.users },
        attachments: payload.files.map((f, id) => ({ id, filename: f.name })),
      },
      files: payload.files.map((f) => ({ name: f.name, data: f.attachment })),
    };
  }
}
