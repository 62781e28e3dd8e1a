import { SaxesParser } from 'saxes';

const SVG_NS = 'http://www.w3.org/2000/svg';

/**
 * Whether a text is an SVG document (for servers that do not say so in their content type): its
 * first element, read by the XML parser from the first 4 kB, is `svg` in the SVG namespace.
 */
export function looksLikeSvg(text: string): boolean {
  const parser = new SaxesParser({ xmlns: true, position: false });
  let verdict: boolean | undefined;
  parser.on('error', () => {
    verdict ??= false;
  });
  parser.on('opentag', (tag) => {
    verdict ??= tag.uri === SVG_NS && tag.local === 'svg';
  });
  try {
    parser.write(text.slice(0, 4096));
  } catch {
    // The verdict was taken before the error, or is false.
  }
  return verdict === true;
}
