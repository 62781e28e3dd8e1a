import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { formatUnits } from 'viem';
import { type CurrencyDirectory, NATIVE_CURRENCY } from '../market/currencies.ts';
import { displayAmount, marketplaceName, traitsOf } from '../market/format.ts';
import type { Links } from '../market/links.ts';
import type { PlatformClient } from '../platform/client.ts';
import type { MarketplaceKind, Order, TokenMetadata } from '../platform/types.ts';
import type { AlertDetails, TokenDetails } from './render.ts';
import type { PriceInfo } from './rule-filters.ts';
import type { ChainEvent, EventToken } from './types.ts';

/** The platform's own marketplace, which emits the Request* events. */
const OWN_MARKETPLACE: MarketplaceKind = 'sequence_marketplace_v2';

/** Tokens of a sweep or batch whose metadata is fetched; the rest are listed by id. */
const MAX_TOKENS_FETCHED = 10;

/** A collection's cheapest listings are fetched again once older than this. */
const BOOK_FRESH_MS = 30_000;
/**
 * How old a floor may be to set an alert in context ("63% below floor") when no rule depends on it:
 * such an alert does not wait for a fresher one (it is fetched for the next alerts).
 */
const BOOK_CONTEXT_MS = 5 * 60_000;

export interface EnrichOptions {
  /**
   * Wait for a floor at most 30 s old: some candidate rule has a floor percentage. Without it, sale
   * and listing alerts still get the floor for context, from a lookup up to 5 minutes old.
   */
  floor?: boolean;
}

/** The cheapest listings of a collection (order id, USD per token) as fetched at `at`. */
interface Book {
  at: number;
  entries: Array<{ orderId: string; usd: number }>;
}

/** An event with its details, and the price as a decimal for minimum-price filters. */
export interface EnrichedEvent {
  details: AlertDetails;
  /** The collection's floor as looked up (its cheapest listing, USD per token, and when), for the market history. */
  floorSample?: { usd: number; at: number };
  /** Total price in currency units (decimal string) and in USD, per token in USD, and the floor, when known. */
  price: PriceInfo | undefined;
  /** Traits per token (for trait filters), in token order; undefined where unknown. */
  traits: Array<Array<{ name: string; value: string }> | undefined>;
  /** What could not be fetched, for the log. */
  missing: string[];
}

/**
 * Fetches, once per event whatever the number of chats, what an alert shows: the orders behind it
 * (price, currency, USD, marketplace) and each token's name, image and traits. Token metadata is
 * cached (bounded); a failed lookup leaves that part out rather than holding the alert back.
 */
export class Enricher {
  readonly #platform: PlatformClient;
  readonly #currencies: CurrencyDirectory;
  readonly #logger: Logger;
  readonly #tokens = new LRUCache<string, TokenMetadata>({ max: 5_000, ttl: 10 * 60_000 });
  /** The cheapest listings of a collection, briefly: floors move. */
  readonly #books = new LRUCache<string, Book>({ max: 1_000, ttl: BOOK_CONTEXT_MS });
  readonly #fetchingBooks = new Map<string, Promise<Book>>();

  readonly #links: Links | undefined;

  /** `links`, when given, adds the token page, the transaction page and where to buy a listing. */
  constructor(platform: PlatformClient, currencies: CurrencyDirectory, logger: Logger, links?: Links) {
    this.#platform = platform;
    this.#currencies = currencies;
    this.#logger = logger;
    this.#links = links;
  }

