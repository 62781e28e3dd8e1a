/**
 * What the alert path tells the market history (core/market.ts): every sale the streams show,
 * whether a rule matched it or not, priced in batches; the floors enrichment looks up; reorgs.
 *
 * ## Off the alert path
 *
 * The alert path's calls only push to memory. Every `flushMs` the sales gathered are priced and
 * written to the history with one call.
 *
 * ## Prices
 *
 * RequestAccepted logs carry no price. Sales are priced in batches: one GetOrders call per network
 * and flush, for every sale gathered (matched by a rule or not), at most
 * {@link MAX_ORDERS_PER_CALL} orders each. That bounds the platform calls to one per network every
 * couple of seconds whatever the sales rate, where a call per sale would grow with the marketplace,
 * and it prices the sales of collections nobody watches, which /collection needs as much. A sale
 * whose orders the platform does not return, or whose pricing fails, is recorded with its count
 * only. Sales waiting for a price are bounded ({@link MAX_UNPRICED_SALES}): beyond, they are
 * recorded unpriced at once. A crash loses the last `flushMs` of sales.
 */
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import type { MarketHistory, RecordedSale, TokenSale } from '../core/market.ts';
import type { PlatformClient } from '../platform/client.ts';
import type { Order } from '../platform/types.ts';
import type { ChainEvent } from './types.ts';

/** Orders priced by one GetOrders call; the sales beyond wait for the next flush. */
export const MAX_ORDERS_PER_CALL = 200;
/** Sales waiting for their price; beyond, a sale is recorded without one. */
export const MAX_UNPRICED_SALES = 2_000;

export interface MarketRecorderOptions {
  history: MarketHistory;
  /** Prices sales (GetOrders); without it every sale is recorded with its count only. */
  platform?: PlatformClient | undefined;
  logger: Logger;
  /** Sales gathered this long are priced and written together. Default 2 s. */
  flushMs?: number | undefined;
  now?: () => number;
}

interface Unpriced {
  key: string;
  event: ChainEvent;
  /** Reorganised away while waiting. */
  cancelled?: boolean;
}

const saleKey = (network: string, txnHash: string, collection: string) =>
  `${network}:${txnHash.toLowerCase()}:${collection.toLowerCase()}`;

/** Gathers, prices and writes the sales the streams show; passes floors and reorgs on. See the module comment. */
export class MarketRecorder {
  readonly #o: MarketRecorderOptions;
  readonly #now: () => number;
  /** Sales gathered lately, so that an event seen twice (a stream resumed) is priced once. */
  readonly #seen = new LRUCache<string, true>({ max: 20_000 });
  #unpriced: Unpriced[] = [];
  /** Sales whose price is being looked up. */
  #pricing: Unpriced[] = [];
  #writes: Promise<void> = Promise.resolve();
  #flushing: Promise<void> | undefined;
  readonly #timer: NodeJS.Timeout;
  #closed = false;

  constructor(options: MarketRecorderOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#timer = setInterval(() => void this.flush(), options.flushMs ?? 2_000);
    this.#timer.unref();
  }

