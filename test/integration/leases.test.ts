// Leases in the shared database (src/store/pg/leases.ts), as several processes use them: each
// "process" here is its own pool and lease connection on one real PostgreSQL (test/helpers/postgres.ts).
import pg from 'pg';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { NewDelivery } from '../../src/core/deliveries.ts';
import { LeaseLostError } from '../../src/core/lease.ts';
import { openSharedDatabase, type SharedDatabase } from '../../src/store/pg/index.ts';
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.ts';

const silent = pino({ level: 'silent' });
let postgres: TestPostgres;
const opened: SharedDatabase[] = [];

beforeAll(async () => {
  postgres = await startTestPostgres();
}, 120_000);
afterEach(async () => {
  for (const shared of opened.splice(0)) await shared.close().catch(() => {});
});
afterAll(async () => {
  await postgres?.stop();
});

async function processOn(url: string, lost: LeaseLostError[] = []): Promise<SharedDatabase> {
  const shared = await openSharedDatabase({ url, poolSize: 2 }, silent, (error) => lost.push(error));
  opened.push(shared);
  return shared;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function delivery(n: number): NewDelivery {
  const txn = `0x${n.toString(16).padStart(64, '0')}`;
  return {
    eventId: `devnet:${txn}:0xc0:sale@0xb${n}`,
    destination: { platform: 'discord', chatId: '4242' },
    network: 'devnet',
    txnHash: txn,
    blockNumber: n,
    kind: 'sale',
    payload: { title: `sale ${n}` },
  };
}

async function leaseRow(url: string, name: string): Promise<{ holder: string; token: string } | undefined> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ holder: string; token: string }>(
      'SELECT holder, token::text AS token FROM leases WHERE name = $1',
      [name],
    );
    return rows[0];
  } finally {
    await client.end();
  }
}

