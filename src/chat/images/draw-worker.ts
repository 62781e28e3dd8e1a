/**
 * A drawing process of {@link DrawingPool} (drawing.ts): draws the untrusted SVGs it is sent over
 * IPC, one at a time, and watches its own memory while resvg works on libuv's thread pool. Over
 * its limit, or when the bot is gone, it kills itself: exiting normally would wait for a render in
 * progress to finish (libuv joins its threads at exit), which may take minutes.
 */

import type { DrawAnswer, DrawJob, DrawWorkerMessage } from './drawing.ts';
import { rasterizeSvg, SvgRenderError } from './svg.ts';

/** How often memory is checked while drawing: resvg was seen to grow ~400 MB/s at worst. */
const MEMORY_CHECK_MS = 20;

const send = (message: DrawWorkerMessage, then?: () => void) => {
  if (process.connected) process.send?.(message, undefined, {}, () => then?.());
  else then?.();
};
const die = () => process.kill(process.pid, 'SIGKILL');

if (!process.send) throw new Error('draw-worker.ts runs as a child process started by DrawingPool');
process.on('disconnect', die);
process.on('message', (job: DrawJob) => void draw(job));
send({ kind: 'ready' });

async function draw(job: DrawJob): Promise<void> {
  const watch = setInterval(() => {
    const rss = process.memoryUsage.rss();
    if (rss > job.memoryLimitBytes) {
      clearInterval(watch);
      send({ kind: 'memory', id: job.id, rss }, die);
    }
  }, MEMORY_CHECK_MS);
  let answer: DrawAnswer;
  try {
    const image = await rasterizeSvg(job.svg, job.options);
    answer = { kind: 'drawn', id: job.id, ...image };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    answer = { kind: 'refused', id: job.id, message, svg: error instanceof SvgRenderError };
  } finally {
    clearInterval(watch);
  }
  send(answer);
}
