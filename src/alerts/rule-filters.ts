/**
 * Phase 2 of matching: what a candidate rule (see rule-index.ts) asks of an event once it is enriched:
 * a minimum price, a floor percentage, traits; and the matching rules grouped by destination (one
 * message per chat, with the roles its rules ping). Prices are compared exactly (see compareParsed).
 */
import { formatUnits, parseUnits } from 'viem/utils';
import { type Destination, destinationKey, type MinimumPrice, NATIVE_COIN_ADDRESS } from '../core/types.ts';
import type { MatchingRule } from './rule-index.ts';

/** The price of an event after enrichment. */
export interface PriceInfo {
  /** Decimal amount in currency units (not wei), e.g. `1.25`. */
  amount: string;
  /** Value in US dollars, when known. */
  usd: number | undefined;
  /** Value per token unit in US dollars, when known. */
  usdPerToken?: number | undefined;
  /** The collection's floor in US dollars (its cheapest listing other than this event's), when fetched and known. */
  floorUsd?: number | undefined;
  /**
   * The currency `amount` is in (lower-case address); undefined when the event was paid in several
   * (a sweep across currencies), which then compares through US dollars only.
   */
  currency?: string | undefined;
  /** US dollars per whole unit of a currency, when the bot knows it: converts a minimum in another currency. */
  usdRate?: ((currency: string) => number | undefined) | undefined;
}

/** One trait of a token, as read from its metadata attributes. */
export interface TokenTrait {
  name: string;
  value: string | number | boolean;
}

/**
 * A decimal as a whole number of units of 10^-scale (`1.25`: 1250000000000000000n at scale 18), read
 * by viem's parseUnits at {@link COMMON_SCALE} decimals or the text's own number when it has more,
 * so it is exact whatever their number, and two amounts of a currency compare without rescaling.
 */
interface Scaled {
  units: bigint;
  scale: number;
}

/** Decimals of most currencies (wei per ether): prices and minimums are read at this scale at least. */
const COMMON_SCALE = 18;

/** What viem's parseUnits reads: digits with at most one point, at least one digit, an optional minus. */
const DECIMAL = /^-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)$/;

/**
 * A decimal for ordering: `approx`, the float nearest to it, orders two decimals whose floats are
 * clearly apart (see {@link compareParsed}); the exact value, read with viem on first use, orders
 * the others. Most prices are far from most minimums, so most checks never read it.
 */
class Decimal {
  readonly approx: number;
  /** Its text (without a plus sign), or the number whose shortest decimal it is. */
  readonly #source: string | number;
  #exact: Scaled | undefined;

  constructor(source: string | number) {
    this.#source = source;
    this.approx = Number(source);
  }

  get exact(): Scaled {
    if (this.#exact === undefined) {
      const text = typeof this.#source === 'number' ? (numberToDecimal(this.#source) ?? '0') : this.#source;
      const point = text.indexOf('.');
      const scale = Math.max(COMMON_SCALE, point < 0 ? 0 : text.length - point - 1);
      this.#exact = { units: parseUnits(text, scale), scale };
    }
    return this.#exact;
  }
}

/** A decimal's value, or undefined when the text is not one (`1`, `-2.50`, `.5`, `3.`, `+1` are). */
function parseDecimal(text: string): Decimal | undefined {
  const trimmed = text.trim();
  // A plus sign means the same as none; viem reads an optional minus only.
  const unsigned = trimmed.startsWith('+') && trimmed[1] !== '-' ? trimmed.slice(1) : trimmed;
  return DECIMAL.test(unsigned) ? new Decimal(unsigned) : undefined;
}

const POWERS_OF_TEN: bigint[] = [1n];

function powerOfTen(exponent: number): bigint {
  for (let n = POWERS_OF_TEN.length; n <= exponent; n++) POWERS_OF_TEN.push((POWERS_OF_TEN[n - 1] ?? 1n) * 10n);
  return POWERS_OF_TEN[exponent] ?? 10n ** BigInt(exponent);
}

/** Floats at least this large are normal: each is within 2^-52 of its decimal, relatively. */
const NORMAL = 2 ** -1000;

/**
 * Exact order of two decimals. A decimal's float is the nearest one (JavaScript may round less
 * carefully past 20 significant digits, still within 2^-52 relatively), so floats further apart
 * than 2^-50 of the larger one order their decimals. Closer ones, equal ones, and those out of the
 * floats' normal range are compared exactly: their units, read by viem, at the larger scale.
 */