  /** Links need no platform call: even an alert sent without its details has them. */
  #linksOf(event: ChainEvent, orders: readonly Order[]): AlertDetails['links'] {
    const links = this.#links;
    if (!links) return undefined;
    const out: NonNullable<AlertDetails['links']> = {};
    const only = event.tokens.length === 1 ? event.tokens[0] : undefined;
    const token = only && links.token(event.network, event.collection, only.tokenId);
    if (token) out.token = token;
    const transaction = links.transaction(event.network, event.txnHash);
    if (transaction) out.transaction = transaction;
    // Listings are RequestCreated logs of the platform's own marketplace contract.
    const listing = event.kind === 'listing' && only ? (orders[0] ?? { marketplace: OWN_MARKETPLACE }) : undefined;
    const buy = listing && only && links.order(event.network, event.collection, only.tokenId, listing);
    if (buy) out.buy = buy;
    return out.token || out.transaction || out.buy ? out : undefined;
  }

  /**
   * Like {@link enrich}, but gives up after `limitMs` and returns the event with what the chain
   * says alone: an event is journaled only once enriched, and until then a crash would lose it.
   */
  async enrichWithin(
    event: ChainEvent,
    collectionName: string,
    limitMs: number,
    options: EnrichOptions = {},
  ): Promise<EnrichedEvent> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<EnrichedEvent>((resolve) => {
      timer = setTimeout(() => {
        this.#logger.warn({ event: event.id, limitMs }, 'enrichment too slow: alert sent without its details');
        resolve(this.bare(event, collectionName));
      }, limitMs);
    });
    try {
      return await Promise.race([this.enrich(event, collectionName, options), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The event with what the chain says alone (no platform calls). */
  bare(event: ChainEvent, collectionName: string): EnrichedEvent {
    const links = this.#linksOf(event, []);
    return {
      details: {
        event,
        collectionName,
        tokens: event.tokens.map((t) => ({ tokenId: t.tokenId, amount: t.amount })),
        ...(links ? { links } : {}),
      },
      price: undefined,
      traits: event.tokens.map(() => undefined),
      missing: ['everything (timed out)'],
    };
  }

  async enrich(chainEvent: ChainEvent, collectionName: string, options: EnrichOptions = {}): Promise<EnrichedEvent> {
    const missing: string[] = [];
    let event = chainEvent;
    let cancelled: Order[] | undefined;
    if (event.kind === 'cancel' && event.tokens.length === 0) {
      // RequestCancelled names the request, not the token: its order does (fetched once, and first).
      cancelled = await this.#ordersOrNone(event, missing);
      const tokens = tokensOf(cancelled);
      if (tokens.length > 0) event = { ...event, tokens };
    }
    const wantsFloor = event.kind === 'sale' || event.kind === 'listing';
    const [orders, metadata, book] = await Promise.all([
      cancelled ?? this.#ordersOrNone(event, missing),
      Promise.all(
        event.tokens.map((token, index) =>
          index < MAX_TOKENS_FETCHED
            ? this.#token(event, token.tokenId).catch((error: unknown) => {
                missing.push(`token ${token.tokenId}`);
                this.#logger.debug({ event: event.id, err: error }, 'could not fetch token metadata');
                return undefined;
              })
            : Promise.resolve(undefined),
        ),
      ),
      wantsFloor
        ? this.#book(event, options.floor === true ? BOOK_FRESH_MS : BOOK_CONTEXT_MS).catch((error: unknown) => {
            // Only a rule makes the floor a detail that is missing; for context it is a nicety.
            if (options.floor) {
              missing.push('floor');
              this.#logger.warn({ event: event.id, err: error }, 'could not fetch the floor of a collection');
            }
            return undefined;
          })
        : Promise.resolve(undefined),
    ]);
    const floorUsd = book && floorOf(book, event.orderIds);

    const tokens: TokenDetails[] = event.tokens.map((token, index) => {
      const meta = metadata[index];
      const details: TokenDetails = { tokenId: token.tokenId, amount: token.amount };
      if (meta?.name) details.name = meta.name;
      if (meta?.image) details.image = meta.image;
      if (meta) details.traits = traitsOf(meta);
      return details;
    });
    const details: AlertDetails = { event, collectionName, tokens };
    if (floorUsd !== undefined) details.floorUsd = floorUsd;
    const links = this.#linksOf(event, orders);
    if (links) details.links = links;
    let price: EnrichedEvent['price'];
    const priced = await this.#price(event, orders);
    if (priced) {
      details.price = {
        amount: priced.display,
        symbol: priced.symbol,
        ...(priced.usd === undefined ? {} : { usd: priced.usd }),
        ...(priced.more ? { more: priced.more } : {}),
      };
      const units = event.tokens.reduce((sum, t) => sum + (Number(t.amount) || 1), 0);
      price = {
        amount: priced.amount,
        usd: priced.usd,
        usdPerToken: priced.usd === undefined ? undefined : priced.usd / Math.max(1, units),
        floorUsd,
        currency: priced.currency,
        usdRate: (currency) => this.#currencies.lastUsdRate(event.network, currency),
      };
    }
    const first = orders[0];
    const side = first?.side;
    if (event.kind === 'cancel' && (side === 'listing' || side === 'offer') && orders.every((o) => o.side === side)) {
      details.cancelled = side;
    }
    if (first) details.marketplace = marketplaceName(first);
    // Request events come from the platform's own marketplace contract.
    else if (this.#pricedByChain(event)) details.marketplace = marketplaceName({ marketplace: OWN_MARKETPLACE });
    this.#noteOrders(event, orders);
    const sample = book && floorOf(book, []);
    return {
      details,
      price,
      traits: tokens.map((t) => t.traits),
      missing,
      ...(book && sample !== undefined ? { floorSample: { usd: sample, at: book.at } } : {}),
    };
  }

  /**
   * The cheapest listings of the event's collection, fetched at most `maxAgeMs` ago. One older than
   * 30 s but young enough is returned at once and fetched again for the next events.
   */
  async #book(event: ChainEvent, maxAgeMs: number): Promise<Book> {
    const key = `${event.network}:${event.collection}`;
    const cached = this.#books.get(key);
    const age = cached ? Date.now() - cached.at : Number.POSITIVE_INFINITY;
    if (cached && age < BOOK_FRESH_MS) return cached;
    let fetching = this.#fetchingBooks.get(key);
    if (!fetching) {
      fetching = this.#fetchBook(event).finally(() => this.#fetchingBooks.delete(key));
      this.#fetchingBooks.set(key, fetching);
    }
    if (cached && age < maxAgeMs) {
      fetching.catch((error: unknown) =>
        this.#logger.debug({ event: event.id, err: error }, 'could not fetch the floor of a collection'),
      );
      return cached;
    }
    return fetching;
  }

  /**
   * Keeps the cached cheapest listings in step with what the stream shows between two fetches: the
   * orders of a sale or a cancel leave it (an order a sweep just filled is no floor), a new listing
   * joins it. Without this the floor of the next alerts, for up to 5 minutes, could be an order sold
   * seconds before. A partly filled order leaves too, until the next fetch brings it back.
   */
  #noteOrders(event: ChainEvent, orders: readonly Order[]): void {
    const key = `${event.network}:${event.collection}`;
    const book = this.#books.get(key);
    if (!book) return;
    let entries = book.entries;
    if (event.kind === 'sale' || event.kind === 'cancel') {
      const gone = new Set(event.orderIds);
      entries = entries.filter((entry) => !gone.has(entry.orderId));
    } else if (event.kind === 'listing') {
      const listed = orders.filter((o) => o.side === 'listing' && o.priceUSD > 0);
      const ids = new Set(listed.map((o) => o.orderId));
      entries = [
        ...entries.filter((entry) => !ids.has(entry.orderId)),
        ...listed.map((o) => ({ orderId: o.orderId, usd: o.priceUSD })),
      ];
    }
    if (entries !== book.entries) this.#books.set(key, { at: book.at, entries }, { noUpdateTTL: true });
  }

  async #fetchBook(event: ChainEvent): Promise<Book> {
    const at = Date.now();
    const { collectibles } = await this.#platform.marketplace.listCollectibles({
      network: event.network,
      side: 'listing',
      contractAddress: event.collection,
      filter: { includeEmpty: false },
      page: { pageSize: 20 },
    });
    const entries = collectibles
      .map((c) => c.order)
      .filter((o): o is Order => o !== undefined && o.priceUSD > 0)
      .map((o) => ({ orderId: o.orderId, usd: o.priceUSD }));
    const book = { at, entries };
    this.#books.set(`${event.network}:${event.collection}`, book);
    return book;
  }

  /** The orders of an event; none when they cannot be fetched (said in `missing` and the log). */
  #ordersOrNone(event: ChainEvent, missing: string[]): Promise<Order[]> {
    return this.#orders(event).catch((error: unknown) => {
      missing.push('orders');
      this.#logger.warn({ event: event.id, err: error }, 'could not fetch the orders of an event');
      return [] as Order[];
    });
  }

  async #orders(event: ChainEvent): Promise<Order[]> {
    if (event.orderIds.length === 0 || this.#pricedByChain(event)) return [];
    const { orders } = await this.#platform.marketplace.getOrders({
      network: event.network,
      input: event.orderIds.map((orderId) => ({ contractAddress: event.collection, orderId })),
    });
    for (const order of orders) this.#currencies.learn(event.network, order);
    return orders;
  }

  /**
   * A listing or offer states its price on chain; once its currency's decimals and a recent USD
   * rate are known, the order lookup adds nothing but time.
   */
  #pricedByChain(event: ChainEvent): { amount: string; usd: number } | undefined {
    if ((event.kind !== 'listing' && event.kind !== 'offer') || !event.price || !/^\d+$/.test(event.price.perToken)) {
      return undefined;
    }
    const decimals = this.#currencies.decimals(event.network, event.price.currency);
    const rate = this.#currencies.usdRate(event.network, event.price.currency);
    if (decimals === undefined || rate === undefined) return undefined;
    const units = BigInt(event.tokens[0]?.amount ?? '1');
    const amount = formatUnits(BigInt(event.price.perToken) * units, decimals);
    return { amount, usd: Number(amount) * rate };
  }

  async #token(event: ChainEvent, tokenId: string): Promise<TokenMetadata> {
    const key = `${event.network}:${event.collection}:${tokenId}`;
    const cached = this.#tokens.get(key);
    if (cached) return cached;
    const metadata = await this.#platform.marketplace.getCollectible({
      network: event.network,
      contractAddress: event.collection,
      tokenId,
    });
    this.#tokens.set(key, metadata);
    return metadata;
  }

  /**
   * Total price: for a sale, each order's price per token times the units bought of its token;
   * for a listing or offer, its order (or, when the platform does not know it yet, the price the
   * event states, in the currency's units when the currency is the native coin).
   */
  async #price(
    event: ChainEvent,
    orders: readonly Order[],
  ): Promise<
    | {
        amount: string;
        display: string;
        symbol: string;
        usd: number | undefined;
        /** Lower-case address of the one currency paid; undefined for several. */
        currency: string | undefined;
        more?: Array<{ amount: string; symbol: string }>;
      }
    | undefined
  > {
    if (orders.length > 0) {
      // A sweep may pay in several currencies: a total per currency, and one US dollar total.
      const byCurrency = new Map<string, { raw: bigint; decimals: number }>();
      let usd = 0;
      let usdKnown = true;
      for (const order of orders) {
        const units = BigInt(
          event.kind === 'sale'
            ? (event.tokens.find((t) => t.tokenId === order.tokenId)?.amount ?? '1')
            : (event.tokens[0]?.amount ?? '1'),
        );
        const currency = order.priceCurrencyAddress.toLowerCase();
        const total = byCurrency.get(currency) ?? { raw: 0n, decimals: order.priceDecimals ?? 18 };
        total.raw += BigInt(order.priceAmount || '0') * units;
        byCurrency.set(currency, total);
        if (order.priceUSD > 0) usd += order.priceUSD * Number(units);
        else usdKnown = false;
      }
      const totals = await Promise.all(
        [...byCurrency].map(async ([currency, total]) => {
          const amount = formatUnits(total.raw, total.decimals);
          return {
            amount,
            display: displayAmount(amount),
            symbol: await this.#currencies.symbol(event.network, currency),
          };
        }),
      );
      const [first, ...others] = totals as [(typeof totals)[number], ...typeof totals];
      return {
        amount: first.amount,
        display: first.display,
        symbol: first.symbol,
        usd: usdKnown && usd > 0 ? usd : undefined,
        currency: byCurrency.size === 1 ? byCurrency.keys().next().value : undefined,
        ...(others.length ? { more: others.map((o) => ({ amount: o.display, symbol: o.symbol })) } : {}),
      };
    }
    const chain = this.#pricedByChain(event);
    if (chain && event.price) {
      const symbol = await this.#currencies.symbol(event.network, event.price.currency);
      return {
        amount: chain.amount,
        display: displayAmount(chain.amount),
        symbol,
        usd: chain.usd,
        currency: event.price.currency.toLowerCase(),
      };
    }
    if (event.price && /^0x0{40}$/i.test(event.price.currency)) {
      const units = BigInt(event.tokens[0]?.amount ?? '1');
      const amount = formatUnits(BigInt(event.price.perToken) * units, 18);
      const symbol = await this.#currencies.symbol(event.network, event.price.currency);
      return { amount, display: displayAmount(amount), symbol, usd: undefined, currency: NATIVE_CURRENCY };
    }
    return undefined;
  }
}

/**
 * The tokens of orders, each once, with the units the order still offered (1 for ERC-721; a
 * collection-wide offer names no token).
 */
function tokensOf(orders: readonly Order[]): EventToken[] {
  const tokens: EventToken[] = [];
  for (const order of orders) {
    if (order.tokenId === undefined || !/^\d+$/.test(order.tokenId)) continue;
    if (tokens.some((t) => t.tokenId === order.tokenId)) continue;
    const units = [order.quantityRemaining, order.quantityInitial].find(
      (q) => (order.quantityDecimals ?? 0) === 0 && /^\d+$/.test(q ?? '') && BigInt(q) > 0n,
    );
    tokens.push({ tokenId: order.tokenId, amount: units ?? '1' });
  }
  return tokens;
}

/** The floor in USD per token: the cheapest listing that is not one of `orderIds` (the event's own). */
function floorOf(book: Book, orderIds: readonly string[]): number | undefined {
  let floor: number | undefined;
  for (const entry of book.entries) {
    if (orderIds.includes(entry.orderId)) continue;
    if (floor === undefined || entry.usd < floor) floor = entry.usd;
  }
  return floor;
}
