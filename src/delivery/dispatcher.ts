import { setMaxListeners } from 'node:events';
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { type DeliveryRecord, JournalWriteError, type NewDelivery, needsEdit, payloadOf } from '../core/deliveries.ts';
import { LeaseLostError, type SendFence } from '../core/lease.ts';
import type { DeliveryLog } from '../core/ports.ts';
import type { Reply } from '../core/reply.ts';
import { type Destination, destinationKey } from '../core/types.ts';
import { currentReply } from './edits.ts';
import { withLateness } from './lateness.ts';
import { type AlertSink, DeliveryError, decodePayload } from './sink.ts';

export { renderReorged } from './edits.ts';

/**
 * Where recorded deliveries go to be sent: this process's {@link Dispatcher}, or, with a shared
 * database, the chat claims (claims.ts) that decide which process sends them.
 */
export interface DeliveryQueue {
  enqueue(records: readonly DeliveryRecord[]): void;
  /**
   * Deliveries of reorganised transactions, as the log marked them: unsent ones (dropped) are not
   * sent, sent ones are edited to say the transaction did not happen. Also sent listing cards whose
   * listing's fate changed: they are edited to show it.
   */
  reorged(records: readonly DeliveryRecord[]): void;
  /** See {@link Dispatcher.sendsAlone}. */
  sendsAlone(destination: Destination, together: number): boolean;
}

export interface DispatcherOptions {
  journal: DeliveryLog;
  sinks: ReadonlyMap<Destination['platform'], AlertSink>;
  logger: Logger;
  /** First retry delay of a failing destination; doubles up to `maxRetryDelayMs`. */
  retryDelayMs?: number;
  maxRetryDelayMs?: number;
  /** Attempts before a delivery is given up and reported. */
  maxAttempts?: number;
  /** Called when a destination cannot be posted to (its rules are paused by the caller). */
  onUnreachable?: (destination: Destination, reason: string) => void;
  /** Observes each outcome (metrics, tests). */
  onOutcome?: (outcome: 'sent' | 'retried' | 'failed' | 'edited', platform: string, count: number) => void;
  /**
   * Asked right before each send and edit (the send waits while it takes a late lease again): when
   * it fails with {@link LeaseLostError} (this process no longer holds the lease that lets it send
   * there), nothing is sent or written and the dispatcher stops; the deliveries stay recorded for the
   * holder.
   */
  fence?: SendFence;
  /**
   * The chat's time zone (its digest's), for the clock a late alert's note shows where the platform
   * cannot show each reader's own (Telegram, the terminal); UTC when undefined.
   */
  timeZoneOf?: (destination: Destination) => string | undefined;
}

interface Lane {
  destination: Destination;
  queue: string[];
  /** The deliveries of the send under way (or that just failed). */
  sending: string[];
  edits: string[];
  /** The work under way (or that just failed) is an edit. */
  editing: boolean;
  /** The last work done was an edit: with sends waiting, a send goes next (edits never starve new alerts). */
  editedLast: boolean;
  running: boolean;
  nextAt: number;
  failures: number;
  /** `markSent` writes under way for this lane. */
  marking: number;
}

