/**
 * The rule index: which watch rules an event may concern, found without scanning the others.
 *
 * Matching has two phases. `candidates(event)` uses only what the event carries (network, collection,
 * kind, token ids, wallets); the pipeline then enriches the event (order price, token traits) and keeps
 * the candidates for which `passesPrice` and `passesTraits` / `passesTraitsAny` hold.
 */

import {
  ALERT_KINDS,
  type AlertKind,
  type Destination,
  destinationKey,
  type MinimumPrice,
  type WatchRule,
} from '../core/types.ts';
import type { ChainEvent } from './types.ts';

interface Entry {
  rule: WatchRule;
  // Lower-case wallets of a rule that has a wallet filter as well as a token filter.
  wallets: ReadonlySet<string> | undefined;
}

/** The rules of one network, collection and kind, when some of them filter on tokens or wallets or ignore some. */
class Bucket {
  // How many of the bucket's rules ignore some wallets (checked on lookup only when there are some).
  ignoring = 0;
  // Rules with a token filter (and maybe a wallet filter), by canonical token id.
  byToken: Map<string, Entry[]> | undefined;
  // Rules with a wallet filter only, by lower-case wallet.
  byWallet: Map<string, WatchRule[]> | undefined;

  constructor(
    // Rules without token or wallet filters.
    readonly any: WatchRule[],
  ) {}
}

/**
 * The rules of one network, collection and kind: the rule itself when there is one, a plain list
 * while none of them filters on tokens or wallets or ignores some (nearly always), a {@link Bucket}
 * otherwise. These are the cheapest shapes for the 100,000s of collections that a rule or two each watch.
 */
type Slot = WatchRule | WatchRule[] | Bucket;

const isBucket = (slot: Slot): slot is Bucket => slot instanceof Bucket;

// Position of each kind in a network's per-kind maps (no prototype: unknown kinds give undefined).
const KIND_SLOT: Readonly<Record<string, number | undefined>> = Object.assign(
  Object.create(null) as Record<string, number | undefined>,
  Object.fromEntries(ALERT_KINDS.map((k, i) => [k, i])),
);

// network -> kind slot -> collection -> the rules.
type Buckets = Map<string, Array<Map<string, Slot> | undefined>>;

/** What a rule is indexed under: computed from the rule when it is added, and again when it is removed. */
interface Keys {
  collection: string;
  // Kinds the rule is indexed under (none when paused); shared by rules with the same kinds.
  kinds: readonly AlertKind[];
  tokens: readonly string[];
  wallets: readonly string[];
  ignoring: boolean;
}

/** A rule's ignored wallets (lower-case), for the rules that have some. */
const ignoredWallets = new WeakMap<WatchRule, ReadonlySet<string>>();

// `007` -> `7`; anything that is not a plain decimal is kept as given.
function normaliseTokenId(id: string): string {
  const t = id.trim();
  if (t.length > 1 && t.charCodeAt(0) === 48 && /^[0-9]+$/.test(t)) return BigInt(t).toString();
  return t;
}

const lowerWallet = (wallet: string): string => wallet.trim().toLowerCase();

const NONE: readonly string[] = Object.freeze([]);

const NO_KINDS: readonly AlertKind[] = [];

function unique(values: readonly string[] | undefined, map: (v: string) => string): readonly string[] {
  if (!values || values.length === 0) return NONE;
  const out: string[] = [];
  for (const value of values) {
    const mapped = map(value);
    if (!out.includes(mapped)) out.push(mapped);
  }
  return out;
}

function addTo<T>(map: Map<string, T[]>, key: string, item: T): void {
  const list = map.get(key);
  if (list) list.push(item);
  else map.set(key, [item]);
}

function removeFrom<T>(map: Map<string, T[]> | undefined, key: string, found: (item: T) => boolean): void {
  const list = map?.get(key);
  if (!list) return;
  const at = list.findIndex(found);
  if (at >= 0) list.splice(at, 1);
  if (list.length === 0) map?.delete(key);
}

