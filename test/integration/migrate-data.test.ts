import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Destination } from '../../src/core/types.ts';
import { DeliveryJournal } from '../../src/store/files/journal/journal.ts';
import { StateStore } from '../../src/store/files/state.ts';
import { openSharedDatabase } from '../../src/store/pg/index.ts';
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CHAT: Destination = { platform: 'telegram', chatId: '-100' };
let postgres: TestPostgres;
let dataDir: string;

beforeAll(async () => {
  postgres = await startTestPostgres();
  dataDir = await mkdtemp(join(tmpdir(), 'floorwatch-migrate-'));
}, 120_000);
afterAll(async () => {
  await postgres?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

/** The migrate-data command as `npm run migrate-data` runs it (from the sources here). */
async function migrateData(env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'src/store/pg/migrate-data.ts'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, ...env },
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('npm run migrate-data', () => {
  it('GIVEN a data directory with rules, settings, buttons, deliveries in flight and cursors THEN all move into the database, the bot goes on from there, and a second run is refused', async () => {
    const store = await StateStore.open(join(dataDir, 'state.json'));
    const rule = {
      destination: CHAT,
      network: 'devnet',
      collection: '0x00000000000000000000000000000000000000c1',
      collectionName: 'Moon Cats',
      kinds: ['sale' as const],
      paused: false,
      createdBy: 'telegram:1',
      createdAt: '2026-11-25T00:00:00.000Z',
    };
    await store.addRule(rule, 50);
    const removed = await store.addRule({ ...rule, collectionName: 'gone' }, 50);
    await store.updateRule(removed?.id as string, () => null);
    await store.addRule({ ...rule, paused: true }, 50);
    await store.updateChat('telegram:-100', (s) => {
      s.network = 'devnet';
      s.aliases.mc = { alias: 'mc', network: 'devnet', address: '0x00000000000000000000000000000000000000c1' };
    });
    await store.saveButton('h1', 'watch add moon cats sales', new Date());
    await store.flush();
    const journal = await DeliveryJournal.open(join(dataDir, 'deliveries.jsonl'));
    const [sent, pending] = await journal.record(
      [1, 2].map((n) => ({
        eventId: `devnet:0x${n}:0xc1:sale@0xb${n}`,
        destination: CHAT,
        network: 'devnet',
        txnHash: `0x${n}`,
        blockNumber: n,
        kind: 'sale' as const,
        usd: 10 * n,
        payload: { title: `sale ${n}` },
      })),
    );
    await journal.markSending(sent?.id as string, sent?.id);
    await journal.markSent(sent?.id as string, 'm1');
    await journal.close();
    await writeFile(join(dataDir, 'cursors.json'), JSON.stringify({ v: 1, networks: { devnet: 1234 } }));
    const stateBefore = await readFile(join(dataDir, 'state.json'), 'utf8');

    const url = await postgres.freshDatabase();
    const moved = await migrateData({ FLOORWATCH_DATA_DIR: dataDir, FLOORWATCH_DATABASE_URL: url });
    expect(moved.stderr).toBe('');
    expect(moved.stdout).toContain('2 rules, 1 buttons, 2 deliveries, 1 cursors');
    expect(moved.code).toBe(0);
    // The files are left as they were.
    expect(await readFile(join(dataDir, 'state.json'), 'utf8')).toBe(stateBefore);

    const shared = await openSharedDatabase({ url, poolSize: 2 }, pino({ level: 'silent' }), () => {});
    try {
      const moved: Array<[string, boolean]> = [];
      for await (const page of shared.rules.allRules()) for (const r of page) moved.push([r.id, r.paused]);
      expect(moved).toEqual([
        ['r1', false],
        ['r3', true],
      ]);
      expect((await shared.rules.rulesOf('telegram:-100')).map((r) => r.id)).toEqual(['r1', 'r3']);
      expect(shared.rules.chat('telegram:-100').aliases.mc?.address).toBe('0x00000000000000000000000000000000000000c1');
      expect(shared.rules.button('h1')?.action).toBe('watch add moon cats sales');
      // Ids are never reused: the next rule is r4.
      expect((await shared.rules.addRule(rule, 50))?.id).toBe('r4');
      // What was in flight is still to be sent; what was sent is not sent again.
      const open = await shared.deliveries.openFor('telegram:-100');
      expect(open.map((o) => o.record.id)).toEqual([pending?.id]);
      const summary = await shared.deliveries.deliveredTo(CHAT, new Date(0));
      expect(summary.map((r) => [r.state, r.messageId, r.usd])).toEqual([
        ['sent', 'm1', 10],
        ['pending', undefined, 20],
      ]);
      const { rows } = await shared.db.pool.query<{ block: string }>('SELECT block FROM cursors');
      expect(rows.map((r) => Number(r.block))).toEqual([1234]);
    } finally {
      await shared.close();
    }

    const again = await migrateData({ FLOORWATCH_DATA_DIR: dataDir, FLOORWATCH_DATABASE_URL: url });
    expect(again.code).toBe(78);
    expect(again.stderr).toMatch(/already holds settings, rules or deliveries/);
    expect(again.stderr).not.toMatch(/postgres:[^@\s]*:[^@\s]+@/);
  });

  it('GIVEN a data directory of an older version (version 2: buttons in state.json) THEN its rules and buttons move, and its files are left as they were', async () => {
    const oldDir = await mkdtemp(join(tmpdir(), 'floorwatch-migrate-v2-'));
    try {
      const content = JSON.stringify({
        version: 2,
        chats: {},
        buttons: { h7: { action: '/floor collection=devnet:0xc1 count=5', createdAt: new Date().toISOString() } },
        rules: [
          {
            id: 'r7',
            destination: CHAT,
            network: 'devnet',
            collection: '0x00000000000000000000000000000000000000c1',
            collectionName: 'Moon Cats',
            kinds: ['sale'],
            paused: false,
            createdBy: 'telegram:1',
            createdAt: '2026-11-25T00:00:00.000Z',
          },
        ],
        nextRuleNumber: 8,
      });
      await writeFile(join(oldDir, 'state.json'), content);
      const url = await postgres.freshDatabase();
      const moved = await migrateData({ FLOORWATCH_DATA_DIR: oldDir, FLOORWATCH_DATABASE_URL: url });
      expect(moved.stderr).toBe('');
      expect(moved.stdout).toContain('1 rules, 1 buttons');
      expect(await readFile(join(oldDir, 'state.json'), 'utf8')).toBe(content);
      expect(await readdir(oldDir)).not.toContain('state.buttons.jsonl');
      const shared = await openSharedDatabase({ url, poolSize: 2 }, pino({ level: 'silent' }), () => {});
      try {
        expect(shared.rules.button('h7')?.action).toBe('/floor collection=devnet:0xc1 count=5');
        expect((await shared.rules.rulesOf('telegram:-100')).map((r) => r.id)).toEqual(['r7']);
      } finally {
        await shared.close();
      }
    } finally {
      await rm(oldDir, { recursive: true, force: true });
    }
  });

  it('GIVEN no database address THEN it says which setting is missing', async () => {
    const result = await migrateData({ FLOORWATCH_DATA_DIR: dataDir });
    expect(result.code).toBe(78);
    expect(result.stderr).toContain('FLOORWATCH_DATABASE_URL must name the database');
  });
});
