import type { Reply } from '../core/reply.ts';
import type { Destination } from '../core/types.ts';

/**
 * What a chat adapter offers the alert pipeline. It builds platform messages from neutral Replies
 * and reports failures as {@link DeliveryError}s; rate limits and retries are the dispatcher's.
 */
export interface AlertSink {
  readonly platform: Destination['platform'];
  /** Most alerts one message may carry (Discord: 10 embeds). Bursts are merged up to this. */
  readonly maxBatch: number;
  /** Least time between two messages to one chat. */
  readonly minIntervalMs: number;
  /**
   * Sends one message; resolves with its message id. `idempotencyKey` is stable across restarts
   * for the same deliveries (Discord uses it as the message nonce).
   */
  send(chatId: string, replies: readonly Reply[], idempotencyKey: string): Promise<string>;
  /**
   * Rewrites a sent message whole (`replies`: every part, as it is now). `changed`: the indexes of the
   * parts whose state changed, for a chat that cannot rewrite and shows only those (the terminal).
   */
  edit(chatId: string, messageId: string, replies: readonly Reply[], changed?: readonly number[]): Promise<void>;
}

/** A Reply as journal payload: JSON, with attachment bytes as base64. */
export function encodePayload(reply: Reply): unknown {
  if (!reply.attachments?.length) return reply;
  return {
    ...reply,
    attachments: reply.attachments.map((a) => ({
      ...a,
      data: Buffer.from(a.data).toString('base64'),
      encoding: 'base64',
    })),
  };
}

/** The Reply of a journal payload written by {@link encodePayload}. */
export function decodePayload(payload: unknown): Reply {
  const reply = payload as Reply & { attachments?: Array<{ name: string; contentType: string; data: unknown }> };
  if (!reply.attachments?.length) return reply;
  return {
    ...reply,
    attachments: reply.attachments.map((a) => ({
      name: a.name,
      contentType: a.contentType,
      data: typeof a.data === 'string' ? new Uint8Array(Buffer.from(a.data, 'base64')) : (a.data as Uint8Array),
    })),
  };
}

/** A failed send or edit, as the adapter understood it. */
export class DeliveryError extends Error {
  override name = 'DeliveryError';
  /** The chat is gone or the bot may not post there: retrying will not help. */
  readonly permanent: boolean;
  /** The platform asked to wait this long. */
  readonly retryAfterMs: number | undefined;
  constructor(message: string, options: { permanent: boolean; retryAfterMs?: number; cause?: unknown }) {
    super(message, { cause: options.cause });
    this.permanent = options.permanent;
    this.retryAfterMs = options.retryAfterMs;
  }
}
