import { type ChildProcess, fork } from 'node:child_process';
import { availableParallelism, tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { RasterImage, RasterizeOptions } from './svg.ts';

/** A drawing sent to a drawing process. */
export interface DrawJob {
  id: number;
  svg: string;
  options: RasterizeOptions;
  /** The process kills itself when its resident memory passes this. */
  memoryLimitBytes: number;
}

/** A drawing process's answer to a {@link DrawJob}. */
export type DrawAnswer =
  | ({ kind: 'drawn'; id: number } & RasterImage)
  | { kind: 'refused'; id: number; message: string; svg: boolean };

/** What a drawing process sends: ready for jobs, an answer, or that it is over its memory limit (and dying). */
export type DrawWorkerMessage = { kind: 'ready' } | DrawAnswer | { kind: 'memory'; id: number; rss: number };

/** Why a drawing failed: `refused` (the SVG itself), `limit` (time or memory), `crashed`, `closed`. */
export type DrawingFailure = 'refused' | 'limit' | 'crashed' | 'closed';

/** A drawing that failed; `reason` says whether the SVG itself is at fault. */
export class DrawingError extends Error {
  override readonly name = 'DrawingError';
  readonly reason: DrawingFailure;
  constructor(reason: DrawingFailure, message: string) {
    super(message);
    this.reason = reason;
  }
}

/** Defaults of {@link DrawingPoolOptions}. */
export const DRAWING_DEFAULTS = {
  /**
   * Resident memory of one drawing process. Idle, one takes 60-70 MB; drawing a 512-pixel token
   * image adds a few MB, and the inline rasters an SVG may carry at most 64 MB decoded.
   */
  memoryLimitBytes: 256 * 1024 * 1024,
  /** V8 heap of a drawing process (the SVG parsed and rebuilt; resvg's memory is outside it). */
  heapLimitMb: 96,
} as const;

/** Drawing processes: the cores but one, at least two (so that one heavy image does not hold up the others) and at most four. */
export function defaultDrawingProcesses(cores = availableParallelism()): number {
  return Math.min(4, Math.max(2, cores - 1));
}

export interface DrawingPoolOptions {
  /** Processes at most; default {@link defaultDrawingProcesses}. */
  size?: number;
  /**
   * The drawing process's module. Default: draw-worker.ts beside this module; the built bot passes
   * its compiled draw-worker.js (this module is then inside a bundle).
   */
  workerUrl?: URL;
  memoryLimitBytes?: number;
  heapLimitMb?: number;
  /**
   * Processes started at once rather than at the first drawing (default 0): starting one takes
   * 0.4-0.7 s from the build on a busy machine (seconds through tsx), time an image's limit would
   * otherwise pay for the first drawing.
   */
  warm?: number;
}

interface Job {
  id: number;
  svg: string;
  options: RasterizeOptions;
  signal: AbortSignal;
  resolve: (image: RasterImage) => void;
  reject: (error: DrawingError) => void;
  onAbort: () => void;
}

interface Slot {
  child: ChildProcess;
  ready: boolean;
  job: Job | undefined;
  /** Why the process is being ended, for the job it was drawing. */
  ending: DrawingError | undefined;
  /** The end of its standard error, for the message when it dies unasked. */
  stderr: string;
}

/**
 * Draws untrusted SVGs (svg.ts: sanitized, then drawn by resvg) in child processes that are killed
 * at their limits: a drawing still running when its signal aborts (the caller's deadline) ends
 * with its process (SIGKILL), and a process whose resident memory passes `memoryLimitBytes` kills
 * itself. resvg's memory is native, outside any V8 heap, so worker threads' `resourceLimits`
 * cannot bound it, and a worker thread cannot be stopped in the middle of a native call; a process
 * can. RLIMIT_AS is no help either: V8 reserves gigabytes of address space it never uses.
 *
 * Several processes draw at once, so one heavy image holds up one process, not the others; a job
 * waits in line for a free one and leaves the line when its signal aborts. Processes start when
 * needed, stay for the next drawing, and do not keep the bot alive while idle; one that dies is
 * replaced when the next drawing comes. They run with an empty environment (the bot's secrets stay
 * out of reach of what draws untrusted input) and die with the bot. `close()` kills them at once.
 *
 * @example
 * const pool = new DrawingPool();
 * const image = await pool.draw(svg, { size: 512 }, AbortSignal.timeout(4_000));
 * await pool.close();
 */
export class DrawingPool {
  readonly size: number;
  readonly #workerUrl: URL;
  readonly #memoryLimitBytes: number;
  readonly #heapLimitMb: number;
  readonly #slots = new Set<Slot>();
  readonly #queue: Job[] = [];
  #nextId = 0;
  #closed = false;

  constructor(options: DrawingPoolOptions = {}) {
    this.size = Math.max(1, Math.floor(options.size ?? defaultDrawingProcesses()));
    this.#workerUrl = options.workerUrl ?? new URL('./draw-worker.ts', import.meta.url);
    this.#memoryLimitBytes = options.memoryLimitBytes ?? DRAWING_DEFAULTS.memoryLimitBytes;
    this.#heapLimitMb = options.heapLimitMb ?? DRAWING_DEFAULTS.heapLimitMb;
    for (let i = 0; i < Math.min(this.size, options.warm ?? 0); i++) this.#spawn();
  }

  /** Drawing processes running now. */
  get processes(): number {
    return this.#slots.size;
  }

  /** Process ids of the drawing processes (for tests and diagnostics). */
  get pids(): number[] {
    return [...this.#slots].flatMap((slot) => (slot.child.pid === undefined ? [] : [slot.child.pid]));
  }

  /**
   * Draws an untrusted SVG. Rejects with a {@link DrawingError}: `refused` when the SVG is not
   * drawable, `limit` when `signal` aborted (before or while drawing) or the memory limit was
   * passed, `crashed` when its process died, `closed` after {@link close}.
   */
  draw(svg: string, options: RasterizeOptions, signal: AbortSignal): Promise<RasterImage> {
    if (this.#closed) return Promise.reject(new DrawingError('closed', 'the drawing pool is closed'));
    if (signal.aborted) return Promise.reject(timedOut(false));
    return new Promise((resolve, reject) => {
      const job: Job = {
        id: ++this.#nextId,
        svg,
        options,
        signal,
        resolve,
        reject,
        onAbort: () => this.#abort(job),
      };
      signal.addEventListener('abort', job.onAbort, { once: true });
      this.#queue.push(job);
      this.#dispatch();
    });
  }

  /** Kills the drawing processes; drawings in progress or waiting, and later ones, are rejected. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const job of this.#queue.splice(0)) this.#finish(job, new DrawingError('closed', 'the drawing pool closed'));
    const exits = [...this.#slots].map((slot) => {
      const exited = new Promise<void>((resolve) => {
        if (slot.child.exitCode !== null || slot.child.signalCode !== null) resolve();
        else slot.child.once('exit', () => resolve());
      });
      this.#end(slot, new DrawingError('closed', 'the drawing pool closed'));
      return exited;
    });
    await Promise.all(exits);
  }

  #dispatch(): void {
    while (!this.#closed) {
      const job = this.#queue[0];
      if (!job) return;
      const slot = [...this.#slots].find((s) => s.ready && s.job === undefined && s.ending === undefined);
      if (!slot) {
        const starting = [...this.#slots].filter((s) => !s.ready && s.ending === undefined).length;
        // Waiting jobs beyond the processes already starting need more processes, up to the size.
        if (this.#slots.size < this.size && this.#queue.length > starting) this.#spawn();
        return;
      }
      this.#queue.shift();
      slot.job = job;
      slot.child.ref();
      channelOf(slot.child)?.ref();
      slot.child.send({
        id: job.id,
        svg: job.svg,
        options: job.options,
        memoryLimitBytes: this.#memoryLimitBytes,
      } satisfies DrawJob);
    }
  }

  #spawn(): void {
    const entry = fileURLToPath(this.#workerUrl);
    // The built bot runs JavaScript; from the sources, the process loads TypeScript through tsx.
    const loader = entry.endsWith('.ts') ? ['--import', import.meta.resolve('tsx')] : [];
    const child = fork(entry, [], {
      execArgv: [...loader, `--max-old-space-size=${this.#heapLimitMb}`, '--max-semi-space-size=2'],
      env: {},
      cwd: tmpdir(),
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    const slot: Slot = { child, ready: false, job: undefined, ending: undefined, stderr: '' };
    this.#slots.add(slot);
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      slot.stderr = (slot.stderr + chunk).slice(-2_000);
    });
    child.on('message', (message: DrawWorkerMessage) => this.#message(slot, message));
    child.on('error', (error) =>
      this.#end(slot, new DrawingError('crashed', `the drawing process failed: ${error.message}`)),
    );
    child.on('exit', (code, signal) => this.#exited(slot, code, signal));
  }

  #message(slot: Slot, message: DrawWorkerMessage): void {
    if (message.kind === 'ready') {
      slot.ready = true;
      this.#idle(slot);
      return;
    }
    const job = slot.job;
    if (!job || job.id !== message.id) return;
    if (message.kind === 'memory') {
      const mb = Math.round(this.#memoryLimitBytes / 1024 / 1024);
      this.#end(slot, new DrawingError('limit', `drawing it took more than ${mb} MB`));
      return;
    }
    slot.job = undefined;
    if (message.kind === 'drawn') {
      this.#finish(job, undefined, { png: message.png, width: message.width, height: message.height });
    } else {
      this.#finish(job, new DrawingError(message.svg ? 'refused' : 'crashed', message.message));
    }
    this.#idle(slot);
  }

  /** A process that has nothing to draw does not keep the bot alive. */
  #idle(slot: Slot): void {
    slot.child.unref();
    channelOf(slot.child)?.unref();
    this.#dispatch();
  }

  #abort(job: Job): void {
    const queued = this.#queue.indexOf(job);
    if (queued >= 0) {
      this.#queue.splice(queued, 1);
      this.#finish(job, timedOut(false));
      return;
    }
    const slot = [...this.#slots].find((s) => s.job === job);
    if (slot) this.#end(slot, timedOut(true));
  }

  /** Kills a process; its job fails with `why` (at once: the exit may come later). */
  #end(slot: Slot, why: DrawingError): void {
    slot.ending ??= why;
    const job = slot.job;
    slot.job = undefined;
    if (job) this.#finish(job, why);
    if (slot.child.exitCode === null && slot.child.signalCode === null) slot.child.kill('SIGKILL');
    this.#slots.delete(slot);
    this.#dispatch();
  }

  #exited(slot: Slot, code: number | null, signal: NodeJS.Signals | null): void {
    if (!this.#slots.has(slot)) return;
    const detail = slot.stderr.trim().split('\n').at(-1);
    const how = signal ? `was killed (${signal})` : `exited (code ${code})`;
    const crash = new DrawingError('crashed', `the drawing process ${how}${detail ? `: ${detail}` : ''}`);
    // A process that dies before it is ready fails the first drawing in line, rather than being started again and again for it.
    const waiting = slot.ready ? undefined : this.#queue.shift();
    if (waiting) this.#finish(waiting, crash);
    this.#end(slot, crash);
  }

  #finish(job: Job, error: DrawingError | undefined, image?: RasterImage): void {
    job.signal.removeEventListener('abort', job.onAbort);
    if (error) job.reject(error);
    else if (image) job.resolve(image);
  }
}

function timedOut(drawing: boolean): DrawingError {
  return new DrawingError('limit', drawing ? 'timed out while drawing' : 'timed out waiting to be drawn');
}

/** The IPC channel of a child process (typed by Node as a Pipe, with ref and unref). */
function channelOf(child: ChildProcess): { ref(): void; unref(): void } | undefined {
  return (child as { channel?: { ref(): void; unref(): void } | null }).channel ?? undefined;
}
