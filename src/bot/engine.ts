import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { RulesRepository } from '../core/ports.ts';
import type { Reply } from '../core/reply.ts';
import type { HolderRolesPort } from '../core/roles.ts';
import type { ChatSettings } from '../core/settings.ts';
import type { WalletVerificationPort } from '../core/wallets.ts';
import { CurrencyDirectory } from '../market/currencies.ts';
import type { Links } from '../market/links.ts';
import type { PlatformClient } from '../platform/client.ts';
import { type ArgumentSources, type ReadingFailure, readArguments } from './arguments.ts';
import { ButtonCodec } from './buttons.ts';
import { CollectionResolver } from './collections.ts';
import type { MarketContext } from './command.ts';
import {
  type Actor,
  type AlertStatus,
  type BotSettings,
  type ChatRef,
  type CommandContext,
  type CommandDefinition,
  type CommandSpec,
  type DigestPort,
  isGroup,
  type Permission,
} from './command.ts';
import { type Completion, type CompletionRequest, completions } from './completions.ts';
import {
  AmbiguousCollectionError,
  ArgumentError,
  permissionError,
  UnknownCollectionError,
  UserError,
} from './errors.ts';
import { type ArgError, type Tokens, tokenize } from './options.ts';
import { DEFAULT_CHAT_LIMIT, DEFAULT_USER_LIMIT, FloodGate, type RateLimitPolicy } from './rate-limit.ts';
import { closestWords } from './similar-names.ts';
import { choiceReply, errorReply, isExpectedFailure } from './user-text.ts';
import { choiceLines, commandLine, withoutFirstWord } from './words.ts';

/** A command as an adapter received it. */
export interface Invocation {
  chat: ChatRef;
  actor: Actor;
  command: string;
  subcommand?: string | undefined;
  args: Tokens;
  /** Words that could not be split (a quote not closed, an option given twice): the answer is their error, with the usage. */
  refused?: ArgError | undefined;
}

export interface EngineOptions {
  platform: PlatformClient;
  store: RulesRepository;
  logger: Logger;
  settings: BotSettings;
  commands: readonly CommandDefinition[];
  now?: () => Date;
  /** The alert path's state for /status. */
  alerts?: () => Promise<AlertStatus>;
  /** Digests for /digest. */
  digests?: DigestPort;
  /** Wallet verification for /verify. */
  verification?: WalletVerificationPort;
  /** Holder roles for /roles and /gate. */
  roles?: HolderRolesPort;
  /** Web pages of tokens, transactions and orders, for answers that link to them. */
  links?: Links;
  /** The market history and rarity index, for /collection, /token and /traits. */
  market?: MarketContext;
  /** Symbol of the native coin per network, where it is not ETH or a well-known one. */
  nativeSymbols?: Readonly<Record<string, string>>;
  /** The currencies of prices, shared with the alerts and digests; default: a directory of the engine's own. */
  currencies?: CurrencyDirectory;
  /** Messages a person may send in a burst, and how fast they may send more (see {@link CommandEngine.admit}). */
  userLimit?: RateLimitPolicy;
  /** The same for a chat, whoever writes in it. */
  chatLimit?: RateLimitPolicy;
}

/**
 * What an adapter does with an incoming message, decided by {@link CommandEngine.admit} before
 * anything else: handle it (`ok`); answer `reply` ("slow down") and nothing else (`notify`); or
 * answer nothing at all (`silent`), beyond the acknowledgement a platform requires (a Discord
 * interaction, a Telegram button press).
 */
export type Admission = { status: 'ok' } | { status: 'notify'; reply: Reply } | { status: 'silent' };

/** Outcome of one command, for logs and metrics. */
export type Outcome = 'ok' | 'user_error' | 'platform_error' | 'denied' | 'rate_limited' | 'failed';

/**
 * Splits a typed line into a command name and its words: `/floor@MyBot moon cats count=5`.
 * Returns undefined for a line that is not a command. The `@bot` suffix is dropped here;
 * adapters that must ignore commands for other bots check it before. Words that do not split (an
 * unclosed quote, an option given twice) come back as `refused`, with the first word kept as the
 * subcommand it may be, so that the answer shows the usage of what was typed.
 */
