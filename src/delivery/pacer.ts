/**
 * A platform's global pace, shared by every chat's lane: at most `perSecond` requests start in any
 * window of a second plus a margin, spaced evenly (one every window / perSecond). Telegram allows a
 * bot about 30 messages a second across all its chats and answers more with 429; without one pace
 * for all lanes, 2,000 chats of one sale would each send at once and most would be refused and
 * retried. Not a bucket that starts full and refills (it lets twice the limit through in the first
 * second), and not bursts of the whole limit: requests of a burst reach the platform spread out by
 * the network and its load, and the next burst then finds the last one still in its window. The
 * margin (default 25 ms) keeps requests that arrive a little late or early inside that window.
 */
export class RatePacer {
  readonly perSecond: number;
  readonly #windowMs: number;
  readonly #spacingMs: number;
  /** When the next request may start, by the even spacing. */
  #nextSlot = 0;
  /** When the requests of the last window started, oldest first. */
  readonly #starts: number[] = [];
  #queue: Promise<void> = Promise.resolve();

  constructor(perSecond: number, options: { marginMs?: number } = {}) {
    if (!Number.isFinite(perSecond) || perSecond < 1) throw new RangeError(`a pace of ${perSecond} a second`);
    this.perSecond = Math.floor(perSecond);
    this.#windowMs = 1_000 + (options.marginMs ?? 25);
    this.#spacingMs = this.#windowMs / this.perSecond;
  }

  /** Resolves when a request may start; requests start in the order they asked. */
  take(): Promise<void> {
    const turn = this.#queue.then(async () => {
      for (;;) {
        const now = Date.now();
        while (this.#starts.length > 0 && (this.#starts[0] as number) <= now - this.#windowMs) this.#starts.shift();
        const spaced = now >= this.#nextSlot;
        if (spaced && this.#starts.length < this.perSecond) {
          this.#starts.push(now);
          // From the slot, not from now: a timer that fired late does not slow every later request
          // (the window above still caps them); after an idle spell, at most one slot is caught up.
          this.#nextSlot = Math.max(this.#nextSlot, now - this.#spacingMs) + this.#spacingMs;
          return;
        }
        const wait = spaced ? (this.#starts[0] as number) + this.#windowMs - now + 1 : this.#nextSlot - now;
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    });
    this.#queue = turn;
    return turn;
  }
}
