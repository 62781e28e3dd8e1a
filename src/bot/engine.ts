import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { RulesRepository } from '../core/ports.ts';
import type { Reply } from '../core/reply.ts';
import { CurrencyDirectory } from '../market/currencies.ts';
import type { Links } from '../market/links.ts';
import type { PlatformClient } from '../platform/client.ts';
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
  type ResolvedCollection,
} from './command.ts';
import { AmbiguousCollectionError, ArgumentError, permissionError, UserError } from './errors.ts';
import {
  type ArgError,
  type CollectionRef,
  looksLike,
  type OptionSpec,
  parseNetwork,
  parseOption,
  type Tokens,
  tokenize,
} from './options.ts';
import { DEFAULT_CHAT_LIMIT, DEFAULT_USER_LIMIT, FloodGate, type RateLimitPolicy } from './rate-limit.ts';
import { describeChoice, errorReply, isExpectedFailure } from './user-text.ts';

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
 * ({@link CommandEngine.admit}), finds the command, checks permission, parses and resolves
 * arguments, runs it, and turns any failure into a clear answer. `run` never throws: every
 * invocation yields a Reply.
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
      return await this.#execute(spec, label, args, invocation);
    } catch (error) {
      if (error instanceof AmbiguousCollectionError && selected) {
        outcome = 'user_error';
        return chooseCollection(error, selected.label, selected.args);
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

  #select(invocation: Invocation): { spec: CommandSpec; label: string; args: Tokens } {
    const command = this.find(invocation.command);
    if (!command) throw new UserError('unknown_command', { command: invocation.command });
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
      throw new UserError('unknown_subcommand', {
        command: command.name,
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

  /** Assigns, parses and resolves the arguments of one reading of the words. */
  async #prepare(
    spec: CommandSpec,
    label: string,
    tokens: Tokens,
    invocation: Invocation,
    fixedName?: FixedName,
  ): Promise<Prepared> {
    const { store, platform, settings } = this.#options;
    const chatKey = `${invocation.chat.platform}:${invocation.chat.id}`;
    const chatSettings = store.chat(chatKey);
    const networks = platform.networks.all.map((n) => n.name);
    const ctx = { networks };
    const usage = usageOf(spec, label);
    const assignment = assignWords(spec, tokens, ctx, usage, chatSettings.collection?.network, fixedName);
    const { extras, network: networkOverride } = assignment;

    const parseAll = (words: ReadonlyMap<string, string>) => {
      const values: Record<string, unknown> = {};
      let collectionNetwork: string | undefined;
      for (const option of spec.options) {
        const text = words.get(option.name);
        if (text === undefined) continue;
        const parsed = parseOption(option, text, ctx);
        if (!parsed.ok) return { error: new ArgumentError(parsed.error, usage) };
        values[option.name] = parsed.value;
        if (option.type === 'collection' && typeof parsed.value === 'object' && 'kind' in parsed.value) {
          if (parsed.value.network) collectionNetwork ??= parsed.value.network;
        }
      }
      return { values, collectionNetwork };
    };
    let raw = assignment.raw;
    let parsed = parseAll(raw);
    // Kept when a word went to the name because the option refused it: the answer if no collection has that name.
    let refusedWord: ArgumentError | undefined;
    if (parsed.error) {
      const longer = assignment.longerName && parseAll(assignment.longerName);
      if (!assignment.longerName || !longer || longer.error) throw parsed.error;
      refusedWord = parsed.error;
      raw = assignment.longerName;
      parsed = longer;
    }
    const { values, collectionNetwork } = parsed;
    const network =
      (values.network as string | undefined) ??
      networkOverride ??
      collectionNetwork ??
      (chatSettings.network && networks.includes(chatSettings.network) ? chatSettings.network : undefined) ??
      settings.defaultNetwork;

    const resolved = new Map<string, ResolvedCollection>();
    for (const option of spec.options) {
      if (option.type !== 'collection') continue;
      const ref = values[option.name] as CollectionRef | undefined;
      if (ref) {
        const collection = await this.resolver.resolve(ref, network, chatSettings, option.name).catch((error) => {
          if (error instanceof AmbiguousCollectionError) {
            const name = assignment.nameWords?.option === option.name ? assignment.nameWords : undefined;
            error.typed = {
              positional: tokens.positional,
              named: tokens.named,
              ...(name ? { nameAt: name.at, nameLength: name.words.length } : {}),
            };
          }
          throw refusedWord && error instanceof UserError && error.code === 'unknown_collection' ? refusedWord : error;
        });
        values[option.name] = collection;
        resolved.set(option.name, collection);
      } else if (chatSettings.collection && (!networkOverride || chatSettings.collection.network === network)) {
        const key = chatSettings.collection;
        const collection = { network: key.network, address: key.address, name: key.name ?? key.address };
        values[option.name] = collection;
        resolved.set(option.name, collection);
      } else if (option.required) {
        throw new UserError('no_collection');
      }
    }

    for (const option of spec.options) {
      if (option.required && values[option.name] === undefined) {
        throw new ArgumentError({ code: 'missing', option: option.name }, usage);
      }
    }
    return {
      values,
      raw,
      extras,
      resolved,
      network: resolved.values().next().value?.network ?? network,
      chatKey,
    };
  }

  /**
   * Reads the words another way after the first reading failed, to do what was meant or to say
   * what is really wrong: a value typed without quotes after `key=` (`collection=moon cats`) gets the
   * plain words after it; a name that matches nothing but whose first words name a collection, and
   * whose next word reads as the option after the name (`/holders moon cats 3 extra`), is answered
   * with the error of the words after it (here: one word too many); a name that matches nothing in a
   * chat without a default collection, whose words all read as the other options (`/token 4924`),
   * asks which collection. Otherwise the first error stands. Costs a few cached searches on the
   * command's network, only for lines that would be refused.
   */
  async #reread(
    error: unknown,
    spec: CommandSpec,
    label: string,
    tokens: Tokens,
    invocation: Invocation,
  ): Promise<Prepared> {
    const misread = (e: unknown) =>
      e instanceof ArgumentError || (e instanceof UserError && e.code === 'unknown_collection');
    // A choice of collections for the first word of a name typed without quotes is a misreading too.
    const glueable = misread(error) || (error instanceof AmbiguousCollectionError && tokens.glued?.has(error.option));
    if (!glueable) throw error;
    for (const [key, glued] of tokens.glued ?? []) {
      const option = spec.options.find((o) => o.name === key);
      if (!option || (option.type !== 'collection' && option.type !== 'text')) continue;
      // The most words first: `collection=moon cats rescue 2` is Moon Cats Rescue before Moon Cats.
      for (let count = Math.min(glued.words.length, MAX_GLUED_WORDS); count > 0; count--) {
        const positional = [...tokens.positional];
        positional.splice(glued.at, count);
        const named = new Map(tokens.named);
        named.set(key, [tokens.named.get(key), ...glued.words.slice(0, count)].join(' '));
        try {
          return await this.#prepare(spec, label, { positional, named }, invocation);
        } catch (other) {
          // What that reading found instead (a choice of collections, a platform failure) is the answer.
          if (!misread(other)) throw other;
        }
      }
    }
    if (!(error instanceof UserError) || error.code !== 'unknown_collection') throw error;
    const usage = usageOf(spec, label);
    const ctx = { networks: this.#options.platform.networks.all.map((n) => n.name) };
    const chatSettings = this.#options.store.chat(`${invocation.chat.platform}:${invocation.chat.id}`);
    const { nameWords } = assignWords(spec, tokens, ctx, usage, chatSettings.collection?.network);
    if (!nameWords) throw error;
    const next = nameWords.next;
    const network =
      error.params.network === undefined ? this.#options.settings.defaultNetwork : String(error.params.network);
    const option = spec.options.find((o) => o.name === nameWords.option) as OptionSpec;
    const lowest = Math.max(1, nameWords.words.length - MAX_DROPPED_NAME_WORDS);
    // Only when the first word left out reads as the option after the name: `rescuee` in
    // `moon cats rescuee 2` is a misspelt word of a name, not an argument.
    for (let keep = nameWords.words.length - 1; next && keep >= lowest; keep--) {
      const first = nameWords.words[keep] as string;
      if (!(parseOption(next, first, ctx).ok || looksLike(next, first, ctx))) continue;
      const ref = parseOption(option, nameWords.words.slice(0, keep).join(' '), ctx);
      if (!ref.ok) continue;
      const known = await this.resolver.probe(ref.value as CollectionRef, network, chatSettings).catch(() => false);
      if (!known) continue;
      try {
        await this.#prepare(spec, label, tokens, invocation, { at: nameWords.at, count: keep });
      } catch (explained) {
        // The words after the name explain the refusal: their own error, or one word too many.
        if (explained instanceof ArgumentError) throw explained;
      }
      break;
    }
    if (!chatSettings.collection && nameWords.withoutName) {
      const words = nameWords.withoutName;
      const parses = spec.options.every((o) => {
        const text = words.get(o.name);
        return text === undefined || parseOption(o, text, ctx).ok;
      });
      if (parses) throw new UserError('no_collection');
    }
    throw error;
  }

  async #execute(spec: CommandSpec, label: string, tokens: Tokens, invocation: Invocation): Promise<Reply> {
    let prepared: Prepared;
    try {
      prepared = await this.#prepare(spec, label, tokens, invocation);
    } catch (error) {
      prepared = await this.#reread(error, spec, label, tokens, invocation);
    }
    const { store, platform, settings } = this.#options;
    const { values, raw, extras, resolved, network: effectiveNetwork, chatKey } = prepared;
    const rerun = (changes: Record<string, string | undefined>): string => {
      const words = new Map<string, string>();
      for (const [key, value] of raw) words.set(key, value);
      for (const [key, collection] of resolved) words.set(key, `${collection.network}:${collection.address}`);
      for (const [key, value] of Object.entries(changes)) {
        if (value === undefined) words.delete(key);
        else words.set(key, value);
      }
      for (const [key, value] of extras) if (!words.has(key)) words.set(key, value);
      const parts = [`/${label}`];
      for (const [key, value] of words)
        parts.push(`${key}=${/[\s"']/.test(value) ? `"${value.replace(/"/g, '')}"` : value}`);
      return parts.join(' ');
    };

    const context: CommandContext = {
      platform,
      store,
      logger: this.#options.logger,
      settings,
      chat: invocation.chat,
      actor: invocation.actor,
      chatKey,
      network: effectiveNetwork,
      namedKeys: new Set(tokens.named.keys()),
      now: this.#now,
      startedAt: this.startedAt,
      extras,
      commandLine: rerun({}),
      rerun,
      commands: this.commands,
      alerts: this.#options.alerts,
      digests: this.#options.digests,
      may: (permission) => this.mayRun(permission, invocation.chat, invocation.actor),
      currencies: this.currencies,
      collections: this.resolver,
      links: this.#options.links,
      market: this.#options.market,
    };
    return spec.run(context, values as never);
  }
}

