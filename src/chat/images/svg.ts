import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Resvg, type ResvgRenderOptions, renderAsync } from '@resvg/resvg-js';
import { encodePngAsync } from '../../png.ts';

/** Font options of a render (resvg's). */
export type SvgFonts = NonNullable<ResvgRenderOptions['font']>;

/** Chat platforms refuse photos longer than 20 times their width (Telegram) or show them as slivers. */
export const MAX_ASPECT_RATIO = 20;

/** An SVG document that is refused or that resvg cannot draw. */
export class SvgRenderError extends Error {
  override name = 'SvgRenderError';
}

/** Where Linux distributions put DejaVu Sans (Debian and Ubuntu first: the Docker image is Debian's). */
const FONT_DIRECTORIES = [
  '/usr/share/fonts/truetype/dejavu',
  '/usr/share/fonts/dejavu',
  '/usr/share/fonts/TTF',
  '/usr/share/fonts/dejavu-sans-fonts',
];

let defaultFonts: SvgFonts | undefined;

/**
 * DejaVu Sans (regular and bold), found once, for every family a token image asks for: loading
 * the system's fonts costs more per render than drawing. Without it, text is left out of the
 * picture and the rest is drawn.
 */
export function tokenImageFonts(): SvgFonts {
  if (!defaultFonts) {
    const directory = FONT_DIRECTORIES.find((dir) => existsSync(join(dir, 'DejaVuSans.ttf')));
    const files = directory
      ? ['DejaVuSans.ttf', 'DejaVuSans-Bold.ttf']
          .map((name) => join(directory, name))
          .filter((path) => existsSync(path))
      : [];
    defaultFonts = files.length
      ? { loadSystemFonts: false, fontFiles: files, defaultFontFamily: 'DejaVu Sans', sansSerifFamily: 'DejaVu Sans' }
      : { loadSystemFonts: false };
  }
  return defaultFonts;
}

const NAME = '[A-Za-z_][\\w.-]*';
const ATTRIBUTES = `(?:[^>"']|"[^"]*"|'[^']*')*`;
const HREF = new RegExp(`(\\s(?:${NAME}:)?href\\s*=\\s*)("[^"]*"|'[^']*')`, 'gi');
/** Raster images that resvg decodes itself: safe to keep inline. Anything else may load a file. */
const INLINE_RASTER = /^data:image\/(png|jpe?g|gif|webp)[;,]/i;

function decodeXml(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|apos);/gi, (entity, body: string) => {
    const lower = body.toLowerCase();
    if (lower.startsWith('#')) {
      const code = lower.startsWith('#x') ? Number.parseInt(lower.slice(2), 16) : Number(lower.slice(1));
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : '\ufffd';
    }
    return { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }[lower] ?? entity;
  });
}

/**
 * An untrusted SVG made safe to hand to resvg. resvg reads any local file an `<image>` or
 * `<feImage>` names (`/dev/zero` hangs it; a path reveals a picture on the bot's disk) and parses
 * an SVG inside a data URL with the same rights, and it expands entities declared in a DTD. So
 * documents declaring entities or attributes are refused, and every `href` that is neither a
 * fragment (`#id`) nor an inline PNG, JPEG, GIF or WebP is emptied: such an element draws nothing.
 * resvg fetches no URL itself.
 */
export function sanitizeSvg(svg: string): string {
  if (/<!(ENTITY|ATTLIST|ELEMENT)|<!DOCTYPE[^>]*\[/i.test(svg)) {
    throw new SvgRenderError('the SVG declares entities or attributes');
  }
  return svg.replace(HREF, (whole, head: string, quoted: string) => {
    const target = decodeXml(quoted.slice(1, -1)).trim();
    return target.startsWith('#') || INLINE_RASTER.test(target) ? whole : `${head}""`;
  });
}

/** What may come before the root element: XML declaration, comments, processing instructions, doctype. */
const PROLOG = /^(?:\uFEFF|\s|<\?[\s\S]*?\?>|<!--[\s\S]*?-->|<!DOCTYPE[^>[]*>)*/i;

/** Whether a text is an SVG document (for servers that do not say so in their content type). */
export function looksLikeSvg(text: string): boolean {
  const prolog = PROLOG.exec(text)?.[0] ?? '';
  return new RegExp(`^<(?:${NAME}:)?svg[\\s/>]`).test(text.slice(prolog.length, prolog.length + 256));
}

/** The document's root element's start tag. */
function rootTag(svg: string): { name: string; tag: string } {
  const prolog = PROLOG.exec(svg)?.[0] ?? '';
  const start = new RegExp(`<((?:${NAME}:)?svg)(${ATTRIBUTES}?)(/?)>`, 'y');
  start.lastIndex = prolog.length;
  const match = start.exec(svg);
  if (!match) throw new SvgRenderError('not an SVG document');
  return { name: match[1] ?? 'svg', tag: `<${match[1]}${match[2]}>` };
}

/**
 * The size resvg gives the document, read from its root element alone: parsing the whole of an
 * untrusted document on the event loop could take seconds, its root takes microseconds.
 */
export function svgSize(svg: string): { width: number; height: number } {
  const { name, tag } = rootTag(svg);
  try {
    const measured = new Resvg(`${tag}</${name}>`, { font: { loadSystemFonts: false } });
    return { width: measured.width, height: measured.height };
  } catch (error) {
    throw new SvgRenderError(`resvg refused the SVG: ${(error as Error).message}`, { cause: error });
  }
}

export interface RasterizeOptions {
  /** Pixels of the longer side. */
  size: number;
  fonts?: SvgFonts;
  /** Fills what the SVG leaves transparent (Telegram turns transparency black). */
  background?: string;
}

export interface RasterImage {
  png: Uint8Array;
  width: number;
  height: number;
}

/**
 * Draws an untrusted SVG (see {@link sanitizeSvg}) as a PNG whose longer side is `size` pixels, on
 * libuv's thread pool rather than the event loop. Rejects with an {@link SvgRenderError} when the
 * document is refused, is not an SVG, has no area or is longer than {@link MAX_ASPECT_RATIO}.
 */
export async function rasterizeSvg(svg: string, options: RasterizeOptions): Promise<RasterImage> {
  const safe = sanitizeSvg(svg);
  const { width, height } = svgSize(safe);
  if (!(width > 0 && height > 0)) throw new SvgRenderError('the SVG has no size');
  if (Math.max(width, height) / Math.min(width, height) > MAX_ASPECT_RATIO) {
    throw new SvgRenderError(`the SVG is ${width}×${height}: too long and thin for a picture`);
  }
  const fitTo =
    width >= height
      ? { mode: 'width' as const, value: options.size }
      : { mode: 'height' as const, value: options.size };
  try {
    const image = await renderAsync(safe, {
      fitTo,
      font: options.fonts ?? tokenImageFonts(),
      background: options.background ?? '#ffffff',
      logLevel: 'off',
    });
    const png = await encodePngAsync({
      width: image.width,
      height: image.height,
      pixels: image.pixels,
      premultiplied: true,
    });
    return { png: new Uint8Array(png), width: image.width, height: image.height };
  } catch (error) {
    throw new SvgRenderError(`resvg could not draw the SVG: ${(error as Error).message}`, { cause: error });
  }
}
