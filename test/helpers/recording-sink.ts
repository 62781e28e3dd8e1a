import type { Reply } from '../../src/core/reply.ts';
import type { Destination } from '../../src/core/types.ts';
import type { AlertSink, DeliveryError } from '../../src/delivery/sink.ts';

export interface SentMessage {
  chatId: string;
  messageId: string;
  key: string;
  replies: Reply[];
}

/**
 * The far side of a chat platform for alert tests: it keeps every message "posted" and every edit,
 * can be told to fail, and dedupes by idempotency key as Discord does with an enforced nonce.
 */
export class RecordingSink implements AlertSink {
  readonly platform: Destination['platform'];
  readonly maxBatch: number;
  readonly minIntervalMs = 0;
  readonly sent: SentMessage[] = [];
  readonly edits: Array<{ chatId: string; messageId: string; replies: Reply[] }> = [];
  /** Failures to answer with, one per call, before succeeding. */
  failures: DeliveryError[] = [];
  #next = 1;
  #waiters: Array<() => void> = [];

  constructor(platform: Destination['platform'], maxBatch = 1) {
    this.platform = platform;
    this.maxBatch = maxBatch;
  }

  async send(chatId: string, replies: readonly Reply[], key: string): Promise<string> {
    const failure = this.failures.shift();
    if (failure) throw failure;
    const existing = this.sent.find((m) => m.key === key);
    if (existing) return existing.messageId;
    const messageId = String(this.#next++);
    this.sent.push({ chatId, messageId, key, replies: structuredClone([...replies]) });
    this.#wake();
    return messageId;
  }

  async edit(chatId: string, messageId: string, replies: readonly Reply[]): Promise<void> {
    const failure = this.failures.shift();
    if (failure) throw failure;
    this.edits.push({ chatId, messageId, replies: structuredClone([...replies]) });
    this.#wake();
  }

  /** Every alert posted to a chat, in order. */
  alerts(chatId: string): Reply[] {
    return this.sent.filter((m) => m.chatId === chatId).flatMap((m) => m.replies);
  }

  /** Waits until `check` holds (checked after each message), or fails after `timeoutMs`. */
  async until(check: () => boolean, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error('timed out waiting for alerts');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 200));
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }
}
