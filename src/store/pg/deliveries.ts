/**
 * The delivery log in PostgreSQL: the journal's protocol (store/files/journal/journal.ts) on a table shared by
 * every process, so that a delivery recorded by one process can be sent by another.
 *
 * - `record` inserts with the delivery id as primary key (`ON CONFLICT DO NOTHING`): an event
 *   recorded twice, by one process or by two ingest leaders in turn, is delivered once. It then
 *   notifies `floorwatch_deliveries` with the chats that have new work.
 * - Which process sends a chat's deliveries is decided by the chat claims (delivery/claims.ts): the
 *   holder of the chat's lock reads its open deliveries in recording order with {@link PgDeliveryLog.openFor}.
 * - Reads ask the table: every process sees what every process recorded. This process keeps the
 *   deliveries it recorded or read only to know, for a change, which chat's claim fences it.
 *
 * A write the database refuses or cannot take (connection lost, server down) rejects with
 * {@link JournalWriteError}, as a full disk does for the journal: the pipeline keeps the alerts in
 * memory and writes them again.
 *
 * Writes are fenced (leases.ts): a delivery is recorded under the lease of its network's ingest (or of
 * the digests), and marked sending, sent, failed or edited under its chat's claim; the statement
 * checks this process's token of that lease, so that a process that lost it (frozen, cut off) cannot
 * write even in the moment before it notices. Such a write rejects with {@link LeaseLostError}.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import {
  type DeliveryRecord,
  type DeliveryState,
  deliveryId,
  followsListing,
  JournalError,
  type JournalStats,
  JournalWriteError,
  MAX_LISTING_EDIT_WINDOW_MS,
  type NewDelivery,
  needsEdit,
} from '../../core/deliveries.ts';
import { LeaseLostError } from '../../core/lease.ts';
import type { DeliveryLog, ListingClose, OutstandingDeliveries, ReorgOutcome } from '../../core/ports.ts';
import type { JournalWriteFailure } from '../../core/status.ts';
import { type AlertKind, type Destination, destinationKey } from '../../core/types.ts';
import { readFate, readListing } from '../schema.ts';
import type { Database } from './database.ts';
import { DIGESTS_LEASE_KEY, fenceClause, leaseName } from './leases.ts';

export const DELIVERIES_CHANNEL = 'floorwatch_deliveries';

/** A sent message to edit: of a reorganised transaction, or to show its listing's fate (core's `needsEdit`). */
const NEEDS_EDIT = `(d.state = 'sent' AND ((d.reorged AND d.edited_at IS NULL) OR (NOT d.reorged AND d.fate_rev <> d.fate_shown)))`;
/** What a chat still needs: sends and edits (the partial index deliveries_open). */
const OPEN = `((d.state IN ('pending', 'sending') AND NOT d.reorged) OR (d.state = 'sent' AND d.reorged AND d.edited_at IS NULL)
     OR (d.state = 'sent' AND NOT d.reorged AND d.fate_rev <> d.fate_shown))`;

/** How long closed deliveries stay (recording them again is still ignored meanwhile). */
const RETENTION_MS = 24 * 60 * 60 * 1000;
/** Closed deliveries older than this leave this process's memory. */
const CACHE_MS = 60 * 60 * 1000;

interface Row {
  seq: string;
  id: string;
  event_id: string;
  chat_key: string;
  network: string;
  txn_hash: string;
  block_number: string;
  kind: string | null;
  usd: number | null;
  state: DeliveryState;
  attempts: number;
  send_key: string | null;
  message_id: string | null;
  last_error: string | null;
  reorged: boolean;
  edited_at: Date | null;
  final: boolean;
  created_at: Date;
  updated_at: Date;
  payload: string;
  listing: unknown;
  fate: unknown;
  fate_shown: number;
}

/** A notification: the chats with new deliveries or edits to make, and the process that wrote them. */
export interface DeliveryNotice {
  chats: string[];
  origin: string;
}

