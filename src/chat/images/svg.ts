import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Resvg, type ResvgRenderOptions, renderAsync } from '@resvg/resvg-js';
import * as css from 'css-tree';
import { imageSize } from 'image-size';
import { type SaxesAttributeNS, SaxesParser, type SaxesTagNS } from 'saxes';
import { encodePngAsync } from '../../png.ts';
import {
  CSS_FUNCTIONS,
  PRESENTATION_ATTRIBUTES,
  RASTER_ELEMENTS,
  REFERRING_ELEMENTS,
  SVG_ATTRIBUTES,
  SVG_ELEMENTS,
  TEXT_ELEMENTS,
} from './svg-allowlist.ts';

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

const SVG_NS = 'http://www.w3.org/2000/svg';
const XLINK_NS = 'http://www.w3.org/1999/xlink';
const XML_NS = 'http://www.w3.org/XML/1998/namespace';

/** Limits on the raster images an SVG carries inline. */
export interface InlineRasterLimits {
  /** Bytes of one image, decoded from its data URL. */
  maxBytes: number;
  /** Pixels (width × height, from the image's header) of all the images of a document together. */
  maxPixels: number;
}

/**
 * Defaults of {@link InlineRasterLimits}: a token image is drawn 512 pixels wide, so 16 megapixels
 * (64 MB once decoded to RGBA) is far more than a picture needs, and a 20000×20000 PNG (1.6 GB
 * decoded, from 400 kB of data) is left out.
 */
export const INLINE_RASTER_LIMITS: InlineRasterLimits = { maxBytes: 2 * 1024 * 1024, maxPixels: 16 * 1024 * 1024 };

/** Raster formats resvg decodes, by image-size's name, with the media type they are passed on as. */
const RASTER_TYPES: ReadonlyMap<string, string> = new Map([
  ['png', 'image/png'],
  ['jpg', 'image/jpeg'],
  ['gif', 'image/gif'],
]);
/** Media types a data URL may declare for an inline raster (WebP: resvg does not draw it, so it is left out). */
const DECLARED_RASTER_TYPES: ReadonlySet<string> = new Set(['image/png', 'image/jpeg', 'image/jpg', 'image/gif']);

/** An untrusted SVG rebuilt by {@link sanitizeSvg}. */
export interface SafeSvg {
  /** The rebuilt document. */
  text: string;
  /** Its root element alone (`<svg …/>`): resvg sizes the document from it in microseconds. */
  root: string;
}

/**
 * An untrusted SVG rebuilt from its parse tree with only what is allowed (svg-allowlist.ts), so
 * that nothing in it can make resvg read a file: resvg loads any local file an `<image>` or
 * `<feImage>` names (a path shows a picture on the bot's disk; `/dev/zero` grows memory until the
 * process dies) and parses SVG inside a data URL with the same rights.
 *
 * The document is parsed by an XML parser that resolves namespaces (saxes): an element counts by
 * its namespace and local name, whatever its prefix, so `<image ж:href="/etc/x"
 * xmlns:ж="http://www.w3.org/1999/xlink">` is an xlink:href like any other. Documents with an
 * internal DTD subset are refused; no entity is ever expanded (an undefined one is an error).
 * Elements outside the SVG namespace or the allowlist are dropped with their content, attributes
 * outside the allowlist dropped, `href` kept only as a reference inside the document (`#id`) or,
 * on images, as an inline PNG, JPEG or GIF whose header says it is within {@link InlineRasterLimits}
 * (re-encoded as base64 under the type its bytes show). CSS (`style` attributes and elements)
 * keeps only allowlisted properties whose values call no function outside colours and transforms
 * and refer to nothing but `url(#id)`; at-rules (`@import`, `@font-face`) are dropped.
 *
 * @throws SvgRenderError when the text is not well-formed XML, its root is not an SVG element, or it declares a DTD subset.
 */
export function sanitizeSvg(svg: string, limits: InlineRasterLimits = INLINE_RASTER_LIMITS): SafeSvg {
  return new SvgRebuilder(limits).rebuild(svg);
}

interface OpenElement {
  /** The local name, or undefined when the element is dropped (and all it contains). */
  kept: string | undefined;
}

/** One document's rebuilding: the output, the open elements, the inline raster budget and a cache of checked values. */
class SvgRebuilder {
  readonly #limits: InlineRasterLimits;
  readonly #out: string[] = [];
  readonly #open: OpenElement[] = [];
  readonly #checked = new Map<string, boolean>();
  #root: string | undefined;
  #pixels = 0;
  #style: string[] | undefined;

  constructor(limits: InlineRasterLimits) {
    this.#limits = limits;
  }

