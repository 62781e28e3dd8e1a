// The role store (core/roles.ts RoleStore) on files and on PostgreSQL, held to the same behaviour:
// rules with a per-community limit, grants whose changes are claimed once and finished by their
// claim only, lapses and restores made once, the full re-check's progress, and what survives a
// restart.
import { appendFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GrantKey, RoleRule, RoleStore } from '../../src/core/roles.ts';
import { StoreFileError } from '../../src/core/store-errors.ts';
import { FileRoleStore } from '../../src/store/files/roles.ts';
import { Database } from '../../src/store/pg/database.ts';
import { PgRoleStore, ROLES_CHANNEL } from '../../src/store/pg/roles.ts';
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.ts';

const silent = pino({ level: 'silent' });
const NOW = new Date('2026-03-01T12:00:00.000Z');
const at = (ms: number) => new Date(NOW.getTime() + ms);
const STALE_MS = 60_000;
const CATS = '0x1111111111111111111111111111111111111111';

function rule(fields: Partial<RoleRule> = {}): Omit<RoleRule, 'id'> {
  return {
    community: 'discord:100',
    target: '500',
    targetName: 'Holders',
    network: 'devnet',
    collection: CATS,
    collectionName: 'Moon Cats',
    minBalance: 1,
    createdBy: 'discord:1',
    createdAt: NOW.toISOString(),
    ...fields,
  };
}

const key = (person: string, target = '500', community = 'discord:100'): GrantKey => ({ community, target, person });

interface Adapter {
  name: string;
  /** A store; `again` gives another one on the same storage (a restart, or another process). */
  open(): Promise<{ store: RoleStore; again: () => Promise<RoleStore> }>;
}

let postgres: TestPostgres;
let dir: string;
let counter = 0;
const toClose: Array<() => Promise<void>> = [];

beforeAll(async () => {
  postgres = await startTestPostgres();
  dir = await mkdtemp(join(tmpdir(), 'floorwatch-roles-'));
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
      const file = join(dir, `roles-${counter++}.jsonl`);
      const store = await FileRoleStore.open(file);
      return {
        store,
        again: async () => {
          await store.close();
          return FileRoleStore.open(file);
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
        return PgRoleStore.open(db, silent);
      };
      return { store: await openOne(), again: openOne };
    },
  },
];

