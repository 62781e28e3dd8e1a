import { parentPort, workerData } from 'node:worker_threads';
import { type ChartFonts, renderSvgPng } from './chart.ts';

/** A chart to draw, sent by {@link ChartPool} to one of its worker threads. */
export interface ChartJob {
  id: number;
  svg: string;
}

/** The answer to a {@link ChartJob}: the PNG (its buffer transferred), or why resvg refused the SVG. */
export type ChartJobResult = { id: number; png: Uint8Array } | { id: number; error: string };

/** What the pool hands each worker when it starts it. */
export interface ChartWorkerData {
  fonts: ChartFonts;
}

const port = parentPort;
if (!port) throw new Error('chart-worker.ts runs in a worker thread started by ChartPool');
const { fonts }: ChartWorkerData = workerData;

port.on('message', (job: ChartJob) => {
  let png: Uint8Array<ArrayBuffer>;
  try {
    png = renderSvgPng(job.svg, fonts);
  } catch (error) {
    port.postMessage({
      id: job.id,
      error: error instanceof Error ? error.message : String(error),
    } satisfies ChartJobResult);
    return;
  }
  port.postMessage({ id: job.id, png } satisfies ChartJobResult, [png.buffer]);
});
