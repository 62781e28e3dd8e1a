/**
 * The rule index: which watch rules an event may concern, found without scanning the others.
 *
 * Matching has two phases. `candidates(event)` uses only what the event carries (network, collection,
 * kind, token ids, wallets); once the event is enriched (order price, token traits), the checks of
 * rule-filters.ts finish the same match (see match.ts: one match per event).
 *
 * In the process that ingests events the index is the only copy of the rules in memory (the
 * PostgreSQL store reads them from the database on demand), so it holds them compactly, in typed
 * arrays (see compact.ts) rather than an object or string per rule. Candidates are rebuilt as objects
 * when an event matches them.
 */

import { ALERT_KINDS, type AlertKind, type Destination, destinationKey, type WatchRule } from '../core/types.ts';
import {
  AddressSlots,
  Column,
  NumberSlots,
  PackedAddresses,
  type PackedList,
  TextSlots,
  utf8Bytes,
  utf8Text,
} from './compact.ts';
import type { ChainEvent } from './types.ts';

/** What matching reads of a rule: the index keeps no more (not who made it or when; paused rules not at all). */
export type MatchingRule = Omit<WatchRule, 'createdBy' | 'createdAt' | 'paused'>;

type FilterFields = Pick<
  WatchRule,
  'tokenIds' | 'wallets' | 'ignoreWallets' | 'minPrice' | 'floorPercent' | 'traits' | 'mentionRole' | 'showRelists'
>;
const FILTER_FIELDS = [
  'tokenIds',
  'wallets',
  'ignoreWallets',
  'minPrice',
  'floorPercent',
  'traits',
  'mentionRole',
  'showRelists',
] as const satisfies ReadonlyArray<keyof FilterFields>;

/** What a rule has beyond network, collection and kinds (most rules have nothing: no object at all). */
interface Filters {
  /** The rule's own fields, given back on its candidates. */
  fields: Readonly<FilterFields>;
  /** Canonical token ids (none: any token). */
  tokens: readonly string[];
  /** Lower-case wallets, one of which must be a party (none: any). */
  wallets: ReadonlySet<string> | undefined;
  /** Lower-case wallets none of which may be a party. */
  ignored: ReadonlySet<string> | undefined;
  /** Shared by the rules whose filters are equal (see RuleIndex.#filtersOf): never freed. */
  shared: boolean;
  /** Its place in the index's table of filters, plus 1 (0 until placed). */
  id: number;
}

/** The rules of one collection that filter on tokens or wallets, found by token or wallet. */
interface Filtered {
  /** Rules with a token filter (and maybe a wallet filter, checked on lookup), by canonical token id. */
  byToken: Map<string, number[]>;
  /** Rules with a wallet filter only, by lower-case wallet. */
  byWallet: Map<string, number[]>;
}

const KIND_BIT: Readonly<Record<string, number | undefined>> = Object.assign(
  Object.create(null) as Record<string, number | undefined>,
  Object.fromEntries(ALERT_KINDS.map((k, i) => [k, 1 << i])),
);

/** The kinds of each bit mask, in ALERT_KINDS order: one shared list per mask. */
const KIND_LISTS: ReadonlyArray<readonly AlertKind[]> = Array.from({ length: 1 << ALERT_KINDS.length }, (_, mask) =>
  Object.freeze(ALERT_KINDS.filter((_, i) => (mask & (1 << i)) !== 0)),
);

const NONE = -1;
/** Destinations kept made (see RuleIndex.#destination): about 150 bytes each. */
const RECENT_DESTINATIONS = 10_000;

/** The fields a rule's candidate takes from its collection. */
interface CollectionFields {
  network: string;
  collection: string;
  collectionName: string;
}
const NO_TOKENS: readonly string[] = Object.freeze([]);

// `007` -> `7`; anything that is not a plain decimal is kept as given.
function normaliseTokenId(id: string): string {
  const t = id.trim();
  if (t.length > 1 && t.charCodeAt(0) === 48 && /^[0-9]+$/.test(t)) return BigInt(t).toString();
  return t;
}

