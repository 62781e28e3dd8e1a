/**
 * Leases in the shared database: who ingests a network's streams, who posts the digests, who sends a
 * chat's deliveries. One row per lease in `leases` (migration 1764000000000_leases.sql): the holder,
 * a fencing token from a sequence (a later holder's is larger) and `expires_at` on the database's
 * clock, never a process's.
 *
 * - A process renews all its leases every {@link LEASE_RENEW_MS} with one statement on a connection
 *   of its own; a lease not renewed for {@link LEASE_TTL_MS} is free. So is the lease of a holder whose
 *   connection ended (its database session is gone): a process that dies, even by SIGKILL, frees its
 *   leases at once, as advisory locks did; one that freezes (SIGSTOP) or is cut off frees them when
 *   they expire, where an advisory lock would stay held until TCP noticed, hours later.
 * - Taking a free lease deletes its row and inserts a new one with the next token, in one statement.
 * - Writes that a lease guards (recording deliveries, marking them sending, sent, failed) check the
 *   token in the same statement and hold the lease row `FOR KEY SHARE` (see {@link fenceClause}): a
 *   stale holder's write is refused, and one that passed the check commits before anyone can take
 *   the lease over (the taker's DELETE waits for it).
 * - Before a send, {@link Leases.assertMaySend} checks, on the monotonic clock, that the chat's lease
 *   was renewed less than `LEASE_TTL_MS - LEASE_MARGIN_MS` ago (measured from the renewal's start,
 *   before the database set the new expiry): no round trip on an alert's way. So does
 *   {@link Leases.token} before a fenced write.
 * - A renewal updates the rows that still carry this process's tokens and session, expired or not:
 *   a lease taken by another process has another token. So a holder that was paused past its time
 *   (Ctrl-Z, a laptop asleep) and whose leases nobody took takes them again on waking; its sends and
 *   writes wait for that renewal ({@link Leases.token}, {@link Leases.assertMaySend}).
 *
 * A lease lost (another process took it, the connection ended) is fatal: `onLost` is called once,
 * every check fails from then on, and the process must stop (main.ts exits with 75 so that a
 * supervisor starts it again).
 */
import type pg from 'pg';
import type { Logger } from 'pino';
import { LEASE_MARGIN_MS, LEASE_RENEW_MS, LEASE_TTL_MS, LeaseLostError, type SendFence } from '../../core/lease.ts';
import { type Destination, destinationKey } from '../../core/types.ts';
import type { Database } from './database.ts';

/** What a lease is for: a network's streams, the digests, a chat's deliveries. */
export type LeaseSpace = 'ingest' | 'chat' | 'digests';
/** The one key of the `digests` space. */
export const DIGESTS_LEASE_KEY = 'digests';
/** How long a renewal or a taking may wait for the database before it counts as failed. */
const LEASE_QUERY_TIMEOUT_MS = 5_000;

/** The row name of a lease: `ingest:devnet`, `chat:discord:42`, `digests:digests`. */
export function leaseName(space: LeaseSpace, key: string): string {
  return `${space}:${key}`;
}

/**
 * The SQL that makes a statement fenced: a CTE named `fence` listing the names of the given leases
 * (`$names`, `$tokens`: parameter numbers) that still carry those tokens and have not expired, each
 * row held FOR KEY SHARE until the statement's transaction ends. Join or compare against it.
 */
export function fenceClause(names: number, tokens: number): string {
  return `fence AS MATERIALIZED (
    SELECT l.name FROM leases l JOIN unnest($${names}::text[], $${tokens}::bigint[]) AS f(name, token)
      ON l.name = f.name AND l.token = f.token
    WHERE l.expires_at > now() FOR KEY SHARE OF l)`;
}

interface Held {
  token: string;
  /** performance.now() past which this process no longer counts the lease as its own. */
  validUntil: number;
}