/**
 * Watch rules indexed by network, kind and collection; within such a bucket, by token id (rules with
 * a token filter, whose wallet filter, if any, is checked on lookup), by wallet (rules with only a
 * wallet filter), or in an "any" list. Paused rules are kept (`size`, `get`) but not indexed: they
 * never match and cost nothing at lookup; `add` of the same rule unpaused indexes it. Collections and
 * wallets are compared lower-case, token ids as canonical decimals. Removal is linear in the size of
 * the rule's lists (rare: a user command); lookup is not.
 *
 * A rule is held as the object given, and must not be changed in place while it is held (replace it
 * with `add`): its removal finds it where its fields say. The store's rules are never changed in place.
 * The index costs about 100 bytes per rule beyond the rules themselves.
 */
export class RuleIndex {
  private readonly rules = new Map<string, WatchRule>();
  private readonly kindLists = new Map<string, readonly AlertKind[]>();
  private readonly buckets: Buckets = new Map();
  private changes = 0;

  constructor(rules: Iterable<WatchRule> = []) {
    for (const rule of rules) {
      this.delete(rule.id);
      this.insert(rule);
    }
  }

  /** Rules held, paused ones included. */
  get size(): number {
    return this.rules.size;
  }

  /** Changes on every add, remove and replaceAll: the subscription planner re-plans when it moves. */
  get version(): number {
    return this.changes;
  }

  /** The rule with this id, paused or not. */
  get(ruleId: string): WatchRule | undefined {
    return this.rules.get(ruleId);
  }

  /** Adds a rule, or replaces the rule with the same id (how edits, pause and resume arrive). */
  add(rule: WatchRule): void {
    this.delete(rule.id);
    this.insert(rule);
    this.changes++;
  }

  /** Removes a rule; false when there was none with that id. */
  remove(ruleId: string): boolean {
    if (!this.delete(ruleId)) return false;
    this.changes++;
    return true;
  }

  /** Replaces every rule (a reload from the store). */
  replaceAll(rules: Iterable<WatchRule>): void {
    this.rules.clear();
    this.buckets.clear();
    for (const rule of rules) {
      this.delete(rule.id);
      this.insert(rule);
    }
    this.changes++;
  }

  /**
   * Phase 1: the active rules whose network, collection, kind, token ids and wallets admit the event,
   * each once. Rules with a token filter need the event to carry one of their tokens; rules with a
   * wallet filter need one of their wallets among `accounts` (or `from` / `to`). Price and traits are
   * not checked here. Only the event's bucket is visited. The event's token ids are expected in
   * canonical decimal form (as the classifier emits them); the returned array is the caller's.
   * Rules that ignore a wallet involved in the event are left out.
   */
  candidates(event: ChainEvent): WatchRule[] {
    const kind = KIND_SLOT[event.kind];
    const slot = kind === undefined ? undefined : this.buckets.get(event.network)?.[kind]?.get(event.collection);
    if (!slot) return [];
    if (Array.isArray(slot)) return slot.slice();
    if (!isBucket(slot)) return [slot];
    const out = this.#collect(slot, event);
    return slot.ignoring > 0 ? out.filter((rule) => !ignores(rule, event)) : out;
  }

