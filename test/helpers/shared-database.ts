import { readFile, rm } from 'node:fs/promises';
import { afterAll, beforeAll } from 'vitest';
import { type Devnet, type DevnetCollectionInfo, startDevnet } from '../../src/devnet/index.ts';
import { collectionNamed, platformEnv } from './devnet-data.ts';
import { startTestPostgres, type TestPostgres } from './postgres.ts';
import { startTerminalBot, type TerminalBot } from './terminal-bot.ts';

/** What a suite of processes sharing one PostgreSQL works with (see {@link useSharedDatabase}). */
export interface SharedDatabaseSuite {
  readonly postgres: TestPostgres;
  readonly devnet: Devnet;
  /** The devnet's Moon Cats. */
  readonly cats: DevnetCollectionInfo;
  /** Starts a bot (src/main.ts, its terminal chat) on the database; the suite stops it at the end. */
  start(databaseUrl: string): Promise<TerminalBot>;
  /** Stops a bot now. */
  stop(run: TerminalBot): Promise<void>;
  /** Its log says it leads the ingestion. */
  leads(run: TerminalBot): Promise<boolean>;
}

/**
 * Registers the suite's hooks: a PostgreSQL of its own and a local platform before all tests; after
 * them, every bot started stopped, the platform and the database stopped and the data directories
 * removed. `env` adds to each bot's environment (the platform's addresses and the database are set).
 */
export function useSharedDatabase(env: (devnet: Devnet) => Record<string, string> = () => ({})): SharedDatabaseSuite {
  let postgres: TestPostgres | undefined;
  let devnet: Devnet | undefined;
  const dirs: string[] = [];
  const running = new Set<TerminalBot>();
  const ready = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the shared-database suite has not started');
    return value;
  };

  beforeAll(async () => {
    postgres = await startTestPostgres();
    devnet = await startDevnet({ scale: 'small', heartbeatIntervalMs: 1_000, blockIntervalMs: 0 });
  }, 120_000);

  afterAll(async () => {
    for (const run of running) await run.bot.stop();
    await devnet?.close();
    await postgres?.stop();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  return {
    get postgres() {
      return ready(postgres);
    },
    get devnet() {
      return ready(devnet);
    },
    get cats() {
      return collectionNamed(ready(devnet), 'Moon Cats');
    },
    async start(databaseUrl) {
      const platform = ready(devnet);
      const run = await startTerminalBot(
        { ...platformEnv(platform), FLOORWATCH_DATABASE_URL: databaseUrl, ...env(platform) },
        (dir) => dirs.push(dir),
      );
      running.add(run);
      return run;
    },
    async stop(run) {
      running.delete(run);
      await run.bot.stop();
    },
    leads: async (run) => (await readFile(run.log, 'utf8')).includes('now leads ingest'),
  };
}
