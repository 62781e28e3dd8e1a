/**
 * Option types of commands and their parsers. Every parser is a pure function from the text a
 * user typed to a value or an {@link ArgError} with an identifier; `describeArgError` in
 * user-text.ts is the one place that turns identifiers into words.
 */

import { isAddress } from 'viem/utils';
import { truncate } from '../core/reply.ts';
import { zonesForAbbreviation } from './time-zones.ts';

export type OptionType =
  | 'text'
  | 'collection'
  | 'network'
  | 'tokenId'
  | 'address'
  | 'amount'
  | 'integer'
  | 'choice'
  | 'choiceList'
  | 'duration'
  | 'role'
  | 'timeOfDay'
  | 'timeZone';

export interface OptionSpec {
  name: string;
  type: OptionType;
  description: string;
  required?: boolean;
  /** For `choice` and `choiceList`. */
  choices?: readonly string[];
  /** Other words people use for a choice (`sold` for `sale`), lower-case, to the choice they mean. */
  synonyms?: Readonly<Record<string, string>>;
  /** For `integer`. */
  min?: number;
  max?: number;
  /** For `text`: the longest accepted (default 200 characters). */
  maxLength?: number;
  /** Takes the rest of the positional words (free text, lists). Only the last option may, but named-only ones. */
  rest?: boolean;
  /** Given only as `name=value` (or a Discord option), never from positional words. */
  namedOnly?: boolean;
  /** Offer completions (Discord autocomplete). */
  autocomplete?: boolean;
  /**
   * For a `text` option just before a collection: one word (an alias). When the collection's name
   * matches nothing but does without its first words, those words were meant for this option, and
   * the answer says it is one word.
   */
  oneWord?: boolean;
}

/** A collection as the user named it; resolved against aliases and search by the engine. */
export type CollectionRef =
  | { kind: 'address'; address: string; network?: string }
  | { kind: 'name'; text: string; network?: string };

export interface Amount {
  /** Decimal string, e.g. `1.5`. */
  value: string;
  /** True when written in US dollars (`$500`, `500usd`). */
  usd: boolean;
  /** The currency symbol written after the number (`0.5 DUSD`), upper-case; none for a bare number or dollars. */
  currency?: string;
}

export interface TimeOfDay {
  hour: number;
  minute: number;
}

export interface OptionValues {
  text: string;
  collection: CollectionRef;
  network: string;
  tokenId: string;
  address: string;
  amount: Amount;
  integer: number;
  choice: string;
  /** Comma-separated choices, e.g. `sale,listing`. */
  choiceList: string[];
  duration: number;
  /** A chat role id (Discord): `<@&123…>` or the bare id. */
  role: string;
  timeOfDay: TimeOfDay;
  timeZone: string;
}

export type ArgErrorCode =
  | 'missing'
  | 'invalid_address'
  | 'bad_checksum'
  | 'invalid_token_id'
  | 'invalid_number'
  | 'out_of_range'
  | 'invalid_choice'
  | 'invalid_amount'
  | 'invalid_percent'
  | 'invalid_duration'
  | 'invalid_role'
  | 'invalid_time'
  | 'invalid_time_zone'
  | 'unknown_network'
  | 'invalid_collection'
  | 'too_long'
  | 'too_many_arguments'
  | 'unknown_option'
  | 'invalid_trait'
  | 'repeated_option'
  | 'one_word'
  | 'unbalanced_quotes';

export interface ArgError {
  code: ArgErrorCode;
  /** The option concerned, when there is one. */
  option?: string;
  /** What the user typed (shortened). */
  input?: string;
  /** Allowed values, bounds or known networks, for the message. */
  allowed?: readonly string[];
  min?: number;
  max?: number;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: ArgError };

export interface ParseContext {
  /** Names of the networks the bot knows. */
  networks: readonly string[];
}

