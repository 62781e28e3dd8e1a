import { createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { MessageEntity, UserFromGetMe } from 'grammy/types';
import { SaxesParser } from 'saxes';

/** One request the stand-in received, with its parameters as the Bot API would read them. */
export interface TelegramCall {
  method: string;
  params: Record<string, unknown>;
  /** HTTP status of the answer. */
  status: number;
  at: number;
}

/** A file sent as multipart (`attach://` and direct fields are resolved to it). */
export interface UploadedFile {
  filename: string;
  data: Buffer;
}

export interface StoredMessage {
  message_id: number;
  chat: { id: number; type: string };
  date: number;
  text?: string;
  caption?: string;
  /**
   * With parse_mode HTML, the text (or caption) as Telegram shows it, the HTML read, and its
   * entities (code spans, bold, links...) with offsets into that text. `text` and `caption` keep the
   * HTML as sent, which tests match messages by.
   */
  shown?: { text: string; entities: MessageEntity[] };
  photo?: Array<{ file_id: string; file_unique_id: string; width: number; height: number }>;
  document?: { file_id: string; file_unique_id: string; file_name: string };
  reply_markup?: unknown;
  from?: { id: number; is_bot: boolean; first_name: string; username?: string };
  /** Set on a message in a forum topic (other than General). */
  message_thread_id?: number;
  is_topic_message?: true;
  /** A channel's own posts, and an anonymous admin's messages: the chat that speaks. */
  sender_chat?: { id: number; type: string; title: string };
}

/** The user Telegram puts in `from` of an anonymous group admin's messages. */
export const GROUP_ANONYMOUS_BOT = { id: 1087968824, is_bot: true, first_name: 'Group', username: 'GroupAnonymousBot' };
/** The user Telegram puts in `from` of messages posted as a channel in a group. */
export const CHANNEL_BOT = { id: 136817688, is_bot: true, first_name: 'Channel', username: 'Channel_Bot' };
/** The Bot API's answer to a send into a forum topic that was deleted (or never was). */
export const THREAD_NOT_FOUND = 'Bad Request: message thread not found';

export interface Failure {
  code: number;
  description: string;
  retryAfter?: number;
  chatId?: string;
}

type Answer = { status: number; body: unknown };

/**
 * The Bot API's flood limits (core.telegram.org/bots/faq, "My bot is hitting limits"): about 30
 * messages a second per bot across chats, about one a second per chat, at most 20 a minute per
 * group. Telegram publishes no algorithm; the stand-in counts each in a sliding window, which is
 * stricter than bursts the real API tolerates, and answers past one with 429 and
 * `parameters.retry_after` (whole seconds), as the real API does.
 */
export const TELEGRAM_FLOOD_LIMITS = {
  perBotPerSecond: 30,
  perChatPerSecond: 1,
  perGroupPerMinute: 20,
} as const;

/** A 429 the stand-in answered under its flood limits. */
export interface FloodRefusal {
  method: string;
  chatId: string;
  scope: 'bot' | 'chat' | 'group';
  retryAfter: number;
  at: number;
}

/** Methods that post or change a message: what the flood limits count. */
const MESSAGE_METHOD = /^(send|edit|copy|forward)/;

/** Header that carries a webhook's secret token. */
export const SECRET_HEADER = 'X-Telegram-Bot-Api-Secret-Token';

/** One POST of an update to the webhook, and the status it got (0: no answer). */
export interface WebhookDelivery {
  updateId: number;
  status: number;
  at: number;
}

/** The Bot API's length limits, counted on the text as shown (after the HTML is read), in UTF-16 units. */
const TEXT_LIMIT = 4096;
const CAPTION_LIMIT = 1024;

/** The tags Telegram's HTML parse mode reads, and the entity each makes. */
const HTML_TAGS: Record<string, MessageEntity['type']> = {
  b: 'bold',
  strong: 'bold',
  i: 'italic',
  em: 'italic',
  u: 'underline',
  ins: 'underline',
  s: 'strikethrough',
  strike: 'strikethrough',
  del: 'strikethrough',
  code: 'code',
  pre: 'pre',
  a: 'text_link',
  'tg-spoiler': 'spoiler',
  blockquote: 'blockquote',
};

/**
 * A text with parse_mode HTML as Telegram reads it: the text shown and its entities, or the API's
 * refusal (an unknown tag, an unclosed or misnested one, a bare `<` or `&`, an entity other than
 * `&lt; &gt; &amp; &quot;` and numeric ones, a text past its limit). Read with an XML parser inside a
 * root element: for the markup the bot writes, Telegram's reader is no less strict.
 */
function readHtml(html: string, limit: number): { text: string; entities: MessageEntity[] } | string {
  const parser = new SaxesParser({ position: false });
  let text = '';
  const entities: MessageEntity[] = [];
  const open: Array<{ entity: MessageEntity; offset: number }> = [];
  let refusal: string | undefined;
  parser.on('error', (error) => {
    refusal ??= `Bad Request: can't parse entities: ${error.message}`;
  });
  parser.on('opentag', (tag) => {
    if (tag.name === 'root') return;
    const type = HTML_TAGS[tag.name];
    if (!type) {
      refusal ??= `Bad Request: can't parse entities: Unsupported start tag "${tag.name}"`;
      return;
    }
    const href = tag.attributes.href;
    const entity = { type, offset: text.length, length: 0, ...(type === 'text_link' ? { url: String(href) } : {}) };
    open.push({ entity: entity as MessageEntity, offset: text.length });
  });
  parser.on('closetag', (tag) => {
    if (tag.name === 'root') return;
    const top = open.pop();
    if (!top) return;
    top.entity.length = text.length - top.offset;
    if (top.entity.length > 0) entities.push(top.entity);
  });
  parser.on('text', (chunk) => {
    text += chunk;
  });
  try {
    parser.write(`<root>${html}</root>`).close();
  } catch (error) {
    refusal ??= `Bad Request: can't parse entities: ${(error as Error).message}`;
  }
  if (refusal) return refusal;
  if (text.trim().length === 0) return 'Bad Request: message text is empty';
  if (text.length > limit)
    return limit === CAPTION_LIMIT ? 'Bad Request: message caption is too long' : 'Bad Request: message is too long';
  return { text, entities: entities.sort((a, b) => a.offset - b.offset) };
}

const SEND_METHODS = new Set(['sendMessage', 'sendPhoto', 'sendDocument', 'editMessageText', 'editMessageCaption']);

/**
 * A local stand-in of the Telegram Bot API for the real grammy client: `/bot<token>/<method>` with
 * JSON, urlencoded or multipart bodies, long-polled getUpdates, messages kept per chat, admins per
 * chat, and programmable failures (429 with retry_after, a chat that blocked the bot). While a
 * webhook is set, updates are POSTed to its URL instead (one at a time, in order, with the secret
 * token header, only the `allowed_updates` types, retried a few times when not answered 2xx).
 */
export class FakeTelegram {
  readonly calls: TelegramCall[] = [];
  readonly messages = new Map<string, StoredMessage>();
  readonly bot = { id: 4242, is_bot: true, first_name: 'Floorwatch', username: 'FloorwatchTestBot' };
  /** What getMe answers, for `new Bot(token, { botInfo })`. */
  botInfo(): UserFromGetMe {
    return {
      ...this.bot,
      is_bot: true,
      can_join_groups: true,
      can_read_all_group_messages: false,
      supports_inline_queries: false,
      can_connect_to_business: false,
      has_main_web_app: false,
      has_topics_enabled: false,
      allows_users_to_create_topics: false,
      can_manage_bots: false,
      supports_join_request_queries: false,
    };
  }
  /** Chat id -> user ids that are administrators (the first is the creator). */
  readonly admins = new Map<string, number[]>();
  /** Group titles getChat answers (a group not listed is "Group", as in injected messages). */
  readonly titles = new Map<string, string>();
  /** Groups the bot is not in: getChat answers 400 "chat not found". */
  readonly leftGroups = new Set<string>();
  /** Chats whose sends answer 403 "bot was blocked by the user". */
  readonly blocked = new Set<string>();
  /** Members of each group by chat id (join requests approved add to it; removals take away). */
  readonly members = new Map<string, Set<number>>();
  /** Pending join requests of each group by chat id. */
  readonly joinRequests = new Map<string, Set<number>>();
  /** Groups where the bot is no administrator with the rights to invite and ban (its calls are refused). */
  readonly withoutRights = new Set<string>();
  /** Invite links made, in order. */
  readonly inviteLinks: Array<{ chatId: string; invite_link: string; creates_join_request: boolean }> = [];
  /** Every ban and unban, in order (`until` of bans in seconds since the epoch). */
  readonly restrictions: Array<{ chatId: string; userId: number; kind: 'ban' | 'unban'; until?: number }> = [];
  /** Forum supergroups: chat id -> their topics by message_thread_id (General is not listed). */
  readonly forums = new Map<string, Map<number, { name: string; deleted: boolean }>>();
  /** Chats that are channels (negative ids that are not supergroups). */
  readonly channels = new Set<string>();
  webhook: { url: string; secret_token?: string } | undefined;
  /** Every POST of an update to the webhook, in order. */
  readonly webhookDeliveries: WebhookDelivery[] = [];
  #allowedUpdates: string[] | undefined;
  #webhookQueue: Array<{ update_id: number } & Record<string, unknown>> = [];
  #delivering: Promise<void> | undefined;
  #closed = false;
  commands: unknown[] = [];
  #failures: Array<Failure & { methods: readonly string[] }> = [];
  /** The flood limits in force (none unless {@link enforceFloodLimits} was called). */
  #flood: { limits: typeof TELEGRAM_FLOOD_LIMITS; bot: number[]; chats: Map<string, number[]> } | undefined;
  /** When each request arrived. */
  readonly #arrivals = new WeakMap<IncomingMessage, number>();
  /** Every 429 answered under the flood limits, in order. */
  readonly floodRefusals: FloodRefusal[] = [];
  #updates: Array<{ update_id: number } & Record<string, unknown>> = [];
  #nextUpdate = 1;
  #nextMessage = 1;
  #pollers = new Set<() => void>();
  #callWaiters = new Set<() => void>();
  #server: Server;
  readonly token: string;
  url = '';

  /** The bot's environment for this stand-in. */
  get env(): Record<string, string> {
    return { TELEGRAM_BOT_TOKEN: this.token, TELEGRAM_API_ROOT: this.url };
  }

  private constructor(token: string) {
    this.token = token;
    this.#server = createServer((req, res) => void this.#handle(req, res));
  }

  static async start(token = '123456:TEST-token-abcdefghijklmnopqrstuvwxyz'): Promise<FakeTelegram> {
    const fake = new FakeTelegram(token);
    await new Promise<void>((resolve) => fake.#server.listen(0, '127.0.0.1', resolve));
    fake.url = `http://127.0.0.1:${(fake.#server.address() as AddressInfo).port}`;
    return fake;
  }

  /**
   * From now on, answers messages past Telegram's flood limits (see {@link TELEGRAM_FLOOD_LIMITS})
   * with 429; each is listed in {@link floodRefusals}. Off by default: most tests are not about pace.
   */
  enforceFloodLimits(limits: typeof TELEGRAM_FLOOD_LIMITS = TELEGRAM_FLOOD_LIMITS): void {
    this.#flood = { limits, bot: [], chats: new Map() };
  }

  /** A 429 for a message past a flood limit, or undefined when it may go (and is counted). */
  #floodCheck(method: string, chatId: string | undefined, now: number): Answer | undefined {
    const flood = this.#flood;
    if (!flood || !chatId || !MESSAGE_METHOD.test(method) || method === 'sendChatAction') return undefined;
    const group = chatId.startsWith('-');
    const windows = [
      { scope: 'bot' as const, times: flood.bot, limit: flood.limits.perBotPerSecond, windowMs: 1_000 },
      group
        ? { scope: 'group' as const, limit: flood.limits.perGroupPerMinute, windowMs: 60_000 }
        : { scope: 'chat' as const, limit: flood.limits.perChatPerSecond, windowMs: 1_000 },
    ];
    let times = flood.chats.get(chatId);
    if (!times) {
      times = [];
      flood.chats.set(chatId, times);
    }
    for (const window of windows) {
      const list = window.scope === 'bot' ? flood.bot : times;
      while (list.length > 0 && (list[0] as number) <= now - window.windowMs) list.shift();
      if (list.length >= window.limit) {
        const retryAfter = Math.max(1, Math.ceil(((list[0] as number) + window.windowMs - now) / 1_000));
        this.floodRefusals.push({ method, chatId, scope: window.scope, retryAfter, at: now });
        return {
          status: 429,
          body: {
            ok: false,
            error_code: 429,
            description: `Too Many Requests: retry after ${retryAfter}`,
            parameters: { retry_after: retryAfter },
          },
        };
      }
    }
    // Kept in order of arrival, which a request whose body took longer to read may precede.
    for (const list of [flood.bot, times]) {
      list.push(now);
      if (list.length > 1 && (list.at(-2) as number) > now) list.sort((a, b) => a - b);
    }
    return undefined;
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#webhookQueue = [];
    await this.#delivering;
    for (const wake of this.#pollers) wake();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  /** The next `count` calls of any of `methods` (to `failure.chatId` when set) answer with this error. */
  fail(methods: string | readonly string[], failure: Failure, count = 1): void {
    const list = typeof methods === 'string' ? [methods] : methods;
    for (let i = 0; i < count; i++) this.#failures.push({ ...failure, methods: list });
  }

  /** Queues a text message update (a group when the chat id is negative). */
  injectText(chatId: number, userId: number, text: string, chatType?: 'private' | 'group' | 'supergroup') {
    return this.#push(this.#textUpdate(chatId, userId, text, chatType));
  }

  #textUpdate(chatId: number, userId: number, text: string, chatType?: 'private' | 'group' | 'supergroup') {
    const type = chatType ?? (chatId < 0 ? 'supergroup' : 'private');
    const message = {
      message_id: this.#nextMessage++,
      date: Math.floor(Date.now() / 1000),
      chat: { id: chatId, type, ...(type === 'private' ? { first_name: 'User' } : { title: 'Group' }) },
      from: { id: userId, is_bot: false, first_name: `User ${userId}` },
      text,
      ...(text.startsWith('/')
        ? { entities: [{ type: 'bot_command', offset: 0, length: text.split(/\s/)[0]?.length ?? 1 }] }
        : {}),
    };
    return { update_id: this.#nextUpdate++, message };
  }

  /**
   * Queues a `chat_join_request`: the person opened an invite link that asks (the request stays
   * pending until the bot approves or declines it).
   */
  injectJoinRequest(chatId: number, userId: number, inviteLink?: string) {
    const pending = this.joinRequests.get(String(chatId)) ?? new Set<number>();
    pending.add(userId);
    this.joinRequests.set(String(chatId), pending);
    const link = this.inviteLinks.find((l) => l.invite_link === inviteLink);
    return this.#push({
      update_id: this.#nextUpdate++,
      chat_join_request: {
        chat: { id: chatId, type: 'supergroup', title: this.titles.get(String(chatId)) ?? 'Group' },
        from: { id: userId, is_bot: false, first_name: `User ${userId}` },
        user_chat_id: userId,
        date: Math.floor(Date.now() / 1000),
        ...(link
          ? {
              invite_link: {
                invite_link: link.invite_link,
                creator: this.bot,
                creates_join_request: true,
                is_primary: false,
                is_revoked: false,
              },
            }
          : {}),
      },
    });
  }

  /** Whether a user is a member of a group now. */
  isMember(chatId: number | string, userId: number): boolean {
    return this.members.get(String(chatId))?.has(userId) === true;
  }

  /**
   * Makes a group a forum (if it is not yet) and opens a topic in it, as createForumTopic does; the
   * topic's message_thread_id is the id of the service message that created it, as in Telegram.
   */
  openTopic(chatId: number, name: string): number {
    const topics = this.forums.get(String(chatId)) ?? new Map<number, { name: string; deleted: boolean }>();
    this.forums.set(String(chatId), topics);
    const threadId = this.#nextMessage++;
    topics.set(threadId, { name, deleted: false });
    return threadId;
  }

  /** Deletes a topic with its messages, as deleteForumTopic does: sends to it answer 400 "message thread not found". */
  deleteTopic(chatId: number, threadId: number): void {
    const topic = this.forums.get(String(chatId))?.get(threadId);
    if (!topic) throw new Error(`no topic ${chatId}/${threadId}`);
    topic.deleted = true;
    for (const [key, message] of this.messages)
      if (message.chat.id === chatId && message.message_thread_id === threadId) this.messages.delete(key);
  }

  /** Queues a text message typed in a forum topic (`is_topic_message`, `message_thread_id`). */
  injectTopicText(chatId: number, threadId: number, userId: number, text: string) {
    const update = this.#textUpdate(chatId, userId, text);
    Object.assign(update.message, { chat: this.#chatOf(chatId), message_thread_id: threadId, is_topic_message: true });
    return this.#push(update);
  }

  /**
   * Queues a message of an anonymous group admin: `from` is GroupAnonymousBot and `sender_chat` the
   * group itself (in a topic when `threadId` is given); `signature` is the admin's custom title.
   */
  injectAnonymousAdmin(chatId: number, text: string, options: { threadId?: number; signature?: string } = {}) {
    const update = this.#textUpdate(chatId, GROUP_ANONYMOUS_BOT.id, text);
    Object.assign(update.message, {
      chat: this.#chatOf(chatId),
      from: GROUP_ANONYMOUS_BOT,
      sender_chat: this.#chatOf(chatId),
      ...(options.signature === undefined ? {} : { author_signature: options.signature }),
      ...(options.threadId === undefined ? {} : { message_thread_id: options.threadId, is_topic_message: true }),
    });
    return this.#push(update);
  }

  /** Queues a message posted in a group as another chat (a member's channel, a linked channel's forward). */
  injectAsChat(chatId: number, senderChatId: number, text: string) {
    const update = this.#textUpdate(chatId, CHANNEL_BOT.id, text);
    Object.assign(update.message, {
      from: CHANNEL_BOT,
      sender_chat: { id: senderChatId, type: 'channel', title: `Channel ${senderChatId}` },
    });
    return this.#push(update);
  }

  /**
   * Queues a channel_post update: a post in a channel (made one if it is not yet), without `from`,
   * `sender_chat` being the channel; `signature` when the channel signs its posts.
   */
  injectChannelPost(channelId: number, text: string, signature?: string) {
    this.channels.add(String(channelId));
    const chat = this.#chatOf(channelId);
    const post = {
      message_id: this.#nextMessage++,
      date: Math.floor(Date.now() / 1000),
      chat,
      sender_chat: chat,
      text,
      ...(signature === undefined ? {} : { author_signature: signature }),
      ...(text.startsWith('/')
        ? { entities: [{ type: 'bot_command', offset: 0, length: text.split(/\s/)[0]?.length ?? 1 }] }
        : {}),
    };
    return this.#push({ update_id: this.#nextUpdate++, channel_post: post });
  }

  /** Drops queued updates of types the bot did not ask for (allowed_updates), as Telegram never sends them. */
  #dropUnallowed(): void {
    const allowed = this.#allowedUpdates;
    if (!allowed?.length) return;
    this.#updates = this.#updates.filter((u) => allowed.includes(Object.keys(u).find((k) => k !== 'update_id') ?? ''));
  }

  /** A chat as updates and sent messages name it: a channel, a (forum) supergroup or a private chat. */
  #chatOf(chatId: number): { id: number; type: string; title: string; is_forum?: true } {
    const key = String(chatId);
    const title = this.titles.get(key) ?? (this.channels.has(key) ? 'Channel' : 'Group');
    if (this.channels.has(key)) return { id: chatId, type: 'channel', title };
    if (chatId > 0) return { id: chatId, type: 'private', title: `User ${chatId}` };
    return { id: chatId, type: 'supergroup', title, ...(this.forums.has(key) ? { is_forum: true as const } : {}) };
  }

  /** Queues a button press on a message the bot sent. */
  pressButton(chatId: number, userId: number, messageId: number, data: string) {
    const message = this.messages.get(`${chatId}:${messageId}`);
    if (!message) throw new Error(`no message ${chatId}:${messageId}`);
    return this.#push({
      update_id: this.#nextUpdate++,
      callback_query: {
        id: `cq${this.#nextUpdate}`,
        from: { id: userId, is_bot: false, first_name: `User ${userId}` },
        chat_instance: `ci${chatId}`,
        message,
        data,
      },
    });
  }

  /** Builds an update without queueing it (for webhook requests). */
  textUpdate(chatId: number, userId: number, text: string): { update_id: number } & Record<string, unknown> {
    return this.#textUpdate(chatId, userId, text);
  }

  /**
   * POSTs one update to the webhook once, with `secret` as the secret token header (the one
   * registered when not given; none when `null`), and returns the HTTP status (0: no answer).
   */
  async postUpdate(update: Record<string, unknown>, secret?: string | null): Promise<number> {
    if (!this.webhook) throw new Error('no webhook is set');
    const token = secret === undefined ? this.webhook.secret_token : (secret ?? undefined);
    try {
      const response = await fetch(this.webhook.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token === undefined ? {} : { [SECRET_HEADER]: token }) },
        body: JSON.stringify(update),
        signal: AbortSignal.timeout(10_000),
      });
      await response.body?.cancel();
      return response.status;
    } catch {
      return 0;
    }
  }

  /** Resolves when every queued update has been POSTed to the webhook (or given up on). */
  async webhookIdle(): Promise<void> {
    while (this.#delivering) await this.#delivering;
  }

  /**
   * Telegram's launch data for a Mini App opened by `userId` (`Telegram.WebApp.initData`), signed
   * with the bot's token as Telegram signs it: the hex HMAC-SHA256, keyed with
   * HMAC-SHA256("WebAppData", token), of the other fields as sorted `key=value` lines.
   */
  webAppInitData(userId: number, authDate = Math.floor(Date.now() / 1000)): string {
    const fields = new URLSearchParams({
      query_id: `AAH${userId}`,
      user: JSON.stringify({ id: userId, first_name: `User ${userId}`, language_code: 'en' }),
      auth_date: String(authDate),
      signature: 'c2lnbmF0dXJl',
    });
    const check = [...fields]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([k, v]) => `${k}=${v}`)
      .join('\n');
    const secret = createHmac('sha256', 'WebAppData').update(this.token).digest();
    fields.set('hash', createHmac('sha256', secret).update(check).digest('hex'));
    return fields.toString();
  }

  /** The address a client opens for a web_app button: its URL with the launch data in the fragment, as Telegram passes it. */
  webAppLaunchUrl(url: string, userId: number): string {
    const launch = new URLSearchParams({ tgWebAppData: this.webAppInitData(userId), tgWebAppVersion: '8.0' });
    return `${url}#${launch.toString()}`;
  }

  /** Calls of a method, in order. */
  callsOf(method: string): TelegramCall[] {
    return this.calls.filter((c) => c.method === method);
  }

  /** The next call of `method` (after the calls made so far) that matches. */
  async nextCall(method: string, match: (c: TelegramCall) => boolean = () => true, timeoutMs = 10_000) {
    const from = this.calls.length;
    return this.waitFor(() => this.calls.slice(from).find((c) => c.method === method && match(c)), timeoutMs);
  }

  /** Resolves with the first truthy value of `check`, rechecked after every call. */
  async waitFor<T>(check: () => T | undefined, timeoutMs = 10_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = check();
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error('timed out waiting for a Bot API call');
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.#callWaiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, Math.min(left, 250));
        this.#callWaiters.add(wake);
      });
    }
  }

  #push<T extends { update_id: number }>(full: T): T {
    if (this.webhook) {
      const type = Object.keys(full).find((k) => k !== 'update_id') ?? '';
      if (this.#allowedUpdates && !this.#allowedUpdates.includes(type)) return full;
      this.#webhookQueue.push(full);
      this.#delivering ??= this.#deliver().finally(() => {
        this.#delivering = undefined;
      });
      return full;
    }
    this.#updates.push(full);
    for (const wake of this.#pollers) wake();
    return full;
  }

  /** POSTs queued updates in order; one that is refused is retried up to 4 times, then dropped. */
  async #deliver(): Promise<void> {
    for (let update = this.#webhookQueue[0]; update && !this.#closed; update = this.#webhookQueue[0]) {
      for (let attempt = 0; attempt < 5 && !this.#closed; attempt++) {
        if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
        const status = await this.postUpdate(update);
        this.webhookDeliveries.push({ updateId: update.update_id, status, at: Date.now() });
        if (status >= 200 && status < 300) break;
      }
      this.#webhookQueue = this.#webhookQueue.filter((u) => u !== update);
    }
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // The flood limits count a message when it arrives, not when its body has been read.
    this.#arrivals.set(req, Date.now());
    const match = /^\/bot([^/]+)\/(\w+)$/.exec(req.url?.split('?')[0] ?? '');
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    let answer: Answer;
    let method = match?.[2] ?? '?';
    let params: Record<string, unknown> = {};
    if (!match) answer = { status: 404, body: { ok: false, error_code: 404, description: 'Not Found' } };
    else if (match[1] !== this.token)
      answer = { status: 401, body: { ok: false, error_code: 401, description: 'Unauthorized' } };
    else {
      params = parseBody(req.headers['content-type'] ?? '', Buffer.concat(chunks));
      method = match[2] as string;
      answer = await this.#answer(method, params, req);
    }
    this.calls.push({ method, params, status: answer.status, at: Date.now() });
    for (const wake of [...this.#callWaiters]) wake();
    if (res.destroyed) return;
    res.writeHead(answer.status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(answer.body));
  }

  async #answer(method: string, p: Record<string, unknown>, req: IncomingMessage): Promise<Answer> {
    const ok = (result: unknown): Answer => ({ status: 200, body: { ok: true, result } });
    const error = (code: number, description: string, parameters?: object): Answer => ({
      status: code,
      body: { ok: false, error_code: code, description, ...(parameters ? { parameters } : {}) },
    });
    const chatId = p.chat_id === undefined ? undefined : String(p.chat_id);
    const failure = this.#failures.findIndex(
      (f) => f.methods.includes(method) && (f.chatId === undefined || f.chatId === chatId),
    );
    const f = failure >= 0 ? this.#failures.splice(failure, 1)[0] : undefined;
    if (f) return error(f.code, f.description, f.retryAfter ? { retry_after: f.retryAfter } : undefined);
    const flooded = this.#floodCheck(method, chatId, this.#arrivals.get(req) ?? Date.now());
    if (flooded) return flooded;
    if (chatId && this.blocked.has(chatId) && SEND_METHODS.has(method))
      return error(403, 'Forbidden: bot was blocked by the user');
    const key = `${chatId}:${p.message_id}`;
    switch (method) {
      case 'getMe':
        return ok(this.botInfo());
      case 'deleteWebhook':
        this.webhook = undefined;
        this.#allowedUpdates = undefined;
        if (p.drop_pending_updates === true) this.#updates = [];
        // Not delivered yet: they are getUpdates' again.
        this.#updates.push(...this.#webhookQueue.splice(0));
        return ok(true);
      case 'setWebhook': {
        const url = String(p.url ?? '');
        if (!/^https?:\/\//.test(url))
          return error(400, 'Bad Request: bad webhook: An HTTPS URL must be provided for webhook');
        if (p.secret_token !== undefined && !/^[A-Za-z0-9_-]{1,256}$/.test(String(p.secret_token)))
          return error(400, 'Bad Request: bad webhook: secret token contains unallowed characters');
        this.webhook = { url, ...(p.secret_token ? { secret_token: String(p.secret_token) } : {}) };
        if (Array.isArray(p.allowed_updates)) this.#allowedUpdates = p.allowed_updates.map(String);
        if (p.drop_pending_updates === true) this.#updates = [];
        return ok(true);
      }
      case 'setMyCommands':
        this.commands = (p.commands as unknown[]) ?? [];
        return ok(true);
      case 'getMyCommands':
        return ok(this.commands);
      case 'sendChatAction':
      case 'answerCallbackQuery':
        return ok(true);
      case 'getChat': {
        if (!chatId || this.leftGroups.has(chatId)) return error(400, 'Bad Request: chat not found');
        const id = Number(chatId);
        if (id > 0) return ok({ id, type: 'private', first_name: `User ${id}` });
        return ok(this.#chatOf(id));
      }
      case 'createForumTopic': {
        if (!chatId || Number(chatId) > 0 || this.channels.has(chatId))
          return error(400, 'Bad Request: chat is not a forum');
        const name = String(p.name ?? '');
        if (name.length < 1 || name.length > 128) return error(400, 'Bad Request: TOPIC_TITLE_EMPTY');
        return ok({ message_thread_id: this.openTopic(Number(chatId), name), name, icon_color: 7322096 });
      }
      case 'deleteForumTopic': {
        const topic = this.forums.get(chatId ?? '')?.get(Number(p.message_thread_id));
        if (!topic || topic.deleted) return error(400, THREAD_NOT_FOUND);
        this.deleteTopic(Number(chatId), Number(p.message_thread_id));
        return ok(true);
      }
      case 'getChatMember': {
        const admins = this.admins.get(chatId ?? '') ?? [];
        const user = { id: Number(p.user_id), is_bot: false, first_name: `User ${p.user_id}` };
        const at = admins.indexOf(Number(p.user_id));
        const status = at === 0 ? 'creator' : at > 0 ? 'administrator' : 'member';
        return ok({ status, user, ...(status === 'administrator' ? { can_be_edited: false } : {}) });
      }
      case 'createChatInviteLink': {
        if (!chatId) return error(400, 'Bad Request: chat_id is empty');
        if (this.withoutRights.has(chatId))
          return error(400, 'Bad Request: not enough rights to manage chat invite link');
        const joinRequest = p.creates_join_request === true || p.creates_join_request === 'true';
        const invite_link = `https://t.me/+fake${randomBytes(8).toString('hex')}`;
        this.inviteLinks.push({ chatId, invite_link, creates_join_request: joinRequest });
        return ok({
          invite_link,
          creator: this.bot,
          creates_join_request: joinRequest,
          is_primary: false,
          is_revoked: false,
          ...(p.name === undefined ? {} : { name: String(p.name) }),
        });
      }
      case 'approveChatJoinRequest':
      case 'declineChatJoinRequest': {
        if (!chatId) return error(400, 'Bad Request: chat_id is empty');
        if (this.withoutRights.has(chatId)) return error(400, 'Bad Request: not enough rights');
        const userId = Number(p.user_id);
        const pending = this.joinRequests.get(chatId);
        if (!pending?.has(userId)) {
          if (this.isMember(chatId, userId)) return error(400, 'Bad Request: USER_ALREADY_PARTICIPANT');
          return error(400, 'Bad Request: HIDE_REQUESTER_MISSING');
        }
        pending.delete(userId);
        if (method === 'approveChatJoinRequest') {
          const members = this.members.get(chatId) ?? new Set<number>();
          members.add(userId);
          this.members.set(chatId, members);
        }
        return ok(true);
      }
      case 'banChatMember': {
        if (!chatId) return error(400, 'Bad Request: chat_id is empty');
        const userId = Number(p.user_id);
        const admins = this.admins.get(chatId) ?? [];
        if (admins[0] === userId) return error(400, "Bad Request: can't remove chat owner");
        if (admins.includes(userId)) return error(400, 'Bad Request: user is an administrator of the chat');
        if (this.withoutRights.has(chatId))
          return error(400, 'Bad Request: not enough rights to restrict/unrestrict chat member');
        this.members.get(chatId)?.delete(userId);
        const until = p.until_date === undefined ? undefined : Number(p.until_date);
        this.restrictions.push({ chatId, userId, kind: 'ban', ...(until === undefined ? {} : { until }) });
        return ok(true);
      }
      case 'unbanChatMember': {
        if (!chatId) return error(400, 'Bad Request: chat_id is empty');
        if (this.withoutRights.has(chatId))
          return error(400, 'Bad Request: not enough rights to restrict/unrestrict chat member');
        this.restrictions.push({ chatId, userId: Number(p.user_id), kind: 'unban' });
        return ok(true);
      }
      case 'sendMessage':
      case 'sendPhoto':
      case 'sendDocument': {
        if (!chatId) return error(400, 'Bad Request: chat_id is empty');
        if (chatId === '0') return error(400, 'Bad Request: chat not found');
        const refusal = webAppRefusal(p.reply_markup, Number(chatId) > 0);
        if (refusal) return error(400, refusal);
        const photo = method === 'sendPhoto' ? await this.#photo(p.photo) : undefined;
        if (typeof photo === 'string') return error(400, photo);
        const id = Number(chatId);
        const threadId = p.message_thread_id === undefined ? undefined : Number(p.message_thread_id);
        const topic = threadId === undefined ? undefined : this.forums.get(chatId)?.get(threadId);
        if (threadId !== undefined && (!topic || topic.deleted)) return error(400, THREAD_NOT_FOUND);
        const chat = this.#chatOf(id);
        const message: StoredMessage = {
          message_id: this.#nextMessage++,
          chat: { id, type: chat.type },
          date: Math.floor(Date.now() / 1000),
          // A channel's posts are the channel's, the bot's included.
          ...(chat.type === 'channel' ? { sender_chat: chat } : { from: this.bot }),
          ...(threadId === undefined ? {} : { message_thread_id: threadId, is_topic_message: true as const }),
        };
        if (method === 'sendMessage') {
          if (!p.text) return error(400, 'Bad Request: message text is empty');
          message.text = String(p.text);
          if (p.parse_mode === 'HTML') {
            const read = readHtml(message.text, TEXT_LIMIT);
            if (typeof read === 'string') return error(400, read);
            message.shown = read;
          }
        } else if (photo) {
          message.photo = [{ file_id: `photo${message.message_id}`, file_unique_id: 'u', ...photo }];
          if (p.caption !== undefined) message.caption = String(p.caption);
          if (p.caption !== undefined && p.parse_mode === 'HTML') {
            const read = readHtml(String(p.caption), CAPTION_LIMIT);
            if (typeof read === 'string') return error(400, read);
            message.shown = read;
          }
        } else {
          const file = p.document as UploadedFile | undefined;
          if (!file?.data) return error(400, 'Bad Request: there is no document in the request');
          message.document = { file_id: `doc${message.message_id}`, file_unique_id: 'd', file_name: file.filename };
        }
        if (p.reply_markup) message.reply_markup = p.reply_markup;
        this.messages.set(`${chatId}:${message.message_id}`, message);
        return ok(message);
      }
      case 'editMessageText':
      case 'editMessageCaption': {
        const message = this.messages.get(key);
        if (!message) return error(400, 'Bad Request: message to edit not found');
        const field = method === 'editMessageText' ? 'text' : 'caption';
        if (field === 'text' ? message.text === undefined : message.photo === undefined)
          return error(400, `Bad Request: there is no ${field} in the message to edit`);
        const next = String(p[field] ?? '');
        const read =
          p.parse_mode === 'HTML' ? readHtml(next, field === 'text' ? TEXT_LIMIT : CAPTION_LIMIT) : undefined;
        if (typeof read === 'string') return error(400, read);
        const markup = p.reply_markup ?? undefined;
        if (message[field] === next && JSON.stringify(message.reply_markup) === JSON.stringify(markup))
          return error(
            400,
            'Bad Request: message is not modified: specified new message content and reply markup are exactly the same',
          );
        message[field] = next;
        if (read) message.shown = read;
        if (markup) message.reply_markup = markup;
        else delete message.reply_markup;
        return ok(message);
      }
      case 'getUpdates': {
        const offset = Number(p.offset ?? 0);
        if (offset > 0) this.#updates = this.#updates.filter((u) => u.update_id >= offset);
        // As Telegram: the allowed_updates given are kept for later calls, and other types are not sent.
        if (Array.isArray(p.allowed_updates)) this.#allowedUpdates = p.allowed_updates.map(String);
        this.#dropUnallowed();
        const limit = Number(p.limit ?? 100);
        const timeout = Number(p.timeout ?? 0);
        if (this.#updates.length === 0 && timeout > 0) {
          await new Promise<void>((resolve) => {
            const wake = () => {
              clearTimeout(timer);
              this.#pollers.delete(wake);
              resolve();
            };
            const timer = setTimeout(wake, timeout * 1000);
            this.#pollers.add(wake);
            req.once('close', wake);
          });
        }
        this.#dropUnallowed();
        return ok(this.#updates.slice(0, limit));
      }
      default:
        return error(404, 'Not Found: method not found');
    }
  }

  /**
   * A photo as the Bot API takes it, with its size, or the API's refusal: an upload must be a PNG
   * or JPEG file; an address is fetched (from here, so it must be reachable from the test) and
   * must serve JPEG, PNG, GIF or WebP; anything else is the id of a photo sent before.
   */
  async #photo(photo: unknown): Promise<{ width: number; height: number } | string> {
    if (typeof photo === 'object' && photo !== null && 'data' in photo) {
      const data = (photo as UploadedFile).data;
      if (data.subarray(0, 8).equals(PNG_SIGNATURE))
        return { width: data.readUInt32BE(16), height: data.readUInt32BE(20) };
      if (data.subarray(0, 3).equals(JPEG_SIGNATURE)) return { width: 512, height: 512 };
      return 'Bad Request: IMAGE_PROCESS_FAILED';
    }
    const text = typeof photo === 'string' ? photo : '';
    if (/^https?:\/\//i.test(text)) {
      try {
        const response = await fetch(text, { signal: AbortSignal.timeout(5_000) });
        await response.body?.cancel();
        if (!response.ok) return 'Bad Request: wrong file identifier/HTTP URL specified';
        const type = response.headers.get('content-type') ?? '';
        if (!/^image\/(jpeg|png|gif|webp)\b/i.test(type)) return 'Bad Request: wrong type of the web page content';
        return { width: 512, height: 512 };
      } catch {
        return 'Bad Request: failed to get HTTP URL content';
      }
    }
    const known = [...this.messages.values()].some((m) => m.photo?.some((size) => size.file_id === text));
    return known ? { width: 512, height: 512 } : 'Bad Request: wrong file identifier/HTTP URL specified';
  }
}

