import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StateStore } from '../../src/store/files/state.ts';
import { openSharedDatabase, type SharedDatabase } from '../../src/store/pg/index.ts';
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.ts';

const silent = pino({ level: 'silent' });
const NATIVE = '0x0000000000000000000000000000000000000000';
const DUSD = '0x00000000000000000000000000000000000d05d0';

/** A rule as versions before units stored it: a minimum of 0.1 compared with whatever currency an order was in. */
const legacy = {
  id: 'r1',
  destination: { platform: 'telegram', chatId: '-100200' },
  network: 'devnet',
  collection: '0x00000000000000000000000000000000000000c1',
  collectionName: 'Moon Cats',
  kinds: ['sale'],
  minPrice: { value: '0.1', usd: false },
  paused: false,
  createdBy: 'telegram:1',
  createdAt: '2026-11-25T00:00:00.000Z',
};
const dollars = { ...legacy, id: 'r2', minPrice: { value: '100', usd: true } };
const inDusd = { ...legacy, id: 'r3', minPrice: { value: '90', usd: false, currency: DUSD, symbol: 'DUSD' } };

let postgres: TestPostgres;
let dir: string;
const opened: SharedDatabase[] = [];

beforeAll(async () => {
  postgres = await startTestPostgres();
  dir = await mkdtemp(join(tmpdir(), 'floorwatch-units-'));
}, 120_000);
afterAll(async () => {
  for (const shared of opened) await shared.close().catch(() => {});
  await postgres?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('minimums stored before they had a unit', () => {
  it('GIVEN a state file with one THEN the file store reads it in the native coin, and keeps dollars and units as they are', async () => {
    const file = join(dir, 'state.json');
    await writeFile(
      file,
      JSON.stringify({ version: 3, chats: {}, rules: [legacy, dollars, inDusd], nextRuleNumber: 4 }),
    );
    const store = await StateStore.open(file);
    const rules = await store.rulesOf('telegram:-100200');
    expect(rules.map((r) => r.minPrice)).toEqual([
      { value: '0.1', usd: false, currency: NATIVE },
      { value: '100', usd: true },
      { value: '90', usd: false, currency: DUSD, symbol: 'DUSD' },
    ]);
  });

  it('GIVEN a rules row with one THEN the PostgreSQL store reads it in the native coin, and keeps dollars and units as they are', async () => {
    const url = await postgres.freshDatabase();
    const shared = await openSharedDatabase({ url, poolSize: 2 }, silent, () => {});
    opened.push(shared);
    for (const rule of [legacy, dollars, inDusd]) {
      await shared.db.pool.query('INSERT INTO rules (id, chat_key, rule) VALUES ($1, $2, $3)', [
        rule.id,
        'telegram:-100200',
        JSON.stringify(rule),
      ]);
    }
    const rules = await shared.rules.rulesOf('telegram:-100200');
    expect(rules.map((r) => r.minPrice)).toEqual([
      { value: '0.1', usd: false, currency: NATIVE },
      { value: '100', usd: true },
      { value: '90', usd: false, currency: DUSD, symbol: 'DUSD' },
    ]);
  });
});
