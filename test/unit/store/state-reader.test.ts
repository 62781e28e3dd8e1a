import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ALERT_KINDS, type WatchRule } from '../../../src/core/types.ts';
import { StateReader, StateStore, StoreFileError } from '../../../src/store/files/state.ts';

/** Texts that put quotes, backslashes and multi-byte characters where chunks may cut them. */
const tricky = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc
    .array(fc.constantFrom('\\', '"', '\\"', '\\\\', 'é', '😀', '\u2028', '\n', 'a', '}', ']', ','), { maxLength: 8 })
    .map((parts) => parts.join('')),
);

const ruleArb = fc.record(
  {
    id: fc.nat({ max: 10_000 }).map((n) => `r${n}`),
    destination: fc.record({
      platform: fc.constantFrom('console' as const, 'discord' as const, 'telegram' as const),
      chatId: tricky.map((t) => `c${t}`),
    }),
    network: fc.constantFrom('devnet', 'polygon'),
    collection: fc.constantFrom(
      '0x0000000000000000000000000000000000000abc',
      '0x000000000000000000000000000000000000def0',
    ),
    collectionName: tricky,
    kinds: fc.array(fc.constantFrom(...ALERT_KINDS), { minLength: 1, maxLength: 2 }),
    // As this version writes them: dollars, or an amount with its currency (older ones are migrated on read).
    minPrice: fc.oneof(
      fc.record({ value: fc.constantFrom('1', '0.5'), usd: fc.constant(true) }),
      fc.record({
        value: fc.constantFrom('1', '0.5'),
        usd: fc.constant(false),
        currency: fc.constantFrom(
          '0x0000000000000000000000000000000000000000',
          '0x00000000000000000000000000000000000d05d0',
        ),
        symbol: fc.constantFrom('DEV', 'DUSD'),
      }),
    ),
    traits: fc.array(fc.record({ name: tricky, value: tricky }), { maxLength: 2 }),
    paused: fc.boolean(),
    createdBy: tricky,
    createdAt: fc.constant('2026-01-01T00:00:00.000Z'),
  },
  {
    requiredKeys: [
      'id',
      'destination',
      'network',
      'collection',
      'collectionName',
      'kinds',
      'paused',
      'createdBy',
      'createdAt',
    ],
  },
);

const stateArb = fc.record({
  version: fc.constant(2),
  chats: fc.constant({}),
  buttons: fc.dictionary(tricky, fc.record({ action: tricky, createdAt: fc.constant('2026-01-01T00:00:00.000Z') }), {
    maxKeys: 3,
  }),
  rules: fc.array(ruleArb, { maxLength: 12 }),
  nextRuleNumber: fc.integer({ min: 1, max: 20_000 }),
});

/** Feeds `bytes` in chunks of `size` through one reused buffer, as the store reads the file. */
function read(bytes: Buffer, size: number) {
  const seen: WatchRule[] = [];
  const reader = new StateReader((rule) => seen.push(rule));
  const chunk = Buffer.alloc(size);
  for (let at = 0; at < bytes.length; at += size) {
    const length = bytes.copy(chunk, 0, at, at + size);
    reader.feed(chunk, length);
  }
  return { ...reader.end(), seen };
}

/** A rule as the stores read it: a minimum stored without a unit is in the network's native coin. */
function inNativeCoinWhenUnitless(rule: unknown): unknown {
  const min = (rule as { minPrice?: { usd: boolean; currency?: string } }).minPrice;
  if (!min || min.usd || min.currency !== undefined) return rule;
  return { ...(rule as object), minPrice: { ...min, currency: '0x0000000000000000000000000000000000000000' } };
}

