// The completeness store (core/ports.ts CompletenessStore) on files and on PostgreSQL, held to the
// same behaviour: counts added per network and UTC day, read back by day range with what is not
// written yet, kept over a restart; on PostgreSQL, what two processes add adds up. A file that
// cannot be read is refused and left as it was.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CompletenessStore } from '../../src/core/ports.ts';
import { StoreFileError } from '../../src/core/store-errors.ts';
import { FileCompletenessStore } from '../../src/store/files/completeness.ts';
import { PgCompletenessStore } from '../../src/store/pg/completeness.ts';
import { Database } from '../../src/store/pg/database.ts';
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.ts';

const silent = pino({ level: 'silent' });
let postgres: TestPostgres;
let dir: string;
const toClose: Array<() => Promise<void>> = [];

beforeAll(async () => {
  postgres = await startTestPostgres();
  dir = await mkdtemp(join(tmpdir(), 'floorwatch-completeness-'));
}, 180_000);

afterAll(async () => {
  for (const close of toClose.reverse()) await close();
  await postgres?.stop();
  await rm(dir, { recursive: true, force: true });
});

interface Adapter {
  name: string;
  /** A store, and a function that opens another one on the same data (a restart, or a second process). */
  open(): Promise<{ store: CompletenessStore; again: () => Promise<CompletenessStore> }>;
}

const adapters: Adapter[] = [
  {
    name: 'files',
    async open() {
      const file = join(await mkdtemp(join(dir, 'store-')), 'completeness.json');
      return {
        store: await FileCompletenessStore.open(file, { writeDelayMs: 60_000 }),
        again: () => FileCompletenessStore.open(file),
      };
    },
  },
  {
    name: 'PostgreSQL',
    async open() {
      const url = await postgres.freshDatabase();
      const openOne = async () => {
        const db = await Database.open(url, { logger: silent, poolSize: 2 });
        toClose.push(() => db.close());
        return new PgCompletenessStore(db, { writeDelayMs: 60_000 });
      };
      return { store: await openOne(), again: openOne };
    },
  },
];

const DAY1 = new Date('2026-11-27T23:59:59.000Z');
const DAY2 = new Date('2026-11-28T00:00:00.000Z');

describe.each(adapters)('completeness store on $name', (adapter) => {
  it('GIVEN counts over two UTC days THEN a day range reads them per network, before and after they are written, and after a restart', async () => {
    const { store, again } = await adapter.open();
    store.add('devnet', { events: 3 }, DAY1);
    store.add('devnet', { events: 2, blocksReadBack: 10 }, DAY2);
    store.add('devnet', { blocksMissed: 4 }, DAY2);
    store.add('other', { events: 1 }, DAY2);
    // Nonsense adds nothing.
    store.add('devnet', { events: -5, blocksReadBack: 1.5 }, DAY2);
    const expected = [
      { network: 'devnet', day: '2026-11-27', events: 3, blocksReadBack: 0, blocksMissed: 0 },
      { network: 'devnet', day: '2026-11-28', events: 2, blocksReadBack: 10, blocksMissed: 4 },
      { network: 'other', day: '2026-11-28', events: 1, blocksReadBack: 0, blocksMissed: 0 },
    ];
    expect(await store.days('2026-11-27', '2026-11-28')).toEqual(expected);
    await store.flush();
    expect(await store.days('2026-11-27', '2026-11-28')).toEqual(expected);
    expect(await store.days('2026-11-28', '2026-11-28')).toEqual(expected.slice(1));
    store.add('devnet', { events: 1 }, DAY2);
    await store.flush();
    const restarted = await again();
    expect(await restarted.days('2026-11-28', '2026-11-28')).toEqual([{ ...expected[1], events: 3 }, expected[2]]);
  });
});

it('GIVEN two processes on one database THEN what each adds adds up, and each reads its own unwritten counts too', async () => {
  const { store: first, again } = await (adapters[1] as Adapter).open();
  const second = await again();
  first.add('devnet', { events: 5, blocksReadBack: 2 }, DAY2);
  second.add('devnet', { events: 7, blocksMissed: 1 }, DAY2);
  await first.flush();
  expect(await second.days('2026-11-28', '2026-11-28')).toEqual([
    { network: 'devnet', day: '2026-11-28', events: 12, blocksReadBack: 2, blocksMissed: 1 },
  ]);
  await second.flush();
  expect(await first.days('2026-11-28', '2026-11-28')).toEqual([
    { network: 'devnet', day: '2026-11-28', events: 12, blocksReadBack: 2, blocksMissed: 1 },
  ]);
});

it('GIVEN a completeness file that is not one THEN opening it fails with the reason, and the file is left as it was', async () => {
  const file = join(dir, 'bad.json');
  const text = JSON.stringify({ v: 1, days: [{ network: 'devnet', day: '2026-11-28', events: -1 }] });
  await writeFile(file, text);
  await expect(FileCompletenessStore.open(file)).rejects.toThrow(StoreFileError);
  await expect(FileCompletenessStore.open(file)).rejects.toThrow(/completeness file of version 1 \(days\.0\./);
  await writeFile(file, '{"v":1,');
  await expect(FileCompletenessStore.open(file)).rejects.toThrow(/not valid JSON/);
  expect(await readFile(file, 'utf8')).toBe('{"v":1,');
});
