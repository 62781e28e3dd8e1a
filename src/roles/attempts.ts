import { LRUCache } from 'lru-cache';

/**
 * A sliding-window count of attempts per key (a person, an address): at most `max` within
 * `windowMs`. Kept in this process's memory, bounded to `keys` keys (the least recently used go
 * first); with several processes each counts its own requests.
 */
export class AttemptLimiter {
  readonly #max: number;
  readonly #windowMs: number;
  readonly #now: () => number;
  readonly #attempts: LRUCache<string, number[]>;

  constructor(options: { max: number; windowMs: number; keys?: number; now?: () => number }) {
    this.#max = options.max;
    this.#windowMs = options.windowMs;
    this.#now = options.now ?? Date.now;
    this.#attempts = new LRUCache({ max: options.keys ?? 10_000 });
  }

  /** Whether another attempt is allowed now, without counting it. */
  allows(key: string): boolean {
    return this.#recent(key).length < this.#max;
  }

  /** Counts an attempt; false (and not counted) when the window is full. */
  take(key: string): boolean {
    const recent = this.#recent(key);
    if (recent.length >= this.#max) return false;
    recent.push(this.#now());
    this.#attempts.set(key, recent);
    return true;
  }

  #recent(key: string): number[] {
    const since = this.#now() - this.#windowMs;
    return (this.#attempts.get(key) ?? []).filter((at) => at > since);
  }
}