const lowerWallet = (wallet: string): string => wallet.trim().toLowerCase();

function unique(values: readonly string[] | undefined, map: (v: string) => string): string[] {
  const out: string[] = [];
  for (const value of values ?? []) {
    const mapped = map(value);
    if (!out.includes(mapped)) out.push(mapped);
  }
  return out;
}

function addTo(map: Map<string, number[]>, key: string, slot: number): void {
  const list = map.get(key);
  if (list) list.push(slot);
  else map.set(key, [slot]);
}

function removeFrom(map: Map<string, number[]>, key: string, slot: number): void {
  const list = map.get(key);
  if (!list) return;
  const at = list.indexOf(slot);
  if (at >= 0) list.splice(at, 1);
  if (list.length === 0) map.delete(key);
}

/** The watched collections of one network: each a slot, with its rules without token or wallet filters in a list. */
class NetworkCollections {
  /** The collections' addresses, packed, each with its name: a collection's slot is its address's. */
  readonly addresses = new AddressSlots();
  /** First and last rule of each collection's list (rules without token or wallet filters). */
  readonly head = new Column((n) => new Int32Array(n), NONE);
  readonly tail = new Column((n) => new Int32Array(n), NONE);
  readonly filtered = new Map<number, Filtered>();
  /** Moves when a collection is added or forgotten. */
  version = 0;

  constructor(readonly name: string) {}

  slotFor(address: string, collectionName: string): number {
    const known = this.addresses.get(address);
    if (known !== undefined) return known;
    const slot = this.addresses.add(address, utf8Bytes(collectionName));
    if (slot === undefined) throw new TypeError(`not a collection address: ${address.slice(0, 80)}`);
    this.version++;
    this.head.set(slot, NONE);
    this.tail.set(slot, NONE);
    return slot;
  }

  collectionName(slot: number): string {
    const bytes = this.addresses.payload(slot);
    return bytes ? utf8Text(bytes) : '';
  }

  /** Forgets a collection once no rule is left in it. */
  releaseIfEmpty(slot: number): void {
    if (this.head.get(slot) !== NONE || this.filtered.has(slot)) return;
    this.addresses.delete(slot);
    this.version++;
  }
}

/**
 * Watch rules indexed by network and collection; within a collection, rules with a token filter by
 * token id (their wallet filter, if any, checked on lookup), rules with only a wallet filter by
 * wallet, the others in a list checked by kind. Paused rules are not held: `add` of a paused rule
 * removes the rule with its id, `add` of it resumed indexes it again. Collections and wallets are
 * compared lower-case, token ids as canonical decimals. A collection's name is the one its first
 * rule gave. Rules are found by id for replacement and removal (the store's ids: `r<number>`).
 *
 * Memory, per rule: 23 bytes in chunked columns (its filters by number: none for most, and rules
 * with only a minimum price, a floor percentage, a role or relists share them when equal) and 4 in
 * the table of ids; per collection: its packed address and name (about 40 bytes for a 42-character
 * address and a short name) and about 24 in tables; per chat: its key as bytes. A million rules on a
 * million collections take about 95 MB (see bench/pg-memory.ts). Candidates are new objects (the
 * caller's to keep), built only for rules that match.
 */
