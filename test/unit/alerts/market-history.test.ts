import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MarketRecorder } from '../../../src/alerts/market.ts';
import type { ChainEvent } from '../../../src/alerts/types.ts';
import { FLOOR_SAMPLE_INTERVAL_MS } from '../../../src/core/market.ts';
import { FileMarketHistory } from '../../../src/store/files/market-history.ts';
import { COLLECTION, chainEvent, hash, OTHER_COLLECTION } from './fixtures.ts';

const DAY = 24 * 60 * 60 * 1000;
const NOW = Date.parse('2026-11-21T12:00:00Z');
const logger = pino({ level: 'silent' });

let dir: string;
let file: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'floorwatch-history-'));
  file = join(dir, 'market-history.jsonl');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/**
 * The file store with the alert path's recorder in front (sales are gathered, then written): reads
 * wait for what was gathered to be written, as the alert path's `settled()` does.
 */
async function openAt(path: string, now: number) {
  const store = await FileMarketHistory.open(path, { logger, now: () => now });
  const recorder = new MarketRecorder({ history: store, logger, now: () => now, flushMs: 60_000 });
  const written = async () => {
    await recorder.flush();
    await store.flushed();
  };
  const after =
    <A extends unknown[], R>(read: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      await written();
      return read(...args);
    };
  return {
    sale: (event: ChainEvent) => recorder.sale(event),
    reorged: (network: string, txnHash: string) => recorder.reorged(network, txnHash),
    floor: (network: string, collection: string, usd: number, at: number, lookedUp?: boolean) =>
      store.floor(network, collection, usd, at, lookedUp),
    since: after(() => store.since()),
    activity: after((...args: Parameters<FileMarketHistory['activity']>) => store.activity(...args)),
    daily: after((...args: Parameters<FileMarketHistory['daily']>) => store.daily(...args)),
    lastSale: after((...args: Parameters<FileMarketHistory['lastSale']>) => store.lastSale(...args)),
    close: async () => {
      await recorder.close();
      await store.close();
    },
  };
}
const open = (now = NOW) => openAt(file, now);
const jsonl = (lines: readonly object[]) => lines.map((l) => `${JSON.stringify(l)}\n`).join('');
type TokenEntry = [string, string, number | null] | [string, string, number | null, string, string, number];
const sale = (at: number, tx: string, tokens: TokenEntry[], c = COLLECTION) => ({
  k: 'sale',
  n: 'polygon',
  c,
  at,
  tx,
  t: tokens,
});

