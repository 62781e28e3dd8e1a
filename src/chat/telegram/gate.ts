/**
 * Gated Telegram groups: the Bot API calls behind holder "roles" in Telegram, where the role is
 * membership of the group itself. A join request is approved or declined
 * (`approveChatJoinRequest` / `declineChatJoinRequest`), a member who stopped holding is removed
 * without a lasting ban (`banChatMember` then `unbanChatMember` with `only_if_banned`), the group's
 * administrators and creator are never removed, and people are told in private (while a join
 * request is pending, through its `user_chat_id`). The bot needs to be an administrator with
 * "Invite users via link" and "Ban users".
 */
import { type Api, GrammyError } from 'grammy';
import { LRUCache } from 'lru-cache';
import type { Reply, Rich } from '../../core/reply.ts';
import { link } from '../../core/reply.ts';
import {
  type GrantKey,
  idOf,
  type JoinRequest,
  MembershipError,
  type MembershipNotice,
  type MembershipSink,
} from '../../core/roles.ts';
import { deepLink, startPayload } from './deep-link.ts';

/** What the gate needs of the adapter: the Bot API, a way to send a rendered reply, the bot's username. */
export interface GateDeps {
  api: Api;
  send: (chatId: string, reply: Reply) => Promise<unknown>;
  botUsername: () => string | undefined;
}

const TITLE_CACHE_MS = 5 * 60_000;
/** A removal's ban lasts a minute at most, should the unban after it fail. */
const BAN_SECONDS = 60;

/** Telegram's answer, in the words the role sync understands. */
function failureOf(error: unknown, what: string): MembershipError {
  if (error instanceof GrammyError) {
    const text = error.description.toLowerCase();
    const reason =
      text.includes('not enough rights') ||
      text.includes('chat_admin_required') ||
      text.includes('not an administrator')
        ? 'missing_permission'
        : text.includes('hide_requester_missing') || text.includes('user not found') || text.includes('participant')
          ? 'not_member'
          : text.includes('chat not found') || error.error_code === 403
            ? 'missing_permission'
            : undefined;
    if (reason) return new MembershipError(reason, `${what}: ${error.description}`, { permanent: true, cause: error });
    return new MembershipError('unavailable', `${what}: ${error.description}`, { permanent: false, cause: error });
  }
  return new MembershipError('unavailable', `${what}: Telegram could not be reached`, {
    permanent: false,
    cause: error,
  });
}

/** A gated group's membership on Telegram (see the module comment). */
export class TelegramGate implements MembershipSink {
  readonly platform = 'telegram' as const;
  readonly #deps: GateDeps;
  readonly #titles = new LRUCache<string, string>({ max: 5_000, ttl: TITLE_CACHE_MS });

  constructor(deps: GateDeps) {
    this.#deps = deps;
  }

  /** Approves the person's pending join request. */
  async grant(key: GrantKey): Promise<void> {
    try {
      await this.#deps.api.approveChatJoinRequest(idOf(key.community), Number(idOf(key.person)));
    } catch (error) {
      // Already in (approved by an administrator meanwhile): what the grant wanted.
      if (error instanceof GrammyError && /user_already_participant/i.test(error.description)) return;
      throw failureOf(error, 'approveChatJoinRequest');
    }
  }

  async revoke(key: GrantKey): Promise<'done' | 'exempt'> {
    const chat = idOf(key.community);
    const user = Number(idOf(key.person));
    if (await this.isExempt(key.community, key.person)) return 'exempt';
    try {
      await this.#deps.api.banChatMember(chat, user, {
        until_date: Math.floor(Date.now() / 1000) + BAN_SECONDS,
        revoke_messages: false,
      });
    } catch (error) {
      if (error instanceof GrammyError && /administrator|creator/i.test(error.description)) return 'exempt';
      throw failureOf(error, 'banChatMember');
    }
    try {
      await this.#deps.api.unbanChatMember(chat, user, { only_if_banned: true });
    } catch (error) {
      throw failureOf(error, 'unbanChatMember');
    }
    return 'done';
  }

  async decline(request: JoinRequest): Promise<void> {
    try {
      await this.#deps.api.declineChatJoinRequest(idOf(request.community), Number(idOf(request.person)));
    } catch (error) {
      throw failureOf(error, 'declineChatJoinRequest');
    }
  }

  async isExempt(community: string, person: string): Promise<boolean> {
    try {
      const member = await this.#deps.api.getChatMember(idOf(community), Number(idOf(person)));
      return member.status === 'creator' || member.status === 'administrator';
    } catch (error) {
      throw failureOf(error, 'getChatMember');
    }
  }

  async tell(person: string, notice: MembershipNotice, chatId?: string): Promise<boolean> {
    try {
      await this.#deps.send(chatId ?? idOf(person), await this.#noticeReply(notice));
      return true;
    } catch {
      return false;
    }
  }

  async inviteLink(community: string): Promise<string> {
    try {
      const invite = await this.#deps.api.createChatInviteLink(idOf(community), {
        creates_join_request: true,
        name: 'Holders (Floorwatch)',
      });
      return invite.invite_link;
    } catch (error) {
      throw failureOf(error, 'createChatInviteLink');
    }
  }

  async #title(community: string): Promise<string> {
    const known = this.#titles.get(community);
    if (known !== undefined) return known;
    const chat = await this.#deps.api.getChat(idOf(community)).catch(() => undefined);
    const title = chat && 'title' in chat && typeof chat.title === 'string' ? chat.title : 'the group';
    this.#titles.set(community, title);
    return title;
  }

  async #noticeReply(notice: MembershipNotice): Promise<Reply> {
    const group = await this.#title(notice.community);
    const username = this.#deps.botUsername();
    const payload = startPayload('verify', idOf(notice.community));
    const verify: Rich =
      username && payload
        ? ['Verify a wallet that holds it: ', link('verify for this group', deepLink(username, payload))]
        : 'Verify a wallet that holds it: send /verify in the group.';
    const needs = `It asks for ${notice.requirements.join(', or ')}.`;
    switch (notice.kind) {
      case 'declined':
        return {
          tone: 'warning',
          title: `Your request to join ${group}`,
          lines: [`${group} is for holders, and none of your verified wallets holds enough. ${needs}`, verify],
        };
      case 'lapsed':
        return {
          tone: 'warning',
          title: `You may lose your place in ${group}`,
          lines: [
            `Your verified wallets no longer hold what ${group} asks for. ${needs}`,
            `Unless they hold it again by ${notice.removeAt?.replace('T', ' ').slice(0, 16) ?? 'the end of the grace period'} UTC, you will be removed (you can ask to join again later).`,
            verify,
          ],
        };
      case 'removed':
        return {
          tone: 'warning',
          title: `You were removed from ${group}`,
          lines: [
            `Your verified wallets no longer hold what ${group} asks for. ${needs}`,
            'Once they do, open the invite link again to ask to join.',
          ],
        };
      case 'restored':
        return {
          tone: 'success',
          title: `You keep your place in ${group}`,
          lines: ['Your verified wallets hold what the group asks for again.'],
        };
    }
  }
}
