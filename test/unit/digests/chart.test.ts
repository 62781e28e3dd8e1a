import { describe, expect, it } from 'vitest';
import { type ChartSeries, chartSvg, renderSvgPng, valueScale } from '../../../src/digests/chart.ts';
import { overlappingTexts, svgTexts } from '../../helpers/svg-text.ts';

const DAYS = ['2026-11-25', '2026-11-26', '2026-11-27'];
const usd = (v: number) => (v > 0 ? `$${v.toFixed(2)}` : '$0');
const count = (v: number) => String(Math.round(v));

/** The texts of the value axis (right-aligned labels left of the plot). */
function axisLabels(svg: string): string[] {
  return [...svg.matchAll(/text-anchor="end">([^<]*)<\/text>/g)].map((m) => m[1] ?? '');
}

function floorPanel(points: ChartSeries['points'], axis?: readonly string[]): ChartSeries {
  return {
    name: 'Floor (USD)',
    points: [],
    color: '#f2f4f8',
    format: usd,
    lines: [{ name: 'Moon Cats', points, color: '#7ee0a1' }],
    ...(axis ? { axis } : {}),
  };
}

describe('digest chart panels', () => {
  it('GIVEN a line of one point THEN it is drawn as a marker with its value, at its day on the period axis, over a scale from $0 past it', () => {
    const svg = chartSvg('t', [floorPanel([{ label: '2026-11-27', value: 133.67 }], DAYS)]);
    // The last of three days is the right edge of the plot (960 wide, 24 margin).
    expect(svg).toContain('<circle cx="936.0"');
    expect(svg).toContain('r="6"');
    expect(svg).toContain('>$133.67</text>');
    const labels = axisLabels(svg).filter((l) => l.startsWith('$'));
    expect(labels[0]).toBe('$0');
    expect(new Set(labels).size).toBe(labels.length);
    expect(Number(labels.at(-1)?.slice(1))).toBeGreaterThanOrEqual(133.67);
    expect(svg).not.toContain('no data');
  });

  it('GIVEN a panel without any point THEN it says "no data" and draws no value labels that would read as $0.00', () => {
    const svg = chartSvg('t', [floorPanel([], DAYS)]);
    expect(svg).toContain('>no data</text>');
    expect(axisLabels(svg).filter((l) => l.startsWith('$'))).toEqual([]);
  });

  it('GIVEN panels over the same days, one knowing a single day THEN they share one axis and its day labels are drawn once, at the bottom', () => {
    const volume: ChartSeries = {
      name: 'Sales volume (USD)',
      points: [],
      color: '#f2f4f8',
      format: usd,
      lines: [{ name: 'Moon Cats', points: DAYS.map((label) => ({ label, value: 0 })), color: '#7ee0a1' }],
      axis: DAYS,
    };
    const wallets: ChartSeries = {
      name: 'Wallets',
      points: DAYS.map((label, i) => ({ label, value: 40 + i })),
      format: count,
      color: '#5aa9ff',
      axis: DAYS,
    };
    const svg = chartSvg('t', [floorPanel([{ label: '2026-11-27', value: 120 }], DAYS), volume, wallets]);
    for (const day of DAYS) expect(svg.split(`>${day.slice(5)}</text>`)).toHaveLength(2);
    // The floor panel's scale starts at $0; the all-zero volume panel has that one label only.
    expect(axisLabels(svg).filter((l) => l === '$0')).toHaveLength(2);
  });

  it('GIVEN lines that start after the first day or leave a day out THEN nothing is drawn for the days without a point, and no segment crosses a gap', () => {
    const WEEK = ['2026-11-21', '2026-11-22', '2026-11-23', '2026-11-24', '2026-11-25'];
    const slotX = (i: number) => (72 + (i / (WEEK.length - 1)) * (960 - 72 - 24)).toFixed(1);
    const volume: ChartSeries = {
      name: 'Sales volume (USD)',
      points: [],
      color: '#f2f4f8',
      format: usd,
      lines: [
        // Recorded from the third day on.
        { name: 'Moon Cats', points: WEEK.slice(2).map((label) => ({ label, value: 10 })), color: '#7ee0a1' },
        // The second and fourth days missing.
        {
          name: 'Glitch Gardens',
          points: [0, 2, 4].map((i) => ({ label: WEEK[i] as string, value: 20 })),
          color: '#ff8fa3',
        },
      ],
      axis: WEEK,
    };
    const svg = chartSvg('t', [volume]);
    const strokes = [...svg.matchAll(/<path d="([^"]*)" fill="none"/g)].map((m) => m[1] ?? '');
    // One line for Moon Cats from the third day to the fifth; Glitch Gardens' points are all cut apart.
    expect(strokes).toHaveLength(1);
    expect(strokes[0]?.startsWith(`M${slotX(2)},`)).toBe(true);
    expect(strokes[0]?.split('L')).toHaveLength(3);
    const circles = [...svg.matchAll(/<circle cx="([\d.]+)"[^>]*fill="#7ee0a1"/g)].map((m) => m[1]);
    expect(circles).toEqual([slotX(2), slotX(3), slotX(4)]);
    const gardens = [...svg.matchAll(/<circle cx="([\d.]+)"[^>]*fill="#ff8fa3"/g)].map((m) => m[1]);
    expect(gardens).toEqual([slotX(0), slotX(2), slotX(4)]);
  });

  it('GIVEN points whose labels are not in the given axis THEN the panel keeps its own labels', () => {
    const svg = chartSvg('t', [
      {
        name: 'Wallets',
        points: [
          { label: 'week 47', value: 3 },
          { label: 'week 48', value: 5 },
        ],
        format: count,
        color: '#5aa9ff',
        axis: DAYS,
      },
    ]);
    expect(svg).toContain('>week 47</text>');
    expect(svg).not.toContain('>11-25</text>');
  });

  it('GIVEN a lone floor at the top of its scale on the last day, under the legend THEN its value is drawn clear of the legend, and the PNG draws', () => {
    // $100 is the top of the scale (0, 50, 100): written above its marker, it sat on the legend's row.
    const svg = chartSvg('t', [floorPanel([{ label: '2026-11-27', value: 100 }], DAYS)]);
    const texts = svgTexts(svg);
    const value = texts.find((t) => t.text === '$100.00');
    const legend = texts.find((t) => t.text === '● Moon Cats');
    expect(value && legend).toBeTruthy();
    expect(overlappingTexts(svg)).toEqual([]);
    const png = Buffer.from(renderSvgPng(svg));
    expect(png.subarray(1, 4).toString()).toBe('PNG');
  });

  it('GIVEN two collections known by one floor each, side by side at the top, with long names THEN no value, legend entry or panel name is drawn over another', () => {
    const names = [
      'Moon Cats Deluxe Edition',
      'WWWWWWWWWWWWWWWWWWWWWWWW',
      'Glitch Gardens',
      'MMMMMMMMMMMMMMMMMMMMMMMM',
      'Harbor Gulls',
    ];
    const colors = ['#7ee0a1', '#ff8fa3', '#c3a6ff', '#ffd166', '#64d2ff'];
    const svg = chartSvg('t', [
      {
        name: 'Sales volume (USD)',
        points: [],
        color: '#f2f4f8',
        format: usd,
        lines: names.map((name, i) => ({
          name,
          color: colors[i] as string,
          points: [{ label: '2026-11-27', value: [100, 98, 97, 99, 60][i] as number }],
        })),
        axis: DAYS,
      },
    ]);
    expect(overlappingTexts(svg)).toEqual([]);
    // Every entry of the legend and every value is drawn.
    const texts = svgTexts(svg).map((t) => t.text);
    for (const name of names) expect(texts).toContain(`● ${name}`);
    for (const v of ['$100.00', '$98.00', '$97.00', '$99.00', '$60.00']) expect(texts).toContain(v);
    expect(Buffer.from(renderSvgPng(svg)).subarray(1, 4).toString()).toBe('PNG');
  });

  it('value scales have round steps whose labels differ once formatted', () => {
    expect(valueScale([1], count).ticks.map(count)).toEqual(['0', '1']);
    expect(valueScale([55, 43], count)).toEqual({ min: 0, max: 60, ticks: [0, 20, 40, 60] });
    expect(valueScale([0.129, 0.08], (v) => `${(v * 100).toFixed(1)}%`).ticks).toEqual([0, 0.05, 0.1, 0.15]);
    expect(valueScale([0, 0], usd)).toEqual({ min: 0, max: 1, ticks: [0] });
    expect(valueScale([], usd).ticks).toEqual([]);
  });
});