export interface LeasesOptions {
  /** Default {@link LEASE_TTL_MS}. */
  ttlMs?: number;
  /** Default {@link LEASE_RENEW_MS}. */
  renewMs?: number;
  /** Default {@link LEASE_MARGIN_MS}. */
  marginMs?: number;
}

export class Leases implements SendFence {
  /** This process, in the `holder` column (for people reading the table). */
  readonly holder: string;
  readonly #client: pg.Client;
  readonly #logger: Logger;
  readonly #onLost: (error: LeaseLostError) => void;
  readonly #ttlMs: number;
  readonly #renewMs: number;
  /** How long after a renewal's start this process counts the lease as its own. */
  readonly #validMs: number;
  readonly #held = new Map<string, Held>();
  readonly #trying = new Map<string, Promise<boolean>>();
  #lost: LeaseLostError | undefined;
  #closed = false;
  #timer: NodeJS.Timeout | undefined;
  #renewing: Promise<boolean> | undefined;
  #retaking: Promise<void> | undefined;
  /** One query at a time on the connection. */
  #queue: Promise<unknown> = Promise.resolve();

  private constructor(
    client: pg.Client,
    holder: string,
    logger: Logger,
    onLost: (error: LeaseLostError) => void,
    ttlMs: number,
    marginMs: number,
    renewMs: number,
  ) {
    this.#client = client;
    this.holder = holder;
    this.#logger = logger;
    this.#onLost = onLost;
    this.#ttlMs = ttlMs;
    this.#renewMs = renewMs;
    this.#validMs = ttlMs - marginMs;
  }