const ok = <T>(value: T): Parsed<T> => ({ ok: true, value });
const fail = (error: ArgError): { ok: false; error: ArgError } => ({ ok: false, error });

const MAX_INPUT = 200;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const UINT256_MAX = (1n << 256n) - 1n;

function shown(input: string): string {
  return truncate(input, 60);
}

/**
 * A 20-byte address, returned in lower case. Written in mixed case it carries an EIP-55 checksum,
 * which must match (a letter typed in the wrong case or a wrong character is then caught:
 * `bad_checksum`); all lower or all upper case carries none and is taken as it is.
 */
export function parseAddress(input: string, option = 'address'): Parsed<string> {
  const trimmed = input.trim();
  if (!ADDRESS.test(trimmed)) return fail({ code: 'invalid_address', option, input: shown(trimmed) });
  const hex = trimmed.slice(2);
  const mixed = hex !== hex.toLowerCase() && hex !== hex.toUpperCase();
  if (mixed && !isAddress(trimmed, { strict: true })) return fail({ code: 'bad_checksum', option, input: trimmed });
  return ok(trimmed.toLowerCase());
}

/** Decimal token id (a leading `#` is allowed) or `0x` hex, within uint256; returned as decimal. */
export function parseTokenId(input: string, option = 'token'): Parsed<string> {
  const trimmed = input.trim().replace(/^#/, '');
  let value: bigint;
  if (/^\d{1,78}$/.test(trimmed)) value = BigInt(trimmed);
  else if (/^0x[0-9a-fA-F]{1,64}$/.test(trimmed)) value = BigInt(trimmed);
  else return fail({ code: 'invalid_token_id', option, input: shown(trimmed) });
  if (value > UINT256_MAX) return fail({ code: 'invalid_token_id', option, input: shown(trimmed) });
  return ok(value.toString());
}

/** A whole number within the bounds; one past them, however long, is `out_of_range` (a number still). */
export function parseInteger(input: string, option: string, min?: number, max?: number): Parsed<number> {
  const trimmed = input.trim();
  if (!/^-?\d+$/.test(trimmed)) return fail({ code: 'invalid_number', option, input: shown(trimmed) });
  const negative = trimmed.startsWith('-');
  const digits = trimmed.replace(/^-?0*(?=\d)/, '');
  // Past 300 digits the size alone says which way it is out of range.
  const value = digits.length > 300 ? undefined : BigInt(`${negative ? '-' : ''}${digits}`);
  const below = min !== undefined && (value === undefined ? negative : value < BigInt(Math.ceil(min)));
  const above = max !== undefined && (value === undefined ? !negative : value > BigInt(Math.floor(max)));
  if (below || above) {
    return fail({
      code: 'out_of_range',
      option,
      input: shown(trimmed),
      ...(min === undefined ? {} : { min }),
      ...(max === undefined ? {} : { max }),
    });
  }
  if (value === undefined || value > BigInt(Number.MAX_SAFE_INTEGER) || value < -BigInt(Number.MAX_SAFE_INTEGER)) {
    return fail({ code: 'invalid_number', option, input: shown(trimmed) });
  }
  return ok(Number(value));
}

/**
 * One of the choices, in any case. The plural of a choice is that choice (`sales`, `listings`):
 * people name kinds of things in the plural, and no choice list here has a word and its plural
 * meaning two things.
 */
export function parseChoice(
  input: string,
  option: string,
  choices: readonly string[],
  synonyms: Readonly<Record<string, string>> = {},
): Parsed<string> {
  const wanted = input.trim().toLowerCase();
  const found =
    choices.find((c) => c.toLowerCase() === wanted) ??
    (wanted.endsWith('s') ? choices.find((c) => c.toLowerCase() === wanted.slice(0, -1)) : undefined) ??
    (Object.hasOwn(synonyms, wanted) ? synonyms[wanted] : undefined);
  return found ? ok(found) : fail({ code: 'invalid_choice', option, input: shown(input.trim()), allowed: choices });
}

/** `sale,listing` or `sale listing`: each must be one of the choices. */
export function parseChoiceList(
  input: string,
  option: string,
  choices: readonly string[],
  synonyms: Readonly<Record<string, string>> = {},
): Parsed<string[]> {
  const out: string[] = [];
  for (const word of input.split(/[\s,]+/).filter(Boolean)) {
    const one = parseChoice(word, option, choices, synonyms);
    if (!one.ok) return one;
    if (!out.includes(one.value)) out.push(one.value);
  }
  return out.length ? ok(out) : fail({ code: 'missing', option });
}

export function parseNetwork(input: string, ctx: ParseContext, option = 'network'): Parsed<string> {
  const wanted = input.trim().toLowerCase();
  const found = ctx.networks.find((n) => n.toLowerCase() === wanted);
  return found
    ? ok(found)
    : fail({ code: 'unknown_network', option, input: shown(input.trim()), allowed: ctx.networks });
}

/** A percentage from 1 to 100: `80%`, `80`, `92.5%`. */
export function parsePercent(input: string, option = 'percent'): Parsed<number> {
  const match = /^(\d{1,3}(?:\.\d{1,2})?)\s*%?$/.exec(input.trim());
  const value = match ? Number(match[1]) : Number.NaN;
  if (!(value >= 1 && value <= 100)) return fail({ code: 'invalid_percent', option, input: shown(input.trim()) });
  return ok(value);
}

/**
 * A price: `1.5`, `0.25`, `$500`, `500usd`, `500 USD`, or in a currency named by its symbol: `0.5 DUSD`,
 * `0.5DUSD` (the symbol is checked against the network's currencies by the command). Up to 18
 * decimals, positive.
 */
export function parseAmount(input: string, option = 'amount'): Parsed<Amount> {
  let text = input.trim().replace(/\s+/g, '');
  let usd = false;
  let currency: string | undefined;
  if (text.startsWith('$')) {
    usd = true;
    text = text.slice(1);
  } else {
    // A symbol after the number: two letters first (`1e5` is no price in E5), then letters, digits or points (`USDC.e`).
    const unit = /^([0-9._]*)([A-Za-z]{2}[A-Za-z0-9.]{0,14})$/.exec(text);
    if (unit) {
      text = unit[1] ?? '';
      const symbol = (unit[2] ?? '').toUpperCase();
      if (symbol === 'USD') usd = true;
      else currency = symbol;
    }
  }
  text = text.replace(/_/g, '');
  if (!/^(\d{1,30}(\.\d{0,18})?|\.\d{1,18})$/.test(text)) {
    return fail({ code: 'invalid_amount', option, input: shown(input.trim()) });
  }
  const normalized = text.startsWith('.') ? `0${text}` : text.replace(/\.$/, '');
  return ok({ value: normalized, usd, ...(currency === undefined ? {} : { currency }) });
}

const DURATION_UNITS: Record<string, number> = {
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/** `30s`, `5m`, `2h`, `1d`, `1w`, or combinations like `1h30m`. */
export function parseDuration(input: string, option = 'duration'): Parsed<number> {
  const text = input.trim().toLowerCase();
  const pattern = /(\d{1,6})\s*([smhdw])/gy;
  let total = 0;
  let consumed = 0;
  for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
    total += Number(match[1]) * (DURATION_UNITS[match[2] ?? ''] ?? 0);
    consumed = pattern.lastIndex;
  }
  if (consumed === 0 || consumed !== text.length || total <= 0) {
    return fail({ code: 'invalid_duration', option, input: shown(input.trim()) });
  }
  return ok(total);
}

/** A role as Discord writes it (`<@&123456789012345678>`) or its numeric id. */
export function parseRole(input: string, option = 'role'): Parsed<string> {
  const text = input.trim();
  const id = /^<@&(\d{5,25})>$/.exec(text)?.[1] ?? /^(\d{5,25})$/.exec(text)?.[1];
  return id ? ok(id) : fail({ code: 'invalid_role', option, input: shown(text) });
}

/** `09:00`, `9:30`, `21:15`, `9am`, `9:30pm`, `12am` (midnight). */
export function parseTimeOfDay(input: string, option = 'time'): Parsed<TimeOfDay> {
  const text = input.trim().toLowerCase();
  const match = /^(\d{1,2})(?::(\d{2}))?\s*(am|pm)?$/.exec(text);
  if (!match) return fail({ code: 'invalid_time', option, input: shown(input.trim()) });
  let hour = Number(match[1]);
  const minute = match[2] === undefined ? 0 : Number(match[2]);
  const meridiem = match[3];
  if (meridiem) {
    if (hour < 1 || hour > 12) return fail({ code: 'invalid_time', option, input: shown(input.trim()) });
    hour = (hour % 12) + (meridiem === 'pm' ? 12 : 0);
  } else if (match[2] === undefined) {
    return fail({ code: 'invalid_time', option, input: shown(input.trim()) });
  }
  if (hour > 23 || minute > 59) return fail({ code: 'invalid_time', option, input: shown(input.trim()) });
  return ok({ hour, minute });
}

/** An IANA time zone name (`Europe/Paris`, `Asia/Tokyo`, `UTC`), returned in its canonical form. */
export function parseTimeZone(input: string, option = 'timezone'): Parsed<string> {
  const text = input.trim();
  // An abbreviation names an offset, not a place (see time-zones.ts): refused, with the zones it may mean.
  const meant = zonesForAbbreviation(text);
  if (meant) return fail({ code: 'invalid_time_zone', option, input: shown(text), allowed: [...meant] });
  if (!text || text.length > 64 || !/^[A-Za-z0-9_+\-/]+$/.test(text)) {
    return fail({ code: 'invalid_time_zone', option, input: shown(text) });
  }
  try {
    return ok(new Intl.DateTimeFormat('en-US', { timeZone: text }).resolvedOptions().timeZone);
  } catch {
    return fail({ code: 'invalid_time_zone', option, input: shown(text) });
  }
}

/**
 * A collection: an address (`0xabc…`), an address on a network (`devnet:0xabc…` or
 * `0xabc…@devnet`), or a name or alias to look up, on a given network when written `devnet-l2:harbor gulls`.
 */
export function parseCollection(input: string, ctx: ParseContext, option = 'collection'): Parsed<CollectionRef> {
  const text = input.trim();
  if (!text) return fail({ code: 'missing', option });
  if (text.length > 100) return fail({ code: 'too_long', option, input: shown(text), max: 100 });
  const prefixed = /^([A-Za-z0-9-]+):(0x[0-9a-fA-F]+)$/.exec(text) ?? /^(0x[0-9a-fA-F]+)@([A-Za-z0-9-]+)$/.exec(text);
  if (prefixed) {
    const [first = '', second = ''] = prefixed.slice(1);
    const [networkText, addressText] = first.startsWith('0x') ? [second, first] : [first, second];
    const network = parseNetwork(networkText, ctx, option);
    if (!network.ok) return network;
    const address = parseAddress(addressText, option);
    if (!address.ok) return address;
    return ok({ kind: 'address', address: address.value, network: network.value });
  }
  if (/^0x/i.test(text)) {
    const address = parseAddress(text, option);
    if (!address.ok) return address;
    return ok({ kind: 'address', address: address.value });
  }
  const onNetwork = networkPrefix(text, ctx);
  if (onNetwork) {
    if (!onNetwork.rest) return fail({ code: 'missing', option });
    return ok({ kind: 'name', text: onNetwork.rest, network: onNetwork.network });
  }
  return ok({ kind: 'name', text });
}

/** `devnet-l2:harbor gulls` -> the known network and the words after it; undefined without one. */
export function networkPrefix(text: string, ctx: ParseContext): { network: string; rest: string } | undefined {
  const match = /^([A-Za-z0-9-]+):(.*)$/s.exec(text.trim());
  if (!match) return undefined;
  const network = ctx.networks.find((n) => n.toLowerCase() === match[1]?.toLowerCase());
  return network === undefined ? undefined : { network, rest: (match[2] ?? '').trim() };
}

export function parseText(input: string, option: string, max = MAX_INPUT): Parsed<string> {
  const text = input.trim();
  if (!text) return fail({ code: 'missing', option });
  if (text.length > max) return fail({ code: 'too_long', option, input: shown(text), max });
  return ok(text);
}

/** Words longer than this are never taken for a misspelt choice or network. */
const MAX_NEAR_WORD = 32;

/** Edits (insert, delete, substitute, swap two neighbours) between two short words. */
function editDistance(a: string, b: string): number {
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min((previous[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, (before[j - 2] ?? 0) + 1);
      }
      row.push(best);
    }
    before = previous;
    previous = row;
  }
  return previous[b.length] ?? 0;
}

