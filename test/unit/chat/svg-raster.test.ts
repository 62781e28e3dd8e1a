import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Resvg } from '@resvg/resvg-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isInternalAddress } from '../../../src/chat/images/network.ts';
import { looksLikeSvg } from '../../../src/chat/images/sniff.ts';
import {
  MAX_ASPECT_RATIO,
  rasterizeSvg,
  SvgRenderError,
  sanitizeSvg,
  svgSize,
  tokenImageFonts,
} from '../../../src/chat/images/svg.ts';

const SIZE = 64;
let dir: string;
let redPng: string;
let redPngBase64: string;

/** A 20×20 SVG: a blue square with `inner` drawn over it. */
function square(inner: string, head = ''): string {
  return `${head}<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="20" height="20"><rect width="20" height="20" fill="blue"/>${inner}</svg>`;
}

/** RGBA of the pixel at (x, y) of a PNG. */
function pixel(png: Uint8Array, x: number, y: number): number[] {
  const bytes = Buffer.from(png);
  const [w, h] = [bytes.readUInt32BE(16), bytes.readUInt32BE(20)];
  const image = new Resvg(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}"><image href="data:image/png;base64,${bytes.toString('base64')}" width="${w}" height="${h}"/></svg>`,
    { font: { loadSystemFonts: false } },
  ).render();
  const pixels = image.pixels;
  const at = (y * image.width + x) * 4;
  return [...pixels.subarray(at, at + 4)];
}

