import { createHash } from 'node:crypto';
import { appendFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreFileError } from '../../src/core/store-errors.ts';
import type { Challenge, NewVerifyLink, WalletChange, WalletStore } from '../../src/core/wallets.ts';
import { FileWalletStore } from '../../src/store/files/wallets.ts';
import { Database } from '../../src/store/pg/database.ts';
import { PgWalletStore } from '../../src/store/pg/wallets.ts';
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.ts';

const silent = pino({ level: 'silent' });
const NOW = new Date('2026-03-01T12:00:00.000Z');
const LATER = new Date('2026-03-01T12:05:00.000Z');
const A = '0x1111111111111111111111111111111111111111';
const B = '0x2222222222222222222222222222222222222222';
let counter = 0;

function newLink(fields: Partial<NewVerifyLink> = {}): NewVerifyLink {
  counter += 1;
  return {
    id: createHash('sha256').update(`link ${counter}`).digest('hex'),
    community: 'discord:100',
    communityName: 'Moon Cats Club',
    person: 'discord:7',
    channel: 'page',
    miniApp: false,
    pageToken: `token${counter}`,
    createdAt: NOW.toISOString(),
    expiresAt: new Date(NOW.getTime() + 30 * 60_000).toISOString(),
    ...fields,
  };
}

function challenge(nonce: string, address = A): Challenge {
  return {
    nonce,
    address,
    message: `message with ${nonce}`,
    issuedAt: NOW.toISOString(),
    expiresAt: new Date(NOW.getTime() + 10 * 60_000).toISOString(),
  };
}

interface Adapter {
  name: string;
  /** A store; `again` gives another one on the same storage (a restart, or another process). */
  open(): Promise<{ store: WalletStore; again: () => Promise<WalletStore> }>;
}

let postgres: TestPostgres;
let dir: string;
const toClose: Array<() => Promise<void>> = [];

beforeAll(async () => {
  postgres = await startTestPostgres();
  dir = await mkdtemp(join(tmpdir(), 'floorwatch-wallets-'));
}, 120_000);

afterAll(async () => {
  for (const close of toClose.splice(0).reverse()) await close().catch(() => undefined);
  await postgres?.stop();
  await rm(dir, { recursive: true, force: true });
});

const adapters: Adapter[] = [
  {
    name: 'files',
    async open() {
      const file = join(dir, `wallets-${counter++}.jsonl`);
      const store = await FileWalletStore.open(file, NOW);
      return {
        store,
        again: async () => {
          await store.close();
          return FileWalletStore.open(file, NOW);
        },
      };
    },
  },
  {
    name: 'PostgreSQL',
    async open() {
      const url = await postgres.freshDatabase();
      const openOne = async () => {
        const db = await Database.open(url, { logger: silent, poolSize: 6 });
        toClose.push(() => db.close());
        return PgWalletStore.open(db, silent);
      };
      return { store: await openOne(), again: openOne };
    },
  },
];

