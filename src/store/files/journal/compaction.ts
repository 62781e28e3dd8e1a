/**
 * Compaction writes the live records of a snapshot as `add` lines to a temporary file beside the
 * journal (`<file>.compact`), in the background while the journal keeps appending; then, holding the
 * write queue, it appends the operations written meanwhile, syncs the file, renames it over the
 * journal and syncs the directory. A crash at any point leaves one complete journal (a leftover
 * `<file>.compact` is deleted on open).
 */

import { type FileHandle, open, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { type DeliveryRecord, followsListing, JournalWriteError } from '../../../core/deliveries.ts';
import { LeaseLostError } from '../../../core/lease.ts';
import { addLine, HEADER_LINE, message, opLines, syncDirectory, writeAll } from './format.ts';
import type { GroupCommit } from './group-commit.ts';
import { isClosed, type Op, type Records } from './records.ts';

/** CPU time of one slice of a compaction's phase 1, between two turns of the event loop. */
const SLICE_MS = 2;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * A compaction syncs its temporary file each time this much more was written. The journal's own
 * syncs wait behind these flushes on the disk (with 1 MiB steps, its syncs during a compaction took
 * p99 16-27 ms against 4-5 ms outside one): smaller steps make each wait shorter.
 */
const SYNC_STEP_BYTES = 256 * 1024;

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

export interface CompactorOptions {
  /** The journal's write queue and file: phase 2 runs in it and swaps its file. */
  writer: GroupCommit;
  records: Records;
  now: () => Date;
  fsync: boolean;
  /** Compact when the file grows past this size and has doubled since the last compaction. */
  compactAfterBytes: number;
  /** How long closed deliveries are kept. */
  retentionMs: number;
  /** Receives the failure of an automatic compaction (the journal keeps working uncompacted). */
  onError: ((error: Error) => void) | undefined;
}

/** The journal's compactions, one at a time. See the module comment. */
export class Compactor {
  readonly #o: CompactorOptions;
  readonly #tempFile: string;
  #compaction: Compaction | undefined;
  #compactAt: number;
  /** Handles of files replaced by a compaction, being closed outside the write queue. */
  readonly #closing = new Set<FileHandle>();

  constructor(options: CompactorOptions) {
    this.#o = options;
    this.#tempFile = `${options.writer.file}.compact`;
    this.#compactAt = options.compactAfterBytes;
  }

  /** The file has grown enough and no compaction runs: one should start (after a batch). */
  get due(): boolean {
    return this.#o.writer.bytes > this.#compactAt && !this.#compaction && !this.#o.writer.closed;
  }

  /** Phase 1 of the compaction under way has ended: phase 2 should run, in the write queue. */
  get serialized(): boolean {
    return this.#compaction?.serialized === true;
  }

  /** Keeps what a batch committed while a compaction runs, to append to its file in phase 2. */
  track(lines: readonly string[], added: readonly string[], changed: Iterable<string>): void {
    const compaction = this.#compaction;
    if (!compaction) return;
    compaction.tail.push(...lines);
    compaction.added.push(...added);
    for (const id of changed) compaction.touched.add(id);
  }

  /** An automatic compaction failed: it is tried again once the file has grown by another threshold, not after every write. */
  failed(error: unknown): void {
    this.#compactAt = this.#o.writer.bytes + this.#o.compactAfterBytes;
    this.#o.onError?.(error instanceof Error ? error : new Error(String(error)));
  }

  /** A compaction failed: the records its phase 1 forgot are in the file still, and in memory again. */
  #remember(compaction: Compaction): void {
    const records = this.#o.records;
    if (records.forgotten !== compaction.removed) return;
    records.forgotten = undefined;
    for (const [id, r] of compaction.removed) if (!records.byId.has(id)) records.put(r);
  }

  /** Resolves once the files replaced by compactions are closed. */
  async closeReplaced(): Promise<void> {
    await Promise.all([...this.#closing].map((handle) => handle.close().catch(() => undefined)));
  }

  /**
   * Takes the snapshot, opens the temporary file and starts phase 1, which writes the kept records in
   * slices of about {@link SLICE_MS} of CPU, each followed by an asynchronous write (a turn of the event loop).
   */
  start(): { phase1: Promise<void> } {
    const { writer, fsync } = this.#o;
    // The snapshot is taken in the same turn as the tracking of later writes starts: none can fall between.
    const now = this.#o.now().getTime();
    const cutoff = now - this.#o.retentionMs;
    const snapshot = [...this.#o.records.byId.values()];
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
    const records = this.#o.records;
    records.forgotten = compaction.removed;
    const writeSlices = async () => {
      await rm(this.#tempFile, { force: true });
      const temp = await open(this.#tempFile, 'ax');
      compaction.temp = temp;
      let lines = [HEADER_LINE];
      let at = 0;
      let synced = 0;
      while (at < snapshot.length) {
        const sliceEnd = performance.now() + SLICE_MS;
        // An event's deliveries kept side by side share one line and one copy of their payload. Their
        // lines are made inside the slice, at the end of an event, so that the slice's time covers them.
        let kept: Op[] = [];
        do {
          const r = snapshot[at++] as DeliveryRecord;
          if (isClosed(r) && Date.parse(r.updatedAt) <= cutoff && !followsListing(r, now)) {
            compaction.removed.set(r.id, r);
            // Forgotten now, inside the slice, unless it changed since the snapshot (then it is
            // touched, and phase 2 writes it back).
            if (records.byId.get(r.id) === r) records.remove(r.id);
          } else {
            kept.push({ op: 'add', r });
          }
          if (kept.length > 0 && snapshot[at]?.eventId !== r.eventId) {
            lines.push(...opLines(kept));
            kept = [];
          }
        } while (at < snapshot.length && (at % 32 !== 0 || performance.now() < sliceEnd));
        lines.push(...opLines(kept));
        compaction.bytes += await writeAll(temp, lines);
        lines = [];
        // Synced as it goes, outside the write queue, in steps small enough not to hold up the
        // journal's own syncs for long (one large flush would); phase 2 only syncs the tail.
        if (fsync && compaction.bytes - synced >= SYNC_STEP_BYTES) {
          await temp.datasync();
          synced = compaction.bytes;
        }
        // Compaction is background work: it leaves the CPU and the disk to alerts most of the time.
        await sleep(SLICE_MS);
      }
      compaction.bytes += await writeAll(temp, lines);
      if (fsync && compaction.bytes > synced) await temp.datasync();
    };
    writeSlices().then(
      () => {
        compaction.serialized = true;
        resolvePhase1();
      },
      async (cause: unknown) => {
        if (this.#compaction === compaction) this.#compaction = undefined;
        this.#remember(compaction);
        await compaction.temp?.close().catch(() => undefined);
        await rm(this.#tempFile, { force: true }).catch(() => undefined);
        rejectPhase1(
          new JournalWriteError(writer.file, `could not be compacted (${message(cause)}); it was left as it was`, {
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
  async finish(): Promise<void> {
    const { writer, fsync } = this.#o;
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
      if (writer.broken) throw writer.broken;
      compaction.bytes += await writeAll(temp, lines);
      if (fsync) await temp.datasync();
      await writer.checkFence();
      await rename(this.#tempFile, writer.file);
      renamed = true;
    } catch (cause) {
      this.#compaction = undefined;
      this.#remember(compaction);
      await temp.close().catch(() => undefined);
      await rm(this.#tempFile, { force: true }).catch(() => undefined);
      if (cause instanceof LeaseLostError) throw cause;
      throw new JournalWriteError(writer.file, `could not be compacted (${message(cause)}); it was left as it was`, {
        cause,
      });
    } finally {
      if (renamed) this.#compaction = undefined;
    }
    // The renamed temporary file is now the journal: keep appending through its handle. In memory,
    // the records left out are gone already (phase 1 forgot them). Records added since the snapshot
    // are after its records, in the order the file replays them; only when records were written back
    // before them (rare: a record left out but changed meanwhile) do those and then the added ones move
    // to the end, to keep that order. Moving thousands of added records every time, and forgetting
    // thousands here, held the write queue and the event loop (27-87 ms at 5 chats an event).
    const records = this.#o.records;
    records.forgotten = undefined;
    if (restored.length > 0) {
      for (const id of [...restored, ...compaction.added]) {
        const current = records.byId.get(id);
        if (!current) continue;
        records.remove(id);
        records.put(current);
      }
    }
    const previous = writer.handle;
    writer.handle = temp;
    writer.bytes = compaction.bytes;
    this.#compactAt = Math.max(this.#o.compactAfterBytes, 2 * compaction.bytes);
    // Nothing writes to the old file any more. Its last close frees the blocks of the file the
    // rename unlinked (milliseconds for a large journal): the write queue does not wait for it.
    this.#closing.add(previous);
    void previous
      .close()
      .catch(() => undefined)
      .finally(() => this.#closing.delete(previous));
    if (fsync) {
      try {
        await syncDirectory(dirname(writer.file));
      } catch (cause) {
        throw new JournalWriteError(
          writer.file,
          `was compacted but its directory could not be synced (${message(cause)})`,
          {
            cause,
          },
        );
      }
    }
  }
}
