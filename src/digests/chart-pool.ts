import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { type ChartFonts, type ChartRenderer, type ChartSeries, chartFonts, chartSvg } from './chart.ts';
import type { ChartJob, ChartJobResult, ChartWorkerData } from './chart-worker.ts';

/** A chart that could not be drawn: resvg refused it, its worker died, or the pool was closed. */
export class ChartRenderError extends Error {
  override readonly name = 'ChartRenderError';
}

export interface ChartPoolOptions {
  /** Worker threads at most; default {@link defaultChartThreads}. */
  size?: number;
  /**
   * The worker module, speaking chart-worker.ts's messages. Default: chart-worker.ts beside this
   * module; the built bot passes its compiled chart-worker.js (this module is then inside a bundle).
   */
  workerUrl?: URL;
  /** Default: {@link chartFonts}. */
  fonts?: ChartFonts;
}

interface Job extends ChartJob {
  resolve: (png: Uint8Array) => void;
  reject: (error: ChartRenderError) => void;
}

interface Slot {
  worker: Worker;
  job: Job | undefined;
}

/**
 * The bot runs TypeScript through tsx, but on Node 20 a worker's entry module does not go through
 * loader hooks that `--import tsx` registers, so the worker starts from this script, which imports
 * the worker module through tsx's API.
 */
function bootstrap(workerUrl: URL): string {
  const tsx = import.meta.resolve('tsx/esm/api');
  const url = JSON.stringify(workerUrl.href);
  return `import(${JSON.stringify(tsx)}).then((tsx) => tsx.tsImport(${url}, ${url}));`;
}

/**
 * The cores but one (for the event loop), and at least two where there are two: a digest run leaves
 * the event loop mostly idle (13-28% busy in bench/digests.ts), so on two cores both draw; with one
 * worker, 1,000 digests of four-panel charts took 48 s instead of 29 s.
 */
export function defaultChartThreads(cores = availableParallelism()): number {
  return Math.max(1, Math.min(cores, Math.max(2, cores - 1)));
}

/**
 * Renders charts in a few worker threads, so that a digest run leaves the event loop free for
 * commands and alerts. Workers start when charts are waiting and none is idle, and do not keep the
 * process alive while idle. A worker that dies fails only the chart it was drawing, and is replaced
 * when the next chart comes. `close()` (when the bot stops) ends the workers and fails the charts
 * still waiting.
 *
 * @example
 * const charts = new ChartPool();
 * const png = await charts.render('Project activity', series);
 * await charts.close();
 */
export class ChartPool implements ChartRenderer {
  readonly size: number;
  readonly #workerUrl: URL;
  readonly #fonts: ChartFonts;
  readonly #slots = new Set<Slot>();
  readonly #queue: Job[] = [];
  #nextId = 0;
  #closing: Promise<void> | undefined;

  constructor(options: ChartPoolOptions = {}) {
    this.size = Math.max(1, Math.floor(options.size ?? defaultChartThreads()));
    this.#workerUrl = options.workerUrl ?? new URL('./chart-worker.ts', import.meta.url);
    this.#fonts = options.fonts ?? chartFonts();
  }

  /** Worker threads running now. */
  get threads(): number {
    return this.#slots.size;
  }

  async render(title: string, series: readonly ChartSeries[]): Promise<Uint8Array> {
    return this.renderSvg(chartSvg(title, series));
  }

  /** Any SVG document as a PNG image. */
  renderSvg(svg: string): Promise<Uint8Array> {
    if (this.#closing) return Promise.reject(new ChartRenderError('the chart renderer is closed'));
    return new Promise((resolve, reject) => {
      this.#queue.push({ id: ++this.#nextId, svg, resolve, reject });
      this.#dispatch();
    });
  }

  /** Ends the workers. Charts not drawn yet are rejected; later ones too. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      for (const job of this.#queue.splice(0)) job.reject(new ChartRenderError('the chart renderer closed'));
      await Promise.all([...this.#slots].map((slot) => slot.worker.terminate()));
    })();
    return this.#closing;
  }

  #dispatch(): void {
    while (!this.#closing) {
      const job = this.#queue[0];
      if (!job) return;
      let slot = [...this.#slots].find((s) => s.job === undefined);
      if (!slot) {
        if (this.#slots.size >= this.size) return;
        slot = this.#spawn();
      }
      this.#queue.shift();
      slot.job = job;
      slot.worker.ref();
      slot.worker.postMessage({ id: job.id, svg: job.svg } satisfies ChartJob);
    }
  }

  #spawn(): Slot {
    const workerData = { fonts: this.#fonts } satisfies ChartWorkerData;
    // The built bot (dist/) runs JavaScript: its worker starts as it is.
    const worker = this.#workerUrl.pathname.endsWith('.js')
      ? new Worker(this.#workerUrl, { workerData })
      : new Worker(bootstrap(this.#workerUrl), { eval: true, workerData });
    const slot: Slot = { worker, job: undefined };
    worker.on('message', (result: ChartJobResult) => {
      if (slot.job?.id !== result.id) return;
      this.#settle(slot, 'png' in result ? result.png : `the chart could not be drawn: ${result.error}`);
    });
    worker.on('messageerror', (error) => this.#settle(slot, `the chart could not be read back: ${error.message}`));
    worker.on('error', (error) => this.#lost(slot, `the chart worker crashed: ${error.message}`));
    worker.on('exit', (code) =>
      this.#lost(slot, this.#closing ? 'the chart renderer closed' : `the chart worker exited (code ${code})`),
    );
    this.#slots.add(slot);
    return slot;
  }

  /** The worker answered: it is free for the next chart. */
  #settle(slot: Slot, outcome: Uint8Array | string): void {
    const job = slot.job;
    slot.job = undefined;
    slot.worker.unref();
    if (typeof outcome === 'string') job?.reject(new ChartRenderError(outcome));
    else job?.resolve(outcome);
    this.#dispatch();
  }

  #lost(slot: Slot, why: string): void {
    const job = slot.job;
    slot.job = undefined;
    job?.reject(new ChartRenderError(why));
    if (this.#slots.delete(slot)) this.#dispatch();
  }
}
