/**
 * Reading the words of a command: which words go to which option, and the other readings of a line
 * that the first one refuses. Pure functions of the words, the command's options and plain data;
 * a failure is an {@link ArgError} (an identifier and what it concerns), which user-text.ts puts
 * into words. arguments.ts tries these readings against the platform; the engine only dispatches.
 */
import type { CommandSpec, ResolvedCollection } from './command.ts';
import {
  type ArgError,
  type CollectionRef,
  looksLike,
  type OptionSpec,
  type ParseContext,
  type Parsed,
  parseNetwork,
  parseOption,
  type Tokens,
} from './options.ts';

/** Plain words after `key=value` read as the rest of its value, at most (each reading may cost a search). */
export const MAX_GLUED_WORDS = 5;

/** A name that matches nothing is tried without up to this many of its last words. */
export const MAX_DROPPED_NAME_WORDS = 3;

const ok = <T>(value: T): Parsed<T> => ({ ok: true, value });
const fail = (error: ArgError): { ok: false; error: ArgError } => ({ ok: false, error });

/** What reading words needs besides them. */
export interface WordContext extends ParseContext {
  /**
   * The network of the chat's default collection, when it has one: the name of a collection may
   * then be left out (unless `network=` names another network).
   */
  defaultCollectionNetwork?: string | undefined;
}

/** A reading where the collection's name is exactly `count` positional words from `at`. */
export interface FixedName {
  at: number;
  count: number;
}

/** The positional words a collection's name was given, for a second reading of them. */
export interface NameWords {
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
export interface Assignment {
  /** Each option's words, by option name. */
  raw: Map<string, string>;
  /** `key=value` words that are no option's (trait filters), for commands that accept them. */
  extras: Map<string, string>;
  /** The network a `network=` word names, when the command has no option of that name. */
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
 * it is returned too (`longerName`), to be used if the platform or an alias knows that name, which
 * costs one search, only for input that would otherwise be refused. A word that parses as the
 * option stays the option's without a search (`/floor area 5` is Area with count 5). Required
 * options after the name get their word in the first reading (a malformed one is reported as such),
 * and the longer name may take it (`/offers moon cats`: the token is missing).
 *
 * In a chat with a default collection (on `ctx.defaultCollectionNetwork`, unless `network=` names
 * another), the name may get no word at all: `/floor 3` is three listings of the default collection.
 *
 * Free text takes one word when other options follow it (`/alias set mc moon cats`: the alias is
 * `mc`), and the rest of the line when it is the last (`/help watch add`); free-text options after
 * a collection take words only by `key=value`, since every word there could belong to the text.
 *
 * With `fixedName`, the name is exactly those words, and the words after it go to the options
 * after it, one each (a reading that explains why a name matched nothing).
 *
 * @example
 * assignWords(floor, tokenize('moon cats 3').value, { networks: ['devnet'] })
 * // ok: raw collection -> 'moon cats', count -> '3'
 */
export function assignWords(
  spec: CommandSpec,
  tokens: Tokens,
  ctx: WordContext,
  fixedName?: FixedName,
): Parsed<Assignment> {
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
    if (!parsed.ok) return parsed;
    network = parsed.value;
    named.delete('network');
  }
  const defaultNetwork = ctx.defaultCollectionNetwork;
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
    } else if (option.type === 'collection') {
      // Options after the name take one word each; free text there only by key=value.
      const later = open.slice(i + 1).filter((o) => o.required || o.type !== 'text');
      const words = positional.splice(0);
      if (fixedName && fixedName.at === taken) {
        positional.push(...fixName(option, later, words, fixedName.count, raw));
        break;
      }
      ({ longerName, nameWords } = splitName(option, later, words, raw, { at: taken, mayOmitName }, ctx));
    } else if (option.type === 'text' && i < open.length - 1) {
      raw.set(option.name, positional.shift() as string);
    } else if (option.type === 'text') {
      raw.set(option.name, positional.splice(0).join(' '));
    } else {
      raw.set(option.name, positional.shift() as string);
    }
    taken += before - positional.length;
  }
  if (positional.length > 0) return fail({ code: 'too_many_arguments', input: positional.join(' ') });
  const extras = new Map<string, string>();
  for (const [key, value] of named) {
    if (!spec.acceptsTraits) return fail({ code: 'unknown_option', input: `${key}=${value}` });
    extras.set(key, value);
  }
  return ok({ raw, extras, network, longerName, nameWords });
}

