import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, stat, utimes } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';

/** The lock file in the data directory. */
export const LOCK_FILE = 'floorwatch.lock';
/** How often the holder touches its lock, so that a lock left by another host can be told stale. */
export const LOCK_REFRESH_MS = 10_000;
/** A lock not touched for this long is stale, whoever wrote it. */
export const LOCK_STALE_MS = 60_000;
/** A lock file that cannot be read yet is left alone this long (its writer may be starting). */
const UNREADABLE_GRACE_MS = 2_000;

/** What the lock file says about its holder. */
export interface LockHolder {
  pid: number;
  host: string;
  startedAt: string;
  /** Random, so that a process can tell its own lock from one that replaced it. */
  token: string;
}

/**
 * The data directory cannot be used: another process holds it, or it cannot be created or
 * written. The bot must not start (exit 78, like a configuration error).
 */
export class DataDirError extends Error {
  override name = 'DataDirError';
  readonly dir: string;
  readonly holder: LockHolder | undefined;
  constructor(dir: string, problem: string, options?: { cause?: unknown; holder?: LockHolder }) {
    super(`data directory ${dir}: ${problem}`, options);
    this.dir = dir;
    this.holder = options?.holder;
  }
}

export interface DataDirLock {
  readonly file: string;
  /** Removes the lock when it is still this process's. */
  release(): Promise<void>;
}

export interface LockOptions {
  pid?: number;
  host?: string;
  now?: () => Date;
  refreshMs?: number;
  staleMs?: number;
  /** Whether a process of this host is alive (default: signal 0). */
  isAlive?: (pid: number) => boolean;
}

/**
 * Takes the data directory for this process: one process per directory, since two would overwrite
 * each other's state, send every alert twice and leave a journal the next start refuses.
 *
 * The lock is a file created exclusively, holding pid, host and start time, and touched every
 * {@link LOCK_REFRESH_MS}. A lock is taken over when it is stale: its pid is not alive on this host
 * (or is this process's own, left by an earlier run in a container), or it was not touched for
 * {@link LOCK_STALE_MS} (a holder on another host that is gone). Otherwise {@link DataDirError}
 * names the holder.
 *
 * @example
 * const lock = await lockDataDir('data');
 * // ... run ...
 * await lock.release();
 */
export async function lockDataDir(dir: string, options: LockOptions = {}): Promise<DataDirLock> {
  const file = join(dir, LOCK_FILE);
  const me: LockHolder = {
    pid: options.pid ?? process.pid,
    host: options.host ?? hostname(),
    startedAt: (options.now?.() ?? new Date()).toISOString(),
    token: randomBytes(8).toString('hex'),
  };
  const staleMs = options.staleMs ?? LOCK_STALE_MS;
  const isAlive = options.isAlive ?? processIsAlive;
  try {
    await mkdir(dir, { recursive: true });
  } catch (cause) {
    throw new DataDirError(dir, `cannot be created (${describe(cause)})`, { cause });
  }

  for (let attempt = 0; attempt < 5; attempt++) {
    if (await create(file, me, dir)) return hold(file, me, options.refreshMs ?? LOCK_REFRESH_MS);
    const found = await readHolder(file);
    if (!found) continue;
    const { holder, ageMs } = found;
    if (!holder && ageMs < UNREADABLE_GRACE_MS) {
      // Being written by a process that is starting right now.
      await new Promise((resolve) => setTimeout(resolve, UNREADABLE_GRACE_MS / 4));
      continue;
    }
    const stale =
      !holder || ageMs > staleMs || (holder.host === me.host && (holder.pid === me.pid || !isAlive(holder.pid)));
    if (holder && !stale) {
      throw new DataDirError(
        dir,
        `is in use by another Floorwatch (pid ${holder.pid} on ${holder.host}, since ${holder.startedAt}). ` +
          'Two processes on one data directory overwrite each other and send every alert twice: stop the other ' +
          `one, or give this one its own FLOORWATCH_DATA_DIR. If that process is gone, delete ${file}.`,
        { holder },
      );
    }
    // Moved aside rather than deleted, so that two processes taking over at once cannot both win:
    // only one rename of the stale file succeeds.
    const aside = `${file}.stale-${me.token}`;
    try {
      await rename(file, aside);
    } catch {
      continue;
    }
    const moved = await readHolder(aside);
    if (moved?.holder && holder && moved.holder.token !== holder.token) {
      // Another process's fresh lock was moved: put it back and let the next round decide.
      await rename(aside, file).catch(() => undefined);
    } else {
      await rm(aside, { force: true });
    }
  }
  throw new DataDirError(dir, `its lock ${file} keeps changing; is another Floorwatch starting?`);
}

async function create(file: string, me: LockHolder, dir: string): Promise<boolean> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(file, 'wx');
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw new DataDirError(dir, `is not writable (${describe(cause)})`, { cause });
  }
  try {
    await handle.writeFile(`${JSON.stringify(me)}\n`);
    await handle.sync();
  } catch (cause) {
    await handle.close().catch(() => undefined);
    await rm(file, { force: true });
    throw new DataDirError(dir, `is not writable (${describe(cause)})`, { cause });
  }
  await handle.close();
  return true;
}

/** The lock's holder (undefined when the file is cut short or not JSON) and how long ago it was touched. */
async function readHolder(file: string): Promise<{ holder: LockHolder | undefined; ageMs: number } | undefined> {
  let text: string;
  let ageMs: number;
  try {
    const [content, info] = await Promise.all([readFile(file, 'utf8'), stat(file)]);
    text = content;
    ageMs = Date.now() - info.mtimeMs;
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw cause;
  }
  try {
    const parsed = JSON.parse(text) as Partial<LockHolder>;
    if (typeof parsed.pid !== 'number' || typeof parsed.host !== 'string') return { holder: undefined, ageMs };
    const holder = {
      pid: parsed.pid,
      host: parsed.host,
      startedAt: String(parsed.startedAt ?? '?'),
      token: String(parsed.token ?? ''),
    };
    return { holder, ageMs };
  } catch {
    return { holder: undefined, ageMs };
  }
}

function hold(file: string, me: LockHolder, refreshMs: number): DataDirLock {
  const timer = setInterval(() => {
    const now = new Date();
    utimes(file, now, now).catch(() => undefined);
  }, refreshMs);
  timer.unref();
  let released = false;
  return {
    file,
    async release() {
      if (released) return;
      released = true;
      clearInterval(timer);
      const found = await readHolder(file).catch(() => undefined);
      if (found?.holder?.token === me.token) await rm(file, { force: true });
    },
  };
}

function processIsAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function describe(cause: unknown): string {
  const code = (cause as { code?: unknown } | null)?.code;
  const message = cause instanceof Error ? cause.message : String(cause);
  return typeof code === 'string' && !message.startsWith(code) ? `${code}: ${message}` : message;
}
