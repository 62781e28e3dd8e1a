import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFile, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GROUP_MEMBERSHIP, type RoleRule } from '../../src/core/roles.ts';
import type { Destination } from '../../src/core/types.ts';
import type { NewVerifyLink } from '../../src/core/wallets.ts';
import { FileCompletenessStore } from '../../src/store/files/completeness.ts';
import { DeliveryJournal } from '../../src/store/files/journal/journal.ts';
import { FileMarketHistory } from '../../src/store/files/market-history.ts';
import { FileRoleStore } from '../../src/store/files/roles.ts';
import { StateStore } from '../../src/store/files/state.ts';
import { FileWalletStore } from '../../src/store/files/wallets.ts';
import { PgCompletenessStore } from '../../src/store/pg/completeness.ts';
import { Database } from '../../src/store/pg/database.ts';
import { openSharedDatabase } from '../../src/store/pg/index.ts';
import { PgMarketHistory } from '../../src/store/pg/market-history.ts';
import { PgRoleStore } from '../../src/store/pg/roles.ts';
import { PgWalletStore } from '../../src/store/pg/wallets.ts';
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.ts';
import { startTerminalBot, until } from '../helpers/terminal-bot.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CHAT: Destination = { platform: 'telegram', chatId: '-100' };
const silent = pino({ level: 'silent' });
let postgres: TestPostgres;
let dataDir: string;
const dirs: string[] = [];

