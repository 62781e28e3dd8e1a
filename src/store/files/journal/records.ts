/**
 * The journal's operations and its records in memory: every delivery by id in recording order, indexed by transaction
 * and by sent message; the overlay that stages a batch's changes until its write succeeds; and the
 * one function that applies an operation, used both to replay the file and to change the live state.
 */
import { type DeliveryRecord, type ListingFateBody, needsEdit as needsEditOf } from '../../../core/deliveries.ts';
import { type Destination, destinationKey } from '../../../core/types.ts';

/** One operation, as a line of the file holds it. */
export type Op =
  | { op: 'add'; r: DeliveryRecord }
  | { op: 'sending'; id: string; t: string; k?: string }
  | { op: 'sent'; id: string; m: string; t: string }
  | { op: 'failed'; id: string; e: string; p: boolean; t: string }
  | { op: 'edited'; id: string; t: string; r?: number }
  | { op: 'fate'; ids: string[]; f: ListingFateBody; t: string }
  | { op: 'reorged'; n: string; h: string; t: string }
  | { op: 'final'; n: string; h: string; t: string };

/** Records are immutable: the snapshot of a compaction is an array of references. */
export function freeze(record: DeliveryRecord): DeliveryRecord {
  Object.freeze(record.destination);
  return Object.freeze(record);
}

export const txnKey = (network: string, txnHash: string): string => `${network}\n${txnHash}`;
export const messageKey = (destination: Destination, messageId: string): string =>
  `${destinationKey(destination)}\n${messageId}`;
/** A listing card's index key of one of its orders (`o`) or tokens (`t`). */
export const listingKey = (network: string, collection: string, what: 'o' | 't', id: string): string =>
  `${network}\n${collection}\n${what}${id}`;

function listingKeys(record: DeliveryRecord): string[] {
  const listing = record.listing;
  if (!listing) return [];
  return [
    ...listing.orderIds.map((id) => listingKey(record.network, listing.collection, 'o', id)),
    ...listing.tokenIds.map((id) => listingKey(record.network, listing.collection, 't', id)),
  ];
}

function pushTo(index: Map<string, string[]>, key: string, id: string): void {
  const ids = index.get(key);
  if (ids) ids.push(id);
  else index.set(key, [id]);
}

/** The records, in recording order, and their indexes by transaction and by sent message. */
export class Records {
  readonly byId = new Map<string, DeliveryRecord>();
  readonly byTxn = new Map<string, string[]>();
  readonly byMessage = new Map<string, string[]>();
  /** Listing cards by {@link listingKey}. */
  readonly byListing = new Map<string, string[]>();
  /** The ids of listing cards, in recording order (expiries and reorgs look through them). */
  readonly listings = new Set<string>();
  /**
   * While a compaction runs: the records it leaves out of the file, which it already took out of the
   * maps above (a few at a time, so that forgetting a day of deliveries never holds the event loop).
   * A change to one of them finds it here and puts it back (the compaction then writes it back).
   */
  forgotten: ReadonlyMap<string, DeliveryRecord> | undefined;

  /** Inserts a new record or replaces the record of the same id. */
  put(record: DeliveryRecord): void {
    const previous = this.byId.get(record.id);
    this.byId.set(record.id, record);
    if (!previous) pushTo(this.byTxn, txnKey(record.network, record.txnHash), record.id);
    if (!previous && record.listing) {
      this.listings.add(record.id);
      for (const key of listingKeys(record)) pushTo(this.byListing, key, record.id);
    }
    if (record.messageId !== undefined && record.messageId !== previous?.messageId) {
      pushTo(this.byMessage, messageKey(record.destination, record.messageId), record.id);
    }
  }

  /** Forgets a record, and its id in the indexes. */
  remove(id: string): void {
    const record = this.byId.get(id);
    if (!record) return;
    this.byId.delete(id);
    removeFrom(this.byTxn, txnKey(record.network, record.txnHash), id);
    this.listings.delete(id);
    for (const key of listingKeys(record)) removeFrom(this.byListing, key, id);
    if (record.messageId !== undefined)
      removeFrom(this.byMessage, messageKey(record.destination, record.messageId), id);
  }
}

function removeFrom(index: Map<string, string[]>, key: string, id: string): void {
  const ids = index.get(key);
  if (!ids) return;
  const rest = ids.filter((other) => other !== id);
  if (rest.length) index.set(key, rest);
  else index.delete(key);
}