  rebuild(svg: string): SafeSvg {
    const parser = new SaxesParser({ xmlns: true, position: false });
    parser.on('error', (error) => {
      throw new SvgRenderError(`the SVG is not well-formed XML: ${error.message}`);
    });
    parser.on('doctype', (doctype) => {
      if (doctype.includes('[')) throw new SvgRenderError('the SVG declares entities or attributes');
    });
    parser.on('opentag', (tag) => this.#openTag(tag));
    parser.on('closetag', (tag) => this.#closeTag(tag));
    parser.on('text', (text) => this.#text(text));
    parser.on('cdata', (text) => this.#text(text));
    parser.write(svg).close();
    if (this.#root === undefined) throw new SvgRenderError('not an SVG document');
    return { text: this.#out.join(''), root: this.#root };
  }

  #openTag(tag: SaxesTagNS): void {
    const parent = this.#open.at(-1);
    const isRoot = this.#open.length === 0;
    const allowed = tag.uri === SVG_NS && SVG_ELEMENTS.has(tag.local);
    if (isRoot && !(allowed && tag.local === 'svg')) throw new SvgRenderError('not an SVG document');
    const kept = (isRoot || parent?.kept !== undefined) && allowed ? tag.local : undefined;
    this.#open.push({ kept });
    if (kept === undefined) return;
    if (kept === 'style') this.#style = [];
    const namespaces = isRoot ? ` xmlns="${SVG_NS}" xmlns:xlink="${XLINK_NS}"` : '';
    const start = `<${kept}${namespaces}${this.#attributes(kept, tag.attributes)}`;
    if (isRoot) this.#root = `${start}/>`;
    this.#out.push(tag.isSelfClosing ? `${start}/>` : `${start}>`);
  }

  #closeTag(tag: SaxesTagNS): void {
    const element = this.#open.pop();
    if (element?.kept === undefined) return;
    if (element.kept === 'style') {
      this.#out.push(escapeText(safeStylesheet(this.#style?.join('') ?? '')));
      this.#style = undefined;
    }
    if (!tag.isSelfClosing) this.#out.push(`</${element.kept}>`);
  }

  #text(text: string): void {
    const kept = this.#open.at(-1)?.kept;
    if (kept === 'style') this.#style?.push(text);
    else if (kept !== undefined && TEXT_ELEMENTS.has(kept)) this.#out.push(escapeText(text));
  }

  #attributes(element: string, attributes: Record<string, SaxesAttributeNS>): string {
    let out = '';
    let href: string | undefined;
    let xlinkHref: string | undefined;
    for (const attribute of Object.values(attributes)) {
      const { uri, local, value } = attribute;
      if (uri === XLINK_NS && local === 'href') xlinkHref = value;
      else if (uri === XML_NS && local === 'space') out += ` xml:space="${escapeAttribute(value)}"`;
      else if (uri !== '') continue;
      else if (local === 'href') href = value;
      else if (local === 'style') {
        const style = safeDeclarations(value);
        if (style) out += ` style="${escapeAttribute(style)}"`;
      } else if (SVG_ATTRIBUTES.has(local) && !this.#refersOutside(value)) {
        out += ` ${local}="${escapeAttribute(value)}"`;
      }
    }
    // SVG 2: `href` wins over `xlink:href`.
    const target = href ?? xlinkHref;
    const safe = target === undefined ? undefined : this.#safeHref(element, target.trim());
    if (safe !== undefined) out += ` xlink:href="${escapeAttribute(safe)}"`;
    return out;
  }

  /** The href as it may be kept, or undefined. */
  #safeHref(element: string, target: string): string | undefined {
    if (target.startsWith('#')) return REFERRING_ELEMENTS.has(element) ? target : undefined;
    if (!RASTER_ELEMENTS.has(element)) return undefined;
    const raster = inlineRaster(target, this.#limits.maxBytes);
    if (!raster || this.#pixels + raster.pixels > this.#limits.maxPixels) return undefined;
    this.#pixels += raster.pixels;
    return raster.url;
  }

  /** Whether an attribute's value names something outside the document (`url(file.svg#a)`). */
  #refersOutside(value: string): boolean {
    if (!value.toLowerCase().includes('url')) return false;
    let verdict = this.#checked.get(value);
    if (verdict === undefined) {
      verdict = !cssValueIsLocal(css.parse(value, { context: 'value', onParseError: () => undefined }), false);
      this.#checked.set(value, verdict);
    }
    return verdict;
  }
}

/**
 * Whether a parsed CSS value refers to nothing outside the document: every `url()` is `url(#id)`,
 * nothing is left unparsed that could hide one, and (for `functions`) every function is a colour
 * or a transform.
 */
function cssValueIsLocal(value: css.CssNode, functions: boolean): boolean {
  let local = true;
  css.walk(value, (node) => {
    if (node.type === 'Url') {
      if (!node.value.trim().startsWith('#')) local = false;
    } else if (node.type === 'Function') {
      if (node.name.toLowerCase() === 'url' || (functions && !CSS_FUNCTIONS.has(node.name.toLowerCase()))) {
        local = false;
      }
    } else if (node.type === 'Raw') {
      if (node.value.includes('(') || node.value.includes('\\')) local = false;
    }
  });
  return local;
}

/** The declarations of a CSS block that are allowed, as CSS text. */
function safeDeclarationList(block: css.List<css.CssNode>): string {
  const kept: string[] = [];
  block.forEach((node) => {
    if (node.type !== 'Declaration') return;
    const property = node.property.toLowerCase();
    if (!PRESENTATION_ATTRIBUTES.has(property) || !cssValueIsLocal(node.value, true)) return;
    kept.push(`${property}:${css.generate(node.value)}${node.important ? '!important' : ''}`);
  });
  return kept.join(';');
}

/** A `style` attribute's allowed declarations. */
function safeDeclarations(text: string): string {
  const list = css.parse(text, { context: 'declarationList', onParseError: () => undefined });
  return list.type === 'DeclarationList' ? safeDeclarationList(list.children) : '';
}

/** A `<style>` element's rules with their allowed declarations; at-rules are dropped. */
function safeStylesheet(text: string): string {
  const sheet = css.parse(text, { context: 'stylesheet', onParseError: () => undefined });
  if (sheet.type !== 'StyleSheet') return '';
  const rules: string[] = [];
  sheet.children.forEach((node) => {
    if (node.type !== 'Rule' || node.prelude.type !== 'SelectorList') return;
    const declarations = safeDeclarationList(node.block.children);
    if (declarations) rules.push(`${css.generate(node.prelude)}{${declarations}}`);
  });
  return rules.join('');
}

/**
 * A data URL's raster image, checked: a declared raster type, at most `maxBytes` once decoded,
 * bytes that are really a PNG, JPEG or GIF (by their header, which also gives the size), re-encoded
 * as base64 under the type the bytes show. Undefined when any of it fails.
 */
function inlineRaster(target: string, maxBytes: number): { url: string; pixels: number } | undefined {
  if (target.slice(0, 5).toLowerCase() !== 'data:') return undefined;
  const comma = target.indexOf(',');
  if (comma < 0) return undefined;
  const [declared, ...parameters] = target
    .slice(5, comma)
    .split(';')
    .map((part) => part.trim().toLowerCase());
  if (!declared || !DECLARED_RASTER_TYPES.has(declared)) return undefined;
  const body = target.slice(comma + 1);
  const base64 = parameters.at(-1) === 'base64';
  // A first bound before decoding: base64 is 4 characters for 3 bytes, percent-encoding 1 to 3 for 1.
  if ((base64 ? (body.length * 3) / 4 : body.length / 3) > maxBytes + 3) return undefined;
  let bytes: Buffer;
  try {
    bytes = base64 ? Buffer.from(body, 'base64') : Buffer.from(decodeURIComponent(body), 'latin1');
  } catch {
    return undefined;
  }
  if (bytes.length > maxBytes) return undefined;
  let size: ReturnType<typeof imageSize>;
  try {
    size = imageSize(bytes);
  } catch {
    return undefined;
  }
  const type = size.type === undefined ? undefined : RASTER_TYPES.get(size.type);
  if (!type || !(size.width > 0 && size.height > 0)) return undefined;
  return { url: `data:${type};base64,${bytes.toString('base64')}`, pixels: size.width * size.height };
}

function escapeText(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

/** Attribute text; tab, newline and carriage return as references, so that the parser keeps them. */
function escapeAttribute(text: string): string {
  return escapeText(text)
    .replaceAll('"', '&quot;')
    .replaceAll('\t', '&#9;')
    .replaceAll('\n', '&#10;')
    .replaceAll('\r', '&#13;');
}

/** The size resvg gives a sanitized document, read from its root element alone. */
export function svgSize(svg: SafeSvg): { width: number; height: number } {
  try {
    const measured = new Resvg(svg.root, { font: { loadSystemFonts: false } });
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
  limits?: InlineRasterLimits;
}

export interface RasterImage {
  png: Uint8Array;
  width: number;
  height: number;
}

/**
 * Draws an untrusted SVG (see {@link sanitizeSvg}) as a PNG whose longer side is `size` pixels,
 * resvg and the PNG encoder working on libuv's thread pool. Runs in the drawing processes
 * (drawing.ts), which bound its time and memory. Rejects with an {@link SvgRenderError} when the
 * document is refused, is not an SVG, has no area or is longer than {@link MAX_ASPECT_RATIO}.
 */
export async function rasterizeSvg(svg: string, options: RasterizeOptions): Promise<RasterImage> {
  const safe = sanitizeSvg(svg, options.limits);
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
    const image = await renderAsync(safe.text, {
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