/**
 * The reading where a collection's name is exactly the first `count` words: the words after it go
 * to the `later` options, one each, in order, into `raw`; returns the words left over.
 */
function fixName(
  option: OptionSpec,
  later: readonly OptionSpec[],
  words: readonly string[],
  count: number,
  raw: Map<string, string>,
): string[] {
  raw.set(option.name, words.slice(0, count).join(' '));
  const rest = words.slice(count);
  rest.slice(0, later.length).forEach((word, j) => {
    raw.set((later[j] as OptionSpec).name, word);
  });
  return rest.slice(later.length);
}

/**
 * Splits the words from a collection's name on between the name and the `later` options (one word
 * each, as many trailing words as read as theirs; see {@link assignWords}), into `raw`; returns the
 * second reading, where the name keeps the words that only looked like options, and the name's
 * words. With `mayOmitName`, words that all read as the later options leave the name out.
 */
function splitName(
  option: OptionSpec,
  later: readonly OptionSpec[],
  words: readonly string[],
  raw: Map<string, string>,
  place: { at: number; mayOmitName: boolean },
  ctx: ParseContext,
): Pick<Assignment, 'longerName' | 'nameWords'> {
  const required = later.filter((o) => o.required).length;
  const parses = (o: OptionSpec, word: string) => parseOption(o, word, ctx).ok;
  const accepts = (o: OptionSpec, w: string) => parses(o, w) || looksLike(o, w, ctx);
  const give = (target: Map<string, string>, keep: number) => {
    if (keep < words.length) target.set(option.name, words.slice(0, words.length - keep).join(' '));
    words.slice(words.length - keep).forEach((word, j) => {
      target.set((later[j] as OptionSpec).name, word);
    });
  };
  // Every word to the options after the name, when each is accepted there.
  const all = later.length >= words.length && trailingCount(later, words, 0, words.length, accepts) === words.length;
  const withoutName = all ? new Map(raw) : undefined;
  if (withoutName) give(withoutName, words.length);
  const keep =
    place.mayOmitName && all ? words.length : trailingCount(later, words, required, words.length - 1, accepts);
  const strict = trailingCount(later, words, 0, keep, parses);
  let longerName: Map<string, string> | undefined;
  if (strict !== keep) {
    longerName = new Map(raw);
    give(longerName, strict);
  }
  give(raw, keep);
  const nameWords =
    keep < words.length
      ? { option: option.name, next: later[0], at: place.at, words: words.slice(0, words.length - keep), withoutName }
      : undefined;
  return { longerName, nameWords };
}

/** The options' values of one assignment of words, and the network a collection was written on. */
export interface OptionValuesRead {
  /** Each option's value by name; a collection is still the reference typed (resolved later). */
  values: Record<string, unknown>;
  /** The network of the first collection written with one (`devnet-l2:harbor gulls`). */
  collectionNetwork: string | undefined;
}

/** Parses each option's words; the first option that refuses its words is the error. */
export function parseWords(
  spec: CommandSpec,
  words: ReadonlyMap<string, string>,
  ctx: ParseContext,
): Parsed<OptionValuesRead> {
  const values: Record<string, unknown> = {};
  let collectionNetwork: string | undefined;
  for (const option of spec.options) {
    const text = words.get(option.name);
    if (text === undefined) continue;
    const parsed = parseOption(option, text, ctx);
    if (!parsed.ok) return parsed;
    values[option.name] = parsed.value;
    if (option.type === 'collection' && typeof parsed.value === 'object' && 'kind' in parsed.value) {
      if (parsed.value.network) collectionNetwork ??= parsed.value.network;
    }
  }
  return ok({ values, collectionNetwork });
}