function compareParsed(x: Decimal, y: Decimal): -1 | 0 | 1 {
  const gap = x.approx - y.approx;
  const magnitude = Math.max(Math.abs(x.approx), Math.abs(y.approx));
  if (magnitude >= NORMAL && magnitude < Number.POSITIVE_INFINITY && Math.abs(gap) > magnitude * 2 ** -50) {
    return gap < 0 ? -1 : 1;
  }
  const [p, q] = [x.exact, y.exact];
  const a = p.scale < q.scale ? p.units * powerOfTen(q.scale - p.scale) : p.units;
  const b = q.scale < p.scale ? q.units * powerOfTen(p.scale - q.scale) : q.units;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Exact decimal text of a finite number, without exponent (`1e-7` -> `0.0000001`). */
export function numberToDecimal(value: number): string | undefined {
  if (!Number.isFinite(value)) return undefined;
  const text = String(value);
  const match = /^(-?[0-9]+)(?:\.([0-9]+))?e([+-][0-9]+)$/.exec(text);
  if (!match) return text;
  // All the significant digits as one whole number, and where the point goes among them.
  const fraction = match[2] ?? '';
  const units = BigInt(`${match[1] ?? ''}${fraction}`);
  const decimals = fraction.length - Number(match[3]);
  return decimals >= 0 ? formatUnits(units, decimals) : (units * powerOfTen(-decimals)).toString();
}

/**
 * Compares two decimal strings exactly (no floats): -1, 0 or 1; undefined when one of them is not a
 * decimal (`1`, `-2.50`, `.5`, `3.` are).
 */
export function compareDecimals(a: string, b: string): -1 | 0 | 1 | undefined {
  const x = parseDecimal(a);
  const y = parseDecimal(b);
  return x && y ? compareParsed(x, y) : undefined;
}

// Parsed once per rule minimum, and once per price: the pipeline checks one event's price against
// all its candidate rules in a row, so remembering the last price is enough (`null`: not a decimal).
const parsedMinimums = new WeakMap<MinimumPrice, Decimal | null>();
const last: {
  amount: string | undefined;
  usd: number | undefined;
  parsedAmount: Decimal | null | undefined;
  parsedUsd: Decimal | null | undefined;
} = { amount: undefined, usd: undefined, parsedAmount: undefined, parsedUsd: undefined };

function priceValue(price: PriceInfo, inUsd: boolean): Decimal | null {
  if (price.amount !== last.amount || price.usd !== last.usd) {
    last.amount = price.amount;
    last.usd = price.usd;
    last.parsedAmount = undefined;
    last.parsedUsd = undefined;
  }
  if (inUsd) {
    last.parsedUsd ??= price.usd !== undefined && Number.isFinite(price.usd) ? new Decimal(price.usd) : null;
    return last.parsedUsd;
  }
  last.parsedAmount ??= parseDecimal(price.amount) ?? null;
  return last.parsedAmount;
}

/**
 * Phase 2, floor: true without a floor percentage; else the price per token in USD must be at or
 * below that percentage of the floor (false when either is unknown).
 */
export function passesFloor(rule: MatchingRule, price: PriceInfo | undefined): boolean {
  if (rule.floorPercent === undefined) return true;
  const perToken = price?.usdPerToken;
  const floor = price?.floorUsd;
  if (perToken === undefined || floor === undefined || !(floor > 0)) return false;
  return perToken <= (floor * rule.floorPercent) / 100;
}

/**
 * Phase 2, price: true without a minimum. A minimum in US dollars compares the USD value (false when
 * unknown). A minimum in a currency compares the amount when the event is in that currency, and
 * otherwise the event's USD value with the minimum's worth at the currency's known rate (false when
 * either is unknown: a 95 DUSD sale never passes `min=0.1 DEV` by its bare number). At or above the
 * minimum passes; a minimum or amount that is not a decimal fails. Exact: floats decide only when
 * they are clearly apart, else the whole numbers of units viem reads (see compareParsed).
 */
export function passesPrice(rule: MatchingRule, price: PriceInfo | undefined): boolean {
  const min = rule.minPrice;
  if (!min) return true;
  if (!price) return false;
  let minimum = parsedMinimums.get(min);
  if (minimum === undefined) {
    minimum = parseDecimal(min.value) ?? null;
    parsedMinimums.set(min, minimum);
  }
  if (!minimum) return false;
  if (min.usd) {
    const value = priceValue(price, true);
    return value !== null && compareParsed(value, minimum) >= 0;
  }
  // Rules stored before minimums had a unit are read as the native coin (see the stores' schema).
  const currency = min.currency ?? NATIVE_COIN_ADDRESS;
  if (price.currency !== undefined && price.currency === currency) {
    const value = priceValue(price, false);
    return value !== null && compareParsed(value, minimum) >= 0;
  }
  const rate = price.usdRate?.(currency);
  const usd = priceValue(price, true);
  if (rate === undefined || !(rate > 0) || usd === null) return false;
  const minimumUsd = minimum.approx * rate;
  return Number.isFinite(minimumUsd) && compareParsed(usd, new Decimal(minimumUsd)) >= 0;
}

const WHITESPACE = /^\s|\s$/;

// Case-insensitive equality, ignoring surrounding white space, allocating only when needed.
function same(a: string, b: string): boolean {
  if (a === b) return true;
  if (a.length === b.length && !WHITESPACE.test(a) && !WHITESPACE.test(b)) {
    for (let i = 0; i < a.length; i++) {
      let x = a.charCodeAt(i);
      let y = b.charCodeAt(i);
      if (x === y) continue;
      if (x >= 65 && x <= 90) x += 32;
      if (y >= 65 && y <= 90) y += 32;
      if (x !== y) return x > 127 || y > 127 ? a.toLowerCase() === b.toLowerCase() : false;
    }
    return true;
  }
  return a.trim().toLowerCase() === b.trim().toLowerCase();
}

/** Phase 2, traits of one token: every condition of the rule has a trait of that name and value (case-insensitive). */
export function passesTraits(rule: MatchingRule, traits: readonly TokenTrait[]): boolean {
  const conditions = rule.traits;
  if (!conditions || conditions.length === 0) return true;
  for (const condition of conditions) {
    let found = false;
    for (const trait of traits) {
      if (same(trait.name, condition.name) && same(String(trait.value), condition.value)) {
        found = true;
        break;
      }
    }
    if (!found) return false;
  }
  return true;
}

/**
 * Phase 2, traits of a sweep or batch: some token passes {@link passesTraits}. A token whose traits
 * are unknown (`undefined`: metadata not fetched) does not pass a rule that has trait conditions.
 */
export function passesTraitsAny(
  rule: MatchingRule,
  traitsPerToken: ReadonlyArray<readonly TokenTrait[] | undefined>,
): boolean {
  if (!rule.traits || rule.traits.length === 0) return true;
  for (const traits of traitsPerToken) if (traits && passesTraits(rule, traits)) return true;
  return false;
}

/** A destination with the roles its matching rules ping. */
export interface MatchedDestination {
  destination: Destination;
  roles: readonly string[];
}

/**
 * Phase 2: the rules among `candidates` whose price and trait conditions hold, grouped by
 * destination (one message per chat, whatever the number of its rules), with their roles.
 * A rule with a minimum price is not served when the price is unknown: `onUnpriced` hears of it.
 */
export function matchDestinations(
  candidates: readonly MatchingRule[],
  price: PriceInfo | undefined,
  traitsPerToken: ReadonlyArray<readonly TokenTrait[] | undefined>,
  onUnpriced?: (rule: MatchingRule) => void,
): MatchedDestination[] {
  // First by destination object (the store's rules of one chat share one: no key to build per
  // rule), then by key, for chats whose rules came with distinct but equal objects.
  const byObject = new Map<Destination, MatchedDestination>();
  const matched: MatchedDestination[] = [];
  for (const rule of candidates) {
    if ((rule.minPrice || rule.floorPercent !== undefined) && !price) {
      onUnpriced?.(rule);
      continue;
    }
    if (!passesPrice(rule, price) || !passesFloor(rule, price) || !passesTraitsAny(rule, traitsPerToken)) continue;
    let entry = byObject.get(rule.destination);
    if (!entry) {
      // Most chats ping no role: they share one empty list until a rule of theirs has one.
      entry = { destination: rule.destination, roles: NO_ROLES };
      byObject.set(rule.destination, entry);
      matched.push(entry);
    }
    if (rule.mentionRole) entry.roles = withRole(entry.roles, rule.mentionRole);
  }
  if (matched.length < 2) return matched;
  const byKey = new Map<string, MatchedDestination>();
  const merged: MatchedDestination[] = [];
  for (const entry of matched) {
    const key = destinationKey(entry.destination);
    const first = byKey.get(key);
    if (!first) {
      byKey.set(key, entry);
      merged.push(entry);
    } else {
      for (const role of entry.roles) first.roles = withRole(first.roles, role);
    }
  }
  return merged;
}

function withRole(roles: readonly string[], role: string): readonly string[] {
  if (roles.includes(role)) return roles;
  return roles === NO_ROLES ? [role] : [...roles, role];
}

const NO_ROLES: readonly string[] = Object.freeze([]);
