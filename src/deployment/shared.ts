/**
 * Any number of processes on one PostgreSQL database: rules, settings, deliveries, cursors, the
 * market history and the verified wallets in its tables, changes heard through LISTEN/NOTIFY. Every role is a lease (store/pg/leases.ts): per network
 * one process ingests and records, each chat is sent to by the holder of its claim, one process posts
 * the digests; a write or a send checks the lease it is made under.
 */
import type { Logger } from 'pino';
import type { LeaseLostError } from '../core/lease.ts';
import { ChatClaims } from '../delivery/claims.ts';
import type { Dispatcher } from '../delivery/dispatcher.ts';
import { PgCompletenessStore } from '../store/pg/completeness.ts';
import {
  chatsOf,
  DELIVERIES_CHANNEL,
  DIGESTS_LEASE_KEY,
  Leadership,
  openSharedDatabase,
  PgCursorStore,
  PgMarketHistory,
  type SharedDatabase,
} from '../store/pg/index.ts';
import { PgRoleStore } from '../store/pg/roles.ts';
import { PgWalletStore } from '../store/pg/wallets.ts';
import type { Deployment, Roles } from './deployment.ts';

export interface SharedOptions {
  database: { url: string; poolSize: number };
  logger: Logger;
  /** Called once when a lease of this process is lost: it must stop at once. */
  onLeaseLost: (error: LeaseLostError) => void;
}

/** Connects, migrates and reads what processes share (see openSharedDatabase). */
export async function openShared(options: SharedOptions): Promise<Deployment> {
  const { logger } = options;
  const shared = await openSharedDatabase(options.database, logger, options.onLeaseLost);
  logger.info({ database: shared.db.where }, 'using the shared database');
  const market = await PgMarketHistory.open(shared.db, { logger: logger.child({ component: 'market-history' }) });
  const wallets = await PgWalletStore.open(shared.db, logger.child({ component: 'wallets' }));
  const holderRoles = await PgRoleStore.open(shared.db, logger.child({ component: 'roles' }));
  const completeness = new PgCompletenessStore(shared.db, {
    onWriteError: (error) => logger.warn({ err: error }, 'could not save the completeness counts'),
  });
  return {
    mode: 'shared',
    where: shared.db.where,
    rules: shared.rules,
    deliveries: shared.deliveries,
    market,
    wallets,
    holderRoles,
    completeness,
    sendFence: shared.leases,
    takesOverNetworks: true,
    cursors: async (onWriteError) => new PgCursorStore(shared.db, { onWriteError }),
    roles: (dispatcher, networks) => sharedRoles(shared, dispatcher, networks, logger),
    close: async () => {
      await completeness
        .flush()
        .catch((error: unknown) => logger.error({ err: error }, 'could not save the completeness counts'));
      await holderRoles.close();
      await wallets.close();
      await market.close();
      await shared.deliveries.close();
      await shared.rules.flush();
      await shared.close();
    },
  };
}

/**
 * The roles of a process on a shared database: the chat claims (a chat's deliveries are sent by the
 * holder of its claim, in order), the ingestion of each network and the digests, each to the holder
 * of its lease.
 */
function sharedRoles(
  shared: SharedDatabase,
  dispatcher: Dispatcher,
  networks: () => readonly string[],
  logger: Logger,
): Roles {
  const { db, leases, deliveries } = shared;
  const claims = new ChatClaims({
    leases,
    log: deliveries,
    dispatcher,
    logger: logger.child({ component: 'delivery' }),
  });
  const leadershipLogger = logger.child({ component: 'leadership' });
  let ingestChanged: () => void = () => undefined;
  let digestsAcquired: () => void = () => undefined;
  let holderRolesAcquired: () => void = () => undefined;
  const ingest = new Leadership({
    leases,
    space: 'ingest',
    keys: networks,
    onAcquired: () => ingestChanged(),
    logger: leadershipLogger,
  });
  const digests = new Leadership({
    leases,
    space: 'digests',
    keys: () => [DIGESTS_LEASE_KEY],
    onAcquired: () => digestsAcquired(),
    logger: leadershipLogger,
  });
  const holderRoleChecks = new Leadership({
    leases,
    space: 'roles',
    keys: () => [HOLDER_ROLES_LEASE_KEY],
    onAcquired: () => holderRolesAcquired(),
    logger: leadershipLogger,
  });
  return {
    queue: claims,
    ingests: (network) => ingest.leads(network),
    postsDigests: () => digests.leads(DIGESTS_LEASE_KEY),
    async start(onIngestChange) {
      ingestChanged = onIngestChange;
      await db.listen(DELIVERIES_CHANNEL, (payload) => claims.noticed(chatsOf(payload, deliveries.origin)));
      db.onResync(() => void claims.sweep());
      await ingest.start();
      await claims.start();
    },
    async startDigests(onAcquired) {
      digestsAcquired = onAcquired;
      await digests.start();
    },
    checksHolderRoles: () => holderRoleChecks.leads(HOLDER_ROLES_LEASE_KEY),
    async startHolderRoleChecks(onAcquired) {
      holderRolesAcquired = onAcquired;
      await holderRoleChecks.start();
    },
    async stop() {
      holderRoleChecks.stop();
      digests.stop();
      ingest.stop();
      claims.stop();
    },
  };
}

/** The one lease of the `roles` space: its holder runs the holder roles' full re-check and sweeps. */
const HOLDER_ROLES_LEASE_KEY = 'all';
