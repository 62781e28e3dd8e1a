/**
 * Listing cards that follow the token: a listing alert keeps the listing it shows (its orders, token,
 * seller, expiry), and once that listing's token sells (through its order, or by its seller through
 * another), the listing is cancelled, or it expires, the message is edited to say SOLD, CANCELLED or
 * EXPIRED (delivery/edits.ts renders it; the dispatcher edits it, once, like a reorg edit).
 *
 * - Sales and cancels come from the stream (RequestAccepted, RequestCancelled of the marketplace
 *   contracts, which every ingesting process follows whatever the rules). A listing of several
 *   ERC-1155 units is SOLD once its last unit sells; a sale of units through another order does not
 *   close it (the seller may hold more). Each goes through the
 *   network's ordered queue, so that it is applied after the listing alerts before it are recorded.
 * - Expiry is no event: the chain only says when (RequestCreated's `expiry`). The process that
 *   ingests a network looks every `checkEveryMs` for the cards whose listing expired by now; with a
 *   shared database that is the ingest lease's holder alone, and the statement is fenced by it.
 * - Edits reach back `windowMs` (default 24 hours, at most 48): a card older is left as it was.
 *   Telegram documents a 48-hour limit on editing some messages, the delivery log keeps closed
 *   deliveries about a day, and a card whose listing changes days later is seldom still read.
 * - A reorg of the sale or cancel opens the card again: it shows the listing (Buy link and all) with
 *   a line saying the sale or cancel was reversed, which is what is true of the listing then.
 */
import type { Logger } from 'pino';
import type { ListingWatch } from '../core/deliveries.ts';
import { MAX_LISTING_EDIT_WINDOW_MS } from '../core/deliveries.ts';
import type { DeliveryLog, ListingClose } from '../core/ports.ts';
import type { DeliveryQueue } from '../delivery/dispatcher.ts';
import { formatUsd } from '../market/format.ts';
import type { Links } from '../market/links.ts';
import type { AlertDetails } from './render.ts';
import type { ChainEvent } from './types.ts';

/** How far back listing cards are followed by default. */
export const DEFAULT_LISTING_EDIT_WINDOW_MS = 24 * 60 * 60 * 1000;
/** How often expired listings are looked for by default. */
export const DEFAULT_EXPIRY_CHECK_MS = 30_000;

/** A sale or cancel as it may close listing cards, before the window is applied. */
export type CardClose = Omit<ListingClose, 'since'>;

export interface ListingCardsOptions {
  deliveries: DeliveryLog;
  queue: DeliveryQueue;
  links?: Links | undefined;
  logger: Logger;
  /** Cards recorded longer ago than this are not edited. Default 24 h; 0 turns the feature off; at most 48 h. */
  windowMs?: number | undefined;
  /** How often expired listings are looked for. Default 30 s. */
  checkEveryMs?: number | undefined;
  /** The networks this process ingests now (it alone marks their cards). */
  networks: () => readonly string[];
  now?: () => number;
}

/** Follows the listings of listing alerts (see the module comment). */
export class ListingCards {
  readonly #o: ListingCardsOptions;
  readonly #windowMs: number;
  readonly #now: () => number;
  #timer: NodeJS.Timeout | undefined;
  #expiring: Promise<void> | undefined;
  #closing: Promise<void> = Promise.resolve();

  constructor(options: ListingCardsOptions) {
    this.#o = options;
    this.#windowMs = Math.min(options.windowMs ?? DEFAULT_LISTING_EDIT_WINDOW_MS, MAX_LISTING_EDIT_WINDOW_MS);
    this.#now = options.now ?? Date.now;
  }

  get enabled(): boolean {
    return this.#windowMs > 0;
  }

  /** The listing a listing alert of one token shows, to record with its deliveries. */
  watchOf(details: AlertDetails): ListingWatch | undefined {
    const { event } = details;
    const token = event.tokens.length === 1 ? event.tokens[0] : undefined;
    if (!this.enabled || event.kind !== 'listing' || !token || event.orderIds.length === 0) return undefined;
    const usd = formatUsd(details.price?.usd);
    const price = details.price
      ? `${details.price.amount} ${details.price.symbol}${usd ? ` (${usd})` : ''}`
      : undefined;
    return {
      collection: event.collection,
      orderIds: event.orderIds,
      tokenIds: [token.tokenId],
      ...(event.from ? { seller: event.from } : {}),
      ...(event.expiresAt ? { expiresAt: event.expiresAt } : {}),
      ...(details.links?.buy ? { buyUrl: details.links.buy.url } : {}),
      ...(price ? { price } : {}),
    };
  }

