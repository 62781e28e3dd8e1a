import type { CollectionState } from './collection.ts';
import type { OrderRecord, Side } from './model.ts';
import type { OrderBook } from './orderbook.ts';
import type { SortKey } from './paging.ts';

/** A property constraint resolved against a collection's traits. */
export type PropertyConstraint =
  | { kind: 'string'; trait: number; allowed: Uint8Array }
  | { kind: 'intset'; trait: number; allowed: Uint8Array }
  | { kind: 'int'; trait: number; min: number; max: number }
  | { kind: 'none' };

export interface PriceRange {
  currency: string;
  min: bigint | undefined;
  max: bigint | undefined;
}

/** Which orders count when choosing a collectible's best order. */
export interface OrderConstraints {
  marketplaces?: ReadonlySet<number>;
  createdBy?: ReadonlySet<string>;
  notCreatedBy?: ReadonlySet<string>;
  currencies?: ReadonlySet<string>;
  notCurrencies?: ReadonlySet<string>;
  /** OR across ranges. */
  prices?: readonly PriceRange[];
}

export interface CollectiblesQuery {
  side: Side;
  includeEmpty: boolean;
  searchText: string | undefined;
  properties: readonly PropertyConstraint[];
  inAccounts: ReadonlySet<number> | undefined;
  notInAccounts: ReadonlySet<number> | undefined;
  orders: OrderConstraints;
  sort: readonly SortKey[];
}

export interface CollectibleEntry {
  index: number;
  best: OrderRecord | undefined;
}

interface SideCache {
  version: number;
  /** Tokens with an active order on the side, best order first by the side's natural order. */
  entries: CollectibleEntry[];
  hasOrder: Uint8Array;
}

export const PRICE_COLUMNS: Readonly<Record<string, string>> = {
  price: 'price',
  priceUSD: 'price',
  price_usd: 'price',
  tokenId: 'tokenId',
  token_id: 'tokenId',
  createdAt: 'createdAt',
  created_at: 'createdAt',
  name: 'name',
};

export function hasOrderConstraints(c: OrderConstraints): boolean {
  return (
    c.marketplaces !== undefined ||
    c.createdBy !== undefined ||
    c.notCreatedBy !== undefined ||
    c.currencies !== undefined ||
    c.notCurrencies !== undefined ||
    c.prices !== undefined
  );
}

export function orderPasses(order: OrderRecord, c: OrderConstraints): boolean {
  if (c.marketplaces && !c.marketplaces.has(order.marketplace)) return false;
  if (c.createdBy && !c.createdBy.has(order.maker)) return false;
  if (c.notCreatedBy?.has(order.maker)) return false;
  if (c.currencies && !c.currencies.has(order.currency.address)) return false;
  if (c.notCurrencies?.has(order.currency.address)) return false;
  if (c.prices) {
    const inRange = c.prices.some(
      (range) =>
        range.currency === order.currency.address &&
        (range.min === undefined || order.price >= range.min) &&
        (range.max === undefined || order.price <= range.max),
    );
    if (!inRange) return false;
  }
  return true;
}

/** The best order of one side of a token that passes the constraints (the book keeps sides sorted). */
export function bestOrder(
  book: OrderBook,
  collection: CollectionState,
  index: number,
  side: Side,
  constraints: OrderConstraints,
): OrderRecord | undefined {
  for (const order of book.side(collection.address, index, side)) {
    if (orderPasses(order, constraints)) return order;
  }
  return undefined;
}

function compareTokenIds(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}

/**
 * Answers ListCollectibles over one collection: tokens that pass the filters, each with its best
 * order on the requested side (lowest listing, highest offer, by USD value), sorted, tokens
 * without an order last. Without order constraints it works from a per-side cache rebuilt only
 * when the collection changed, so a property filter over 10,000 tokens is one linear scan.
 */
export class CollectiblesIndex {
  readonly #caches = new Map<string, SideCache>();

