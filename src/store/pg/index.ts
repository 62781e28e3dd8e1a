import type { Logger } from 'pino';
import { Database } from './database.ts';
import { DELIVERIES_CHANNEL, type DeliveryNotice, PgDeliveryLog } from './deliveries.ts';
import { AdvisoryLocks } from './locks.ts';
import { PgRulesRepository } from './rules.ts';

export { PgCursorStore } from './cursors.ts';
export { DatabaseError } from './database.ts';
export { Leadership } from './locks.ts';
export { DELIVERIES_CHANNEL };

/** Everything a process needs of the shared database. */
export interface SharedDatabase {
  db: Database;
  rules: PgRulesRepository;
  deliveries: PgDeliveryLog;
  locks: AdvisoryLocks;
  close(): Promise<void>;
}

/**
 * Connects, migrates, reads the chat settings (rules are read when asked for), and takes the
 * connection for this process's locks.
 * `onLocksLost` is called once if that connection ends while the process runs: it must stop.
 */
export async function openSharedDatabase(
  settings: { url: string; poolSize: number },
  logger: Logger,
  onLocksLost: (error: Error) => void,
): Promise<SharedDatabase> {
  const db = await Database.open(settings.url, {
    logger: logger.child({ component: 'database' }),
    poolSize: settings.poolSize,
  });
  try {
    const rules = await PgRulesRepository.open(db, { logger: logger.child({ component: 'rules' }) });
    const deliveries = new PgDeliveryLog(db, { logger: logger.child({ component: 'deliveries' }) });
    let closing = false;
    const locks = await AdvisoryLocks.open(db, logger, (error) => {
      if (!closing) onLocksLost(error);
    });
    return {
      db,
      rules,
      deliveries,
      locks,
      close: async () => {
        closing = true;
        await rules.flush();
        await deliveries.close();
        await locks.close();
        await db.close();
      },
    };
  } catch (error) {
    await db.close().catch(() => {});
    throw error;
  }
}

/**
 * The chats named by a delivery notification of another process (nothing for a payload that is not
 * one, or for one of `ownOrigin`'s: a process acts on its own writes directly).
 */
export function chatsOf(payload: string, ownOrigin?: string): string[] {
  try {
    const notice = JSON.parse(payload) as Partial<DeliveryNotice>;
    if (ownOrigin !== undefined && notice.origin === ownOrigin) return [];
    return Array.isArray(notice.chats) ? notice.chats.filter((c): c is string => typeof c === 'string') : [];
  } catch {
    return [];
  }
}
