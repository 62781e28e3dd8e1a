/**
 * The shared PostgreSQL database (FLOORWATCH_DATABASE_URL): a connection pool for queries, one
 * listening connection for notifications between processes, and the schema migrations.
 *
 * Leases (leases.ts) are renewed on a connection of their own, and a lease whose holder's session ended
 * is free: the database must be reached directly or through a session-mode pooler, not a
 * transaction-mode one.
 *
 * Every connection notices a dead peer within seconds: see {@link connectionConfig}.
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runner } from 'node-pg-migrate';
import pg from 'pg';
import type { Logger } from 'pino';
import { DatabaseError } from './errors.ts';

export { DatabaseError };

/** Where migrations record what they ran. */
export const MIGRATIONS_TABLE = 'floorwatch_migrations';

/**
 * `postgres://user@host:port/db` (for messages and logs): no password, and no query string, where
 * `?password=` and `?sslpassword=` are secrets too.
 */
export function describeDatabaseUrl(url: string): string {
  try {
    const parsed = new URL(url);
    const user = parsed.username ? `${parsed.username}@` : '';
    return `${parsed.protocol}//${user}${parsed.host}${parsed.pathname}`;
  } catch {
    return 'the configured database';
  }
}

export interface DatabaseOptions {
  /** Most connections in the pool (default 10). */
  poolSize?: number;
  logger: Logger;
  /** Name of this process in `pg_stat_activity` and in notifications it sends. */
  applicationName?: string;
}

type NotificationHandler = (payload: string) => void;

/**
 * How a connection notices a dead peer, and how long work may take:
 * - client side: TCP keepalive from 5 s of silence (Node sets only the first probe's delay; the
 *   system's interval and count do the rest), connecting gives up after 5 s, and a query not answered
 *   in 15 s fails (`query_timeout`: the server, or the way to it, is gone);
 * - server side (startup parameters of each session): keepalive probes from 5 s of silence every 2 s,
 *   the third unanswered one ends the session, and data left unacknowledged ends it after 10 s
 *   (`tcp_user_timeout`, PostgreSQL 12 or later), so a client cut off is dropped in about 11 s; a
 *   statement may run 10 s, wait 5 s for a lock, and a transaction may sit idle 10 s.
 * The migrations run without the time limits (an index build may take longer).
 */
function connectionConfig(
  url: string,
  name: string,
  limits: { queryTimeoutMs: number } | 'no time limits',
): pg.ClientConfig {
  const timed = limits !== 'no time limits';
  return {
    connectionString: url,
    application_name: name,
    connectionTimeoutMillis: 5_000,
    keepAlive: true,
    keepAliveInitialDelayMillis: 5_000,
    options:
      '-c tcp_keepalives_idle=5 -c tcp_keepalives_interval=2 -c tcp_keepalives_count=3 -c tcp_user_timeout=10000',
    ...(timed
      ? {
          query_timeout: limits.queryTimeoutMs,
          statement_timeout: 10_000,
          lock_timeout: 5_000,
          idle_in_transaction_session_timeout: 10_000,
        }
      : {}),
  };
}

/** How long a query of the pool may go unanswered. */
const QUERY_TIMEOUT_MS = 15_000;

/** How often the listening connection is asked a question, so that a dead one is noticed. */
const LISTENER_PING_MS = 10_000;

/**
 * A pool plus a listening connection that comes back by itself: after it was lost, every channel is
 * listened to again and the `onResync` callbacks run, since notifications sent meanwhile are gone.
 */
export class Database {
  readonly pool: pg.Pool;
  readonly url: string;
  readonly where: string;
  /** This process, as the leases it holds name it: host, pid and a random part. */
  readonly processName = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  readonly #logger: Logger;
  readonly #handlers = new Map<string, NotificationHandler[]>();
  readonly #resyncs: Array<() => void> = [];
  #listener: pg.Client | undefined;
  #listening: Promise<void> | undefined;
  #closed = false;
  #retryTimer: NodeJS.Timeout | undefined;
  #pingTimer: NodeJS.Timeout | undefined;

