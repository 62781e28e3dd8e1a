import { randomBytes } from 'node:crypto';
import { type FileHandle, mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import {
  LEASE_MARGIN_MS,
  LEASE_RENEW_MS,
  LEASE_TTL_MS,
  LeaseLostError,
  type SendFence,
  type WriteFence,
} from '../../core/lease.ts';

/** The lock file in the data directory. */
export const LOCK_FILE = 'floorwatch.lock';
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

/** The data directory, held as a lease; also the fence of this process's writes and sends in it. */
export interface DataDirLock extends SendFence {
  readonly file: string;
  /** Random, written in the lock file: a lock file with another token is another process's. */
  readonly token: string;
  /**
   * Asked before each write to the directory and each send (a {@link WriteFence}): undefined when
   * the lease was renewed in time (a synchronous look at the monotonic and wall clocks). When it was
   * not (the process was paused or stalled), a promise that takes it again under the takeover
   * protocol: resolved once the lock file still holds this process's token and was renewed, rejected
   * with {@link LeaseLostError} when another process took the directory over. Throws
   * {@link LeaseLostError} once the lease is lost.
   */
  check: WriteFence;
  /** Removes the lock when it is still this process's. */
  release(): Promise<void>;
}

export interface LockOptions {
  pid?: number;
  host?: string;
  now?: () => Date;
  /** How often the holder renews its lease (default {@link LEASE_RENEW_MS}). */
  renewMs?: number;
  /** A lease not renewed for this long may be taken over (default {@link LEASE_TTL_MS}). */
  ttlMs?: number;
  /** The holder counts its lease valid until this long before it may be taken (default {@link LEASE_MARGIN_MS}). */
  marginMs?: number;
  /** Whether a process of this host is alive (default: signal 0). */
  isAlive?: (pid: number) => boolean;
  /**
   * Called once when the lease is lost (see {@link DataDirLock.check}): the process must stop at once,
   * without writing to the directory again.
   */
  onLost?: (error: LeaseLostError) => void;
  /**
   * Called when a lease that had gone unrenewed past its validity (the process was paused or stalled)
   * was taken again, nobody having taken it meanwhile; with how long it had gone unrenewed.
   */
  onRetaken?: (unrenewedMs: number) => void;
}

/**
 * Takes the data directory for this process: one process per directory, since two would overwrite
 * each other's state, send every alert twice and leave a journal the next start refuses.
 *
 * The lock is a lease: a file created exclusively, holding pid, host, start time and a random token,
 * renewed (its modification time touched, after checking the token is still this process's) every
 * {@link LEASE_RENEW_MS}. It is taken over when its pid is not alive on this host (or is this
 * process's own, left by an earlier run in a container), or when it was not renewed for
 * {@link LEASE_TTL_MS}: a holder that is frozen (SIGSTOP), stalled, or on another host and gone.
 * Otherwise {@link DataDirError} names the holder.
 *
 * The holder counts its lease valid only until {@link LEASE_MARGIN_MS} before another process could
 * take it (measured on the monotonic clock and on the wall clock, whichever ran more), and checks
 * that before each write and send ({@link DataDirLock.check}). A lease past that time (the process
 * was paused: Ctrl-Z, a laptop asleep) is taken again before anything is written or sent: renewed
 * only when the lock file still holds this process's token, the same protocol as every renewal. A
 * renewal that finds the token changed or the file gone loses the lease: `onLost` is called and the
 * process must stop.
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
  const ttlMs = options.ttlMs ?? LEASE_TTL_MS;
  const isAlive = options.isAlive ?? processIsAlive;
  try {
    await mkdir(dir, { recursive: true });
  } catch (cause) {
    throw new DataDirError(dir, `cannot be created (${describe(cause)})`, { cause });
  }

  const isStale = ({ holder, ageMs }: { holder: LockHolder | undefined; ageMs: number }) =>
    !holder || ageMs > ttlMs || (holder.host === me.host && (holder.pid === me.pid || !isAlive(holder.pid)));
  for (let attempt = 0; attempt < 5; attempt++) {
    const started = clocks();
    const handle = await create(file, me, dir);
    if (handle) {
      return hold(dir, file, me, handle, started, {
        renewMs: options.renewMs ?? LEASE_RENEW_MS,
        validMs: ttlMs - (options.marginMs ?? LEASE_MARGIN_MS),
        onLost: options.onLost,
        onRetaken: options.onRetaken,
      });
    }
    const found = await readHolder(file);
    if (!found) continue;
    const { holder, ageMs } = found;
    if (!holder && ageMs < UNREADABLE_GRACE_MS) {
      // Being written by a process that is starting right now.
      await new Promise((resolve) => setTimeout(resolve, UNREADABLE_GRACE_MS / 4));
      continue;
    }
    if (holder && !isStale(found)) {
      throw new DataDirError(
        dir,
        `is in use by another Floorwatch (pid ${holder.pid} on ${holder.host}, since ${holder.startedAt}). ` +
          'Two processes on one data directory overwrite each other and send every alert twice: stop the other ' +
          `one, or give this one its own FLOORWATCH_DATA_DIR. If that process is gone, delete ${file}.`,
        { holder },
      );
    }
    // Moved aside rather than deleted, so that two processes taking over at once cannot both win:
    // only one rename of the stale file succeeds. Judged again once moved (a holder renews through its
    // open file, wherever it is now): a holder that renewed after the first look keeps its lease.
    const aside = `${file}.stale-${me.token}`;
    try {
      await rename(file, aside);
    } catch {
      continue;
    }
    const moved = await readHolder(aside);
    if (moved && (moved.holder?.token !== holder?.token || !isStale(moved))) {
      // Another process's lock, or one renewed meanwhile, was moved: put it back, the next round decides.
      await rename(aside, file).catch(() => undefined);
    } else {
      await rm(aside, { force: true });
    }
  }
  throw new DataDirError(dir, `its lock ${file} keeps changing; is another Floorwatch starting?`);
}

/** Creates the lock file with this process's holder; its handle stays open to renew the lease. */
async function create(file: string, me: LockHolder, dir: string): Promise<FileHandle | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(file, 'wx');
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'EEXIST') return undefined;
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
  return handle;
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

