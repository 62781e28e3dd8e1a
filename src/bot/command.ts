import type { Logger } from 'pino';
import type { MarketHistoryView } from '../core/market.ts';
import type { CompletenessDay, RulesRepository } from '../core/ports.ts';
import type { Reply } from '../core/reply.ts';
import type { HolderRolesPort } from '../core/roles.ts';
import type { ChatSettings, DigestSettings } from '../core/settings.ts';
import type { JournalBacklog, StreamHealth } from '../core/status.ts';
import type { WalletVerificationPort } from '../core/wallets.ts';
import type { CurrencyDirectory } from '../market/currencies.ts';
import type { Links } from '../market/links.ts';
import type { PlatformClient } from '../platform/client.ts';
import type { CollectionRef, OptionSpec, OptionValues } from './options.ts';
import type { RarityIndex } from './rarity.ts';

/**
 * Who may run a command. `manageRoles`: who may give the server's roles (Discord's Manage Roles; a
 * Telegram group's administrators), in a community only.
 */
export type Permission = 'everyone' | 'manage' | 'manageRoles' | 'operator';

export type ChatPlatform = 'console' | 'discord' | 'telegram';

/** Where a command was typed (and where its answer goes). */
export interface ChatRef {
  platform: ChatPlatform;
  /** Channel or chat id on that platform. */
  id: string;
  /** Discord guild id, when in a server. */
  guildId?: string;
  kind: 'private' | 'group';
  /**
   * The community the command concerns (holder roles, wallet verification): the Discord server, the
   * Telegram group, or the group a private chat was opened from with a deep link. `name` is the
   * platform's (untrusted text).
   */
  community?: { id: string; name: string };
  /**
   * The permissions the bot lacks to post in this chat, by the platform's names ("Send Messages in
   * Threads"), when the adapter knows them: alerts added here could never arrive.
   */
  botMissing?: readonly string[];
  /** A Discord announcement channel: what the bot posts there can be published to following servers. */
  publishes?: boolean;
  /**
   * The command came through the app installed to the person's own account (a Discord user
   * install), from a channel the bot is not in: the chat is then the person's DM with the bot,
   * where their rules and digests post, and the answer goes back through the interaction.
   */
  viaUserInstall?: boolean;
}

/**
 * Whether a person may have the bot ping a role: `everyone` is the server's @everyone role (its id is
 * the server's), `unknown_role` no role of this server, `not_mentionable` a role only members with
 * Discord's "Mention @everyone, @here and All Roles" may ping, which this person lacks.
 */
export type RoleMentionCheck = 'ok' | 'everyone' | 'unknown_role' | 'not_mentionable';

/** Who typed it. `canManage` is decided by the adapter (chat admin, Manage Server, ...). */
export interface Actor {
  id: string;
  name?: string;
  canManage: boolean;
  /** Whether this person may give the community's roles (Discord: Manage Roles); `canManage` when unset. */
  canManageRoles?: boolean;
  /**
   * Where roles exist (a Discord server): whether this person may make the bot ping a role. A rule's
   * mention pings with the bot's permissions, so it is held to the person's own.
   */
  mayMention?: (roleId: string) => RoleMentionCheck;
}

/** A collection resolved to one contract on one network. */
export interface ResolvedCollection {
  network: string;
  address: string;
  name: string;
  /** ERC721, ERC1155, ... when known. */
  standard?: string;
  image?: string;
}

/** Finds the one collection a user means (CollectionResolver), for names a command reads itself (/digest's list). */
export interface CollectionLookup {
  resolve(ref: CollectionRef, network: string, settings: ChatSettings, option: string): Promise<ResolvedCollection>;
}

/**
 * What market commands know beyond the platform's answers. Each part is absent where the bot runs
 * without it (no alert pipeline: no history).
 */
export interface MarketContext {
  /** The bot's own record of sales and floors, for /collection's 24 h and 7 d figures. */
  history?: MarketHistoryView;
  /** Trait shares and rarity ranks, computed per collection in the background (/token, /traits). */
  rarity?: RarityIndex;
}

/** Value of an argument once parsed (collections are resolved before `run`). */
type ArgValue<S extends OptionSpec> = S['type'] extends 'collection' ? ResolvedCollection : OptionValues[S['type']];

/** The arguments object of a command, typed from its option specs. */
export type ArgsOf<O extends readonly OptionSpec[]> = {
  [S in O[number] as S['name']]: S extends { required: true } ? ArgValue<S> : ArgValue<S> | undefined;
};

/** What /status shows of the alert path and the delivery log. */
export interface AlertStatus {
  streams: StreamHealth[];
  journal: { records: number; pending: number; failed: number };
  counters: { logs: number; events: number; matched: number; deliveries: number; reorged: number; dropped: number };
  /** Alerts waiting in memory for the delivery journal, and why (undefined before the alert path exists). */
  backlog: JournalBacklog | undefined;
  /** How complete the record is today (UTC): per network, events seen, blocks read back, blocks missed. */
  completeness?: { day: string; networks: readonly CompletenessDay[] };
}