  #collect(bucket: Bucket, event: ChainEvent): WatchRule[] {
    const out = bucket.any.slice();
    let seen: Set<WatchRule> | undefined;
    if (bucket.byToken) {
      for (const token of event.tokens) {
        const list = bucket.byToken.get(token.tokenId);
        if (!list) continue;
        for (const entry of list) {
          if (entry.wallets && !involves(entry.wallets, event)) continue;
          seen ??= new Set();
          if (seen.has(entry.rule)) continue;
          seen.add(entry.rule);
          out.push(entry.rule);
        }
      }
    }
    const byWallet = bucket.byWallet;
    if (byWallet) {
      const accounts = event.accounts;
      const n = accounts.length;
      for (let i = 0; i < n + 2; i++) {
        // accounts, then from and to unless accounts already holds them (they normally do).
        const wallet = i < n ? accounts[i] : i === n ? event.from : event.to;
        if (wallet === undefined || (i >= n && accounts.includes(wallet))) continue;
        const list = byWallet.get(wallet);
        if (!list) continue;
        for (const rule of list) {
          seen ??= new Set();
          if (seen.has(rule)) continue;
          seen.add(rule);
          out.push(rule);
        }
      }
    }
    return out;
  }

  /** Networks and the collections (lower-case) that active rules watch: what to subscribe to. */
  collectionsByNetwork(): Map<string, Set<string>> {
    const out = new Map<string, Set<string>>();
    for (const [network, kinds] of this.buckets) {
      const collections = new Set<string>();
      for (const byCollection of kinds)
        if (byCollection) for (const collection of byCollection.keys()) collections.add(collection);
      out.set(network, collections);
    }
    return out;
  }

  private keys(rule: WatchRule): Keys {
    const lower = rule.collection.toLowerCase();
    if (rule.paused) return { collection: lower, kinds: NO_KINDS, tokens: NONE, wallets: NONE, ignoring: false };
    return {
      // The store keeps addresses lower-case: reuse its string rather than hold a copy per rule.
      collection: lower === rule.collection ? rule.collection : lower,
      kinds: this.indexedKinds(rule.kinds),
      tokens: unique(rule.tokenIds, normaliseTokenId),
      wallets: unique(rule.wallets, lowerWallet),
      ignoring: rule.ignoreWallets !== undefined && rule.ignoreWallets.length > 0,
    };
  }

  private insert(rule: WatchRule): void {
    this.rules.set(rule.id, rule);
    if (rule.paused) return;
    const keys = this.keys(rule);
    if (keys.ignoring) ignoredWallets.set(rule, new Set(unique(rule.ignoreWallets, lowerWallet)));
    const entry: Entry | undefined =
      keys.tokens.length > 0
        ? { rule, wallets: keys.wallets.length > 0 ? new Set(keys.wallets) : undefined }
        : undefined;
    const plain = !entry && keys.wallets.length === 0 && !keys.ignoring;
    for (const kind of keys.kinds) {
      const byCollection = this.byCollection(rule.network, kind, true);
      if (!byCollection) continue;
      const slot = byCollection.get(keys.collection);
      if (plain) {
        if (!slot) byCollection.set(keys.collection, rule);
        else if (Array.isArray(slot)) slot.push(rule);
        else if (isBucket(slot)) slot.any.push(rule);
        else byCollection.set(keys.collection, [slot, rule]);
        continue;
      }
      let bucket: Bucket;
      if (slot && isBucket(slot)) bucket = slot;
      else {
        const any = slot === undefined ? [] : Array.isArray(slot) ? slot : [slot];
        bucket = new Bucket(any);
        byCollection.set(keys.collection, bucket);
      }
      if (keys.ignoring) bucket.ignoring++;
      if (entry) {
        bucket.byToken ??= new Map();
        for (const token of keys.tokens) addTo(bucket.byToken, token, entry);
      } else if (keys.wallets.length > 0) {
        bucket.byWallet ??= new Map();
        for (const wallet of keys.wallets) addTo(bucket.byWallet, wallet, rule);
      } else {
        bucket.any.push(rule);
      }
    }
  }

  /** The kinds a rule is indexed under (known, once each), one shared list per distinct list of kinds. */
  private indexedKinds(kinds: readonly AlertKind[]): readonly AlertKind[] {
    const key = kinds.join(',');
    let indexed = this.kindLists.get(key);
    if (!indexed) {
      indexed = [...new Set(kinds)].filter((kind) => KIND_SLOT[kind] !== undefined);
      this.kindLists.set(key, indexed);
    }
    return indexed;
  }

  private delete(ruleId: string): boolean {
    const rule = this.rules.get(ruleId);
    if (!rule) return false;
    this.rules.delete(ruleId);
    const keys = this.keys(rule);
    for (const kind of keys.kinds) {
      const byCollection = this.byCollection(rule.network, kind, false);
      const slot = byCollection?.get(keys.collection);
      if (!byCollection || !slot) continue;
      let left: Slot | undefined = slot;
      if (slot === rule) left = undefined;
      else if (Array.isArray(slot)) {
        const at = slot.indexOf(rule);
        if (at >= 0) slot.splice(at, 1);
      } else if (isBucket(slot)) {
        if (keys.ignoring) slot.ignoring--;
        if (keys.tokens.length > 0) {
          for (const token of keys.tokens) removeFrom(slot.byToken, token, (entry) => entry.rule === rule);
          if (slot.byToken?.size === 0) slot.byToken = undefined;
        } else if (keys.wallets.length > 0) {
          for (const wallet of keys.wallets) removeFrom(slot.byWallet, wallet, (r) => r === rule);
          if (slot.byWallet?.size === 0) slot.byWallet = undefined;
        } else {
          const at = slot.any.indexOf(rule);
          if (at >= 0) slot.any.splice(at, 1);
        }
        if (!slot.byToken && !slot.byWallet && slot.ignoring === 0) left = slot.any;
      }
      if (Array.isArray(left) && left.length <= 1) left = left[0];
      if (left === undefined) {
        byCollection.delete(keys.collection);
        if (byCollection.size === 0) this.dropKind(rule.network, kind);
      } else if (left !== slot) byCollection.set(keys.collection, left);
    }
    return true;
  }

  private dropKind(network: string, kind: AlertKind): void {
    const kinds = this.buckets.get(network);
    const slot = KIND_SLOT[kind];
    if (!kinds || slot === undefined) return;
    kinds[slot] = undefined;
    if (kinds.every((byCollection) => byCollection === undefined)) this.buckets.delete(network);
  }

  private byCollection(network: string, kind: AlertKind, create: boolean): Map<string, Slot> | undefined {
    const slot = KIND_SLOT[kind];
    if (slot === undefined) return undefined;
    let kinds = this.buckets.get(network);
    if (!kinds) {
      if (!create) return undefined;
      kinds = new Array<Map<string, Slot> | undefined>(ALERT_KINDS.length).fill(undefined);
      this.buckets.set(network, kinds);
    }
    let byCollection = kinds[slot];
    if (!byCollection && create) {
      byCollection = new Map();
      kinds[slot] = byCollection;
    }
    return byCollection;
  }
}

