import type { CompletenessCounts, CompletenessDay, CompletenessStore } from '../../core/ports.ts';
import { CompletenessTally } from '../completeness-tally.ts';
import { LazyWrite } from '../lazy-write.ts';
import type { Database } from './database.ts';

/**
 * The record's completeness in the shared database, so that /status and the digests of every process
 * show the figures of the process that ingests. Additions are gathered in memory and written at most
 * once per `writeDelayMs` as one upsert that adds them (two processes adding in turn add up); a write
 * that fails keeps them for the next one. Reads add what this process has not written yet.
 */
export class PgCompletenessStore implements CompletenessStore {
  readonly #db: Database;
  readonly #lazy: LazyWrite;
  readonly #pending = new CompletenessTally();

  constructor(db: Database, options: { writeDelayMs?: number; onWriteError?: (error: unknown) => void } = {}) {
    this.#db = db;
    this.#lazy = new LazyWrite(options.writeDelayMs ?? 2_000, () => this.#write(), options.onWriteError);
  }

  add(network: string, counts: Partial<CompletenessCounts>, at: Date = new Date()): void {
    if (this.#pending.add(network, counts, at.getTime())) this.#lazy.schedule();
  }

  async days(fromDay: string, toDay: string): Promise<CompletenessDay[]> {
    const { rows } = await this.#db.pool.query<{
      network: string;
      day: string;
      events: string;
      blocks_read_back: string;
      blocks_missed: string;
    }>(
      `SELECT network, to_char(day, 'YYYY-MM-DD') AS day, events, blocks_read_back, blocks_missed
         FROM completeness WHERE day BETWEEN $1::date AND $2::date`,
      [fromDay, toDay],
    );
    return this.#pending.within(
      fromDay,
      toDay,
      rows.map((row) => ({
        network: row.network,
        day: row.day,
        events: Number(row.events),
        blocksReadBack: Number(row.blocks_read_back),
        blocksMissed: Number(row.blocks_missed),
      })),
    );
  }

  async flush(): Promise<void> {
    await this.#lazy.flush();
  }

  async #write(): Promise<void> {
    if (this.#pending.size === 0) return;
    const days = this.#pending.take();
    try {
      await this.#db.pool.query(
        `INSERT INTO completeness (network, day, events, blocks_read_back, blocks_missed)
         SELECT * FROM unnest($1::text[], $2::date[], $3::bigint[], $4::bigint[], $5::bigint[])
         ON CONFLICT (network, day) DO UPDATE SET
           events = completeness.events + EXCLUDED.events,
           blocks_read_back = completeness.blocks_read_back + EXCLUDED.blocks_read_back,
           blocks_missed = completeness.blocks_missed + EXCLUDED.blocks_missed`,
        [
          days.map((d) => d.network),
          days.map((d) => d.day),
          days.map((d) => d.events),
          days.map((d) => d.blocksReadBack),
          days.map((d) => d.blocksMissed),
        ],
      );
    } catch (error) {
      this.#pending.merge(days);
      throw error;
    }
  }
}