  query(book: OrderBook, collection: CollectionState, q: CollectiblesQuery): CollectibleEntry[] {
    const passes = this.#tokenPredicate(collection, q);
    const constrained = hasOrderConstraints(q.orders);
    const withOrder: CollectibleEntry[] = [];
    let hasOrder: Uint8Array;
    if (!constrained) {
      const cache = this.#cache(book, collection, q.side);
      hasOrder = cache.hasOrder;
      for (const entry of cache.entries) if (passes(entry.index)) withOrder.push(entry);
    } else {
      hasOrder = new Uint8Array(collection.size);
      for (const index of book.activeTokens(collection.address).keys()) {
        if (!passes(index)) continue;
        const best = bestOrder(book, collection, index, q.side, q.orders);
        if (!best) continue;
        hasOrder[index] = 1;
        withOrder.push({ index, best });
      }
      withOrder.sort(naturalOrder(q.side));
    }
    const natural =
      q.sort.length === 1 &&
      q.sort[0]?.column === 'price' &&
      q.sort[0].order === (q.side === 'listing' ? 'ASC' : 'DESC');
    if (!natural) withOrder.sort(this.#comparator(collection, q.sort));
    if (!q.includeEmpty) return withOrder;
    const empty: CollectibleEntry[] = [];
    for (let index = 0; index < collection.size; index++) {
      if (hasOrder[index] !== 1 && passes(index)) empty.push({ index, best: undefined });
    }
    if (q.sort.some((key) => key.column !== 'price')) empty.sort(this.#comparator(collection, q.sort));
    return withOrder.concat(empty);
  }

  #cache(book: OrderBook, collection: CollectionState, side: Side): SideCache {
    const key = `${collection.address}:${side}`;
    const cached = this.#caches.get(key);
    if (cached && cached.version === collection.version && cached.hasOrder.length === collection.size) return cached;
    const entries: CollectibleEntry[] = [];
    const hasOrder = new Uint8Array(collection.size);
    for (const [index, orders] of book.activeTokens(collection.address)) {
      const best = side === 'listing' ? orders.listings[0] : orders.offers[0];
      if (!best) continue;
      hasOrder[index] = 1;
      entries.push({ index, best });
    }
    entries.sort(naturalOrder(side));
    const cache = { version: collection.version, entries, hasOrder };
    this.#caches.set(key, cache);
    return cache;
  }

  #tokenPredicate(collection: CollectionState, q: CollectiblesQuery): (index: number) => boolean {
    const checks: Array<(index: number) => boolean> = [];
    for (const property of q.properties) {
      if (property.kind === 'none') return () => false;
      if (property.kind === 'string' || property.kind === 'intset') {
        const values =
          property.kind === 'string'
            ? collection.traitValues[property.trait]
            : collection.numericValues[property.trait];
        const allowed = property.allowed;
        if (!values) return () => false;
        checks.push((index) => allowed[values[index] ?? 255] === 1);
      } else {
        const values = collection.numericValues[property.trait];
        const { min, max } = property;
        if (!values) return () => false;
        checks.push((index) => {
          const v = values[index] ?? 0;
          return v >= min && v <= max;
        });
      }
    }
    const search = q.searchText?.trim().toLowerCase();
    if (search) {
      checks.push(
        (index) => collection.tokenId(index) === search || collection.tokenName(index).toLowerCase().includes(search),
      );
    }
    const inAccounts = q.inAccounts;
    if (inAccounts) checks.push((index) => collection.heldByAny(index, inAccounts));
    const notInAccounts = q.notInAccounts;
    if (notInAccounts) checks.push((index) => !collection.heldByAny(index, notInAccounts));
    const standard721 = collection.standard === 'ERC721';
    return (index) => {
      if (standard721 && collection.ownerOf(index) < 0) return false;
      for (const check of checks) if (!check(index)) return false;
      return true;
    };
  }

  #comparator(collection: CollectionState, sort: readonly SortKey[]) {
    return (a: CollectibleEntry, b: CollectibleEntry): number => {
      for (const key of sort) {
        let diff = 0;
        if (key.column === 'price') {
          const x = a.best?.priceUsd;
          const y = b.best?.priceUsd;
          if (x === undefined || y === undefined) return x === y ? 0 : x === undefined ? 1 : -1;
          diff = x - y;
        } else if (key.column === 'createdAt') {
          diff = (a.best?.createdAt ?? 0) - (b.best?.createdAt ?? 0);
        } else if (key.column === 'name') {
          diff = collection.tokenName(a.index).localeCompare(collection.tokenName(b.index));
        } else {
          diff = compareTokenIds(collection.tokenId(a.index), collection.tokenId(b.index));
        }
        if (diff !== 0) return key.order === 'ASC' ? diff : -diff;
      }
      return a.index - b.index;
    };
  }
}

function naturalOrder(side: Side): (a: CollectibleEntry, b: CollectibleEntry) => number {
  return side === 'listing'
    ? (a, b) => (a.best?.priceUsd ?? 0) - (b.best?.priceUsd ?? 0) || a.index - b.index
    : (a, b) => (b.best?.priceUsd ?? 0) - (a.best?.priceUsd ?? 0) || a.index - b.index;
}
