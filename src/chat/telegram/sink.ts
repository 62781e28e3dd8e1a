import { GrammyError, HttpError } from 'grammy';
import { LRUCache } from 'lru-cache';
import type { Reply } from '../../core/reply.ts';
import type { AlertSink } from '../../delivery/sink.ts';
import { DeliveryError } from '../../delivery/sink.ts';
import type { SentKind, TelegramOutbox } from './outbox.ts';
import { splitChatId } from './topics.ts';

/** Telegram's pace: about one message a second per chat, 20 a minute per group. */
export const TELEGRAM_PACE = {
  privateIntervalMs: 1_000,
  groupIntervalMs: 3_000,
  /** Messages per second across all chats. */
  globalPerSecond: 30,
} as const;

/**
 * Answers that mean the bot cannot post to the chat (or the forum topic) any more. A deleted topic
 * answers "message thread not found": its rules pause, the group's other topics go on.
 */
const UNREACHABLE =
  /message thread not found|TOPIC_DELETED|bot was blocked|bot was kicked|chat not found|user is deactivated|not a member|have no rights|not enough rights|CHAT_WRITE_FORBIDDEN|group chat was upgraded/i;

/** Sends and edits that cannot be repeated usefully: the message is gone or cannot be edited. */
const EDIT_GONE = /message to edit not found|message can't be edited|MESSAGE_ID_INVALID/i;

/** A Bot API failure as the dispatcher understands it. */
export function toDeliveryError(error: unknown): DeliveryError {
  if (error instanceof GrammyError) {
    const message = `Telegram ${error.method}: ${error.error_code} ${error.description}`;
    if (error.error_code === 429) {
      return new DeliveryError(message, {
        permanent: false,
        retryAfterMs: (error.parameters.retry_after ?? 1) * 1_000,
        cause: error,
      });
    }
    const permanent =
      error.error_code === 403 ||
      error.parameters.migrate_to_chat_id !== undefined ||
      (error.error_code === 400 && UNREACHABLE.test(error.description));
    return new DeliveryError(message, { permanent, cause: error });
  }
  if (error instanceof HttpError)
    return new DeliveryError(`Telegram: ${error.message}`, { permanent: false, cause: error });
  return new DeliveryError(error instanceof Error ? error.message : String(error), { permanent: false, cause: error });
}

/**
 * Alerts to Telegram. One alert per message (rich messages cannot be merged), one message a second
 * per chat from the dispatcher, and three seconds between messages to one group, kept here because
 * the port has one interval for all chats. The global ~30 messages/s limit is the API throttle's
 * (see the adapter). Telegram has no idempotency key: a message whose answer was lost may be sent
 * twice on retry, which the Bot API cannot prevent.
 */
export class TelegramSink implements AlertSink {
  readonly platform = 'telegram' as const;
  readonly maxBatch = 1;
  readonly minIntervalMs = TELEGRAM_PACE.privateIntervalMs;
  readonly #outbox: TelegramOutbox;
  readonly #groupIntervalMs: number;
  readonly #kinds = new LRUCache<string, SentKind>({ max: 20_000 });
  readonly #lastGroupSend = new LRUCache<string, number>({ max: 20_000 });

  constructor(outbox: TelegramOutbox, options: { groupIntervalMs?: number } = {}) {
    this.#outbox = outbox;
    this.#groupIntervalMs = options.groupIntervalMs ?? TELEGRAM_PACE.groupIntervalMs;
  }

  async send(chatId: string, replies: readonly Reply[], _idempotencyKey: string): Promise<string> {
    let first: string | undefined;
    for (const reply of replies) {
      // The group's pace holds across its topics: Telegram counts messages per group.
      const group = splitChatId(chatId).chatId;
      if (group.startsWith('-')) {
        const wait = (this.#lastGroupSend.get(group) ?? 0) + this.#groupIntervalMs - Date.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        this.#lastGroupSend.set(group, Date.now());
      }
      try {
        const sent = await this.#outbox.send(chatId, reply);
        this.#kinds.set(`${chatId}:${sent.messageId}`, sent.kind);
        first ??= String(sent.messageId);
      } catch (error) {
        throw toDeliveryError(error);
      }
    }
    if (first === undefined) throw new DeliveryError('nothing to send', { permanent: true });
    return first;
  }

  async edit(chatId: string, messageId: string, replies: readonly Reply[]): Promise<void> {
    const reply = replies[0];
    if (!reply) return;
    const id = Number(messageId);
    const known = this.#kinds.get(`${chatId}:${messageId}`);
    try {
      if (known) await this.#outbox.edit(chatId, id, known, reply);
      else {
        // Sent before a restart: try a text message first, then a photo's caption.
        try {
          await this.#outbox.edit(chatId, id, 'text', reply);
          this.#kinds.set(`${chatId}:${messageId}`, 'text');
        } catch (error) {
          if (!(error instanceof GrammyError && /no text in the message/i.test(error.description))) throw error;
          await this.#outbox.edit(chatId, id, 'photo', reply);
          this.#kinds.set(`${chatId}:${messageId}`, 'photo');
        }
      }
    } catch (error) {
      // A deleted message cannot be corrected; that is not a reason to stop alerting the chat.
      if (error instanceof GrammyError && EDIT_GONE.test(error.description)) return;
      throw toDeliveryError(error);
    }
  }
}
