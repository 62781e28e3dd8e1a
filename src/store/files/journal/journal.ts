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
 *    (a reorganised event is never sent) and returns them, and the sent ones, whose messages must be edited;
 *    `markEdited(id)` after each edit. A final receipt: `markFinal(network, txnHash)`.
 *
 * On restart, {@link DeliveryJournal.outstanding} lists what must still be sent, in recording order,
 * and the reorg edits not done yet. The journal cannot know
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
 * {"op":"journal","v":2}
 * {"op":"add","r":{"id":"devnet:0xab…:0xc0…:sale>discord:42","eventId":…,"state":"pending",…,"payload":{…}}}
 * {"op":"adds","r":[{"id":"…>discord:42",…},{"id":"…>telegram:7",…}],"payload":{…}}
 * {"op":"sending","id":"…","k":"…","t":"2025-01-01T00:00:00.000Z"}
 * {"op":"sent","id":"…","m":"1234567890","t":"…"}
 * {"op":"failed","id":"…","e":"429 Too Many Requests","p":false,"t":"…"}
 * {"op":"reorged","n":"devnet","h":"0xab…","t":"…"}
 * {"op":"edited","id":"…","t":"…"}
 * {"op":"final","n":"devnet","h":"0xab…","t":"…"}
 * ```
 *
 * An `adds` line is an event's deliveries to several chats recorded by one call: the payload they
 * share is written once (version 1 files, without it, still read).
 *
 * Calls made close together are written with one `write` and one `fdatasync` (group commit,
 * group-commit.ts); a call resolves only after both. `markFinal` alone is written without a sync of
 * its own (see there). Compaction (compaction.ts) rewrites the file with the records still needed, in
 * the background. One process at a time may use a journal file. The records in memory and their
 * indexes are in records.ts, the lines and the replay in format.ts.
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
import { type FileHandle, open, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import {
  type DeliveryRecord,
  deliveryId,
  JournalError,
  type JournalStats,
  type NewDelivery,
} from '../../../core/deliveries.ts';
import type { WriteFence } from '../../../core/lease.ts';
import type { DeliveryLog, ListingClose, OutstandingDeliveries, ReorgOutcome } from '../../../core/ports.ts';
import type { JournalWriteFailure } from '../../../core/status.ts';
import { StoreFileError } from '../../../core/store-errors.ts';
import { type Destination, destinationKey } from '../../../core/types.ts';
import { Compactor } from './compaction.ts';
import { message, newRecord, readJournalFile, recordProblem, replay, syncDirectory } from './format.ts';
import { GroupCommit, type Planned } from './group-commit.ts';
import {
  freeze,
  isDefined,
  listingKey,
  messageKey,
  needsEdit,
  type Op,
  type Overlay,
  type Records,
  txnKey,
} from './records.ts';

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

const DEFAULT_COMPACT_AFTER_BYTES = 4 * 1024 * 1024;
const DEFAULT_RETENTION_MS = 24 * 60 * 60 * 1000;

/**
 * The append-only journal of alert deliveries (see the module comment for the protocol, the file
 * format and the recovery rules). Reads are synchronous and served from memory; every change is
 * appended to the file and resolves once it is durable.
 *
 * @example
 * const journal = await DeliveryJournal.open('data/deliveries.jsonl');
 * for (const d of (await journal.outstanding()).sends) await send(d); // after a restart
 * const [fresh] = await journal.record([{ eventId: event.id, destination, network, txnHash, blockNumber, payload }]);
 * if (fresh) {
 *   await journal.markSending(fresh.id);
 *   const messageId = await chat.send(payloadOf(fresh), { nonce: fresh.id });
 *   await journal.markSent(fresh.id, messageId);
 * }
 */
export class DeliveryJournal implements DeliveryLog {
  readonly file: string;
  readonly #records: Records;
  readonly #writer: GroupCommit;
  readonly #compactor: Compactor;

  private constructor(
    file: string,
    handle: FileHandle,
    records: Records,
    bytes: number,
    options: Required<Omit<DeliveryJournalOptions, 'onCompactionError' | 'fence'>> & DeliveryJournalOptions,
  ) {
    this.file = file;
    this.#records = records;
    // Each is built with the other's hooks, which run only once the queue drains.
    const compactor = (): Compactor => this.#compactor;
    this.#writer = new GroupCommit({
      file,
      handle,
      bytes,
      records,
      now: options.now,
      fsync: options.fsync,
      fence: options.fence,
      beforeBatch: async () => {
        if (compactor().serialized)
          await compactor()
            .finish()
            .catch((error: unknown) => compactor().failed(error));
      },
      afterBatch: () => {
        if (!compactor().due) return;
        compactor()
          .start()
          .phase1.then(
            () => this.#writer.kick(),
            (error: unknown) => compactor().failed(error),
          );
      },
      committed: (lines, added, changed) => compactor().track(lines, added, changed),
    });
    this.#compactor = new Compactor({
      writer: this.#writer,
      records,
      now: options.now,
      fsync: options.fsync,
      compactAfterBytes: options.compactAfterBytes,
      retentionMs: options.retentionMs,
      onError: options.onCompactionError,
    });
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
        journal.#compactor.failed(error);
      }
    }
    return journal;
  }

  /**
   * Every record the journal file holds, in recording order, read only: no torn last line cut off,
   * no file created, no compaction (for `npm run migrate-data`, which leaves the files as they were).
   * Throws a {@link StoreFileError} when the file cannot be read, as {@link DeliveryJournal.open} does.
   */
  static async read(file: string): Promise<DeliveryRecord[]> {
    const data = await readJournalFile(file);
    if (!data) return [];
    return [...replay(file, data).records.byId.values()];
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

  /** The sent message was edited after a reorg, or (`fateRev`) to show its listing's fate of that revision. */
  markEdited(id: string, fateRev?: number): Promise<DeliveryRecord> {
    return this.#change(id, (r, t) => {
      if (r.state !== 'sent') throw this.#refuse(id, `it is ${r.state}, there is no message to edit`);
      if (fateRev === undefined) return r.editedAt === undefined ? [{ op: 'edited', id, t }] : [];
      const shown = r.fateShown === fateRev && (!r.reorged || r.editedAt !== undefined);
      return shown ? [] : [{ op: 'edited', id, t, r: fateRev }];
    });
  }

  /** {@link DeliveryLog.markListingsClosed}. */
  markListingsClosed(close: ListingClose): Promise<DeliveryRecord[]> {
    const keys = [
      ...close.orderIds.map((id) => listingKey(close.network, close.collection, 'o', id)),
      ...(close.fate.state === 'sold' && close.seller !== undefined
        ? close.tokenIds.map((id) => listingKey(close.network, close.collection, 't', id))
        : []),
    ];
    const candidates = [...new Set(keys.flatMap((key) => this.#records.byListing.get(key) ?? []))];
    if (candidates.length === 0) return Promise.resolve([]);
    const since = close.since.getTime();
    return this.#submit((overlay, t) => {
      const ids = candidates.filter((id) => {
        const r = overlay.get(id);
        return r !== undefined && closes(close, r, since);
      });
      return {
        ops: ids.length ? [{ op: 'fate', ids, f: close.fate, t }] : [],
        result: (after) =>
          ids
            .map((id) => after.get(id))
            .filter(isDefined)
            .filter(needsEdit),
      };
    });
  }

  /** {@link DeliveryLog.markListingsExpired}. */
  markListingsExpired(network: string, now: Date, since: Date): Promise<DeliveryRecord[]> {
    const expired = (r: DeliveryRecord | undefined): r is DeliveryRecord =>
      r !== undefined &&
      r.network === network &&
      r.listing?.expiresAt !== undefined &&
      Date.parse(r.listing.expiresAt) <= now.getTime() &&
      mayClose(r, since.getTime());
    if (![...this.#records.listings].some((id) => expired(this.#records.byId.get(id)))) return Promise.resolve([]);
    return this.#submit((overlay, t) => {
      const ids = [...this.#records.listings].filter((id) => expired(overlay.get(id)));
      return {
        ops: ids.length ? [{ op: 'fate', ids, f: { state: 'expired' }, t }] : [],
        result: (after) =>
          ids
            .map((id) => after.get(id))
            .filter(isDefined)
            .filter(needsEdit),
      };
    });
  }

  /**
   * The transaction was reorganised away: its unsent deliveries are dropped, a send in flight is left
   * to finish (`markSent` then returns it for editing). Resolves with the sent deliveries whose
   * messages must still be edited (again on a repeated call until each is marked edited).
   */
  markReorged(network: string, txnHash: string): Promise<ReorgOutcome> {
    // Nothing recorded for it (most transactions): no write to wait for.
    const closedCards = [...this.#records.listings].some((id) => {
      const fate = this.#records.byId.get(id)?.fate;
      return (fate?.state === 'sold' || fate?.state === 'cancelled') && fate.txnHash === txnHash;
    });
    if (!this.#records.byTxn.has(txnKey(network, txnHash)) && !closedCards && !this.#writer.busy) {
      return Promise.resolve({ deliveries: 0, dropped: [], edits: [] });
    }
    return this.#submit((overlay, t) => {
      const ids = overlay.idsOf(network, txnHash);
      const before = ids.map((id) => overlay.get(id)).filter(isDefined);
      const changes = before.some((r) => !r.reorged);
      // Listing cards this transaction closed (sold, cancelled) stand again.
      const reopened = [...this.#records.listings].filter((id) => {
        const fate = overlay.get(id)?.fate;
        return (fate?.state === 'sold' || fate?.state === 'cancelled') && fate.txnHash === txnHash;
      });
      const ops: Op[] = changes ? [{ op: 'reorged', n: network, h: txnHash, t }] : [];
      if (reopened.length) ops.push({ op: 'fate', ids: reopened, f: { state: 'listed', reversed: txnHash }, t });
      return {
        ops,
        result: (after) => {
          const now = ids.map((id) => after.get(id)).filter(isDefined);
          const wasUnsent = new Set(before.filter((r) => !r.reorged && r.state === 'pending').map((r) => r.id));
          return {
            deliveries: now.length + reopened.length,
            dropped: now.filter((r) => wasUnsent.has(r.id) && r.state === 'dropped'),
            edits: [...now, ...reopened.map((id) => after.get(id)).filter(isDefined)].filter(needsEdit),
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

  /** {@link DeliveryLog.sentTogether}, from memory. */
  sentTogether(destination: Destination, messageId: string): Promise<DeliveryRecord[]> {
    return Promise.resolve(this.byMessage(destination, messageId));
  }

  /** {@link DeliveryLog.deliveredTo}, from memory. */
  deliveredTo(destination: Destination, since: Date): Promise<DeliveryRecord[]> {
    const from = since.getTime();
    return Promise.resolve(this.byDestination(destination).filter((r) => Date.parse(r.createdAt) >= from));
  }

  /** Every record of a destination still kept (within the retention), in recording order. */
  byDestination(destination: Destination): DeliveryRecord[] {
    const key = destinationKey(destination);
    return [...this.#records.byId.values()].filter((r) => destinationKey(r.destination) === key);
  }

  /**
   * The deliveries sent as one chat message (a burst merged into one message), in recording order:
   * what an edit of that message must rewrite.
   */
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
    return this.#writer.writeFailure;
  }

  stats(): JournalStats {
    const stats: JournalStats = {
      records: this.#records.byId.size,
      bytes: this.#writer.bytes,
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
    const refused = this.#writer.refusal();
    if (refused) return Promise.reject(refused);
    return this.#writer.task(async () => {
      if (this.#writer.broken) throw this.#writer.broken;
      await this.#compactor.finish();
      // Holding the write queue: the snapshot is the whole journal and no write waits on the slices.
      await this.#compactor.start().phase1;
      await this.#compactor.finish();
    });
  }

  /** Waits for the writes under way, then closes the file. Later calls are refused. */
  close(): Promise<void> {
    if (this.#writer.closed) return Promise.resolve();
    this.#writer.closed = true;
    return this.#writer.task(async () => {
      await this.#compactor.finish().catch((error: unknown) => this.#compactor.failed(error));
      await this.#writer.handle.close();
      await this.#compactor.closeReplaced();
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
    return this.#writer.submit(plan);
  }
}

/** A listing card that something may still close: not reorganised, not closed already, recorded since `since`. */
export function mayClose(r: DeliveryRecord, since: number): boolean {
  return (
    r.listing !== undefined &&
    !r.reorged &&
    (r.state === 'pending' || r.state === 'sending' || r.state === 'sent') &&
    (r.fate === undefined || r.fate.state === 'listed') &&
    Date.parse(r.createdAt) >= since
  );
}

/** Whether a sale or cancel closes this listing card (see {@link ListingClose}). */
export function closes(close: ListingClose, r: DeliveryRecord, since: number): boolean {
  const listing = r.listing;
  if (!listing || !mayClose(r, since) || r.network !== close.network || listing.collection !== close.collection) {
    return false;
  }
  if (r.blockNumber > close.blockNumber) return false;
  if (listing.orderIds.some((id) => close.orderIds.includes(id))) return true;
  return (
    close.fate.state === 'sold' &&
    close.seller !== undefined &&
    listing.seller === close.seller &&
    listing.tokenIds.some((id) => close.tokenIds.includes(id))
  );
}