interface PendingCall<A, R> {
  key: string;
  arg: A;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit for one kind of statement: calls made while the previous statement runs (or in the
 * same tick) share the next one. Under load that is a handful of statements for hundreds of calls;
 * alone, a call waits for nothing. `run` answers each call's key with its result or an Error; a key
 * asked twice waits for the statement after (it may depend on the first call's effect).
 */
class GroupCommit<A, R> {
  readonly #run: (calls: ReadonlyArray<{ key: string; arg: A }>) => Promise<Map<string, R | Error>>;
  #pending: Array<PendingCall<A, R>> = [];
  #running = false;
  #scheduled = false;

  constructor(run: (calls: ReadonlyArray<{ key: string; arg: A }>) => Promise<Map<string, R | Error>>) {
    this.#run = run;
  }

  call(key: string, arg: A): Promise<R> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ key, arg, resolve, reject });
      this.#kick();
    });
  }

  #kick(): void {
    if (this.#running || this.#scheduled || this.#pending.length === 0) return;
    this.#scheduled = true;
    queueMicrotask(() => {
      this.#scheduled = false;
      void this.#flush();
    });
  }

  async #flush(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    const now = new Map<string, PendingCall<A, R>>();
    const later: Array<PendingCall<A, R>> = [];
    for (const call of this.#pending) {
      if (now.has(call.key)) later.push(call);
      else now.set(call.key, call);
    }
    this.#pending = later;
    try {
      const results = await this.#run([...now.values()].map(({ key, arg }) => ({ key, arg })));
      for (const [key, call] of now) {
        const result = results.get(key);
        if (result instanceof Error) call.reject(result);
        else if (result === undefined) call.reject(new Error(`no result for ${key}`));
        else call.resolve(result);
      }
    } catch (error) {
      for (const call of now.values()) call.reject(error);
    } finally {
      this.#running = false;
      this.#kick();
    }
  }
}

/** The leases this process writes deliveries under (leases.ts's {@link Leases}). */
export interface DeliveryFences {
  /**
   * This process's token of the lease, once it surely holds it (a late lease is taken again first);
   * rejects with {@link LeaseLostError} when it does not hold it.
   */
  token(name: string): Promise<string>;
  /** Renews now: after a fenced write was refused, tells whether the leases are still this process's. */
  renew(): Promise<void>;
}

/** The lease a delivery is recorded under: the digests', or its network's ingest. */
export function recordingLease(delivery: Pick<NewDelivery, 'kind' | 'network'>): string {
  return delivery.kind === 'digest' ? leaseName('digests', DIGESTS_LEASE_KEY) : leaseName('ingest', delivery.network);
}

/** The lease a delivery is sent under: its chat's claim. */
export function sendingLease(chatKey: string): string {
  return leaseName('chat', chatKey);
}

export interface PgDeliveryLogOptions {
  logger: Logger;
  fences: DeliveryFences;
  /** How often closed deliveries are deleted (default 10 minutes); 0 never. */
  cleanupEveryMs?: number;
}

export class PgDeliveryLog implements DeliveryLog {
  /** Tells this process's notifications from the others' (it acts on its own writes directly). */
  readonly origin = randomUUID();
  readonly #db: Database;
  readonly #logger: Logger;
  readonly #fences: DeliveryFences;
  readonly #records = new Map<string, DeliveryRecord>();
  readonly #byTxn = new Map<string, Set<string>>();
  #failure: JournalWriteFailure | undefined;
  readonly #cleanup: NodeJS.Timeout | undefined;

  constructor(db: Database, options: PgDeliveryLogOptions) {
    this.#db = db;
    this.#logger = options.logger;
    this.#fences = options.fences;
    const every = options.cleanupEveryMs ?? 10 * 60_000;
    if (every > 0) {
      this.#cleanup = setInterval(() => void this.#removeClosed(), every);
      this.#cleanup.unref();
    }
  }

