/**
 * Forum topics as the bot keys them. A topic of a forum supergroup is a chat of its own for the bot
 * (its own rules, digests and defaults, as a Discord channel is in a server), so its id carries the
 * thread: `<group id>/<message_thread_id>`. Everything above the adapter stores and passes that id
 * as any chat id (the state file and PostgreSQL keep it as text); only the adapter splits it again
 * to send with `message_thread_id`. The General topic is the group's plain id (no thread id reaches it).
 */

/** The bot's id of a chat, or of a topic in it. */
export function topicChatId(chatId: number | string, threadId?: number): string {
  return threadId === undefined ? String(chatId) : `${chatId}/${threadId}`;
}

/** The Bot API's chat id and thread of a chat id as the bot keys it (see {@link topicChatId}). */
export function splitChatId(chatId: string): { chatId: string; threadId?: number } {
  const slash = chatId.indexOf('/');
  if (slash < 0) return { chatId };
  const threadId = Number(chatId.slice(slash + 1));
  const group = chatId.slice(0, slash);
  return Number.isSafeInteger(threadId) && threadId > 0 ? { chatId: group, threadId } : { chatId: group };
}

/** The topic a message was typed in, when it was typed in one (not General, not a reply thread). */
export function threadOf(message: { is_topic_message?: boolean; message_thread_id?: number }): number | undefined {
  return message.is_topic_message === true ? message.message_thread_id : undefined;
}