describe('leases in the shared database', () => {
  it('GIVEN a lease held and renewed THEN no other process takes it, and giving it back frees it at once with a larger token', async () => {
    const url = await postgres.freshDatabase();
    const a = await processOn(url);
    const b = await processOn(url);
    expect(await a.leases.tryLock('ingest', 'devnet')).toBe(true);
    const first = await a.leases.token('ingest:devnet');
    expect(await b.leases.tryLock('ingest', 'devnet')).toBe(false);
    await a.leases.renew();
    expect(await b.leases.tryLock('ingest', 'devnet')).toBe(false);
    expect(a.leases.holds('ingest', 'devnet')).toBe(true);
    await expect(b.leases.token('ingest:devnet')).rejects.toThrow(LeaseLostError);

    await a.leases.unlock('ingest', 'devnet');
    expect(await b.leases.tryLock('ingest', 'devnet')).toBe(true);
    expect(BigInt(await b.leases.token('ingest:devnet'))).toBeGreaterThan(BigInt(first));
    expect((await leaseRow(url, 'ingest:devnet'))?.holder).toBe(b.leases.holder);
  });

  it('GIVEN the holder’s connection ends (the process died) THEN its lease is free at once, before it expires', async () => {
    const url = await postgres.freshDatabase();
    const lostByA: LeaseLostError[] = [];
    const a = await processOn(url, lostByA);
    const b = await processOn(url);
    expect(await a.leases.tryLock('chat', 'discord:1')).toBe(true);
    expect(await b.leases.tryLock('chat', 'discord:1')).toBe(false);
    // As SIGKILL does: the connection ends without giving anything back.
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'floorwatch:leases' AND pid = (SELECT holder_pid FROM leases WHERE name = 'chat:discord:1')",
    );
    await client.end();
    const deadline = Date.now() + 5_000;
    while (!(await b.leases.tryLock('chat', 'discord:1')) && Date.now() < deadline) await sleep(50);
    expect(b.leases.holds('chat', 'discord:1')).toBe(true);
    // The process whose connection ended knows it lost everything.
    expect(lostByA).toHaveLength(1);
    expect(a.leases.holds('chat', 'discord:1')).toBe(false);
  });

  it('GIVEN a holder that stops renewing (frozen) THEN another process takes the lease once it expires, and the first’s fenced writes are refused: it loses the lease instead of writing', async () => {
    const url = await postgres.freshDatabase();
    const lostByA: LeaseLostError[] = [];
    const a = await processOn(url, lostByA);
    const b = await processOn(url);
    // A short-lived lease for the test: the same statements with a time to live of 1.5 s.
    const { Leases } = await import('../../src/store/pg/leases.ts');
    const short = await Leases.open(a.db, silent, (error) => lostByA.push(error), {
      ttlMs: 1_500,
      renewMs: 60_000,
      marginMs: 300,
    });
    try {
      expect(await short.tryLock('ingest', 'devnet')).toBe(true);
      const token = await short.token('ingest:devnet');
      expect(await b.leases.tryLock('ingest', 'devnet')).toBe(false);
      await sleep(1_700);
      expect(await b.leases.tryLock('ingest', 'devnet')).toBe(true);
      // The stale holder's write, had it not noticed: the statement itself refuses it.
      const refused = await a.db.pool.query(
        `WITH fence AS (SELECT name FROM leases WHERE name = 'ingest:devnet' AND token = $1 AND expires_at > now() FOR KEY SHARE)
         SELECT count(*)::int AS n FROM fence`,
        [token],
      );
      expect(refused.rows[0]?.n).toBe(0);
      // Its own check: past its time, it tries to take the lease again, finds another token in it, and
      // loses it; every check fails from then on.
      await expect(short.token('ingest:devnet')).rejects.toThrow(LeaseLostError);
      expect(() => short.assertMaySend({ platform: 'discord', chatId: '1' })).toThrow(LeaseLostError);
      expect(lostByA.map((e) => e.lease)).toEqual(['ingest:devnet']);
      expect(short.holds('ingest', 'devnet')).toBe(false);
      // The new holder records under its lease.
      expect(await b.deliveries.record([delivery(1)])).toHaveLength(1);
    } finally {
      await short.close();
    }
  });

  it('GIVEN a holder paused past its lease’s time WHEN nobody took the lease THEN on waking its sends and fenced writes wait until it took the lease again with the same token, and it keeps it', async () => {
    const url = await postgres.freshDatabase();
    const lost: LeaseLostError[] = [];
    const a = await processOn(url, lost);
    const b = await processOn(url);
    const { Leases } = await import('../../src/store/pg/leases.ts');
    const { PgDeliveryLog } = await import('../../src/store/pg/deliveries.ts');
    // Renewed by hand only: as if the process were frozen between two renewals.
    const short = await Leases.open(a.db, silent, (error) => lost.push(error), {
      ttlMs: 3_000,
      renewMs: 60_000,
      marginMs: 300,
    });
    const log = new PgDeliveryLog(a.db, { logger: silent, fences: short, cleanupEveryMs: 0 });
    try {
      expect(await short.tryLock('ingest', 'devnet')).toBe(true);
      expect(await short.tryLock('chat', 'discord:4242')).toBe(true);
      const token = await short.token('ingest:devnet');
      expect(short.assertMaySend({ platform: 'discord', chatId: '4242' })).toBeUndefined();
      await sleep(3_300);
      // Expired in the database too; nobody took it.
      const before = await a.db.pool.query<{ expired: boolean }>(
        `SELECT expires_at <= now() AS expired FROM leases WHERE name = 'ingest:devnet'`,
      );
      expect(before.rows[0]?.expired).toBe(true);
      // A send waits for the lease to be taken again.
      const sending = short.assertMaySend({ platform: 'discord', chatId: '4242' });
      expect(sending).toBeInstanceOf(Promise);
      await sending;
      // A fenced write too, and it is written under the same token.
      expect(await log.record([delivery(1)])).toHaveLength(1);
      expect(await short.token('ingest:devnet')).toBe(token);
      expect((await leaseRow(url, 'ingest:devnet'))?.token).toBe(token);
      expect(lost).toEqual([]);
      expect(short.holds('ingest', 'devnet')).toBe(true);
      // Taken again, it is held: another process cannot take it.
      expect(await b.leases.tryLock('ingest', 'devnet')).toBe(false);
      expect(await b.leases.tryLock('chat', 'discord:4242')).toBe(false);
    } finally {
      await log.close();
      await short.close();
    }
  });

  it('GIVEN a holder whose lease expired in the database between its check and its statement (paused there) WHEN nobody took it THEN the refused record is written after it took the lease again, once', async () => {
    const url = await postgres.freshDatabase();
    const lost: LeaseLostError[] = [];
    const a = await processOn(url, lost);
    expect(await a.leases.tryLock('ingest', 'devnet')).toBe(true);
    const token = await a.leases.token('ingest:devnet');
    // Its local lease looks valid; the database's has run out.
    await a.db.pool.query(`UPDATE leases SET expires_at = now() - interval '1 second' WHERE name = 'ingest:devnet'`);
    expect(await a.deliveries.record([delivery(4)])).toHaveLength(1);
    expect(await a.deliveries.record([delivery(4)])).toHaveLength(0);
    const { rows } = await a.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM deliveries');
    expect(rows[0]?.n).toBe(1);
    expect(lost).toEqual([]);
    expect((await leaseRow(url, 'ingest:devnet'))?.token).toBe(token);
  });

  it('GIVEN the database says a lease is no longer this process’s THEN a fenced record is refused in its statement, nothing is written, and the lease is lost', async () => {
    const url = await postgres.freshDatabase();
    const lost: LeaseLostError[] = [];
    const a = await processOn(url, lost);
    expect(await a.leases.tryLock('ingest', 'devnet')).toBe(true);
    // Another process took it while this one could not tell (its local lease looks valid).
    await a.db.pool.query(
      `UPDATE leases SET token = nextval('lease_tokens'), holder = 'another' WHERE name = 'ingest:devnet'`,
    );
    await expect(a.deliveries.record([delivery(2)])).rejects.toBeInstanceOf(LeaseLostError);
    const { rows } = await a.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM deliveries');
    expect(rows[0]?.n).toBe(0);
    expect(lost.map((e) => e.lease)).toEqual(['ingest:devnet']);
    // Lost for good: every later write is refused before it reaches the database.
    await expect(a.deliveries.record([delivery(3)])).rejects.toBeInstanceOf(LeaseLostError);
  });

  it('GIVEN a fenced write under way THEN a taker waits for it: the write commits before the lease changes hands', async () => {
    const url = await postgres.freshDatabase();
    const b = await processOn(url);
    const writer = new pg.Client({ connectionString: url });
    await writer.connect();
    try {
      // An expired lease, its holder's fenced write still open (it checked just in time).
      await writer.query(
        `INSERT INTO leases (name, holder, holder_pid, token, expires_at)
         VALUES ('chat:discord:9', 'frozen', pg_backend_pid(), nextval('lease_tokens'), now() + interval '300 milliseconds')`,
      );
      await writer.query('BEGIN');
      const { rows } = await writer.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM (SELECT name FROM leases WHERE name = 'chat:discord:9' AND expires_at > now() FOR KEY SHARE) AS f`,
      );
      expect(rows[0]?.n).toBe(1);
      await sleep(400);
      let taken = false;
      const taking = b.leases.tryLock('chat', 'discord:9').then((result) => {
        taken = result;
        return result;
      });
      await sleep(300);
      expect(taken).toBe(false);
      await writer.query('COMMIT');
      expect(await taking).toBe(true);
    } finally {
      await writer.end();
    }
  });

  it('GIVEN the pool’s connections THEN the server drops a dead client within seconds and no statement runs unbounded', async () => {
    const url = await postgres.freshDatabase();
    const a = await processOn(url);
    const settings = [
      'statement_timeout',
      'lock_timeout',
      'idle_in_transaction_session_timeout',
      'tcp_keepalives_idle',
      'tcp_keepalives_interval',
      'tcp_keepalives_count',
      'tcp_user_timeout',
    ];
    const { rows } = await a.db.pool.query<{ name: string; setting: string }>(
      'SELECT name, setting FROM pg_settings WHERE name = ANY($1) ORDER BY name',
      [settings],
    );
    expect(Object.fromEntries(rows.map((r) => [r.name, r.setting]))).toEqual({
      idle_in_transaction_session_timeout: '10000',
      lock_timeout: '5000',
      statement_timeout: '10000',
      tcp_keepalives_count: '3',
      tcp_keepalives_idle: '5',
      tcp_keepalives_interval: '2',
      tcp_user_timeout: '10000',
    });
  });
});
