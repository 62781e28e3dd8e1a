import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Bot, type Context, GrammyError, HttpError, webhookCallback } from 'grammy';
import type { BotCommand, Chat, Update, User, UserFromGetMe } from 'grammy/types';
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { ButtonCodec } from '../../bot/buttons.ts';
import type { Actor, ChatRef } from '../../bot/command.ts';
import { isGroup } from '../../bot/command.ts';
import type { CommandEngine, Outcome } from '../../bot/engine.ts';
import { createLimitedServer, type ListenerLimits } from '../../core/http-listener.ts';
import type { RulesRepository } from '../../core/ports.ts';
import { plain, type Reply, truncate } from '../../core/reply.ts';
import type { AlertSink } from '../../delivery/sink.ts';
import { ChatImages } from '../images/images.ts';
import { OutcomeProbe } from '../outcome-probe.ts';
import { ChatStartError, networkFailureOf, shownAddress } from '../start-error.ts';
import { REPLACES_MARK, type SentKind, TelegramOutbox } from './outbox.ts';
import { TELEGRAM_LIMITS } from './render.ts';
import { TELEGRAM_PACE, TelegramSink } from './sink.ts';

/** The Telegram settings the adapter runs with: main hands it the configuration's `telegram` section. */
export interface TelegramConfig {
  token: string;
  /** Bot API base for a proxy or a test stand-in. */
  apiRoot: string | undefined;
  /** Webhook mode when set (the public https URL Telegram posts updates to); long polling otherwise. */
  webhookUrl: string | undefined;
  /** Checked on every webhook request (X-Telegram-Bot-Api-Secret-Token). */
  webhookSecret: string | undefined;
  /** Local port of the webhook listener (0: any free port, for tests). */
  webhookPort: number;
}

export interface TelegramAdapterOptions {
  /** The `telegram` section of the configuration. */
  config: TelegramConfig;
  engine: CommandEngine;
  /** Holds long button actions (ButtonCodec). */
  store: RulesRepository;
  logger: Logger;
  /** The bot's own user; skips getMe (tests, or a known bot). */
  botInfo?: UserFromGetMe;
  /** Least time between two alerts to one group (default 3 s; tests shorten it). */
  groupIntervalMs?: number;
  /** Makes the images of answers and alerts showable (SVG drawn as PNG); default: one of its own. */
  images?: ChatImages;
  /** Address the webhook listener binds to (default: all interfaces, for a load balancer in front). */
  webhookHost?: string;
}

export interface TelegramAdapter {
  sink: AlertSink;
  bot: Bot;
  /** True while updates arrive: polling runs, or the webhook listener is up (health checks). */
  ready(): boolean;
  stop(): Promise<void>;
  /** Set in webhook mode: the public URL registered and the local port listening. */
  webhook?: { url: string; port: number };
}

/** Answer to a button whose stored action is gone. */
export const EXPIRED_BUTTON = 'This button no longer works. Run the command again.';
const PRIVATE_HINT = 'I answer commands. Send /help to see them.';
/** Buttons that show another page or fresher numbers of the same answer: they edit it in place. */
const ADMIN_CACHE_MS = 5 * 60_000;
/** Methods that post or change a message and count against Telegram's global limit. */
const THROTTLED = /^(send|edit|copy|forward)/;
const ALLOWED_UPDATES = ['message', 'callback_query'] as const;
const DEFAULT_API_ROOT = 'https://api.telegram.org';

