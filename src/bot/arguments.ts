/**
 * The arguments of a command from its words: the words read (words.ts), the options parsed, the
 * collections looked up, the network decided. When a first reading fails, other readings of the
 * same words are tried, to do what was meant or to say what is really wrong. Collections are looked
 * up through the functions given, so that everything else here depends on plain data only; a
 * failure comes back as an identifier that the engine turns into the answer.
 */
import type { CollectionKey } from '../core/settings.ts';
import type { CommandSpec, ResolvedCollection } from './command.ts';
import type { AmbiguousCollectionError, UserError } from './errors.ts';
import { type ArgError, type CollectionRef, looksLike, type Tokens } from './options.ts';
import {
  assignWords,
  type FixedName,
  gluedReadings,
  invocationNetwork,
  missingOption,
  readOptions,
  readsWithoutName,
  shorterNames,
  type TypedWords,
  type WordContext,
} from './words.ts';

export type Result<T, E> = { ok: true; value: T } | { ok: false; error: E };

const ok = <T>(value: T): { ok: true; value: T } => ({ ok: true, value });
const fail = <E>(error: E): { ok: false; error: E } => ({ ok: false, error });

/** Why a collection was not found: no match, or several to choose from (`error` says which). */
export type LookupFailure =
  | { code: 'unknown_collection'; error: UserError; similar?: AmbiguousCollectionError | undefined }
  | { code: 'ambiguous_collection'; error: AmbiguousCollectionError };

/** What reading a command's arguments needs besides its words. */
export interface ArgumentSources {
  /** Names of the networks the bot knows. */
  networks: readonly string[];
  /** The bot's network, where neither the command nor the chat names one. */
  defaultNetwork: string;
  /** What the chat has set: its network, and its default collection. */
  chat: { network?: string | undefined; collection?: CollectionKey | undefined };
  /** One collection for what the user typed, on `network`; rejects when the platform fails. */
  lookup: (ref: CollectionRef, network: string, option: string) => Promise<Result<ResolvedCollection, LookupFailure>>;
  /** Whether `ref` names one collection without a choice (an alias, an address, one match); may reject. */
  probe: (ref: CollectionRef, network: string) => Promise<boolean>;
}

/** Why the words do not make a command's arguments. */
export type ReadingFailure =
  | { code: 'invalid_argument'; error: ArgError }
  | { code: 'no_collection' }
  | { code: 'unknown_collection'; error: UserError; similar?: AmbiguousCollectionError | undefined }
  | { code: 'ambiguous_collection'; error: AmbiguousCollectionError; typed: TypedWords };

/** A command's arguments, parsed and resolved, and the words they were read from. */
export interface Arguments {
  /** Each option's value by name; collections resolved. */
  values: Record<string, unknown>;
  /** Each option's words as read. */
  raw: Map<string, string>;
  /** `key=value` words that are no option's (trait filters). */
  extras: Map<string, string>;
  /** The collections by option name. */
  resolved: Map<string, ResolvedCollection>;
  /** The network of the invocation: its first collection's, else the one given or the chat's or the bot's. */
  network: string;
}

const invalid = (error: ArgError): { ok: false; error: ReadingFailure } => fail({ code: 'invalid_argument', error });

/**
 * Reads, parses and resolves the arguments of one command; the first reading of the words, else
 * another (see {@link reread}).
 *
 * @example
 * const read = await readArguments(floor, tokenize('moon cats 3').value, sources);
 * if (read.ok) await floor.run(context, read.value.values);
 */
export async function readArguments(
  spec: CommandSpec,
  tokens: Tokens,
  sources: ArgumentSources,
): Promise<Result<Arguments, ReadingFailure>> {
  const read = withAmountUnits(spec, tokens, contextOf(sources));
  const first = await readOnce(spec, read, sources);
  return first.ok ? first : reread(first.error, spec, read, sources);
}

/** What a currency's symbol looks like after an amount: two letters, then letters, digits or points. */
const SYMBOL_WORD = /^[A-Za-z]{2}[A-Za-z0-9.]{0,14}$/;

/**
 * `min=0.5 DUSD` typed without quotes: the symbol after a bare number is the amount's unit, not a
 * word of a free-text option after it (which would read `DUSD` as, say, a token id). A word another
 * option claims (`min=5 sale`: a kind) stays where it is.
 */