const RED = [255, 0, 0, 255];
const BLUE = [0, 0, 255, 255];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'floorwatch-svg-'));
  const red = new Resvg(
    '<svg xmlns="http://www.w3.org/2000/svg" width="20" height="20"><rect width="20" height="20" fill="red"/></svg>',
  )
    .render()
    .asPng();
  redPng = join(dir, 'red.png');
  redPngBase64 = red.toString('base64');
  await writeFile(redPng, red);
  await writeFile(
    join(dir, 'red.svg'),
    '<svg xmlns="http://www.w3.org/2000/svg" width="20" height="20"><rect width="20" height="20" fill="red"/></svg>',
  );
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('drawing untrusted SVG token images', () => {
  it('GIVEN a 300×150 SVG THEN the PNG is 64×32 (the longer side fits), opaque where the SVG is transparent', async () => {
    const drawn = await rasterizeSvg(
      '<svg xmlns="http://www.w3.org/2000/svg" width="300" height="150"><circle cx="150" cy="75" r="10" fill="green"/></svg>',
      { size: SIZE },
    );
    expect([drawn.width, drawn.height]).toEqual([64, 32]);
    expect(Buffer.from(drawn.png.subarray(1, 4)).toString()).toBe('PNG');
    expect(pixel(drawn.png, 1, 1)).toEqual([255, 255, 255, 255]);
  });

  it('GIVEN a tall SVG THEN its height fits; GIVEN one longer than 20:1 THEN it is refused before drawing', async () => {
    const tall = await rasterizeSvg('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 40"/>', { size: SIZE });
    expect([tall.width, tall.height]).toEqual([16, 64]);
    const started = performance.now();
    await expect(
      rasterizeSvg('<svg xmlns="http://www.w3.org/2000/svg" width="1" height="10000000"/>', { size: SIZE }),
    ).rejects.toThrow(SvgRenderError);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(MAX_ASPECT_RATIO).toBe(20);
  });

  it.each([
    ['an absolute path', () => `<image href="${redPng}" width="20" height="20"/>`],
    ['an xlink:href', () => `<image xlink:href="${redPng}" width="20" height="20"/>`],
    [
      'an href with character references',
      () => `<image href="${redPng.replace(/\//g, '&#47;')}" width="20" height="20"/>`,
    ],
    ['an SVG file', () => `<image href="${join(dir, 'red.svg')}" width="20" height="20"/>`],
    [
      'an feImage filter',
      () =>
        `<filter id="f" x="0" y="0" width="1" height="1"><feImage href="${redPng}"/></filter><rect width="20" height="20" filter="url(#f)"/>`,
    ],
    [
      'an SVG in a data URL that names the file',
      () =>
        `<image href="data:image/svg+xml;base64,${Buffer.from(square(`<image href="${redPng}" width="20" height="20"/>`)).toString('base64')}" width="20" height="20"/>`,
    ],
  ])(
    'GIVEN an SVG whose image names a file on the bot’s disk through %s THEN the file is not drawn',
    async (_, inner) => {
      const svg = square(inner());
      // What resvg does with it unguarded: it reads the file.
      if (!inner().includes('data:')) {
        const raw = new Resvg(svg, { font: { loadSystemFonts: false } }).render().asPng();
        expect(pixel(raw, 5, 5)).toEqual(RED);
      }
      const drawn = await rasterizeSvg(svg, { size: SIZE });
      expect(pixel(drawn.png, 5, 5)).toEqual(BLUE);
    },
  );

  it('GIVEN a prefixed SVG namespace THEN a file named by its image is not drawn either', async () => {
    const svg = `<s:svg xmlns:s="http://www.w3.org/2000/svg" xmlns:q="http://www.w3.org/1999/xlink" width="20" height="20"><s:rect width="20" height="20" fill="blue"/><s:image q:href="${redPng}" width="20" height="20"/></s:svg>`;
    const drawn = await rasterizeSvg(svg, { size: SIZE });
    expect(pixel(drawn.png, 5, 5)).toEqual(BLUE);
  });

  it('GIVEN an image of /dev/zero (which hangs resvg) THEN the drawing finishes without it', async () => {
    const drawn = await rasterizeSvg(square('<image href="/dev/zero" width="20" height="20"/>'), { size: SIZE });
    expect(pixel(drawn.png, 5, 5)).toEqual(BLUE);
  }, 5_000);

  it('GIVEN entities declared in a DTD (which could smuggle an image in) THEN the SVG is refused', async () => {
    const svg = square('&x;', `<!DOCTYPE svg [<!ENTITY x "<image href='${redPng}' width='20' height='20'/>">]>`);
    await expect(rasterizeSvg(svg, { size: SIZE })).rejects.toThrow(/declares entities/);
  });

  it('GIVEN an inline PNG and internal references THEN they are drawn as before', async () => {
    const svg = square(
      `<defs><rect id="r" width="4" height="4" fill="green"/></defs><use href="#r" x="16" y="16"/><image href="data:image/png;base64,${redPngBase64}" width="10" height="10"/>`,
    );
    const drawn = await rasterizeSvg(svg, { size: SIZE });
    expect(pixel(drawn.png, 5, 5)).toEqual(RED);
    expect(pixel(drawn.png, 60, 60)).toEqual([0, 128, 0, 255]);
  });

  it('GIVEN a fake root in a comment before the real one THEN the size is the real root’s', () => {
    const svg = `<?xml version="1.0"?>\n<!-- <svg width="1" height="9999999"> -->\n<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">\n<svg xmlns="http://www.w3.org/2000/svg" width="100" height="50"><rect width="1" height="1"/></svg>`;
    expect(svgSize(sanitizeSvg(svg))).toEqual({ width: 100, height: 50 });
    expect(() => sanitizeSvg('<html><svg width="1" height="1"/></html>')).toThrow(SvgRenderError);
  });

  it('tells an SVG from other text', () => {
    expect(looksLikeSvg('\uFEFF<?xml version="1.0"?><!-- x --><svg xmlns="http://www.w3.org/2000/svg"/>')).toBe(true);
    expect(looksLikeSvg('<svg:svg xmlns:svg="http://www.w3.org/2000/svg"></svg:svg>')).toBe(true);
    expect(looksLikeSvg('<!doctype html><html><svg/></html>')).toBe(false);
    expect(looksLikeSvg('{"svg": true}')).toBe(false);
  });
});

describe('addresses an image may not be fetched from', () => {
  it.each([
    ['127.0.0.1', true],
    ['10.1.2.3', true],
    ['172.20.0.5', true],
    ['192.168.1.1', true],
    ['169.254.169.254', true],
    ['100.64.0.1', true],
    ['0.0.0.0', true],
    ['::1', true],
    ['::', true],
    ['::ffff:127.0.0.1', true],
    ['fd12:3456::1', true],
    ['fe80::1', true],
    ['8.8.8.8', false],
    ['104.16.0.1', false],
    ['2606:4700::6810:1', false],
    ['not an address', false],
  ])('%s internal: %s', (address, internal) => {
    expect(isInternalAddress(address)).toBe(internal);
  });
});

