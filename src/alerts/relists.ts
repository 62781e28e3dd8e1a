/**
 * Relists: a listing identical to one seen lately (same token, seller, price and currency) is news to
 * nobody; rules that do not ask for relists (`showRelists`) leave it out. The listings are remembered
 * by the market history, so that whichever process sees the repeat (with a shared database, the
 * ingest leader of the moment) knows the first.
 */
import type { MarketHistory } from '../core/market.ts';
import type { ChainEvent } from './types.ts';

/** How long a listing is remembered by default to recognise an identical relist. */
export const DEFAULT_RELIST_WINDOW_MS = 24 * 60 * 60 * 1000;

/** Tells an identical relist, within a window. */
export class Relists {
  readonly #windowMs: number;
  readonly #history: Pick<MarketHistory, 'relist'>;
  readonly #now: () => number;

  /** `windowMs` 0 turns it off: no listing is a relist. */
  constructor(options: { windowMs?: number; history: Pick<MarketHistory, 'relist'>; now?: () => number }) {
    this.#windowMs = options.windowMs ?? DEFAULT_RELIST_WINDOW_MS;
    this.#history = options.history;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Remembers a listing, and tells whether it is identical to one seen within the window whose
   * transaction was not reorganised away (a listing re-mined after a reorg is news).
   */
  isRelist(event: ChainEvent): Promise<boolean> {
    if (this.#windowMs <= 0 || event.kind !== 'listing' || !event.from || !event.price) return Promise.resolve(false);
    const tokens = event.tokens.map((t) => `${t.tokenId}x${t.amount}`).join(',');
    const key = `${event.collection}|${tokens}|${event.from}|${event.price.perToken}|${event.price.currency}`;
    return this.#history.relist(
      { network: event.network, key, txnHash: event.txnHash, at: this.#now() },
      this.#windowMs,
    );
  }
}