describe.each(adapters)('wallet store on $name', (adapter) => {
  it('GIVEN a link WHEN it is bound, challenged and completed THEN each step happens once', async () => {
    const { store } = await adapter.open();
    const link = newLink();
    await store.createLink(link);
    expect((await store.link(link.id))?.attempts).toBe(0);
    expect(await store.bindBrowser(link.id, 'a'.repeat(64), NOW)).toBe('bound');
    expect(await store.bindBrowser(link.id, 'a'.repeat(64), NOW)).toBe('bound');
    expect(await store.bindBrowser(link.id, 'b'.repeat(64), NOW)).toBe('other');
    expect(await store.setChallenge(link.id, challenge('nonce0001'), NOW)).toBe(true);
    expect(await store.setChallenge(link.id, challenge('nonce0002'), NOW)).toBe(true);
    // The first message was replaced: its nonce takes nothing, and the message it tried is gone too.
    expect(await store.takeChallenge(link.id, 'nonce0001', NOW)).toBeUndefined();
    expect(await store.takeChallenge(link.id, 'nonce0002', NOW)).toBeUndefined();
    expect(await store.setChallenge(link.id, challenge('nonce0003'), NOW)).toBe(true);
    expect(await store.takeChallenge(link.id, 'nonce0003', NOW)).toEqual(challenge('nonce0003'));
    expect(await store.takeChallenge(link.id, 'nonce0003', NOW)).toBeUndefined();
    expect((await store.link(link.id))?.attempts).toBe(4);
    const done = await store.completeLink(link.id, { address: A, kind: 'eoa' }, LATER);
    expect(done).toMatchObject({ ok: true, moved: false, wallet: { address: A, person: 'discord:7', kind: 'eoa' } });
    expect(await store.completeLink(link.id, { address: B, kind: 'eoa' }, LATER)).toEqual({
      ok: false,
      reason: 'used',
    });
    expect(await store.setChallenge(link.id, challenge('nonce0003'), LATER)).toBe(false);
    expect(await store.bindBrowser(link.id, 'a'.repeat(64), LATER)).toBe('gone');
    expect(await store.walletsOf('discord:100', 'discord:7')).toEqual([
      { community: 'discord:100', person: 'discord:7', address: A, kind: 'eoa', verifiedAt: LATER.toISOString() },
    ]);
  });

  it('GIVEN an expired link THEN it takes no browser and no message', async () => {
    const { store } = await adapter.open();
    const link = newLink({ expiresAt: new Date(NOW.getTime() - 1).toISOString() });
    await store.createLink(link);
    expect(await store.bindBrowser(link.id, 'a'.repeat(64), NOW)).toBe('gone');
    expect(await store.setChallenge(link.id, challenge('nonce0001'), NOW)).toBe(false);
    expect(await store.pruneLinks(NOW, 0)).toBe(1);
    expect(await store.link(link.id)).toBeUndefined();
  });

  it('GIVEN a second link for the same person and community THEN the first one stops working', async () => {
    const { store } = await adapter.open();
    const first = newLink();
    const chat = newLink({ channel: 'chat' });
    const second = newLink();
    await store.createLink(first);
    await store.createLink(chat);
    await store.createLink(second);
    expect(await store.link(first.id)).toBeUndefined();
    expect(await store.link(second.id)).toBeDefined();
    // Another channel is another link.
    expect((await store.openChatLink('discord:100', 'discord:7', NOW))?.id).toBe(chat.id);
    expect(await store.openChatLink('discord:100', 'discord:8', NOW)).toBeUndefined();
  });

  it('GIVEN a wallet linked by one person WHEN another verifies it in the same community THEN it moves, and says so', async () => {
    const { store } = await adapter.open();
    const changes: WalletChange[] = [];
    store.onWalletsChanged((change) => changes.push(change));
    const mine = newLink({ person: 'discord:1' });
    const theirs = newLink({ person: 'discord:2' });
    const elsewhere = newLink({ person: 'discord:3', community: 'discord:200' });
    for (const link of [mine, theirs, elsewhere]) await store.createLink(link);
    await store.completeLink(mine.id, { address: A, kind: 'eoa' }, NOW);
    await store.completeLink(elsewhere.id, { address: A, kind: 'eoa' }, NOW);
    const moved = await store.completeLink(theirs.id, { address: A, kind: 'contract' }, LATER);
    expect(moved).toMatchObject({ ok: true, moved: true });
    expect(await store.walletsOf('discord:100', 'discord:1')).toEqual([]);
    expect((await store.walletsOf('discord:100', 'discord:2')).map((w) => w.kind)).toEqual(['contract']);
    // Another community keeps its own owner.
    expect((await store.byAddress(A)).map((w) => `${w.community} ${w.person}`).sort()).toEqual([
      'discord:100 discord:2',
      'discord:200 discord:3',
    ]);
    expect(changes.at(-1)).toMatchObject({
      type: 'linked',
      previousPerson: 'discord:1',
      wallet: { person: 'discord:2' },
    });
    // Only its owner removes it.
    expect(await store.removeWallet('discord:100', 'discord:1', A)).toBeUndefined();
    expect(await store.removeWallet('discord:100', 'discord:2', A)).toMatchObject({ address: A });
    expect(changes.at(-1)).toMatchObject({ type: 'removed', wallet: { person: 'discord:2' } });
    expect(await store.walletsOfPerson('discord:2')).toEqual([]);
    const pages: string[][] = [];
    for await (const page of store.walletsIn('discord:200')) pages.push(page.map((w) => w.address));
    expect(pages).toEqual([[A]]);
  });

  it('GIVEN racing requests on another store of the same storage THEN a nonce is taken once and a link completes once', async () => {
    const { store, again } = await adapter.open();
    const link = newLink();
    await store.createLink(link);
    await store.setChallenge(link.id, challenge('racenonce1'), NOW);
    const other = adapter.name === 'files' ? store : await again();
    const takes = await Promise.all(
      Array.from({ length: 8 }, (_, i) => (i % 2 ? other : store).takeChallenge(link.id, 'racenonce1', NOW)),
    );
    expect(takes.filter((t) => t !== undefined)).toHaveLength(1);
    const completes = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        (i % 2 ? other : store).completeLink(link.id, { address: i % 2 ? A : B, kind: 'eoa' }, NOW),
      ),
    );
    expect(completes.filter((c) => c.ok)).toHaveLength(1);
    expect(await store.walletsOf('discord:100', 'discord:7')).toHaveLength(1);
  });

  it('GIVEN people with several wallets THEN peopleIn gives each once with all their wallets, in key order, page by page', async () => {
    const { store } = await adapter.open();
    const verify = async (person: string, address: string, community = 'discord:300') => {
      const link = newLink({ person, community });
      await store.createLink(link);
      await store.completeLink(link.id, { address, kind: 'eoa' }, NOW);
    };
    const address = (n: number) => `0x${n.toString(16).padStart(40, '0')}`;
    // Keys that sort differently as numbers and as text: discord:10 comes before discord:9.
    await verify('discord:9', address(1));
    await verify('discord:10', address(2));
    await verify('discord:9', address(3));
    await verify('discord:2', address(4));
    await verify('discord:10', address(5), 'discord:301');
    const first = await store.peopleIn('discord:300', undefined, 2);
    expect(first.map((p) => [p.person, p.wallets.map((w) => w.address)])).toEqual([
      ['discord:10', [address(2)]],
      ['discord:2', [address(4)]],
    ]);
    const rest = await store.peopleIn('discord:300', 'discord:2', 2);
    expect(rest.map((p) => [p.person, p.wallets.map((w) => w.address)])).toEqual([
      ['discord:9', [address(1), address(3)]],
    ]);
    expect(await store.peopleIn('discord:300', 'discord:9', 2)).toEqual([]);
  });

  it('GIVEN a change WHEN the store is opened again THEN it is still there', async () => {
    const { store, again } = await adapter.open();
    const link = newLink();
    await store.createLink(link);
    await store.completeLink(link.id, { address: B, kind: 'contract' }, NOW);
    const reopened = await again();
    expect((await reopened.link(link.id))?.usedAt).toBe(NOW.toISOString());
    expect((await reopened.walletsOf('discord:100', 'discord:7')).map((w) => w.address)).toEqual([B]);
  });
});

