/**
 * Token buckets keyed by user and by chat, and the flood rule built on them: every message a
 * person sends takes a token; a message without one is refused, and only the first refusal of a
 * window is answered ("slow down"), so a flood never gets more answers than the buckets allow plus
 * one notice per window.
 */
export interface RateLimitPolicy {
  /** Burst size. */
  capacity: number;
  /** Tokens regained per second. */
  refillPerSecond: number;
}

export const DEFAULT_USER_LIMIT: RateLimitPolicy = { capacity: 6, refillPerSecond: 0.5 };
export const DEFAULT_CHAT_LIMIT: RateLimitPolicy = { capacity: 20, refillPerSecond: 1 };

/**
 * What to do with one incoming message: handle it; refuse it and say so (`notify`, with the wait
 * to announce); or refuse it without a word (`silent`: this window's refusal was announced already).
 */
export type Verdict = { status: 'ok' } | { status: 'notify' | 'silent'; waitMs: number };

interface Bucket {
  tokens: number;
  updatedMs: number;
  /** A refusal was announced since the bucket last had a token. */
  told: boolean;
}

const MAX_BUCKETS = 50_000;

export class RateLimiter {
  readonly #policy: RateLimitPolicy;
  readonly #buckets = new Map<string, Bucket>();

  constructor(policy: RateLimitPolicy) {
    this.#policy = policy;
  }

  /** Takes one token; returns 0 when allowed, else the milliseconds until a token is back. */
  take(key: string, nowMs: number): number {
    const wait = this.waitMs(key, nowMs);
    if (wait === 0) this.spend(key);
    return wait;
  }

  /** Milliseconds until `key` has a token (0: it has one now). Takes nothing. */
  waitMs(key: string, nowMs: number): number {
    const bucket = this.#refill(key, nowMs);
    if (bucket.tokens >= 1) return 0;
    return Math.ceil(((1 - bucket.tokens) / this.#policy.refillPerSecond) * 1000);
  }

  /** Spends a token of `key` (after {@link waitMs} returned 0): the window of a refusal ends here. */
  spend(key: string): void {
    const bucket = this.#buckets.get(key);
    if (!bucket) return;
    bucket.tokens -= 1;
    bucket.told = false;
  }

  /** Records a refusal of `key`: true for the first one since the bucket last had a token. */
  tell(key: string): boolean {
    const bucket = this.#buckets.get(key);
    if (!bucket || bucket.told) return false;
    bucket.told = true;
    return true;
  }

  #refill(key: string, nowMs: number): Bucket {
    const { capacity, refillPerSecond } = this.#policy;
    let bucket = this.#buckets.get(key);
    if (!bucket) {
      if (this.#buckets.size >= MAX_BUCKETS) this.#prune(nowMs);
      bucket = { tokens: capacity, updatedMs: nowMs, told: false };
      this.#buckets.set(key, bucket);
      return bucket;
    }
    // A clock set backwards must not drain the bucket: no time passed then.
    const elapsed = Math.max(0, nowMs - bucket.updatedMs);
    bucket.tokens = Math.min(capacity, bucket.tokens + (elapsed / 1000) * refillPerSecond);
    bucket.updatedMs = nowMs;
    return bucket;
  }

  /** Forgets buckets that are full again (a full bucket has nothing to remember). */
  #prune(nowMs: number): void {
    const { capacity, refillPerSecond } = this.#policy;
    for (const [key, bucket] of this.#buckets) {
      if (bucket.tokens + ((nowMs - bucket.updatedMs) / 1000) * refillPerSecond >= capacity) this.#buckets.delete(key);
    }
  }
}

/**
 * The flood rule over a person's bucket and their chat's: a message is admitted only when both
 * have a token (and then takes one from each), so a refusal by the chat does not cost the person.
 * A refusal is announced once per window of the bucket that refused: once per person for their own
 * bucket, once per chat for the chat's, so a raid by many accounts on one group gets one notice.
 *
 * @example
 * const gate = new FloodGate(DEFAULT_USER_LIMIT, DEFAULT_CHAT_LIMIT);
 * gate.admit('telegram:42', 'telegram:-100', Date.now()); // { status: 'ok' }
 */
export class FloodGate {
  readonly #users: RateLimiter;
  readonly #chats: RateLimiter;

  constructor(user: RateLimitPolicy, chat: RateLimitPolicy) {
    this.#users = new RateLimiter(user);
    this.#chats = new RateLimiter(chat);
  }

  admit(userKey: string, chatKey: string, nowMs: number): Verdict {
    const userWait = this.#users.waitMs(userKey, nowMs);
    const chatWait = this.#chats.waitMs(chatKey, nowMs);
    if (userWait === 0 && chatWait === 0) {
      this.#users.spend(userKey);
      this.#chats.spend(chatKey);
      return { status: 'ok' };
    }
    const first = userWait > 0 ? this.#users.tell(userKey) : this.#chats.tell(chatKey);
    return { status: first ? 'notify' : 'silent', waitMs: Math.max(userWait, chatWait) };
  }
}
