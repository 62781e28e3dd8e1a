import { mkdtemp, readFile, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buttonsFileOf, StateStore, StoreFileError, StoreWriteError } from '../../../src/store/files/state.ts';
import { InvalidChangeError } from '../../../src/store/schema.ts';

/** A watch rule as the state file holds it. */
const ruleRecord = (id: string) => ({
  id,
  destination: { platform: 'telegram' as const, chatId: '1' },
  network: 'devnet',
  collection: '0x00000000000000000000000000000000000000ab',
  collectionName: 'Cats',
  kinds: ['sale' as const],
  paused: false,
  createdBy: 'telegram:9',
  createdAt: '2026-01-01T00:00:00.000Z',
});

let dir: string;
let file: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'floorwatch-state-'));
  file = join(dir, 'state.json');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('StateStore', () => {
  it('GIVEN no file WHEN opened THEN it creates one with the current version, and the buttons file beside it', async () => {
    await StateStore.open(file);
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({
      version: 3,
      chats: {},
      rules: [],
      nextRuleNumber: 1,
    });
    expect(buttonsFileOf(file)).toBe(join(dir, 'state.buttons.jsonl'));
    expect(await readFile(buttonsFileOf(file), 'utf8')).toBe('{"op":"buttons","v":1}\n');
  });

  it('GIVEN chat settings written WHEN reopened THEN they are read back from disk', async () => {
    const store = await StateStore.open(file);
    await store.updateChat('console:terminal', (s) => {
      s.network = 'devnet';
      s.aliases.cats = {
        alias: 'cats',
        network: 'devnet',
        address: '0x0000000000000000000000000000000000000abc',
        name: 'Cats',
      };
    });
    const again = await StateStore.open(file);
    expect(again.chat('console:terminal')).toEqual({
      network: 'devnet',
      aliases: {
        cats: { alias: 'cats', network: 'devnet', address: '0x0000000000000000000000000000000000000abc', name: 'Cats' },
      },
    });
    expect(again.chat('telegram:1')).toEqual({ aliases: {} });
  });

  it('GIVEN a version 1 file WHEN opened THEN it is migrated to version 3, keeps its chats and buttons, and is written back', async () => {
    await writeFile(
      file,
      JSON.stringify({
        version: 1,
        chats: { 'telegram:1': { network: 'devnet', aliases: {} } },
        buttons: { h1: { action: '/floor cats', createdAt: new Date().toISOString() } },
      }),
    );
    const store = await StateStore.open(file);
    expect(store.data.version).toBe(3);
    expect(store.rules).toEqual([]);
    expect(store.chat('telegram:1').network).toBe('devnet');
    expect(store.button('h1')?.action).toBe('/floor cats');
    expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({ version: 3, rules: [], nextRuleNumber: 1 });
  });

  it('GIVEN a version 2 file with rules and buttons WHEN opened THEN its buttons move to the buttons file, the state file is written as version 3 without them, and both read back', async () => {
    const saved = new Date().toISOString();
    await writeFile(
      file,
      JSON.stringify({
        version: 2,
        chats: {},
        buttons: { h1: { action: '/floor cats', createdAt: saved }, h2: { action: '/floor dogs', createdAt: saved } },
        rules: [{ ...ruleRecord('r4'), paused: true }],
        nextRuleNumber: 5,
      }),
    );
    const store = await StateStore.open(file);
    expect(store.rules.map((r) => [r.id, r.paused])).toEqual([['r4', true]]);
    const state = JSON.parse(await readFile(file, 'utf8'));
    expect(state).toEqual({ version: 3, chats: {}, rules: [{ ...ruleRecord('r4'), paused: true }], nextRuleNumber: 5 });
    const lines = (await readFile(buttonsFileOf(file), 'utf8')).trimEnd().split('\n');
    expect(lines.slice(1).map((line) => JSON.parse(line).h)).toEqual(['h1', 'h2']);
    await store.saveButton('h3', '/floor birds', new Date());
    const reopened = await StateStore.open(file);
    expect(reopened.storedButtons().map(([hash, button]) => [hash, button.action])).toEqual([
      ['h1', '/floor cats'],
      ['h2', '/floor dogs'],
      ['h3', '/floor birds'],
    ]);
    expect((await reopened.addRule(ruleRecord('x'), 10))?.id).toBe('r5');
  });

  it('GIVEN a crash after the buttons were moved but before the version 2 file was written back WHEN opened again THEN the move is done again and nothing is lost or doubled', async () => {
    const saved = new Date().toISOString();
    const v2 = JSON.stringify({
      version: 2,
      chats: {},
      buttons: { h1: { action: '/floor cats', createdAt: saved } },
      rules: [],
      nextRuleNumber: 1,
    });
    await writeFile(file, v2);
    await StateStore.open(file);
    const moved = await readFile(buttonsFileOf(file), 'utf8');
    await writeFile(file, v2);
    const again = await StateStore.open(file);
    expect(await readFile(buttonsFileOf(file), 'utf8')).toBe(moved);
    expect(again.storedButtons().map(([hash]) => hash)).toEqual(['h1']);
  });

  it('GIVEN a version 2 file whose buttons are invalid WHEN opened THEN it refuses, names the field, and writes neither file', async () => {
    const content = JSON.stringify({
      version: 2,
      chats: {},
      buttons: { h1: { action: '/floor cats', createdAt: 'yesterday' } },
      rules: [],
      nextRuleNumber: 1,
    });
    await writeFile(file, content);
    const error = await StateStore.open(file).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreFileError);
    expect((error as Error).message).toMatch(/has invalid content \(buttons\.h1\.createdAt: expected an ISO time/);
    expect(await readFile(file, 'utf8')).toBe(content);
    await expect(readFile(buttonsFileOf(file))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('GIVEN a version 2 file WHEN read for migrate-data THEN state and buttons are as open gives them, and nothing is written', async () => {
    const content = JSON.stringify({
      version: 2,
      chats: { 'telegram:1': { network: 'devnet', aliases: {} } },
      buttons: { h1: { action: '/floor cats', createdAt: new Date().toISOString() } },
      rules: [ruleRecord('r1')],
      nextRuleNumber: 2,
    });
    await writeFile(file, content);
    const read = await StateStore.read(file);
    expect(read.state).toMatchObject({ version: 3, rules: [ruleRecord('r1')], nextRuleNumber: 2 });
    expect(read.buttons.map(([hash, button]) => [hash, button.action])).toEqual([['h1', '/floor cats']]);
    expect(await readFile(file, 'utf8')).toBe(content);
    await expect(readFile(buttonsFileOf(file))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('GIVEN rules WHEN added and removed THEN ids are never reused and listeners hear of it', async () => {
    const store = await StateStore.open(file);
    let changes = 0;
    store.onRulesChanged(() => changes++);
    const base = {
      destination: { platform: 'telegram' as const, chatId: '1' },
      network: 'devnet',
      collection: '0x0000000000000000000000000000000000000abc',
      collectionName: 'Cats',
      kinds: ['sale' as const],
      paused: false,
      createdBy: 'telegram:9',
      createdAt: '2026-01-01T00:00:00.000Z',
    };
    const first = await store.addRule(base, 2);
    const second = await store.addRule(base, 2);
    expect(await store.addRule(base, 2)).toBeUndefined();
    expect([first?.id, second?.id]).toEqual(['r1', 'r2']);
    expect(await store.updateRule('r1', () => null)).toBe(true);
    const third = await store.addRule(base, 2);
    expect(third?.id).toBe('r3');
    expect(changes).toBe(4);
    expect((await StateStore.open(file)).rules.map((r) => r.id)).toEqual(['r2', 'r3']);
  });

  it('GIVEN listeners that throw WHEN rules and chats change THEN the failures are logged, the other listeners still hear, the writes go on, and nothing is left unhandled', async () => {
    const logged: Array<{ msg: string; err?: { message: string }; chat?: string }> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line)) });
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const store = await StateStore.open(file, { logger });
      const heardRules: string[] = [];
      const heardChats: string[] = [];
      store.onRulesChanged(() => {
        throw new Error('bad address in a listener');
      });
      store.onRulesChanged((change) =>
        heardRules.push(...('rules' in change ? change.rules.map((r) => r.id) : ['all'])),
      );
      store.onChatsChanged(() => {
        throw new Error('bad chat listener');
      });
      store.onChatsChanged((chatKey) => heardChats.push(chatKey));
      const rule = ruleRecord('ignored');
      const { id: _ignored, ...newRule } = rule;
      expect((await store.addRule(newRule, 5))?.id).toBe('r1');
      await store.updateChat('telegram:1', (settings) => {
        settings.network = 'devnet';
      });
      // The store still writes after the failures, and its listeners still hear.
      expect((await store.addRule(newRule, 5))?.id).toBe('r2');
      await new Promise<void>((resolve) => setImmediate(resolve));
      expect(heardRules).toEqual(['r1', 'r2']);
      expect(heardChats).toEqual(['telegram:1']);
      expect((await StateStore.open(file)).rules.map((r) => r.id)).toEqual(['r1', 'r2']);
      expect(logged.filter((l) => l.msg === 'a listener of rule changes failed').map((l) => l.err?.message)).toEqual([
        'bad address in a listener',
        'bad address in a listener',
      ]);
      expect(logged.find((l) => l.msg === 'a listener of chat changes failed')).toMatchObject({
        chat: 'telegram:1',
        err: { message: 'bad chat listener' },
      });
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('GIVEN rules of one chat, added, changed or read back from disk THEN they share one destination object; other chats have their own', async () => {
    const store = await StateStore.open(file);
    const rule = (chatId: string) => ({
      destination: { platform: 'discord' as const, chatId },
      network: 'devnet',
      collection: '0x0000000000000000000000000000000000000abc',
      collectionName: 'Cats',
      kinds: ['sale' as const],
      paused: false,
      createdBy: 'discord:9',
      createdAt: '2026-01-01T00:00:00.000Z',
    });
    await store.addRule(rule('1'), 10);
    await store.addRule(rule('2'), 10);
    await store.addRule(rule('1'), 10);
    await store.updateRule('r3', (r) => ({ ...r, paused: true, destination: { platform: 'discord', chatId: '1' } }));
    const shared = (s: StateStore) => {
      const [a, b, c] = s.rules;
      return { same: a?.destination === c?.destination, other: a?.destination !== b?.destination };
    };
    expect(shared(store)).toEqual({ same: true, other: true });
    expect(store.rules[2]?.paused).toBe(true);
    expect(shared(await StateStore.open(file))).toEqual({ same: true, other: true });
  });

  it('GIVEN a rule, a rule change or an alias with an address that is not canonical WHEN stored THEN it is refused with the field, nothing changes, and the file reopens', async () => {
    const store = await StateStore.open(file);
    const rule = {
      destination: { platform: 'telegram' as const, chatId: '1' },
      network: 'devnet',
      collection: `0x${'11'.repeat(20)}`,
      collectionName: 'Cats',
      kinds: ['sale' as const],
      paused: false,
      createdBy: 'telegram:9',
      createdAt: '2026-01-01T00:00:00.000Z',
    };
    const spaced = store.addRule({ ...rule, collection: `${rule.collection} ` }, 10);
    await expect(spaced).rejects.toBeInstanceOf(InvalidChangeError);
    await expect(spaced).rejects.toThrow(/rule r1 was not saved: collection: expected an address/);
    const good = await store.addRule(rule, 10);
    await expect(
      store.updateRule(good?.id ?? '', (r) => ({ ...r, wallets: [`0x${'AB'.repeat(20)}`] })),
    ).rejects.toThrow(/wallets\[0\]: expected an address/);
    await expect(
      store.updateChat('telegram:1', (s) => {
        s.aliases.cats = { alias: 'cats', network: 'devnet', address: `${rule.collection}\t` };
      }),
    ).rejects.toBeInstanceOf(InvalidChangeError);
    await store.flush();
    const again = await StateStore.open(file);
    expect(again.rules).toEqual([{ ...rule, id: good?.id }]);
    expect(again.chat('telegram:1')).toEqual({ aliases: {} });
  });

  it.each([
    ['a truncated file', '{"version":1,"chats":{', /not valid JSON/],
    ['an empty file', '', /is empty/],
    ['a file of a newer version', '{"version":99,"chats":{},"buttons":{}}', /newer Floorwatch/],
    ['a file without a version', '{"chats":{}}', /no valid "version"/],
    ['a JSON list', '[1,2]', /does not hold a JSON object/],
  ])('GIVEN %s WHEN opened THEN it refuses, names the file and leaves it untouched', async (_, content, problem) => {
    await writeFile(file, content);
    const error = await StateStore.open(file).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreFileError);
    expect((error as StoreFileError).message).toContain(file);
    expect((error as StoreFileError).message).toMatch(problem);
    expect(await readFile(file, 'utf8')).toBe(content);
  });
});

describe('StateStore writes', () => {
  const rule = (chatId: string) => ({
    destination: { platform: 'telegram' as const, chatId },
    network: 'devnet',
    collection: '0x0000000000000000000000000000000000000abc',
    collectionName: 'Cats',
    kinds: ['sale' as const],
    paused: false,
    createdBy: 'telegram:9',
    createdAt: '2026-01-01T00:00:00.000Z',
  });

  it('GIVEN 500 changes made at once by many chats WHEN they settle THEN they share a few writes, each is confirmed, and all are on disk', async () => {
    const store = await StateStore.open(file);
    let ruleEvents = 0;
    store.onRulesChanged(() => ruleEvents++);
    const changes = Array.from({ length: 500 }, (_, i) =>
      i % 2 === 0
        ? store.addRule(rule(String(i % 50)), 50)
        : store.updateChat(`telegram:${i}`, (s) => {
            s.network = 'devnet';
          }),
    );
    const results = await Promise.all(changes);
    expect(results.every((r) => r !== undefined)).toBe(true);
    expect(store.writeStats.writes).toBeLessThanOrEqual(3);
    expect(ruleEvents).toBeLessThanOrEqual(3);
    const reopened = await StateStore.open(file);
    expect(reopened.rules).toHaveLength(250);
    expect(Object.keys(reopened.data.chats)).toHaveLength(250);
    expect(new Set(reopened.rules.map((r) => r.id)).size).toBe(250);
  });

  it('GIVEN changes waiting for a write that fails WHEN it fails THEN all of them are undone and rejected, in memory and on disk', async () => {
    const store = await StateStore.open(file);
    await store.addRule(rule('1'), 50);
    await store.updateChat('telegram:1', (s) => {
      s.network = 'devnet';
    });
    const before = await readFile(file, 'utf8');
    const temp = join(dir, '.state.json.tmp');
    await symlink('/dev/full', temp);
    const outcomes = await Promise.allSettled([
      store.addRule(rule('1'), 50),
      store.updateRule('r1', () => null),
      store.updateChat('telegram:1', (s) => {
        s.network = 'devnet-l2';
        s.aliases.cats = { alias: 'cats', network: 'devnet', address: '0x0000000000000000000000000000000000000abc' };
      }),
    ]);
    await unlink(temp);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected', 'rejected']);
    for (const o of outcomes) expect((o as PromiseRejectedResult).reason).toBeInstanceOf(StoreWriteError);
    expect(store.rules.map((r) => r.id)).toEqual(['r1']);
    expect(store.chat('telegram:1')).toEqual({ network: 'devnet', aliases: {} });
    expect(await readFile(file, 'utf8')).toBe(before);
    // The id of the lost rule is given again: it was never seen by anyone as saved.
    expect((await store.addRule(rule('1'), 50))?.id).toBe('r2');
  });

  it('GIVEN a change that throws THEN nothing of it stays, and the changes around it are saved', async () => {
    const store = await StateStore.open(file);
    const outcomes = await Promise.allSettled([
      store.updateChat('telegram:1', (s) => {
        s.network = 'devnet';
      }),
      store.updateChat('telegram:1', (s) => {
        s.network = 'devnet-l2';
        throw new Error('refused');
      }),
      store.updateChat('telegram:2', (s) => {
        s.network = 'devnet';
      }),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const reopened = await StateStore.open(file);
    expect(reopened.chat('telegram:1').network).toBe('devnet');
    expect(reopened.chat('telegram:2').network).toBe('devnet');
  });

  it('GIVEN stored buttons WHEN they are older than their time to live or beyond the cap THEN they no longer work and leave the file', async () => {
    let now = new Date('2026-01-01T00:00:00.000Z');
    const store = await StateStore.open(file, { now: () => now, maxButtons: 3, buttonTtlMs: 7 * 86_400_000 });
    await store.saveButton('old', '/floor moon cats trait=Background:Blue', now);
    now = new Date('2026-01-05T00:00:00.000Z');
    for (const hash of ['a', 'b', 'c']) await store.saveButton(hash, `/floor ${hash}`, now);
    // Four saved, three kept: the least recently saved went first.
    expect(store.button('old')).toBeUndefined();
    expect(['a', 'b', 'c'].map((h) => store.button(h)?.action)).toEqual(['/floor a', '/floor b', '/floor c']);

    now = new Date('2026-01-11T00:00:00.000Z');
    await store.saveButton('a', '/floor a', now);
    await store.saveButton('d', '/floor d', now);
    now = new Date('2026-01-13T00:00:00.000Z');
    // b and c are 8 days old: expired; a was saved again on the 11th.
    expect(store.button('b')).toBeUndefined();
    expect(store.button('a')?.action).toBe('/floor a');
    const reopened = await StateStore.open(file, { now: () => now });
    expect(reopened.storedButtons().map(([hash]) => hash)).toEqual(['a', 'd']);
  });

  it('GIVEN keys that name Object.prototype members WHEN chats and buttons are looked up THEN they are missing keys', async () => {
    const store = await StateStore.open(file);
    for (const key of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
      expect(store.chat(key)).toEqual({ aliases: {} });
      expect(store.chat('telegram:1').aliases[key]).toBeUndefined();
      expect(store.button(key)).toBeUndefined();
    }
    await store.updateChat('__proto__', (s) => {
      s.network = 'devnet';
    });
    expect(({} as { network?: string }).network).toBeUndefined();
    expect(store.chat('__proto__').network).toBe('devnet');
  });

  it('GIVEN a state file whose fields are of the wrong kind WHEN opened THEN it refuses and names the field', async () => {
    await writeFile(
      file,
      JSON.stringify({
        version: 2,
        chats: { 'telegram:1': { aliases: {}, digest: { hour: 25 } } },
        buttons: {},
        rules: [],
        nextRuleNumber: 1,
      }),
    );
    const error = await StateStore.open(file).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreFileError);
    expect((error as Error).message).toMatch(/chats\.telegram:1\.digest\.hour/);
  });
});
