import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StateStore, StoreFileError } from '../../../src/store/state.ts';

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
  it('GIVEN no file WHEN opened THEN it creates one with the current version', async () => {
    await StateStore.open(file);
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({
      version: 2,
      chats: {},
      buttons: {},
      rules: [],
      nextRuleNumber: 1,
    });
  });

  it('GIVEN chat settings written WHEN reopened THEN they are read back from disk', async () => {
    const store = await StateStore.open(file);
    await store.updateChat('console:terminal', (s) => {
      s.network = 'devnet';
      s.aliases.cats = { alias: 'cats', network: 'devnet', address: '0xabc', name: 'Cats' };
    });
    const again = await StateStore.open(file);
    expect(again.chat('console:terminal')).toEqual({
      network: 'devnet',
      aliases: { cats: { alias: 'cats', network: 'devnet', address: '0xabc', name: 'Cats' } },
    });
    expect(again.chat('telegram:1')).toEqual({ aliases: {} });
  });

  it('GIVEN a version 1 file WHEN opened THEN it is migrated to version 2 and keeps its chats', async () => {
    await writeFile(
      file,
      JSON.stringify({ version: 1, chats: { 'telegram:1': { network: 'devnet', aliases: {} } }, buttons: {} }),
    );
    const store = await StateStore.open(file);
    expect(store.data.version).toBe(2);
    expect(store.rules).toEqual([]);
    expect(store.chat('telegram:1').network).toBe('devnet');
  });

  it('GIVEN rules WHEN added and removed THEN ids are never reused and listeners hear of it', async () => {
    const store = await StateStore.open(file);
    let changes = 0;
    store.onRulesChanged(() => changes++);
    const base = {
      destination: { platform: 'telegram' as const, chatId: '1' },
      network: 'devnet',
      collection: '0xabc',
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

  it('GIVEN rules of one chat, added, changed or read back from disk THEN they share one destination object; other chats have their own', async () => {
    const store = await StateStore.open(file);
    const rule = (chatId: string) => ({
      destination: { platform: 'discord' as const, chatId },
      network: 'devnet',
      collection: '0xabc',
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
