import type { Reply } from '../../core/reply.ts';
import type { AlertSink } from '../../delivery/sink.ts';
import type { ConsoleChat } from './console-chat.ts';

/**
 * Alerts and digests for the terminal chat: printed as they come, edits printed as a new note. A
 * terminal cannot change what it printed: an edit of a merged message prints only the parts that
 * changed.
 */
export class ConsoleSink implements AlertSink {
  readonly platform = 'console' as const;
  readonly maxBatch = 10;
  readonly minIntervalMs = 0;
  readonly #chat: ConsoleChat;
  #next = 1;

  constructor(chat: ConsoleChat) {
    this.#chat = chat;
  }

  async send(_chatId: string, replies: readonly Reply[]): Promise<string> {
    const id = `m${this.#next++}`;
    for (const reply of replies) await this.#chat.post(reply);
    return id;
  }

  async edit(
    _chatId: string,
    messageId: string,
    replies: readonly Reply[],
    changed?: readonly number[],
  ): Promise<void> {
    for (const [index, reply] of replies.entries()) {
      if (changed && !changed.includes(index)) continue;
      await this.#chat.post({ ...reply, footer: `${reply.footer ?? ''} · update of alert ${messageId}` });
    }
  }
}
