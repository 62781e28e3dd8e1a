/**
 * One process on files in its data directory: the state (lowdb), the delivery journal, the market
 * history, the verified wallets, the holder roles and the block cursors. The state's and the journal's writes are fenced
 * by the data directory's lease (the market history is only the bot's own record; the wallet file
 * relies on the lease being held). This process plays
 * every role: it ingests every network, sends to every chat, posts the digests.
 */
import { join } from 'node:path';
import type { Logger } from 'pino';
import { FileCompletenessStore } from '../store/files/completeness.ts';
import { FileCursorStore } from '../store/files/cursors.ts';
import { DeliveryJournal } from '../store/files/journal/journal.ts';
import type { DataDirLock } from '../store/files/lock.ts';
import { FileMarketHistory } from '../store/files/market-history.ts';
import { FileRoleStore } from '../store/files/roles.ts';
import { StateStore } from '../store/files/state.ts';
import { FileWalletStore } from '../store/files/wallets.ts';
import type { Deployment } from './deployment.ts';

export interface SingleOptions {
  dataDir: string;
  /** The data directory's lease: it fences every write to the files and every send. */
  lock: DataDirLock;
  logger: Logger;
}

/** Opens the files of the data directory (a file that cannot be read stops the start, untouched). */
export async function openSingle(options: SingleOptions): Promise<Deployment> {
  const { dataDir, lock, logger } = options;
  const fence = () => lock.check();
  const rules = await StateStore.open(join(dataDir, 'state.json'), {
    fence,
    logger: logger.child({ component: 'state' }),
  });
  const deliveries = await DeliveryJournal.open(join(dataDir, 'deliveries.jsonl'), {
    onCompactionError: (error) => logger.error({ err: error }, 'journal compaction failed'),
    fence,
  });
  const market = await FileMarketHistory.open(join(dataDir, 'market-history.jsonl'), {
    logger: logger.child({ component: 'market-history' }),
  });
  const wallets = await FileWalletStore.open(join(dataDir, 'wallets.jsonl'));
  const holderRoles = await FileRoleStore.open(join(dataDir, 'roles.jsonl'));
  const completeness = await FileCompletenessStore.open(join(dataDir, 'completeness.json'), {
    onWriteError: (error) => logger.warn({ err: error }, 'could not save the completeness counts'),
  });
  return {
    mode: 'single',
    where: dataDir,
    rules,
    deliveries,
    market,
    wallets,
    holderRoles,
    completeness,
    sendFence: lock,
    takesOverNetworks: false,
    cursors: (onWriteError) => FileCursorStore.open(join(dataDir, 'cursors.json'), { onWriteError }),
    roles: (dispatcher) => ({
      queue: dispatcher,
      ingests: () => true,
      postsDigests: () => true,
      start: () => dispatcher.resume(),
      startDigests: async () => {},
      checksHolderRoles: () => true,
      startHolderRoleChecks: async () => {},
      stop: async () => {},
    }),
    close: async () => {
      await completeness
        .flush()
        .catch((error: unknown) => logger.error({ err: error }, 'could not save the completeness counts'));
      await holderRoles.close();
      await wallets.close();
      await market.close();
      await deliveries.close();
      await rules.flush();
    },
  };
}