/** What /digest needs of the digest service. */
export interface DigestPort {
  /** The digest of a chat as it would be posted now. */
  preview: (chatKey: string, digest: DigestSettings) => Promise<Reply>;
  /** When the schedule fires next. */
  nextRun: (digest: DigestSettings) => Date | null;
}

/** The Discord permission that makes a member a chat admin for the bot (DISCORD_MANAGE_PERMISSION). */
export type DiscordManagePermission = 'ManageGuild' | 'ManageChannels';

/** Static settings commands read. */
export interface BotSettings {
  /** Operator ids as `platform:id`, e.g. `discord:1234`. */
  operators: readonly string[];
  projectId: number | undefined;
  /** Audience that /allowlist checks when none is given. */
  allowlistAudience: number | undefined;
  /** Network used when a chat set none. */
  defaultNetwork: string;
  version: string;
  /** What Discord members need to manage the bot, named in refusals; ManageGuild when unset. */
  discordManagePermission?: DiscordManagePermission | undefined;
}

/** The words of a command as typed, for answers that depend on them or run the command again. */
export interface TypedCommand {
  /** `key=value` words that matched no option (trait filters), keys lower-cased. */
  extras: ReadonlyMap<string, string>;
  /** The keys given as `key=value` (every option of a Discord slash command is), lower-cased. */
  namedKeys: ReadonlySet<string>;
  /**
   * The command line of a button that runs this command again with some arguments changed (none:
   * the command line as typed, normalised: `/floor collection=devnet:0x… count=5`).
   */
  rerun: (changes?: Record<string, string | undefined>) => string;
}

/** The running bot, as /help and /status show it. */
export interface BotInfo {
  /** Registry of all commands. */
  commands: readonly CommandDefinition[];
  startedAt: Date;
  /** The alert path's state, when it runs (the delivery log's counts are read from its store). */
  alerts: (() => Promise<AlertStatus>) | undefined;
}

/** What a command's `run` gets besides its arguments. */
export interface CommandContext {
  platform: PlatformClient;
  store: RulesRepository;
  logger: Logger;
  settings: BotSettings;
  chat: ChatRef;
  actor: Actor;
  /** `platform:chatId`, the key of the chat's settings. */
  chatKey: string;
  /** The network of this invocation: the one given, else the chat's default, else the bot's. */
  network: string;
  now: () => Date;
  /** Whether the person who typed the command has a permission here. */
  may: (permission: Permission) => boolean;
  typed: TypedCommand;
  currencies: CurrencyDirectory;
  collections: CollectionLookup;
  /** Web pages of tokens, transactions and orders (none when the bot has no templates). */
  links: Links | undefined;
  /** The bot's market history and rarity index, when it has them (/collection, /token, /traits). */
  market: MarketContext | undefined;
  /** Digests, when they run. */
  digests: DigestPort | undefined;
  /** Wallet verification (/verify), when the bot has a wallet store. */
  verification: WalletVerificationPort | undefined;
  /** Holder roles (/roles, /gate), when they run. */
  roles: HolderRolesPort | undefined;
  bot: BotInfo;
}

export interface CommandSpec<O extends readonly OptionSpec[] = readonly OptionSpec[]> {
  name: string;
  description: string;
  options: O;
  permission?: Permission;
  /** See {@link CommandGroupSpec.personal}. */
  personal?: boolean;
  /** Accepts `trait=value` words that match no option. */
  acceptsTraits?: boolean;
  /** Example of use, shown by /help. */
  example?: string;
  run: (ctx: CommandContext, args: ArgsOf<O>) => Promise<Reply>;
}

/** A command with subcommands (`/project contracts`, `/watch add`). */
export interface CommandGroupSpec {
  name: string;
  description: string;
  permission?: Permission;
  /**
   * Its answers are about the chat's own setup (rules, settings, aliases, digest, wallets): where
   * the bot answers one person among others ({@link ChatRef.viaUserInstall}), only they see them.
   */
  personal?: boolean;
  subcommands: readonly CommandSpec[];
}

export type CommandDefinition = CommandSpec | CommandGroupSpec;

export function isGroup(command: CommandDefinition): command is CommandGroupSpec {
  return 'subcommands' in command;
}

/** Declares a command with its argument types inferred from its options. */
export function defineCommand<const O extends readonly OptionSpec[]>(spec: CommandSpec<O>): CommandSpec {
  return spec as unknown as CommandSpec;
}

export function defineGroup(spec: CommandGroupSpec): CommandGroupSpec {
  return spec;
}
