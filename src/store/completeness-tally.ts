import type { CompletenessCounts, CompletenessDay } from '../core/ports.ts';

const FIELDS = ['events', 'blocksReadBack', 'blocksMissed'] as const;

/** The UTC day (`YYYY-MM-DD`) of a time, worked out once per day: the alert path asks per event. */
export class UtcDay {
  #day = '';
  #endsAt = 0;

  of(ms: number): string {
    if (ms >= this.#endsAt || ms < this.#endsAt - 86_400_000) {
      this.#day = new Date(ms).toISOString().slice(0, 10);
      this.#endsAt = Date.parse(this.#day) + 86_400_000;
    }
    return this.#day;
  }
}

/**
 * Completeness counts per network and UTC day, in memory: what both adapters keep between writes
 * (the PostgreSQL one: what was added and not written yet; the file one: everything it holds).
 */
export class CompletenessTally {
  readonly #days = new Map<string, CompletenessDay>();
  readonly #clock = new UtcDay();

  get size(): number {
    return this.#days.size;
  }

  /** Adds counts; false when they add nothing (negative, fractional or absent counts are ignored). */
  add(network: string, counts: Partial<CompletenessCounts>, at: number): boolean {
    let changed = false;
    let entry: CompletenessDay | undefined;
    for (const field of FIELDS) {
      const value = counts[field];
      if (value === undefined || !Number.isSafeInteger(value) || value <= 0) continue;
      if (!entry) {
        const day = this.#clock.of(at);
        const key = `${network}|${day}`;
        entry = this.#days.get(key);
        if (!entry) {
          entry = { network, day, events: 0, blocksReadBack: 0, blocksMissed: 0 };
          this.#days.set(key, entry);
        }
      }
      entry[field] += value;
      changed = true;
    }
    return changed;
  }

  /** Adds whole day records (restoring a failed write, or loading a file). */
  merge(days: Iterable<CompletenessDay>): void {
    for (const day of days) {
      const key = `${day.network}|${day.day}`;
      const entry = this.#days.get(key);
      if (entry) for (const field of FIELDS) entry[field] += day[field];
      else this.#days.set(key, { ...day });
    }
  }

  /** Every day held (copies). */
  all(): CompletenessDay[] {
    return [...this.#days.values()].map((day) => ({ ...day }));
  }

  /** Takes every day held out (copies), leaving none. */
  take(): CompletenessDay[] {
    const out = this.all();
    this.#days.clear();
    return out;
  }

  /** Drops the days before `day`. */
  dropBefore(day: string): void {
    for (const [key, entry] of this.#days) if (entry.day < day) this.#days.delete(key);
  }

  /** The days held within `fromDay`..`toDay`, added to `rows` (copies). */
  within(fromDay: string, toDay: string, rows: readonly CompletenessDay[] = []): CompletenessDay[] {
    const out = new CompletenessTally();
    out.merge(rows);
    out.merge([...this.#days.values()].filter((d) => d.day >= fromDay && d.day <= toDay));
    return out.all().sort((a, b) => a.day.localeCompare(b.day) || a.network.localeCompare(b.network));
  }
}
