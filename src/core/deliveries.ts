/**
 * Deliveries: one alert (or digest) for one destination, as every delivery log records it (the
 * journal file, or PostgreSQL) and as the dispatcher sends it. See core/ports.ts for the log itself.
 */
import { type AlertKind, type Destination, destinationKey } from './types.ts';

/**
 * - `pending`: recorded, not sent yet (or a retryable failure, see `lastError`).
 * - `sending`: a send was started; after a crash it may or may not have reached the chat.
 * - `sent`: the chat holds the message `messageId`.
 * - `failed`: given up (a permanent failure).
 * - `dropped`: never to be sent (its transaction was reorganised away before it was sent).
 */
export type DeliveryState = 'pending' | 'sending' | 'sent' | 'failed' | 'dropped';

/** What the pipeline records for one alert to one destination. */
export interface NewDelivery {
  /** The {@link ChainEvent} id. */
  eventId: string;
  destination: Destination;
  network: string;
  txnHash: string;
  blockNumber: number;
  /** Whatever the sender needs to (re)send the message; must be JSON-serialisable. Stored as JSON. */
  payload: unknown;
  /** What the delivery is about (an alert's kind, or a digest): digests count alerts by it. */
  kind?: AlertKind | 'digest';
  /** The alert's value in US dollars, when known (a sale's total): digests name the biggest sale. */
  usd?: number;
  /**
   * The caller will send this delivery at once, alone, under its own id as key: it is recorded as
   * `'sending'` (attempts 1, `sendKey` its id), which saves the separate `markSending` write before
   * that send. Only for a delivery that will not be merged with others into one message.
   */
  sendingAlone?: boolean;
  /** A listing alert: the listing its message shows, so that the message can follow it (see {@link ListingFate}). */
  listing?: ListingWatch;
}

/**
 * The listing a listing alert shows: what tells that it sold (one of its orders filled, or one of its
 * tokens sold by its seller through another order), was cancelled (one of its orders) or expired.
 */
export interface ListingWatch {
  /** Token contract, lower-case. */
  collection: string;
  /** The marketplace orders (request ids) of the listing. */
  orderIds: readonly string[];
  tokenIds: readonly string[];
  /** The seller, lower-case, when known. */
  seller?: string;
  /** When the listing expires (ISO 8601), as its RequestCreated log says. */
  expiresAt?: string;
  /** Where the message says the listing can be bought: removed once it cannot be any more. */
  buyUrl?: string;
  /** The listing's price as its message shows it: what a sale through its own order paid. */
  price?: string;
}

/**
 * What became of a listing after its alert was recorded, as its message is edited to say. `listed`:
 * the sale or cancel that closed it was reorganised away (`reversed`: that transaction), so the
 * listing stands again. `rev` counts the changes: the message shows the fate once its
 * {@link DeliveryRecord.fateShown} reaches it.
 */
export type ListingFate = ListingFateBody & {
  /** ISO 8601: when it was seen. */
  at: string;
  rev: number;
};

/** The kinds of {@link ListingFate}, before the log dates and numbers one. */
export type ListingFateBody =
  | {
      state: 'sold';
      txnHash: string;
      blockNumber: number;
      /** The buyer, lower-case, when known. */
      buyer?: string;
      /** The sale's orders: through one of the listing's own, it paid the listing's price. */
      orderIds?: readonly string[];
      /** The sale's price as the message shows it, when known (a sale of this token alone). */
      price?: string;
      /** The sale's transaction page. */
      transaction?: string;
    }
  | { state: 'cancelled'; txnHash: string; blockNumber: number; transaction?: string }
  | { state: 'expired' }
  | { state: 'listed'; reversed: string };