describe('wallet file', () => {
  it('GIVEN a last line torn by a crash THEN it is cut off and the rest is read', async () => {
    const file = join(dir, 'torn.jsonl');
    const store = await FileWalletStore.open(file, NOW);
    const link = newLink();
    await store.createLink(link);
    await store.completeLink(link.id, { address: A, kind: 'eoa' }, NOW);
    await store.close();
    await appendFile(file, '{"k":"wallet","wallet":{"commu');
    const reopened = await FileWalletStore.open(file, NOW);
    expect((await reopened.walletsOf('discord:100', 'discord:7')).map((w) => w.address)).toEqual([A]);
    expect((await readFile(file, 'utf8')).endsWith('\n')).toBe(true);
  });

  it('GIVEN a damaged line in the middle or a bad record THEN opening fails naming the line and the file is untouched', async () => {
    const file = join(dir, 'damaged.jsonl');
    await writeFile(file, '{"op":"wallets","v":1}\nnot json\n{"k":"unlink","id":"x"}\n');
    await expect(FileWalletStore.open(file, NOW)).rejects.toThrow(/line 2 is not valid JSON/);
    const bad =
      '{"op":"wallets","v":1}\n{"k":"wallet","wallet":{"community":"discord:1","person":"discord:2","address":"0xABC","kind":"eoa","verifiedAt":"2026-03-01T12:00:00.000Z"}}\n';
    await writeFile(file, bad);
    const error = await FileWalletStore.open(file, NOW).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreFileError);
    expect(String(error)).toMatch(/line 2 is not a wallet record \(wallet\.address/);
    expect(await readFile(file, 'utf8')).toBe(bad);
  });

  it('GIVEN many changes THEN the file is rewritten to its live records, which survive', async () => {
    const file = join(dir, 'compact.jsonl');
    const store = await FileWalletStore.open(file, NOW);
    for (let i = 0; i < 700; i++) {
      await store.createLink(newLink({ person: 'discord:9' }));
    }
    const lines = (await readFile(file, 'utf8')).trimEnd().split('\n').length;
    expect(lines).toBeLessThan(1_100);
    await store.close();
    const reopened = await FileWalletStore.open(file, NOW);
    expect(await reopened.openChatLink('discord:100', 'discord:9', NOW)).toBeUndefined();
  });
});