  /** Opens the connection that takes and renews this process's leases. */
  static async open(
    db: Database,
    logger: Logger,
    onLost: (error: LeaseLostError) => void,
    options: LeasesOptions = {},
  ): Promise<Leases> {
    const client = await db.dedicatedClient('leases', { queryTimeoutMs: LEASE_QUERY_TIMEOUT_MS });
    const leases = new Leases(
      client,
      db.processName,
      logger,
      onLost,
      options.ttlMs ?? LEASE_TTL_MS,
      options.marginMs ?? LEASE_MARGIN_MS,
      options.renewMs ?? LEASE_RENEW_MS,
    );
    const ended = (error?: Error) =>
      leases.#lose(
        'every lease of this process',
        `the database connection that renews them ended${error ? ` (${error.message})` : ''}`,
      );
    client.on('error', ended);
    client.on('end', () => ended());
    leases.#timer = setInterval(() => {
      // Late (the process was paused or stalled): its writes and sends wait for this.
      if (leases.#late()) void leases.#retake().catch(() => undefined);
      else void leases.renew();
    }, leases.#renewMs);
    leases.#timer.unref();
    return leases;
  }

  /** Takes the lease unless another process holds it; true when this process holds it now. */
  tryLock(space: LeaseSpace, key: string): Promise<boolean> {
    const name = leaseName(space, key);
    if (this.#lost || this.#closed) return Promise.resolve(false);
    if (this.#held.has(name)) return Promise.resolve(true);
    let trying = this.#trying.get(name);
    if (!trying) {
      trying = this.#take(name).finally(() => this.#trying.delete(name));
      this.#trying.set(name, trying);
    }
    return trying;
  }

  async #take(name: string): Promise<boolean> {
    const started = performance.now();
    // A lease is free when it expired or its holder's session is gone; taking it replaces the row, so
    // that a write fenced by the old token (holding the row FOR KEY SHARE) finishes before.
    const { rows } = await this.#serial(() =>
      this.#client.query<{ token: string }>(
        `WITH gone AS (
           DELETE FROM leases l WHERE l.name = $1
             AND (l.expires_at <= now() OR NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = l.holder_pid))
           RETURNING l.name)
         INSERT INTO leases (name, holder, holder_pid, token, expires_at)
         SELECT $1, $2, pg_backend_pid(), nextval('lease_tokens'), now() + $3 * interval '1 millisecond'
         WHERE EXISTS (SELECT 1 FROM gone) OR NOT EXISTS (SELECT 1 FROM leases WHERE name = $1)
         ON CONFLICT (name) DO NOTHING
         RETURNING token::text AS token`,
        [name, this.holder, this.#ttlMs],
      ),
    );
    const token = rows[0]?.token;
    if (token === undefined || this.#lost || this.#closed) return false;
    this.#held.set(name, { token, validUntil: started + this.#validMs });
    return true;
  }

  /** Gives the lease back (another process may take it at once). */
  async unlock(space: LeaseSpace, key: string): Promise<void> {
    const name = leaseName(space, key);
    const held = this.#held.get(name);
    if (!held || !this.#held.delete(name) || this.#lost || this.#closed) return;
    await this.#serial(() =>
      this.#client.query('DELETE FROM leases WHERE name = $1 AND token = $2', [name, held.token]),
    );
  }

  /**
   * Whether this process holds the lease: it took it and has not lost it. A lease past its time (the
   * process was paused) still counts: its writes and sends wait until it is taken again or lost.
   */
  holds(space: LeaseSpace, key: string): boolean {
    return !this.#lost && !this.#closed && this.#held.has(leaseName(space, key));
  }

  /**
   * The token of a lease this process holds, for a fenced write: at once when the lease was renewed
   * in time, after taking it again when it was not (the process was paused). Rejects with
   * {@link LeaseLostError} when this process does not hold it, or another process took it (then the
   * lease is lost, see {@link Leases.open}'s `onLost`).
   */
  async token(name: string): Promise<string> {
    for (;;) {
      if (this.#lost) throw this.#lost;
      if (this.#closed || !this.#held.has(name)) throw new LeaseLostError(name, 'this process does not hold it');
      const token = this.#valid(name);
      if (token !== undefined) return token;
      await this.#retake();
    }
  }

  assertMaySend(destination: Destination): Promise<void> | undefined {
    const name = leaseName('chat', destinationKey(destination));
    if (this.#lost) throw this.#lost;
    if (this.#valid(name) !== undefined) return undefined;
    return this.token(name).then(() => undefined);
  }

  /**
   * Renews every lease held (the timer does, every `renewMs`); a lease another process took is lost.
   * Resolves once the renewal ran, whether the database answered or not.
   */
  async renew(): Promise<void> {
    await this.#renewOnce();
  }

  /** One renewal at a time: true when the database answered it. */
  #renewOnce(): Promise<boolean> {
    this.#renewing ??= this.#renewHeld().finally(() => {
      this.#renewing = undefined;
    });
    return this.#renewing;
  }

  /** Whether a lease held is past its time: this process was paused, stalled or cut off. */
  #late(): boolean {
    const now = performance.now();
    for (const held of this.#held.values()) if (now >= held.validUntil) return true;
    return false;
  }

  /** Renews until no lease held is past its time (or one is lost); writes and sends wait for it. */
  #retake(): Promise<void> {
    this.#retaking ??= (async () => {
      const since = Math.max(...[...this.#held.values()].map((h) => performance.now() - h.validUntil + this.#validMs));
      this.#logger.warn(
        { unrenewedMs: Math.round(since) },
        'this process’s leases were not renewed in time (it was paused or stalled): taking them again unless another process took them',
      );
      try {
        // A renewal that started before the pause counts from then: one more is needed.
        while (this.#late() && !this.#lost && !this.#closed) {
          if (!(await this.#renewOnce())) await sleep(this.#renewMs);
        }
        if (!this.#lost && !this.#closed)
          this.#logger.info('this process holds its leases again: nobody had taken them');
      } finally {
        this.#retaking = undefined;
      }
    })();
    return this.#retaking;
  }

  async #renewHeld(): Promise<boolean> {
    if (this.#lost || this.#closed || this.#held.size === 0) return true;
    const started = performance.now();
    const held = [...this.#held];
    let renewed: Set<string>;
    try {
      // Expired or not: a row that still has this process's token and session was taken by nobody
      // (taking a lease replaces its row with a new token).
      const { rows } = await this.#serial(() =>
        this.#client.query<{ name: string }>(
          `UPDATE leases l SET expires_at = now() + $3 * interval '1 millisecond'
           FROM unnest($1::text[], $2::bigint[]) AS t(name, token)
           WHERE l.name = t.name AND l.token = t.token AND l.holder_pid = pg_backend_pid()
           RETURNING l.name`,
          [held.map(([name]) => name), held.map(([, h]) => h.token), this.#ttlMs],
        ),
      );
      renewed = new Set(rows.map((row) => row.name));
    } catch (error) {
      // Tried again at the next turn; meanwhile a lease past its time is not used.
      if (!this.#lost && !this.#closed) this.#logger.warn({ err: error }, 'could not renew this process’s leases');
      return false;
    }
    for (const [name, before] of held) {
      const now = this.#held.get(name);
      if (now?.token !== before.token) continue; // given back meanwhile
      if (renewed.has(name)) now.validUntil = started + this.#validMs;
      else this.#lose(name, 'another process took it over (it expired, or was taken from a session it saw ended)');
    }
    return true;
  }

  /** Gives every lease back and ends the connection. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#timer);
    const held = [...this.#held];
    this.#held.clear();
    if (held.length > 0 && !this.#lost) {
      await this.#serial(() =>
        this.#client.query(
          'DELETE FROM leases l USING unnest($1::text[], $2::bigint[]) AS t(name, token) WHERE l.name = t.name AND l.token = t.token',
          [held.map(([name]) => name), held.map(([, h]) => h.token)],
        ),
      ).catch((error: unknown) => this.#logger.warn({ err: error }, 'could not give the leases back'));
    }
    this.#client.removeAllListeners('end');
    this.#client.removeAllListeners('error');
    this.#client.on('error', () => {});
    await this.#client.end().catch(() => {});
  }

  /** The token while the lease is surely this process's: held, and renewed in time. */
  #valid(name: string): string | undefined {
    if (this.#lost || this.#closed) return undefined;
    const held = this.#held.get(name);
    if (!held || performance.now() >= held.validUntil) return undefined;
    return held.token;
  }

  #lose(name: string, reason: string): void {
    if (this.#lost || this.#closed) return;
    const error = new LeaseLostError(name, reason);
    this.#lost = error;
    this.#held.clear();
    clearInterval(this.#timer);
    this.#logger.error({ lease: name, reason }, 'this process lost a lease: it must stop');
    this.#onLost(error);
  }

  #serial<T>(query: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(query, query);
    this.#queue = run.catch(() => undefined);
    return run;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/**
 * Tries every `everyMs` to take the leases of `keys()` it does not hold yet, and calls `onAcquired`
 * for each one taken. Held leases are kept (renewed by {@link Leases}) until {@link Leadership.stop}.
 */
export class Leadership {
  readonly #leases: Leases;
  readonly #space: LeaseSpace;
  readonly #keys: () => readonly string[];
  readonly #onAcquired: (key: string) => void;
  readonly #logger: Logger;
  readonly #everyMs: number;
  #timer: NodeJS.Timeout | undefined;
  #round: Promise<void> = Promise.resolve();
  #stopped = false;

  constructor(options: {
    leases: Leases;
    space: LeaseSpace;
    keys: () => readonly string[];
    onAcquired: (key: string) => void;
    logger: Logger;
    everyMs?: number;
  }) {
    this.#leases = options.leases;
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
    return this.#leases.holds(this.#space, key);
  }

  tryNow(): Promise<void> {
    this.#round = this.#round.then(async () => {
      for (const key of this.#keys()) {
        if (this.#stopped || this.#leases.holds(this.#space, key)) continue;
        try {
          if (await this.#leases.tryLock(this.#space, key)) {
            this.#logger.info({ [this.#space]: key }, `this process now leads ${this.#space}`);
            this.#onAcquired(key);
          }
        } catch (error) {
          this.#logger.warn({ err: error, [this.#space]: key }, 'could not try a leadership lease');
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