/** Waits `ms`, or less when `signal` aborts. */
function sleepUnless(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Longest wait between two attempts to write to a journal that refused a write (a full disk): once
 * the disk accepts writes again, the chats get their alerts within this time.
 */
const MAX_JOURNAL_RETRY_DELAY_MS = 5_000;

/**
 * Sends journaled deliveries, one lane per destination: each lane keeps its chat's pace, merges a
 * burst into one message where the platform allows, backs off on failure without holding up the
 * other lanes, and records every outcome in the journal.
 */
export class Dispatcher implements DeliveryQueue {
  readonly #options: DispatcherOptions;
  readonly #lanes = new Map<string, Lane>();
  /**
   * The deliveries queued, being sent or edited, as the journal last answered about each: the
   * dispatcher keeps what it was handed and what each change resolved with, and never reads back.
   */
  readonly #records = new Map<string, DeliveryRecord>();
  readonly #idle = new Set<() => void>();
  /** `markSent` writes under way: a lane does not wait for them to start its next send. */
  readonly #marking = new Set<Promise<void>>();
  /** Lanes whose last journal write failed: they wait for the disk (said once for them all). */
  readonly #blocked = new Set<Lane>();
  /** Aborted by stop(): cuts short the lanes' waits. */
  readonly #stop = new AbortController();
  /** Deliveries recorded before this tell of a restart when they go out late. */
  readonly #startedAt = Date.now();
  /** When each delivery held was queued here: one that waited in its lane since says so when late. */
  readonly #queuedAt = new Map<string, number>();
  /**
   * The Reply of each payload text lately sent, read once for all its chats: an event's deliveries
   * share one text, and handing every lane the same object lets a sink render it once per platform
   * (see DiscordSink, TelegramOutbox), not once per chat. Sinks must not change it.
   */
  readonly #replies = new LRUCache<string, Reply>({ max: 512 });
  #stopping = false;

  constructor(options: DispatcherOptions) {
    this.#options = options;
    // Every waiting lane listens for stop: thousands of chats of one sale are no leak.
    setMaxListeners(0, this.#stop.signal);
  }

  /**
   * Queues what the journal says must still be sent, and the reorg edits not made yet, in recording
   * order: after a restart, nothing recorded is lost. Call it once the sinks are in place.
   */
  async resume(): Promise<void> {
    const { journal, logger } = this.#options;
    const { sends, edits } = await journal.outstanding();
    if (sends.length || edits.length) {
      logger.info({ unfinished: sends.length, edits: edits.length }, 'resuming deliveries from the journal');
    }
    this.enqueue(sends);
    this.reorged(edits);
  }

  /** Queues journaled deliveries (new ones, or unfinished ones after a restart). */
  enqueue(records: readonly DeliveryRecord[]): void {
    const lanes = new Set<Lane>();
    const now = Date.now();
    for (const record of records) {
      const lane = this.#lane(record.destination);
      this.#records.set(record.id, record);
      if (!this.#queuedAt.has(record.id)) this.#queuedAt.set(record.id, now);
      if (!lane.queue.includes(record.id)) lane.queue.push(record.id);
      lanes.add(lane);
    }
    // All queued before a lane starts: a batch resent after a restart must find all its deliveries.
    for (const lane of lanes) this.#run(lane);
  }

  /**
   * Nothing is queued, under way or waiting out a pause for this destination.
   */
  isIdle(destination: Destination): boolean {
    const lane = this.#lanes.get(destinationKey(destination));
    if (!lane) return true;
    return (
      !lane.running &&
      lane.queue.length === 0 &&
      lane.edits.length === 0 &&
      lane.marking === 0 &&
      lane.nextAt <= Date.now()
    );
  }

  /**
   * Whether deliveries recorded now for this destination (`together` of them at once) will each be
   * sent alone, so that they may be recorded as sending (see {@link NewDelivery.sendingAlone}): always
   * on a platform that puts one alert in a message; elsewhere, a lone delivery to an idle chat (more
   * would be merged into one message). A hint: a chat that got busy meanwhile only sends them unmerged.
   */
  sendsAlone(destination: Destination, together: number): boolean {
    const sink = this.#options.sinks.get(destination.platform);
    if (!sink) return false;
    return sink.maxBatch <= 1 || (together === 1 && this.isIdle(destination));
  }

  /**
   * Deliveries whose transaction was reorganised away: a queued one that was not sent leaves the
   * queue, a sent one's message is edited.
   */
  reorged(records: readonly DeliveryRecord[]): void {
    for (const record of records) {
      const lane = this.#lane(record.destination);
      if (this.#records.has(record.id) || needsEdit(record)) this.#records.set(record.id, record);
      if (needsEdit(record) && !lane.edits.includes(record.id)) lane.edits.push(record.id);
      this.#run(lane);
    }
  }

  /** Deliveries waiting, per platform (metrics). */
  depth(): Map<string, number> {
    const out = new Map<string, number>();
    for (const lane of this.#lanes.values()) {
      out.set(
        lane.destination.platform,
        (out.get(lane.destination.platform) ?? 0) + lane.queue.length + lane.edits.length,
      );
    }
    return out;
  }

  /** Resolves when every lane is empty and every outcome recorded (tests, shutdown). */
  drained(): Promise<void> {
    return this.#settle((lane) => lane.running || lane.queue.length > 0 || lane.edits.length > 0);
  }

  /** Stops taking new work; in-flight sends finish, the rest stays journaled for the next start. */
  stop(): Promise<void> {
    this.#stopping = true;
    this.#stop.abort();
    return this.#settle((lane) => lane.running);
  }

  /** Waits until no lane is `busy` and no outcome is still being written. */
  async #settle(busy: (lane: Lane) => boolean): Promise<void> {
    while (this.#marking.size || [...this.#lanes.values()].some(busy)) {
      if (this.#marking.size) await Promise.all(this.#marking);
      else await new Promise<void>((resolve) => this.#idle.add(resolve));
    }
  }

  #lane(destination: Destination): Lane {
    const key = destinationKey(destination);
    let lane = this.#lanes.get(key);
    if (!lane) {
      lane = {
        destination,
        queue: [],
        sending: [],
        edits: [],
        editing: false,
        editedLast: false,
        running: false,
        nextAt: 0,
        failures: 0,
        marking: 0,
      };
      this.#lanes.set(key, lane);
    }
    return lane;
  }

  #run(lane: Lane): void {
    if (lane.running || this.#stopping) return;
    lane.running = true;
    void this.#drain(lane).finally(() => {
      lane.running = false;
      for (const resolve of this.#idle) resolve();
      this.#idle.clear();
      if (!this.#stopping && (lane.queue.length || lane.edits.length)) this.#run(lane);
    });
  }

  async #drain(lane: Lane): Promise<void> {
    const { logger } = this.#options;
    const sink = this.#options.sinks.get(lane.destination.platform);
    if (!sink) {
      // No adapter for this platform in this process (not configured): the deliveries stay
      // pending in the journal and go out once a run has the adapter.
      this.#options.logger.warn(
        { destination: destinationKey(lane.destination), waiting: lane.queue.length },
        'no chat adapter for this destination; deliveries kept for a later start',
      );
      for (const id of [...lane.queue, ...lane.edits]) {
        this.#records.delete(id);
        this.#queuedAt.delete(id);
      }
      lane.queue.length = 0;
      lane.edits.length = 0;
      return;
    }
    while (!this.#stopping && (lane.queue.length || lane.edits.length)) {
      const wait = lane.nextAt - Date.now();
      if (wait > 0) await sleepUnless(wait, this.#stop.signal);
      if (this.#stopping) return;
      try {
        // Edits and new alerts take turns: a burst of edits (listings sold) never holds up new alerts.
        lane.editing = lane.edits.length > 0 && (lane.queue.length === 0 || !lane.editedLast);
        lane.editedLast = lane.editing;
        if (lane.editing) await this.#edit(lane, sink);
        else await this.#send(lane, sink);
        lane.failures = 0;
        lane.nextAt = Date.now() + sink.minIntervalMs;
        if (this.#blocked.delete(lane) && this.#blocked.size === 0) {
          logger.info('the delivery journal accepts writes again: the chats get their alerts');
        }
      } catch (error) {
        if (error instanceof LeaseLostError) {
          this.#fenced(lane, error);
          return;
        }
        lane.failures++;
        // A journal that cannot be written is no fault of the chat: the lane waits for the disk, and
        // nothing is counted against the deliveries.
        if (error instanceof JournalWriteError) this.#journalRefused(lane, error);
        else
          await this.#failed(lane, error).catch((writeError: unknown) =>
            writeError instanceof LeaseLostError
              ? this.#fenced(lane, writeError)
              : this.#journalRefused(lane, writeError),
          );
      }
    }
  }

  /** Keeps what the journal answered about deliveries this dispatcher holds. */
  #keep(records: readonly DeliveryRecord[]): void {
    for (const record of records) if (this.#records.has(record.id)) this.#records.set(record.id, record);
  }

  /** Takes deliveries out of the lane's queue and forgets those the lane holds no more. */
  #forget(lane: Lane, ids: readonly string[]): void {
    if (ids.length === 0) return;
    const gone = new Set(ids);
    lane.queue = lane.queue.filter((id) => !gone.has(id));
    for (const id of gone) {
      if (!lane.edits.includes(id) && !lane.sending.includes(id)) {
        this.#records.delete(id);
        this.#queuedAt.delete(id);
      }
    }
  }

  /** This process may not send any more: nothing more is sent or written (the lease's holder stops the process). */
  #fenced(lane: Lane, error: LeaseLostError): void {
    if (!this.#stopping) {
      this.#options.logger.error(
        { destination: destinationKey(lane.destination), err: error },
        'not sending: this process no longer holds its lease; the deliveries stay recorded for the holder',
      );
    }
    this.#stopping = true;
    this.#stop.abort();
  }

  /** The delay before the next attempt after `failures` failures in a row, with jitter. */
  #backoff(failures: number, max = this.#options.maxRetryDelayMs ?? 60_000): number {
    const base = this.#options.retryDelayMs ?? 1_000;
    return Math.min(max, base * 2 ** (failures - 1)) * (0.5 + Math.random() / 2);
  }

  #journalBackoff(failures: number): number {
    return this.#backoff(failures, Math.min(this.#options.maxRetryDelayMs ?? 60_000, MAX_JOURNAL_RETRY_DELAY_MS));
  }

  /** A journal write of this lane failed: the lane waits its back-off and tries the same work again. */
  #journalRefused(lane: Lane, error: unknown): void {
    lane.nextAt = Date.now() + this.#journalBackoff(lane.failures);
    const destination = destinationKey(lane.destination);
    if (!(error instanceof JournalWriteError)) {
      this.#options.logger.error({ destination, err: error }, 'could not record the outcome of an alert delivery');
      return;
    }
    if (this.#blocked.size === 0) {
      this.#options.logger.warn(
        { destination, code: error.code, err: error },
        'cannot write the delivery journal: chats wait for their alerts until it accepts writes',
      );
    }
    this.#blocked.add(lane);
  }

  /** Records a failed send or edit: retried later, or given up when permanent or tried too often. */
  async #failed(lane: Lane, error: unknown): Promise<void> {
    const { journal, logger } = this.#options;
    const failure =
      error instanceof DeliveryError
        ? error
        : new DeliveryError(String((error as Error)?.message ?? error), { permanent: false, cause: error });
    const editing = lane.editing && lane.edits.length > 0;
    const ids = editing ? lane.edits.slice(0, 1) : lane.sending;
    // An edit's record counts sends, not edits: an edit is tried as often as the lane failed in a row.
    const attempts = editing ? lane.failures : Math.max(...ids.map((id) => this.#records.get(id)?.attempts ?? 0));
    const giveUp = failure.permanent || attempts >= (this.#options.maxAttempts ?? 8);
    logger.warn(
      { destination: destinationKey(lane.destination), permanent: failure.permanent, attempts, err: failure },
      giveUp ? 'alert delivery failed; giving up' : 'alert delivery failed; will retry',
    );
    if (giveUp) {
      // A message that cannot be edited stays as it was; the edit is tried again after a restart.
      if (editing) this.#forget(lane, lane.edits.splice(0, 1));
      else {
        this.#keep(await Promise.all(ids.map((id) => journal.markFailed(id, failure.message, { final: true }))));
        this.#forget(lane, ids);
      }
      this.#options.onOutcome?.('failed', lane.destination.platform, ids.length);
      if (failure.permanent) {
        this.#options.onUnreachable?.(lane.destination, failure.message);
        const rest = [...lane.queue];
        await Promise.all(rest.map((id) => journal.markFailed(id, failure.message, { final: true })));
        this.#forget(lane, rest);
      }
    } else {
      if (!editing) {
        this.#keep(await Promise.all(ids.map((id) => journal.markFailed(id, failure.message, { final: false }))));
      }
      this.#options.onOutcome?.('retried', lane.destination.platform, ids.length);
      lane.nextAt = Date.now() + Math.max(failure.retryAfterMs ?? 0, this.#backoff(lane.failures));
    }
  }

  async #send(lane: Lane, sink: AlertSink): Promise<void> {
    const { journal } = this.#options;
    lane.sending = [];
    const done = lane.queue.filter((id) => {
      const record = this.#records.get(id);
      return record === undefined || record.state === 'sent' || record.state === 'dropped' || record.reorged;
    });
    if (done.length) this.#forget(lane, done);
    const queued = lane.queue.map((id) => this.#records.get(id) as DeliveryRecord);
    const first = queued[0];
    if (!first) return;
    // The chat answers a known key with the message first sent under it, whatever this one holds: a
    // send tried before (maybe before a crash) goes again under its key with exactly its deliveries,
    // and a new batch takes none of them.
    const key = first.sendKey ?? first.id;
    const records =
      first.sendKey === undefined
        ? queued.filter((r) => r.sendKey === undefined).slice(0, sink.maxBatch)
        : queued.filter((r) => r.sendKey === key);
    lane.sending = records.map((r) => r.id);
    // One journal write for the batch (calls in the same turn are grouped); a delivery recorded as
    // sending under this key (or left so by a crash) already says what this send is.
    this.#keep(
      await Promise.all(
        records.filter((r) => !(r.state === 'sending' && r.sendKey === key)).map((r) => journal.markSending(r.id, key)),
      ),
    );
    await this.#options.fence?.assertMaySend(lane.destination);
    // Lateness is known only now: a late alert says when its event happened, and why when known.
    const now = Date.now();
    const timeZone = this.#options.timeZoneOf?.(lane.destination);
    const messageId = await sink.send(
      lane.destination.chatId,
      // A late alert gets a copy with its note; one on time is the shared Reply, rendered once.
      records.map((r) =>
        withLateness(this.#reply(r), r, {
          now,
          startedAt: this.#startedAt,
          queuedAt: this.#queuedAt.get(r.id),
          timeZone,
        }),
      ),
      key,
    );
    const sent = lane.sending;
    lane.queue = lane.queue.filter((id) => !sent.includes(id));
    lane.sending = [];
    this.#options.onOutcome?.('sent', lane.destination.platform, records.length);
    // The message exists: the lane goes on (the chat keeps the order of its messages) while the
    // outcome is written (again and again while the disk is full). Should that write fail for good,
    // the deliveries stay `sending` in the journal and a restart sends them again under the same
    // key, which the chat answers with this message.
    const marking = this.#markSent(records, messageId).then(
      (marked) => {
        // The transaction was reorganised away while this message was on its way: edit it now.
        const edits = marked.filter((r) => needsEdit(r) && !lane.edits.includes(r.id));
        this.#forget(
          lane,
          marked.filter((r) => !edits.includes(r)).map((r) => r.id),
        );
        if (edits.length === 0) return;
        for (const record of edits) this.#records.set(record.id, record);
        lane.edits.push(...edits.map((r) => r.id));
        this.#run(lane);
      },
      (error: unknown) => {
        this.#forget(
          lane,
          records.map((r) => r.id),
        );
        this.#options.logger.error(
          { destination: destinationKey(lane.destination), messageId, err: error },
          'could not record a sent alert; a restart will send it again under the same key',
        );
      },
    );
    this.#marking.add(marking);
    lane.marking++;
    void marking.finally(() => {
      lane.marking--;
      this.#marking.delete(marking);
      for (const resolve of this.#idle) resolve();
      this.#idle.clear();
    });
  }

  /** The delivery's alert, shared with the other deliveries of its payload. */
  #reply(record: DeliveryRecord): Reply {
    let reply = this.#replies.get(record.payloadJson);
    if (!reply) {
      reply = decodePayload(payloadOf(record));
      this.#replies.set(record.payloadJson, reply);
    }
    return reply;
  }

  /**
   * Records a sent message. While the journal cannot be written it tries again, until it can or the
   * dispatcher stops: a delivery left `sending` is sent again by the next start.
   */
  async #markSent(records: readonly DeliveryRecord[], messageId: string): Promise<DeliveryRecord[]> {
    for (let failures = 1; ; failures++) {
      try {
        // One write for them all; a repeated markSent of a delivery already recorded sent is a no-op.
        return await Promise.all(records.map((r) => this.#options.journal.markSent(r.id, messageId)));
      } catch (error) {
        if (!(error instanceof JournalWriteError) || this.#stopping) throw error;
        await sleepUnless(this.#journalBackoff(failures), this.#stop.signal);
      }
    }
  }

  async #edit(lane: Lane, sink: AlertSink): Promise<void> {
    const { journal } = this.#options;
    const id = lane.edits[0] as string;
    const record = this.#records.get(id);
    if (!record?.messageId || !needsEdit(record)) {
      this.#forget(lane, lane.edits.splice(0, 1));
      return;
    }
    // A merged message is rewritten whole: each delivery's part says its own state (reversed, its
    // listing's fate, or as it was sent).
    const siblings = (await journal.sentTogether(record.destination, record.messageId)).sort((a, b) =>
      a.createdAt.localeCompare(b.createdAt),
    );
    const replies = siblings.map(currentReply);
    await this.#options.fence?.assertMaySend(lane.destination);
    const changed = siblings.flatMap((s, index) => (needsEdit(s) ? [index] : []));
    await sink.edit(lane.destination.chatId, record.messageId, replies, changed);
    const marked = await Promise.all(
      siblings
        .filter(needsEdit)
        .map((s) => (s.reorged ? journal.markEdited(s.id) : journal.markEdited(s.id, s.fate?.rev))),
    );
    // A fate that changed again while the message was edited needs one more edit.
    const again = new Set(marked.filter(needsEdit).map((r) => r.id));
    for (const r of marked) if (again.has(r.id)) this.#records.set(r.id, r);
    const edited = lane.edits.filter((e) => siblings.some((s) => s.id === e) && !again.has(e));
    lane.edits = lane.edits.filter((e) => !edited.includes(e));
    for (const e of again) if (!lane.edits.includes(e)) lane.edits.push(e);
    this.#forget(lane, edited);
    this.#options.onOutcome?.('edited', lane.destination.platform, 1);
  }
}
