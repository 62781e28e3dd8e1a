import { readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, join } from 'node:path';
import { Resvg, type ResvgRenderOptions } from '@resvg/resvg-js';
import { truncate } from '../core/reply.ts';
import type { ChartPoint } from '../platform/types.ts';
import { encodePng } from '../png.ts';

export interface ChartSeries {
  name: string;
  points: readonly ChartPoint[];
  /** Formats the value axis, and the value of a line that has one point. */
  format: (value: number) => string;
  color: string;
  /**
   * Several lines on this panel's scale (one per collection), each named in a legend; when given,
   * `points` and `color` are not drawn.
   */
  lines?: ReadonlyArray<{ name: string; points: readonly ChartPoint[]; color: string }>;
  /**
   * The x axis: the labels of the period the panel covers, for lines that may leave days out (a floor
   * known only from the day it was first looked up, sales volume from the day recording began), so
   * that panels over the same days line up. A line is broken where it leaves a day out between two
   * points. Without it, or when a point's label is not in it, the axis is the labels of the longest line.
   */
  axis?: readonly string[];
}

export const CHART_WIDTH = 960;
const PANEL_HEIGHT = 220;
const MARGIN = { left: 72, right: 24, top: 56, bottom: 36 };

/**
 * One opaque dark card (readable on dark and light chat themes alike) with one panel per series,
 * since the series have different scales. Text is drawn in DejaVu Sans (see {@link chartFonts}).
 */