export function parseCommandLine(line: string): { command: string; args: Tokens; refused?: ArgError } | undefined {
  const match = /^\s*\/([A-Za-z][\w-]{0,31})(?:@\w+)?(?:\s+([\s\S]*))?$/.exec(line);
  if (!match) return undefined;
  const command = (match[1] ?? '').toLowerCase();
  const tokens = tokenize(match[2] ?? '');
  if (!tokens.ok) {
    const first = /^\s*([A-Za-z]+)(?=\s|$)/.exec(match[2] ?? '')?.[1];
    return { command, args: { positional: first ? [first] : [], named: new Map() }, refused: tokens.error };
  }
  return { command, args: tokens.value };
}

/**
 * The platform-neutral command engine: admits messages under the rate limits
 * ({@link CommandEngine.admit}), finds the command, checks permission, has its arguments read
 * (arguments.ts, over the pure word readers of words.ts), runs it, and turns any failure into a
 * clear answer (user-text.ts). `run` never throws: every invocation yields a Reply. Chat adapters
 * also ask it for completions and for the codec of their buttons: they never read the store.
 */
export class CommandEngine {
  readonly commands: readonly CommandDefinition[];
  readonly resolver: CollectionResolver;
  readonly currencies: CurrencyDirectory;
  readonly startedAt: Date;
  readonly #byName = new Map<string, CommandDefinition>();
  readonly #options: EngineOptions;
  readonly #now: () => Date;
  readonly #floodGate: FloodGate;
  /** Observers of each finished command (metrics). */
  readonly #listeners: Array<(name: string, outcome: Outcome, ms: number) => void> = [];

  constructor(options: EngineOptions) {
    this.#options = options;
    this.commands = options.commands;
    for (const command of options.commands) this.#byName.set(command.name, command);
    this.#now = options.now ?? (() => new Date());
    this.startedAt = this.#now();
    this.resolver = new CollectionResolver(options.platform);
    this.currencies = options.currencies ?? new CurrencyDirectory(options.platform, options.nativeSymbols);
    this.#floodGate = new FloodGate(options.userLimit ?? DEFAULT_USER_LIMIT, options.chatLimit ?? DEFAULT_CHAT_LIMIT);
  }

  onOutcome(listener: (name: string, outcome: Outcome, ms: number) => void): void {
    this.#listeners.push(listener);
  }

  find(name: string): CommandDefinition | undefined {
    return this.#byName.get(name.toLowerCase());
  }

  isOperator(chat: ChatRef, actor: Actor): boolean {
    // The terminal chat is the person running the bot.
    if (chat.platform === 'console') return true;
    return this.#options.settings.operators.includes(`${chat.platform}:${actor.id}`);
  }

  mayRun(permission: Permission | undefined, chat: ChatRef, actor: Actor): boolean {
    if (!permission || permission === 'everyone') return true;
    if (this.isOperator(chat, actor)) return true;
    if (permission === 'manage') return actor.canManage || chat.kind === 'private';
    // Roles belong to a community: a private chat gives no right over any.
    if (permission === 'manageRoles') return chat.kind === 'group' && (actor.canManageRoles ?? actor.canManage);
    return false;
  }

  /**
   * Counts one message of a person against their rate limit and their chat's, whatever the message
   * turns out to be: a command, an unknown or denied one, a line that does not parse, plain text, a
   * button press. Adapters call it first, for every message they would answer, so a flood costs
   * at most the buckets' capacity in answers plus one "slow down" per window. Needs only the ids:
   * nothing that costs a platform call may come before it. The terminal chat is never limited.
   *
   * @param command the command's name when the adapter knows it already (metrics only).
   * @example
   * const admission = engine.admit(chat, { id: userId });
   * if (admission.status === 'notify') await send(admission.reply);
   * if (admission.status !== 'ok') return;
   */
  admit(chat: ChatRef, actor: Pick<Actor, 'id'>, command = ''): Admission {
    if (chat.platform === 'console') return { status: 'ok' };
    const now = this.#now().getTime();
    const verdict = this.#floodGate.admit(`${chat.platform}:${actor.id}`, `${chat.platform}:${chat.id}`, now);
    if (verdict.status === 'ok') return verdict;
    this.#options.logger.debug(
      { platform: chat.platform, chat: chat.id, user: actor.id, answered: verdict.status === 'notify' },
      'rate limited',
    );
    for (const listener of this.#listeners) listener(command, 'rate_limited', 0);
    if (verdict.status === 'silent') return { status: 'silent' };
    const seconds = Math.max(1, Math.ceil(verdict.waitMs / 1000));
    return { status: 'notify', reply: errorReply(new UserError('rate_limited', { seconds }), '') };
  }

