/**
 * Advisory locks on one connection of this process: who ingests a network's streams, who sends a
 * chat's deliveries, who runs the digests. PostgreSQL releases a session's locks when its connection
 * ends, so a process that dies (even by SIGKILL) frees its locks at once and another takes them at
 * its next try.
 *
 * Losing the connection loses every lock while this process may still be acting on them; `onLost`
 * is then called once, and the process must stop (main.ts exits, to be restarted).
 */
import type pg from 'pg';
import type { Logger } from 'pino';
import type { Database } from './database.ts';

/** Lock namespaces (the first key of the two-key advisory lock). */
export const LOCK_SPACE = { ingest: 0x0f10_0001, chat: 0x0f10_0002, digests: 0x0f10_0003 } as const;
export type LockSpace = keyof typeof LOCK_SPACE;

export class AdvisoryLocks {
  readonly #client: pg.Client;
  readonly #held = new Set<string>();
  #lost = false;
  /** One query at a time on the connection (pg queues them, but will stop doing so). */
  #queue: Promise<unknown> = Promise.resolve();

  private constructor(client: pg.Client) {
    this.#client = client;
  }

  static async open(db: Database, logger: Logger, onLost: (error: Error) => void): Promise<AdvisoryLocks> {
    const client = await db.dedicatedClient('locks');
    const locks = new AdvisoryLocks(client);
    const lost = (error?: Error) => {
      if (locks.#lost) return;
      locks.#lost = true;
      locks.#held.clear();
      logger.error({ err: error?.message }, 'lost the database connection that holds this process’s locks');
      onLost(error ?? new Error('the lock connection ended'));
    };
    client.on('error', lost);
    client.on('end', () => lost());
    return locks;
  }

  /** Takes the lock unless another process holds it; true when this process holds it now. */
  tryLock(space: LockSpace, key: string): Promise<boolean> {
    const id = `${space}:${key}`;
    if (this.#held.has(id)) return Promise.resolve(true);
    if (this.#lost) return Promise.resolve(false);
    // PostgreSQL's advisory locks count: taking one twice would need two unlocks.
    let trying = this.#trying.get(id);
    if (!trying) {
      trying = this.#take(space, key, id).finally(() => this.#trying.delete(id));
      this.#trying.set(id, trying);
    }
    return trying;
  }

  readonly #trying = new Map<string, Promise<boolean>>();

  async #take(space: LockSpace, key: string, id: string): Promise<boolean> {
    const { rows } = await this.#serial(() =>
      this.#client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1, hashtext($2)) AS locked', [
        LOCK_SPACE[space],
        key,
      ]),
    );
    const locked = rows[0]?.locked === true;
    if (locked) this.#held.add(id);
    return locked;
  }

  async unlock(space: LockSpace, key: string): Promise<void> {
    const id = `${space}:${key}`;
    if (!this.#held.delete(id) || this.#lost) return;
    await this.#serial(() =>
      this.#client.query('SELECT pg_advisory_unlock($1, hashtext($2))', [LOCK_SPACE[space], key]),
    );
  }

  #serial<T>(query: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(query, query);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  holds(space: LockSpace, key: string): boolean {
    return this.#held.has(`${space}:${key}`);
  }

  /** Ends the connection, which frees every lock. */
  async close(): Promise<void> {
    this.#lost = true;
    this.#held.clear();
    this.#client.removeAllListeners('end');
    this.#client.removeAllListeners('error');
    this.#client.on('error', () => {});
    await this.#client.end().catch(() => {});
  }
}

/**
 * Tries every `everyMs` to take the locks of `keys()` it does not hold yet, and calls `onAcquired`
 * for each one taken. Held locks are kept until {@link Leadership.stop}.
 */
export class Leadership {
  readonly #locks: AdvisoryLocks;
  readonly #space: LockSpace;
  readonly #keys: () => readonly string[];
  readonly #onAcquired: (key: string) => void;
  readonly #logger: Logger;
  readonly #everyMs: number;
  #timer: NodeJS.Timeout | undefined;
  #round: Promise<void> = Promise.resolve();
  #stopped = false;

  constructor(options: {
    locks: AdvisoryLocks;
    space: LockSpace;
    keys: () => readonly string[];
    onAcquired: (key: string) => void;
    logger: Logger;
    everyMs?: number;
  }) {
    this.#locks = options.locks;
    this.#space = options.space;
    this.#keys = options.keys;
    this.#onAcquired = options.onAcquired;
    this.#logger = options.logger;
    this.#everyMs = options.everyMs ?? 1_000;
  }

  /** Tries once now (resolves after that try), then every `everyMs`. */
  async start(): Promise<void> {
    await this.tryNow();
    this.#schedule();
  }

  leads(key: string): boolean {
    return this.#locks.holds(this.#space, key);
  }

  tryNow(): Promise<void> {
    this.#round = this.#round.then(async () => {
      for (const key of this.#keys()) {
        if (this.#stopped || this.#locks.holds(this.#space, key)) continue;
        try {
          if (await this.#locks.tryLock(this.#space, key)) {
            this.#logger.info({ [this.#space]: key }, `this process now leads ${this.#space}`);
            this.#onAcquired(key);
          }
        } catch (error) {
          this.#logger.warn({ err: error, [this.#space]: key }, 'could not try a leadership lock');
        }
      }
    });
    return this.#round;
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      void this.tryNow().finally(() => this.#schedule());
    }, this.#everyMs);
    this.#timer.unref();
  }
}