/**
 * Whether a word reads as a misspelling or an abbreviation of one of `names`, or of its plural (3
 * letters at least; `sails` for sales, `sael` for sale).
 */
function nearOneOf(word: string, names: readonly string[]): boolean {
  const w = word.trim().toLowerCase();
  if (w.length < 3 || w.length > MAX_NEAR_WORD) return false;
  const allowed = w.length <= 4 ? 1 : 2;
  return names.some((name) => {
    const n = name.toLowerCase();
    return n.startsWith(w) || editDistance(w, n) <= allowed || (n.length >= 4 && editDistance(w, `${n}s`) <= allowed);
  });
}

/**
 * Whether a word reads as meant for an option of this type, parsed or not: a number for an
 * `integer` (`50` for a count of at most 10), a word close to one of the choices (`sael`), an
 * amount-like word for an `amount`. The engine gives such a word to the option, so that the answer
 * is the option's own error rather than "no collection matches" a name the word was glued to.
 * Free text and collections never claim a word this way.
 */
export function looksLike(spec: OptionSpec, input: string, ctx: ParseContext): boolean {
  const text = input.trim();
  switch (spec.type) {
    case 'text':
    case 'collection':
      return false;
    case 'integer':
      // Grouped, decimal or exponent numbers too (`1,000`, `2.5`, `1e3`): a count written oddly is still a count.
      return /^[-+]?\d[\d,._]*(?:e[-+]?\d+)?$/i.test(text);
    case 'tokenId':
      return /^#?\d+$|^0x/i.test(text);
    case 'address':
      return /^0x/i.test(text);
    case 'amount':
      return /^\$|^\.?\d|usd$/i.test(text);
    case 'choice':
      return nearOneOf(text, [...(spec.choices ?? []), ...Object.keys(spec.synonyms ?? {})]);
    case 'choiceList': {
      const names = [...(spec.choices ?? []), ...Object.keys(spec.synonyms ?? {})];
      return text.includes(',') || text.split(/\s+/).some((word) => nearOneOf(word, names));
    }
    case 'network':
      return nearOneOf(text, ctx.networks);
    case 'duration':
      return /^\d+\s*[a-z]+$/i.test(text);
    case 'role':
      return /^<@&|^\d{5,}$/.test(text);
    case 'timeOfDay':
      return /^\d{1,2}(?:[:.h]\d{1,2})?\s*(?:am|pm)?$/i.test(text);
    case 'timeZone':
      return /^[A-Za-z_]+\/[A-Za-z_]/.test(text);
  }
}

