// A chart worker that takes its thread down on some charts, the way a failing native render or an
// out-of-memory would, and draws the others as the real one does. For ChartPool and digest tests.
import { parentPort, workerData } from 'node:worker_threads';
import { renderSvgPng } from '../../../src/digests/chart.ts';
import type { ChartJob, ChartJobResult, ChartWorkerData } from '../../../src/digests/chart-worker.ts';

const { fonts }: ChartWorkerData = workerData;
parentPort?.on('message', (job: ChartJob) => {
  // A digest of 3 days has this in its chart title.
  if (job.svg.includes('Project activity, 3 days')) throw new Error('the render took the thread down');
  if (job.svg.includes('Project activity, 4 days')) process.exit(70);
  const png = renderSvgPng(job.svg, fonts);
  parentPort?.postMessage({ id: job.id, png } satisfies ChartJobResult, [png.buffer]);
});