describe.each(adapters)('role store on $name', (adapter) => {
  it('GIVEN rules THEN each gets the next id, a community holds at most its limit, and only its own are removed', async () => {
    const { store } = await adapter.open();
    const heard: string[] = [];
    store.onRulesChanged((community) => heard.push(community));
    const first = await store.addRule(rule(), 2);
    const second = await store.addRule(rule({ minBalance: 3, traits: [{ name: 'Fur', value: 'Gold' }] }), 2);
    expect(first?.id).toMatch(/^h\d+$/);
    expect(second?.id).not.toBe(first?.id);
    expect(await store.addRule(rule(), 2)).toBeUndefined();
    const elsewhere = await store.addRule(rule({ community: 'telegram:-100', target: 'member' }), 2);
    expect(elsewhere).toBeDefined();
    expect((await store.rulesOf('discord:100')).map((r) => r.id)).toEqual([first?.id, second?.id]);
    expect((await store.rulesOf('discord:100'))[1]).toEqual(second);
    expect(await store.removeRule('telegram:-100', first?.id ?? '')).toBeUndefined();
    expect(await store.removeRule('discord:100', first?.id ?? '')).toEqual(first);
    expect((await store.allRules()).map((r) => r.id).sort()).toEqual([second?.id, elsewhere?.id].sort());
    expect(heard).toEqual(['discord:100', 'discord:100', 'telegram:-100', 'discord:100']);
  });

  it('GIVEN a grant to make THEN it is claimed once, a second evaluation is asked to come back, and only the claim finishes it', async () => {
    const { store } = await adapter.open();
    const k = key('discord:7');
    expect(await store.claim(k, 'revoke', NOW, STALE_MS)).toEqual({ kind: 'settled' });
    const claim = await store.claim(k, 'grant', NOW, STALE_MS);
    expect(claim.kind).toBe('claimed');
    expect(await store.claim(k, 'grant', at(1_000), STALE_MS)).toEqual({ kind: 'busy' });
    expect(await store.finish(k, 'not the token', { ok: true }, at(2_000))).toEqual({ recheck: false });
    const token = claim.kind === 'claimed' ? claim.token : '';
    expect(await store.finish(k, token, { ok: true }, at(2_000))).toEqual({ recheck: true });
    expect(await store.finish(k, token, { ok: true }, at(2_000))).toEqual({ recheck: false });
    const [grant] = await store.grantsOf('discord:100', 'discord:7');
    expect(grant).toMatchObject({ state: 'granted', since: at(2_000).toISOString() });
    expect(grant?.pending).toBeUndefined();
    expect(grant?.recheck).toBeUndefined();
    expect(await store.claim(k, 'grant', at(3_000), STALE_MS)).toEqual({ kind: 'settled' });
    // A join request claims whatever the record says.
    expect((await store.claim(k, 'grant', at(3_000), STALE_MS, { again: true })).kind).toBe('claimed');
  });

  it('GIVEN a change that failed for good THEN the grant keeps its state and says why; counts show it', async () => {
    const { store } = await adapter.open();
    const k = key('discord:8');
    const claim = await store.claim(k, 'grant', NOW, STALE_MS);
    const token = claim.kind === 'claimed' ? claim.token : '';
    await store.finish(k, token, { ok: false, reason: 'role_above_bot', permanent: true }, at(1_000));
    const [grant] = await store.grantsOf('discord:100', 'discord:8');
    expect(grant).toMatchObject({
      state: 'revoked',
      failure: { reason: 'role_above_bot', permanent: true, at: at(1_000).toISOString() },
    });
    const other = await store.claim(key('discord:9'), 'grant', NOW, STALE_MS);
    await store.finish(key('discord:9'), other.kind === 'claimed' ? other.token : '', { ok: true }, at(1_000));
    expect(await store.grantCounts('discord:100')).toEqual([
      {
        target: '500',
        granted: 1,
        lapsed: 0,
        failed: 1,
        lastFailure: { reason: 'role_above_bot', permanent: true, at: at(1_000).toISOString() },
      },
    ]);
    // A success clears the failure.
    const again = await store.claim(k, 'grant', at(2_000), STALE_MS);
    await store.finish(k, again.kind === 'claimed' ? again.token : '', { ok: true }, at(3_000));
    expect((await store.grantsOf('discord:100', 'discord:8'))[0]?.failure).toBeUndefined();
  });

  it('GIVEN a claim never finished THEN it is stale after a while, claimed anew, and the old token finishes nothing', async () => {
    const { store } = await adapter.open();
    const k = key('discord:10');
    const dead = await store.claim(k, 'grant', NOW, STALE_MS);
    // stalePending(before): claims made at or before `before` (the sync asks with now - staleMs).
    expect((await store.stalePending(at(-1), 10)).length).toBe(0);
    expect((await store.stalePending(NOW, 10)).map((g) => g.person)).toEqual(['discord:10']);
    const fresh = await store.claim(k, 'grant', at(STALE_MS + 1), STALE_MS);
    expect(fresh.kind).toBe('claimed');
    await store.finish(k, dead.kind === 'claimed' ? dead.token : '', { ok: true }, at(STALE_MS + 2));
    expect((await store.grantsOf('discord:100', 'discord:10'))[0]?.state).toBe('revoked');
    await store.finish(k, fresh.kind === 'claimed' ? fresh.token : '', { ok: true }, at(STALE_MS + 3));
    expect((await store.grantsOf('discord:100', 'discord:10'))[0]?.state).toBe('granted');
  });

  it('GIVEN racing claims from two stores of the same storage THEN exactly one is claimed', async () => {
    const { store, again } = await adapter.open();
    const other = adapter.name === 'files' ? store : await again();
    const k = key('discord:11');
    const claims = await Promise.all(
      Array.from({ length: 8 }, (_, i) => (i % 2 ? other : store).claim(k, 'grant', NOW, STALE_MS)),
    );
    expect(claims.filter((c) => c.kind === 'claimed')).toHaveLength(1);
    expect(claims.filter((c) => c.kind === 'busy')).toHaveLength(7);
  });

  it('GIVEN a member who stops holding THEN the lapse and the restore each happen once, and a due lapse is found', async () => {
    const { store } = await adapter.open();
    const k = key('telegram:5', 'member', 'telegram:-100');
    expect(await store.lapse(k, NOW)).toBe(false);
    const claim = await store.claim(k, 'grant', NOW, STALE_MS, { again: true });
    await store.finish(k, claim.kind === 'claimed' ? claim.token : '', { ok: true }, NOW);
    const lapses = await Promise.all([store.lapse(k, at(1_000)), store.lapse(k, at(1_000))]);
    expect(lapses.filter(Boolean)).toHaveLength(1);
    expect((await store.grantsOf('telegram:-100', 'telegram:5'))[0]).toMatchObject({
      state: 'lapsed',
      lapsedAt: at(1_000).toISOString(),
    });
    expect(await store.lapsedBefore(at(999), 10)).toEqual([]);
    expect((await store.lapsedBefore(at(1_000), 10)).map((g) => g.person)).toEqual(['telegram:5']);
    expect(await store.restore(k, at(2_000))).toBe(true);
    expect(await store.restore(k, at(2_000))).toBe(false);
    const [grant] = await store.grantsOf('telegram:-100', 'telegram:5');
    expect(grant?.state).toBe('granted');
    expect(grant?.lapsedAt).toBeUndefined();
    // An administrator is never removed: the removal ends with the member granted again.
    await store.lapse(k, at(3_000));
    const removal = await store.claim(k, 'revoke', at(4_000), STALE_MS);
    await store.finish(k, removal.kind === 'claimed' ? removal.token : '', { ok: true, state: 'granted' }, at(5_000));
    expect((await store.grantsOf('telegram:-100', 'telegram:5'))[0]).toMatchObject({ state: 'granted' });
  });

  it('GIVEN grants THEN the people holding one are read in key order, a page at a time; a target is forgotten', async () => {
    const { store } = await adapter.open();
    for (const person of ['discord:9', 'discord:10', 'discord:2', 'discord:3']) {
      const claim = await store.claim(key(person), 'grant', NOW, STALE_MS);
      await store.finish(key(person), claim.kind === 'claimed' ? claim.token : '', { ok: true }, NOW);
    }
    const revoke = await store.claim(key('discord:3'), 'revoke', NOW, STALE_MS);
    await store.finish(key('discord:3'), revoke.kind === 'claimed' ? revoke.token : '', { ok: true }, NOW);
    expect(await store.grantedPeople('discord:100', undefined, 2)).toEqual(['discord:10', 'discord:2']);
    expect(await store.grantedPeople('discord:100', 'discord:2', 2)).toEqual(['discord:9']);
    expect(await store.forgetTarget('discord:100', '500')).toBe(4);
    expect(await store.grantedPeople('discord:100', undefined, 10)).toEqual([]);
  });

  it('GIVEN the progress of a re-check WHEN the store is opened again THEN it is still there, until cleared', async () => {
    const { store, again } = await adapter.open();
    expect(await store.recheckProgress()).toBeUndefined();
    const progress = {
      startedAt: NOW.toISOString(),
      communities: ['discord:100', 'telegram:-100'],
      after: 'discord:42',
      people: 42,
    };
    await store.saveRecheckProgress(progress);
    await store.addRule(rule(), 5);
    const claim = await store.claim(key('discord:1'), 'grant', NOW, STALE_MS);
    await store.finish(key('discord:1'), claim.kind === 'claimed' ? claim.token : '', { ok: true }, NOW);
    const reopened = await again();
    expect(await reopened.recheckProgress()).toEqual(progress);
    expect(await reopened.rulesOf('discord:100')).toHaveLength(1);
    expect((await reopened.grantsOf('discord:100', 'discord:1'))[0]?.state).toBe('granted');
    await reopened.saveRecheckProgress(undefined);
    expect(await reopened.recheckProgress()).toBeUndefined();
  });
});