describe('market history on disk', () => {
  it('GIVEN a week-old file with a reorganised sale and a torn last line WHEN opened THEN old sales are gone, the windows count the rest and the file is compacted', async () => {
    await writeFile(
      file,
      `${jsonl([
        { k: 'history', v: 1, since: NOW - 12 * DAY },
        sale(NOW - 10 * DAY, hash(1), [['1', '1', 500]]),
        { k: 'floor', n: 'polygon', c: COLLECTION, at: NOW - 9 * DAY, usd: 80 },
        { k: 'floor', n: 'polygon', c: COLLECTION, at: NOW - 8 * DAY, usd: 100 },
        sale(NOW - 3 * DAY, hash(2), [
          ['2', '1', 120],
          ['3', '1', null],
        ]),
        { k: 'floor', n: 'polygon', c: COLLECTION, at: NOW - 2 * DAY, usd: 110 },
        sale(NOW - 2 * 60 * 60 * 1000, hash(3), [['4', '1', 150]]),
        sale(NOW - 60 * 60 * 1000, hash(4), [['5', '1', 999]]),
        { k: 'reorg', n: 'polygon', tx: hash(4) },
        { ...sale(NOW - 30 * 60 * 1000, hash(5), [['6', '1', 40, '2500000', '0xdc', 6]]), b: '0xb1' },
        // What was paid must be whole smallest units with sensible decimals: else the line is not read.
        { ...sale(NOW - 20 * 60 * 1000, hash(6), [['7', '1', 40, '2.5', '0xdc', 6]]), b: '0xb2' },
        { ...sale(NOW - 20 * 60 * 1000, hash(7), [['8', '1', 40, '25', '0xdc', 99]]), b: '0xb2' },
      ])}{"k":"sale","n":"pol`,
    );
    const history = await open();
    try {
      expect(await history.since()).toBe(NOW - 12 * DAY);
      const day = await history.activity('polygon', COLLECTION, DAY, NOW);
      expect(day).toMatchObject({ complete: true, sales: 2, priced: 2, volumeUsd: 190 });
      // The last floor before the window began.
      expect(day.floorThen).toEqual({ at: NOW - 2 * DAY, usd: 110 });
      const week = await history.activity('polygon', COLLECTION, 7 * DAY, NOW);
      expect(week).toMatchObject({ complete: true, sales: 4, priced: 3, volumeUsd: 310 });
      // The floor when the week began is kept although older than the week.
      expect(week.floorThen).toEqual({ at: NOW - 8 * DAY, usd: 100 });
      expect((await history.activity('polygon', OTHER_COLLECTION, 7 * DAY, NOW)).sales).toBe(0);
      expect(await history.lastSale('polygon', COLLECTION, '5')).toBeUndefined();
      expect(await history.lastSale('polygon', COLLECTION, '2')).toEqual({ at: NOW - 3 * DAY, usd: 120, units: '1' });
      expect(await history.lastSale('polygon', COLLECTION, '6')).toEqual({
        at: NOW - 30 * 60 * 1000,
        usd: 40,
        units: '1',
        buyer: '0xb1',
        paid: { amount: '2500000', currency: '0xdc', decimals: 6 },
      });
      expect(await history.lastSale('polygon', COLLECTION, '7')).toBeUndefined();
      expect(await history.lastSale('polygon', COLLECTION, '8')).toBeUndefined();
    } finally {
      await history.close();
    }
    const lines = (await readFile(file, 'utf8')).trim().split('\n');
    expect(JSON.parse(lines[0] ?? '')).toEqual({ k: 'history', v: 1, since: NOW - 12 * DAY });
    expect(lines).toHaveLength(1 + 2 + 3);
    expect(lines.map((line) => JSON.parse(line))).toContainEqual({
      ...sale(NOW - 30 * 60 * 1000, hash(5), [['6', '1', 40, '2500000', '0xdc', 6]]),
      b: '0xb1',
    });
    const text = lines.join('\n');
    for (const gone of [hash(1), hash(4), '"reorg"', '"usd":80']) expect(text).not.toContain(gone);
  });

  it('GIVEN no file WHEN sales and floors are recorded THEN they survive a restart, recording starts now, and a sale seen twice counts once', async () => {
    const history = await open();
    expect(await history.since()).toBe(NOW);
    const event = chainEvent({
      ts: new Date(NOW - 1_000).toISOString(),
      tokens: [{ tokenId: '7', amount: '2' }],
    });
    history.sale(event);
    history.sale(event);
    await history.floor('polygon', COLLECTION, 42, NOW - 500);
    // Too close to the last sample: the same floor for the history.
    await history.floor('polygon', COLLECTION, 43, NOW - 500 + FLOOR_SAMPLE_INTERVAL_MS / 2);
    await history.close();

    const again = await open(NOW + 1_000);
    try {
      expect(await again.since()).toBe(NOW);
      const day = await again.activity('polygon', COLLECTION, DAY, NOW + 1_000);
      // Without a platform a sale is counted, not priced.
      expect(day).toMatchObject({ complete: false, from: NOW, sales: 1, priced: 0, volumeUsd: 0 });
      expect(day.floorThen).toEqual({ at: NOW - 500, usd: 42 });
      expect(await again.lastSale('polygon', COLLECTION, '7')).toEqual({
        at: NOW - 1_000,
        units: '2',
        buyer: event.to,
      });
    } finally {
      await again.close();
    }
  });

  it('GIVEN a floor sample of the alerts WHEN a command looks the floor up within the sampling interval THEN its floor replaces the sample, in memory and after a restart', async () => {
    const history = await open();
    const days = [new Date(NOW).toISOString().slice(0, 10)];
    const dayOf = (at: number) => new Date(at).toISOString().slice(0, 10);
    await history.floor('polygon', COLLECTION, 113.4, NOW - 60_000);
    await history.floor('polygon', COLLECTION, 120, NOW - 30_000);
    expect((await history.daily('polygon', COLLECTION, days, dayOf)).floor).toEqual([{ label: days[0], value: 113.4 }]);
    await history.floor('polygon', COLLECTION, 133.67, NOW, true);
    expect((await history.daily('polygon', COLLECTION, days, dayOf)).floor).toEqual([
      { label: days[0], value: 133.67 },
    ]);
    await history.close();
    const again = await open(NOW + 1_000);
    try {
      expect((await again.daily('polygon', COLLECTION, days, dayOf)).floor).toEqual([
        { label: days[0], value: 133.67 },
      ]);
    } finally {
      await again.close();
    }
  });

  it('GIVEN sales waiting for their price or recorded WHEN their transaction is reorganised away THEN they are forgotten, on disk too', async () => {
    await writeFile(
      file,
      jsonl([{ k: 'history', v: 1, since: NOW - DAY }, sale(NOW - 60_000, hash(9), [['8', '1', 10]])]),
    );
    const history = await open();
    history.reorged('polygon', hash(9));
    expect((await history.activity('polygon', COLLECTION, DAY, NOW)).sales).toBe(0);
    await history.close();
    const reopened = await open();
    try {
      expect((await reopened.activity('polygon', COLLECTION, DAY, NOW)).sales).toBe(0);
    } finally {
      await reopened.close();
    }
  });

  it('GIVEN a file that cannot be written THEN the bot still starts and the history lives in memory', async () => {
    const history = await openAt(join(dir, 'no-such-dir', 'market-history.jsonl'), NOW);
    try {
      history.sale(chainEvent({ ts: new Date(NOW).toISOString() }));
      expect(await history.since()).toBe(NOW);
      expect((await history.activity('polygon', COLLECTION, DAY, NOW)).sales).toBe(1);
    } finally {
      await history.close();
    }
  });

  it('GIVEN a file of a newer format THEN it is left untouched and the history lives in memory', async () => {
    const content = jsonl([
      { k: 'history', v: 99, since: NOW - DAY },
      { k: 'something', new: true },
    ]);
    await writeFile(file, content);
    const history = await open();
    history.sale(chainEvent({ ts: new Date(NOW).toISOString() }));
    await history.close();
    expect(await readFile(file, 'utf8')).toBe(content);
  });
});