describe('StateReader', () => {
  it('GIVEN any state file of this version, cut into chunks of any size THEN it reads what JSON.parse reads, each rule checked once', () => {
    fc.assert(
      fc.property(stateArb, fc.integer({ min: 1, max: 64 }), fc.boolean(), (state, size, spaced) => {
        const bytes = Buffer.from(spaced ? JSON.stringify(state, null, 2) : JSON.stringify(state));
        const result = read(bytes, size);
        const { rules, ...rest } = JSON.parse(bytes.toString('utf8')) as typeof state;
        expect(result.top).toEqual({ ...rest, rules: [] });
        expect(result.rules?.problems).toBeUndefined();
        expect(result.rules?.rules).toEqual(rules);
        expect(result.seen).toEqual(rules);
      }),
      { numRuns: 300 },
    );
  });

  it('GIVEN a state file with one byte inserted anywhere THEN it refuses it exactly when JSON.parse does, and otherwise reads the same', () => {
    fc.assert(
      fc.property(
        stateArb,
        fc.nat(),
        fc.constantFrom('{', '}', '[', ']', '"', ',', ':', '\\', ' ', 'x', '0', '\u0000', 'é'),
        fc.integer({ min: 1, max: 16 }),
        (state, where, insert, size) => {
          const text = JSON.stringify(state);
          const at = where % (text.length + 1);
          const bytes = Buffer.from(text.slice(0, at) + insert + text.slice(at));
          let parsed: Record<string, unknown> | undefined;
          try {
            parsed = JSON.parse(bytes.toString('utf8'));
          } catch {
            parsed = undefined;
          }
          let result: ReturnType<typeof read> | undefined;
          try {
            result = read(bytes, size);
          } catch {
            result = undefined;
          }
          if (parsed === undefined || typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
            expect(result).toBeUndefined();
            return;
          }
          // Valid JSON that reads differently (a rule that became invalid) may also be left to the whole-file path.
          if (result === undefined || result.rules?.problems) return;
          const { rules, ...rest } = parsed;
          expect(result.top).toEqual({ ...rest, rules: result.rules ? [] : rules });
          // A byte inside `currency` leaves a minimum without one: it is read in the native coin.
          if (result.rules) expect(result.rules.rules).toEqual((rules as unknown[]).map(inNativeCoinWhenUnitless));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('GIVEN the version after the rules, or an older version THEN it keeps the rules unchecked for the whole-file path', () => {
    const late = read(Buffer.from('{"rules":[{"a":1}],"version":2}'), 5);
    expect(late.rules).toBeUndefined();
    expect(late.top).toEqual({ rules: [{ a: 1 }], version: 2 });
    const old = read(Buffer.from('{"version":1,"rules":[null]}'), 3);
    expect(old.top).toEqual({ version: 1, rules: [null] });
  });

  it('GIVEN keys as JSON.parse would take them (duplicates, __proto__) THEN the last one wins and __proto__ is an own key', () => {
    const result = read(Buffer.from('{"version":2,"__proto__":{"x":1},"rules":[null],"rules":[]}'), 7);
    expect(Object.getPrototypeOf(result.top)).toBe(Object.prototype);
    expect(Object.hasOwn(result.top, '__proto__')).toBe(true);
    expect(result.rules).toEqual({ rules: [], problems: undefined });
  });

  it('GIVEN anything but an object THEN it refuses it', () => {
    for (const text of ['', '   ', '[1,2]', 'null', '"x"', '{"a":1} x', '{"a":1,}', '{"rules":[1,]}', '\uFEFF{}']) {
      expect(() => read(Buffer.from(text), 4), text).toThrow();
    }
  });
});

describe('StateStore.open of large and unusual files', () => {
  let dir: string;
  let file: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'floorwatch-state-reader-'));
    file = join(dir, 'state.json');
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const rule = (n: number) => ({
    id: `r${n}`,
    destination: { platform: 'telegram', chatId: `${n % 50}` },
    network: 'devnet',
    collection: `0x${n.toString(16).padStart(40, '0')}`,
    collectionName: `Cats "${'é'.repeat(n % 7)}\\${n}`,
    kinds: ['sale'],
    paused: false,
    createdBy: `telegram:${n % 50}`,
    createdAt: '2026-01-01T00:00:00.000Z',
  });

  it('GIVEN a file of 5,000 rules (over a megabyte, read in many chunks) WHEN opened THEN every rule is read as written, one destination per chat', async () => {
    const rules = Array.from({ length: 5_000 }, (_, i) => rule(i + 1));
    await writeFile(file, JSON.stringify({ version: 2, chats: {}, buttons: {}, rules, nextRuleNumber: 1 }));
    const store = await StateStore.open(file);
    expect(store.rules).toEqual(rules);
    expect(store.data.nextRuleNumber).toBe(5_001);
    expect(new Set(store.rules.map((r) => r.destination)).size).toBe(50);
  });

  it('GIVEN the version written after the rules WHEN opened THEN it is read all the same', async () => {
    await writeFile(file, JSON.stringify({ chats: {}, buttons: {}, rules: [rule(1)], version: 2 }));
    expect((await StateStore.open(file)).rules).toEqual([rule(1)]);
  });

  it('GIVEN a bad rule and a bad top-level field WHEN opened THEN the top-level field is named first', async () => {
    await writeFile(file, JSON.stringify({ version: 2, chats: [], buttons: {}, rules: [null] }));
    const error = await StateStore.open(file).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/has invalid content \(chats: expected an object/);
  });

  it('GIVEN a bad rule and broken JSON after it WHEN opened THEN it says the JSON is broken, and leaves the file untouched', async () => {
    const content = `${JSON.stringify({ version: 2, chats: {}, buttons: {}, rules: [null, rule(2)] }).slice(0, -2)}`;
    await writeFile(file, content);
    const error = await StateStore.open(file).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreFileError);
    expect((error as Error).message).toMatch(/is not valid JSON/);
    expect(await readFile(file, 'utf8')).toBe(content);
  });

  it('GIVEN a bad rule among good ones WHEN opened THEN the first bad rule is named by its place in the list', async () => {
    const rules: unknown[] = Array.from({ length: 3_000 }, (_, i) => rule(i + 1));
    rules[2_500] = { ...rule(2_501), createdAt: 'yesterday' };
    rules[2_800] = null;
    await writeFile(file, JSON.stringify({ version: 2, chats: {}, buttons: {}, rules }));
    const error = await StateStore.open(file).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/rules\[2500\]\.createdAt: expected an ISO time/);
    expect((error as Error).message).not.toMatch(/rules\[2800\]/);
  });
});

describe('StateStore writes of many rules', () => {
  let dir: string;
  let file: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'floorwatch-state-writer-'));
    file = join(dir, 'state.json');
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const rule = (n: number) => ({
    destination: { platform: 'telegram' as const, chatId: `${n % 7}` },
    network: 'devnet',
    collection: '0x0000000000000000000000000000000000000abc',
    collectionName: `Cats ${'"\\é'.repeat(n % 3)}`,
    kinds: ['sale' as const],
    paused: false,
    createdBy: 'telegram:9',
    createdAt: '2026-01-01T00:00:00.000Z',
  });

  it('GIVEN 2,500 rules (written a thousand at a time) WHEN a change is saved THEN the file is the JSON text of the state, and changes made during the write wait for the next one', async () => {
    const store = await StateStore.open(file);
    await Promise.all(Array.from({ length: 2_500 }, (_, i) => store.addRule(rule(i), 10_000)));
    await store.updateChat('telegram:1', (s) => {
      s.network = 'devnet';
    });
    expect(await readFile(file, 'utf8')).toBe(JSON.stringify(store.data));

    const saved = store.updateRule('r1', () => null);
    // The write of the removal starts now; the rule added next is applied in memory while it runs.
    void store.flush();
    const during = store.addRule(rule(1), 10_000);
    await saved;
    const written = JSON.parse(await readFile(file, 'utf8')) as { rules: Array<{ id: string }> };
    expect(written.rules).toHaveLength(2_499);
    await during;
    expect(await readFile(file, 'utf8')).toBe(JSON.stringify(store.data));
    expect(store.rules).toHaveLength(2_500);
    expect((await StateStore.open(file)).rules).toEqual(store.rules);
  });
});
