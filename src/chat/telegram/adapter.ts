/**
 * The Telegram adapter, assembled from its parts in this folder: the bot and its paced API
 * (bot.ts), the routing of updates (updates.ts) to command handling (messages.ts) and button
 * presses (callbacks.ts), receiving updates by webhook (webhook.ts) or long polling (polling.ts),
 * and the sink that carries alerts (sink.ts, through outbox.ts).
 */
import type { Bot } from 'grammy';
import type { UserFromGetMe } from 'grammy/types';
import type { Logger } from 'pino';
import type { CommandEngine } from '../../bot/engine.ts';
import type { AlertSink } from '../../delivery/sink.ts';
import { ChatImages } from '../images/images.ts';
import { OutcomeProbe } from '../outcome-probe.ts';
import { apiAddress, createBot, describe, type Scrub, startError, type TelegramConfig } from './bot.ts';
import { answerButton } from './callbacks.ts';
import { answerMessage, menuOf } from './messages.ts';
import { REPLACES_MARK, TelegramOutbox } from './outbox.ts';
import { ChatPeople } from './people.ts';
import { receiveByPolling } from './polling.ts';
import { TELEGRAM_LIMITS } from './render.ts';
import { TelegramSink } from './sink.ts';
import { routeUpdates } from './updates.ts';
import { receiveByWebhook } from './webhook.ts';

export type { TelegramConfig } from './bot.ts';
export { EXPIRED_BUTTON } from './callbacks.ts';
export { DEEP_LINK_GONE, menuOf } from './messages.ts';
export { WEBHOOK_LISTENER_LIMITS, WEBHOOK_MAX_BODY } from './webhook.ts';

export interface TelegramAdapterOptions {
  /** The `telegram` section of the configuration. */
  config: TelegramConfig;
  /** Runs the commands; also keeps long button actions. */
  engine: CommandEngine;
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

/**
 * Starts the Telegram adapter: commands typed in chats and button presses go to the command
 * engine, answers are rendered to HTML messages, and the returned sink carries alerts. Long
 * polling by default; webhook mode when `config.webhookUrl` is set: setWebhook once at start,
 * then a node:http listener on `config.webhookPort` that serves the URL's path and checks the
 * secret token. Any number of replicas may share one webhook URL behind a load balancer: each
 * answers the updates it receives, none polls. Resolves once updates are being received.
 *
 * @example
 * const telegram = await startTelegram({ config: config.telegram, engine, logger });
 * sinks.set('telegram', telegram.sink);
 * stops.push(() => telegram.stop());
 */
export async function startTelegram(options: TelegramAdapterOptions): Promise<TelegramAdapter> {
  const { config, engine } = options;
  const logger = options.logger.child({ component: 'telegram' });
  const { bot, scrub } = createBot(config, options.botInfo);
  const failed = (what: string, error: unknown) => startError(what, error, scrub, apiAddress(config));
  // One byte of the callback data is kept for the in-place mark.
  const codec = engine.buttonCodec(TELEGRAM_LIMITS.callbackData - REPLACES_MARK.length);
  const images = options.images ?? new ChatImages({ logger });
  // The bot's username makes deep links from groups into its private chat (known once introduced).
  const outbox = new TelegramOutbox(bot.api, codec, logger, images, () =>
    bot.isInited() ? bot.botInfo.username : undefined,
  );
  const sink = new TelegramSink(
    outbox,
    options.groupIntervalMs === undefined ? {} : { groupIntervalMs: options.groupIntervalMs },
  );
  const people = new ChatPeople(bot.api, logger, scrub);
  const probe = new OutcomeProbe(engine);
  const updates = routeUpdates(
    bot,
    {
      message: (ctx) => answerMessage(ctx, { engine, outbox, people, username: () => bot.botInfo.username }),
      button: (ctx) => answerButton(ctx, { engine, probe, codec, outbox, people, logger, scrub }),
    },
    logger,
    scrub,
  );
  await introduce(bot, engine, { known: options.botInfo !== undefined, failed, logger, scrub });
  const receiving = config.webhookUrl
    ? await receiveByWebhook({
        bot,
        url: config.webhookUrl,
        secret: config.webhookSecret,
        port: config.webhookPort,
        host: options.webhookHost,
        failed,
        logger,
        scrub,
      })
    : await receiveByPolling({ bot, failed, logger, scrub });
  return {
    sink,
    bot,
    ...receiving,
    async stop() {
      await receiving.stop();
      await updates.drain();
      if (options.images === undefined) await images.close();
    },
  };
}

/**
 * Who the bot is (getMe, unless known) and its command menu. One getMe attempt, not grammy's
 * endless retries in init(): a wrong token or API root fails the start loudly. A menu that cannot
 * be set is only logged.
 */
async function introduce(
  bot: Bot,
  engine: CommandEngine,
  options: { known: boolean; failed: (what: string, error: unknown) => Error; logger: Logger; scrub: Scrub },
): Promise<void> {
  if (!options.known) {
    try {
      bot.botInfo = await bot.api.getMe();
    } catch (error) {
      throw options.failed('getMe', error);
    }
  }
  try {
    await bot.api.setMyCommands(menuOf(engine));
  } catch (error) {
    options.logger.warn({ err: describe(error, options.scrub) }, 'could not set the command menu');
  }
}