  /**
   * What a sale or cancel closes, if it may close any card. `details`: the sale's alert details when
   * a rule matched it (its price is shown when it sold this token alone).
   */
  closeOf(event: ChainEvent, details?: AlertDetails): CardClose | undefined {
    if (!this.enabled || (event.kind !== 'sale' && event.kind !== 'cancel') || event.orderIds.length === 0) {
      return undefined;
    }
    // A listing filled in part still offers its other units; and a seller of ERC-1155 units may hold
    // more of the token than were sold, so only the listings a sale filled are closed by it then.
    const partly = event.partlyFilledOrderIds;
    const orderIds = partly ? event.orderIds.filter((id) => !partly.includes(id)) : event.orderIds;
    if (orderIds.length === 0) return undefined;
    const transaction = this.#o.links?.transaction(event.network, event.txnHash);
    const base = {
      network: event.network,
      collection: event.collection,
      orderIds,
      tokenIds: event.tokens.map((t) => t.tokenId),
      blockNumber: event.blockNumber,
    };
    if (event.kind === 'cancel') {
      return {
        ...base,
        fate: {
          state: 'cancelled',
          txnHash: event.txnHash,
          blockNumber: event.blockNumber,
          ...(transaction ? { transaction } : {}),
        },
      };
    }
    const price = event.tokens.length === 1 ? details?.price : undefined;
    const usd = formatUsd(price?.usd);
    return {
      ...base,
      ...(event.from && !event.multiUnit ? { seller: event.from } : {}),
      fate: {
        state: 'sold',
        txnHash: event.txnHash,
        blockNumber: event.blockNumber,
        orderIds,
        ...(event.to ? { buyer: event.to } : {}),
        ...(price && !price.more ? { price: `${price.amount} ${price.symbol}${usd ? ` (${usd})` : ''}` } : {}),
        ...(transaction ? { transaction } : {}),
      },
    };
  }

  /**
   * Gives the cards these sales and cancels close their fate, in order, and hands the edits to the
   * queue. Called once the alerts before them are recorded; it does not hold up the alerts after them
   * (with a shared database each close is a statement of its own): closes run one after the other.
   */
  closed(closes: readonly CardClose[]): void {
    if (closes.length === 0) return;
    this.#closing = this.#closing.then(() => this.#close(closes));
  }

  /** Resolves once every close handed over so far is applied (tests, shutdown). */
  settled(): Promise<void> {
    return this.#closing;
  }

  async #close(closes: readonly CardClose[]): Promise<void> {
    const since = new Date(this.#now() - this.#windowMs);
    for (const close of closes) {
      try {
        const edits = await this.#o.deliveries.markListingsClosed({ ...close, since });
        if (edits.length) this.#o.queue.reorged(edits);
      } catch (error) {
        this.#o.logger.warn(
          { network: close.network, state: close.fate.state, err: error },
          'could not mark the listing alerts a sale or cancel closes',
        );
      }
    }
  }

  /** Starts looking for expired listings every `checkEveryMs`. */
  start(): void {
    if (!this.enabled || this.#timer) return;
    this.#timer = setInterval(() => void this.expire(), this.#o.checkEveryMs ?? DEFAULT_EXPIRY_CHECK_MS);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#expiring;
    await this.#closing;
  }

  /** Marks the cards of the networks this process ingests whose listing expired, and queues their edits. */
  expire(): Promise<void> {
    this.#expiring ??= this.#expire().finally(() => {
      this.#expiring = undefined;
    });
    return this.#expiring;
  }

  async #expire(): Promise<void> {
    const now = this.#now();
    for (const network of this.#o.networks()) {
      try {
        const edits = await this.#o.deliveries.markListingsExpired(
          network,
          new Date(now),
          new Date(now - this.#windowMs),
        );
        if (edits.length) this.#o.queue.reorged(edits);
      } catch (error) {
        this.#o.logger.warn({ network, err: error }, 'could not mark expired listing alerts');
      }
    }
  }
}
