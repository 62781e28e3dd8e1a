import type { Logger } from 'pino';
import type { RulesRepository } from '../core/ports.ts';
import { type Destination, destinationKey } from '../core/types.ts';

/**
 * What the dispatcher calls when a chat cannot be posted to any more (the bot was removed, the chat
 * deleted): the chat's active watch rules are paused, so that its alerts stop until someone there
 * resumes them, and a warning says so.
 *
 * @example
 * new Dispatcher({ ..., onUnreachable: pauseRulesOfUnreachable(store, logger) });
 */
export function pauseRulesOfUnreachable(
  store: Pick<RulesRepository, 'rulesOf' | 'updateRule'>,
  logger: Logger,
): (destination: Destination, reason: string) => void {
  const pause = async (destination: Destination, reason: string) => {
    const key = destinationKey(destination);
    const rules = (await store.rulesOf(key)).filter((r) => !r.paused);
    for (const rule of rules) await store.updateRule(rule.id, (r) => ({ ...r, paused: true }));
    logger.warn(
      { destination: key, rules: rules.map((r) => r.id), reason },
      'destination unreachable: its rules are paused',
    );
  };
  return (destination, reason) => {
    pause(destination, reason).catch((error: unknown) =>
      logger.error({ destination: destinationKey(destination), err: error }, 'could not pause the rules of a chat'),
    );
  };
}