/**
 * The candidates of an ambiguous name as buttons, each re-running the command with one of them.
 * A candidate on another network carries its network in its address, so a `network=` word typed
 * for the search is dropped from the buttons.
 */
function chooseCollection(error: AmbiguousCollectionError, label: string, args: Tokens): Reply {
  const typed = error.typed ?? args;
  const named = new Map(typed.named);
  const positional = [...typed.positional];
  // The chosen collection replaces the words of the name.
  if (error.typed?.nameAt !== undefined) positional.splice(error.typed.nameAt, error.typed.nameLength ?? 0);
  else if (named.has(error.option)) named.delete(error.option);
  else {
    const words = error.query.split(/\s+/);
    const at = positional.findIndex((_, i) => positional.slice(i, i + words.length).join(' ') === error.query);
    if (at >= 0) positional.splice(at, words.length);
  }
  if (error.searched !== undefined) named.delete('network');
  const quote = (w: string) => (/\s/.test(w) ? `"${w.replace(/"/g, '')}"` : w);
  const rest = [...positional.map(quote), ...[...named].map(([k, v]) => `${k}=${quote(v)}`)];
  return {
    tone: 'warning',
    ephemeral: true,
    title: error.searched === undefined ? 'Which collection?' : 'On another network',
    lines: [describeChoice(error)],
    buttons: error.candidates.map((c) => [
      {
        label: `${c.name} (${c.network} ${c.address.slice(0, 6)}…${c.address.slice(-4)})`,
        action: [`/${label}`, `${error.option}=${c.network}:${c.address}`, ...rest].join(' '),
      },
    ]),
  };
}