function withAmountUnits(spec: CommandSpec, tokens: Tokens, ctx: WordContext): Tokens {
  if (!tokens.glued) return tokens;
  let result = tokens;
  for (const [key, glued] of tokens.glued) {
    const option = spec.options.find((o) => o.name === key);
    const value = result.named.get(key);
    const word = glued.words[0];
    if (option?.type !== 'amount' || value === undefined || word === undefined) continue;
    if (!/^[0-9._]+$/.test(value) || !SYMBOL_WORD.test(word)) continue;
    // Only an option that takes words by position can claim it (`every=`, `change=` are named only).
    if (spec.options.some((other) => other !== option && !other.namedOnly && looksLike(other, word, ctx))) continue;
    const at = result.positional.indexOf(word, glued.at);
    if (at < 0) continue;
    const positional = [...result.positional];
    positional.splice(at, 1);
    const named = new Map(result.named);
    named.set(key, `${value} ${word}`);
    // The other glued words after the one taken moved one place to the left.
    const rest = new Map<string, { at: number; words: string[] }>();
    for (const [other, entry] of result.glued ?? []) {
      if (other !== key) rest.set(other, entry.at > at ? { ...entry, at: entry.at - 1 } : entry);
    }
    result = { ...result, positional, named, glued: rest };
  }
  return result;
}

function contextOf(sources: ArgumentSources): WordContext {
  return { networks: sources.networks, defaultCollectionNetwork: sources.chat.collection?.network };
}

/** One reading of the words: assigned to options, parsed, collections looked up, required options checked. */
async function readOnce(
  spec: CommandSpec,
  tokens: Tokens,
  sources: ArgumentSources,
  fixedName?: FixedName,
): Promise<Result<Arguments, ReadingFailure>> {
  const ctx = contextOf(sources);
  const assigned = assignWords(spec, tokens, ctx, fixedName);
  if (!assigned.ok) return invalid(assigned.error);
  const assignment = assigned.value;
  const reading = readOptions(spec, assignment, ctx);
  if (!reading.ok) return invalid(reading.error);
  const { values, raw, refused } = reading.value;
  const chat = sources.chat;
  const network = invocationNetwork(reading.value, assignment.network, chat.network, {
    networks: sources.networks,
    defaultNetwork: sources.defaultNetwork,
  });
  const resolved = new Map<string, ResolvedCollection>();
  for (const option of spec.options) {
    if (option.type !== 'collection') continue;
    const ref = values[option.name] as CollectionRef | undefined;
    let collection: ResolvedCollection | undefined;
    if (ref) {
      const found = await sources.lookup(ref, network, option.name);
      if (!found.ok) {
        // A word the name kept because its option refused it: that refusal explains a name that matched nothing.
        if (refused && found.error.code === 'unknown_collection') return invalid(refused);
        if (found.error.code === 'unknown_collection') return fail(found.error);
        const name = assignment.nameWords?.option === option.name ? assignment.nameWords : undefined;
        const typed = {
          positional: tokens.positional,
          named: tokens.named,
          ...(name ? { nameAt: name.at, nameLength: name.words.length } : {}),
        };
        return fail({ ...found.error, typed });
      }
      collection = found.value;
    } else if (chat.collection && (!assignment.network || chat.collection.network === network)) {
      const key = chat.collection;
      collection = { network: key.network, address: key.address, name: key.name ?? key.address };
    } else if (option.required) {
      return fail({ code: 'no_collection' });
    }
    if (collection) {
      values[option.name] = collection;
      resolved.set(option.name, collection);
    }
  }
  const missing = missingOption(spec, values);
  if (missing) return invalid(missing);
  return ok({
    values,
    raw,
    extras: assignment.extras,
    resolved,
    network: resolved.values().next().value?.network ?? network,
  });
}

/** A failure that another reading of the same words may not have: a refused word, or a name that matched nothing. */
function misread(failure: ReadingFailure): boolean {
  return failure.code === 'invalid_argument' || failure.code === 'unknown_collection';
}

