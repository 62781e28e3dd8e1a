/**
 * Journal-first recording: every delivery is recorded durably in the delivery log before it is handed
 * to a queue that sends it, so that a restart loses nothing recorded and sends nothing twice. While
 * the log refuses writes (a full disk, a database that is down), what it did not take waits in
 * memory, in order, and is written again with back-off.
 */
import type { Logger } from 'pino';
import { deliveryId, JournalWriteError, type NewDelivery } from '../core/deliveries.ts';
import type { DeliveryLog } from '../core/ports.ts';
import type { JournalBacklog, JournalWriteFailure } from '../core/status.ts';
import { byDestination } from '../core/types.ts';
import type { DeliveryQueue } from './dispatcher.ts';

/**
 * Most deliveries kept in memory while the journal cannot be written (a disk that is full), each with
 * its rendered alert (a few KiB at most), so that an outage of hours cannot exhaust the process's
 * memory. An alert beyond it is dropped and counted ({@link RecordingCounters.dropped}); a recorded
 * one is never dropped for lack of room.
 */
export const MAX_UNRECORDED_DELIVERIES = 10_000;

/**
 * Alerts whose journal write failed ({@link JournalWriteError}: disk full, file size limit, I/O
 * error) wait in memory, in order, and are written again with back-off; later alerts queue behind
 * them, so that each chat still gets its alerts in the chain's order. Once the journal accepts them
 * they are recorded and delivered as usual, once. Reorgs queue with them (they are a few bytes and
 * must not overtake the alerts they reverse); they do not count against `maxDeliveries`.
 */
export interface JournalRetryOptions {
  /** Most deliveries kept; alerts beyond are dropped and counted. Default {@link MAX_UNRECORDED_DELIVERIES}. */
  maxDeliveries?: number;
  /** First delay before writing them again; doubles after each failed attempt. Default 1 s. */
  minDelayMs?: number;
  /** Longest delay between two attempts. Default 5 s. */
  maxDelayMs?: number;
}

/** What recording counted, for /status and metrics. */
export interface RecordingCounters {
  /** Deliveries recorded (one per matched destination). */
  deliveries: number;
  /** Reorganised transactions whose deliveries were marked. */
  reorged: number;
  /**
   * Deliveries never recorded nor sent: the journal could not be written and the alerts kept for it
   * were at their limit ({@link JournalRetryOptions.maxDeliveries}), or the process stopped (or the
   * journal refused them for another reason, such as being closed) before they could be written.
   */
  dropped: number;
}

/** One subject's deliveries (an event's alerts, one per destination), recorded with others in one write. */
export interface RecordingItem<S> {
  subject: S;
  deliveries: NewDelivery[];
}

export interface DeliveryRecorderOptions<S> {
  log: DeliveryLog;
  /** Where recorded deliveries go: this process's dispatcher, or the chat claims with a shared database. */
  queue: DeliveryQueue;
  logger: Logger;
  retry?: JournalRetryOptions;
  /** Observes each subject once its deliveries are recorded, with how many were new (metrics, benchmarks). */
  onRecorded?: (subject: S, recorded: number) => void;
}

/** A batch of alerts, or a reorg, that the log has not recorded yet. */
type Unrecorded<S> =
  | { kind: 'alerts'; items: ReadonlyArray<RecordingItem<S>>; deliveries: number }
  | { kind: 'reorg'; network: string; txnHash: string };

/** Since the log's writes began to fail, as the recorder saw it. */
interface Outage {
  startedAt: number;
  /** The failure that started it: still reported while alerts wait, even if a smaller write got through. */
  failure: JournalWriteFailure;
  /** Delay before the next attempt. */
  delayMs: number;
  /** Deliveries kept in memory, then recorded. */
  recorded: number;
  dropped: number;
  full: boolean;
}

/**
 * Records deliveries before they are sent and hands the new ones to the queue; keeps what the log
 * refuses (see {@link JournalRetryOptions}); marks the deliveries of reorganised transactions (the
 * sent ones come back to be edited) and of final ones.
 */
export class DeliveryRecorder<S> {
  readonly counters: RecordingCounters = { deliveries: 0, reorged: 0, dropped: 0 };
  readonly #o: DeliveryRecorderOptions<S>;
  /** Waits for the log, oldest first; empty while the disk is fine. */
  readonly #unrecorded: Array<Unrecorded<S>> = [];
  #unrecordedDeliveries = 0;
  #outage: Outage | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #retrying: Promise<void> | undefined;
  #stopped = false;

