import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileCursorStore } from '../../../src/store/files/cursors.ts';
import { StoreFileError } from '../../../src/store/files/state.ts';

let dir: string;
let file: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'floorwatch-cursors-'));
  file = join(dir, 'cursors.json');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The cursor file's content once it exists, polled until `ms` pass. */
async function writtenWithin(ms: number): Promise<unknown> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return JSON.parse(await readFile(file, 'utf8'));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || Date.now() > deadline) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('FileCursorStore', () => {
  it('GIVEN no file THEN no cursor; WHEN advanced THEN the file is written lazily, only forward, and read back', async () => {
    const cursors = await FileCursorStore.open(file, { writeDelayMs: 20 });
    expect(await cursors.get('devnet')).toBeUndefined();
    await cursors.advance('devnet', 120);
    await cursors.advance('devnet', 100);
    expect(await cursors.get('devnet')).toBe(120);
    // Written by itself after its delay, without a flush: polled, since a busy machine runs the timer late.
    expect(await writtenWithin(10_000)).toEqual({ v: 1, networks: { devnet: 120 } });
    await cursors.advance('devnet', 130);
    await cursors.flush();
    const again = await FileCursorStore.open(file);
    expect(await again.get('devnet')).toBe(130);
    await expect(again.advance('devnet', -1)).rejects.toThrow(RangeError);
  });

  it('GIVEN a file that is not a cursor file THEN opening it fails with the file and the reason, and leaves it as it was', async () => {
    for (const [text, reason] of [
      ['{"v":1,"networks":{"devnet":"12"}}', /invalid cursor for "devnet"/],
      ['{"v":2,"networks":{}}', /not a cursor file of version 1/],
      ['not json', /is not valid JSON/],
    ] as const) {
      await writeFile(file, text);
      const error = await FileCursorStore.open(file).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreFileError);
      expect(String((error as Error).message)).toMatch(reason);
      expect((error as Error).message).toContain(file);
      expect(await readFile(file, 'utf8')).toBe(text);
    }
  });
});
