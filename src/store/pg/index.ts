import type { Logger } from 'pino';
import type { LeaseLostError } from '../../core/lease.ts';
import { Database } from './database.ts';
import { DELIVERIES_CHANNEL, type DeliveryNotice, PgDeliveryLog } from './deliveries.ts';
import { Leases } from './leases.ts';
import { PgRulesRepository } from './rules.ts';

export { PgCursorStore } from './cursors.ts';
export { DatabaseError } from './database.ts';
export { DIGESTS_LEASE_KEY, Leadership, Leases } from './leases.ts';
export { PgMarketHistory } from './market-history.ts';
export { DELIVERIES_CHANNEL };

/** Everything a process needs of the shared database. */
export interface SharedDatabase {
  db: Database;
  rules: PgRulesRepository;
  deliveries: PgDeliveryLog;
  /** This process's leases (ingest, digests, chat claims); they fence its delivery writes. */
  leases: Leases;
  close(): Promise<void>;
}

/**
 * Connects, migrates, reads the chat settings (rules are read when asked for), and opens the
 * connection that takes and renews this process's leases.
 * `onLeaseLost` is called once if a lease is lost while the process runs (see leases.ts): it must stop.
 */
export async function openSharedDatabase(
  settings: { url: string; poolSize: number },
  logger: Logger,
  onLeaseLost: (error: LeaseLostError) => void,
): Promise<SharedDatabase> {
  const db = await Database.open(settings.url, {
    logger: logger.child({ component: 'database' }),
    poolSize: settings.poolSize,
  });
  try {
    const rules = await PgRulesRepository.open(db, { logger: logger.child({ component: 'rules' }) });
    let closing = false;
    const leases = await Leases.open(db, logger.child({ component: 'leases' }), (error) => {
      if (!closing) onLeaseLost(error);
    });
    const deliveries = new PgDeliveryLog(db, { logger: logger.child({ component: 'deliveries' }), fences: leases });
    return {
      db,
      rules,
      deliveries,
      leases,
      close: async () => {
        closing = true;
        await rules.flush();
        await deliveries.close();
        await leases.close();
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