export class RuleIndex {
  readonly #networks = new Map<string, NetworkCollections>();
  readonly #networkList: NetworkCollections[] = [];
  readonly #ids = new NumberSlots();
  readonly #freeRules: number[] = [];
  #ruleCount = 0;
  readonly #number = new Column((n) => new Uint32Array(n));
  readonly #chat = new Column((n) => new Uint32Array(n));
  readonly #network = new Column((n) => new Uint16Array(n));
  readonly #collection = new Column((n) => new Int32Array(n));
  readonly #kinds = new Column((n) => new Uint8Array(n));
  readonly #next = new Column((n) => new Int32Array(n), NONE);
  /** Each rule's filters: 0 for none, else a place in #filterTable plus 1. */
  readonly #filterIds = new Column((n) => new Uint32Array(n));
  readonly #filterTable: Array<Filters | undefined> = [];
  readonly #freeFilterIds: number[] = [];
  /**
   * Filters without lists (a minimum price, a floor percentage, a role, relists), one object per
   * distinct value: many rules share a few of them. Kept while the index lives.
   */
  readonly #sharedFilters = new Map<string, Filters>();
  /** Chats by key (`platform:chatId`): a chat's slot is its key's. */
  readonly #chats = new TextSlots();
  /** Rules held per chat slot. */
  readonly #chatRules = new Column((n) => new Uint32Array(n));
  readonly #recentDestinations = new Map<number, Destination>();
  #changes = 0;

  constructor(rules: Iterable<WatchRule> = []) {
    for (const rule of rules) this.#put(rule);
  }

  /** Active rules held. */
  get size(): number {
    return this.#ids.size;
  }

  /** Changes on every add, remove and replaceAll: the subscription planner re-plans when it moves. */
  get version(): number {
    return this.#changes;
  }

  /** The active rule with this id, as matching sees it. */
  get(ruleId: string): MatchingRule | undefined {
    const slot = this.#ids.get(ruleNumber(ruleId));
    return slot === undefined ? undefined : this.#candidate(slot, this.#collectionOf(slot));
  }

  /** Adds a rule, or replaces the rule with the same id (how edits, pause and resume arrive). */
  add(rule: WatchRule): void {
    this.#put(rule);
    this.#changes++;
  }