/** Glued words (see {@link Tokens.glued}) once the first positional word (a subcommand) is taken away. */
function withoutFirstWord(glued: Tokens['glued']): Tokens['glued'] {
  if (!glued) return undefined;
  const out = new Map<string, { at: number; words: string[] }>();
  for (const [key, entry] of glued) {
    const words = entry.at === 0 ? entry.words.slice(1) : entry.words;
    if (words.length > 0) out.set(key, { at: Math.max(0, entry.at - 1), words });
  }
  return out.size > 0 ? out : undefined;
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

/** The arguments of a command, parsed and resolved, and what its context is built from. */
interface Prepared {
  values: Record<string, unknown>;
  raw: Map<string, string>;
  extras: Map<string, string>;
  resolved: Map<string, ResolvedCollection>;
  network: string;
  chatKey: string;
}

/** Plain words after `key=value` read as the rest of its value, at most (each reading may cost a search). */
const MAX_GLUED_WORDS = 5;

/** A name that matches nothing is tried without up to this many of its last words. */
const MAX_DROPPED_NAME_WORDS = 3;

/** A reading where the collection's name is exactly `count` positional words from `at`. */
interface FixedName {
  at: number;
  count: number;
}

/** The positional words a collection's name was given, for a second reading of them. */
interface NameWords {
  option: string;
  /** The option that takes the first word after the name, if any. */
  next: OptionSpec | undefined;
  /** Where they start in the positional words. */
  at: number;
  words: string[];
  /** The words read with no name (all to the options after it), when every one of them is accepted so. */
  withoutName: Map<string, string> | undefined;
}

/** Words given to options, and a second reading of them when the first may be wrong. */
interface Assignment {
  raw: Map<string, string>;
  extras: Map<string, string>;
  network: string | undefined;
  /**
   * The words read with the collection's name taking the trailing words that only looked like the
   * following options (see {@link assignWords}); undefined when both readings are the same.
   */
  longerName: Map<string, string> | undefined;
  nameWords: NameWords | undefined;
}

/**
 * How many of the last words of `words` go to the options of `later`, one each in order, the rest
 * being a collection's name: the most words, up to `most`, and down to the `required` options
 * (which always get theirs), such that each word is accepted by its option.
 */
function trailingCount(
  later: readonly OptionSpec[],
  words: readonly string[],
  required: number,
  most: number,
  accepts: (option: OptionSpec, word: string) => boolean,
): number {
  let keep = Math.min(later.length, most);
  while (keep > required) {
    const tail = words.slice(words.length - keep);
    if (tail.every((word, j) => accepts(later[j] as OptionSpec, word))) break;
    keep--;
  }
  return Math.max(0, keep);
}

/**
 * Gives each option its words: `name=value` first, then positional words in order.
 *
 * A collection name may span several words (`moon cats rescue 5`): the options after it get the
 * trailing words, one each, as many as read as theirs, and the name the words before. A trailing
 * word is the next option's when it parses as that option (`5` for a count), and also when it only
 * looks like its type ({@link looksLike}: `50` for a count of at most 10, `sael` for a kind), so
 * that the answer is the option's own error ("count must be between 1 and 10") and not "no
 * collection matches moon cats 50". Collection names that end in a number or a word (`Area 51`,
 * `Moon Cats Rescue`) still work: when such a word fails to parse, the reading where the name keeps
 * it is returned too (`longerName`), and the engine uses it if the platform or an alias knows that
 * name, which costs one search, only for input that would otherwise be refused. A word that parses
 * as the option stays the option's without a search (`/floor area 5` is Area with count 5).
 * Required options after the name get their word in the first reading (a malformed one is reported
 * as such), and the longer name may take it (`/offers moon cats`: the token is missing).
 *
 * In a chat with a default collection (on `defaultNetwork`, unless `network=` names another), the
 * name may get no word at all: `/floor 3` is three listings of the default collection.
 *
 * Free text takes one word when other options follow it (`/alias set mc moon cats`: the alias is
 * `mc`), and the rest of the line when it is the last (`/help watch add`); free-text options after
 * a collection take words only by `key=value`, since every word there could belong to the text.
 */
function assignWords(
  spec: CommandSpec,
  tokens: Tokens,
  ctx: { networks: readonly string[] },
  usage: string,
  defaultNetwork?: string,
  fixedName?: FixedName,
): Assignment {
  const named = new Map(tokens.named);
  const positional = [...tokens.positional];
  const raw = new Map<string, string>();
  for (const option of spec.options) {
    const value = named.get(option.name);
    if (value !== undefined) {
      raw.set(option.name, value);
      named.delete(option.name);
    }
  }
  let network: string | undefined;
  const networkWord = named.get('network');
  if (networkWord !== undefined) {
    const parsed = parseNetwork(networkWord, ctx);
    if (!parsed.ok) throw new ArgumentError(parsed.error, usage);
    network = parsed.value;
    named.delete('network');
  }
  const mayOmitName = defaultNetwork !== undefined && (network === undefined || network === defaultNetwork);
  let longerName: Map<string, string> | undefined;
  let nameWords: NameWords | undefined;
  let taken = 0;
  const open = spec.options.filter((o) => !raw.has(o.name) && !o.namedOnly);
  for (let i = 0; i < open.length && positional.length > 0; i++) {
    const option = open[i] as OptionSpec;
    const before = positional.length;
    if (option.rest) {
      raw.set(option.name, positional.splice(0).join(' '));
    } else if (option.type === 'collection' && /^(0x|[\w-]+:0x)|@/i.test(positional[0] ?? '')) {
      // An address (or network:address) is one word.
      raw.set(option.name, positional.shift() as string);
    } else if (option.type === 'collection' && fixedName && fixedName.at === taken) {
      // The name is these words; the ones after it go to the options after it, one each, in order.
      const later = open.slice(i + 1).filter((o) => o.required || o.type !== 'text');
      const words = positional.splice(0);
      raw.set(option.name, words.slice(0, fixedName.count).join(' '));
      const rest = words.slice(fixedName.count);
      rest.slice(0, later.length).forEach((word, j) => {
        raw.set((later[j] as OptionSpec).name, word);
      });
      positional.push(...rest.slice(later.length));
      break;
    } else if (option.type === 'collection') {
      const later = open.slice(i + 1).filter((o) => o.required || o.type !== 'text');
      const required = later.filter((o) => o.required).length;
      const parses = (o: OptionSpec, word: string) => parseOption(o, word, ctx).ok;
      const accepts = (o: OptionSpec, w: string) => parses(o, w) || looksLike(o, w, ctx);
      const words = positional.splice(0);
      const give = (target: Map<string, string>, keep: number) => {
        if (keep < words.length) target.set(option.name, words.slice(0, words.length - keep).join(' '));
        words.slice(words.length - keep).forEach((word, j) => {
          target.set((later[j] as OptionSpec).name, word);
        });
      };
      // Every word to the options after the name, when each is accepted there.
      const all =
        later.length >= words.length && trailingCount(later, words, 0, words.length, accepts) === words.length;
      const withoutName = all ? new Map(raw) : undefined;
      if (withoutName) give(withoutName, words.length);
      const keep = mayOmitName && all ? words.length : trailingCount(later, words, required, words.length - 1, accepts);
      const strict = trailingCount(later, words, 0, keep, parses);
      if (strict !== keep) {
        longerName = new Map(raw);
        give(longerName, strict);
      }
      give(raw, keep);
      if (keep < words.length) {
        nameWords = {
          option: option.name,
          next: later[0],
          at: taken,
          words: words.slice(0, words.length - keep),
          withoutName,
        };
      }
    } else if (option.type === 'text' && i < open.length - 1) {
      raw.set(option.name, positional.shift() as string);
    } else if (option.type === 'text') {
      raw.set(option.name, positional.splice(0).join(' '));
    } else {
      raw.set(option.name, positional.shift() as string);
    }
    taken += before - positional.length;
  }
  if (positional.length > 0) {
    throw new ArgumentError({ code: 'too_many_arguments', input: positional.join(' ') }, usage);
  }
  const extras = new Map<string, string>();
  for (const [key, value] of named) {
    if (!spec.acceptsTraits) throw new ArgumentError({ code: 'unknown_option', input: `${key}=${value}` }, usage);
    extras.set(key, value);
  }
  return { raw, extras, network, longerName, nameWords };
}