/**
 * Reads the words another way after the first reading failed: a value typed without quotes after
 * `key=` (`collection=moon cats`) gets the plain words after it; a name that matches nothing but
 * whose first words name a collection, and whose next word reads as the option after the name
 * (`/holders moon cats 3 extra`), is answered with the error of the words after it (here: one word
 * too many); a name that matches nothing in a chat without a default collection, whose words all
 * read as the other options (`/token 4924`), asks which collection. Otherwise the first failure
 * stands. Costs a few cached searches on the command's network, only for lines that would be refused.
 */
async function reread(
  failure: ReadingFailure,
  spec: CommandSpec,
  tokens: Tokens,
  sources: ArgumentSources,
): Promise<Result<Arguments, ReadingFailure>> {
  // A choice of collections for the first word of a name typed without quotes is a misreading too.
  const glueable =
    misread(failure) || (failure.code === 'ambiguous_collection' && tokens.glued?.has(failure.error.option));
  if (!glueable) return fail(failure);
  for (const reading of gluedReadings(spec, tokens)) {
    const other = await readOnce(spec, reading, sources);
    // What that reading found instead (a choice of collections, a platform failure) is the answer.
    if (other.ok || !misread(other.error)) return other;
  }
  if (failure.code !== 'unknown_collection') return fail(failure);
  const ctx = contextOf(sources);
  const assigned = assignWords(spec, tokens, ctx);
  const nameWords = assigned.ok ? assigned.value.nameWords : undefined;
  if (!nameWords) return fail(closeNames(failure, tokens, undefined));
  const searched = failure.error.params.network;
  const network = searched === undefined ? sources.defaultNetwork : String(searched);
  for (const { ref, reading } of shorterNames(spec, nameWords, ctx)) {
    if (!(await sources.probe(ref, network).catch(() => false))) continue;
    // The words after the name explain the refusal: their own error, or one word too many.
    const explained = await readOnce(spec, tokens, sources, reading).catch(() => undefined);
    if (explained && !explained.ok && explained.error.code === 'invalid_argument') return explained;
    break;
  }
  const oneWord = await wordsMeantForOneWordOption(spec, tokens, nameWords, network, sources);
  if (oneWord) return invalid(oneWord);
  if (!sources.chat.collection && readsWithoutName(spec, nameWords, ctx)) return fail({ code: 'no_collection' });
  return fail(closeNames(failure, tokens, nameWords));
}

/** Most first words of a name tried as words of the one-word option before it. */
const MAX_WORDS_MOVED = 3;

/**
 * `/alias set moon cats moon cats`: the option before the name takes one word (`moon`), and the
 * name (`cats moon cats`) matches nothing but does without its first words. Those words were meant
 * for the one-word option: the refusal says it is one word.
 */
async function wordsMeantForOneWordOption(
  spec: CommandSpec,
  tokens: Tokens,
  nameWords: { option: string; at: number; words: readonly string[] },
  network: string,
  sources: ArgumentSources,
): Promise<ArgError | undefined> {
  const at = spec.options.findIndex((o) => o.name === nameWords.option);
  const before = spec.options[at - 1];
  const typed = tokens.positional[nameWords.at - 1];
  if (!before?.oneWord || typed === undefined) return undefined;
  for (let moved = 1; moved <= Math.min(MAX_WORDS_MOVED, nameWords.words.length - 1); moved++) {
    const text = nameWords.words.slice(moved).join(' ');
    if (await sources.probe({ kind: 'name', text }, network).catch(() => false)) {
      return { code: 'one_word', option: before.name, input: [typed, ...nameWords.words.slice(0, moved)].join(' ') };
    }
  }
  return undefined;
}

/**
 * A name that matched nothing, when no other reading explains it: the collections with names close
 * to it as a choice ("did you mean"), else the failure as it is.
 */
function closeNames(
  failure: Extract<ReadingFailure, { code: 'unknown_collection' }>,
  tokens: Tokens,
  nameWords: { at: number; words: readonly string[] } | undefined,
): ReadingFailure {
  if (!failure.similar) return failure;
  const typed: TypedWords = {
    positional: tokens.positional,
    named: tokens.named,
    ...(nameWords ? { nameAt: nameWords.at, nameLength: nameWords.words.length } : {}),
  };
  return { code: 'ambiguous_collection', error: failure.similar, typed };
}
