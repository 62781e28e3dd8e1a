import type { CursorStore } from '../../core/ports.ts';
import { LazyWrite } from '../lazy-write.ts';
import type { Database } from './database.ts';

/**
 * The per-network cursors in the shared database, so that the process that takes over a network's
 * ingestion backfills from where the last one stopped. Reads go to the database; advances are
 * gathered and written at most once per `writeDelayMs` (a cursor only ever moves forward, also
 * when two processes wrote it in turn).
 */
export class PgCursorStore implements CursorStore {
  readonly #db: Database;
  readonly #lazy: LazyWrite;
  readonly #dirty = new Map<string, number>();

  constructor(db: Database, options: { writeDelayMs?: number; onWriteError?: (error: unknown) => void } = {}) {
    this.#db = db;
    this.#lazy = new LazyWrite(options.writeDelayMs ?? 250, () => this.#write(), options.onWriteError);
  }

  async get(network: string): Promise<number | undefined> {
    const { rows } = await this.#db.pool.query<{ block: string }>('SELECT block FROM cursors WHERE network = $1', [
      network,
    ]);
    const stored = rows[0] === undefined ? undefined : Number(rows[0].block);
    const pending = this.#dirty.get(network);
    if (pending === undefined) return stored;
    return stored === undefined ? pending : Math.max(stored, pending);
  }

  async advance(network: string, block: number): Promise<void> {
    if (!Number.isSafeInteger(block) || block < 0)
      throw new RangeError(`cursor block must be a whole number, got ${block}`);
    if ((this.#dirty.get(network) ?? -1) >= block) return;
    this.#dirty.set(network, block);
    this.#lazy.schedule();
  }

  async flush(): Promise<void> {
    await this.#lazy.flush();
  }

  async #write(): Promise<void> {
    if (this.#dirty.size === 0) return;
    const entries = [...this.#dirty];
    this.#dirty.clear();
    try {
      await this.#db.pool.query(
        `INSERT INTO cursors (network, block, updated_at)
         SELECT * , now() FROM unnest($1::text[], $2::bigint[])
         ON CONFLICT (network) DO UPDATE SET block = GREATEST(cursors.block, EXCLUDED.block), updated_at = now()`,
        [entries.map(([n]) => n), entries.map(([, b]) => b)],
      );
    } catch (error) {
      for (const [network, block] of entries) {
        if ((this.#dirty.get(network) ?? -1) < block) this.#dirty.set(network, block);
      }
      throw error;
    }
  }
}
