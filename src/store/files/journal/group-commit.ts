/**
 * Group commit: calls made close together are written with one `write` and one `fdatasync`, in the
 * order they were made; a call resolves only after both. A batch whose operations are all relaxed
 * (see {@link Planned.relaxed}) is written without a sync of its own. A failed write (disk full, I/O
 * error) rejects its calls with {@link JournalWriteError}; the memory state is not changed and the
 * bytes already written for it are cut off again. Tasks (compaction, close) run in the same queue,
 * between batches.
 */
import type { FileHandle } from 'node:fs/promises';
import { JournalError, JournalWriteError } from '../../../core/deliveries.ts';
import { LeaseLostError, type WriteFence } from '../../../core/lease.ts';
import type { JournalWriteFailure } from '../../../core/status.ts';
import { HEADER_LINE, message, opLines } from './format.ts';
import { apply, type Op, Overlay, type Records } from './records.ts';

/** What a call writes, and what it resolves with once written. */
export interface Planned<T> {
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

export interface GroupCommitOptions {
  file: string;
  handle: FileHandle;
  /** Bytes in the file. */
  bytes: number;
  /** The live records the batches change once written. */
  records: Records;
  now: () => Date;
  fsync: boolean;
  /** Asked right before every write (see DeliveryJournalOptions.fence). */
  fence: WriteFence | undefined;
  /** Inside the queue, before each batch or task (a compaction whose first phase ended finishes there). */
  beforeBatch: () => Promise<void>;
  /** After each batch is written (a compaction may start). */
  afterBatch: () => void;
  /** A batch was committed: its lines, the ids it added and the ids it changed. */
  committed: (lines: readonly string[], added: readonly string[], changed: Iterable<string>) => void;
}

/** The journal's write queue and its file. See the module comment. */
export class GroupCommit {
  readonly file: string;
  /** The file being appended to; a compaction replaces it with the file it wrote. */
  handle: FileHandle;
  /** Bytes in the file. */
  bytes: number;
  /** Set by close: later calls are refused. */
  closed = false;
  readonly #o: GroupCommitOptions;
  #queue: Job[] = [];
  #draining = false;
  #fenced: LeaseLostError | undefined;
  #broken: JournalWriteError | undefined;
  #writeFailure: JournalWriteFailure | undefined;

  constructor(options: GroupCommitOptions) {
    this.#o = options;
    this.file = options.file;
    this.handle = options.handle;
    this.bytes = options.bytes;
  }

  /** A partial write could not be undone: nothing more is written until a restart repairs the file. */
  get broken(): JournalWriteError | undefined {
    return this.#broken;
  }

  /** Why writes fail, from the first failure until a write succeeds again. */
  get writeFailure(): JournalWriteFailure | undefined {
    return this.#writeFailure;
  }

  /** Some call waits to be written. */
  get busy(): boolean {
    return this.#queue.some((job) => job.kind === 'ops');
  }

  /** Why a new call is refused now, if it is. */
  refusal(): JournalError | LeaseLostError | undefined {
    if (this.closed) return new JournalError(this.file, 'the journal is closed');
    return this.#fenced ?? this.#broken;
  }

  /** Queues a call: `plan` runs against the records (as the earlier calls of its batch left them) when its batch is written. */
  submit<T>(plan: (overlay: Overlay, t: string) => Planned<T>): Promise<T> {
    const refused = this.refusal();
    if (refused) return Promise.reject(refused);
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ kind: 'ops', plan, resolve: resolve as (value: unknown) => void, reject });
      this.#kick();
    });
  }

  /** Runs `run` in the queue, between batches. */
  task(run: () => Promise<void>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ kind: 'task', run, resolve: () => resolve(), reject });
      this.#kick();
    });
  }

  /** Throws when this process may no longer write the journal (see DeliveryJournalOptions.fence). */
  async checkFence(): Promise<void> {
    if (this.#fenced) throw this.#fenced;
    try {
      const retaking = this.#o.fence?.();
      if (retaking) await retaking;
    } catch (error) {
      if (error instanceof LeaseLostError) this.#fenced = error;
      throw error;
    }
  }

  /** Starts draining the queue (in the next turn of the event loop) unless it drains already. */
  kick(): void {
    this.#kick();
  }

  #kick(): void {
    if (this.#draining) return;
    this.#draining = true;
    // Calls made in the same turn of the event loop join one write.
    setImmediate(() => void this.#drain());
  }

  async #drain(): Promise<void> {
    for (;;) {
      await this.#o.beforeBatch();
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
      this.#o.afterBatch();
    }
    this.#draining = false;
  }

  async #writeBatch(jobs: Job[]): Promise<void> {
    const overlay = new Overlay(this.#o.records);
    const t = this.#o.now().toISOString();
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
        const jobAdded: string[] = [];
        for (const op of planned.ops) {
          const problem = apply(overlay, op);
          if (problem) throw new JournalError(this.file, problem);
          if (op.op === 'add') jobAdded.push(op.r.id);
        }
        // A call's deliveries that share a payload (an event's, to N chats) are one line.
        const jobLines = opLines(planned.ops);
        lines.push(...jobLines);
        added.push(...jobAdded);
        if (jobLines.length > 0 && !planned.relaxed) sync = true;
        accepted.push({ job, result: planned.result(overlay) });
      } catch (error) {
        job.reject(error);
      }
    }
    if (lines.length > 0) {
      if (this.bytes === 0) lines.unshift(HEADER_LINE);
      const data = Buffer.from(`${lines.join('\n')}\n`, 'utf8');
      try {
        await this.checkFence();
        await this.#append(data, sync);
      } catch (error) {
        for (const { job } of accepted) job.reject(error);
        return;
      }
      overlay.commit();
      this.bytes += data.length;
      this.#o.committed(
        lines.filter((line) => line !== HEADER_LINE),
        added,
        overlay.changedIds(),
      );
    }
    for (const { job, result } of accepted) job.resolve(result);
  }

  async #append(data: Buffer, sync: boolean): Promise<void> {
    let written = 0;
    try {
      while (written < data.length) {
        const { bytesWritten } = await this.handle.write(data, written, data.length - written);
        if (bytesWritten === 0) throw new Error('the file accepted no bytes');
        written += bytesWritten;
      }
      if (this.#o.fsync && sync) await this.handle.datasync();
      this.#writeFailure = undefined;
    } catch (cause) {
      const failure = new JournalWriteError(
        this.file,
        `could not write to the delivery journal (${message(cause)}); the operation was not recorded`,
        { cause },
      );
      const at = this.#o.now().toISOString();
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
          await this.handle.truncate(this.bytes);
          if (this.#o.fsync) await this.handle.datasync();
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
}
