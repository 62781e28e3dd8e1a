import type { Bot } from 'grammy';
import type { Logger } from 'pino';
import { describe, type Scrub } from './bot.ts';
import { ALLOWED_UPDATES } from './updates.ts';
import type { Receiving } from './webhook.ts';

/**
 * Long polling: resolves once the first getUpdates is under way, fails the start if polling stops
 * before that (a wrong token, another poller), and logs it if polling stops later.
 */
export async function receiveByPolling(options: {
  bot: Bot;
  failed: (what: string, error: unknown) => Error;
  logger: Logger;
  scrub: Scrub;
}): Promise<Receiving> {
  const { bot, logger, scrub } = options;
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
      throw options.failed('long polling', error);
    },
  );
  await Promise.race([ready, stopped]);
  void stopped.catch((error: unknown) => {
    logger.error({ err: describe(error, scrub) }, 'telegram polling stopped');
  });
  logger.info({ bot: bot.botInfo.username }, 'telegram long polling');
  return {
    ready: () => bot.isRunning(),
    async stop() {
      if (bot.isRunning()) await bot.stop();
      await polling.catch(() => undefined);
    },
  };
}