/** A simple token bucket: `take` resolves when a token is free. */
class TokenBucket {
  #tokens: number;
  #last = Date.now();
  #queue: Promise<void> = Promise.resolve();
  constructor(
    readonly perSecond: number,
    readonly capacity = perSecond,
  ) {
    this.#tokens = capacity;
  }
  take(): Promise<void> {
    const turn = this.#queue.then(async () => {
      for (;;) {
        const now = Date.now();
        this.#tokens = Math.min(this.capacity, this.#tokens + ((now - this.#last) / 1_000) * this.perSecond);
        this.#last = now;
        if (this.#tokens >= 1) {
          this.#tokens -= 1;
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, ((1 - this.#tokens) / this.perSecond) * 1_000));
      }
    });
    this.#queue = turn;
    return turn;
  }
}

/**
 * Starts the Telegram adapter: commands typed in chats and button presses go to the command
 * engine, answers are rendered to HTML messages, and the returned sink carries alerts. Long
 * polling by default; webhook mode when `config.webhookUrl` is set: setWebhook once at start,
 * then a node:http listener on `config.webhookPort` that serves the URL's path and checks the
 * secret token. Any number of replicas may share one webhook URL behind a load balancer: each
 * answers the updates it receives, none polls. Resolves once updates are being received.
 *
 * @example
 * const telegram = await startTelegram({ config: config.telegram, engine, store, logger });
 * sinks.set('telegram', telegram.sink);
 * stops.push(() => telegram.stop());
 */
export async function startTelegram(options: TelegramAdapterOptions): Promise<TelegramAdapter> {
  const { config, engine, store } = options;
  const logger = options.logger.child({ component: 'telegram' });
  const scrub = (text: string) => text.split(config.token).join('[token]');
  const failed = (what: string, error: unknown) =>
    startError(what, error, scrub, config.apiRoot ? shownAddress(config.apiRoot) : DEFAULT_API_ROOT);
  const bot = new Bot(config.token, {
    ...(config.apiRoot ? { client: { apiRoot: config.apiRoot.replace(/\/+$/, '') } } : {}),
    ...(options.botInfo ? { botInfo: options.botInfo } : {}),
  });
  const bucket = new TokenBucket(TELEGRAM_PACE.globalPerSecond);
  bot.api.config.use(async (prev, method, payload, signal) => {
    if (THROTTLED.test(method)) await bucket.take();
    try {
      return await prev(method, payload, signal);
    } catch (error) {
      // The request URL carries the token; network errors quote it.
      if (error instanceof HttpError) {
        const inner = error.error instanceof Error ? error.error.message : String(error.error);
        const code = (error.error as { code?: unknown } | undefined)?.code;
        throw new HttpError(scrub(error.message), Object.assign(new Error(scrub(inner)), { code }));
      }
      throw error;
    }
  });

  // One byte of the callback data is kept for the in-place mark.
  const codec = new ButtonCodec(store, TELEGRAM_LIMITS.callbackData - REPLACES_MARK.length);
  const images = options.images ?? new ChatImages({ logger });
  const ownImages = options.images === undefined;
  const outbox = new TelegramOutbox(bot.api, codec, logger, images);
  const probe = new OutcomeProbe(engine);
  const sink = new TelegramSink(
    outbox,
    options.groupIntervalMs === undefined ? {} : { groupIntervalMs: options.groupIntervalMs },
  );
  const admins = new LRUCache<string, boolean>({ max: 5_000, ttl: ADMIN_CACHE_MS });
  const inflight = new Set<Promise<void>>();

  const canManage = async (chat: Chat, user: User): Promise<boolean> => {
    if (chat.type === 'private') return true;
    const key = `${chat.id}:${user.id}`;
    const cached = admins.get(key);
    if (cached !== undefined) return cached;
    try {
      const member = await bot.api.getChatMember(chat.id, user.id);
      const manage = member.status === 'creator' || member.status === 'administrator';
      admins.set(key, manage);
      return manage;
    } catch (error) {
      logger.warn({ chatId: chat.id, err: describe(error, scrub) }, 'could not check chat admin');
      return false;
    }
  };
  const chatRef = (chat: Chat): ChatRef => ({
    platform: 'telegram',
    id: String(chat.id),
    kind: chat.type === 'private' ? 'private' : 'group',
  });
  const actorOf = async (chat: Chat, user: User): Promise<Actor> => ({
    id: String(user.id),
    name: user.username ?? user.first_name,
    canManage: await canManage(chat, user),
  });
  const track = (task: Promise<void>) => {
    const running = task.catch((error: unknown) => {
      logger.error({ err: describe(error, scrub) }, 'telegram update failed');
    });
    inflight.add(running);
    void running.finally(() => inflight.delete(running));
  };

  bot.on('message:text', (ctx) => {
    track(onMessage(ctx));
  });
  bot.on('callback_query:data', (ctx) => {
    track(onButton(ctx));
  });
  bot.catch((error) => {
    logger.error({ update: error.ctx.update.update_id, err: describe(error.error, scrub) }, 'telegram handler failed');
  });

  async function onMessage(ctx: Context): Promise<void> {
    const message = ctx.message;
    if (!message?.text || !message.from || message.from.is_bot) return;
    const text = message.text;
    const isPrivate = message.chat.type === 'private';
    const addressed = /^\s*\/[A-Za-z][\w-]*@(\w+)/.exec(text)?.[1];
    if (addressed && addressed.toLowerCase() !== bot.botInfo.username.toLowerCase()) return;
    const isCommand = text.trimStart().startsWith('/');
    // Talk in a group is not for the bot: it is neither answered nor counted.
    if (!isCommand && !isPrivate) return;
    const chat = chatRef(message.chat);
    const replyTo = isPrivate ? undefined : message.message_id;
    const admission = engine.admit(chat, { id: String(message.from.id) });
    if (admission.status === 'notify') await outbox.send(chat.id, admission.reply, replyTo);
    if (admission.status !== 'ok') return;
    if (!isCommand) {
      await outbox.send(chat.id, { lines: [PRIVATE_HINT] });
      return;
    }
    // Telegram opens every private chat with /start.
    const line = /^\s*\/start(@\w+)?\s*$/i.test(text) && !engine.find('start') ? '/help' : text;
    void ctx.replyWithChatAction('typing').catch(() => undefined);
    const actor = await actorOf(message.chat, message.from);
    const reply = await engine.runLine(line, chat, actor);
    if (!reply) {
      if (isPrivate) await outbox.send(chat.id, { lines: [PRIVATE_HINT] });
      return;
    }
    await outbox.send(chat.id, reply, replyTo);
  }

  async function onButton(ctx: Context): Promise<void> {
    const query = ctx.callbackQuery;
    if (!query?.data) return;
    const message = query.message;
    const admission = engine.admit(
      message ? chatRef(message.chat) : { platform: 'telegram', id: String(query.from.id), kind: 'private' },
      { id: String(query.from.id) },
    );
    if (admission.status !== 'ok') {
      await ctx.answerCallbackQuery(admission.status === 'notify' ? popup(admission.reply) : undefined);
      return;
    }
    const replaces = query.data.startsWith(REPLACES_MARK);
    const action = codec.decode(replaces ? query.data.slice(REPLACES_MARK.length) : query.data);
    if (!action || !message) {
      await ctx.answerCallbackQuery({ text: EXPIRED_BUTTON, show_alert: true });
      return;
    }
    let answered = false;
    try {
      const chat = chatRef(message.chat);
      const actor = await actorOf(message.chat, query.from);
      const { value: reply, outcome } = await probe.observe(() => engine.runLine(action, chat, actor));
      if (reply && REFUSALS.has(outcome)) {
        answered = true;
        await ctx.answerCallbackQuery(popup(reply));
        return;
      }
      await ctx.answerCallbackQuery();
      answered = true;
      if (!reply) return;
      const kind: SentKind = 'photo' in message && message.photo ? 'photo' : 'text';
      if (replaces && reply.tone !== 'error' && message.date !== 0) {
        try {
          await outbox.edit(chat.id, message.message_id, kind, reply);
          return;
        } catch (error) {
          logger.debug({ err: describe(error, scrub) }, 'edit in place failed; sending a new message');
        }
      }
      await outbox.send(chat.id, reply);
    } finally {
      if (!answered) await ctx.answerCallbackQuery().catch(() => undefined);
    }
  }

  if (!options.botInfo) {
    // One attempt, not grammy's endless retries in init(): a wrong token or API root fails the start loudly.
    try {
      bot.botInfo = await bot.api.getMe();
    } catch (error) {
      throw failed('getMe', error);
    }
  }
  try {
    await bot.api.setMyCommands(menuOf(engine));
  } catch (error) {
    logger.warn({ err: describe(error, scrub) }, 'could not set the command menu');
  }

  const drain = async () => {
    while (inflight.size) await Promise.allSettled([...inflight]);
  };

  if (config.webhookUrl) {
    const secret = config.webhookSecret;
    if (!secret) throw new Error('Telegram: a webhook needs a secret token (FLOORWATCH_TELEGRAM_WEBHOOK_SECRET).');
    try {
      // Every replica registers the same webhook; pending updates are kept for whichever answers.
      await bot.api.setWebhook(config.webhookUrl, {
        secret_token: secret,
        allowed_updates: [...ALLOWED_UPDATES],
        drop_pending_updates: false,
      });
    } catch (error) {
      throw failed('setWebhook', error);
    }
    const server = await listenForUpdates({
      bot,
      path: new URL(config.webhookUrl).pathname,
      secret,
      port: config.webhookPort,
      ...(options.webhookHost === undefined ? {} : { host: options.webhookHost }),
      onError: (error) => logger.warn({ err: describe(error, scrub) }, 'webhook request failed'),
    });
    const port = (server.address() as AddressInfo).port;
    logger.info({ bot: bot.botInfo.username, port }, 'telegram webhook listening');
    return {
      sink,
      bot,
      webhook: { url: config.webhookUrl, port },
      ready: () => server.listening,
      async stop() {
        // No deleteWebhook: other replicas behind the same URL keep serving it.
        server.closeIdleConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await drain();
        if (ownImages) await images.close();
      },
    };
  }

  let started!: () => void;
  const ready = new Promise<void>((resolve) => {
    started = resolve;
  });
  const polling = bot.start({
    allowed_updates: [...ALLOWED_UPDATES],
    onStart: () => started(),
  });
  const stopped = polling.then(
    () => {
      throw new Error('Telegram polling stopped before it started');
    },
    (error: unknown) => {
      throw failed('long polling', error);
    },
  );
  await Promise.race([ready, stopped]);
  void stopped.catch((error: unknown) => {
    logger.error({ err: describe(error, scrub) }, 'telegram polling stopped');
  });
  logger.info({ bot: bot.botInfo.username }, 'telegram long polling');
  return {
    sink,
    bot,
    ready: () => bot.isRunning(),
    async stop() {
      if (bot.isRunning()) await bot.stop();
      await polling.catch(() => undefined);
      await drain();
      if (ownImages) await images.close();
    },
  };
}

/** Largest webhook request body read; Telegram's updates are a few kilobytes. */
export const WEBHOOK_MAX_BODY = 1024 * 1024;
/**
 * What a client may hold of the webhook listener. Telegram (or the load balancer in front) sends a
 * request's head at once and opens at most 100 connections per bot (setWebhook's max_connections).
 */
export const WEBHOOK_LISTENER_LIMITS: ListenerLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  maxHeadersCount: 100,
  maxHeaderSize: 8 * 1024,
  maxConnections: 256,
};