  constructor(options: DeliveryRecorderOptions<S>) {
    this.#o = options;
  }

  /** Something waits in memory for the log: a checkpoint must not pass it. */
  get waiting(): boolean {
    return this.#unrecorded.length > 0;
  }

  /** What waits in memory for the log (nothing while the disk is fine), and why. */
  backlog(): JournalBacklog {
    return {
      queued: this.#unrecordedDeliveries,
      reorgs: this.#unrecorded.length === 0 ? 0 : this.#unrecorded.filter((u) => u.kind === 'reorg').length,
      failure: this.#o.log.writeFailure() ?? this.#outage?.failure,
    };
  }

  /**
   * Records the deliveries of several subjects with one durable write, or keeps them for later when
   * the log cannot take them (or still holds older ones back).
   */
  async record(items: ReadonlyArray<RecordingItem<S>>): Promise<void> {
    const deliveries = items.reduce((sum, item) => sum + item.deliveries.length, 0);
    if (deliveries === 0) return;
    const alerts: Unrecorded<S> = { kind: 'alerts', items, deliveries };
    if (this.#unrecorded.length > 0) {
      this.#keep(alerts);
      return;
    }
    try {
      await this.#commit(alerts);
      if (this.#outage) this.#recovered();
    } catch (error) {
      if (error instanceof JournalWriteError) this.#keep(alerts, error);
      else this.#o.logger.error({ events: items.length, err: error }, 'could not record alerts');
    }
  }

  /** A transaction left the chain: its unsent deliveries are dropped and its sent ones edited. In order with the alerts. */
  async reorg(network: string, txnHash: string): Promise<void> {
    const reorg: Unrecorded<S> = { kind: 'reorg', network, txnHash };
    if (this.#unrecorded.length > 0) {
      this.#keep(reorg);
      return;
    }
    try {
      await this.#applyReorg(network, txnHash);
    } catch (error) {
      if (error instanceof JournalWriteError) this.#keep(reorg, error);
      else this.#o.logger.error({ network, txnHash, err: error }, 'could not apply a reorg');
    }
  }

  /**
   * A transaction is final. Out of the queue: finality only decides how long records are kept, and the
   * log groups these writes with the others. Lost, it only keeps them longer: a log that cannot write
   * is reported by the alerts that wait for it, not once per receipt.
   */
  final(network: string, txnHash: string): void {
    void this.#o.log
      .markFinal(network, txnHash)
      .catch((error: unknown) =>
        this.#o.logger[error instanceof JournalWriteError ? 'debug' : 'error'](
          { network, txnHash, err: error },
          'could not mark a transaction final',
        ),
      );
  }

  /**
   * Stops retrying. Alerts still waiting for the log get one last attempt; those it does not take are
   * lost (counted as dropped).
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    await this.#retrying;
    if (this.#unrecorded.length > 0) await this.#retry();
  }

  /** After {@link stop} and after the last flush of whatever feeds it: forgets (and counts) what was not recorded. */
  abandon(): void {
    if (this.#unrecordedDeliveries > 0) {
      this.counters.dropped += this.#unrecordedDeliveries;
      this.#o.logger.error(
        { lost: this.#unrecordedDeliveries, failure: this.#o.log.writeFailure() },
        'stopped while the journal could not be written: alerts kept in memory are lost',
      );
    }
    this.#unrecorded.length = 0;
    this.#unrecordedDeliveries = 0;
    this.#outage = undefined;
  }

