import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ButtonCodec } from '../../src/bot/buttons.ts';
import type { ChatRef } from '../../src/bot/command.ts';
import { StateStore } from '../../src/store/files/state.ts';
import { ADMIN, type Harness, startHarness } from '../helpers/bot-harness.ts';
import { runEntryPoint } from '../helpers/entry-point.ts';
import { bytesWritten } from '../helpers/written.ts';

/*
 * Issue 13, items 7 and 8: what grows with use (stored buttons, the state file under many rule
 * changes) and what people type back at the bot (long lines, addresses with a typo).
 */

let dataDir: string;
beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'floorwatch-growth-'));
});
afterEach(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

describe('stored button actions', () => {
  it('GIVEN long button actions shown over days WHEN a week has passed or the cap is reached THEN the old ones stop working, also after a restart', async () => {
    let now = new Date('2026-03-01T12:00:00.000Z');
    const file = join(dataDir, 'state.json');
    const store = await StateStore.open(file, { now: () => now, maxButtons: 50 });
    const codec = new ButtonCodec(store, 64, () => now);
    const action = (n: number) => `/floor collection=devnet:0x${'ab'.repeat(20)} count=5 background="Tide Pool ${n}"`;
    const first = await codec.encode(action(0));
    expect(first.startsWith('#')).toBe(true);
    expect(codec.decode(first)).toBe(action(0));

    now = new Date('2026-03-09T12:00:01.000Z');
    expect(codec.decode(first)).toBeUndefined();
    const payloads: string[] = [];
    for (let n = 1; n <= 120; n++) payloads.push(await codec.encode(action(n)));
    expect(codec.decode(payloads[0] ?? '')).toBeUndefined();
    expect(codec.decode(payloads[119] ?? '')).toBe(action(120));
    const reopened = await StateStore.open(file, { now: () => now, maxButtons: 50 });
    expect(reopened.storedButtons()).toHaveLength(50);
    expect(reopened.button((payloads[69] ?? '').slice(1))).toBeUndefined();
    expect(reopened.button((payloads[70] ?? '').slice(1))?.action).toBe(action(71));
  });
});

describe('stored button actions beside a large state', () => {
  it('GIVEN a 3 MB state file (10,000 rules) WHEN 50 answers each store a long button action THEN state.json is not rewritten, under 1 kB is written a button, and the buttons work after a restart', async () => {
    const file = join(dataDir, 'state.json');
    const rules = Array.from({ length: 10_000 }, (_, i) => ({
      id: `r${i + 1}`,
      destination: { platform: 'telegram', chatId: `-100${i % 400}` },
      network: 'devnet',
      collection: `0x${(i % 50).toString(16).padStart(40, '0')}`,
      collectionName: `Collection number ${i % 50} of the community`,
      kinds: ['sale', 'listing'],
      minPrice: { value: String(i + 1), usd: true },
      traits: [{ name: 'Background', value: 'Tide Pool' }],
      paused: false,
      createdBy: `telegram:${1_000_000 + i}`,
      createdAt: '2026-01-01T00:00:00.000Z',
    }));
    await writeFile(file, JSON.stringify({ version: 2, chats: {}, buttons: {}, rules, nextRuleNumber: 10_001 }));
    const store = await StateStore.open(file);
    await store.flush();
    const before = await stat(file);
    expect(before.size).toBeGreaterThan(3_000_000);

    const codec = new ButtonCodec(store, 64);
    const action = (n: number) => `/floor collection=devnet:0x${'ab'.repeat(20)} count=5 background="Tide Pool ${n}"`;
    const writtenBefore = await bytesWritten();
    const payloads: string[] = [];
    for (let n = 0; n < 50; n++) payloads.push(await codec.encode(action(n)));
    const perButton = ((await bytesWritten()) - writtenBefore) / 50;

    const after = await stat(file);
    expect({ ino: after.ino, size: after.size, mtimeMs: after.mtimeMs }).toEqual({
      ino: before.ino,
      size: before.size,
      mtimeMs: before.mtimeMs,
    });
    expect(perButton).toBeLessThan(1_000);

    const reopened = new ButtonCodec(await StateStore.open(file), 64);
    expect(payloads.map((payload) => reopened.decode(payload))).toEqual(payloads.map((_, n) => action(n)));
  });
});

describe('many people changing rules at once', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ blockIntervalMs: 0 });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('GIVEN 40 admins of 40 groups adding 25 rules each at once THEN all 1,000 are confirmed, saved, and written in far fewer writes than changes', async () => {
    const gardens = h.devnet.collections.devnet?.find((c) => c.name === 'Glitch Gardens');
    if (!gardens) throw new Error('no Glitch Gardens');
    const writesBefore = h.store.writeStats.writes;
    const replies = await Promise.all(
      Array.from({ length: 40 }, async (_, person) => {
        const chat: ChatRef = { platform: 'telegram', id: `-100${person}`, kind: 'group' };
        const out: string[] = [];
        for (let i = 0; i < 25; i++) {
          const reply = await h.engine.runLine(`/watch add ${gardens.address} sale min=${i + 1}`, chat, ADMIN);
          out.push(reply?.title ?? '');
        }
        return out;
      }),
    );
    expect(replies.flat().filter((title) => title === 'Watching')).toHaveLength(1_000);
    const writes = h.store.writeStats.writes - writesBefore;
    expect(writes).toBeLessThan(500);
    const reopened = await StateStore.open(h.store.file);
    expect(reopened.rules.filter((r) => r.collection === gardens.address.toLowerCase())).toHaveLength(1_000);
  });
});

describe('what people type back', () => {
  it('GIVEN a 10 kB line and an address with a one-letter typo WHEN sent to the real entry point THEN the answers quote at most ~60 characters and name the checksum', async () => {
    const long = Array.from({ length: 2_000 }, (_, i) => `w${i}`).join(' ');
    // A real checksummed address with one letter's case flipped.
    const typo = '0x52908400098527886E0F7030069857D2E4169EE7'.replace('E0F', 'e0F');
    const run = await runEntryPoint(`/status ${long}\n/floor ${long}\n/watch add moon cats sale wallets=${typo}\n`, {
      FLOORWATCH_DATA_DIR: dataDir,
      FLOORWATCH_DEVNET_BLOCK_MS: '0',
    });
    expect(run.code).toBe(0);
    const tooMany = run.stdout.split('\n').find((line) => line.startsWith('Too many arguments'));
    expect(tooMany).toBeDefined();
    expect(tooMany?.length).toBeLessThan(120);
    expect(run.stdout).toContain('collection is too long (at most 100 characters)');
    expect(run.stdout).toContain('has a wrong checksum (EIP-55)');
    expect(run.stdout.length).toBeLessThan(2_000);
  });
});
