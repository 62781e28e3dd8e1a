/**
 * Token buckets keyed by user and by chat. `take` answers how long to wait when a bucket is empty.
 */
export interface RateLimitPolicy {
  /** Burst size. */
  capacity: number;
  /** Tokens regained per second. */
  refillPerSecond: number;
}

export const DEFAULT_USER_LIMIT: RateLimitPolicy = { capacity: 6, refillPerSecond: 0.5 };
export const DEFAULT_CHAT_LIMIT: RateLimitPolicy = { capacity: 20, refillPerSecond: 1 };

interface Bucket {
  tokens: number;
  updatedMs: number;
}

export class RateLimiter {
  readonly #policy: RateLimitPolicy;
  readonly #buckets = new Map<string, Bucket>();

  constructor(policy: RateLimitPolicy) {
    this.#policy = policy;
  }

  /** Takes one token; returns 0 when allowed, else the milliseconds until a token is back. */
  take(key: string, nowMs: number): number {
    const { capacity, refillPerSecond } = this.#policy;
    const bucket = this.#buckets.get(key) ?? { tokens: capacity, updatedMs: nowMs };
    // A clock set backwards must not drain the bucket: no time passed then.
    const elapsed = Math.max(0, nowMs - bucket.updatedMs);
    bucket.tokens = Math.min(capacity, bucket.tokens + (elapsed / 1000) * refillPerSecond);
    bucket.updatedMs = nowMs;
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      this.#buckets.set(key, bucket);
      if (this.#buckets.size > 50_000) this.#prune(nowMs);
      return 0;
    }
    this.#buckets.set(key, bucket);
    return Math.ceil(((1 - bucket.tokens) / refillPerSecond) * 1000);
  }

  /** Forgets buckets that are full again. */
  #prune(nowMs: number): void {
    const { capacity, refillPerSecond } = this.#policy;
    for (const [key, bucket] of this.#buckets) {
      if (bucket.tokens + ((nowMs - bucket.updatedMs) / 1000) * refillPerSecond >= capacity) this.#buckets.delete(key);
    }
  }
}