/**
 * Why the Bot API refuses a keyboard's web_app buttons: they are for private chats only
 * (BUTTON_TYPE_INVALID elsewhere), and their URL must be https (BUTTON_URL_INVALID); like Telegram's
 * test environment, this stand-in also takes plain http to this machine.
 */
function webAppRefusal(markup: unknown, privateChat: boolean): string | undefined {
  const rows = (markup as { inline_keyboard?: unknown } | undefined)?.inline_keyboard;
  if (!Array.isArray(rows)) return undefined;
  for (const row of rows) {
    for (const button of Array.isArray(row) ? row : []) {
      const webApp = (button as { web_app?: { url?: unknown } }).web_app;
      if (!webApp) continue;
      if (!privateChat) return 'Bad Request: BUTTON_TYPE_INVALID';
      const url = typeof webApp.url === 'string' ? webApp.url : '';
      if (!/^https:\/\//.test(url) && !/^http:\/\/(127\.0\.0\.1|localhost)[:/]/.test(url)) {
        return 'Bad Request: BUTTON_URL_INVALID';
      }
    }
  }
  return undefined;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const JPEG_SIGNATURE = Buffer.from([0xff, 0xd8, 0xff]);

/** JSON, urlencoded or multipart; multipart is parsed leniently and `attach://` references resolved. */
function parseBody(contentType: string, body: Buffer): Record<string, unknown> {
  if (body.length === 0) return {};
  if (contentType.includes('application/json')) return JSON.parse(body.toString('utf8')) as Record<string, unknown>;
  if (contentType.includes('application/x-www-form-urlencoded')) {
    return Object.fromEntries([...new URLSearchParams(body.toString('utf8'))].map(([k, v]) => [k, jsonish(v)]));
  }
  const boundary = /boundary="?([^";]+)"?/.exec(contentType)?.[1];
  if (!boundary) return {};
  const fields: Record<string, unknown> = {};
  const files = new Map<string, UploadedFile>();
  const delimiter = Buffer.from(`--${boundary}`);
  let at = body.indexOf(delimiter);
  while (at >= 0) {
    const start = at + delimiter.length;
    const next = body.indexOf(delimiter, start);
    if (next < 0) break;
    const part = body.subarray(start, next);
    const split = part.indexOf('\r\n\r\n');
    if (split >= 0) {
      const head = part.subarray(0, split).toString('utf8');
      let data = part.subarray(split + 4);
      if (data.subarray(-2).toString() === '\r\n') data = data.subarray(0, -2);
      const name = /name="([^"]*)"/i.exec(head)?.[1];
      const filename = /filename="?([^";\r\n]*)"?/i.exec(head)?.[1];
      if (name !== undefined) {
        if (filename !== undefined) files.set(name, { filename, data: Buffer.from(data) });
        else fields[name] = jsonish(data.toString('utf8'));
      }
    }
    at = next;
  }
  for (const [name, file] of files) if (!(name in fields)) fields[name] = file;
  for (const [name, value] of Object.entries(fields)) {
    if (typeof value === 'string' && value.startsWith('attach://')) {
      const file = files.get(value.slice('attach://'.length));
      if (file) fields[name] = file;
    }
  }
  return fields;
}

function jsonish(value: string): unknown {
  if (!/^[[{]/.test(value)) return value;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}