  async record(deliveries: readonly NewDelivery[]): Promise<DeliveryRecord[]> {
    const texts = new Map<unknown, string>();
    const seen = new Set<string>();
    const rows: unknown[][] = [];
    const names = new Set<string>();
    for (const d of deliveries) {
      const id = deliveryId(d.eventId, d.destination);
      if (seen.has(id)) continue;
      seen.add(id);
      let payload = texts.get(d.payload);
      if (payload === undefined) {
        payload = JSON.stringify(d.payload) as string | undefined;
        if (payload === undefined) throw new TypeError('a delivery payload must be JSON-serialisable');
        texts.set(d.payload, payload);
      }
      if (!Number.isFinite(d.blockNumber))
        throw new TypeError(`delivery ${JSON.stringify(id)} has an invalid blockNumber`);
      if (d.usd !== undefined && !Number.isFinite(d.usd))
        throw new TypeError(`delivery ${JSON.stringify(id)} has an invalid usd`);
      names.add(recordingLease(d));
      rows.push([
        id,
        d.eventId,
        destinationKey(d.destination),
        d.network,
        d.txnHash,
        d.blockNumber,
        d.kind ?? null,
        d.usd ?? null,
        payload,
        d.sendingAlone === true,
        d.listing === undefined ? null : JSON.stringify(d.listing),
        d.listing?.collection ?? null,
        d.listing?.expiresAt ?? null,
      ]);
    }
    if (rows.length === 0) return [];
    const column = (i: number) => rows.map((r) => r[i]);
    const attempt = async () => {
      const leases = new Map<string, string>();
      for (const name of names) leases.set(name, await this.#fences.token(name));
      // One recording at a time: sequence numbers are taken in the statement, so two at once could
      // commit out of order, and a chat's claim reading in between would see the later one first.
      const turn = this.#recording.then(() => this.#insert(column, leases));
      this.#recording = turn.then(
        () => undefined,
        () => undefined,
      );
      const result = await turn;
      return Number(result[0]?.fence_held ?? 0) === leases.size ? result : undefined;
    };
    let result = await attempt();
    if (!result) {
      // Refused: a lease was lost, or expired while this process was paused between its check and
      // the statement and is taken again by now; the database says which.
      await this.#confirm([...names]);
      result = (await attempt()) ?? (await this.#refusedUnder([...names]));
    }
    const inserted = result.filter((row) => row.id !== null);
    // RETURNING gives no order: the sequence does.
    return inserted.sort((a, b) => Number(a.seq) - Number(b.seq)).map((row) => this.#keep(row));
  }

  #recording: Promise<void> = Promise.resolve();

  #insert(
    column: (i: number) => unknown[],
    leases: ReadonlyMap<string, string>,
  ): Promise<Array<Row & { notified: unknown; fence_held: string }>> {
    // One statement (one round trip, its own transaction), fenced by the leases the deliveries are
    // recorded under: nothing is inserted unless this process still holds them all. The notifications
    // go out on commit, one per chat: PostgreSQL sends identical ones of a transaction once.
    return this.#run<Row & { notified: unknown; fence_held: string }>(
      `WITH ${fenceClause(13, 14)},
       inserted AS (
         INSERT INTO deliveries (id, event_id, chat_key, network, txn_hash, block_number, kind, usd, payload,
                                 state, attempts, send_key, created_at, updated_at,
                                 listing, listing_collection, listing_expires_at)
         SELECT id, event_id, chat_key, network, txn_hash, block_number, kind, usd, payload,
                CASE WHEN sending THEN 'sending' ELSE 'pending' END, CASE WHEN sending THEN 1 ELSE 0 END,
                CASE WHEN sending THEN id END, now(), now(),
                listing::jsonb, listing_collection, listing_expires_at
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::text[],
                     $8::float8[], $9::text[], $12::boolean[], $16::text[], $17::text[], $18::timestamptz[])
              WITH ORDINALITY AS t(id, event_id, chat_key, network, txn_hash, block_number, kind, usd, payload, sending,
                                   listing, listing_collection, listing_expires_at, n)
         WHERE (SELECT count(*) FROM fence) = $15
         ORDER BY n
         ON CONFLICT (id) DO NOTHING
         RETURNING *)
       SELECT (SELECT count(*) FROM fence) AS fence_held, i.*,
              CASE WHEN i.id IS NOT NULL
                THEN pg_notify($10, json_build_object('chats', json_build_array(i.chat_key), 'origin', $11::text)::text)
              END AS notified
       FROM (SELECT 1) AS one LEFT JOIN inserted i ON true`,
      [
        ...[0, 1, 2, 3, 4, 5, 6, 7, 8].map(column),
        DELIVERIES_CHANNEL,
        this.origin,
        column(9),
        [...leases.keys()],
        [...leases.values()],
        leases.size,
        column(10),
        column(11),
        column(12),
      ],
    );
  }

