/**
 * The delivery journal: one record per (chain event, destination) alert, written durably before the
 * alert is sent, so that a restart loses nothing that was recorded and sends nothing twice.
 *
 * ## The sending protocol
 *
 * 1. `record()` the deliveries of an event (one per destination). When it resolves, they are on disk.
 *    An id that is already known is skipped, so recording an event twice does not alert twice.
 * 2. `markSending(id, key)` right before the chat API call, `markSent(id, messageId)` right after it.
 *    A delivery recorded with `sendingAlone` is already marked sending under its own id.
 *    `key` is the send's idempotency key (the first delivery's id when a burst is merged into one
 *    message); it is kept as {@link DeliveryRecord.sendKey}, so that the deliveries that went out
 *    under it can be sent again together, under it, and only together.
 * 3. A send that failed: `markFailed(id, error)` (retried later) or with `{ final: true }` (given up).
 * 4. A receipt with `reorged: true`: `markReorged(network, txnHash)` drops the deliveries not yet sent
 *    (a reorganised event is never sent) and returns the sent ones, whose messages must be edited;
 *    `markEdited(id)` after each edit. A final receipt: `markFinal(network, txnHash)`.
 *
 * On restart, {@link DeliveryJournal.unfinished} lists what must still be sent, in recording order,
 * and {@link DeliveryJournal.pendingEdits} the reorg edits not done yet. The journal cannot know
 * whether a message sent just before a crash reached the chat: such deliveries come back in state
 * `'sending'` (distinct from `'pending'`, never sent). Send them again idempotently, with the same
 * idempotency key and the same deliveries in the message (Discord: the message `nonce` with
 * `enforce_nonce` answers the first message, whatever the new one holds), so that the chat drops the
 * copy if the first send got through.
 *
 * ## File format
 *
 * JSON Lines, append-only, one operation per line, the first line a header:
 *
 * ```
 * {"op":"journal","v":1}
 * {"op":"add","r":{"id":"devnet:0xab…:0xc0…:sale>discord:42","eventId":…,"state":"pending",…,"payload":{…}}}
 * {"op":"sending","id":"…","k":"…","t":"2025-01-01T00:00:00.000Z"}
 * {"op":"sent","id":"…","m":"1234567890","t":"…"}
 * {"op":"failed","id":"…","e":"429 Too Many Requests","p":false,"t":"…"}
 * {"op":"reorged","n":"devnet","h":"0xab…","t":"…"}
 * {"op":"edited","id":"…","t":"…"}
 * {"op":"final","n":"devnet","h":"0xab…","t":"…"}
 * ```
 *
 * Calls made close together are written with one `write` and one `fdatasync` (group commit); a call
 * resolves only after both. `markFinal` alone is written without a sync of its own (see there).
 *
 * Compaction writes the live records of a snapshot as `add` lines to a temporary file beside the
 * journal (`<file>.compact`), in the background while the journal keeps appending; then, holding the
 * write queue, it appends the operations written meanwhile, syncs the file, renames it over the
 * journal and syncs the directory. One process at a time may use a journal file.
 *
 * ## Recovery on open
 *
 * - A last line without its newline, or a last line that is not valid JSON, is a write torn by a crash
 *   (its call never resolved): it is ignored and cut off the file.
 * - Anything else that cannot be read (invalid JSON before the last line, an unknown operation, a
 *   malformed record, an operation on an unknown delivery, a newer format) throws
 *   {@link StoreFileError} naming the file and the line, and leaves the file untouched.
 * - A `<file>.compact` left by a crash during compaction is deleted (the journal itself is intact).
 *
 * A failed write (disk full, I/O error) rejects the call with {@link JournalWriteError}; the memory
 * state is not changed and the bytes already written for it are cut off again. The journal keeps
 * working: the next write that the disk accepts succeeds. Until one does,
 * {@link DeliveryJournal.writeFailure} says since when and why its writes fail (readiness, /status).
 */