/** Parses one option's text according to its spec. */
export function parseOption(spec: OptionSpec, input: string, ctx: ParseContext): Parsed<OptionValues[OptionType]> {
  switch (spec.type) {
    case 'text':
      return parseText(input, spec.name, spec.maxLength);
    case 'collection':
      return parseCollection(input, ctx, spec.name);
    case 'network':
      return parseNetwork(input, ctx, spec.name);
    case 'tokenId':
      return parseTokenId(input, spec.name);
    case 'address':
      return parseAddress(input, spec.name);
    case 'amount':
      return parseAmount(input, spec.name);
    case 'integer':
      return parseInteger(input, spec.name, spec.min, spec.max);
    case 'choice':
      return parseChoice(input, spec.name, spec.choices ?? [], spec.synonyms);
    case 'choiceList':
      return parseChoiceList(input, spec.name, spec.choices ?? [], spec.synonyms);
    case 'duration':
      return parseDuration(input, spec.name);
    case 'role':
      return parseRole(input, spec.name);
    case 'timeOfDay':
      return parseTimeOfDay(input, spec.name);
    case 'timeZone':
      return parseTimeZone(input, spec.name);
  }
}

/** A command line split into words: positional words and `key=value` pairs, quotes respected. */
export interface Tokens {
  positional: string[];
  named: Map<string, string>;
  /**
   * Plain words typed right after an unquoted `key=value` word, by key: `collection=moon cats` gives
   * `moon` to `collection` and `cats` to the positional words, and here `collection -> {at, words: ['cats']}`
   * (`at`: where those words start in `positional`), so that the engine can read them as the rest of
   * that value when the line makes no sense otherwise.
   */
  glued?: Map<string, { at: number; words: string[] }>;
}

