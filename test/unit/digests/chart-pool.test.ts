import { execFile } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { type ChartSeries, chartsInThread, findFontFiles, renderChartPng } from '../../../src/digests/chart.ts';
import { ChartPool, ChartRenderError, defaultChartThreads } from '../../../src/digests/chart-pool.ts';
import type { ChartPoint } from '../../../src/platform/types.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const CRASHING_WORKER = new URL('./crashing-chart-worker.ts', import.meta.url);

function series(seed: number, days = 7): ChartSeries[] {
  const points = (scale: number): ChartPoint[] =>
    Array.from({ length: days }, (_, i) => ({
      label: `2026-11-${String(10 + i).padStart(2, '0')}`,
      value: scale * (1 + ((seed * 7 + i * 13) % 11)),
    }));
  return [
    {
      name: 'Wallets that sent transactions',
      points: points(100),
      format: (v) => String(Math.round(v)),
      color: '#5aa9ff',
    },
    { name: 'Conversion rate', points: points(0.01), format: (v) => `${(v * 100).toFixed(1)}%`, color: '#f5a524' },
  ];
}

const pools: ChartPool[] = [];
function pool(...options: ConstructorParameters<typeof ChartPool>): ChartPool {
  const created = new ChartPool(...options);
  pools.push(created);
  return created;
}

afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});

describe('ChartPool', () => {
  it('GIVEN charts drawn in parallel in worker threads THEN each is byte for byte the one drawn on the main thread', async () => {
    const charts = pool({ size: 2 });
    const titles = Array.from({ length: 6 }, (_, i) => `Project activity, ${i + 1} days to 2026-11-2${i}`);
    const drawn = await Promise.all(titles.map((title, i) => charts.render(title, series(i, i + 1))));
    expect(charts.threads).toBe(2);
    titles.forEach((title, i) => {
      expect(Buffer.from(drawn[i] ?? []).equals(Buffer.from(renderChartPng(title, series(i, i + 1))))).toBe(true);
    });
    const inThread = await chartsInThread.render(titles[0] ?? '', series(0, 1));
    expect(Buffer.from(inThread).equals(Buffer.from(drawn[0] ?? []))).toBe(true);
  });

  it('GIVEN no size THEN it keeps a core for the event loop beyond two cores, uses both of two, and at least one thread', () => {
    expect(pool().size).toBe(defaultChartThreads(availableParallelism()));
    expect([1, 2, 3, 4, 8].map((cores) => defaultChartThreads(cores))).toEqual([1, 2, 2, 3, 7]);
    expect(pool({ size: 0 }).size).toBe(1);
  });

  it('GIVEN an SVG resvg refuses THEN that chart is rejected with the reason, and the next one is drawn', async () => {
    const charts = pool({ size: 1 });
    const [refused, next] = await Promise.allSettled([
      charts.renderSvg('<svg xmlns="http://www.w3.org/2000/svg" width="0" height="0"></svg>'),
      charts.render('After a refusal', series(2)),
    ]);
    expect(refused).toMatchObject({ status: 'rejected', reason: expect.any(ChartRenderError) });
    expect(refused).toMatchObject({ reason: { message: expect.stringMatching(/^the chart could not be drawn: /) } });
    expect(next).toEqual({ status: 'fulfilled', value: renderChartPng('After a refusal', series(2)) });
  });

  it('GIVEN a worker that dies while drawing THEN only its chart fails, and a new worker draws the rest', async () => {
    const charts = pool({ size: 1, workerUrl: CRASHING_WORKER });
    const titles = [
      'Before',
      'Project activity, 3 days to 2026-11-21',
      'Between',
      'Project activity, 4 days to 2026-11-21',
      'After',
    ];
    const outcomes = await Promise.allSettled(titles.map((title, i) => charts.render(title, series(i))));
    expect(outcomes).toEqual([
      { status: 'fulfilled', value: renderChartPng('Before', series(0)) },
      {
        status: 'rejected',
        reason: new ChartRenderError('the chart worker crashed: the render took the thread down'),
      },
      { status: 'fulfilled', value: renderChartPng('Between', series(2)) },
      { status: 'rejected', reason: new ChartRenderError('the chart worker exited (code 70)') },
      { status: 'fulfilled', value: renderChartPng('After', series(4)) },
    ]);
    expect(charts.threads).toBe(1);
  });

  it('GIVEN close() THEN the workers end, charts still waiting and later ones are rejected', async () => {
    const charts = pool({ size: 1 });
    await charts.render('Warm-up', series(1));
    expect(charts.threads).toBe(1);
    const atClose = Promise.allSettled([
      charts.render('Drawing at close', series(2)),
      charts.render('Waiting at close', series(3)),
    ]);
    await charts.close();
    expect(charts.threads).toBe(0);
    const closed = { status: 'rejected', reason: new ChartRenderError('the chart renderer closed') };
    expect(await atClose).toEqual([closed, closed]);
    await expect(charts.render('Too late', series(4))).rejects.toThrow('the chart renderer is closed');
    await charts.close();
  });

  it('GIVEN the bot runs under node --import tsx and never closes the pool THEN its idle worker does not keep the process alive', async () => {
    const script = fileURLToPath(new URL('./render-and-leave.ts', import.meta.url));
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', script], {
      cwd: ROOT,
      timeout: 15_000,
    });
    expect(stdout).toMatch(/^rendered \d{4,} bytes with 1 thread$/m);
  });
});

describe('chart fonts', () => {
  it('finds each font file by name under the font directories, or nothing if one is missing', () => {
    const fixtures = fileURLToPath(new URL('../../', import.meta.url));
    expect(findFontFiles(['chart-pool.test.ts'], ['/nonexistent-fonts', fixtures])).toEqual([
      fileURLToPath(import.meta.url),
    ]);
    expect(findFontFiles(['chart-pool.test.ts', 'no-such-font.ttf'], [fixtures])).toBeUndefined();
  });
});