import { isUtf8 } from 'node:buffer';
import { type FileHandle, open, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import {
  type DeliveryRecord,
  deliveryId,
  JournalError,
  type JournalStats,
  JournalWriteError,
  type NewDelivery,
} from '../core/deliveries.ts';
import { LeaseLostError, type WriteFence } from '../core/lease.ts';
import type { DeliveryLog, OutstandingDeliveries, ReorgOutcome } from '../core/ports.ts';
import type { JournalWriteFailure } from '../core/status.ts';
import { ALERT_KINDS, type Destination, destinationKey } from '../core/types.ts';
import { StoreFileError } from './state.ts';

export interface DeliveryJournalOptions {
  /** Clock for the records' timestamps and the retention. */
  now?: () => Date;
  /** `fdatasync` after each write and sync around compaction (default true). Without it, records survive a crash of the process but not of the machine. */
  fsync?: boolean;
  /** Compact when the file grows past this size and has doubled since the last compaction; also on open (default 4 MiB). */
  compactAfterBytes?: number;
  /** How long compaction keeps closed deliveries, so that recording them again is still ignored (default 24 h). */
  retentionMs?: number;
  /** Receives the failure of an automatic compaction (the journal keeps working uncompacted). */
  onCompactionError?: (error: Error) => void;
  /**
   * Asked right before every write to the file (appends, and the rename that ends a compaction);
   * the write waits while it takes a late lease again. When it fails with {@link LeaseLostError}
   * (this process no longer holds the data directory) the write is not made, its calls reject with
   * that error, and so does every later one.
   */
  fence?: WriteFence;
}

const FORMAT_VERSION = 1;
const HEADER_LINE = JSON.stringify({ op: 'journal', v: FORMAT_VERSION });
const DEFAULT_COMPACT_AFTER_BYTES = 4 * 1024 * 1024;
const DEFAULT_RETENTION_MS = 24 * 60 * 60 * 1000;
const PLATFORMS: ReadonlySet<string> = new Set(['console', 'discord', 'telegram']);
const DELIVERY_KINDS: ReadonlySet<string> = new Set([...ALERT_KINDS, 'digest']);
const STATES: ReadonlySet<string> = new Set(['pending', 'sending', 'sent', 'failed', 'dropped']);

type Op =
  | { op: 'add'; r: DeliveryRecord }
  | { op: 'sending'; id: string; t: string; k?: string }
  | { op: 'sent'; id: string; m: string; t: string }
  | { op: 'failed'; id: string; e: string; p: boolean; t: string }
  | { op: 'edited'; id: string; t: string }
  | { op: 'reorged'; n: string; h: string; t: string }
  | { op: 'final'; n: string; h: string; t: string };

const txnKey = (network: string, txnHash: string): string => `${network}\n${txnHash}`;
const messageKey = (destination: Destination, messageId: string): string =>
  `${destinationKey(destination)}\n${messageId}`;

function pushTo(index: Map<string, string[]>, key: string, id: string): void {
  const ids = index.get(key);
  if (ids) ids.push(id);
  else index.set(key, [id]);
}

/** The records, in recording order, and their indexes by transaction and by sent message. */
class Records {
  readonly byId = new Map<string, DeliveryRecord>();
  readonly byTxn = new Map<string, string[]>();
  readonly byMessage = new Map<string, string[]>();

  /** Inserts a new record or replaces the record of the same id. */
  put(record: DeliveryRecord): void {
    const previous = this.byId.get(record.id);
    this.byId.set(record.id, record);
    if (!previous) pushTo(this.byTxn, txnKey(record.network, record.txnHash), record.id);
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
class Overlay {
  readonly #base: Records;
  readonly #changed = new Map<string, DeliveryRecord>();
  readonly #addedByTxn = new Map<string, string[]>();

  constructor(base: Records) {
    this.#base = base;
  }

  get(id: string): DeliveryRecord | undefined {
    return this.#changed.get(id) ?? this.#base.byId.get(id);
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

/**
 * A compaction under way. Phase 1 (outside the write queue, in slices that leave the event loop
 * free) writes the live records of a snapshot to the temporary file; meanwhile the journal keeps
 * appending to its file, and every committed write is also kept here. Phase 2 (inside the write
 * queue, so no write can interleave) appends those writes to the temporary file, syncs it and
 * renames it over the journal. Records are immutable, so the snapshot is an array of references.
 */
interface Compaction {
  /** The temporary file, once phase 1 opened it. */
  temp: FileHandle | undefined;
  /** The snapshot's records left out (closed and older than the retention). */
  readonly removed: Map<string, DeliveryRecord>;
  /** Operations committed since the snapshot, as written. */
  readonly tail: string[];
  /** Ids added since the snapshot, in order. */
  readonly added: string[];
  /** Ids changed since the snapshot, in the order of their first change. */
  readonly touched: Set<string>;
  /** Bytes written to the temporary file so far. */
  bytes: number;
  /** Phase 1 finished: phase 2 may run. */
  serialized: boolean;
  /** Resolves when phase 1 ends (rejects when it failed). */
  readonly phase1: Promise<void>;
}

/** Applies one operation; the same code replays the file and changes the live state. Returns a problem, if any. */
function apply(overlay: Overlay, op: Op): string | undefined {
  if (op.op === 'add') return overlay.add(op.r) ? undefined : `adds delivery ${JSON.stringify(op.r.id)} twice`;
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
      overlay.replace(freeze({ ...r, editedAt: op.t, updatedAt: op.t }));
      break;
  }
  return undefined;
}

/** Nothing more will be done with it: it may be forgotten once older than the retention. */
function isClosed(r: DeliveryRecord): boolean {
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

interface Planned<T> {
  ops: Op[];
  result: (overlay: Overlay) => T;
  /** Needs no sync of its own (see markFinal); a batch of only such operations is not synced. */
  relaxed?: boolean;
}

type Job =
  | {
      kind: 'ops';
      plan: (overlay: Overlay, t: string) => Planned<unknown>;
      resolve: (value: unknown) => void;
      reject: (error: unknown) => void;
    }
  | { kind: 'task'; run: () => Promise<void>; resolve: (value: unknown) => void; reject: (error: unknown) => void };

/**
 * The append-only journal of alert deliveries (see the module comment for the protocol, the file
 * format and the recovery rules). Reads are synchronous and served from memory; every change is
 * appended to the file and resolves once it is durable.
 *
 * @example
 * const journal = await DeliveryJournal.open('data/deliveries.jsonl');
 * for (const d of journal.unfinished()) await send(d); // after a restart
 * const [fresh] = await journal.record([{ eventId: event.id, destination, network, txnHash, blockNumber, payload }]);
 * if (fresh) {
 *   await journal.markSending(fresh.id);
 *   const messageId = await chat.send(payloadOf(fresh), { nonce: fresh.id });
 *   await journal.markSent(fresh.id, messageId);
 * }
 */
export class DeliveryJournal implements DeliveryLog {
  readonly file: string;
  readonly #tempFile: string;
  readonly #now: () => Date;
  readonly #fsync: boolean;
  readonly #compactAfterBytes: number;
  readonly #retentionMs: number;
  readonly #onCompactionError: ((error: Error) => void) | undefined;
  readonly #fence: WriteFence | undefined;
  #fenced: LeaseLostError | undefined;
  #records: Records;
  #handle: FileHandle;
  #bytes: number;
  #compactAt: number;
  #queue: Job[] = [];
  #draining = false;
  #compaction: Compaction | undefined;
  #closed = false;
  /** Handles of files replaced by a compaction, being closed outside the write queue. */
  readonly #closing = new Set<FileHandle>();
  #broken: JournalWriteError | undefined;
  #writeFailure: JournalWriteFailure | undefined;

  private constructor(
    file: string,
    handle: FileHandle,
    records: Records,
    bytes: number,
    options: Required<Omit<DeliveryJournalOptions, 'onCompactionError' | 'fence'>> & DeliveryJournalOptions,
  ) {
    this.file = file;
    this.#tempFile = `${file}.compact`;
    this.#handle = handle;
    this.#records = records;
    this.#bytes = bytes;
    this.#now = options.now;
    this.#fsync = options.fsync;
    this.#compactAfterBytes = options.compactAfterBytes;
    this.#retentionMs = options.retentionMs;
    this.#onCompactionError = options.onCompactionError;
    this.#fence = options.fence;
    this.#compactAt = options.compactAfterBytes;
  }

  /**
   * Opens (or creates) the journal and replays it. Throws {@link StoreFileError} when the file cannot
   * be used, leaving it untouched. A torn last line is cut off; a leftover `<file>.compact` is deleted;
   * a file larger than `compactAfterBytes` is compacted.
   */
  static async open(file: string, options: DeliveryJournalOptions = {}): Promise<DeliveryJournal> {
    const resolved = {
      ...options,
      now: options.now ?? (() => new Date()),
      fsync: options.fsync ?? true,
      compactAfterBytes: options.compactAfterBytes ?? DEFAULT_COMPACT_AFTER_BYTES,
      retentionMs: options.retentionMs ?? DEFAULT_RETENTION_MS,
    };
    if (!(resolved.compactAfterBytes > 0)) throw new RangeError('compactAfterBytes must be positive');
    if (!(resolved.retentionMs >= 0)) throw new RangeError('retentionMs must not be negative');

    const data = await readJournalFile(file);
    const { records, validBytes } = replay(file, data ?? Buffer.alloc(0));
    try {
      await rm(`${file}.compact`, { force: true });
    } catch (cause) {
      throw new StoreFileError(
        `${file}.compact`,
        `is left from an interrupted compaction and cannot be deleted (${message(cause)})`,
        { cause },
      );
    }
    let handle: FileHandle;
    try {
      handle = await open(file, 'a');
    } catch (cause) {
      throw new StoreFileError(file, `cannot be opened for writing (${message(cause)})`, { cause });
    }
    try {
      if (data && validBytes < data.length) {
        await handle.truncate(validBytes);
        if (resolved.fsync) await handle.datasync();
      }
      if (!data && resolved.fsync) await syncDirectory(dirname(file));
    } catch (cause) {
      await handle.close();
      throw new StoreFileError(file, `cannot be repaired or created (${message(cause)})`, { cause });
    }
    const journal = new DeliveryJournal(file, handle, records, validBytes, resolved);
    if (validBytes > resolved.compactAfterBytes) {
      try {
        await journal.compact();
      } catch (error) {
        journal.#compactionFailed(error);
      }
    }
    return journal;
  }

  /**
   * Records new deliveries with one durable write. Deliveries whose id is already known (or repeated in
   * the list) are skipped. Resolves with the newly recorded ones, in order; rejects with
   * {@link JournalWriteError} (nothing recorded) or a TypeError for an invalid delivery (a payload that
   * is not JSON, a block number that is not a number).
   */
  record(deliveries: readonly NewDelivery[]): Promise<DeliveryRecord[]> {
    let prepared: { id: string; delivery: NewDelivery; payloadJson: string }[];
    // Deliveries of one event share its payload object: it is turned into text once.
    const texts = new Map<unknown, string>();
    try {
      prepared = deliveries.map((delivery) => {
        const id = deliveryId(delivery.eventId, delivery.destination);
        let payloadJson = texts.get(delivery.payload);
        if (payloadJson === undefined) {
          payloadJson = JSON.stringify(delivery.payload) as string | undefined;
          if (payloadJson === undefined) throw new TypeError('a delivery payload must be JSON-serialisable');
          if (delivery.payload !== null && typeof delivery.payload === 'object')
            texts.set(delivery.payload, payloadJson);
        }
        // What could not be replayed must not reach the file.
        const problem = recordProblem(newRecord(id, delivery, payloadJson, 't') as unknown as Record<string, unknown>);
        if (problem) throw new TypeError(`delivery ${JSON.stringify(id)} has an invalid ${problem}`);
        return { id, delivery, payloadJson };
      });
    } catch (error) {
      return Promise.reject(error);
    }
    if (prepared.length === 0) return Promise.resolve([]);
    return this.#submit((overlay, t) => {
      const seen = new Set<string>();
      const ops: Op[] = [];
      for (const { id, delivery, payloadJson } of prepared) {
        if (seen.has(id) || overlay.get(id)) continue;
        seen.add(id);
        const record = newRecord(id, delivery, payloadJson, t);
        ops.push({
          op: 'add',
          r: delivery.sendingAlone ? freeze({ ...record, state: 'sending', attempts: 1, sendKey: id }) : record,
        });
      }
      return { ops, result: () => ops.map((op) => (op.op === 'add' ? op.r : undefined)).filter(isDefined) };
    });
  }

  /**
   * A send starts (attempts + 1), under the idempotency key `key` (kept as `sendKey`). Allowed while
   * pending or sending and not reorganised.
   */
  markSending(id: string, key?: string): Promise<DeliveryRecord> {
    return this.#change(id, (r, t) => {
      if (r.reorged) throw this.#refuse(id, 'its transaction was reorganised away; it must not be sent');
      if (r.state !== 'pending' && r.state !== 'sending') throw this.#refuse(id, `it is ${r.state}`);
      return [key === undefined ? { op: 'sending', id, t } : { op: 'sending', id, k: key, t }];
    });
  }

  /**
   * The chat accepted the message. Resolves with the record: when `reorged` is set and `editedAt` is
   * not, the message must be edited. Accepted in any state (a message that exists is worth knowing about),
   * except that a delivery already sent as another message is refused; the same message id again is a no-op.
   */
  markSent(id: string, messageId: string): Promise<DeliveryRecord> {
    return this.#change(id, (r, t) => {
      if (r.state === 'sent') {
        if (r.messageId === messageId) return [];
        throw this.#refuse(id, `it was already sent as message ${r.messageId ?? '?'}`);
      }
      return [{ op: 'sent', id, m: messageId, t }];
    });
  }

  /**
   * A send failed. By default the delivery goes back to `pending` (or `dropped` when its transaction was
   * reorganised meanwhile); with `final` (a permanent failure: the chat is gone, no access) it becomes
   * `failed` and is not retried. Not to be confused with {@link DeliveryRecord.final} (receipt finality).
   */
  markFailed(id: string, error: string, options: { final?: boolean } = {}): Promise<DeliveryRecord> {
    return this.#change(id, (r, t) => {
      if (r.state === 'failed' || r.state === 'dropped') return [];
      if (r.state === 'sent') throw this.#refuse(id, 'it was already sent');
      return [{ op: 'failed', id, e: error, p: options.final ?? false, t }];
    });
  }

  /** The sent message was edited after a reorg. */
  markEdited(id: string): Promise<DeliveryRecord> {
    return this.#change(id, (r, t) => {
      if (r.state !== 'sent') throw this.#refuse(id, `it is ${r.state}, there is no message to edit`);
      return r.editedAt === undefined ? [{ op: 'edited', id, t }] : [];
    });
  }

  /**
   * The transaction was reorganised away: its unsent deliveries are dropped, a send in flight is left
   * to finish (`markSent` then returns it for editing). Resolves with the sent deliveries whose
   * messages must still be edited (again on a repeated call until each is marked edited).
   */
  markReorged(network: string, txnHash: string): Promise<ReorgOutcome> {
    // Nothing recorded for it (most transactions): no write to wait for.
    if (!this.#records.byTxn.has(txnKey(network, txnHash)) && !this.#queue.some((job) => job.kind === 'ops')) {
      return Promise.resolve({ deliveries: 0, dropped: [], edits: [] });
    }
    return this.#submit((overlay, t) => {
      const ids = overlay.idsOf(network, txnHash);
      const before = ids.map((id) => overlay.get(id)).filter(isDefined);
      const changes = before.some((r) => !r.reorged);
      return {
        ops: changes ? [{ op: 'reorged', n: network, h: txnHash, t }] : [],
        result: (after) => {
          const now = ids.map((id) => after.get(id)).filter(isDefined);
          const wasUnsent = new Set(before.filter((r) => !r.reorged && r.state === 'pending').map((r) => r.id));
          return {
            deliveries: now.length,
            dropped: now.filter((r) => wasUnsent.has(r.id) && r.state === 'dropped'),
            edits: now.filter(needsEdit),
          };
        },
      };
    });
  }

  /**
   * The transaction's receipt is final: its sent deliveries are closed. Not synced on its own: it
   * resolves once written, and is made durable by the next synced write. Losing it in a crash of the
   * machine only keeps the deliveries longer.
   */
  markFinal(network: string, txnHash: string): Promise<void> {
    // Receipts come for every transaction of the watched contracts: most have no delivery here.
    if (!this.#records.byTxn.has(txnKey(network, txnHash))) return Promise.resolve();
    return this.#submit((overlay, t) => {
      const changes = overlay.idsOf(network, txnHash).some((id) => overlay.get(id)?.final === false);
      return {
        ops: changes ? [{ op: 'final', n: network, h: txnHash, t }] : [],
        result: () => undefined,
        relaxed: true,
      };
    });
  }

  has(id: string): boolean {
    return this.#records.byId.has(id);
  }

  get(id: string): DeliveryRecord | undefined {
    return this.#records.byId.get(id);
  }

  /** What must still be sent, in recording order: `pending`, and `sending` (possibly sent before a crash). */
  unfinished(): DeliveryRecord[] {
    return [...this.#records.byId.values()].filter(
      (r) => !r.reorged && (r.state === 'pending' || r.state === 'sending'),
    );
  }

  /** Sent messages of reorganised transactions that are not edited yet, in recording order. */
  pendingEdits(): DeliveryRecord[] {
    return [...this.#records.byId.values()].filter(needsEdit);
  }

  /** {@link DeliveryLog.deliveriesOf}, from memory. */
  deliveriesOf(network: string, txnHash: string): Promise<DeliveryRecord[]> {
    return Promise.resolve(this.byTransaction(network, txnHash));
  }

  /** {@link DeliveryLog.outstanding}, from memory. */
  outstanding(): Promise<OutstandingDeliveries> {
    return Promise.resolve({ sends: this.unfinished(), edits: this.pendingEdits() });
  }

  /** {@link DeliveryLog.counts}, from memory. */
  counts(): Promise<JournalStats> {
    return Promise.resolve(this.stats());
  }

  /** The deliveries of a transaction, in recording order. */
  byTransaction(network: string, txnHash: string): DeliveryRecord[] {
    const ids = this.#records.byTxn.get(txnKey(network, txnHash)) ?? [];
    return ids.map((id) => this.#records.byId.get(id)).filter(isDefined);
  }

  /**
   * The deliveries sent as one chat message (a burst merged into one message), in recording order:
   * what an edit of that message must rewrite.
   */
  /** Every record of a destination still kept (within the retention), in recording order. */
  /** {@link DeliveryLog.sentTogether}, from memory. */
  sentTogether(destination: Destination, messageId: string): Promise<DeliveryRecord[]> {
    return Promise.resolve(this.byMessage(destination, messageId));
  }

  /** {@link DeliveryLog.deliveredTo}, from memory. */
  deliveredTo(destination: Destination, since: Date): Promise<DeliveryRecord[]> {
    const from = since.getTime();
    return Promise.resolve(this.byDestination(destination).filter((r) => Date.parse(r.createdAt) >= from));
  }

  byDestination(destination: Destination): DeliveryRecord[] {
    const key = destinationKey(destination);
    return [...this.#records.byId.values()].filter((r) => destinationKey(r.destination) === key);
  }

  byMessage(destination: Destination, messageId: string): DeliveryRecord[] {
    const ids = this.#records.byMessage.get(messageKey(destination, messageId)) ?? [];
    return ids.map((id) => this.#records.byId.get(id)).filter(isDefined);
  }

  /**
   * Set while the journal's writes fail (disk full, file size limit, I/O error): when the failures
   * began and the last error. Cleared by the next write that succeeds, so that the caller need not
   * guess from its own errors whether the disk accepts writes again.
   */
  writeFailure(): JournalWriteFailure | undefined {
    return this.#writeFailure;
  }

  /** Every record the journal holds, in recording order (for moving it elsewhere: `npm run migrate-data`). */
  records(): DeliveryRecord[] {
    return [...this.#records.byId.values()];
  }

  stats(): JournalStats {
    const stats: JournalStats = {
      records: this.#records.byId.size,
      bytes: this.#bytes,
      pending: 0,
      sending: 0,
      sent: 0,
      failed: 0,
      dropped: 0,
    };
    for (const r of this.#records.byId.values()) stats[r.state] += 1;
    return stats;
  }

  /**
   * Rewrites the journal with the records still needed: all that are not closed, and closed ones
   * (sent and final, sent and edited after a reorg, failed, dropped) changed within the retention.
   * Crash-safe: a temporary file is synced and renamed over the journal.
   */
  compact(): Promise<void> {
    const refused = this.#refusal();
    if (refused) return Promise.reject(refused);
    return this.#enqueueTask(async () => {
      if (this.#broken) throw this.#broken;
      await this.#finishCompaction();
      // Holding the write queue: the snapshot is the whole journal and no write waits on the slices.
      await this.#startCompaction().phase1;
      await this.#finishCompaction();
    });
  }

  /** Waits for the writes under way, then closes the file. Later calls are refused. */
  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    return this.#enqueueTask(async () => {
      await this.#finishCompaction().catch((error: unknown) => this.#compactionFailed(error));
      await this.#handle.close();
      await Promise.all([...this.#closing].map((handle) => handle.close().catch(() => undefined)));
    });
  }

  #refuse(id: string, why: string): JournalError {
    return new JournalError(this.file, `delivery ${JSON.stringify(id)} cannot be changed: ${why}`);
  }

  #change(id: string, plan: (record: DeliveryRecord, t: string) => Op[]): Promise<DeliveryRecord> {
    return this.#submit((overlay, t) => {
      const record = overlay.get(id);
      if (!record) throw new JournalError(this.file, `there is no delivery ${JSON.stringify(id)}`);
      return {
        ops: plan(record, t),
        result: (after) => after.get(id) ?? record,
      };
    });
  }

  #submit<T>(plan: (overlay: Overlay, t: string) => Planned<T>): Promise<T> {
    const refused = this.#refusal();
    if (refused) return Promise.reject(refused);
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ kind: 'ops', plan, resolve: resolve as (value: unknown) => void, reject });
      this.#kick();
    });
  }

  #enqueueTask(run: () => Promise<void>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ kind: 'task', run, resolve: () => resolve(), reject });
      this.#kick();
    });
  }

  #refusal(): JournalError | LeaseLostError | undefined {
    if (this.#closed) return new JournalError(this.file, 'the journal is closed');
    return this.#fenced ?? this.#broken;
  }

  /** Throws when this process may no longer write the journal (see {@link DeliveryJournalOptions.fence}). */
  async #checkFence(): Promise<void> {
    if (this.#fenced) throw this.#fenced;
    try {
      const retaking = this.#fence?.();
      if (retaking) await retaking;
    } catch (error) {
      if (error instanceof LeaseLostError) this.#fenced = error;
      throw error;
    }
  }

  #kick(): void {
    if (this.#draining) return;
    this.#draining = true;
    // Calls made in the same turn of the event loop join one write.
    setImmediate(() => void this.#drain());
  }

  async #drain(): Promise<void> {
    for (;;) {
      if (this.#compaction?.serialized) {
        await this.#finishCompaction().catch((error: unknown) => this.#compactionFailed(error));
      }
      const first = this.#queue[0];
      if (!first) break;
      if (first.kind === 'task') {
        this.#queue.shift();
        try {
          await first.run();
          first.resolve(undefined);
        } catch (error) {
          first.reject(error);
        }
        continue;
      }
      const end = this.#queue.findIndex((job) => job.kind === 'task');
      const batch = this.#queue.splice(0, end === -1 ? this.#queue.length : end);
      try {
        await this.#writeBatch(batch);
      } catch (error) {
        for (const job of batch) job.reject(error);
      }
      if (this.#bytes > this.#compactAt && !this.#compaction && !this.#closed) {
        this.#startCompaction().phase1.then(
          () => this.#kick(),
          (error: unknown) => this.#compactionFailed(error),
        );
      }
    }
    this.#draining = false;
  }

  async #writeBatch(jobs: Job[]): Promise<void> {
    const overlay = new Overlay(this.#records);
    const t = this.#now().toISOString();
    const lines: string[] = [];
    const added: string[] = [];
    const accepted: { job: Job; result: unknown }[] = [];
    let sync = false;
    for (const job of jobs) {
      if (job.kind !== 'ops') continue;
      if (this.#broken) {
        job.reject(this.#broken);
        continue;
      }
      try {
        const planned = job.plan(overlay, t);
        const jobLines: string[] = [];
        const jobAdded: string[] = [];
        for (const op of planned.ops) {
          const problem = apply(overlay, op);
          if (problem) throw new JournalError(this.file, problem);
          jobLines.push(opLine(op));
          if (op.op === 'add') jobAdded.push(op.r.id);
        }
        lines.push(...jobLines);
        added.push(...jobAdded);
        if (jobLines.length > 0 && !planned.relaxed) sync = true;
        accepted.push({ job, result: planned.result(overlay) });
      } catch (error) {
        job.reject(error);
      }
    }
    if (lines.length > 0) {
      if (this.#bytes === 0) lines.unshift(HEADER_LINE);
      const data = Buffer.from(`${lines.join('\n')}\n`, 'utf8');
      try {
        await this.#checkFence();
        await this.#append(data, sync);
      } catch (error) {
        for (const { job } of accepted) job.reject(error);
        return;
      }
      overlay.commit();
      this.#bytes += data.length;
      const compaction = this.#compaction;
      if (compaction) {
        compaction.tail.push(...lines.filter((line) => line !== HEADER_LINE));
        compaction.added.push(...added);
        for (const id of overlay.changedIds()) compaction.touched.add(id);
      }
    }
    for (const { job, result } of accepted) job.resolve(result);
  }

  async #append(data: Buffer, sync: boolean): Promise<void> {
    let written = 0;
    try {
      while (written < data.length) {
        const { bytesWritten } = await this.#handle.write(data, written, data.length - written);
        if (bytesWritten === 0) throw new Error('the file accepted no bytes');
        written += bytesWritten;
      }
      if (this.#fsync && sync) await this.#handle.datasync();
      this.#writeFailure = undefined;
    } catch (cause) {
      const failure = new JournalWriteError(
        this.file,
        `could not write to the delivery journal (${message(cause)}); the operation was not recorded`,
        { cause },
      );
      const at = this.#now().toISOString();
      const failed: JournalWriteFailure = {
        since: this.#writeFailure?.since ?? at,
        at,
        code: failure.code,
        message: message(cause),
        failures: (this.#writeFailure?.failures ?? 0) + 1,
        broken: false,
      };
      this.#writeFailure = failed;
      if (written > 0) {
        try {
          await this.#handle.truncate(this.#bytes);
          if (this.#fsync) await this.#handle.datasync();
        } catch (undoCause) {
          // Appending after a partial line would corrupt the journal; a restart cuts the torn tail off.
          this.#broken = new JournalWriteError(
            this.file,
            `an incomplete write could not be undone (${message(undoCause)}); restart to recover the journal`,
            { cause: failure },
          );
          this.#writeFailure = { ...failed, broken: true };
        }
      }
      throw failure;
    }
  }

  #compactionFailed(error: unknown): void {
    // Retry once the file has grown by another threshold, not after every write.
    this.#compactAt = this.#bytes + this.#compactAfterBytes;
    this.#onCompactionError?.(error instanceof Error ? error : new Error(String(error)));
  }

  /**
   * Takes the snapshot, opens the temporary file and starts phase 1, which writes the kept records in
   * slices of about {@link SLICE_MS} of CPU, each followed by an asynchronous write (a turn of the event loop).
   */
  #startCompaction(): Compaction {
    // The snapshot is taken in the same turn as the tracking of later writes starts: none can fall between.
    const cutoff = this.#now().getTime() - this.#retentionMs;
    const snapshot = [...this.#records.byId.values()];
    let resolvePhase1!: () => void;
    let rejectPhase1!: (error: unknown) => void;
    const phase1 = new Promise<void>((resolve, reject) => {
      resolvePhase1 = resolve;
      rejectPhase1 = reject;
    });
    // Callers attach their handlers later (or never, when nobody waits for this compaction).
    phase1.catch(() => undefined);
    const compaction: Compaction = {
      temp: undefined,
      removed: new Map(),
      tail: [],
      added: [],
      touched: new Set(),
      bytes: 0,
      serialized: false,
      phase1,
    };
    this.#compaction = compaction;
    const writeSlices = async () => {
      await rm(this.#tempFile, { force: true });
      const temp = await open(this.#tempFile, 'ax');
      compaction.temp = temp;
      let lines = [HEADER_LINE];
      let at = 0;
      let synced = 0;
      while (at < snapshot.length) {
        const sliceEnd = performance.now() + SLICE_MS;
        do {
          const r = snapshot[at++] as DeliveryRecord;
          if (isClosed(r) && Date.parse(r.updatedAt) <= cutoff) {
            compaction.removed.set(r.id, r);
            continue;
          }
          lines.push(addLine(r));
        } while (at < snapshot.length && (at % 32 !== 0 || performance.now() < sliceEnd));
        compaction.bytes += await writeAll(temp, lines);
        lines = [];
        // Synced as it goes, outside the write queue, in steps small enough not to hold up the
        // journal's own syncs for long (one large flush would); phase 2 only syncs the tail.
        if (this.#fsync && compaction.bytes - synced >= SYNC_STEP_BYTES) {
          await temp.datasync();
          synced = compaction.bytes;
        }
        // Compaction is background work: it leaves the CPU and the disk to alerts most of the time.
        await sleep(SLICE_MS);
      }
      compaction.bytes += await writeAll(temp, lines);
      if (this.#fsync && compaction.bytes > synced) await temp.datasync();
    };
    writeSlices().then(
      () => {
        compaction.serialized = true;
        resolvePhase1();
      },
      async (cause: unknown) => {
        if (this.#compaction === compaction) this.#compaction = undefined;
        await compaction.temp?.close().catch(() => undefined);
        await rm(this.#tempFile, { force: true }).catch(() => undefined);
        rejectPhase1(
          new JournalWriteError(this.file, `could not be compacted (${message(cause)}); it was left as it was`, {
            cause,
          }),
        );
      },
    );
    return compaction;
  }

  /**
   * Phase 2 of the compaction under way, if any (waits for phase 1 first). Runs inside the write queue.
   * Records the snapshot left out but that changed since are written back before the tail, so that
   * the tail replays onto what it was written against.
   */
  async #finishCompaction(): Promise<void> {
    const compaction = this.#compaction;
    if (!compaction) return;
    try {
      await compaction.phase1;
    } catch {
      return; // reported by whoever started it
    }
    const { temp, removed, tail, touched } = compaction;
    if (!temp) return; // cannot happen: phase 1 opened it
    const restored = [...touched].filter((id) => removed.has(id));
    const lines = [...restored.map((id) => addLine(removed.get(id) as DeliveryRecord)), ...tail];
    let renamed = false;
    try {
      if (this.#broken) throw this.#broken;
      compaction.bytes += await writeAll(temp, lines);
      if (this.#fsync) await temp.datasync();
      await this.#checkFence();
      await rename(this.#tempFile, this.file);
      renamed = true;
    } catch (cause) {
      this.#compaction = undefined;
      await temp.close().catch(() => undefined);
      await rm(this.#tempFile, { force: true }).catch(() => undefined);
      if (cause instanceof LeaseLostError) throw cause;
      throw new JournalWriteError(this.file, `could not be compacted (${message(cause)}); it was left as it was`, {
        cause,
      });
    } finally {
      if (renamed) this.#compaction = undefined;
    }
    // The renamed temporary file is now the journal: keep appending through its handle. In memory,
    // the records left out go, and the records the file has after the snapshot's (those written back,
    // then those added since) move to the end, in the order the file replays them.
    const records = this.#records;
    for (const id of removed.keys()) if (!touched.has(id)) records.remove(id);
    for (const id of [...restored, ...compaction.added]) {
      const current = records.byId.get(id);
      if (!current) continue;
      records.remove(id);
      records.put(current);
    }
    const previous = this.#handle;
    this.#handle = temp;
    this.#bytes = compaction.bytes;
    this.#compactAt = Math.max(this.#compactAfterBytes, 2 * compaction.bytes);
    // Nothing writes to the old file any more. Its last close frees the blocks of the file the
    // rename unlinked (milliseconds for a large journal): the write queue does not wait for it.
    this.#closing.add(previous);
    void previous
      .close()
      .catch(() => undefined)
      .finally(() => this.#closing.delete(previous));
    if (this.#fsync) {
      try {
        await syncDirectory(dirname(this.file));
      } catch (cause) {
        throw new JournalWriteError(
          this.file,
          `was compacted but its directory could not be synced (${message(cause)})`,
          {
            cause,
          },
        );
      }
    }
  }
}

/** CPU time of one slice of a compaction's phase 1, between two turns of the event loop. */
const SLICE_MS = 2;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * A compaction syncs its temporary file each time this much more was written. The journal's own
 * syncs wait behind these flushes on the disk (with 1 MiB steps, its syncs during a compaction took
 * p99 16-27 ms against 4-5 ms outside one): smaller steps make each wait shorter.
 */
const SYNC_STEP_BYTES = 256 * 1024;

/** Writes the lines (each followed by a newline) at the handle's position; returns the bytes written. */
async function writeAll(handle: FileHandle, lines: readonly string[]): Promise<number> {
  if (lines.length === 0) return 0;
  const data = Buffer.from(`${lines.join('\n')}\n`, 'utf8');
  let written = 0;
  while (written < data.length) {
    const { bytesWritten } = await handle.write(data, written, data.length - written);
    if (bytesWritten === 0) throw new Error('the file accepted no bytes');
    written += bytesWritten;
  }
  return data.length;
}

function needsEdit(r: DeliveryRecord): boolean {
  return r.state === 'sent' && r.reorged && r.editedAt === undefined;
}

/** The file's line of an operation. */
function opLine(op: Op): string {
  return op.op === 'add' ? addLine(op.r) : JSON.stringify(op);
}

/** `{"op":"add","r":{…,"payload":…}}`: the payload text is spliced in as it is, not serialised again. */
function addLine(record: DeliveryRecord): string {
  const { payloadJson, ...rest } = record;
  const head = JSON.stringify({ op: 'add', r: rest });
  return `${head.slice(0, -2)},"payload":${payloadJson}}}`;
}

function newRecord(id: string, d: NewDelivery, payloadJson: string, t: string): DeliveryRecord {
  return freeze({
    id,
    eventId: d.eventId,
    destination: { platform: d.destination.platform, chatId: d.destination.chatId },
    network: d.network,
    txnHash: d.txnHash,
    blockNumber: d.blockNumber,
    ...(d.kind === undefined ? {} : { kind: d.kind }),
    ...(d.usd === undefined ? {} : { usd: d.usd }),
    state: 'pending',
    attempts: 0,
    reorged: false,
    final: false,
    createdAt: t,
    updatedAt: t,
    payloadJson,
  });
}

function freeze(record: DeliveryRecord): DeliveryRecord {
  Object.freeze(record.destination);
  return Object.freeze(record);
}

function isDefined<T>(value: T | undefined): value is T {
  return value !== undefined;
}

function errorCode(error: unknown): string | undefined {
  if (error instanceof Error && 'code' in error && typeof error.code === 'string') return error.code;
  return undefined;
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** The file's bytes, or undefined when it does not exist. Reads `size` bytes, so a device reads as empty. */
async function readJournalFile(file: string): Promise<Buffer | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(file, 'r');
  } catch (cause) {
    if (errorCode(cause) === 'ENOENT') return undefined;
    throw new StoreFileError(file, `cannot be read (${message(cause)})`, { cause });
  }
  try {
    const info = await handle.stat();
    if (info.isDirectory()) throw new StoreFileError(file, 'is a directory');
    const data = Buffer.alloc(info.size);
    let read = 0;
    while (read < data.length) {
      const { bytesRead } = await handle.read(data, read, data.length - read, read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    return data.subarray(0, read);
  } catch (cause) {
    if (cause instanceof StoreFileError) throw cause;
    throw new StoreFileError(file, `cannot be read (${message(cause)})`, { cause });
  } finally {
    await handle.close();
  }
}

/** Replays the file's operations; `validBytes` excludes a torn last line. */
function replay(file: string, data: Buffer): { records: Records; validBytes: number } {
  const records = new Records();
  const overlay = new Overlay(records);
  let start = 0;
  let lineNumber = 0;
  let validBytes = 0;
  while (start < data.length) {
    lineNumber += 1;
    const newline = data.indexOf(0x0a, start);
    if (newline === -1) break; // a torn last line
    const bytes = data.subarray(start, newline);
    const isLast = newline + 1 === data.length;
    let value: unknown;
    try {
      if (!isUtf8(bytes)) throw new Error('not UTF-8');
      value = JSON.parse(bytes.toString('utf8'));
    } catch (cause) {
      if (isLast) break; // a torn last line that happens to end in a newline
      throw new StoreFileError(file, `line ${lineNumber} is not valid JSON (${message(cause)})`, { cause });
    }
    if (lineNumber === 1) {
      checkHeader(file, value);
    } else {
      const op = parseOp(value);
      if (typeof op === 'string') throw new StoreFileError(file, `line ${lineNumber} ${op}`);
      const problem = apply(overlay, op);
      if (problem) throw new StoreFileError(file, `line ${lineNumber} ${problem}`);
    }
    start = newline + 1;
    validBytes = start;
  }
  overlay.commit();
  return { records, validBytes };
}

function checkHeader(file: string, value: unknown): void {
  if (!isObject(value) || value.op !== 'journal') {
    throw new StoreFileError(file, 'line 1 is not a delivery journal header (is this the right file?)');
  }
  const version = value.v;
  if (typeof version !== 'number' || !Number.isInteger(version) || version < 1) {
    throw new StoreFileError(file, `line 1 has no valid journal version (found ${JSON.stringify(version)})`);
  }
  if (version > FORMAT_VERSION) {
    throw new StoreFileError(
      file,
      `was written by a newer Floorwatch (journal version ${version}; this one reads up to ${FORMAT_VERSION})`,
    );
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

const isString = (value: unknown): value is string => typeof value === 'string';

/** The operation, or what is wrong with it. */
function parseOp(value: unknown): Op | string {
  if (!isObject(value)) return 'is not a JSON object';
  const { op } = value;
  switch (op) {
    case 'add': {
      const record = parseRecord(value.r);
      return typeof record === 'string' ? `has an invalid record: ${record}` : { op, r: record };
    }
    case 'sending':
      if (!isString(value.id) || !isString(value.t) || (value.k !== undefined && !isString(value.k))) {
        return 'has an invalid "sending"';
      }
      return isString(value.k) ? { op, id: value.id, k: value.k, t: value.t } : { op, id: value.id, t: value.t };
    case 'edited':
      return isString(value.id) && isString(value.t) ? { op, id: value.id, t: value.t } : `has an invalid "${op}"`;
    case 'sent':
      return isString(value.id) && isString(value.m) && isString(value.t)
        ? { op, id: value.id, m: value.m, t: value.t }
        : 'has an invalid "sent"';
    case 'failed':
      return isString(value.id) && isString(value.e) && typeof value.p === 'boolean' && isString(value.t)
        ? { op, id: value.id, e: value.e, p: value.p, t: value.t }
        : 'has an invalid "failed"';
    case 'reorged':
    case 'final':
      return isString(value.n) && isString(value.h) && isString(value.t)
        ? { op, n: value.n, h: value.h, t: value.t }
        : `has an invalid "${op}"`;
    default:
      return `has an unknown operation ${JSON.stringify(op)}`;
  }
}

/** A record as the file holds it (`payload` as JSON), or what is wrong with it. */
function parseRecord(value: unknown): DeliveryRecord | string {
  if (!isObject(value)) return 'not an object';
  const problem = recordProblem(value);
  if (problem) return problem;
  if (value.payload === undefined) return 'payload';
  const { payload, destination: dest, ...rest } = value as Record<string, unknown> & { destination: Destination };
  const record = {
    ...rest,
    destination: { platform: dest.platform, chatId: dest.chatId },
    payloadJson: JSON.stringify(payload),
  } as unknown as DeliveryRecord;
  return freeze(record);
}

/** What is wrong with a record's fields other than its payload, if anything. */
function recordProblem(value: Record<string, unknown>): string | undefined {
  const { destination: dest } = value;
  if (!isObject(dest) || !isString(dest.platform) || !PLATFORMS.has(dest.platform) || !isString(dest.chatId)) {
    return 'destination';
  }
  for (const key of ['id', 'eventId', 'network', 'txnHash', 'createdAt', 'updatedAt'] as const) {
    if (!isString(value[key])) return key;
  }
  for (const key of ['messageId', 'lastError', 'editedAt', 'sendKey'] as const) {
    if (value[key] !== undefined && !isString(value[key])) return key;
  }
  if (typeof value.blockNumber !== 'number' || !Number.isFinite(value.blockNumber)) return 'blockNumber';
  if (value.kind !== undefined && !(isString(value.kind) && DELIVERY_KINDS.has(value.kind))) return 'kind';
  if (value.usd !== undefined && !(typeof value.usd === 'number' && Number.isFinite(value.usd))) return 'usd';
  if (!isString(value.state) || !STATES.has(value.state)) return 'state';
  if (typeof value.attempts !== 'number' || !Number.isInteger(value.attempts) || value.attempts < 0) return 'attempts';
  if (typeof value.reorged !== 'boolean') return 'reorged';
  if (typeof value.final !== 'boolean') return 'final';
  return undefined;
}