  /**
   * Completions of an option being typed (Discord's autocomplete), from the chat's aliases and
   * watched collections and the platform's search; see {@link completions}.
   */
  complete(request: CompletionRequest): Promise<Completion[]> {
    return completions(request, {
      commands: this.commands,
      networks: this.#options.platform.networks.all.map((n) => n.name),
      defaultNetwork: this.#options.settings.defaultNetwork,
      store: this.#options.store,
      resolver: this.resolver,
    });
  }

  /**
   * A codec that fits button actions into a chat platform's payload of `maxBytes`, keeping long
   * actions in the store, so that buttons keep working after a restart.
   */
  buttonCodec(maxBytes: number): ButtonCodec {
    return new ButtonCodec(this.#options.store, maxBytes);
  }

  /** Runs a typed line (`/floor moon cats`); undefined when the line is not a command. */
  async runLine(line: string, chat: ChatRef, actor: Actor): Promise<Reply | undefined> {
    const parsed = parseCommandLine(line);
    if (!parsed) return undefined;
    return this.run({ chat, actor, command: parsed.command, args: parsed.args, refused: parsed.refused });
  }

  async run(invocation: Invocation): Promise<Reply> {
    const started = performance.now();
    const logger = this.#options.logger;
    let name = invocation.command;
    let selected: { label: string; args: Tokens } | undefined;
    let outcome: Outcome = 'ok';
    try {
      const { spec, label, args } = this.#selectOrRefuse(invocation);
      name = label;
      selected = { label, args };
      if (invocation.refused) throw new ArgumentError(invocation.refused, usageOf(spec, label));
      const reply = await this.#execute(spec, label, args, invocation);
      return invocation.chat.viaUserInstall ? this.#forPerson(invocation.command, reply) : reply;
    } catch (error) {
      if (error instanceof AmbiguousCollectionError && selected) {
        outcome = 'user_error';
        return choiceReply(error, choiceLines(selected.label, error, error.typed ?? selected.args));
      }
      const reference = randomBytes(4).toString('hex');
      outcome = outcomeOf(error);
      if (isExpectedFailure(error)) {
        // The user's mistake or the platform's answer: a line without a stack is enough.
        logger.info(
          { command: name, outcome, reason: error instanceof Error ? error.message : String(error) },
          'command failed',
        );
      } else {
        logger.error({ command: name, reference, err: error }, 'command crashed');
      }
      return errorReply(error, reference, {
        platform: invocation.chat.platform,
        command: `/${name}`,
        discordManage: this.#options.settings.discordManagePermission,
      });
    } finally {
      const ms = performance.now() - started;
      logger.debug({ command: name, outcome, ms: Math.round(ms * 10) / 10 }, 'command');
      for (const listener of this.#listeners) listener(name, outcome, ms);
    }
  }

  /** {@link #select}, where words that did not split are the answer rather than a subcommand not found among them. */
  #selectOrRefuse(invocation: Invocation): { spec: CommandSpec; label: string; args: Tokens } {
    try {
      return this.#select(invocation);
    } catch (error) {
      if (invocation.refused && error instanceof UserError && error.code === 'unknown_subcommand') {
        throw new ArgumentError(invocation.refused, `/${invocation.command}`);
      }
      throw error;
    }
  }

  /**
   * An answer given through the person's own install, where the bot is not: a command about the
   * chat's setup is about their personal one (their DM), said so and shown to them only.
   */
  #forPerson(commandName: string, reply: Reply): Reply {
    const command = this.find(commandName);
    if (!command?.personal) return reply;
    const note =
      'The bot is not in this channel: this is your personal setup, and your alerts and digests go to your DM with the bot.';
    return { ...reply, ephemeral: true, footer: reply.footer ? `${reply.footer} · ${note}` : note };
  }

