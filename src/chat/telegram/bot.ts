/**
 * The grammy Bot of the Telegram adapter: its API calls paced under Telegram's global limit and
 * the token scrubbed from network errors; and how failures are told without the token.
 */
import { Bot, GrammyError, HttpError } from 'grammy';
import type { UserFromGetMe } from 'grammy/types';
import { RatePacer } from '../../delivery/pacer.ts';
import { ChatStartError, networkFailureOf, shownAddress } from '../start-error.ts';
import { TELEGRAM_PACE } from './sink.ts';

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
  /**
   * Messages a second the bot sends across all its chats ({@link TELEGRAM_PACE}.globalPerSecond when
   * undefined): raise it only for a bot whose limit Telegram raised (paid broadcasts).
   */
  messagesPerSecond?: number | undefined;
}

/** Methods that post or change a message and count against Telegram's global limit. */
const THROTTLED = /^(send|edit|copy|forward)/;
const DEFAULT_API_ROOT = 'https://api.telegram.org';

/** Removes the bot's token from a text (request URLs carry it). */
export type Scrub = (text: string) => string;

/**
 * The bot of a configuration, its messages (sends and edits, of alerts and of answers alike) paced
 * for all chats at once at `messagesPerSecond` ({@link TELEGRAM_PACE}.globalPerSecond), and the
 * scrub that keeps its token out of anything logged or thrown.
 */
export function createBot(config: TelegramConfig, botInfo?: UserFromGetMe): { bot: Bot; scrub: Scrub } {
  const scrub: Scrub = (text) => text.split(config.token).join('[token]');
  const bot = new Bot(config.token, {
    ...(config.apiRoot ? { client: { apiRoot: config.apiRoot.replace(/\/+$/, '') } } : {}),
    ...(botInfo ? { botInfo } : {}),
  });
  // The one global pace: grammy itself does not throttle (no throttler plugin is installed), and
  // the dispatcher keeps only each chat's pace, so nothing else holds these back.
  const pacer = new RatePacer(config.messagesPerSecond ?? TELEGRAM_PACE.globalPerSecond);
  bot.api.config.use(async (prev, method, payload, signal) => {
    if (THROTTLED.test(method)) await pacer.take();
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
  return { bot, scrub };
}

/** The Bot API's address as an operator may read it (no token, no credentials). */
export function apiAddress(config: TelegramConfig): string {
  return config.apiRoot ? shownAddress(config.apiRoot) : DEFAULT_API_ROOT;
}

/** An error for logs: name and message with the token removed, the Bot API's code where there is one. */
export function describe(error: unknown, scrub: Scrub): { name: string; message: string; code?: number } {
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
export function startError(what: string, error: unknown, scrub: Scrub, address: string): Error {
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