export function chartSvg(title: string, series: readonly ChartSeries[]): string {
  const height = MARGIN.top + series.length * (PANEL_HEIGHT + MARGIN.bottom) + 8;
  const width = CHART_WIDTH;
  const plotWidth = width - MARGIN.left - MARGIN.right;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="DejaVu Sans, Arial, sans-serif">`,
    `<rect width="${width}" height="${height}" rx="16" fill="#1e2230"/>`,
    `<text x="${MARGIN.left}" y="36" fill="#f2f4f8" font-size="22" font-weight="bold">${escapeXml(title)}</text>`,
  ];
  const axes = series.map(axisOf);
  series.forEach((s, index) => {
    const top = MARGIN.top + index * (PANEL_HEIGHT + MARGIN.bottom);
    const lines = s.lines ?? [{ name: s.name, points: s.points, color: s.color }];
    const values = lines.flatMap((line) => line.points.map((p) => p.value));
    const { min, max, ticks } = valueScale(values, s.format);
    const span = max - min;
    const axis = axes[index] ?? [];
    const slot = new Map(axis.map((label, i) => [label, i]));
    const x = (i: number) => MARGIN.left + (axis.length <= 1 ? plotWidth / 2 : (i / (axis.length - 1)) * plotWidth);
    const y = (v: number) => top + 24 + (1 - (v - min) / span) * (PANEL_HEIGHT - 36);
    out.push(
      `<text x="${MARGIN.left}" y="${top + 12}" fill="${s.lines ? '#f2f4f8' : s.color}" font-size="16" font-weight="bold">${escapeXml(s.name)}</text>`,
    );
    if (s.lines) {
      let legendX = width - MARGIN.right;
      for (const line of [...s.lines].reverse()) {
        const name = escapeXml(truncate(line.name, 24));
        out.push(
          `<text x="${legendX}" y="${top + 12}" fill="${line.color}" font-size="13" text-anchor="end">● ${name}</text>`,
        );
        legendX -= 28 + Math.min(24, line.name.length) * 7.5;
      }
    }
    if (values.length === 0) {
      // No scale to show: labels of an empty range would read as a value ($0.00).
      out.push(
        `<line x1="${MARGIN.left}" x2="${width - MARGIN.right}" y1="${y(min).toFixed(1)}" y2="${y(min).toFixed(1)}" stroke="#3a4052" stroke-width="1"/>`,
      );
      out.push(
        `<text x="${MARGIN.left + plotWidth / 2}" y="${top + PANEL_HEIGHT / 2}" fill="#aab2c5" font-size="16" text-anchor="middle">no data</text>`,
      );
    } else {
      for (const v of ticks) {
        const gy = y(v).toFixed(1);
        out.push(
          `<line x1="${MARGIN.left}" x2="${width - MARGIN.right}" y1="${gy}" y2="${gy}" stroke="#3a4052" stroke-width="1"/>`,
        );
        out.push(
          `<text x="${MARGIN.left - 8}" y="${(y(v) + 4).toFixed(1)}" fill="#aab2c5" font-size="12" text-anchor="end">${escapeXml(s.format(v))}</text>`,
        );
      }
    }
    for (const line of lines) {
      if (line.points.length === 0) continue;
      const at = (p: ChartPoint, i: number) => x(slot.get(p.label) ?? i);
      if (line.points.length === 1) {
        // One point makes no line: a marker with its value says what is known.
        const point = line.points[0] as ChartPoint;
        const px = at(point, 0);
        const labelX = Math.min(Math.max(px, MARGIN.left + 40), width - MARGIN.right - 40);
        out.push(`<circle cx="${px.toFixed(1)}" cy="${y(point.value).toFixed(1)}" r="6" fill="${line.color}"/>`);
        out.push(
          `<text x="${labelX.toFixed(1)}" y="${(y(point.value) - 12).toFixed(1)}" fill="${line.color}" font-size="13" text-anchor="middle">${escapeXml(s.format(point.value))}</text>`,
        );
        continue;
      }
      for (const run of runsOf(line.points, (p, i) => slot.get(p.label) ?? i)) {
        if (run.length < 2) continue;
        const path = run
          .map(({ p, i }, k) => `${k === 0 ? 'M' : 'L'}${at(p, i).toFixed(1)},${y(p.value).toFixed(1)}`)
          .join(' ');
        const first = run[0] as { p: ChartPoint; i: number };
        const last = run[run.length - 1] as { p: ChartPoint; i: number };
        if (lines.length === 1) {
          const area = `${path} L${at(last.p, last.i).toFixed(1)},${y(min).toFixed(1)} L${at(first.p, first.i).toFixed(1)},${y(min).toFixed(1)} Z`;
          out.push(`<path d="${area}" fill="${line.color}" fill-opacity="0.15"/>`);
        }
        out.push(`<path d="${path}" fill="none" stroke="${line.color}" stroke-width="3" stroke-linejoin="round"/>`);
      }
      line.points.forEach((p, i) => {
        out.push(`<circle cx="${at(p, i).toFixed(1)}" cy="${y(p.value).toFixed(1)}" r="3.5" fill="${line.color}"/>`);
      });
    }
    // Panels over the same days share the labels of the lowest one (text is most of a chart's drawing time).
    const next = axes[index + 1];
    if (next && sameLabels(axis, next)) return;
    const every = Math.max(1, Math.ceil(axis.length / 8));
    axis.forEach((label, i) => {
      if (i % every === 0 || i === axis.length - 1) {
        out.push(
          `<text x="${x(i).toFixed(1)}" y="${top + PANEL_HEIGHT + 8}" fill="#aab2c5" font-size="12" text-anchor="middle">${escapeXml(shortLabel(label))}</text>`,
        );
      }
    });
  });
  out.push('</svg>');
  return out.join('');
}

/**
 * Draws charts as PNG images. The digest service takes one, so that the composition root decides
 * where rendering runs: {@link ChartPool} in worker threads for the bot, {@link chartsInThread}
 * for tools and tests.
 */
export interface ChartRenderer {
  /** Rejects when this chart cannot be drawn; other charts are not affected. */
  render(title: string, series: readonly ChartSeries[]): Promise<Uint8Array>;
}

/** Renders on the calling thread: each chart blocks the event loop for the length of its render. */
export const chartsInThread: ChartRenderer = {
  render: async (title, series) => renderChartPng(title, series),
};

/** Font options for resvg: which fonts a render loads. */
export type ChartFonts = NonNullable<ResvgRenderOptions['font']>;

const CHART_FONT_FILES = ['DejaVuSans.ttf', 'DejaVuSans-Bold.ttf'];

/** Where operating systems and font packages put font files (fontconfig's, fontdb's defaults). */
function fontDirectories(): string[] {
  const home = homedir();
  return [
    '/usr/share/fonts',
    '/usr/local/share/fonts',
    join(home, '.local/share/fonts'),
    join(home, '.fonts'),
    '/Library/Fonts',
    join(home, 'Library/Fonts'),
    'C:\\Windows\\Fonts',
  ];
}

/** The first file of each name found under these directories, or undefined if one is missing. */
export function findFontFiles(names: readonly string[], directories: readonly string[]): string[] | undefined {
  const found = new Map<string, string>();
  for (const directory of directories) {
    let entries: string[];
    try {
      entries = readdirSync(directory, { recursive: true, encoding: 'utf8' });
    } catch {
      continue;
    }
    for (const entry of entries) {
      const name = basename(entry);
      if (names.includes(name) && !found.has(name)) found.set(name, join(directory, entry));
    }
    if (found.size === names.length) break;
  }
  return names.every((name) => found.has(name)) ? names.map((name) => found.get(name) ?? name) : undefined;
}

let fonts: ChartFonts | undefined;

/**
 * The fonts a chart render loads, found once per process. Resvg builds a font database for every
 * render; loading every system font each time cost as much as drawing the chart, so when the two
 * DejaVu Sans files the chart uses are installed (the Docker image installs fonts-dejavu-core) only
 * they are loaded. The chart asks for DejaVu Sans first, so the image is the same either way; without
 * them it falls back to the system fonts, as slow as before. The chart's text must stay within what
 * DejaVu Sans covers (its labels are ASCII), since no other font is there to fall back on.
 */
export function chartFonts(): ChartFonts {
  if (!fonts) {
    const files = findFontFiles(CHART_FONT_FILES, fontDirectories());
    fonts = files
      ? { loadSystemFonts: false, fontFiles: files, defaultFontFamily: 'DejaVu Sans' }
      : { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans' };
  }
  return fonts;
}

/** An SVG document as a PNG image, in a buffer of its own (so it can be transferred between threads). */
export function renderSvgPng(svg: string, font: ChartFonts = chartFonts()): Uint8Array<ArrayBuffer> {
  const image = new Resvg(svg, { font }).render();
  return new Uint8Array(
    encodePng({ width: image.width, height: image.height, pixels: image.pixels, premultiplied: true }),
  );
}

/** The chart as a PNG image, drawn on the calling thread. */
export function renderChartPng(title: string, series: readonly ChartSeries[]): Uint8Array {
  return renderSvgPng(chartSvg(title, series));
}

/** The x axis of a panel: its period's labels when every point has its day there, else its longest line's. */
function axisOf(series: ChartSeries): readonly string[] {
  const lines = series.lines ?? [{ points: series.points }];
  const { axis } = series;
  if (axis && lines.every((line) => line.points.every((p) => axis.includes(p.label)))) return axis;
  return lines
    .reduce<readonly ChartPoint[]>((longest, line) => (line.points.length > longest.length ? line.points : longest), [])
    .map((p) => p.label);
}

/**
 * A line's points in runs over consecutive slots of the axis: a day missing between two points is a
 * gap in the line, not a straight segment across it (a day without data is not a value).
 */
function runsOf(
  points: readonly ChartPoint[],
  slotOf: (point: ChartPoint, index: number) => number,
): Array<Array<{ p: ChartPoint; i: number }>> {
  const runs: Array<Array<{ p: ChartPoint; i: number }>> = [];
  let previous: number | undefined;
  points.forEach((p, i) => {
    const slot = slotOf(p, i);
    if (previous === undefined || slot !== previous + 1) runs.push([]);
    runs.at(-1)?.push({ p, i });
    previous = slot;
  });
  return runs;
}

function sameLabels(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((label, i) => label === b[i]);
}

/** Gridline steps: 1, 2, 2.5 or 5 times a power of ten. */
function niceStep(raw: number): number {
  const power = 10 ** Math.floor(Math.log10(raw));
  const f = raw / power;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * power;
}

/**
 * The value range of a panel and its gridlines: from zero (or the lowest value) to the highest, at
 * round steps whose labels differ once formatted (a count axis never reads 0, 1, 1, 2). A panel whose
 * values are all zero gets the zero line only.
 */
export function valueScale(
  values: readonly number[],
  format: (value: number) => string,
): { min: number; max: number; ticks: number[] } {
  const low = Math.min(0, ...values);
  const high = Math.max(0, ...values);
  if (!(high > low)) return { min: low, max: low + 1, ticks: values.length > 0 ? [low] : [] };
  let step = niceStep((high - low) / 3);
  for (let attempt = 0; attempt < 12; attempt++) {
    const min = Math.floor(low / step) * step;
    const max = Math.ceil(high / step) * step;
    const ticks: number[] = [];
    for (let k = 0; min + k * step <= max + step / 2; k++) ticks.push(Number((min + k * step).toPrecision(12)));
    const labels = ticks.map(format);
    if (new Set(labels).size === labels.length) return { min, max, ticks };
    step = niceStep(step * 1.001);
  }
  return { min: low, max: high, ticks: [low, high] };
}

/** `2026-11-21` -> `11-21`. */
function shortLabel(label: string): string {
  return /^\d{4}-\d{2}-\d{2}/.test(label) ? label.slice(5, 10) : label.slice(0, 10);
}

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