/** Both clocks: the monotonic one does not jump, the wall clock is the one other processes judge by. */
interface Clocks {
  mono: number;
  wall: number;
}

function clocks(): Clocks {
  return { mono: performance.now(), wall: Date.now() };
}

function hold(
  dir: string,
  file: string,
  me: LockHolder,
  handle: FileHandle,
  acquired: Clocks,
  options: {
    renewMs: number;
    validMs: number;
    onLost: ((error: LeaseLostError) => void) | undefined;
    onRetaken: ((unrenewedMs: number) => void) | undefined;
  },
): DataDirLock {
  const what = `the data directory ${dir}`;
  // Another process judges the lease by the file's modification time on the wall clock; this one
  // counts both clocks, so that neither a pause nor a jump of the wall clock gives it more time.
  const validFor = options.validMs;
  let renewed = acquired;
  let lost: LeaseLostError | undefined;
  let released = false;
  const lose = (reason: string): LeaseLostError => {
    if (lost) return lost;
    lost = new LeaseLostError(what, reason);
    clearInterval(timer);
    options.onLost?.(lost);
    return lost;
  };
  const sinceRenewed = () => {
    const now = clocks();
    return Math.max(now.mono - renewed.mono, now.wall - renewed.wall);
  };
  /** Throws when the lock file is no longer this process's. */
  const stillMine = async () => {
    const found = await readHolder(file);
    if (lost || released) return false;
    if (!found) throw lose(`its lock file ${file} was removed`);
    if (found.holder?.token !== me.token) {
      const by = found.holder ? ` (pid ${found.holder.pid} on ${found.holder.host})` : '';
      throw lose(`another process took the directory over${by}`);
    }
    return true;
  };
  let renewing: Promise<boolean> | undefined;
  // The file is touched through its open handle (the holder's own file, wherever a taker moved it),
  // between two reads that find this process's token: a taker that moved it after the first read is
  // seen by the second, and one that moves it later finds it renewed and puts it back. The lease then
  // runs from before the first read (`started`), at the latest the time written. Whether the lease
  // was late does not matter: a lock file that still holds this token was taken by nobody.
  const renewOnce = (): Promise<boolean> => {
    renewing ??= (async () => {
      const started = clocks();
      try {
        if (!(await stillMine())) return false;
        const now = new Date(started.wall);
        await handle.utimes(now, now);
        if (!(await stillMine())) return false;
        renewed = started;
        return true;
      } catch {
        // Lost (stillMine said so), or an I/O error: tried again at the next turn.
        return false;
      } finally {
        renewing = undefined;
      }
    })();
    return renewing;
  };
  let retaking: Promise<void> | undefined;
  /** Renews a late lease, and settles once it is valid again (or lost). */
  const retake = (): Promise<void> => {
    retaking ??= (async () => {
      const unrenewedMs = sinceRenewed();
      try {
        // A renewal that started before the pause counts from then: one more is needed.
        while (sinceRenewed() >= validFor) {
          if (lost) throw lost;
          if (released) throw new LeaseLostError(what, 'this process gave it back');
          if (!(await renewOnce()) && !lost) await sleep(options.renewMs);
        }
        if (lost) throw lost;
        options.onRetaken?.(unrenewedMs);
      } finally {
        retaking = undefined;
      }
    })();
    return retaking;
  };
  const check = (): Promise<void> | undefined => {
    if (lost) throw lost;
    return sinceRenewed() < validFor ? undefined : retake();
  };
  const timer = setInterval(() => {
    if (lost || released) return;
    // Late: the process was paused or stalled. Its writes and sends wait for this.
    if (sinceRenewed() >= validFor) void retake().catch(() => undefined);
    else void renewOnce();
  }, options.renewMs);
  timer.unref();
  return {
    file,
    token: me.token,
    check,
    assertMaySend: () => check(),
    async release() {
      if (released) return;
      released = true;
      clearInterval(timer);
      await handle.close().catch(() => undefined);
      if (lost) return;
      const found = await readHolder(file).catch(() => undefined);
      if (found?.holder?.token === me.token) await rm(file, { force: true });
    },
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
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