/**
 * Splits the argument text of a command line. Double or single quotes group words
 * (`"Moon Cats"`, `name='Moon Cats'`); `key=value` words become named arguments.
 */
export function tokenize(text: string): Parsed<Tokens> {
  const positional: string[] = [];
  const named = new Map<string, string>();
  const glued = new Map<string, { at: number; words: string[] }>();
  const words: Array<{ word: string; quoted: boolean }> = [];
  let current = '';
  let inWord = false;
  let quote: string | undefined;
  let sawQuote = false;
  for (const char of text) {
    if (quote) {
      if (char === quote) quote = undefined;
      else current += char;
    } else if (char === '"' || char === "'" || char === '“' || char === '”') {
      quote = char === '“' ? '”' : char;
      inWord = true;
      sawQuote = true;
    } else if (/\s/.test(char)) {
      if (inWord) words.push({ word: current, quoted: sawQuote });
      current = '';
      inWord = false;
      sawQuote = false;
    } else {
      current += char;
      inWord = true;
    }
  }
  if (quote) return fail({ code: 'unbalanced_quotes', input: shown(text) });
  if (inWord) words.push({ word: current, quoted: sawQuote });
  let gluedTo: { at: number; words: string[] } | undefined;
  for (const { word, quoted } of words) {
    const eq = word.indexOf('=');
    const quotedKey = quoted && eq < 0;
    if (!quotedKey && eq > 0 && /^[A-Za-z_][\w .-]{0,40}$/.test(word.slice(0, eq))) {
      const key = word.slice(0, eq).trim().toLowerCase();
      // A second value would silently replace the first (tokens=1,2 tokens=3 watching token 3 only).
      const earlier = named.get(key);
      if (earlier !== undefined) {
        return fail({ code: 'repeated_option', option: key, allowed: [shown(earlier), shown(word.slice(eq + 1))] });
      }
      named.set(key, word.slice(eq + 1));
      gluedTo = quoted ? undefined : { at: positional.length, words: [] };
      if (gluedTo) glued.set(key, gluedTo);
      else glued.delete(key);
    } else {
      positional.push(word);
      if (gluedTo && !quoted) gluedTo.words.push(word);
      else gluedTo = undefined;
    }
  }
  for (const [key, entry] of glued) if (entry.words.length === 0) glued.delete(key);
  return ok(glued.size > 0 ? { positional, named, glued } : { positional, named });
}