/**
 * The webhook listener: POSTs on `path` carrying the secret token go to grammy's webhookCallback;
 * anything else is refused before its body is read (404 another path, 405 another method, 401 no
 * or a wrong secret, 413 a body over {@link WEBHOOK_MAX_BODY}, 400 not an update). The update is
 * acknowledged once grammy has handed it to the handlers, which answer in the background.
 */
async function listenForUpdates(options: {
  bot: Bot;
  path: string;
  secret: string;
  port: number;
  host?: string;
  onError: (error: unknown) => void;
}): Promise<Server> {
  const { bot, path, secret, onError } = options;
  const handle = webhookCallback(bot, 'callback', { onTimeout: 'return', secretToken: secret });
  const expected = Buffer.from(secret);
  const refuse = (res: ServerResponse, status: number, headers: Record<string, string> = {}) => {
    // The unread body is not drained: the connection closes with the answer.
    res.writeHead(status, { connection: 'close', ...headers }).end();
  };
  const serve = async (req: IncomingMessage, res: ServerResponse) => {
    if (new URL(req.url ?? '/', 'http://listener').pathname !== path) return refuse(res, 404);
    if (req.method !== 'POST') return refuse(res, 405, { allow: 'POST' });
    const header = req.headers['x-telegram-bot-api-secret-token'];
    const given = Buffer.from(typeof header === 'string' ? header : '');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return refuse(res, 401);
    if (Number(req.headers['content-length'] ?? 0) > WEBHOOK_MAX_BODY) return refuse(res, 413);
    const body = await readBody(req, WEBHOOK_MAX_BODY);
    if (body === undefined) return refuse(res, 413);
    let update: unknown;
    try {
      update = JSON.parse(body.toString('utf8'));
    } catch {
      return refuse(res, 400);
    }
    if (typeof update !== 'object' || update === null || typeof (update as Update).update_id !== 'number') {
      return refuse(res, 400);
    }
    await handle(
      update as Update,
      (json: string) => void res.writeHead(200, { 'content-type': 'application/json' }).end(json),
      given.toString(),
      () => void refuse(res, 401),
    );
    if (!res.headersSent) res.writeHead(200).end();
  };
  const server = createLimitedServer(WEBHOOK_LISTENER_LIMITS, (req, res) => {
    serve(req, res).catch((error: unknown) => {
      onError(error);
      if (!res.headersSent) res.writeHead(500, { connection: 'close' }).end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}

/** A request's body, or undefined once it grows past `limit` (the rest is left unread). */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
        return;
      }
      req.off('data', onData);
      req.pause();
      resolve(undefined);
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
    // A client gone before the end: nothing to answer (after 'end' this changes nothing).
    req.once('close', () => resolve(undefined));
  });
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

/**
 * Verdicts on a button press that concern the presser alone: they answer it with a popup and post
 * nothing, so a group does not read that one member may not do something, or pressed too fast.
 * (An expired button and a flood are refused before the engine runs; the same popup answers them.)
 * Other failures (the platform down, a listing gone) stay messages: they may carry a reference to
 * report, are often longer than a popup holds, and say something about the message's content.
 */
const REFUSALS: ReadonlySet<Outcome | undefined> = new Set<Outcome>(['denied', 'rate_limited']);

/** A reply as the popup answering a button press (seen by the presser alone, until dismissed). */
function popup(reply: Reply): { text: string; show_alert: true } {
  return {
    text: truncate((reply.lines ?? []).map(plain).join('\n'), TELEGRAM_LIMITS.callbackAnswer),
    show_alert: true,
  };
}

/** An error for logs: name and message with the token removed, the Bot API's code where there is one. */
function describe(error: unknown, scrub: (text: string) => string): { name: string; message: string; code?: number } {
  if (error instanceof GrammyError) return { name: error.name, message: scrub(error.message), code: error.error_code };
  if (error instanceof Error) return { name: error.name, message: scrub(error.message) };
  return { name: 'Error', message: scrub(String(error)) };
}

/**
 * A failed first contact: a ChatStartError when the Bot API could not be reached or refused the
 * token or a setting (one line for the operator), else a plain error. A Bot API error is never kept
 * as the cause: its payload holds what was sent, the webhook's secret token included, and an
 * uncaught error is printed with its causes' properties.
 */
function startError(what: string, error: unknown, scrub: (text: string) => string, address: string): Error {
  const { message } = describe(error, scrub);
  if (error instanceof GrammyError && (error.error_code === 401 || error.error_code === 404)) {
    const refusal = `${what}: ${error.error_code} ${scrub(error.description)}`;
    const text = `Telegram: the Bot API at ${address} refused TELEGRAM_BOT_TOKEN (${refusal}); check the token with @BotFather.`;
    return new ChatStartError('telegram', 'refused', address, text);
  }
  // 429 too: a flood limit passes, and replicas starting together all call setWebhook.
  if (
    error instanceof HttpError ||
    (error instanceof GrammyError && (error.error_code >= 500 || error.error_code === 429))
  ) {
    const reason = networkFailureOf(error) ?? message;
    const text = `Telegram: cannot reach the Bot API at ${address} (${what}: ${reason}).`;
    return new ChatStartError('telegram', 'unreachable', address, text);
  }
  if (error instanceof GrammyError) {
    const text = `Telegram: the Bot API at ${address} refused ${what}: ${error.error_code} ${scrub(error.description)}.`;
    return new ChatStartError('telegram', 'rejected', address, text);
  }
  return new Error(`Telegram: ${what} failed: ${message}`, { cause: error });
}