function ignores(rule: WatchRule, event: ChainEvent): boolean {
  const ignored = ignoredWallets.get(rule);
  return ignored !== undefined && involves(ignored, event);
}

function involves(wallets: ReadonlySet<string>, event: ChainEvent): boolean {
  for (const account of event.accounts) if (wallets.has(account)) return true;
  return (event.from !== undefined && wallets.has(event.from)) || (event.to !== undefined && wallets.has(event.to));
}

// ---------------------------------------------------------------------------------------------
// Phase 2

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
}

/** One trait of a token, as read from its metadata attributes. */
export interface TokenTrait {
  name: string;
  value: string | number | boolean;
}

// A decimal in canonical parts: no leading zeros in `int`, no trailing zeros in `frac`; zero is not negative.
interface Decimal {
  negative: boolean;
  int: string;
  frac: string;
}

const DECIMAL_TEXT = /^([+-]?)([0-9]*)(?:\.([0-9]*))?$/;

function parseDecimal(text: string): Decimal | undefined {
  const match = DECIMAL_TEXT.exec(text.trim());
  if (!match) return undefined;
  const intText = match[2] ?? '';
  const fracText = match[3] ?? '';
  if (intText === '' && fracText === '') return undefined;
  let i = 0;
  while (i < intText.length && intText.charCodeAt(i) === 48) i++;
  let j = fracText.length;
  while (j > 0 && fracText.charCodeAt(j - 1) === 48) j--;
  const int = i === 0 ? intText : intText.slice(i);
  const frac = j === fracText.length ? fracText : fracText.slice(0, j);
  return { negative: match[1] === '-' && (int !== '' || frac !== ''), int, frac };
}