  /** Removes a rule; false when none with that id was held. */
  remove(ruleId: string): boolean {
    if (!this.#delete(ruleNumber(ruleId))) return false;
    this.#changes++;
    return true;
  }

  /** Replaces every rule (a reload from the store). */
  replaceAll(rules: Iterable<WatchRule>): void {
    for (const slot of [...this.#ids.slots()]) this.#free(slot);
    this.#ids.clear();
    for (const rule of rules) this.#put(rule);
    this.#changes++;
  }

  /**
   * Phase 1: the active rules whose network, collection, kind, token ids and wallets admit the event,
   * each once. Rules with a token filter need the event to carry one of their tokens (a cancel that
   * names no token yet, only its order, is a candidate for all of them: check {@link admitsTokens}
   * once it is enriched); rules with a
   * wallet filter need one of their wallets among `accounts` (or `from` / `to`). Price and traits are
   * not checked here. Only the event's collection is visited. The event's token ids are expected in
   * canonical decimal form (as the classifier emits them). Rules that ignore a wallet involved in the
   * event are left out.
   */
  candidates(event: ChainEvent): MatchingRule[] {
    const bit = KIND_BIT[event.kind];
    const collections = this.#networks.get(event.network);
    const c = collections?.addresses.get(event.collection);
    if (bit === undefined || !collections || c === undefined) return [];
    const out: MatchingRule[] = [];
    const kinds = this.#kinds;
    let collection: CollectionFields | undefined;
    for (let slot = collections.head.get(c); slot !== NONE; slot = this.#next.get(slot)) {
      if (!(kinds.get(slot) & bit) || this.#ignores(slot, event)) continue;
      collection ??= this.#collectionOf(slot, event.collection);
      out.push(this.#candidate(slot, collection));
    }
    const filtered = collections.filtered.get(c);
    if (!filtered) return out;
    const seen = new Set<number>();
    const take = (slot: number): void => {
      if (seen.has(slot) || !(kinds.get(slot) & bit)) return;
      seen.add(slot);
      if (this.#ignores(slot, event)) return;
      collection ??= this.#collectionOf(slot, event.collection);
      out.push(this.#candidate(slot, collection));
    };
    const onToken = (slot: number): void => {
      const wallets = this.#filters(slot)?.wallets;
      if (!wallets || involves(wallets, event)) take(slot);
    };
    if (awaitsTokens(event)) {
      // Which token it was is known only once enrichment reads the order: see admitsTokens.
      for (const slots of filtered.byToken.values()) for (const slot of slots) onToken(slot);
    } else {
      for (const token of event.tokens) for (const slot of filtered.byToken.get(token.tokenId) ?? []) onToken(slot);
    }
    if (filtered.byWallet.size > 0) {
      const accounts = event.accounts;
      for (const account of accounts) for (const slot of filtered.byWallet.get(account) ?? []) take(slot);
      for (const wallet of [event.from, event.to]) {
        if (wallet === undefined || accounts.includes(wallet)) continue;
        for (const slot of filtered.byWallet.get(wallet) ?? []) take(slot);
      }
    }
    return out;
  }

  /** Networks with active rules. */
  networks(): string[] {
    return [...this.#networks.values()].filter((n) => n.addresses.size > 0).map((n) => n.name);
  }

  /**
   * Moves when the collections watched on a network change (not when rules of collections already
   * watched do): the streams' filter is planned again only then.
   */
  collectionsVersion(network: string): number {
    return this.#networks.get(network)?.version ?? 0;
  }

  /** How many collections active rules watch on a network. */
  collectionCount(network: string): number {
    return this.#networks.get(network)?.addresses.size ?? 0;
  }

  /**
   * The collections (lower-case) active rules watch on a network, in no particular order: what to
   * subscribe to. Each address is made as it is reached (a million of them need not exist at once).
   */
  *collections(network: string): IterableIterator<string> {
    const addresses = this.#networks.get(network)?.addresses;
    if (!addresses) return;
    for (const slot of addresses.slots()) {
      const address = addresses.address(slot);
      if (address !== undefined) yield address;
    }
  }

  /**
   * The collections active rules watch on a network, then `more` (the marketplace contracts), packed
   * in one buffer: what the network's streams subscribe to, made without a string per collection.
   */
  packedCollections(network: string, more: readonly string[] = []): PackedList {
    const addresses = this.#networks.get(network)?.addresses;
    return addresses ? addresses.list(more) : PackedAddresses.of(more);
  }

  /** Whether an active rule watches this collection on this network. */
  watches(network: string, collection: string): boolean {
    return this.#networks.get(network)?.addresses.get(collection) !== undefined;
  }

  #ignores(slot: number, event: ChainEvent): boolean {
    const ignored = this.#filters(slot)?.ignored;
    return ignored !== undefined && involves(ignored, event);
  }

  /** What the candidates of one collection share: made once per lookup. */
  #collectionOf(slot: number, address?: string): CollectionFields {
    const collections = this.#networkList[this.#network.get(slot)] as NetworkCollections;
    const c = this.#collection.get(slot);
    return {
      network: collections.name,
      // The event's spelling when it has one (the same address: no need to unpack it again).
      collection: address?.toLowerCase() ?? collections.addresses.address(c) ?? '',
      collectionName: collections.collectionName(c),
    };
  }

  #candidate(slot: number, collection: CollectionFields): MatchingRule {
    const rule: MatchingRule = {
      id: `r${this.#number.get(slot)}`,
      destination: this.#destination(this.#chat.get(slot)),
      network: collection.network,
      collection: collection.collection,
      collectionName: collection.collectionName,
      kinds: KIND_LISTS[this.#kinds.get(slot)] as AlertKind[],
    };
    const filters = this.#filters(slot);
    return filters ? Object.assign(rule, filters.fields) : rule;
  }

  #put(rule: WatchRule): void {
    const number = ruleNumber(rule.id);
    this.#delete(number);
    let kinds = 0;
    for (const kind of rule.kinds) kinds |= KIND_BIT[kind] ?? 0;
    if (rule.paused || kinds === 0) return;
    const collections = this.#collectionsOf(rule.network);
    const c = collections.slotFor(rule.collection, rule.collectionName);
    const slot = this.#ruleSlot();
    this.#ids.set(number, slot);
    this.#number.set(slot, number);
    this.#chat.set(slot, this.#chatSlot(rule.destination));
    this.#network.set(slot, this.#networkList.indexOf(collections));
    this.#collection.set(slot, c);
    this.#kinds.set(slot, kinds);
    this.#next.set(slot, NONE);
    const filters = this.#filtersOf(rule);
    this.#placeFilters(slot, filters);
    if (filters && (filters.tokens.length > 0 || filters.wallets)) {
      let filtered = collections.filtered.get(c);
      if (!filtered) {
        filtered = { byToken: new Map(), byWallet: new Map() };
        collections.filtered.set(c, filtered);
      }
      if (filters.tokens.length > 0) for (const token of filters.tokens) addTo(filtered.byToken, token, slot);
      else for (const wallet of filters.wallets ?? []) addTo(filtered.byWallet, wallet, slot);
      return;
    }
    const last = collections.tail.get(c);
    if (last === NONE) collections.head.set(c, slot);
    else this.#next.set(last, slot);
    collections.tail.set(c, slot);
  }

  #delete(number: number): boolean {
    const slot = this.#ids.get(number);
    if (slot === undefined) return false;
    this.#ids.delete(number);
    this.#free(slot);
    return true;
  }

  /** Takes a rule out of its collection and chat, and frees its slot (not its id). */
  #free(slot: number): void {
    const collections = this.#networkList[this.#network.get(slot)] as NetworkCollections;
    const c = this.#collection.get(slot);
    const filters = this.#filters(slot);
    const filtered = collections.filtered.get(c);
    if (filters && filtered && (filters.tokens.length > 0 || filters.wallets)) {
      if (filters.tokens.length > 0) for (const token of filters.tokens) removeFrom(filtered.byToken, token, slot);
      else for (const wallet of filters.wallets ?? []) removeFrom(filtered.byWallet, wallet, slot);
      if (filtered.byToken.size === 0 && filtered.byWallet.size === 0) collections.filtered.delete(c);
    } else {
      // The list is walked to the rule: removals are rare (a user command), lookups are not.
      let previous = NONE;
      for (let at = collections.head.get(c); at !== slot && at !== NONE; at = this.#next.get(at)) previous = at;
      const next = this.#next.get(slot);
      if (previous === NONE) collections.head.set(c, next);
      else this.#next.set(previous, next);
      if (next === NONE) collections.tail.set(c, previous);
    }
    collections.releaseIfEmpty(c);
    if (filters && !filters.shared) {
      this.#filterTable[filters.id - 1] = undefined;
      this.#freeFilterIds.push(filters.id);
    }
    this.#filterIds.set(slot, 0);
    const chat = this.#chat.get(slot);
    const left = this.#chatRules.get(chat) - 1;
    this.#chatRules.set(chat, left);
    if (left === 0) {
      this.#chats.delete(chat);
      this.#recentDestinations.delete(chat);
    }
    this.#freeRules.push(slot);
  }

  #ruleSlot(): number {
    return this.#freeRules.pop() ?? this.#ruleCount++;
  }

  #chatSlot(destination: Destination): number {
    const key = destinationKey(destination);
    let chat = this.#chats.get(key);
    if (chat === undefined) {
      chat = this.#chats.add(key);
      this.#chatRules.set(chat, 0);
    }
    this.#chatRules.set(chat, this.#chatRules.get(chat) + 1);
    return chat;
  }

  /**
   * A chat's destination, made from its key, and kept for the chats seen lately (a popular
   * collection's event reaches the same chats again and again; matchDestinations groups by object).
   */
  #destination(chat: number): Destination {
    let destination = this.#recentDestinations.get(chat);
    if (!destination) {
      const key = this.#chats.text(chat) ?? '';
      const colon = key.indexOf(':');
      destination = { platform: key.slice(0, colon) as Destination['platform'], chatId: key.slice(colon + 1) };
      if (this.#recentDestinations.size >= RECENT_DESTINATIONS) this.#recentDestinations.clear();
      this.#recentDestinations.set(chat, destination);
    }
    return destination;
  }

  #filters(slot: number): Filters | undefined {
    const id = this.#filterIds.get(slot);
    return id === 0 ? undefined : this.#filterTable[id - 1];
  }

  #placeFilters(slot: number, filters: Filters | undefined): void {
    if (filters && filters.id === 0) {
      const id = this.#freeFilterIds.pop() ?? this.#filterTable.length + 1;
      filters.id = id;
      this.#filterTable[id - 1] = filters;
    }
    this.#filterIds.set(slot, filters?.id ?? 0);
  }

