/**
 * The market history in PostgreSQL (migration 1767000000000): the tables every process shares, so that
 * /collection, digests, last sales and relists are the same on every replica, whichever process saw
 * the sales (the ingest leader of their network) and whichever looked a floor up. Writes are
 * idempotent (a sale is keyed by network, transaction, collection and position; a listing by its
 * identity). Old rows are deleted every hour past the retention. See core/market.ts for the port.
 */
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import {
  type DailyMarket,
  dailyMarket,
  FLOOR_SAMPLE_INTERVAL_MS,
  type FloorSample,
  LISTING_RETENTION_MS,
  MARKET_HISTORY_RETENTION_MS,
  type MarketHistory,
  type RecordedSale,
  type SeenListing,
  type TokenSale,
  type WindowActivity,
} from '../../core/market.ts';
import type { Database } from './database.ts';

export interface PgMarketHistoryOptions {
  logger: Logger;
  /** How often old rows are deleted. Default 1 h; 0 never. */
  pruneEveryMs?: number;
  retentionMs?: number;
  now?: () => number;
}

interface SaleRow {
  at: string;
  token_id: string;
  amount: string;
  usd: number | null;
}

/** {@link MarketHistory} in the shared database. */
export class PgMarketHistory implements MarketHistory {
  readonly #db: Database;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #retentionMs: number;
  readonly #since: number;
  readonly #timer: NodeJS.Timeout | undefined;
  /** The last sample this process wrote or saw per collection (its time), bounded. */
  readonly #recent = new LRUCache<string, number>({ max: 10_000 });

  private constructor(db: Database, since: number, options: PgMarketHistoryOptions) {
    this.#db = db;
    this.#logger = options.logger;
    this.#now = options.now ?? Date.now;
    this.#retentionMs = options.retentionMs ?? MARKET_HISTORY_RETENTION_MS;
    this.#since = since;
    const every = options.pruneEveryMs ?? 60 * 60 * 1000;
    if (every > 0) {
      this.#timer = setInterval(() => void this.#prune(), every);
      this.#timer.unref();
    }
  }

  /** Reads when recording began (the first process to open the record begins it). */
  static async open(db: Database, options: PgMarketHistoryOptions): Promise<PgMarketHistory> {
    const now = (options.now ?? Date.now)();
    const { rows } = await db.pool.query<{ since: string }>(
      `WITH begun AS (INSERT INTO market_record (since) VALUES ($1) ON CONFLICT (one) DO NOTHING RETURNING since)
       SELECT since FROM begun UNION ALL SELECT since FROM market_record LIMIT 1`,
      [now],
    );
    return new PgMarketHistory(db, Number(rows[0]?.since ?? now), options);
  }

  async since(): Promise<number | undefined> {
    return this.#since;
  }