/** One reading of the words that parses: the words of each option and their values. */
export interface OptionReading extends OptionValuesRead {
  raw: Map<string, string>;
  /**
   * Set when a word went to the collection's name because its option refused it: that refusal,
   * which is the answer if no collection has the longer name.
   */
  refused: ArgError | undefined;
}

/**
 * Parses the words as assigned, or, when an option refuses a word that a longer collection name
 * could hold ({@link Assignment.longerName}), as the longer name takes them. The first reading's
 * error when neither parses.
 */
export function readOptions(spec: CommandSpec, assignment: Assignment, ctx: ParseContext): Parsed<OptionReading> {
  const first = parseWords(spec, assignment.raw, ctx);
  if (first.ok) return ok({ ...first.value, raw: assignment.raw, refused: undefined });
  const longer = assignment.longerName && parseWords(spec, assignment.longerName, ctx);
  if (!assignment.longerName || !longer?.ok) return first;
  return ok({ ...longer.value, raw: assignment.longerName, refused: first.error });
}

/**
 * The network of an invocation: the one given (a `network` option, or `network=`), else the one a
 * collection was written on, else the chat's (when the bot knows it), else the bot's.
 */
export function invocationNetwork(
  reading: OptionValuesRead,
  given: string | undefined,
  chatNetwork: string | undefined,
  ctx: ParseContext & { defaultNetwork: string },
): string {
  return (
    (reading.values.network as string | undefined) ??
    given ??
    reading.collectionNetwork ??
    (chatNetwork && ctx.networks.includes(chatNetwork) ? chatNetwork : undefined) ??
    ctx.defaultNetwork
  );
}

/** The first required option without a value, as a `missing` error. */
export function missingOption(spec: CommandSpec, values: Readonly<Record<string, unknown>>): ArgError | undefined {
  const option = spec.options.find((o) => o.required && values[o.name] === undefined);
  return option ? { code: 'missing', option: option.name } : undefined;
}

/**
 * The words read with a value typed without quotes after `key=` (`collection=moon cats`) taking the
 * plain words after it, for the options that may hold several words (a collection, free text): the
 * most words first (`collection=moon cats rescue 2` is Moon Cats Rescue before Moon Cats), at most
 * {@link MAX_GLUED_WORDS}.
 */
export function gluedReadings(spec: CommandSpec, tokens: Tokens): Tokens[] {
  const readings: Tokens[] = [];
  for (const [key, glued] of tokens.glued ?? []) {
    const option = spec.options.find((o) => o.name === key);
    if (!option || (option.type !== 'collection' && option.type !== 'text')) continue;
    for (let count = Math.min(glued.words.length, MAX_GLUED_WORDS); count > 0; count--) {
      const positional = [...tokens.positional];
      positional.splice(glued.at, count);
      const named = new Map(tokens.named);
      named.set(key, [tokens.named.get(key), ...glued.words.slice(0, count)].join(' '));
      readings.push({ positional, named });
    }
  }
  return readings;
}

/**
 * Shorter names to try when a name matched nothing, longest first: the name without up to
 * {@link MAX_DROPPED_NAME_WORDS} of its last words, only where the first word left out reads as the
 * option after the name (`rescuee` in `moon cats rescuee 2` is a misspelt word of a name, not an
 * argument). Each with the reading that gives the name exactly those words.
 */
export function shorterNames(
  spec: CommandSpec,
  nameWords: NameWords,
  ctx: ParseContext,
): Array<{ ref: CollectionRef; reading: FixedName }> {
  const next = nameWords.next;
  const option = spec.options.find((o) => o.name === nameWords.option);
  if (!next || !option) return [];
  const lowest = Math.max(1, nameWords.words.length - MAX_DROPPED_NAME_WORDS);
  const shorter: Array<{ ref: CollectionRef; reading: FixedName }> = [];
  for (let keep = nameWords.words.length - 1; keep >= lowest; keep--) {
    const first = nameWords.words[keep] as string;
    if (!(parseOption(next, first, ctx).ok || looksLike(next, first, ctx))) continue;
    const ref = parseOption(option, nameWords.words.slice(0, keep).join(' '), ctx);
    if (!ref.ok) continue;
    shorter.push({ ref: ref.value as CollectionRef, reading: { at: nameWords.at, count: keep } });
  }
  return shorter;
}

