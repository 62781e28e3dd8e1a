import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openSharedDatabase } from '../../src/store/pg/index.ts';
import { spawnEntryPoint, waitUntil } from '../helpers/entry-point.ts';
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.ts';

/*
 * Issue 24, part 3, through the real entry point on a real PostgreSQL: a rules row that does not read
 * as a rule (here the collection address with a trailing space that older versions let through from
 * SearchMetadata) is skipped and named in the log; the other chats' alerts flow as before.
 */

const ALERT = /^(Sold|Sweep|Listed|Offer|Minted|Transferred|Burned|Cancelled(?: listing| offer)?): /m;

let postgres: TestPostgres;
let dataDir: string;

beforeAll(async () => {
  postgres = await startTestPostgres();
}, 120_000);
afterAll(async () => {
  await postgres?.stop();
});
beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'floorwatch-corrupt-rows-'));
});
afterEach(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

describe('an unreadable row in the shared database', () => {
  it('GIVEN a rules row whose collection has a trailing space WHEN the bot starts on the database THEN it names the row in the log and alerts of other chats still arrive', async () => {
    const url = await postgres.freshDatabase();
    const setup = await openSharedDatabase({ url, poolSize: 1 }, pino({ level: 'silent' }), () => {});
    await setup.db.pool.query('INSERT INTO rules (id, chat_key, rule) VALUES ($1, $2, $3)', [
      'r900',
      'telegram:-100200',
      JSON.stringify({
        id: 'r900',
        destination: { platform: 'telegram', chatId: '-100200' },
        network: 'devnet',
        collection: `0x${'11'.repeat(20)} `,
        collectionName: 'Spacey',
        kinds: ['sale'],
        paused: false,
        createdBy: 'telegram:1',
        createdAt: '2026-11-25T00:00:00.000Z',
      }),
    ]);
    await setup.close();

    const bot = spawnEntryPoint({
      FLOORWATCH_DATA_DIR: dataDir,
      FLOORWATCH_DATABASE_URL: url,
      FLOORWATCH_DEVNET_BLOCK_MS: '150',
      FLOORWATCH_LOG_LEVEL: 'info',
    });
    try {
      bot.child.stdin.write('/watch add moon cats all\n');
      await waitUntil(() => ALERT.test(bot.stdout), 45_000);
    } finally {
      bot.child.stdin.end();
    }
    const { code, stdout, stderr } = await bot.exited;

    expect(code).toBe(0);
    expect(stdout).toContain('Watching');
    // The log tells why when no alert came.
    expect(stdout, stderr.split('\n').slice(-30).join('\n')).toMatch(ALERT);
    const named = stderr.split('\n').filter((line) => line.includes('skipped an unreadable rule row'));
    expect(named.length).toBeGreaterThan(0);
    expect(JSON.parse(named[0] ?? '{}')).toMatchObject({
      level: 40,
      table: 'rules',
      key: 'r900',
      problems: expect.stringContaining('collection: expected an address'),
    });
    expect(stderr).not.toContain('could not read the watch rules');
  }, 90_000);
});
