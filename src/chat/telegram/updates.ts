import type { Bot, Context } from 'grammy';
import type { Logger } from 'pino';
import { describe, type Scrub } from './bot.ts';

/** The bot's handlers of the updates it asks for (`allowed_updates`). */
export interface UpdateHandlers {
  /** A text message in a chat, or a text post in a channel. */
  message: (ctx: Context) => Promise<void>;
  button: (ctx: Context) => Promise<void>;
  /** A request to join a gated group (holder roles). */
  joinRequest: (ctx: Context) => Promise<void>;
}

/**
 * The updates the bot asks Telegram for, polling or by webhook: messages in chats and groups (forum
 * topics included), posts in channels where the bot is an administrator, button presses, and
 * requests to join a gated group (holder roles). An edited post is not asked for: an edited command
 * is not run again.
 */
export const ALLOWED_UPDATES = ['message', 'channel_post', 'callback_query', 'chat_join_request'] as const;

/**
 * Routes text messages, button presses and join requests to their handlers. Each runs in the background (a slow
 * command holds up neither the poller nor the webhook's answer), tracked so that `drain` waits for
 * those still running; a failure is logged without the token.
 */
export function routeUpdates(
  bot: Bot,
  handlers: UpdateHandlers,
  logger: Logger,
  scrub: Scrub,
): { drain: () => Promise<void> } {
  const inflight = new Set<Promise<void>>();
  const track = (task: Promise<void>) => {
    const running = task.catch((error: unknown) => {
      logger.error({ err: describe(error, scrub) }, 'telegram update failed');
    });
    inflight.add(running);
    void running.finally(() => inflight.delete(running));
  };
  bot.on(['message:text', 'channel_post:text'], (ctx) => {
    track(handlers.message(ctx));
  });
  bot.on('callback_query:data', (ctx) => {
    track(handlers.button(ctx));
  });
  bot.on('chat_join_request', (ctx) => {
    track(handlers.joinRequest(ctx));
  });
  bot.catch((error) => {
    logger.error({ update: error.ctx.update.update_id, err: describe(error.error, scrub) }, 'telegram handler failed');
  });
  return {
    async drain() {
      while (inflight.size) await Promise.allSettled([...inflight]);
    },
  };
}
