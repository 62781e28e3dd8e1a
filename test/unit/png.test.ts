import { crc32, inflateSync } from 'node:zlib';
import { Resvg } from '@resvg/resvg-js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodePng, encodePngAsync } from '../../src/png.ts';

/** The chunks of a PNG file, each CRC checked. */
function chunks(png: Buffer): Array<{ type: string; data: Buffer }> {
  expect([...png.subarray(0, 8)]).toEqual([137, 80, 78, 71, 13, 10, 26, 10]);
  const out: Array<{ type: string; data: Buffer }> = [];
  for (let at = 8; at < png.length; ) {
    const length = png.readUInt32BE(at);
    const type = png.toString('latin1', at + 4, at + 8);
    const data = png.subarray(at + 8, at + 8 + length);
    expect(png.readUInt32BE(at + 8 + length)).toBe(crc32(png.subarray(at + 4, at + 8 + length)));
    out.push({ type, data });
    at += 12 + length;
  }
  return out;
}

/** What resvg (an independent PNG decoder) draws of the file at its own size: premultiplied RGBA. */
function drawnByResvg(png: Buffer, width: number, height: number): Uint8Array {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><image width="${width}" height="${height}" href="data:image/png;base64,${png.toString('base64')}"/></svg>`;
  return new Resvg(svg).render().pixels;
}

const image = fc
  .record({ width: fc.integer({ min: 1, max: 12 }), height: fc.integer({ min: 1, max: 12 }) })
  .chain(({ width, height }) =>
    fc
      .array(
        fc
          .tuple(fc.constantFrom(0, 1, 3, 128, 254, 255, 255, 255), fc.nat(255), fc.nat(255), fc.nat(255))
          // Premultiplied, as resvg renders: no channel above alpha.
          .map(([a, r, g, b]) => [(r * a) / 255, (g * a) / 255, (b * a) / 255].map(Math.round).concat(a)),
        { minLength: width * height, maxLength: width * height },
      )
      .map((pixels) => ({ width, height, pixels: Uint8Array.from(pixels.flat()) })),
  );

describe('encodePng', () => {
  it('GIVEN any premultiplied RGBA image THEN resvg decodes the file back to the same pixels (within rounding where translucent)', () => {
    fc.assert(
      fc.property(image, ({ width, height, pixels }) => {
        const png = encodePng({ width, height, pixels, premultiplied: true });
        const back = drawnByResvg(png, width, height);
        for (let i = 0; i < pixels.length; i += 4) {
          const alpha = pixels[i + 3] as number;
          expect(back[i + 3]).toBe(alpha);
          for (let c = 0; c < 3; c++) {
            const diff = Math.abs((back[i + c] as number) - (pixels[i + c] as number));
            expect(diff).toBeLessThanOrEqual(alpha === 255 || alpha === 0 ? 0 : 1);
          }
        }
      }),
      { numRuns: 60 },
    );
  });

  it('GIVEN an image THEN the file is IHDR (8-bit RGBA), one IDAT of unfiltered rows, IEND, every CRC right', async () => {
    const pixels = Uint8Array.from({ length: 3 * 2 * 4 }, (_, i) => (i * 37) % 256).map((v, i) =>
      i % 4 === 3 ? 255 : v,
    );
    const png = encodePng({ width: 3, height: 2, pixels });
    const parts = chunks(png);
    expect(parts.map((c) => c.type)).toEqual(['IHDR', 'IDAT', 'IEND']);
    const header = parts[0]?.data as Buffer;
    expect([header.readUInt32BE(0), header.readUInt32BE(4), ...header.subarray(8)]).toEqual([3, 2, 8, 6, 0, 0, 0]);
    const rows = inflateSync(parts[1]?.data as Buffer);
    expect([...rows]).toEqual([0, ...pixels.subarray(0, 12), 0, ...pixels.subarray(12)]);
    expect(await encodePngAsync({ width: 3, height: 2, pixels })).toEqual(png);
  });

  it('GIVEN a size that does not match the pixels THEN it says so', () => {
    expect(() => encodePng({ width: 2, height: 2, pixels: new Uint8Array(12) })).toThrow(
      '2×2 RGBA needs 16 bytes, not 12',
    );
    expect(() => encodePng({ width: 0, height: 2, pixels: new Uint8Array(0) })).toThrow('positive whole size');
  });
});