  /** A sale the streams showed; priced and written later, in a batch. */
  sale(event: ChainEvent): void {
    if (this.#closed || event.kind !== 'sale' || (event.tokens.length === 0 && event.orderIds.length === 0)) return;
    const key = saleKey(event.network, event.txnHash, event.collection);
    if (this.#seen.has(key)) return;
    this.#seen.set(key, true);
    if (this.#unpriced.length >= MAX_UNPRICED_SALES || !this.#o.platform || event.orderIds.length === 0) {
      this.#write([saleOf(event, new Map(), this.#now)]);
      return;
    }
    this.#unpriced.push({ key, event });
  }

  /** The floor of a collection as enrichment looked it up at `at` (ms). */
  floor(network: string, collection: string, usd: number, at: number): void {
    void this.#o.history.floor(network, collection, usd, at);
  }

  /** A transaction reorganised away: its sales did not happen. */
  reorged(network: string, txnHash: string): void {
    const tx = txnHash.toLowerCase();
    const waiting = (u: Unpriced) => u.event.network === network && u.event.txnHash.toLowerCase() === tx;
    for (const u of [...this.#unpriced, ...this.#pricing]) {
      if (!waiting(u)) continue;
      u.cancelled = true;
      this.#seen.delete(u.key);
    }
    this.#unpriced = this.#unpriced.filter((u) => !u.cancelled);
    // After the sales already on their way: a reorg must not overtake the sale it removes.
    this.#writes = this.#writes.then(() =>
      this.#o.history
        .reorged(network, txnHash)
        .catch((error: unknown) => this.#o.logger.warn({ err: error }, 'could not remove reorganised sales')),
    );
  }

  /** The last recorded sale of a token, when the history has one. */
  lastSale(network: string, collection: string, tokenId: string): Promise<TokenSale | undefined> {
    return this.#o.history.lastSale(network, collection, tokenId);
  }

  /** Prices the sales gathered so far and writes them (the timer calls it; tests and shutdown too). */
  flush(): Promise<void> {
    if (this.#flushing) return this.#flushing.then(() => this.flush());
    if (this.#unpriced.length === 0) return this.#writes;
    this.#flushing = this.#price().finally(() => {
      this.#flushing = undefined;
    });
    return this.#flushing.then(() => this.#writes);
  }

  /** Writes what is gathered (unpriced if pricing fails); the history stays open (its owner closes it). */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    while (this.#unpriced.length > 0 || this.#flushing) await this.flush();
    this.#closed = true;
    await this.#writes;
  }

  #write(sales: RecordedSale[]): void {
    if (sales.length === 0) return;
    this.#writes = this.#writes.then(() =>
      this.#o.history
        .addSales(sales)
        .catch((error: unknown) =>
          this.#o.logger.warn({ sales: sales.length, err: error }, 'could not record sales in the market history'),
        ),
    );
  }

  async #price(): Promise<void> {
    const byNetwork = new Map<string, { items: Unpriced[]; orders: number }>();
    const taken: Unpriced[] = [];
    const rest: Unpriced[] = [];
    for (const item of this.#unpriced) {
      const batch = byNetwork.get(item.event.network) ?? { items: [], orders: 0 };
      if (batch.items.length > 0 && batch.orders + item.event.orderIds.length > MAX_ORDERS_PER_CALL) {
        rest.push(item);
        continue;
      }
      batch.items.push(item);
      batch.orders += item.event.orderIds.length;
      byNetwork.set(item.event.network, batch);
      taken.push(item);
    }
    this.#unpriced = rest;
    this.#pricing = taken;
    const sales: RecordedSale[] = [];
    await Promise.all(
      [...byNetwork].map(async ([network, { items }]) => {
        const orders = await this.#orders(network, items);
        for (const item of items) if (!item.cancelled) sales.push(saleOf(item.event, orders, this.#now));
      }),
    );
    this.#pricing = [];
    this.#write(sales);
  }

  async #orders(network: string, items: readonly Unpriced[]): Promise<Map<string, Order>> {
    const platform = this.#o.platform;
    const found = new Map<string, Order>();
    if (!platform) return found;
    try {
      const { orders } = await platform.marketplace.getOrders({
        network,
        input: items.flatMap(({ event }) =>
          event.orderIds.map((orderId) => ({ contractAddress: event.collection, orderId })),
        ),
        page: { pageSize: MAX_ORDERS_PER_CALL },
      });
      for (const order of orders) found.set(order.orderId, order);
    } catch (error) {
      this.#o.logger.warn({ network, sales: items.length, err: error }, 'could not price sales: counted only');
    }
    return found;
  }
}

/** A sale as recorded, priced from `orders` where they tell. */
function saleOf(event: ChainEvent, orders: ReadonlyMap<string, Order>, now: () => number): RecordedSale {
  const byToken = new Map<string, Order>();
  for (const orderId of event.orderIds) {
    const order = orders.get(orderId);
    if (order?.tokenId !== undefined && order.priceUSD > 0 && !byToken.has(order.tokenId)) {
      byToken.set(order.tokenId, order);
    }
  }
  return {
    network: event.network,
    collection: event.collection.toLowerCase(),
    txnHash: event.txnHash.toLowerCase(),
    at: Date.parse(event.ts) || now(),
    ...(event.to ? { buyer: event.to.toLowerCase() } : {}),
    tokens:
      event.tokens.length > 0
        ? event.tokens.map((t) => priced(t.tokenId, t.amount, byToken.get(t.tokenId)))
        : // The stream holds no transfers of a collection nobody watches: its tokens are the orders'.
          event.orderIds.map((orderId) => {
            const order = orders.get(orderId);
            return priced(order?.tokenId ?? '', '1', order && order.priceUSD > 0 ? order : undefined);
          }),
  };
}

function priced(tokenId: string, amount: string, order: Order | undefined): RecordedSale['tokens'][number] {
  if (!order) return { tokenId, amount };
  const token: RecordedSale['tokens'][number] = { tokenId, amount, usd: order.priceUSD * (Number(amount) || 1) };
  // What the buyer paid, kept exact in the order's currency: their profit when they sell it on.
  if (/^\d{1,78}$/.test(order.priceAmount) && /^\d{1,78}$/.test(amount) && isDecimals(order.priceDecimals)) {
    token.paid = {
      amount: (BigInt(order.priceAmount) * BigInt(amount)).toString(),
      currency: order.priceCurrencyAddress.toLowerCase(),
      decimals: order.priceDecimals,
    };
  }
  return token;
}

/** Decimals of a currency as a platform may state them: a small whole number. */
function isDecimals(value: number): boolean {
  return Number.isInteger(value) && value >= 0 && value <= 36;
}