describe('role file', () => {
  it('GIVEN a change claimed and never finished WHEN the file is opened again THEN the claim is forgotten', async () => {
    const file = join(dir, 'pending.jsonl');
    const store = await FileRoleStore.open(file);
    await store.claim(key('discord:1'), 'grant', NOW, STALE_MS);
    await store.close();
    const reopened = await FileRoleStore.open(file);
    expect((await reopened.grantsOf('discord:100', 'discord:1'))[0]?.pending).toBeUndefined();
    expect((await reopened.claim(key('discord:1'), 'grant', NOW, STALE_MS)).kind).toBe('claimed');
  });

  it('GIVEN a torn last line THEN it is cut off; GIVEN a damaged line THEN opening fails naming it and the file is untouched', async () => {
    const file = join(dir, 'torn.jsonl');
    const store = await FileRoleStore.open(file);
    await store.addRule(rule(), 5);
    await store.close();
    await appendFile(file, '{"k":"rule","rule":{"id":"h9');
    const reopened = await FileRoleStore.open(file);
    expect(await reopened.rulesOf('discord:100')).toHaveLength(1);
    expect((await readFile(file, 'utf8')).endsWith('\n')).toBe(true);
    await reopened.close();
    const bad =
      '{"op":"roles","v":1}\n{"k":"grant","grant":{"community":"discord:1","target":"5","person":"nobody"}}\n';
    await writeFile(file, bad);
    const error = await FileRoleStore.open(file).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreFileError);
    expect(String(error)).toMatch(/line 2 is not a role record \(grant\.person/);
    expect(await readFile(file, 'utf8')).toBe(bad);
    await writeFile(file, '{"op":"wallets","v":1}\n');
    await expect(FileRoleStore.open(file)).rejects.toThrow(/not a roles file header/);
  });

  it('GIVEN many changes at once THEN they share appends, and the file is rewritten to its live records', async () => {
    const file = join(dir, 'compact.jsonl');
    const store = await FileRoleStore.open(file);
    for (let round = 0; round < 3; round++) {
      await Promise.all(
        Array.from({ length: 400 }, async (_, i) => {
          const k = key(`discord:${i}`);
          const claim = await store.claim(k, round % 2 ? 'revoke' : 'grant', NOW, STALE_MS);
          await store.finish(k, claim.kind === 'claimed' ? claim.token : '', { ok: true }, NOW);
        }),
      );
    }
    await store.flush();
    const lines = (await readFile(file, 'utf8')).trimEnd().split('\n').length;
    expect(lines).toBeLessThan(2_000);
    await store.close();
    const reopened = await FileRoleStore.open(file);
    expect(await reopened.grantedPeople('discord:100', undefined, 1_000)).toHaveLength(400);
  });
});

describe('role store on PostgreSQL, between processes', () => {
  it('GIVEN two processes WHEN one changes a rule THEN the other hears the community once, and a notice that does not read is ignored', async () => {
    const url = await postgres.freshDatabase();
    const open = async () => {
      const db = await Database.open(url, { logger: silent, poolSize: 4 });
      toClose.push(() => db.close());
      return { db, store: await PgRoleStore.open(db, silent) };
    };
    const one = await open();
    const other = await open();
    const heardHere: string[] = [];
    const heardThere: string[] = [];
    one.store.onRulesChanged((community) => heardHere.push(community));
    other.store.onRulesChanged((community) => heardThere.push(community));
    // Hostile or foreign notices on the channel: not JSON, no origin, a community that is not text.
    for (const payload of ['not json', '{"community":"discord:9"}', '{"origin":"x","community":7}']) {
      await one.db.pool.query('SELECT pg_notify($1, $2)', [ROLES_CHANNEL, payload]);
    }
    await one.store.addRule(rule(), 5);
    await expect.poll(() => heardThere, { timeout: 10_000 }).toEqual(['discord:100']);
    expect(heardHere).toEqual(['discord:100']);
  });
});