  #select(invocation: Invocation): { spec: CommandSpec; label: string; args: Tokens } {
    const command = this.find(invocation.command);
    if (!command) {
      const close = closestWords(
        invocation.command,
        this.commands.map((c) => c.name),
      );
      throw new UserError('unknown_command', {
        command: invocation.command,
        suggestions: close.join(' ') || undefined,
      });
    }
    // Operator commands act for the bot: never through a person's own install, where it acts for them.
    if (invocation.chat.viaUserInstall && command.permission === 'operator') {
      throw new UserError('needs_bot_here', { command: `/${command.name}` });
    }
    if (!this.mayRun(command.permission, invocation.chat, invocation.actor)) {
      throw permissionError(command.permission ?? 'everyone', { command: `/${command.name}` });
    }
    if (!isGroup(command)) return { spec: command, label: command.name, args: invocation.args };
    let subName = invocation.subcommand;
    let args = invocation.args;
    if (!subName) {
      const [first, ...rest] = args.positional;
      subName = first;
      args = { positional: rest, named: args.named };
      const glued = withoutFirstWord(invocation.args.glued);
      if (glued) args.glued = glued;
    }
    const sub = command.subcommands.find((s) => s.name === subName?.toLowerCase());
    if (!sub) {
      const names = command.subcommands.map((s) => s.name);
      throw new UserError('unknown_subcommand', {
        command: command.name,
        suggestion: subName ? closestWords(subName, names, 1)[0] : undefined,
        allowed: command.subcommands.map((s) => s.name).join(', '),
        // The first subcommand's own example runs as shown; `/watch add` alone would not.
        example: command.subcommands.find((s) => s.example)?.example,
      });
    }
    if (!this.mayRun(sub.permission, invocation.chat, invocation.actor)) {
      throw permissionError(sub.permission ?? 'everyone', { command: `/${command.name} ${sub.name}` });
    }
    return { spec: sub, label: `${command.name} ${sub.name}`, args };
  }

  async #execute(spec: CommandSpec, label: string, tokens: Tokens, invocation: Invocation): Promise<Reply> {
    const { store, platform, settings } = this.#options;
    const chatKey = `${invocation.chat.platform}:${invocation.chat.id}`;
    const read = await readArguments(spec, tokens, this.#sources(store.chat(chatKey)));
    if (!read.ok) throw failureOf(read.error, usageOf(spec, label));
    const { values, raw, extras, resolved, network } = read.value;
    const context: CommandContext = {
      platform,
      store,
      logger: this.#options.logger,
      settings,
      chat: invocation.chat,
      actor: invocation.actor,
      chatKey,
      network,
      now: this.#now,
      may: (permission) => this.mayRun(permission, invocation.chat, invocation.actor),
      typed: {
        extras,
        namedKeys: new Set(tokens.named.keys()),
        rerun: (changes) => commandLine(label, raw, resolved, extras, changes),
      },
      currencies: this.currencies,
      collections: this.resolver,
      links: this.#options.links,
      market: this.#options.market,
      digests: this.#options.digests,
      verification: this.#options.verification,
      roles: this.#options.roles,
      bot: { commands: this.commands, startedAt: this.startedAt, alerts: this.#options.alerts },
    };
    return spec.run(context, values as never);
  }

  /** What reading a command's words needs in this chat: its settings, the networks, the collection lookups. */
  #sources(chat: ChatSettings): ArgumentSources {
    return {
      networks: this.#options.platform.networks.all.map((n) => n.name),
      defaultNetwork: this.#options.settings.defaultNetwork,
      chat: { network: chat.network, collection: chat.collection },
      lookup: (ref, network, option) =>
        this.resolver.resolve(ref, network, chat, option).then(
          (value) => ({ ok: true, value }),
          (error: unknown) => {
            if (error instanceof AmbiguousCollectionError) {
              return { ok: false, error: { code: 'ambiguous_collection', error } };
            }
            if (error instanceof UnknownCollectionError) {
              return { ok: false, error: { code: 'unknown_collection', error, similar: error.similar } };
            }
            throw error;
          },
        ),
      probe: (ref, network) => this.resolver.probe(ref, network, chat),
    };
  }
}

/** A reading's failure as the error that answers it (errorReply, or the choice of collections). */
function failureOf(failure: ReadingFailure, usage: string): Error {
  switch (failure.code) {
    case 'invalid_argument':
      return new ArgumentError(failure.error, usage);
    case 'no_collection':
      return new UserError('no_collection');
    case 'unknown_collection':
      return failure.error;
    case 'ambiguous_collection':
      failure.error.typed = failure.typed;
      return failure.error;
  }
}

function outcomeOf(error: unknown): Outcome {
  if (error instanceof UserError) return error.code === 'permission' ? 'denied' : 'user_error';
  if (error instanceof ArgumentError) return 'user_error';
  if (isExpectedFailure(error)) return 'platform_error';
  return 'failed';
}

/** `/listings <collection> <token> [page]` */
export function usageOf(spec: CommandSpec, label = spec.name): string {
  const parts = spec.options.map((o) => (o.required ? `<${o.name}>` : `[${o.name}]`));
  if (spec.acceptsTraits) parts.push('[trait=value ...]');
  return [`/${label}`, ...parts].join(' ');
}
