// Token images: the local platform's SVGs drawn as the bot draws them (sanitized, in the drawing
// processes of a DrawingPool) against drawing them unsanitized on this process's thread pool, as the
// bot did before; then the hostile images of the local platform (hostileImages), each with its
// outcome, time and the drawing process's peak resident memory (sampled every 10 ms from /proc).
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { crc32, deflateSync } from 'node:zlib';
import { renderAsync } from '@resvg/resvg-js';
import { DrawingPool } from '../src/chat/images/drawing.ts';
import { sanitizeSvg, tokenImageFonts } from '../src/chat/images/svg.ts';
import { HOSTILE_IMAGES } from '../src/devnet/hostile.ts';
import { startDevnet } from '../src/devnet/index.ts';
import { encodePngAsync } from '../src/png.ts';

const IMAGES = 200;
const SIZE = 512;

const devnet = await startDevnet({ scale: 'small' });
const svgs: string[] = [];
for (const collection of devnet.collections.devnet ?? []) {
  if (collection.hostile) continue;
  for (let id = 1; id <= 40 && svgs.length < IMAGES; id++) {
    const response = await fetch(`${devnet.url}/assets/devnet/${collection.address}/${id}.svg`);
    if (response.ok) svgs.push(await response.text());
  }
}
await devnet.close();

const quantile = (values: number[], q: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))] ?? 0;
const figures = (label: string, times: number[], wallMs: number) =>
  console.log(
    `${label}: ${times.length} images in ${Math.round(wallMs)} ms (${Math.round((times.length * 1000) / wallMs)}/s); per image p50 ${quantile(times, 0.5).toFixed(1)} ms, p95 ${quantile(times, 0.95).toFixed(1)} ms`,
  );

const fonts = tokenImageFonts();
const fitTo = { mode: 'width' as const, value: SIZE };

// Before: unsanitized, on this process's libuv thread pool, one at a time (as ChatImages did).
{
  const times: number[] = [];
  const started = performance.now();
  for (const svg of svgs) {
    const t = performance.now();
    const image = await renderAsync(svg, { fitTo, font: fonts, background: '#ffffff', logLevel: 'off' });
    await encodePngAsync({ width: image.width, height: image.height, pixels: image.pixels, premultiplied: true });
    times.push(performance.now() - t);
  }
  figures('before (in process, unsanitized, one at a time)', times, performance.now() - started);
}

{
  const times = svgs.map((svg) => {
    const t = performance.now();
    sanitizeSvg(svg);
    return performance.now() - t;
  });
  console.log(
    `sanitizing alone: p50 ${quantile(times, 0.5).toFixed(2)} ms, p95 ${quantile(times, 0.95).toFixed(2)} ms per image`,
  );
}

const pool = new DrawingPool();
try {
  const warm = performance.now();
  await Promise.all(
    Array.from({ length: pool.size }, () => pool.draw(svgs[0] ?? '', { size: SIZE }, AbortSignal.timeout(30_000))),
  );
  console.log(`${pool.size} drawing processes started and warm in ${Math.round(performance.now() - warm)} ms`);
  for (const concurrency of [1, pool.size]) {
    const times: number[] = [];
    const started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < svgs.length) {
          const svg = svgs[next++] ?? '';
          const t = performance.now();
          await pool.draw(svg, { size: SIZE }, AbortSignal.timeout(30_000));
          times.push(performance.now() - t);
        }
      }),
    );
    figures(`after (sanitized, drawing processes, ${concurrency} at a time)`, times, performance.now() - started);
  }

  const huge = `<svg xmlns="http://www.w3.org/2000/svg" width="512" height="512"><image href="data:image/png;base64,${hugePng()}" width="512" height="512"/></svg>`;
  const hostile: Array<[string, string]> = [
    ...Object.entries(HOSTILE_IMAGES).map(([name, make]): [string, string] => [name, make()]),
    ['20000×20000 inline PNG', huge],
  ];
  for (const [name, svg] of hostile) {
    let peak = 0;
    const sampler = setInterval(() => {
      for (const pid of pool.pids) peak = Math.max(peak, residentKb(pid));
    }, 10);
    const started = performance.now();
    let outcome: string;
    try {
      const image = await pool.draw(svg, { size: SIZE }, AbortSignal.timeout(4_000));
      outcome = `drawn ${image.width}×${image.height}`;
    } catch (error) {
      outcome = error instanceof Error ? error.message : String(error);
    }
    clearInterval(sampler);
    console.log(
      `hostile ${name} (${Math.round(svg.length / 1024)} kB): ${outcome} after ${Math.round(performance.now() - started)} ms; drawing process peak RSS ${Math.round(peak / 1024)} MB`,
    );
  }
} finally {
  await pool.close();
}

/** A 20000×20000 black PNG, base64 (the deflated rows of zeros, made once). */
function hugePng(): string {
  const chunk = (type: string, data: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body) >>> 0);
    return Buffer.concat([length, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(20_000, 0);
  header.writeUInt32BE(20_000, 4);
  header[8] = 8;
  const rows = deflateSync(Buffer.alloc(20_001 * 20_000), { level: 9 });
  return Buffer.concat([
    Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]),
    chunk('IHDR', header),
    chunk('IDAT', rows),
    chunk('IEND', Buffer.alloc(0)),
  ]).toString('base64');
}

function residentKb(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const line = status.split('\n').find((l) => l.startsWith('VmRSS:'));
    return Number(line?.split(/\s+/)[1] ?? 0);
  } catch {
    return 0;
  }
}
