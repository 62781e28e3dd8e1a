import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ButtonCodec } from '../../src/bot/buttons.ts';
import type { ChatRef } from '../../src/bot/command.ts';
import { StateStore } from '../../src/store/state.ts';
import { ADMIN, type Harness, startHarness } from '../helpers/bot-harness.ts';
import { runEntryPoint } from '../helpers/entry-point.ts';

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
  it('GIVEN long button actions shown over days WHEN a week has passed or the cap is reached THEN the old ones stop working and leave the state file', async () => {
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
    const saved = JSON.parse(await readFile(file, 'utf8')) as { buttons: Record<string, unknown> };
    expect(Object.keys(saved.buttons)).toHaveLength(50);
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