describe('market history day by day', () => {
  it('GIVEN sales and floor samples over days THEN each day has its volume and its closing floor, carried over days without a sample', async () => {
    await writeFile(
      file,
      jsonl([
        { k: 'history', v: 1, since: NOW - 6 * DAY },
        { k: 'floor', n: 'polygon', c: COLLECTION, at: NOW - 5 * DAY, usd: 70 },
        { k: 'floor', n: 'polygon', c: COLLECTION, at: NOW - 3 * DAY, usd: 90 },
        { k: 'floor', n: 'polygon', c: COLLECTION, at: NOW - 3 * DAY + 60 * 60 * 1000, usd: 95 },
        sale(NOW - 3 * DAY, hash(1), [
          ['1', '1', 120],
          ['2', '1', null],
        ]),
        sale(NOW - 3 * DAY + 1_000, hash(2), [['3', '1', 30]]),
        sale(NOW - DAY, hash(3), [['4', '1', 200]]),
      ]),
    );
    const history = await open();
    const dayOf = (at: number) => new Date(at).toISOString().slice(0, 10);
    const days = [3, 2, 1, 0].map((n) => dayOf(NOW - n * DAY));
    const daily = await history.daily('polygon', COLLECTION, days, dayOf);
    expect(daily.volume.map((p) => p.value)).toEqual([150, 0, 200, 0]);
    expect(daily.floor.map((p) => [p.label, p.value])).toEqual([
      [days[0], 95],
      [days[1], 95],
      [days[2], 95],
      [days[3], 95],
    ]);
    expect(await history.daily('polygon', OTHER_COLLECTION, days, dayOf)).toEqual({
      floor: [],
      volume: days.map((label) => ({ label, value: 0 })),
    });
    await history.close();
  });
});