  #filtersOf(rule: WatchRule): Filters | undefined {
    const filters = filtersOf(rule);
    if (!filters || filters.tokens.length > 0 || filters.wallets || filters.ignored || filters.fields.traits) {
      return filters;
    }
    const key = JSON.stringify(filters.fields);
    const shared = this.#sharedFilters.get(key);
    if (shared) return shared;
    filters.shared = true;
    this.#sharedFilters.set(key, filters);
    return filters;
  }

  #collectionsOf(network: string): NetworkCollections {
    let collections = this.#networks.get(network);
    if (!collections) {
      if (this.#networkList.length >= 0xffff) throw new RangeError('too many networks');
      collections = new NetworkCollections(network);
      this.#networks.set(network, collections);
      this.#networkList.push(collections);
    }
    return collections;
  }
}

function ruleNumber(id: string): number {
  const number = /^r\d+$/.test(id) ? Number(id.slice(1)) : Number.NaN;
  if (!(number <= 0xffff_ffff)) throw new TypeError(`not a rule id: ${id}`);
  return number;
}

function filtersOf(rule: WatchRule): Filters | undefined {
  let fields: FilterFields | undefined;
  for (const name of FILTER_FIELDS) {
    const value = rule[name];
    if (value === undefined || (Array.isArray(value) && value.length === 0)) continue;
    fields ??= {};
    (fields as Record<string, unknown>)[name] = value;
  }
  if (!fields) return undefined;
  const tokens = unique(rule.tokenIds, normaliseTokenId);
  const wallets = unique(rule.wallets, lowerWallet);
  const ignored = unique(rule.ignoreWallets, lowerWallet);
  return {
    fields,
    tokens: tokens.length > 0 ? tokens : NO_TOKENS,
    wallets: wallets.length > 0 ? new Set(wallets) : undefined,
    ignored: ignored.length > 0 ? new Set(ignored) : undefined,
    shared: false,
    id: 0,
  };
}

function involves(wallets: ReadonlySet<string>, event: ChainEvent): boolean {
  for (const account of event.accounts) if (wallets.has(account)) return true;
  return (event.from !== undefined && wallets.has(event.from)) || (event.to !== undefined && wallets.has(event.to));
}

/** A cancel names the request it cancels, not the token: its tokens are learnt from the order. */
function awaitsTokens(event: ChainEvent): boolean {
  return event.kind === 'cancel' && event.tokens.length === 0;
}

/**
 * Whether a candidate's token filter admits an event whose tokens were learnt after phase 1 (a
 * cancel, see {@link RuleIndex.candidates}): `event` as classified, `tokens` as enriched. True for
 * every other event, and for rules on no tokens.
 */
export function admitsTokens(rule: MatchingRule, event: ChainEvent, tokens: readonly { tokenId: string }[]): boolean {
  if (!awaitsTokens(event) || !rule.tokenIds?.length) return true;
  const wanted = new Set(rule.tokenIds.map(normaliseTokenId));
  return tokens.some((token) => wanted.has(normaliseTokenId(token.tokenId)));
}