  /**
   * A fenced write was refused for `names`: the database is asked whether this process still holds
   * them (the leases lost end the process) and the write rejects with {@link LeaseLostError}.
   */
  async #refusedUnder(names: readonly string[]): Promise<never> {
    await this.#confirm(names);
    throw new LeaseLostError(names.join(', '), 'the database refused a write fenced by it');
  }

  /** Asks the database whether this process still holds `names`: rejects when one was lost. */
  async #confirm(names: readonly string[]): Promise<void> {
    await this.#fences.renew();
    for (const name of names) await this.#fences.token(name);
  }

  /** The claim's lease and this process's token of it, for a change of delivery `id`. */
  async #chatFence(id: string): Promise<{ name: string; token: string }> {
    const record = this.#records.get(id);
    if (!record) throw new JournalError(this.#db.where, `delivery ${JSON.stringify(id)} is not known to this process`);
    const name = sendingLease(destinationKey(record.destination));
    return { name, token: await this.#fences.token(name) };
  }

  /** Group-committed: concurrent calls share one statement (see {@link GroupCommit}). */
  markSending(id: string, key?: string): Promise<DeliveryRecord> {
    return this.#sending.call(id, key ?? null);
  }

  markSent(id: string, messageId: string): Promise<DeliveryRecord> {
    return this.#sent.call(id, messageId);
  }

  readonly #sending = new GroupCommit<string | null, DeliveryRecord>((calls) =>
    this.#fencedMarks(
      calls,
      (fenced) =>
        `WITH ${fenceClause(3, 4)}
         UPDATE deliveries d SET state = 'sending', attempts = d.attempts + 1, send_key = COALESCE(t.key, d.send_key),
                updated_at = now()
         FROM unnest($1::text[], $2::text[]) AS t(id, key)
         WHERE d.id = t.id AND d.state IN ('pending', 'sending') AND NOT d.reorged AND ${fenced} RETURNING d.*`,
      'cannot be sent (it is no longer pending)',
    ),
  );

  readonly #sent = new GroupCommit<string, DeliveryRecord>((calls) =>
    this.#fencedMarks(
      calls,
      (fenced) =>
        `WITH ${fenceClause(3, 4)}
         UPDATE deliveries d SET state = 'sent', message_id = t.message_id, updated_at = now()
         FROM unnest($1::text[], $2::text[]) AS t(id, message_id)
         WHERE d.id = t.id AND d.state = 'sending' AND ${fenced} RETURNING d.*`,
      'is not being sent',
    ),
  );

  /**
   * A group of changes of deliveries, each fenced by its chat's claim: `sql` gets the condition that
   * a row's chat lease is in `fence` ($3 and $4: the leases' names and tokens; $1 and $2: ids and args).
   */
  async #fencedMarks(
    calls: ReadonlyArray<{ key: string; arg: string | null }>,
    sql: (fenced: string) => string,
    refusal: string,
  ): Promise<Map<string, DeliveryRecord | Error>> {
    const out = new Map<string, DeliveryRecord | Error>();
    const leases = new Map<string, string>();
    const leaseOf = new Map<string, string>();
    const fencedCalls: Array<{ key: string; arg: string | null }> = [];
    for (const call of calls) {
      try {
        const { name, token } = await this.#chatFence(call.key);
        leases.set(name, token);
        leaseOf.set(call.key, name);
        fencedCalls.push(call);
      } catch (error) {
        out.set(call.key, error as Error);
      }
    }
    if (fencedCalls.length === 0) return out;
    // A lease name is `chat:` and the chat's key (leaseName).
    const rows = await this.#run<Row>(sql(`'chat:' || d.chat_key IN (SELECT name FROM fence)`), [
      fencedCalls.map((c) => c.key),
      fencedCalls.map((c) => c.arg),
      [...leases.keys()],
      [...leases.values()],
    ]);
    for (const [key, value] of this.#byId(fencedCalls, rows, refusal)) out.set(key, value);
    const refused = fencedCalls.filter((c) => out.get(c.key) instanceof JournalError);
    if (refused.length > 0) {
      // Refused for its state, or for a lease this process lost: the database says which.
      await this.#fences.renew().catch(() => undefined);
      for (const { key } of refused) {
        try {
          await this.#fences.token(leaseOf.get(key) ?? '');
        } catch (error) {
          out.set(key, error as Error);
        }
      }
    }
    return out;
  }

  #byId(calls: ReadonlyArray<{ key: string }>, rows: Row[], refusal: string): Map<string, DeliveryRecord | Error> {
    const out = new Map<string, DeliveryRecord | Error>();
    for (const row of rows) out.set(row.id, this.#keep(row));
    for (const { key } of calls) {
      if (!out.has(key)) out.set(key, new JournalError(this.#db.where, `delivery ${JSON.stringify(key)} ${refusal}`));
    }
    return out;
  }

  async markFailed(id: string, error: string, options: { final?: boolean } = {}): Promise<DeliveryRecord> {
    const { name, token } = await this.#chatFence(id);
    return this.#change(
      id,
      `WITH ${fenceClause(4, 5)}
       UPDATE deliveries SET last_error = $2, updated_at = now(),
              state = CASE WHEN $3 THEN 'failed' WHEN reorged THEN 'dropped' ELSE 'pending' END
       WHERE id = $1 AND state IN ('pending', 'sending') AND EXISTS (SELECT 1 FROM fence) RETURNING *`,
      [id, error, options.final === true, [name], [token]],
      'cannot fail (it is not pending)',
      name,
    );
  }

  async markEdited(id: string, fateRev?: number): Promise<DeliveryRecord> {
    const { name, token } = await this.#chatFence(id);
    return this.#change(
      id,
      `WITH ${fenceClause(2, 3)}
       UPDATE deliveries SET edited_at = CASE WHEN reorged THEN COALESCE(edited_at, now()) ELSE edited_at END,
              fate_shown = COALESCE($4::integer, fate_shown), updated_at = now()
       WHERE id = $1 AND state = 'sent' AND (reorged OR $4::integer IS NOT NULL) AND EXISTS (SELECT 1 FROM fence)
       RETURNING *`,
      [id, [name], [token], fateRev ?? null],
      'is not a sent message to edit',
      name,
    );
  }

  async markListingsClosed(close: ListingClose): Promise<DeliveryRecord[]> {
    return this.#fate(
      close.network,
      `d.network = $1 AND d.listing_collection = $8 AND d.created_at >= $9 AND d.block_number <= $10
       AND (d.listing->'orderIds' ?| $11::text[]
            OR ($12::text IS NOT NULL AND d.listing->>'seller' = $12 AND d.listing->'tokenIds' ?| $13::text[]))`,
      close.fate,
      [
        close.collection,
        close.since,
        close.blockNumber,
        [...close.orderIds],
        close.fate.state === 'sold' ? (close.seller ?? null) : null,
        [...close.tokenIds],
      ],
    );
  }

  async markListingsExpired(network: string, now: Date, since: Date): Promise<DeliveryRecord[]> {
    return this.#fate(
      network,
      `d.network = $1 AND d.listing_expires_at IS NOT NULL AND d.listing_expires_at <= $8 AND d.created_at >= $9`,
      { state: 'expired' },
      [now, since],
    );
  }

  /**
   * Gives the open listing cards that `where` selects ($1 the network; $8 on: `values`) the fate
   * `body`, under the network's ingest lease; resolves with the sent ones to edit (their chats are
   * told).
   */
  async #fate(network: string, where: string, body: object, values: unknown[]): Promise<DeliveryRecord[]> {
    const lease = leaseName('ingest', network);
    const attempt = async () => {
      const rows = await this.#run<Row & { notified: unknown; fence_held: string }>(
        `WITH ${fenceClause(5, 6)},
         changed AS (
           UPDATE deliveries d SET fate = $2::jsonb || jsonb_build_object('at', $3::text, 'rev', d.fate_rev + 1),
                  fate_rev = d.fate_rev + 1, updated_at = now()
           WHERE ${where} AND d.listing IS NOT NULL AND NOT d.reorged AND d.state IN ('pending', 'sending', 'sent')
             AND (d.fate IS NULL OR d.fate->>'state' = 'listed') AND EXISTS (SELECT 1 FROM fence)
           RETURNING d.*)
         SELECT (SELECT count(*) FROM fence) AS fence_held, c.*,
                CASE WHEN c.state = 'sent'
                  THEN pg_notify($4, json_build_object('chats', json_build_array(c.chat_key), 'origin', $7::text)::text)
                END AS notified
         FROM (SELECT 1) AS one LEFT JOIN changed c ON true`,
        [
          network,
          JSON.stringify(body),
          new Date().toISOString(),
          DELIVERIES_CHANNEL,
          [lease],
          [await this.#fences.token(lease)],
          this.origin,
          ...values,
        ],
      );
      return Number(rows[0]?.fence_held ?? 0) === 1 ? rows : undefined;
    };
    let rows = await attempt();
    if (!rows) {
      await this.#confirm([lease]);
      rows = (await attempt()) ?? (await this.#refusedUnder([lease]));
    }
    return rows
      .filter((row) => row.id !== null)
      .sort((a, b) => Number(a.seq) - Number(b.seq))
      .map((row) => this.#keep(row))
      .filter(needsEdit);
  }

  async markReorged(network: string, txnHash: string): Promise<ReorgOutcome> {
    const lease = leaseName('ingest', network);
    // Every delivery of the transaction comes back: those changed now, and those marked before
    // (whose messages may still wait for their edit).
    const attempt = async () => {
      const rows = await this.#run<Row & { notified: unknown; fence_held: string; changed: boolean }>(
        `WITH ${fenceClause(5, 6)},
         changed AS (
           UPDATE deliveries SET reorged = true, updated_at = now(),
                  state = CASE WHEN state = 'pending' THEN 'dropped' ELSE state END
           WHERE network = $1 AND txn_hash = $2 AND NOT reorged AND EXISTS (SELECT 1 FROM fence) RETURNING *),
         reopened AS (
           UPDATE deliveries d SET fate = jsonb_build_object('state', 'listed', 'reversed', $2::text, 'at', $7::text,
                                                             'rev', d.fate_rev + 1),
                  fate_rev = d.fate_rev + 1, updated_at = now()
           WHERE d.fate->>'txnHash' = $2 AND d.network = $1 AND d.fate->>'state' IN ('sold', 'cancelled')
             AND EXISTS (SELECT 1 FROM fence) RETURNING d.*),
         every AS (
           SELECT c.*, true AS changed FROM changed c
           UNION ALL
           SELECT r.*, true AS changed FROM reopened r
           UNION ALL
           SELECT d.*, false AS changed FROM deliveries d
           WHERE d.network = $1 AND d.txn_hash = $2 AND d.id NOT IN (SELECT id FROM changed))
         SELECT (SELECT count(*) FROM fence) AS fence_held, e.*,
                CASE WHEN e.changed AND e.state = 'sent' AND (e.reorged OR e.fate_rev <> e.fate_shown) AND e.edited_at IS NULL
                  THEN pg_notify($3, json_build_object('chats', json_build_array(e.chat_key), 'origin', $4::text)::text)
                END AS notified
         FROM (SELECT 1) AS one LEFT JOIN every e ON true`,
        [
          network,
          txnHash,
          DELIVERIES_CHANNEL,
          this.origin,
          [lease],
          [await this.#fences.token(lease)],
          new Date().toISOString(),
        ],
      );
      return Number(rows[0]?.fence_held ?? 0) === 1 ? rows : undefined;
    };
    let rows = await attempt();
    if (!rows) {
      // As in record: lost, or taken again after a pause between the check and the statement.
      await this.#confirm([lease]);
      rows = (await attempt()) ?? (await this.#refusedUnder([lease]));
    }
    const found = rows.filter((row) => row.id !== null).sort((a, b) => Number(a.seq) - Number(b.seq));
    const records = found.map((row) => ({ changed: row.changed, record: this.#keep(row) }));
    return {
      deliveries: records.length,
      dropped: records.filter((r) => r.changed && r.record.state === 'dropped').map((r) => r.record),
      edits: records.map((r) => r.record).filter(needsEdit),
    };
  }

  /** Advisory (only shortens how long deliveries are kept): group-committed, for this process's deliveries. */
  async markFinal(network: string, txnHash: string): Promise<void> {
    const ids = [...(this.#byTxn.get(`${network}|${txnHash}`) ?? [])];
    if (!ids.some((id) => this.#records.get(id)?.final === false)) return;
    await this.#final.call(`${network}|${txnHash}`, [network, txnHash]);
  }

  readonly #final = new GroupCommit<[string, string], true>(async (calls) => {
    const rows = await this.#run<Row>(
      `UPDATE deliveries d SET final = true, updated_at = now()
       FROM unnest($1::text[], $2::text[]) AS t(network, txn_hash)
       WHERE d.network = t.network AND d.txn_hash = t.txn_hash AND NOT d.final RETURNING d.*`,
      [calls.map((c) => c.arg[0]), calls.map((c) => c.arg[1])],
    );
    for (const row of rows) this.#keep(row);
    return new Map(calls.map((c) => [c.key, true as const]));
  });

  async deliveriesOf(network: string, txnHash: string): Promise<DeliveryRecord[]> {
    const { rows } = await this.#db.pool.query<Row>(
      'SELECT * FROM deliveries WHERE network = $1 AND txn_hash = $2 ORDER BY seq',
      [network, txnHash],
    );
    return rows.map(toRecord);
  }

  async sentTogether(destination: Destination, messageId: string): Promise<DeliveryRecord[]> {
    const { rows } = await this.#db.pool.query<Row>(
      'SELECT * FROM deliveries WHERE chat_key = $1 AND message_id = $2 ORDER BY seq',
      [destinationKey(destination), messageId],
    );
    return rows.map((row) => this.#keep(row));
  }

  async deliveredTo(destination: Destination, since: Date): Promise<DeliveryRecord[]> {
    const { rows } = await this.#db.pool.query<Row>(
      'SELECT * FROM deliveries WHERE chat_key = $1 AND created_at >= $2 ORDER BY seq',
      [destinationKey(destination), since],
    );
    return rows.map(toRecord);
  }

  /**
   * The chat's deliveries still to send and edits still to make, in recording order, after `afterSeq`
   * (for the holder of the chat's claim). Each comes with its sequence number.
   */
  openFor(chatKey: string, afterSeq = 0): Promise<Array<{ seq: number; record: DeliveryRecord }>> {
    return this.#open.call(chatKey, afterSeq);
  }

  readonly #open = new GroupCommit<number, Array<{ seq: number; record: DeliveryRecord }>>(async (calls) => {
    const { rows } = await this.#db.pool.query<Row>(
      `SELECT d.* FROM deliveries d JOIN unnest($1::text[], $2::bigint[]) AS t(chat_key, after) ON d.chat_key = t.chat_key
       WHERE (d.seq > t.after AND d.state IN ('pending', 'sending') AND NOT d.reorged) OR ${NEEDS_EDIT}
       ORDER BY d.seq`,
      [calls.map((c) => c.key), calls.map((c) => c.arg)],
    );
    const out = new Map<string, Array<{ seq: number; record: DeliveryRecord }>>(calls.map((c) => [c.key, []]));
    for (const row of rows) out.get(row.chat_key)?.push({ seq: Number(row.seq), record: this.#keep(row) });
    return out;
  });

  /** Chats with deliveries to send or edits to make (for claims that start or look around). */
  async chatsWithWork(): Promise<string[]> {
    const { rows } = await this.#db.pool.query<{ chat_key: string }>(
      `SELECT DISTINCT chat_key FROM deliveries d WHERE ${OPEN}`,
    );
    return rows.map((r) => r.chat_key);
  }

  /**
   * Every chat's open deliveries, in recording order. Processes that share the table take them chat
   * by chat instead, as their claims say (see {@link PgDeliveryLog.openFor}).
   */
  async outstanding(): Promise<OutstandingDeliveries> {
    const { rows } = await this.#db.pool.query<Row>(`SELECT * FROM deliveries d WHERE ${OPEN} ORDER BY seq`);
    const records = rows.map((row) => this.#keep(row));
    return { sends: records.filter((r) => !needsEdit(r) && r.state !== 'sent'), edits: records.filter(needsEdit) };
  }

  writeFailure(): JournalWriteFailure | undefined {
    return this.#failure;
  }

  /** The table's deliveries by state (every process's: the table is one); `bytes` is not known here. */
  async counts(): Promise<JournalStats> {
    const { rows } = await this.#db.pool.query<{ state: DeliveryState; count: string }>(
      'SELECT state, count(*) AS count FROM deliveries GROUP BY state',
    );
    const stats: JournalStats = { records: 0, bytes: 0, pending: 0, sending: 0, sent: 0, failed: 0, dropped: 0 };
    for (const row of rows) {
      stats[row.state] = Number(row.count);
      stats.records += Number(row.count);
    }
    return stats;
  }

  async close(): Promise<void> {
    clearInterval(this.#cleanup);
  }

  // ---- internals ----

  async #change(id: string, sql: string, values: unknown[], refusal: string, lease: string): Promise<DeliveryRecord> {
    const rows = await this.#run<Row>(sql, values);
    const row = rows[0];
    if (!row) {
      // Refused for its state, or for a lease this process lost: the database says which.
      await this.#fences.renew().catch(() => undefined);
      await this.#fences.token(lease);
      throw new JournalError(this.#db.where, `delivery ${JSON.stringify(id)} ${refusal}`);
    }
    return this.#keep(row);
  }

  /** One statement (its own transaction); a failure is a write failure, as a full disk is for the journal. */
  async #run<R extends object>(sql: string, values: unknown[]): Promise<R[]> {
    try {
      const { rows } = await this.#db.pool.query<R>(sql, values);
      this.#failure = undefined;
      return rows;
    } catch (cause) {
      const at = new Date().toISOString();
      const code = (cause as { code?: unknown }).code;
      const message = cause instanceof Error ? cause.message : String(cause);
      this.#failure = {
        since: this.#failure?.since ?? at,
        at,
        code: typeof code === 'string' ? code : undefined,
        message,
        failures: (this.#failure?.failures ?? 0) + 1,
        broken: false,
      };
      throw new JournalWriteError(this.#db.where, `a write failed (${message})`, { cause });
    }
  }

  #keep(row: Row): DeliveryRecord {
    const record = toRecord(row);
    this.#records.set(record.id, record);
    const key = `${record.network}|${record.txnHash}`;
    const ids = this.#byTxn.get(key);
    if (ids) ids.add(record.id);
    else this.#byTxn.set(key, new Set([record.id]));
    return record;
  }

  async #removeClosed(): Promise<void> {
    const now = Date.now();
    for (const [id, record] of this.#records) {
      if (!isClosed(record) || now - Date.parse(record.updatedAt) < CACHE_MS) continue;
      this.#records.delete(id);
      const key = `${record.network}|${record.txnHash}`;
      const ids = this.#byTxn.get(key);
      ids?.delete(id);
      if (ids?.size === 0) this.#byTxn.delete(key);
    }
    try {
      await this.#db.pool.query(
        `DELETE FROM deliveries WHERE updated_at < $1
           AND (state IN ('failed', 'dropped') OR (state = 'sent' AND (final OR (reorged AND edited_at IS NOT NULL))))
           AND NOT (listing IS NOT NULL AND NOT reorged AND state = 'sent' AND created_at > $2)
           AND NOT (state = 'sent' AND NOT reorged AND fate_rev <> fate_shown)`,
        [new Date(now - RETENTION_MS), new Date(now - MAX_LISTING_EDIT_WINDOW_MS)],
      );
    } catch (error) {
      this.#logger.warn({ err: error }, 'could not delete old deliveries');
    }
  }
}

