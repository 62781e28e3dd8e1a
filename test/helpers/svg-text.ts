import { Resvg } from '@resvg/resvg-js';
import { SaxesParser } from 'saxes';
import { type Box, chartFonts } from '../../src/digests/chart.ts';

/** A `<text>` element of a chart: where it is drawn, how, and what it says. */
export interface SvgText {
  text: string;
  x: number;
  y: number;
  fontSize: number;
  anchor: string;
  fontWeight: string;
  fill: string;
}

/** The `<text>` elements of an SVG document, read with an XML parser. */
export function svgTexts(svg: string): SvgText[] {
  const parser = new SaxesParser();
  const texts: SvgText[] = [];
  let open: SvgText | undefined;
  parser.on('opentag', (tag) => {
    if (tag.name !== 'text') return;
    const a = tag.attributes as Record<string, string>;
    open = {
      text: '',
      x: Number(a.x),
      y: Number(a.y),
      fontSize: Number(a['font-size']),
      anchor: a['text-anchor'] ?? 'start',
      fontWeight: a['font-weight'] ?? 'normal',
      fill: a.fill ?? '',
    };
  });
  parser.on('text', (text) => {
    if (open) open.text += text;
  });
  parser.on('closetag', (tag) => {
    if (tag.name === 'text' && open) {
      texts.push(open);
      open = undefined;
    }
  });
  parser.write(svg).close();
  return texts;
}

/**
 * The box the text's glyphs cover once drawn, as resvg draws it with the chart's fonts: measured, not
 * estimated, so that a test of the chart's layout does not share the chart's own estimate of widths.
 */
export function drawnBox(text: SvgText): Box | undefined {
  const escaped = text.text.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="960" height="2000" font-family="DejaVu Sans, Arial, sans-serif"><text x="${text.x}" y="${text.y}" font-size="${text.fontSize}" font-weight="${text.fontWeight}" text-anchor="${text.anchor}">${escaped}</text></svg>`;
  const box = new Resvg(svg, { font: chartFonts() }).getBBox();
  return box ? { left: box.x, top: box.y, right: box.x + box.width, bottom: box.y + box.height } : undefined;
}

export function boxesOverlap(a: Box, b: Box): boolean {
  return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
}

/** Pairs of texts of the chart whose drawn glyphs run over each other. */
export function overlappingTexts(svg: string): Array<[string, string]> {
  const measured = svgTexts(svg).flatMap((t) => {
    const box = drawnBox(t);
    return box ? [{ t, box }] : [];
  });
  const pairs: Array<[string, string]> = [];
  measured.forEach((a, i) => {
    for (const b of measured.slice(i + 1)) if (boxesOverlap(a.box, b.box)) pairs.push([a.t.text, b.t.text]);
  });
  return pairs;
}