// Exact order of two canonical decimals, without floats or BigInt: integer digits by length then
// lexicographically, fraction digits lexicographically (exact once trailing zeros are stripped).
function compareParsed(x: Decimal, y: Decimal): -1 | 0 | 1 {
  if (x.negative !== y.negative) return x.negative ? -1 : 1;
  let order: -1 | 0 | 1 = 0;
  if (x.int.length !== y.int.length) order = x.int.length < y.int.length ? -1 : 1;
  else if (x.int !== y.int) order = x.int < y.int ? -1 : 1;
  else if (x.frac !== y.frac) order = x.frac < y.frac ? -1 : 1;
  return x.negative ? ((-order || 0) as -1 | 0 | 1) : order;
}

/** Exact decimal text of a finite number, without exponent (`1e-7` -> `0.0000001`). */
export function numberToDecimal(value: number): string | undefined {
  if (!Number.isFinite(value)) return undefined;
  const text = String(value);
  const match = /^(-?)([0-9]+)(?:\.([0-9]+))?e([+-][0-9]+)$/.exec(text);
  if (!match) return text;
  const sign = match[1] ?? '';
  const digits = `${match[2] ?? ''}${match[3] ?? ''}`;
  const point = (match[2] ?? '').length + Number(match[4]);
  if (point <= 0) return `${sign}0.${'0'.repeat(-point)}${digits}`;
  if (point >= digits.length) return `${sign}${digits}${'0'.repeat(point - digits.length)}`;
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
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
    if (last.parsedUsd === undefined) {
      const text = price.usd === undefined ? undefined : numberToDecimal(price.usd);
      last.parsedUsd = (text === undefined ? undefined : parseDecimal(text)) ?? null;
    }
    return last.parsedUsd;
  }
  last.parsedAmount ??= parseDecimal(price.amount) ?? null;
  return last.parsedAmount;
}

/**
 * Phase 2, floor: true without a floor percentage; else the price per token in USD must be at or
 * below that percentage of the floor (false when either is unknown).
 */
export function passesFloor(rule: WatchRule, price: PriceInfo | undefined): boolean {
  if (rule.floorPercent === undefined) return true;
  const perToken = price?.usdPerToken;
  const floor = price?.floorUsd;
  if (perToken === undefined || floor === undefined || !(floor > 0)) return false;
  return perToken <= (floor * rule.floorPercent) / 100;
}

/**
 * Phase 2, price: true without a minimum; with `minPrice.usd`, compares the USD value (false when
 * unknown); else compares the amount in the order's currency. At or above the minimum passes; a
 * minimum or amount that is not a decimal fails. Exact: decimals are compared digit by digit, never
 * as floats.
 */
export function passesPrice(rule: WatchRule, price: PriceInfo | undefined): boolean {
  const min = rule.minPrice;
  if (!min) return true;
  if (!price) return false;
  let minimum = parsedMinimums.get(min);
  if (minimum === undefined) {
    minimum = parseDecimal(min.value) ?? null;
    parsedMinimums.set(min, minimum);
  }
  if (!minimum) return false;
  const value = priceValue(price, min.usd);
  return value !== null && compareParsed(value, minimum) >= 0;
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
export function passesTraits(rule: WatchRule, traits: readonly TokenTrait[]): boolean {
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
  rule: WatchRule,
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
  candidates: readonly WatchRule[],
  price: PriceInfo | undefined,
  traitsPerToken: ReadonlyArray<readonly TokenTrait[] | undefined>,
  onUnpriced?: (rule: WatchRule) => void,
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
