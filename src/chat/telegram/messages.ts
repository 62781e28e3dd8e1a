import type { Context } from 'grammy';
import type { BotCommand } from 'grammy/types';
import { isGroup } from '../../bot/command.ts';
import type { CommandEngine } from '../../bot/engine.ts';
import { parseStartPayload } from './deep-link.ts';
import type { TelegramOutbox } from './outbox.ts';
import { type ChatPeople, senderOf } from './people.ts';
import { threadOf } from './topics.ts';

const PRIVATE_HINT = 'I answer commands. Send /help to see them.';
/** Answer to a deep link for a group the bot is not in (or that is gone). */
export const DEEP_LINK_GONE = 'That link is for a group I am not in any more. Send /verify in the group again.';

/** What answering a message needs. */
export interface MessageHandling {
  engine: CommandEngine;
  outbox: TelegramOutbox;
  people: ChatPeople;
  /** The bot's own username (known once the bot has introduced itself). */
  username: () => string;
}

/**
 * Answers a text message: a command for this bot runs in the engine (after the rate limits), plain
 * text in a private chat gets a hint, talk in a group and commands for other bots get nothing. A
 * /start with a deep link's payload runs the command it carries for the group it names.
 */
export async function answerMessage(
  ctx: Context,
  { engine, outbox, people, username }: MessageHandling,
): Promise<void> {
  // A channel's posts come as channel_post updates; a command there is answered as a post.
  const message = ctx.message ?? ctx.channelPost;
  if (!message?.text) return;
  const sender = senderOf(message);
  if (!sender) return;
  const text = message.text;
  const isPrivate = message.chat.type === 'private';
  const addressed = /^\s*\/[A-Za-z][\w-]*@(\w+)/.exec(text)?.[1];
  if (addressed && addressed.toLowerCase() !== username().toLowerCase()) return;
  const isCommand = text.trimStart().startsWith('/');
  // Talk in a group is not for the bot: it is neither answered nor counted.
  if (!isCommand && !isPrivate) return;
  // In a forum topic, the topic is the chat: answers, rules and digests go there.
  const chat = people.chat(message.chat, threadOf(message));
  const replyTo = isPrivate ? undefined : message.message_id;
  const admission = engine.admit(chat, { id: sender.kind === 'person' ? String(sender.user.id) : sender.id });
  if (admission.status === 'notify') await outbox.send(chat.id, admission.reply, replyTo);
  if (admission.status !== 'ok') return;
  if (!isCommand) {
    await outbox.send(chat.id, { lines: [PRIVATE_HINT] });
    return;
  }
  // Telegram opens every private chat with /start; a deep link from a group adds its payload.
  const start = /^\s*\/start(?:@\w+)?(?:\s+(\S+))?\s*$/i.exec(text);
  let line = start && !engine.find('start') ? '/help' : text;
  let invokedIn = chat;
  const payload = isPrivate && start?.[1] ? parseStartPayload(start[1]) : undefined;
  if (payload) {
    const title = await people.groupTitle(payload.communityId);
    if (title === undefined) {
      await outbox.send(chat.id, { tone: 'warning', lines: [DEEP_LINK_GONE] });
      return;
    }
    line = payload.commandLine;
    invokedIn = { ...chat, community: { id: payload.communityId, name: title } };
  }
  void ctx.replyWithChatAction('typing').catch(() => undefined);
  const actor = await people.actorOf(message.chat, sender);
  const reply = await engine.runLine(line, invokedIn, actor);
  if (!reply) {
    if (isPrivate) await outbox.send(chat.id, { lines: [PRIVATE_HINT] });
    return;
  }
  await outbox.send(chat.id, reply, replyTo);
}

/** The command menu: every command once, a group's subcommands named in its description. */
export function menuOf(engine: Pick<CommandEngine, 'commands'>): BotCommand[] {
  const menu: BotCommand[] = [];
  for (const command of engine.commands) {
    // Telegram command names are lower-case letters, digits and underscores.
    if (!/^[a-z0-9_]{1,32}$/.test(command.name)) continue;
    const description = isGroup(command)
      ? `${command.description} (${command.subcommands.map((s) => s.name).join(', ')})`
      : command.description;
    menu.push({ command: command.name, description: description.slice(0, 256) });
  }
  return menu.slice(0, 100);
}