  async addSales(sales: readonly RecordedSale[]): Promise<void> {
    const columns: unknown[][] = [[], [], [], [], [], [], [], [], [], [], [], []];
    for (const sale of sales) {
      sale.tokens.forEach((token, position) => {
        const row = [
          sale.network,
          sale.collection.toLowerCase(),
          sale.txnHash.toLowerCase(),
          position,
          token.tokenId,
          token.amount,
          token.usd ?? null,
          sale.at,
          sale.buyer?.toLowerCase() ?? null,
          token.paid?.amount ?? null,
          token.paid?.currency ?? null,
          token.paid?.decimals ?? null,
        ];
        for (const [i, value] of row.entries()) columns[i]?.push(value);
      });
    }
    if ((columns[0]?.length ?? 0) === 0) return;
    await this.#db.pool.query(
      `INSERT INTO market_sales (network, collection, txn_hash, position, token_id, amount, usd, at,
                                 buyer, paid_amount, paid_currency, paid_decimals)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::float8[], $8::bigint[],
                            $9::text[], $10::text[], $11::text[], $12::int[])
       ON CONFLICT DO NOTHING`,
      columns,
    );
  }

  async floor(network: string, collection: string, usd: number, at: number, lookedUp = false): Promise<void> {
    if (!(usd > 0) || !Number.isFinite(usd)) return;
    const c = collection.toLowerCase();
    // Enrichment offers a sample with every sale and listing: one this process wrote lately decides,
    // without a round trip, that it is the same sample (as the table would).
    const key = `${network}:${c}`;
    const known = this.#recent.get(key);
    if (!lookedUp && known !== undefined && Math.abs(at - known) < FLOOR_SAMPLE_INTERVAL_MS) return;
    try {
      const latest = await this.#db.inTransaction(async (client) => {
        // The collection's two latest samples, held while this one is decided (as the file keeps its order).
        const { rows } = await client.query<{ at: string }>(
          'SELECT at FROM market_floors WHERE network = $1 AND collection = $2 ORDER BY at DESC LIMIT 2 FOR UPDATE',
          [network, c],
        );
        const last = rows[0] === undefined ? undefined : Number(rows[0].at);
        let latest = last;
        if (last !== undefined && Math.abs(at - last) < FLOOR_SAMPLE_INTERVAL_MS) {
          if (lookedUp && at >= last) {
            // The first sample stays: until an older one is recorded, floor changes are measured from it.
            if (rows.length > 1) {
              await client.query(
                'UPDATE market_floors SET at = $4, usd = $5 WHERE network = $1 AND collection = $2 AND at = $3',
                [network, c, last, at, usd],
              );
            } else {
              await client.query(
                `INSERT INTO market_floors (network, collection, at, usd) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (network, collection, at) DO UPDATE SET usd = EXCLUDED.usd`,
                [network, c, at, usd],
              );
            }
            latest = at;
          }
        } else {
          await client.query(
            `INSERT INTO market_floors (network, collection, at, usd) VALUES ($1, $2, $3, $4)
             ON CONFLICT (network, collection, at) DO UPDATE SET usd = EXCLUDED.usd`,
            [network, c, at, usd],
          );
          latest = Math.max(at, last ?? at);
        }
        return latest;
      });
      if (latest !== undefined) this.#recent.set(key, latest);
    } catch (error) {
      this.#logger.warn({ err: error }, 'could not record a floor');
    }
  }

  async reorged(network: string, txnHash: string): Promise<void> {
    const tx = txnHash.toLowerCase();
    await this.#db.pool.query(
      `WITH sales AS (DELETE FROM market_sales WHERE network = $1 AND txn_hash = $2)
       DELETE FROM market_listings WHERE network = $1 AND txn_hash = $2`,
      [network, tx],
    );
  }

  async relist(listing: SeenListing, windowMs: number): Promise<boolean> {
    const txnHash = listing.txnHash.toLowerCase();
    // The earlier one as it was before this statement (a data-modifying CTE sees the table before it).
    const { rows } = await this.#db.pool.query<{ txn_hash: string; at: string }>(
      `WITH earlier AS (SELECT txn_hash, at FROM market_listings WHERE network = $1 AND key = $2),
       seen AS (
         INSERT INTO market_listings (network, key, txn_hash, at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (network, key) DO UPDATE SET txn_hash = EXCLUDED.txn_hash, at = EXCLUDED.at)
       SELECT txn_hash, at FROM earlier`,
      [listing.network, listing.key, txnHash, listing.at],
    );
    const earlier = rows[0];
    return earlier !== undefined && earlier.txn_hash !== txnHash && listing.at - Number(earlier.at) < windowMs;
  }

  async lastSale(network: string, collection: string, tokenId: string): Promise<TokenSale | undefined> {
    const { rows } = await this.#db.pool.query<{
      at: string;
      amount: string;
      usd: number | null;
      buyer: string | null;
      paid_amount: string | null;
      paid_currency: string | null;
      paid_decimals: number | null;
    }>(
      `SELECT at, amount, usd, buyer, paid_amount, paid_currency, paid_decimals FROM market_sales
       WHERE network = $1 AND collection = $2 AND token_id = $3
       ORDER BY at DESC, seq DESC LIMIT 1`,
      [network, collection.toLowerCase(), tokenId],
    );
    const row = rows[0];
    if (!row) return undefined;
    const units = Number(row.amount) || 1;
    const paid =
      row.paid_amount !== null && row.paid_currency !== null && row.paid_decimals !== null
        ? { amount: row.paid_amount, currency: row.paid_currency, decimals: row.paid_decimals }
        : undefined;
    return {
      at: Number(row.at),
      units: row.amount,
      ...(row.usd === null ? {} : { usd: row.usd / units }),
      ...(row.buyer === null ? {} : { buyer: row.buyer }),
      ...(paid ? { paid } : {}),
    };
  }

  async activity(network: string, collection: string, windowMs: number, now: number): Promise<WindowActivity> {
    const start = now - windowMs;
    const c = collection.toLowerCase();
    const [sales, floors] = await Promise.all([
      this.#db.pool.query<{ sales: string; priced: string; volume: number | null }>(
        `SELECT count(*) AS sales, count(usd) AS priced, sum(usd) AS volume FROM market_sales
         WHERE network = $1 AND collection = $2 AND at >= $3`,
        [network, c, start],
      ),
      // The floor when the window began: the last sample before it, else the first one in it.
      this.#db.pool.query<{ at: string; usd: number }>(
        `(SELECT at, usd FROM market_floors WHERE network = $1 AND collection = $2 AND at <= $3 ORDER BY at DESC LIMIT 1)
         UNION ALL
         (SELECT at, usd FROM market_floors WHERE network = $1 AND collection = $2 AND at > $3 AND at <= $4
          ORDER BY at LIMIT 1)`,
        [network, c, start, now],
      ),
    ]);
    const counted = sales.rows[0];
    const then = floors.rows[0];
    return {
      from: Math.max(start, this.#since),
      complete: this.#since <= start,
      sales: Number(counted?.sales ?? 0),
      priced: Number(counted?.priced ?? 0),
      volumeUsd: counted?.volume ?? 0,
      floorThen: then ? { at: Number(then.at), usd: then.usd } : undefined,
    };
  }

  async daily(
    network: string,
    collection: string,
    days: readonly string[],
    dayOf: (at: number) => string,
  ): Promise<DailyMarket> {
    const c = collection.toLowerCase();
    const [sales, floors] = await Promise.all([
      this.#db.pool.query<SaleRow>(
        'SELECT at, token_id, amount, usd FROM market_sales WHERE network = $1 AND collection = $2 ORDER BY at, seq',
        [network, c],
      ),
      this.#db.pool.query<{ at: string; usd: number }>(
        'SELECT at, usd FROM market_floors WHERE network = $1 AND collection = $2 ORDER BY at',
        [network, c],
      ),
    ]);
    const samples: FloorSample[] = floors.rows.map((row) => ({ at: Number(row.at), usd: row.usd }));
    const tokens = sales.rows.map((row) => ({
      at: Number(row.at),
      tokens: [
        row.usd === null
          ? { tokenId: row.token_id, amount: row.amount }
          : { tokenId: row.token_id, amount: row.amount, usd: row.usd },
      ],
    }));
    return dailyMarket(tokens, samples, days, dayOf);
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
  }

  /** Deletes what is older than the retention; a collection keeps its last floor sample before it. */
  async #prune(): Promise<void> {
    const now = this.#now();
    const cutoff = now - this.#retentionMs;
    try {
      await this.#db.pool.query('DELETE FROM market_sales WHERE at < $1', [cutoff]);
      await this.#db.pool.query(
        `DELETE FROM market_floors f WHERE f.at < $1 AND EXISTS (
           SELECT 1 FROM market_floors g
           WHERE g.network = f.network AND g.collection = f.collection AND g.at < $1 AND g.at > f.at)`,
        [cutoff],
      );
      // A collection with nothing left in the week goes whole, as the file forgets it.
      await this.#db.pool.query(
        `DELETE FROM market_floors f WHERE f.at < $1
           AND NOT EXISTS (SELECT 1 FROM market_floors g WHERE g.network = f.network AND g.collection = f.collection AND g.at >= $1)
           AND NOT EXISTS (SELECT 1 FROM market_sales s WHERE s.network = f.network AND s.collection = f.collection)`,
        [cutoff],
      );
      await this.#db.pool.query('DELETE FROM market_listings WHERE at < $1', [now - LISTING_RETENTION_MS]);
    } catch (error) {
      this.#logger.warn({ err: error }, 'could not delete old market history');
    }
  }
}
