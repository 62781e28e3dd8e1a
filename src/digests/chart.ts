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
/** Baseline of a panel's header row (its name, and the first row of its legend) below the panel's top. */
const HEADER_BASELINE = 12;
/** Distance between the baselines of two legend rows. */
const LEGEND_ROW = 17;
/** Space kept between two entries of a legend, and between the legend and the panel's name. */
const LEGEND_GAP = 20;
/** The plot begins this far below the panel's top, plus a row for each legend row past the first. */
const PLOT_OFFSET = 24;
/** Font sizes (px) of the pieces of text a panel draws. */
const FONT = { panelName: 16, legend: 13, valueLabel: 13 } as const;
const MARKER_RADIUS = 6;

/** A rectangle of the drawing, for keeping text from running over other text. */
export interface Box {
  left: number;
  top: number;
  right: number;
  bottom: number;
}

function overlaps(a: Box, b: Box): boolean {
  return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
}

/**
 * The width of a line of text in DejaVu Sans, estimated from each character's class and rounded up
 * (the chart draws no text it has to measure exactly; it only keeps pieces of text apart): measuring
 * with the font would cost a font load per chart.
 */
function textWidth(text: string, fontSize: number, bold = false): number {
  let ems = 0;
  for (const char of text) {
    if (/[ il.,:;'|!jftrI()[\]]/.test(char)) ems += 0.4;
    else if (/[WMmw@%●]/.test(char)) ems += 1.02;
    else if (/[A-Z]/.test(char)) ems += 0.8;
    else ems += 0.66;
  }
  return ems * fontSize * (bold ? 1.12 : 1);
}

/** The box of a line of text drawn at `x` (by its anchor) on the baseline `y`. */
function textBox(
  text: string,
  x: number,
  y: number,
  fontSize: number,
  anchor: 'start' | 'middle' | 'end',
  bold = false,
) {
  const width = textWidth(text, fontSize, bold);
  const left = anchor === 'start' ? x : anchor === 'middle' ? x - width / 2 : x - width;
  return { left, right: left + width, top: y - fontSize * 0.95, bottom: y + fontSize * 0.3 };
}

interface LegendEntry {
  text: string;
  color: string;
  /** Right end of the entry (it is drawn anchored at its end). */
  x: number;
  y: number;
  box: Box;
}

/**
 * A panel's legend: its entries in the order of the lines, right-aligned in rows at the top right of
 * the panel, a new row begun where a row would run into the panel's name.
 */
function legendOf(
  lines: ReadonlyArray<{ name: string; color: string }>,
  top: number,
  nameRight: number,
): LegendEntry[] {
  const right = CHART_WIDTH - MARGIN.right;
  const room = right - nameRight - LEGEND_GAP;
  const rows: Array<Array<{ text: string; color: string; width: number }>> = [[]];
  let used = 0;
  for (const line of lines) {
    const text = `● ${truncate(line.name, 24)}`;
    const width = textWidth(text, FONT.legend);
    const row = rows[rows.length - 1] as Array<{ text: string; color: string; width: number }>;
    if (row.length > 0 && used + LEGEND_GAP + width > room) {
      rows.push([{ text, color: line.color, width }]);
      used = width;
    } else {
      row.push({ text, color: line.color, width });
      used += (row.length > 1 ? LEGEND_GAP : 0) + width;
    }
  }
  const entries: LegendEntry[] = [];
  rows.forEach((row, r) => {
    const y = top + HEADER_BASELINE + r * LEGEND_ROW;
    let x = right;
    for (const entry of [...row].reverse()) {
      entries.push({ text: entry.text, color: entry.color, x, y, box: textBox(entry.text, x, y, FONT.legend, 'end') });
      x -= entry.width + LEGEND_GAP;
    }
  });
  return entries;
}

/**
 * Where the value of a lone point is written: above its marker, else below it, else beside it, else
 * further up or down, the first place inside the panel that covers no other text (the panel's name,
 * its legend, other values) and no marker.
 */
function valueLabelAt(
  text: string,
  px: number,
  py: number,
  taken: readonly Box[],
  bounds: { top: number; bottom: number },
): { x: number; y: number; box: Box } {
  const half = textWidth(text, FONT.valueLabel) / 2;
  const clampX = (x: number) => Math.min(Math.max(x, MARGIN.left + half), CHART_WIDTH - MARGIN.right - half);
  const gap = MARKER_RADIUS + 6;
  const above = py - gap;
  const below = py + gap + FONT.valueLabel * 0.95;
  const beside = py + FONT.valueLabel * 0.35;
  const candidates: Array<[number, number]> = [
    [px, above],
    [px, below],
    [px + gap + half, beside],
    [px - gap - half, beside],
  ];
  for (let step = 1; step <= 6; step++) {
    for (const dx of [0, gap + half, -(gap + half)]) {
      candidates.push([px + dx, above - step * LEGEND_ROW], [px + dx, below + step * LEGEND_ROW]);
    }
  }
  let fallback: { x: number; y: number; box: Box } | undefined;
  for (const [cx, y] of candidates) {
    const x = clampX(cx);
    const box = textBox(text, x, y, FONT.valueLabel, 'middle');
    if (box.top < bounds.top || box.bottom > bounds.bottom) continue;
    fallback ??= { x, y, box };
    if (!taken.some((other) => overlaps(box, other))) return { x, y, box };
  }
  const x = clampX(px);
  return fallback ?? { x, y: below, box: textBox(text, x, below, FONT.valueLabel, 'middle') };
}

/**
 * One opaque dark card (readable on dark and light chat themes alike) with one panel per series,
 * since the series have different scales. Text is drawn in DejaVu Sans (see {@link chartFonts}).
 * No piece of text is drawn over another: a legend wraps into rows before it reaches the panel's
 * name, and the value of a lone point moves off the legend (see {@link valueLabelAt}).
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
    const nameBox = textBox(s.name, MARGIN.left, top + HEADER_BASELINE, FONT.panelName, 'start', true);
    const legend = s.lines ? legendOf(s.lines, top, nameBox.right) : [];
    const legendRows = new Set(legend.map((entry) => entry.y)).size;
    const plotTop = top + PLOT_OFFSET + Math.max(0, legendRows - 1) * LEGEND_ROW;
    const plotHeight = PANEL_HEIGHT - 12 - (plotTop - top);
    const x = (i: number) => MARGIN.left + (axis.length <= 1 ? plotWidth / 2 : (i / (axis.length - 1)) * plotWidth);
    const y = (v: number) => plotTop + (1 - (v - min) / span) * plotHeight;
    out.push(
      `<text x="${MARGIN.left}" y="${top + HEADER_BASELINE}" fill="${s.lines ? '#f2f4f8' : s.color}" font-size="${FONT.panelName}" font-weight="bold">${escapeXml(s.name)}</text>`,
    );
    for (const entry of legend) {
      out.push(
        `<text x="${entry.x.toFixed(1)}" y="${entry.y}" fill="${entry.color}" font-size="${FONT.legend}" text-anchor="end">${escapeXml(entry.text)}</text>`,
      );
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
    // Lone points are written with their value; the text they must keep clear of comes first.
    const at = (p: ChartPoint, i: number) => x(slot.get(p.label) ?? i);
    const lonePoints = lines.flatMap((line) => {
      const point = line.points.length === 1 ? line.points[0] : undefined;
      return point ? [{ line, point, px: at(point, 0), py: y(point.value) }] : [];
    });
    const taken: Box[] = [
      nameBox,
      ...legend.map((entry) => entry.box),
      ...lonePoints.map(({ px, py }) => ({
        left: px - MARKER_RADIUS,
        right: px + MARKER_RADIUS,
        top: py - MARKER_RADIUS,
        bottom: py + MARKER_RADIUS,
      })),
    ];
    for (const line of lines) {
      if (line.points.length === 0) continue;
      const lone = lonePoints.find((p) => p.line === line);
      if (lone) {
        // One point makes no line: a marker with its value says what is known.
        const text = s.format(lone.point.value);
        const label = valueLabelAt(text, lone.px, lone.py, taken, { top, bottom: top + PANEL_HEIGHT });
        taken.push(label.box);
        out.push(
          `<circle cx="${lone.px.toFixed(1)}" cy="${lone.py.toFixed(1)}" r="${MARKER_RADIUS}" fill="${line.color}"/>`,
        );
        out.push(
          `<text x="${label.x.toFixed(1)}" y="${label.y.toFixed(1)}" fill="${line.color}" font-size="${FONT.valueLabel}" text-anchor="middle">${escapeXml(text)}</text>`,
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
