import type { CollectionState } from './collection.ts';

/** Escapes text for SVG/XML content and attributes. */
export function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function hsl(hue: number, saturation: number, lightness: number): string {
  return `hsl(${Math.round(((hue % 360) + 360) % 360)} ${saturation}% ${lightness}%)`;
}

function clip(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/**
 * A token's artwork, drawn from its traits: background from the first trait, body and details
 * from the others, and its name as a caption. The same token always gets the same picture.
 */
export function tokenSvg(collection: CollectionState, index: number): string {
  const hue = collection.blueprint.hue;
  const t = (trait: number) => collection.traitValues[trait]?.[index] ?? 0;
  const background = hsl(hue + t(0) * 41, 45, 82);
  const body = hsl(hue + 180 + t(1) * 29, 55, 48);
  const accent = hsl(hue + 90 + t(2) * 53, 70, 35);
  const caption = escapeXml(clip(collection.tokenName(index), 34));
  const shape =
    collection.standard === 'ERC1155'
      ? `<rect x="176" y="120" width="160" height="240" rx="48" fill="${body}"/><rect x="226" y="80" width="60" height="56" rx="10" fill="${accent}"/><circle cx="256" cy="260" r="44" fill="${background}" opacity="0.7"/>`
      : `<ellipse cx="256" cy="250" rx="150" ry="140" fill="${body}"/><polygon points="140,160 170,60 220,130" fill="${body}"/><polygon points="372,160 342,60 292,130" fill="${body}"/><circle cx="205" cy="230" r="${18 + t(2) * 3}" fill="#fff"/><circle cx="307" cy="230" r="${18 + t(2) * 3}" fill="#fff"/><circle cx="205" cy="232" r="9" fill="${accent}"/><circle cx="307" cy="232" r="9" fill="${accent}"/><path d="M216 305 Q256 ${320 + t(3) * 6} 296 305" stroke="${accent}" stroke-width="8" fill="none" stroke-linecap="round"/>`;
  return [
    '<svg xmlns="http://www.w3.org/2000/svg" width="512" height="512" viewBox="0 0 512 512">',
    `<rect width="512" height="512" fill="${background}"/>`,
    shape,
    `<rect x="0" y="430" width="512" height="82" fill="#000" opacity="0.55"/>`,
    `<text x="256" y="482" font-family="Helvetica, Arial, sans-serif" font-size="30" fill="#fff" text-anchor="middle">${caption}</text>`,
    '</svg>',
  ].join('');
}

/** A collection's logo: its symbol on a disc of the collection's colour. */
export function logoSvg(collection: CollectionState): string {
  const hue = collection.blueprint.hue;
  const symbol = escapeXml(clip(collection.blueprint.symbol, 6));
  return [
    '<svg xmlns="http://www.w3.org/2000/svg" width="256" height="256" viewBox="0 0 256 256">',
    `<circle cx="128" cy="128" r="124" fill="${hsl(hue, 60, 45)}"/>`,
    `<circle cx="128" cy="128" r="100" fill="${hsl(hue + 30, 60, 60)}"/>`,
    `<text x="128" y="142" font-family="Helvetica, Arial, sans-serif" font-size="40" font-weight="bold" fill="#fff" text-anchor="middle">${symbol}</text>`,
    '</svg>',
  ].join('');
}
