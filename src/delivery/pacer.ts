/**
 * A platform's global pace, shared by every chat's lane: at most `perSecond` requests start in any
 * window of a second plus a margin. Telegram allows a bot about 30 messages a second across all
 * its chats and answers more with 429; without one pace for all lanes, 2,000 chats of one sale
 * would each send at once and most would be refused and retried. A sliding window, not a bucket
 * that starts full and refills: a full bucket lets twice the limit through in the first second.
 * The margin (default 50 ms) keeps requests that arrive a little late or early inside the
 * platform's own window.
 */
export class RatePacer {
  readonly perSecond: number;
  readonly #windowMs: number;
  /** When the requests of the last window started, oldest first. */
  readonly #starts: number[] = [];
  #queue: Promise<void> = Promise.resolve();

  constructor(perSecond: number, options: { marginMs?: number } = {}) {
    if (!Number.isFinite(perSecond) || perSecond < 1) throw new RangeError(`a pace of ${perSecond} a second`);
    this.perSecond = Math.floor(perSecond);
    this.#windowMs = 1_000 + (options.marginMs ?? 50);
  }

  /** Resolves when a request may start; requests start in the order they asked. */
  take(): Promise<void> {
    const turn = this.#queue.then(async () => {
      for (;;) {
        const now = Date.now();
        while (this.#starts.length > 0 && (this.#starts[0] as number) <= now - this.#windowMs) this.#starts.shift();
        if (this.#starts.length < this.perSecond) {
          this.#starts.push(now);
          return;
        }
        const wait = (this.#starts[0] as number) + this.#windowMs - now + 1;
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    });
    this.#queue = turn;
    return turn;
  }
}