/**
 * Whether the words given to a name read, every one of them, as the options after it (`/token
 * 4924`: a token id, no name): in a chat without a default collection, the question is then which
 * collection, not a name that matched nothing.
 */
export function readsWithoutName(spec: CommandSpec, nameWords: NameWords, ctx: ParseContext): boolean {
  const words = nameWords.withoutName;
  if (!words) return false;
  return spec.options.every((o) => {
    const text = words.get(o.name);
    return text === undefined || parseOption(o, text, ctx).ok;
  });
}

/** Glued words (see {@link Tokens.glued}) once the first positional word (a subcommand) is taken away. */
export function withoutFirstWord(glued: Tokens['glued']): Tokens['glued'] {
  if (!glued) return undefined;
  const out = new Map<string, { at: number; words: string[] }>();
  for (const [key, entry] of glued) {
    const words = entry.at === 0 ? entry.words.slice(1) : entry.words;
    if (words.length > 0) out.set(key, { at: Math.max(0, entry.at - 1), words });
  }
  return out.size > 0 ? out : undefined;
}

/** A word as it can be typed back: quoted when it holds a space or a quote (quotes inside dropped). */
function typedBack(word: string, quoteOn: RegExp): string {
  return quoteOn.test(word) ? `"${word.replace(/"/g, '')}"` : word;
}

/**
 * The command line that runs a command again with some arguments changed (a button's action): its
 * options' words, each collection as `network:address`, `changes` applied (undefined removes one),
 * and the trait filters.
 *
 * @example
 * commandLine('listings', raw, resolved, extras, { page: '2' }) // '/listings collection=devnet:0x… page=2'
 */
export function commandLine(
  label: string,
  raw: ReadonlyMap<string, string>,
  resolved: ReadonlyMap<string, ResolvedCollection>,
  extras: ReadonlyMap<string, string>,
  changes: Readonly<Record<string, string | undefined>> = {},
): string {
  const words = new Map<string, string>(raw);
  for (const [key, collection] of resolved) words.set(key, `${collection.network}:${collection.address}`);
  for (const [key, value] of Object.entries(changes)) {
    if (value === undefined) words.delete(key);
    else words.set(key, value);
  }
  for (const [key, value] of extras) if (!words.has(key)) words.set(key, value);
  return [`/${label}`, ...[...words].map(([key, value]) => `${key}=${typedBack(value, /[\s"']/)}`)].join(' ');
}

/** The words of a command as read when a collection's name was looked up, and where the name is among them. */
export interface TypedWords {
  positional: readonly string[];
  named: ReadonlyMap<string, string>;
  nameAt?: number;
  nameLength?: number;
}

/**
 * The command lines of a choice between collections: the command again, with `option` set to each
 * candidate (`network:address`) in place of the words of the name. A choice of collections on other
 * networks leaves out a `network=` word typed for the search (each candidate names its own).
 */
export function choiceLines(
  label: string,
  choice: {
    option: string;
    query: string;
    searched: string | undefined;
    candidates: readonly ResolvedCollection[];
  },
  typed: TypedWords,
): string[] {
  const named = new Map(typed.named);
  const positional = [...typed.positional];
  if (typed.nameAt !== undefined) positional.splice(typed.nameAt, typed.nameLength ?? 0);
  else if (named.has(choice.option)) named.delete(choice.option);
  else {
    const words = choice.query.split(/\s+/);
    const at = positional.findIndex((_, i) => positional.slice(i, i + words.length).join(' ') === choice.query);
    if (at >= 0) positional.splice(at, words.length);
  }
  if (choice.searched !== undefined) named.delete('network');
  const quote = (word: string) => typedBack(word, /\s/);
  const rest = [...positional.map(quote), ...[...named].map(([key, value]) => `${key}=${quote(value)}`)];
  return choice.candidates.map((c) => [`/${label}`, `${choice.option}=${c.network}:${c.address}`, ...rest].join(' '));
}
