import type { Logger } from 'pino';
import type { LeaseLostError } from '../core/lease.ts';
import type { DataDirLock } from '../store/files/lock.ts';
import type { Deployment } from './deployment.ts';

export type { Deployment, Roles } from './deployment.ts';

/**
 * The deployment the configuration asks for: the shared database when FLOORWATCH_DATABASE_URL is set,
 * else the files of the data directory. Each is loaded only when used (the database driver and its
 * migrations cost start-up time).
 */
export async function openDeployment(
  config: { dataDir: string; database: { url: string; poolSize: number } | undefined },
  parts: { lock: DataDirLock; logger: Logger; onLeaseLost: (error: LeaseLostError) => void },
): Promise<Deployment> {
  const { dataDir, database } = config;
  if (database) {
    const { openShared } = await import('./shared.ts');
    return openShared({ database, ...parts });
  }
  const { openSingle } = await import('./single.ts');
  return openSingle({ dataDir, ...parts });
}
