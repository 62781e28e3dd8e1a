/**
 * Relists: a listing identical to one seen lately (same token, seller, price and currency) is news to
 * nobody; rules that do not ask for relists (`showRelists`) leave it out.
 */
import { LRUCache } from 'lru-cache';
import type { DeliveryLog } from '../core/ports.ts';
import type { ChainEvent } from './types.ts';

/** How long a listing is remembered by default to recognise an identical relist. */
export const DEFAULT_RELIST_WINDOW_MS = 24 * 60 * 60 * 1000;

/** Remembers listings for a window and tells an identical relist. */
export class Relists {
  /** Recent listings by what makes them identical, with the transaction that made each. */
  readonly #listings: LRUCache<string, { network: string; txnHash: string }> | undefined;
  readonly #log: Pick<DeliveryLog, 'byTransaction'>;

  /** `windowMs` 0 turns it off: no listing is a relist. */
  constructor(options: { windowMs?: number; log: Pick<DeliveryLog, 'byTransaction'> }) {
    const window = options.windowMs ?? DEFAULT_RELIST_WINDOW_MS;
    this.#listings = window > 0 ? new LRUCache({ max: 50_000, ttl: window }) : undefined;
    this.#log = options.log;
  }

  /**
   * Remembers a listing, and tells whether it is identical to one seen within the window whose
   * transaction was not reorganised away (a listing re-mined after a reorg is news).
   */
  isRelist(event: ChainEvent): boolean {
    if (!this.#listings || event.kind !== 'listing' || !event.from || !event.price) return false;
    const tokens = event.tokens.map((t) => `${t.tokenId}x${t.amount}`).join(',');
    const key = `${event.network}|${event.collection}|${tokens}|${event.from}|${event.price.perToken}|${event.price.currency}`;
    const earlier = this.#listings.get(key);
    this.#listings.set(key, { network: event.network, txnHash: event.txnHash });
    if (!earlier || earlier.txnHash === event.txnHash) return false;
    return !this.#log.byTransaction(earlier.network, earlier.txnHash).some((r) => r.reorged);
  }
}
