import type { Api } from 'grammy';
import type { Chat, User } from 'grammy/types';
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import type { Actor, ChatRef } from '../../bot/command.ts';
import { describe, type Scrub } from './bot.ts';

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

  chat(chat: Chat): ChatRef {
    return chat.type === 'private'
      ? { platform: 'telegram', id: String(chat.id), kind: 'private' }
      : {
          platform: 'telegram',
          id: String(chat.id),
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