/** Changes staged over the records until their write succeeds. */
export class Overlay {
  readonly #base: Records;
  readonly #changed = new Map<string, DeliveryRecord>();
  readonly #addedByTxn = new Map<string, string[]>();

  constructor(base: Records) {
    this.#base = base;
  }

  get(id: string): DeliveryRecord | undefined {
    return this.#changed.get(id) ?? this.#base.byId.get(id) ?? this.#base.forgotten?.get(id);
  }

  idsOf(network: string, txnHash: string): string[] {
    const key = txnKey(network, txnHash);
    return [...(this.#base.byTxn.get(key) ?? []), ...(this.#addedByTxn.get(key) ?? [])];
  }

  /** False when the id is already known. */
  add(record: DeliveryRecord): boolean {
    if (this.get(record.id)) return false;
    this.#changed.set(record.id, record);
    pushTo(this.#addedByTxn, txnKey(record.network, record.txnHash), record.id);
    return true;
  }

  replace(record: DeliveryRecord): void {
    this.#changed.set(record.id, record);
  }

  commit(): void {
    for (const record of this.#changed.values()) this.#base.put(record);
  }

  /** The ids added or changed, in the order of their first change. */
  changedIds(): IterableIterator<string> {
    return this.#changed.keys();
  }
}

/** Applies one operation; the same code replays the file and changes the live state. Returns a problem, if any. */
export function apply(overlay: Overlay, op: Op): string | undefined {
  if (op.op === 'add') return overlay.add(op.r) ? undefined : `adds delivery ${JSON.stringify(op.r.id)} twice`;
  if (op.op === 'fate') {
    for (const id of op.ids) {
      const r = overlay.get(id);
      if (!r) return `gives a fate to delivery ${JSON.stringify(id)}, which was never added`;
      overlay.replace(freeze({ ...r, fate: { ...op.f, at: op.t, rev: (r.fate?.rev ?? 0) + 1 }, updatedAt: op.t }));
    }
    return undefined;
  }
  if (op.op === 'reorged' || op.op === 'final') {
    for (const id of overlay.idsOf(op.n, op.h)) {
      const r = overlay.get(id);
      if (!r) continue;
      if (op.op === 'reorged' && !r.reorged) {
        const state = r.state === 'pending' ? 'dropped' : r.state;
        overlay.replace(freeze({ ...r, state, reorged: true, updatedAt: op.t }));
      } else if (op.op === 'final' && !r.final) {
        overlay.replace(freeze({ ...r, final: true, updatedAt: op.t }));
      }
    }
    return undefined;
  }
  const r = overlay.get(op.id);
  if (!r) return `changes delivery ${JSON.stringify(op.id)}, which was never added`;
  switch (op.op) {
    case 'sending':
      overlay.replace(
        freeze({
          ...r,
          state: 'sending',
          attempts: r.attempts + 1,
          ...(op.k === undefined ? {} : { sendKey: op.k }),
          updatedAt: op.t,
        }),
      );
      break;
    case 'sent':
      overlay.replace(freeze({ ...r, state: 'sent', messageId: op.m, updatedAt: op.t }));
      break;
    case 'failed': {
      const state = op.p ? 'failed' : r.reorged ? 'dropped' : 'pending';
      overlay.replace(freeze({ ...r, state, lastError: op.e, updatedAt: op.t }));
      break;
    }
    case 'edited':
      // Without `r` (the lines before listing cards were followed) it is the edit of a reorg.
      overlay.replace(
        freeze({
          ...r,
          ...(op.r === undefined || r.reorged ? { editedAt: op.t } : {}),
          ...(op.r === undefined ? {} : { fateShown: op.r }),
          updatedAt: op.t,
        }),
      );
      break;
  }
  return undefined;
}

/** Nothing more will be done with it: it may be forgotten once older than the retention. */
export function isClosed(r: DeliveryRecord): boolean {
  switch (r.state) {
    case 'failed':
    case 'dropped':
      return true;
    case 'sent':
      return r.reorged ? r.editedAt !== undefined : r.final;
    default:
      return r.reorged;
  }
}

/** A sent message to edit (see core/deliveries.ts). */
export const needsEdit = needsEditOf;

export function isDefined<T>(value: T | undefined): value is T {
  return value !== undefined;
}
