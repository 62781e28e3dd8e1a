import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LineSplitter } from '../../../src/platform/ndjson.ts';

/** Feeds `chunks` and returns every completed line plus the unfinished rest. */
function split(chunks: readonly Buffer[]): { lines: string[]; rest: string | undefined } {
  const splitter = new LineSplitter();
  const lines: string[] = [];
  for (const chunk of chunks) lines.push(...splitter.push(chunk));
  return { lines, rest: splitter.flush() };
}

/** Feeds `chunks` through each() and returns the completed lines. */
function visitAll(chunks: readonly Buffer[]): string[] {
  const splitter = new LineSplitter();
  const lines: string[] = [];
  for (const chunk of chunks) splitter.each(chunk, { line: (line) => lines.push(line) > 0 });
  return lines;
}

const INPUT = [
  '',
  '{"log":{"id":1,"name":"Drache 🐉","kana":"ドラゴン"}}',
  '',
  '{"log":{"id":2,"umlaut":"Ü","values":["a","b"]}}',
  '{"webrpcError":{"code":-9}}',
  '',
  '',
  '{"receipt":{"txnHash":"0xabc"}}\r',
  '',
];
const BYTES = Buffer.from(`${INPUT.join('\n')}\n`, 'utf8');

describe('LineSplitter', () => {
  it('GIVEN the whole input in one chunk WHEN split THEN every line comes out, blank heartbeats as empty strings', () => {
    expect(split([BYTES])).toEqual({ lines: INPUT, rest: undefined });
  });

  it('GIVEN the input cut in two at every byte position WHEN split THEN the lines are always the same', () => {
    for (let cut = 0; cut <= BYTES.length; cut++) {
      const result = split([BYTES.subarray(0, cut), BYTES.subarray(cut)]);
      expect(result, `cut at byte ${cut}`).toEqual({ lines: INPUT, rest: undefined });
    }
  });

  it('GIVEN the input one byte at a time WHEN split THEN multi-byte characters are decoded whole', () => {
    const chunks = Array.from({ length: BYTES.length }, (_, i) => BYTES.subarray(i, i + 1));
    expect(split(chunks)).toEqual({ lines: INPUT, rest: undefined });
  });

  it('GIVEN any partition of the input into chunks WHEN split THEN the lines are the same', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: BYTES.length - 1 }), { maxLength: 40 }), (cuts) => {
        const points = [0, ...cuts.sort((a, b) => a - b), BYTES.length];
        const chunks = points.slice(1).map((end, i) => BYTES.subarray(points[i], end));
        expect(split(chunks)).toEqual({ lines: INPUT, rest: undefined });
      }),
      { numRuns: 300 },
    );
  });

  it('GIVEN any partition of the input WHEN visited line by line with each() THEN the lines and counts match push(), and a visit returning false stops there', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: BYTES.length - 1 }), { maxLength: 40 }), (cuts) => {
        const points = [0, ...cuts.sort((a, b) => a - b), BYTES.length];
        const chunks = points.slice(1).map((end, i) => BYTES.subarray(points[i], end));
        const splitter = new LineSplitter();
        const seen: string[] = [];
        let counted = 0;
        for (const chunk of chunks) counted += splitter.each(chunk, { line: (line) => seen.push(line) > 0 });
        expect(seen).toEqual(INPUT);
        expect(counted).toBe(INPUT.length);
      }),
      { numRuns: 300 },
    );
    const splitter = new LineSplitter();
    const seen: string[] = [];
    expect(splitter.each(BYTES, { line: (line) => seen.push(line) < 2 })).toBe(2);
    expect(seen).toEqual(INPUT.slice(0, 2));
  });

  it('GIVEN arbitrary text lines WHEN cut anywhere THEN they come back unchanged', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.string({ unit: 'grapheme', maxLength: 30 }).map((s) => s.replaceAll('\n', ' ')),
          { maxLength: 20 },
        ),
        fc.array(fc.integer({ min: 0, max: 1_000 }), { maxLength: 10 }),
        (lines, rawCuts) => {
          const bytes = Buffer.from(lines.map((l) => `${l}\n`).join(''), 'utf8');
          const cuts = [...new Set(rawCuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
          const points = [0, ...cuts, bytes.length];
          const chunks = points.slice(1).map((end, i) => bytes.subarray(points[i], end));
          expect(split(chunks)).toEqual({ lines, rest: undefined });
          expect(visitAll(chunks)).toEqual(lines);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('GIVEN chunks of ASCII only and chunks with other bytes WHEN visited THEN every line reads as UTF-8 decodes it', () => {
    const chunks = [
      Buffer.from('{"a":"plain"}\n{"b":1}\n'),
      Buffer.from('{"c":"caf\u00e9 🐉"}\n', 'utf8'),
      Buffer.concat([Buffer.from('{"d":"'), Buffer.from([0xff, 0xc3]), Buffer.from('"}\n{"e":2}\n')]),
      Buffer.from('{"f":"ascii again"}\n'),
    ];
    expect(visitAll(chunks)).toEqual(Buffer.concat(chunks).toString('utf8').split('\n').slice(0, -1));
  });

  it('GIVEN input that does not end with a newline WHEN flushed THEN the unfinished line is returned once', () => {
    const splitter = new LineSplitter();
    expect(splitter.push(Buffer.from('{"a":1}\n{"b":'))).toEqual(['{"a":1}']);
    expect(splitter.pendingBytes).toBe(5);
    expect(splitter.push(Buffer.from('2'))).toEqual([]);
    expect(splitter.pendingBytes).toBe(6);
    expect(splitter.flush()).toBe('{"b":2');
    expect(splitter.pendingBytes).toBe(0);
    expect(splitter.flush()).toBeUndefined();
  });

  it('GIVEN empty chunks WHEN pushed THEN nothing changes', () => {
    const splitter = new LineSplitter();
    expect(splitter.push(Buffer.alloc(0))).toEqual([]);
    expect(splitter.push(Buffer.from('x'))).toEqual([]);
    expect(splitter.push(Buffer.alloc(0))).toEqual([]);
    expect(splitter.push(Buffer.from('\n'))).toEqual(['x']);
  });

  it('GIVEN a 4 MiB line in 1 KiB chunks WHEN split THEN the work stays linear (no re-copying per chunk)', () => {
    const line = 'x'.repeat(4 * 1024 * 1024);
    const bytes = Buffer.from(`${line}\n`);
    const splitter = new LineSplitter();
    const started = performance.now();
    const lines: string[] = [];
    for (let i = 0; i < bytes.length; i += 1024) lines.push(...splitter.push(bytes.subarray(i, i + 1024)));
    // Quadratic copying would move ~8 GiB here; linear work takes milliseconds. The bound is generous.
    expect(performance.now() - started).toBeLessThan(3_000);
    expect(lines).toHaveLength(1);
    expect(lines[0]?.length).toBe(line.length);
  });
});

describe('LineSplitter on stream-sized lines', () => {
  /** 1.2-2 KB log lines like a SubscribeEvents stream's, some with multi-byte text, and blank heartbeats. */
  function streamLines(seed: number, count: number): string[] {
    let state = seed;
    const next = () => {
      state = (state * 48_271) % 2_147_483_647;
      return state / 2_147_483_647;
    };
    const names = ['Drachen Ü', 'Dragon 🐉', 'ドラゴン', 'Wyvern', 'Лунный кот', 'Fénix ñ', 'Basilisk'];
    const lines: string[] = [];
    for (let i = 0; i < count; i++) {
      if (next() < 0.1) {
        lines.push('');
        continue;
      }
      const name = next() < 0.3 ? (names[Math.floor(next() * names.length)] as string) : 'ascii';
      const pad = 'ab'.repeat(600 + Math.floor(next() * 400));
      lines.push(
        JSON.stringify({ log: { id: i, uid: `137-${i}`, values: [`https://meta.example/${name}/${i}`], pad } }),
      );
    }
    return lines;
  }

  it('GIVEN long ASCII and multi-byte lines mixed WHEN cut into chunks of any size THEN every line comes back whole', () => {
    const lines = streamLines(7, 200);
    const bytes = Buffer.from(lines.map((l) => `${l}\n`).join(''), 'utf8');
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 9_000 }), fc.integer({ min: 1, max: 2 ** 30 }), (maxChunk, seed) => {
        let state = seed;
        const chunks: Buffer[] = [];
        for (let at = 0; at < bytes.length; ) {
          state = (state * 48_271) % 2_147_483_647;
          const size = 1 + (state % maxChunk);
          chunks.push(bytes.subarray(at, at + size));
          at += size;
        }
        expect(split(chunks)).toEqual({ lines, rest: undefined });
      }),
      { numRuns: 60 },
    );
  });

  it('GIVEN a chunk ending inside a multi-byte character of a long line WHEN the rest comes THEN it is decoded whole', () => {
    const line = `{"log":{"name":"${'x'.repeat(1_500)}🐉${'y'.repeat(300)}"}}`;
    const bytes = Buffer.from(`${line}\n{"log":{"id":2}}\n`, 'utf8');
    const dragon = bytes.indexOf(Buffer.from('🐉', 'utf8'));
    for (let cut = dragon + 1; cut < dragon + 4; cut++) {
      expect(split([bytes.subarray(0, cut), bytes.subarray(cut)])).toEqual({
        lines: [line, '{"log":{"id":2}}'],
        rest: undefined,
      });
    }
  });
});
