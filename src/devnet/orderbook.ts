import type { OrderRecord, OrderState, Side } from './model.ts';

type Undo = () => void;

export interface TokenOrders {
  /** Active listings, cheapest first (by USD value). */
  listings: OrderRecord[];
  /** Active offers, highest first (by USD value). */
  offers: OrderRecord[];
}

const NO_ORDERS: readonly OrderRecord[] = Object.freeze([]);

export function compareListings(a: OrderRecord, b: OrderRecord): number {
  return a.priceUsd - b.priceUsd || a.createdAt - b.createdAt || a.orderId.localeCompare(b.orderId);
}

export function compareOffers(a: OrderRecord, b: OrderRecord): number {
  return b.priceUsd - a.priceUsd || a.createdAt - b.createdAt || a.orderId.localeCompare(b.orderId);
}

function insertSorted(list: OrderRecord[], order: OrderRecord, compare: (a: OrderRecord, b: OrderRecord) => number) {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compare(list[mid] as OrderRecord, order) <= 0) lo = mid + 1;
    else hi = mid;
  }
  list.splice(lo, 0, order);
}

/**
 * The order book of one network: every order by id (whatever its state), and the active orders
 * per token kept sorted, so that "best listing" and "best offer" are the first of a list.
 */
export class OrderBook {
  readonly byId = new Map<string, OrderRecord>();
  readonly #active = new Map<string, Map<number, TokenOrders>>();
  readonly #touch: (collectionAddress: string) => void;
  #nextRequestId: bigint;

  constructor(touch: (collectionAddress: string) => void, firstRequestId = 1n) {
    this.#touch = touch;
    this.#nextRequestId = firstRequestId;
  }

  /** A fresh request id of the platform's marketplace contract. Ids are never reused, even after a reorg. */
  nextRequestId(): string {
    const id = this.#nextRequestId;
    this.#nextRequestId++;
    return id.toString();
  }

  get(orderId: string): OrderRecord | undefined {
    return this.byId.get(orderId) ?? this.byId.get(orderId.toLowerCase());
  }

  tokenOrders(collectionAddress: string, tokenIndex: number): TokenOrders | undefined {
    return this.#active.get(collectionAddress)?.get(tokenIndex);
  }

  /** Tokens of a collection with at least one active order, and their orders. */
  activeTokens(collectionAddress: string): ReadonlyMap<number, TokenOrders> {
    return this.#active.get(collectionAddress) ?? new Map();
  }

  add(order: OrderRecord): Undo {
    this.byId.set(order.orderId, order);
    if (order.status === 'active') this.#link(order);
    this.#touch(order.collectionAddress);
    return () => {
      this.#unlink(order);
      this.byId.delete(order.orderId);
      this.#touch(order.collectionAddress);
    };
  }

  setStatus(order: OrderRecord, status: OrderState, at: number): Undo {
    const before = { status: order.status, updatedAt: order.updatedAt };
    if (before.status === status) return () => undefined;
    if (order.status === 'active') this.#unlink(order);
    order.status = status;
    order.updatedAt = at;
    if (status === 'active') this.#link(order);
    this.#touch(order.collectionAddress);
    return () => {
      if (order.status === 'active') this.#unlink(order);
      order.status = before.status;
      order.updatedAt = before.updatedAt;
      if (order.status === 'active') this.#link(order);
      this.#touch(order.collectionAddress);
    };
  }

  /** Takes `quantity` from an order; an order with nothing left is filled. */
  fill(order: OrderRecord, quantity: bigint, at: number): Undo {
    const before = { remaining: order.quantityRemaining, updatedAt: order.updatedAt, status: order.status };
    order.quantityRemaining -= quantity;
    order.updatedAt = at;
    const statusUndo = order.quantityRemaining === 0n ? this.setStatus(order, 'filled', at) : () => undefined;
    this.#touch(order.collectionAddress);
    return () => {
      statusUndo();
      order.quantityRemaining = before.remaining;
      order.updatedAt = before.updatedAt;
      this.#touch(order.collectionAddress);
    };
  }

  /** Active orders of one side for a token, best first. */
  side(collectionAddress: string, tokenIndex: number, side: Side): readonly OrderRecord[] {
    const orders = this.tokenOrders(collectionAddress, tokenIndex);
    if (!orders) return NO_ORDERS;
    return side === 'listing' ? orders.listings : orders.offers;
  }

  #link(order: OrderRecord): void {
    let tokens = this.#active.get(order.collectionAddress);
    if (!tokens) {
      tokens = new Map();
      this.#active.set(order.collectionAddress, tokens);
    }
    let entry = tokens.get(order.tokenIndex);
    if (!entry) {
      entry = { listings: [], offers: [] };
      tokens.set(order.tokenIndex, entry);
    }
    if (order.side === 'listing') insertSorted(entry.listings, order, compareListings);
    else insertSorted(entry.offers, order, compareOffers);
  }

  #unlink(order: OrderRecord): void {
    const tokens = this.#active.get(order.collectionAddress);
    const entry = tokens?.get(order.tokenIndex);
    if (!tokens || !entry) return;
    const list = order.side === 'listing' ? entry.listings : entry.offers;
    const at = list.indexOf(order);
    if (at >= 0) list.splice(at, 1);
    if (entry.listings.length === 0 && entry.offers.length === 0) tokens.delete(order.tokenIndex);
  }
}
