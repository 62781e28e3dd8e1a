import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Logger } from 'pino';
import * as v from 'valibot';
import type { Database } from './database.ts';

const noticeSchema = v.looseObject({ origin: v.string() });

export interface AnnouncedChangesOptions<C> {
  /** The PostgreSQL notification channel. */
  channel: string;
  /** The notice's field that carries the change (`{ origin, [field]: change }` on the wire). */
  field: string;
  /** What a change from another process must read as; a notice that does not is ignored and logged. */
  schema: v.GenericSchema<unknown, C>;
  logger: Logger;
  /** Names the changes in log lines ("wallet change"). */
  what: string;
}

/**
 * Changes a store makes in a transaction and announces to the other processes on the database: the
 * notification is sent inside the transaction, so PostgreSQL delivers it only with the commit and
 * nobody hears of a change that was rolled back. This process's listeners are told after the commit,
 * the other processes' when the notification arrives (a process ignores its own by `origin`).
 */
export class AnnouncedChanges<C> {
  readonly #db: Database;
  readonly #options: AnnouncedChangesOptions<C>;
  readonly #origin = randomUUID();
  readonly #listeners: Array<(change: C) => void> = [];
  readonly #pending = new Set<Promise<unknown>>();

  private constructor(db: Database, options: AnnouncedChangesOptions<C>) {
    this.#db = db;
    this.#options = options;
  }

  /** Starts listening on the channel. */
  static async open<C>(db: Database, options: AnnouncedChangesOptions<C>): Promise<AnnouncedChanges<C>> {
    const changes = new AnnouncedChanges(db, options);
    await db.listen(options.channel, (payload) => changes.#noticed(payload));
    return changes;
  }

  onChange(listener: (change: C) => void): void {
    this.#listeners.push(listener);
  }

  /** Tells this process's listeners of a change (one that may have been missed, after a resync). */
  tell(change: C): void {
    for (const listener of this.#listeners) {
      try {
        listener(change);
      } catch (error) {
        this.#options.logger.error({ err: error }, `a ${this.#options.what} listener failed`);
      }
    }
  }

  /** Runs `work` in one transaction; the change it returns is announced with the commit. */
  async transaction<T>(work: (client: pg.PoolClient) => Promise<{ result: T; change?: C | undefined }>): Promise<T> {
    const { channel, field } = this.#options;
    const run = this.#db.inTransaction(async (client) => {
      const done = await work(client);
      if (done.change !== undefined) {
        await client.query('SELECT pg_notify($1, $2)', [
          channel,
          JSON.stringify({ origin: this.#origin, [field]: done.change }),
        ]);
      }
      return done;
    });
    this.#pending.add(run);
    try {
      const done = await run;
      if (done.change !== undefined) this.tell(done.change);
      return done.result;
    } finally {
      this.#pending.delete(run);
    }
  }

  /** Waits for the transactions under way. */
  async flush(): Promise<void> {
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
  }

  #noticed(payload: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(payload);
    } catch {
      parsed = undefined;
    }
    const { field, schema, logger, what } = this.#options;
    const notice = v.safeParse(noticeSchema, parsed);
    const change = notice.success ? v.safeParse(schema, notice.output[field]) : undefined;
    if (!notice.success || !change?.success) {
      logger.warn(`a ${what} notification could not be read; ignored`);
      return;
    }
    if (notice.output.origin !== this.#origin) this.tell(change.output);
  }
}