describe('what sanitizing keeps of ordinary SVGs', () => {
  const gallery = {
    'a token image of the local platform': `<svg xmlns="http://www.w3.org/2000/svg" width="512" height="512" viewBox="0 0 512 512"><rect width="512" height="512" fill="hsl(40 45% 82%)"/><ellipse cx="256" cy="250" rx="150" ry="140" fill="hsl(220 55% 48%)"/><polygon points="140,160 170,60 220,130" fill="hsl(220 55% 48%)"/><circle cx="205" cy="230" r="21" fill="#fff"/><path d="M216 305 Q256 326 296 305" stroke="hsl(130 70% 35%)" stroke-width="8" fill="none" stroke-linecap="round"/><rect x="0" y="430" width="512" height="82" fill="#000" opacity="0.55"/><text x="256" y="482" font-family="Helvetica, Arial, sans-serif" font-size="30" fill="#fff" text-anchor="middle">Moon Cat #1 &amp; &#60;friends&#62;</text></svg>`,
    'gradients, clips, masks, filters, patterns and <use>': `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" viewBox="0 0 100 100"><defs><linearGradient id="g" x1="0" x2="1"><stop offset="0" stop-color="gold"/><stop offset="1" stop-color="purple" stop-opacity="0.5"/></linearGradient><radialGradient id="r" xlink:href="#g" cx="0.5" cy="0.5" r="0.5"/><clipPath id="c"><circle cx="50" cy="50" r="40"/></clipPath><mask id="m"><rect width="100" height="100" fill="white"/><circle cx="70" cy="30" r="10" fill="black"/></mask><filter id="f"><feGaussianBlur stdDeviation="2"/><feOffset dx="2" dy="2"/></filter><pattern id="p" width="10" height="10" patternUnits="userSpaceOnUse"><rect width="5" height="5" fill="teal"/></pattern><symbol id="s" viewBox="0 0 10 10"><path d="M0 0L10 5L0 10z"/></symbol></defs><rect width="100" height="100" fill="url(#p)"/><g clip-path="url(#c)" mask="url(#m)"><rect width="100" height="100" fill="url(#g)"/><circle cx="50" cy="50" r="20" fill="url(#r)" filter="url(#f)"/></g><use href="#s" x="5" y="5" width="20" height="20" transform="rotate(10 15 15)"/></svg>`,
    'style attributes and a style element': `<svg xmlns="http://www.w3.org/2000/svg" width="200" height="100"><style>.base { fill: white; font-family: serif; font-size: 14px; } #bg { fill: black } g > rect.hl { stroke: red; stroke-width: 3 }</style><rect id="bg" width="100%" height="100%"/><g><rect class="hl" x="10" y="10" width="50" height="30" style="fill: rgb(0, 128, 255); opacity: .8"/></g><text x="10" y="70" class="base">Bag #1 <tspan style="font-weight:bold;fill:#ff0">Loot</tspan></text></svg>`,
    'a prefixed SVG namespace': `<s:svg xmlns:s="http://www.w3.org/2000/svg" width="40" height="40"><s:rect width="40" height="40" fill="navy"/><s:circle cx="20" cy="20" r="10" fill="orange"/></s:svg>`,
  };

  it.each(Object.entries(gallery))('GIVEN %s THEN the rebuilt document draws the same pixels', (_, svg) => {
    const options = { font: tokenImageFonts(), fitTo: { mode: 'width' as const, value: 256 }, background: '#ffffff' };
    const before = new Resvg(svg, options).render();
    const after = new Resvg(sanitizeSvg(svg).text, options).render();
    expect([after.width, after.height]).toEqual([before.width, before.height]);
    expect(Buffer.from(after.pixels).equals(Buffer.from(before.pixels))).toBe(true);
  });
});