  /** Records rendered alerts with one durable write and hands the new deliveries to the queue. */
  async #commit({ items }: Extract<Unrecorded<S>, { kind: 'alerts' }>): Promise<void> {
    const { log, queue } = this.#o;
    const all = items.flatMap((item) => item.deliveries);
    // An alert that will be sent alone (a lone one for a chat with nothing queued, or any on a
    // platform without merged messages) is recorded as sending: that saves a durable write on its
    // way. Several for one chat that merges bursts stay pending, to be merged.
    for (const list of byDestination(all).values()) {
      const first = list[0];
      // Decided at each attempt: a batch written again later finds its chats in another state.
      const alone = first !== undefined && queue.sendsAlone(first.destination, list.length);
      for (const delivery of list) delivery.sendingAlone = alone;
    }
    const recorded = await log.record(all);
    this.counters.deliveries += recorded.length;
    const onRecorded = this.#o.onRecorded;
    if (onRecorded) {
      const fresh = new Set(recorded.map((r) => r.id));
      for (const { subject, deliveries } of items) {
        onRecorded(subject, deliveries.filter((d) => fresh.has(deliveryId(d.eventId, d.destination))).length);
      }
    }
    queue.enqueue(recorded);
  }

  async #applyReorg(network: string, txnHash: string): Promise<void> {
    const { log, queue, logger } = this.#o;
    const { deliveries, dropped, edits } = await log.markReorged(network, txnHash);
    if (deliveries === 0) return;
    this.counters.reorged++;
    logger.info({ network, txnHash, edits: edits.length }, 'transaction reorganised away');
    queue.reorged([...dropped, ...edits]);
  }

  /** Queues what the log did not take, or drops and counts it when the queue is full. */
  #keep(entry: Unrecorded<S>, error?: JournalWriteError): void {
    const { logger } = this.#o;
    const limit = this.#o.retry?.maxDeliveries ?? MAX_UNRECORDED_DELIVERIES;
    const starting = this.#outage === undefined;
    const outage: Outage = this.#outage ?? {
      startedAt: Date.now(),
      failure: this.#o.log.writeFailure() ?? failureOf(error, new Date().toISOString()),
      delayMs: this.#o.retry?.minDelayMs ?? 1_000,
      recorded: 0,
      dropped: 0,
      full: false,
    };
    this.#outage = outage;
    if (entry.kind === 'alerts' && this.#unrecordedDeliveries + entry.deliveries > limit) {
      this.counters.dropped += entry.deliveries;
      outage.dropped += entry.deliveries;
    } else {
      if (entry.kind === 'alerts') this.#unrecordedDeliveries += entry.deliveries;
      this.#unrecorded.push(entry);
    }
    if (starting) {
      logger.error(
        { code: error?.code, err: error, queued: this.#unrecordedDeliveries, dropped: outage.dropped, limit },
        'cannot write the delivery journal: new alerts are kept in memory and written again with back-off',
      );
    } else if (outage.dropped > 0 && !outage.full) {
      outage.full = true;
      logger.warn(
        { queued: this.#unrecordedDeliveries, dropped: outage.dropped, limit },
        'the alerts kept for the journal reached their limit: newer ones are dropped until it accepts writes',
      );
    }
    this.#scheduleRetry();
  }

  #scheduleRetry(): void {
    const outage = this.#outage;
    if (!outage || this.#retryTimer || this.#retrying || this.#stopped || this.#unrecorded.length === 0) return;
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      void this.#retry();
    }, outage.delayMs);
  }

  /** Writes the kept alerts and reorgs, oldest first, until the queue is empty or a write fails. */
  #retry(): Promise<void> {
    if (this.#retrying) return this.#retrying;
    const run = async () => {
      for (let head = this.#unrecorded[0]; head; head = this.#unrecorded[0]) {
        try {
          if (head.kind === 'alerts') await this.#commit(head);
          else await this.#applyReorg(head.network, head.txnHash);
        } catch (error) {
          if (error instanceof JournalWriteError) {
            const outage = this.#outage;
            if (outage) {
              const max = this.#o.retry?.maxDelayMs ?? 5_000;
              outage.delayMs = Math.min(max, outage.delayMs * 2);
            }
            return;
          }
          this.#o.logger.error({ err: error }, 'could not record alerts kept for the journal; they are dropped');
          if (head.kind === 'alerts') this.counters.dropped += head.deliveries;
        }
        this.#unrecorded.shift();
        if (head.kind === 'alerts') {
          this.#unrecordedDeliveries -= head.deliveries;
          if (this.#outage) this.#outage.recorded += head.deliveries;
        }
      }
      this.#recovered();
    };
    this.#retrying = run().finally(() => {
      this.#retrying = undefined;
      this.#scheduleRetry();
    });
    return this.#retrying;
  }

  /** The log took a write and nothing waits any more: the outage is over. */
  #recovered(): void {
    const outage = this.#outage;
    if (!outage || this.#unrecorded.length > 0) return;
    this.#outage = undefined;
    this.#o.logger.info(
      {
        recorded: outage.recorded,
        dropped: outage.dropped,
        seconds: Math.round((Date.now() - outage.startedAt) / 1000),
      },
      'the delivery journal accepts writes again: the alerts kept in memory are recorded',
    );
  }
}

/** A log failure as the log would report it, for an error it did not keep (it recovered meanwhile). */
function failureOf(error: JournalWriteError | undefined, at: string): JournalWriteFailure {
  return {
    since: at,
    at,
    code: error?.code,
    message: error?.message ?? 'the journal refused a write',
    failures: 1,
    broken: false,
  };
}
