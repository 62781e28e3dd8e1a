import type { Api } from 'grammy';
import type { Chat, Message, User } from 'grammy/types';
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import type { Actor, ChatRef } from '../../bot/command.ts';
import { describe, type Scrub } from './bot.ts';
import { topicChatId } from './topics.ts';

/**
 * Who sent a message, as far as the bot can tell: a person (whether they manage the chat is asked
 * of Telegram), or an administrator who speaks as the chat itself: an anonymous admin of a group
 * (`sender_chat` is the group) or a channel's post (only its admins post; `from` is absent).
 */
export type Sender = { kind: 'person'; user: User } | { kind: 'chat-admin'; id: string; name: string };

/**
 * The sender of a message; undefined for what the bot does not answer: other bots, and posts made
 * as another chat (a linked channel's automatic forward, a member posting as their own channel),
 * which say nothing about who manages this group.
 */
export function senderOf(message: Message): Sender | undefined {
  const chat = message.chat;
  const admin = () => ({
    kind: 'chat-admin' as const,
    id: String(chat.id),
    // The admin's custom title or signature when shown; untrusted text like any name.
    name: message.author_signature ?? ('title' in chat && chat.title ? chat.title : 'an admin'),
  });
  if (chat.type === 'channel') return admin();
  if (message.sender_chat) return message.sender_chat.id === chat.id ? admin() : undefined;
  if (!message.from || message.from.is_bot) return undefined;
  return { kind: 'person', user: message.from };
}

/** How long whether a member is a chat admin, and a group's title, are remembered. */
const ADMIN_CACHE_MS = 5 * 60_000;

/**
 * Where a Telegram update comes from and who sent it, as the engine names them: the chat (a group
 * being its own community), the person with whether they manage it (a group's creator or
 * administrator, asked once in a while), and the title of a group a deep link names.
 */
export class ChatPeople {
  readonly #api: Api;
  readonly #logger: Logger;
  readonly #scrub: Scrub;
  readonly #admins = new LRUCache<string, boolean>({ max: 5_000, ttl: ADMIN_CACHE_MS });
  readonly #groupTitles = new LRUCache<string, string>({ max: 5_000, ttl: ADMIN_CACHE_MS });

  constructor(api: Api, logger: Logger, scrub: Scrub) {
    this.#api = api;
    this.#logger = logger;
    this.#scrub = scrub;
  }

  /**
   * The chat of an update; in a forum topic (`threadId`), the topic, whose community is still the
   * group. A channel is a community of its own, as a group is.
   */
  chat(chat: Chat, threadId?: number): ChatRef {
    return chat.type === 'private'
      ? { platform: 'telegram', id: String(chat.id), kind: 'private' }
      : {
          platform: 'telegram',
          id: topicChatId(chat.id, threadId),
          kind: 'group',
          community: { id: String(chat.id), name: chat.title ?? 'this group' },
        };
  }

  /**
   * The title of the group a deep link was made in (it names the community a private chat was
   * opened for); undefined when the bot cannot see that group (left, removed, or not a group).
   */
  async groupTitle(groupId: string): Promise<string | undefined> {
    const cached = this.#groupTitles.get(groupId);
    if (cached !== undefined) return cached;
    try {
      const chat = await this.#api.getChat(groupId);
      if (chat.type === 'private') return undefined;
      const title = chat.title ?? 'this group';
      this.#groupTitles.set(groupId, title);
      return title;
    } catch (error) {
      this.#logger.debug({ err: describe(error, this.#scrub) }, 'deep link to a group the bot cannot see');
      return undefined;
    }
  }

  /** The actor of a message's sender: an admin speaking as the chat may manage it without asking Telegram. */
  async actorOf(chat: Chat, sender: Sender): Promise<Actor> {
    if (sender.kind === 'chat-admin') return { id: sender.id, name: sender.name, canManage: true };
    return this.actor(chat, sender.user);
  }

  async actor(chat: Chat, user: User): Promise<Actor> {
    return {
      id: String(user.id),
      name: user.username ?? user.first_name,
      canManage: await this.#canManage(chat, user),
    };
  }

  async #canManage(chat: Chat, user: User): Promise<boolean> {
    if (chat.type === 'private') return true;
    const key = `${chat.id}:${user.id}`;
    const cached = this.#admins.get(key);
    if (cached !== undefined) return cached;
    try {
      const member = await this.#api.getChatMember(chat.id, user.id);
      const manage = member.status === 'creator' || member.status === 'administrator';
      this.#admins.set(key, manage);
      return manage;
    } catch (error) {
      this.#logger.warn({ chatId: chat.id, err: describe(error, this.#scrub) }, 'could not check chat admin');
      return false;
    }
  }
}