function isClosed(r: DeliveryRecord): boolean {
  if (needsEdit(r) || followsListing(r, Date.now())) return false;
  if (r.state === 'failed' || r.state === 'dropped') return true;
  if (r.state === 'sent') return r.reorged ? r.editedAt !== undefined : r.final;
  return r.reorged;
}

function toRecord(row: Row): DeliveryRecord {
  const colon = row.chat_key.indexOf(':');
  const destination = Object.freeze({
    platform: row.chat_key.slice(0, colon) as Destination['platform'],
    chatId: row.chat_key.slice(colon + 1),
  });
  return Object.freeze({
    id: row.id,
    eventId: row.event_id,
    destination,
    network: row.network,
    txnHash: row.txn_hash,
    blockNumber: Number(row.block_number),
    ...(row.kind === null ? {} : { kind: row.kind as AlertKind | 'digest' }),
    ...(row.usd === null ? {} : { usd: row.usd }),
    state: row.state,
    attempts: row.attempts,
    ...(row.send_key === null ? {} : { sendKey: row.send_key }),
    ...(row.message_id === null ? {} : { messageId: row.message_id }),
    ...(row.last_error === null ? {} : { lastError: row.last_error }),
    reorged: row.reorged,
    ...(row.edited_at === null ? {} : { editedAt: row.edited_at.toISOString() }),
    final: row.final,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    payloadJson: row.payload,
    ...listingOf(row),
  });
}

/** A row's listing card parts; parts that do not read as such are left out (and the card is not followed). */
function listingOf(row: Row): Pick<DeliveryRecord, 'listing' | 'fate' | 'fateShown'> {
  const listing = row.listing === null || row.listing === undefined ? undefined : readListing(row.listing);
  const fate = row.fate === null || row.fate === undefined ? undefined : readFate(row.fate);
  return {
    ...(listing ? { listing } : {}),
    ...(fate ? { fate } : {}),
    ...(row.fate_shown ? { fateShown: row.fate_shown } : {}),
  };
}