/** One delivery as the journal holds it. Records are immutable snapshots (frozen). */
export interface DeliveryRecord {
  /** {@link deliveryId}: unique; the idempotency key of the send. */
  readonly id: string;
  readonly eventId: string;
  readonly destination: Readonly<Destination>;
  readonly network: string;
  readonly txnHash: string;
  readonly blockNumber: number;
  /** {@link NewDelivery.kind}; absent on deliveries recorded before it was kept. */
  readonly kind?: AlertKind | 'digest';
  /** {@link NewDelivery.usd}. */
  readonly usd?: number;
  readonly state: DeliveryState;
  /** How many sends were started. */
  readonly attempts: number;
  /**
   * The idempotency key of the last send started. Deliveries sharing it were (maybe) posted as one
   * message: until they are sent, they must be sent again together under this key.
   */
  readonly sendKey?: string;
  /** The chat's id of the sent message. */
  readonly messageId?: string;
  /** The last send failure. */
  readonly lastError?: string;
  /** The transaction was reorganised away. */
  readonly reorged: boolean;
  /** When the sent message was edited to say so. */
  readonly editedAt?: string;
  /** The transaction's receipt is final. */
  readonly final: boolean;
  /** {@link NewDelivery.listing}; absent on other deliveries and on those recorded before it was kept. */
  readonly listing?: ListingWatch;
  /** What became of the listing, once something did. */
  readonly fate?: ListingFate;
  /** The {@link ListingFate.rev} the sent message was last edited to show (0 or absent: none). */
  readonly fateShown?: number;
  /** ISO 8601. */
  readonly createdAt: string;
  /** ISO 8601, the last change. */
  readonly updatedAt: string;
  /**
   * {@link NewDelivery.payload} as the JSON text the journal writes (see {@link payloadOf}). Kept as
   * text: it is small in memory, immutable, shared by the deliveries of one event, and written
   * again as it is when the journal is compacted.
   */
  readonly payloadJson: string;
}

/** Counts by state, and the file's size. */
export interface JournalStats {
  records: number;
  bytes: number;
  pending: number;
  sending: number;
  sent: number;
  failed: number;
  dropped: number;
}

/** A call the journal refuses (unknown delivery, a change its state does not allow, journal closed). */
export class JournalError extends Error {
  override name = 'JournalError';
  readonly file: string;
  constructor(file: string, problem: string, options?: { cause?: unknown }) {
    super(`${file}: ${problem}`, options);
    this.file = file;
  }
}

/** The journal file could not be written; the operation was not recorded. */
export class JournalWriteError extends JournalError {
  override name = 'JournalWriteError';
  /** The system error code, e.g. `ENOSPC`. */
  readonly code: string | undefined;
  constructor(file: string, problem: string, options?: { cause?: unknown }) {
    super(file, problem, options);
    this.code = errorCode(options?.cause);
  }
}

/** A fresh copy of the delivery's payload (parsed from {@link DeliveryRecord.payloadJson}). */
export function payloadOf(record: DeliveryRecord): unknown {
  return JSON.parse(record.payloadJson);
}

/** The id of the delivery of an event to a destination: `${eventId}>${destinationKey}`. */
export function deliveryId(eventId: string, destination: Destination): string {
  return `${eventId}>${destinationKey(destination)}`;
}

function errorCode(error: unknown): string | undefined {
  if (error instanceof Error && 'code' in error && typeof error.code === 'string') return error.code;
  return undefined;
}

/**
 * A sent message that must still be edited: its transaction was reorganised away (and the message
 * does not say so yet), or its listing's fate changed since the message last showed it.
 */
export function needsEdit(r: DeliveryRecord): boolean {
  if (r.state !== 'sent') return false;
  if (r.reorged) return r.editedAt === undefined;
  return r.fate !== undefined && r.fate.rev !== (r.fateShown ?? 0);
}

/** The longest a listing alert's message is followed (edited to say sold, cancelled, expired). */
export const MAX_LISTING_EDIT_WINDOW_MS = 48 * 60 * 60 * 1000;

/** A listing card still followed: it must not be forgotten, even when final, until the longest edit window has passed. */
export function followsListing(r: DeliveryRecord, now: number): boolean {
  return (
    r.listing !== undefined &&
    !r.reorged &&
    (r.state === 'sent' || r.state === 'pending' || r.state === 'sending') &&
    now - Date.parse(r.createdAt) < MAX_LISTING_EDIT_WINDOW_MS
  );
}