beforeAll(async () => {
  postgres = await startTestPostgres();
  dataDir = await mkdtemp(join(tmpdir(), 'floorwatch-migrate-'));
}, 120_000);
afterAll(async () => {
  await postgres?.stop();
  await rm(dataDir, { recursive: true, force: true });
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** Every file of a directory and its bytes. */
async function contents(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of (await readdir(dir)).sort()) out[name] = (await readFile(join(dir, name))).toString('base64');
  return out;
}

const HOUR_MS = 60 * 60 * 1000;
const CATS = '0x00000000000000000000000000000000000000c1';
const WALLET = '0xabababababababababababababababababababab';
const BUYER = '0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb';
const CURRENCY = '0x00000000000000000000000000000000000000d1';
const GATED = 'telegram:-100555';

function verifyLink(fields: Partial<NewVerifyLink> & Pick<NewVerifyLink, 'community' | 'person'>): NewVerifyLink {
  const createdAt = new Date();
  return {
    id: createHash('sha256').update(`${fields.community} ${fields.person} ${Math.random()}`).digest('hex'),
    communityName: 'Moon Cats Club',
    channel: 'chat',
    miniApp: false,
    pageToken: `token${createdAt.getTime()}`,
    createdAt: createdAt.toISOString(),
    expiresAt: new Date(createdAt.getTime() + 30 * 60_000).toISOString(),
    ...fields,
  };
}

function roleRule(fields: Partial<RoleRule> = {}): Omit<RoleRule, 'id'> {
  return {
    community: GATED,
    target: GROUP_MEMBERSHIP,
    targetName: 'Moon Cats Club',
    network: 'devnet',
    collection: CATS,
    collectionName: 'Moon Cats',
    minBalance: 1,
    createdBy: 'telegram:1',
    createdAt: new Date().toISOString(),
    ...fields,
  };
}

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
    expect(again.stderr).toContain(
      'already holds chat settings, watch rules, stored buttons, deliveries and block cursors: migrate-data only moves into an empty database',
    );
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
      // Files it does not have are nothing to move: none is created.
      expect(await readdir(oldDir)).toEqual(['state.json']);
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

  it('GIVEN a data directory with a verified wallet, a role rule with a member let in, market history with sales and completeness counts THEN they move too, the PostgreSQL stores read them back, a bot started on the database lists the wallet and follows the rule, and no file changes', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'floorwatch-migrate-more-'));
    dirs.push(dir);
    const now = new Date();

    const wallets = await FileWalletStore.open(join(dir, 'wallets.jsonl'), now);
    const used = verifyLink({ community: 'console:terminal', person: 'console:local' });
    await wallets.createLink(used);
    expect(await wallets.completeLink(used.id, { address: WALLET, kind: 'eoa' }, now)).toMatchObject({ ok: true });
    const open = verifyLink({ community: GATED, person: 'telegram:8', channel: 'page' });
    await wallets.createLink(open);
    await wallets.close();

    const roles = await FileRoleStore.open(join(dir, 'roles.jsonl'));
    const gate = await roles.addRule(roleRule(), 25);
    const removed = await roles.addRule(roleRule({ minBalance: 2 }), 25);
    await roles.removeRule(GATED, removed?.id as string);
    const member = { community: GATED, target: GROUP_MEMBERSHIP, person: 'telegram:7' };
    const claim = await roles.claim(member, 'grant', now, 60_000);
    if (claim.kind !== 'claimed') throw new Error('the grant was not claimed');
    await roles.finish(member, claim.token, { ok: true }, now);
    const progress = { startedAt: now.toISOString(), communities: [GATED], after: 'telegram:6', people: 1 };
    await roles.saveRecheckProgress(progress);
    await roles.close();

    const market = await FileMarketHistory.open(join(dir, 'market-history.jsonl'), { logger: silent });
    const soldAt = now.getTime() - 2 * HOUR_MS;
    const paid = { amount: '1500000000000000000', currency: CURRENCY, decimals: 18 };
    await market.addSales([
      {
        network: 'devnet',
        collection: CATS,
        txnHash: '0xa1',
        at: soldAt,
        buyer: BUYER,
        tokens: [{ tokenId: '12', amount: '1', usd: 2940.5, paid }],
      },
      {
        network: 'devnet',
        collection: CATS,
        txnHash: '0xa2',
        at: soldAt + 60_000,
        tokens: [
          { tokenId: '13', amount: '1' },
          { tokenId: '14', amount: '1', usd: 100 },
        ],
      },
    ]);
    // More sales than one statement moves, of another collection.
    const DOGS = '0x00000000000000000000000000000000000000c2';
    await market.addSales(
      Array.from({ length: 1_234 }, (_, n) => ({
        network: 'devnet',
        collection: DOGS,
        txnHash: `0xd${n}`,
        at: soldAt + n,
        tokens: [{ tokenId: String(n), amount: '1', usd: 1 }],
      })),
    );
    await market.floor('devnet', CATS, 2890, soldAt);
    await market.floor('devnet', CATS, 2700, soldAt + HOUR_MS);
    const listing = { network: 'devnet', key: `${CATS}|15x1|${BUYER}|1000|${CURRENCY}`, txnHash: '0xb1' };
    await market.relist({ ...listing, at: now.getTime() - 60_000 }, HOUR_MS);
    const since = await market.since();
    await market.close();

    const completeness = await FileCompletenessStore.open(join(dir, 'completeness.json'));
    completeness.add('devnet', { events: 12, blocksReadBack: 3, blocksMissed: 1 }, now);
    await completeness.flush();

    // Last lines torn by a crash: opening the stores would cut them off; moving leaves them.
    await appendFile(join(dir, 'wallets.jsonl'), '{"k":"wal');
    await appendFile(join(dir, 'roles.jsonl'), '{"k":"gra');
    const before = await contents(dir);

    const url = await postgres.freshDatabase();
    const moved = await migrateData({ FLOORWATCH_DATA_DIR: dir, FLOORWATCH_DATABASE_URL: url });
    expect(moved.stderr).toBe('');
    expect(moved.stdout).toContain(
      '0 chats, 0 rules, 0 buttons, 0 deliveries, 0 cursors, 1 wallets, 2 verification links, 1 role rules, ' +
        '1 role grants, 1236 sales, 2 floor samples, 1 listings, 1 completeness days',
    );
    expect(moved.code).toBe(0);
    expect(await contents(dir)).toEqual(before);

    const db = await Database.open(url, { logger: silent, poolSize: 2 });
    try {
      const pgWallets = await PgWalletStore.open(db, silent);
      expect(await pgWallets.walletsOf('console:terminal', 'console:local')).toEqual([
        {
          community: 'console:terminal',
          person: 'console:local',
          address: WALLET,
          kind: 'eoa',
          verifiedAt: now.toISOString(),
        },
      ]);
      expect((await pgWallets.link(used.id))?.usedAt).toBe(now.toISOString());
      expect(await pgWallets.link(open.id)).toEqual({ ...open, attempts: 0 });
      // The link handed out before the move still works after it.
      expect(await pgWallets.bindBrowser(open.id, 'f'.repeat(64), new Date())).toBe('bound');

      const pgRoles = await PgRoleStore.open(db, silent);
      expect(await pgRoles.rulesOf(GATED)).toEqual([gate]);
      expect((await pgRoles.grantsOf(GATED, 'telegram:7')).map((g) => [g.person, g.state, g.pending])).toEqual([
        ['telegram:7', 'granted', undefined],
      ]);
      expect(await pgRoles.recheckProgress()).toEqual(progress);
      // Ids are never reused: h2 was removed, the next rule is h3.
      expect((await pgRoles.addRule(roleRule({ minBalance: 3 }), 25))?.id).toBe('h3');

      const pgMarket = await PgMarketHistory.open(db, { logger: silent, pruneEveryMs: 0 });
      expect(await pgMarket.since()).toBe(since);
      expect(await pgMarket.lastSale('devnet', CATS, '12')).toEqual({
        at: soldAt,
        units: '1',
        usd: 2940.5,
        buyer: BUYER,
        paid,
      });
      expect(await pgMarket.activity('devnet', CATS, 24 * HOUR_MS, now.getTime())).toMatchObject({
        sales: 3,
        priced: 2,
        volumeUsd: 3040.5,
        floorThen: { at: soldAt, usd: 2890 },
      });
      expect(await pgMarket.activity('devnet', DOGS, 24 * HOUR_MS, now.getTime())).toMatchObject({ sales: 1_234 });
      expect(await pgMarket.lastSale('devnet', DOGS, '1233')).toMatchObject({ at: soldAt + 1_233 });
      // The listing seen before the move makes an identical one after it a relist.
      expect(await pgMarket.relist({ ...listing, txnHash: '0xb2', at: now.getTime() }, HOUR_MS)).toBe(true);

      const day = now.toISOString().slice(0, 10);
      expect(await new PgCompletenessStore(db).days(day, day)).toEqual([
        { network: 'devnet', day, events: 12, blocksReadBack: 3, blocksMissed: 1 },
      ]);
      await pgWallets.close();
      await pgRoles.close();
      await pgMarket.close();
    } finally {
      await db.close();
    }

    // A bot started on the database: the person's wallet is still verified, the gate still followed.
    const bot = await startTerminalBot({ FLOORWATCH_DATABASE_URL: url, FLOORWATCH_DEVNET_BLOCK_MS: '0' }, (d) =>
      dirs.push(d),
    );
    try {
      bot.input.write('/verify list\n');
      await until(() => bot.out().includes('Your wallets in the terminal chat'), 'the wallet list');
      expect(bot.out().slice(bot.out().indexOf('Your wallets in the terminal chat'))).toContain(WALLET);
      expect((await bot.bot.roles.rulesOf(GATED)).map((r) => r.id)).toEqual(['h1', 'h3']);
      expect(bot.bot.roles.collections('devnet')).toContain(CATS);
    } finally {
      await bot.bot.stop();
    }
  }, 120_000);

  it('GIVEN a database that already holds a verified wallet THEN the move is refused, says what the database holds, and writes nothing', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'floorwatch-migrate-refused-'));
    dirs.push(dir);
    const store = await StateStore.open(join(dir, 'state.json'));
    await store.addRule(
      {
        destination: CHAT,
        network: 'devnet',
        collection: CATS,
        collectionName: 'Moon Cats',
        kinds: ['sale' as const],
        paused: false,
        createdBy: 'telegram:1',
        createdAt: '2026-11-25T00:00:00.000Z',
      },
      50,
    );
    await store.flush();
    const roles = await FileRoleStore.open(join(dir, 'roles.jsonl'));
    await roles.addRule(roleRule(), 25);
    await roles.close();

    const url = await postgres.freshDatabase();
    const db = await Database.open(url, { logger: silent, poolSize: 2 });
    try {
      const pgWallets = await PgWalletStore.open(db, silent);
      const link = verifyLink({ community: GATED, person: 'telegram:9' });
      await pgWallets.createLink(link);
      expect(await pgWallets.completeLink(link.id, { address: WALLET, kind: 'eoa' }, new Date())).toMatchObject({
        ok: true,
      });
      await pgWallets.close();

      const refused = await migrateData({ FLOORWATCH_DATA_DIR: dir, FLOORWATCH_DATABASE_URL: url });
      expect(refused.code).toBe(78);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toContain(
        'already holds verified wallets and verification links: migrate-data only moves into an empty database',
      );
      const { rows } = await db.pool.query<{ rules: number; role_rules: number; wallets: number }>(
        `SELECT (SELECT count(*)::int FROM rules) AS rules, (SELECT count(*)::int FROM role_rules) AS role_rules,
                (SELECT count(*)::int FROM wallets) AS wallets`,
      );
      expect(rows).toEqual([{ rules: 0, role_rules: 0, wallets: 1 }]);
    } finally {
      await db.close();
    }
  });

  it('GIVEN a wallet file the bot could not read (of a newer version) THEN the move stops, names the file, and writes nothing', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'floorwatch-migrate-unreadable-'));
    dirs.push(dir);
    const roles = await FileRoleStore.open(join(dir, 'roles.jsonl'));
    await roles.addRule(roleRule(), 25);
    await roles.close();
    await writeFile(join(dir, 'wallets.jsonl'), '{"op":"wallets","v":9}\n');
    const url = await postgres.freshDatabase();
    const stopped = await migrateData({ FLOORWATCH_DATA_DIR: dir, FLOORWATCH_DATABASE_URL: url });
    expect(stopped.code).toBe(78);
    expect(stopped.stderr).toContain(`${join(dir, 'wallets.jsonl')}: was written by a newer Floorwatch`);
    const db = await Database.open(url, { logger: silent, poolSize: 2 });
    try {
      const { rows } = await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM role_rules');
      expect(rows).toEqual([{ n: 0 }]);
    } finally {
      await db.close();
    }
  });

  it('GIVEN no database address THEN it says which setting is missing', async () => {
    const result = await migrateData({ FLOORWATCH_DATA_DIR: dataDir });
    expect(result.code).toBe(78);
    expect(result.stderr).toContain('FLOORWATCH_DATABASE_URL must name the database');
  });
});