  private constructor(url: string, options: DatabaseOptions) {
    this.url = url;
    this.where = describeDatabaseUrl(url);
    this.#logger = options.logger;
    this.pool = new pg.Pool({
      ...connectionConfig(url, options.applicationName ?? 'floorwatch', { queryTimeoutMs: QUERY_TIMEOUT_MS }),
      max: options.poolSize ?? 10,
    });
    // An idle connection dropped by the server: the pool replaces it; nothing to do but say so.
    this.pool.on('error', (error) => this.#logger.warn({ err: redact(error) }, 'database connection lost'));
  }

  /** Connects (one query to prove it) and brings the schema up to date. */
  static async open(url: string, options: DatabaseOptions): Promise<Database> {
    const database = new Database(url, options);
    try {
      await database.pool.query('SELECT 1');
      await database.migrate();
    } catch (cause) {
      await database.pool.end().catch(() => {});
      throw new DatabaseError(`${database.where}: ${reason(cause)}`, { cause });
    }
    return database;
  }

  /** Runs the migrations not yet run (node-pg-migrate takes its own lock: replicas may start together). */
  async migrate(): Promise<void> {
    // A connection of its own, without the statement time limit: an index build may take longer.
    const client = new pg.Client(connectionConfig(this.url, 'floorwatch:migrate', 'no time limits'));
    client.on('error', () => {});
    await client.connect();
    try {
      await runner({
        dbClient: client,
        dir: migrationsDirectory(),
        direction: 'up',
        migrationsTable: MIGRATIONS_TABLE,
        checkOrder: true,
        // Replicas starting together wait for the first one's migration instead of failing.
        advisoryLockMode: 'wait',
        log: (message: string) => this.#logger.debug({ migration: message }, 'database migration'),
      });
    } finally {
      await client.end().catch(() => {});
    }
  }

  /**
   * A connection of its own (for the leases, and for notifications), set up as the pool's are;
   * `queryTimeoutMs` overrides how long a query may go unanswered.
   */
  async dedicatedClient(name: string, options: { queryTimeoutMs?: number } = {}): Promise<pg.Client> {
    const client = new pg.Client(
      connectionConfig(this.url, `floorwatch:${name}`, { queryTimeoutMs: options.queryTimeoutMs ?? QUERY_TIMEOUT_MS }),
    );
    await client.connect();
    return client;
  }

  /** Calls `handler` with the payload of every notification on `channel`. */
  async listen(channel: string, handler: NotificationHandler): Promise<void> {
    if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new TypeError(`not a channel name: ${channel}`);
    const handlers = this.#handlers.get(channel);
    if (handlers) {
      handlers.push(handler);
      return;
    }
    this.#handlers.set(channel, [handler]);
    await this.#ensureListener();
    await this.#listener?.query(`LISTEN ${channel}`);
  }

  /**
   * Runs `work` in one transaction on a connection of its own: committed when it resolves, rolled
   * back when it throws (the error is rethrown); the connection goes back to the pool either way.
   */
  async inTransaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }

  /** Called after the listening connection came back: notifications may have been missed. */
  onResync(callback: () => void): void {
    this.#resyncs.push(callback);
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#retryTimer);
    clearInterval(this.#pingTimer);
    const listener = this.#listener;
    this.#listener = undefined;
    await listener?.end().catch(() => {});
    await this.pool.end();
  }

  #ensureListener(): Promise<void> {
    this.#listening ??= this.#connectListener().finally(() => {
      this.#listening = undefined;
    });
    return this.#listening;
  }

  async #connectListener(): Promise<void> {
    if (this.#listener || this.#closed) return;
    const client = await this.dedicatedClient('listener', { queryTimeoutMs: 5_000 });
    client.on('notification', (message) => {
      for (const handler of this.#handlers.get(message.channel) ?? []) {
        try {
          handler(message.payload ?? '');
        } catch (error) {
          this.#logger.error({ err: error, channel: message.channel }, 'a notification handler failed');
        }
      }
    });
    const lost = (error?: Error) => {
      if (this.#listener !== client) return;
      this.#listener = undefined;
      client.removeAllListeners('error');
      client.on('error', () => {});
      if (this.#closed) return;
      this.#logger.warn({ err: error && redact(error) }, 'database notifications lost; listening again');
      this.#retryListener(500);
    };
    client.on('error', lost);
    client.on('end', () => lost());
    for (const channel of this.#handlers.keys()) await client.query(`LISTEN ${channel}`);
    this.#listener = client;
    // An idle connection whose server is gone says nothing until TCP gives up (minutes): a question
    // now and then finds out in seconds, and the connection is made again.
    clearInterval(this.#pingTimer);
    this.#pingTimer = setInterval(() => {
      if (this.#listener !== client) return;
      client.query('SELECT 1').catch((error: unknown) => {
        if (this.#listener !== client) return;
        lost(error instanceof Error ? error : new Error(String(error)));
        void client.end().catch(() => {});
      });
    }, LISTENER_PING_MS);
    this.#pingTimer.unref();
  }

  #retryListener(delayMs: number): void {
    clearTimeout(this.#retryTimer);
    this.#retryTimer = setTimeout(() => {
      this.#ensureListener().then(
        () => {
          for (const resync of this.#resyncs) resync();
        },
        (error: unknown) => {
          this.#logger.warn({ err: redact(error) }, 'database notifications: still cannot listen');
          this.#retryListener(Math.min(delayMs * 2, 10_000));
        },
      );
    }, delayMs);
    this.#retryTimer.unref();
  }
}

/** The migrations shipped with the package (src/store/pg/migrations), from the source or the build. */
export function migrationsDirectory(): string {
  let directory = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(directory, 'src', 'store', 'pg', 'migrations');
    if (existsSync(join(directory, 'package.json')) && existsSync(candidate)) return candidate;
    const parent = dirname(directory);
    if (parent === directory) throw new Error('the database migrations (src/store/pg/migrations) are missing');
    directory = parent;
  }
}

function reason(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length) return reason(error.errors[0]);
  return error instanceof Error ? error.message || error.name : String(error);
}

/** Errors from pg name the server but not the password; keep it that way for errors of our own. */
function redact(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  return { name: error.name, message: error.message, code: (error as { code?: unknown }).code };
}
