import { mkdtemp, readFile, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startBot } from '../../src/main.ts';
import { DeliveryJournal } from '../../src/store/files/journal/journal.ts';
import { buttonsFileOf, StateStore, StoreFileError } from '../../src/store/files/state.ts';
import { type Harness, startHarness } from '../helpers/bot-harness.ts';
import { runEntryPoint } from '../helpers/entry-point.ts';

/*
 * Issue 9: the bot's files on a bad day. A state file or delivery journal damaged in the middle
 * makes the bot refuse to start (exit 78 from the CLI, StoreFileError from startBot) with the file
 * and the problem named, and the file byte-for-byte as it was. A full disk while saving a change
 * (a real ENOSPC from /dev/full, not a mock) is answered with a clear error, and both the file
 * and the bot's memory keep the previous state. (A truncated state.json through the CLI is in
 * test/e2e/start.test.ts.)
 */

/** startBot with a data directory, no terminal and logs thrown away. */
function startIn(dataDir: string) {
  return startBot({
    env: { FLOORWATCH_DATA_DIR: dataDir, LOG_LEVEL: 'silent' },
    stdin: new PassThrough(),
    stdout: new PassThrough(),
    logDestination: new Writable({ write: (_chunk, _encoding, done) => done() }),
    cwd: dataDir,
  });
}

const delivery = (n: number) => ({
  eventId: `devnet:0x${n.toString(16)}:0xc0:sale`,
  destination: { platform: 'telegram' as const, chatId: '-100' },
  network: 'devnet',
  txnHash: `0x${n.toString(16)}`,
  blockNumber: n,
  payload: { title: `Sold: #${n}` },
});

/** A real journal of three deliveries (one sent), with a line of garbage put in after line 2. */
async function corruptJournal(file: string): Promise<Buffer> {
  const journal = await DeliveryJournal.open(file, { fsync: false });
  const records = await journal.record([delivery(1), delivery(2), delivery(3)]);
  await journal.markSending(records[0]?.id ?? '');
  await journal.markSent(records[0]?.id ?? '', '42');
  await journal.close();
  const lines = (await readFile(file, 'utf8')).split('\n');
  expect(lines.length).toBeGreaterThan(4);
  lines.splice(2, 0, '{"op":"sent","id":\u0000\u0007 garbage ]]');
  const bytes = Buffer.from(lines.join('\n'));
  await writeFile(file, bytes);
  return bytes;
}

let dataDir: string;
beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'floorwatch-corrupt-'));
});
afterEach(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

describe('start-up on damaged files', () => {
  it('GIVEN deliveries.jsonl with garbage in the middle WHEN the CLI starts THEN it exits 78, names the file and line, and leaves both files untouched', async () => {
    const stateFile = join(dataDir, 'state.json');
    const journalFile = join(dataDir, 'deliveries.jsonl');
    const store = await StateStore.open(stateFile);
    await store.updateChat('console:terminal', (s) => {
      s.network = 'devnet';
    });
    const state = await readFile(stateFile);
    const journal = await corruptJournal(journalFile);
    const run = await runEntryPoint('/help\n', { FLOORWATCH_DATA_DIR: dataDir });
    expect(run.code).toBe(78);
    expect(run.stderr).toContain(`${journalFile}: line 3 is not valid JSON`);
    expect(run.stderr).toContain('left untouched');
    expect(run.stdout).toBe('');
    expect((await readFile(journalFile)).equals(journal)).toBe(true);
    expect((await readFile(stateFile)).equals(state)).toBe(true);
  });

  it('GIVEN state.buttons.jsonl with garbage in the middle WHEN the CLI starts THEN it exits 78, names the file and line, and leaves it and state.json untouched', async () => {
    const stateFile = join(dataDir, 'state.json');
    const store = await StateStore.open(stateFile);
    for (const hash of ['h1', 'h2', 'h3']) await store.saveButton(hash, `/floor ${hash} count=5`, new Date());
    const buttonsFile = buttonsFileOf(stateFile);
    const lines = (await readFile(buttonsFile, 'utf8')).split('\n');
    lines.splice(2, 1, '{"h":"h2","a":\u0000\u0007 garbage ]]');
    const buttons = Buffer.from(lines.join('\n'));
    await writeFile(buttonsFile, buttons);
    const state = await readFile(stateFile);
    const run = await runEntryPoint('/help\n', { FLOORWATCH_DATA_DIR: dataDir });
    expect(run.code).toBe(78);
    expect(run.stderr).toContain(`${buttonsFile}: line 3 is not valid JSON`);
    expect(run.stderr).toContain('left untouched');
    expect(run.stdout).toBe('');
    expect((await readFile(buttonsFile)).equals(buttons)).toBe(true);
    expect((await readFile(stateFile)).equals(state)).toBe(true);
  });

  it('GIVEN state.json with garbage in the middle WHEN startBot is called THEN it rejects with StoreFileError naming the file, which is untouched', async () => {
    const file = join(dataDir, 'state.json');
    const good = JSON.stringify({ version: 2, chats: {}, buttons: {}, rules: [], nextRuleNumber: 1 });
    const bad = Buffer.from(`${good.slice(0, 20)}\u0000\u0000\u00ff garbage ${good.slice(20)}`);
    await writeFile(file, bad);
    const error = await startIn(dataDir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreFileError);
    expect((error as StoreFileError).file).toBe(file);
    expect((error as Error).message).toMatch(new RegExp(`^${file}: is not valid JSON .*left untouched`));
    expect((await readFile(file)).equals(bad)).toBe(true);
  });

  it('GIVEN an empty (truncated to zero) state.json WHEN startBot is called THEN it says so and writes nothing', async () => {
    const file = join(dataDir, 'state.json');
    await writeFile(file, '');
    const error = await startIn(dataDir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreFileError);
    expect((error as Error).message).toContain(`${file}: is empty (a truncated write?)`);
    expect(await readFile(file, 'utf8')).toBe('');
  });

  it('GIVEN a corrupt journal WHEN startBot is called THEN it rejects with StoreFileError naming the journal and line', async () => {
    const file = join(dataDir, 'deliveries.jsonl');
    const bytes = await corruptJournal(file);
    const error = await startIn(dataDir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreFileError);
    expect((error as StoreFileError).file).toBe(file);
    expect((error as Error).message).toContain(`${file}: line 3 is not valid JSON`);
    expect((await readFile(file)).equals(bytes)).toBe(true);
  });
});

describe('a full disk while saving the state', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ blockIntervalMs: 0 });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('GIVEN a disk that is full (the temporary file is /dev/full) WHEN a command saves a change THEN the user is told, and file and memory keep the previous state', async () => {
    const file = h.store.file;
    const moonCats = h.devnet.collections.devnet?.find((c) => c.name === 'Moon Cats')?.address ?? '';
    const temp = join(h.dataDir, `.state.json.tmp`);
    expect((await h.run(`/alias set cats ${moonCats}`)).tone).not.toBe('error');
    const before = await readFile(file);
    const memoryBefore = structuredClone(h.store.data);

    // lowdb writes to `.state.json.tmp` then renames it over the file: the write hits ENOSPC.
    await symlink('/dev/full', temp);
    try {
      const alias = await h.run(`/alias set kittens ${moonCats}`);
      const watch = await h.run(`/watch add ${moonCats} listing`);
      for (const reply of [alias, watch]) {
        expect(reply.tone).toBe('error');
        expect(h.text(reply)).toMatch(/Your change was not saved: the bot's disk is full\. Nothing was changed\./);
        expect(h.text(reply)).toMatch(/reference [0-9a-f]{8}/);
      }
      console.log(`full disk: "${h.text(alias).replace(/\n/g, ' ')}"`);
      expect((await readFile(file)).equals(before)).toBe(true);
      // The bot does not act on what it could not save: no rule, no alias in memory either.
      expect(h.store.data).toEqual(memoryBefore);
      expect(h.store.rules).toHaveLength(0);
      const reopened = await StateStore.open(file);
      expect(reopened.data).toEqual(memoryBefore);
    } finally {
      await unlink(temp);
    }

    // Space again: the next change is saved, and the refused ones never come back.
    expect((await h.run(`/alias set kittens ${moonCats}`)).tone).not.toBe('error');
    const after = await StateStore.open(file);
    expect(Object.keys(after.chat('console:terminal').aliases).sort()).toEqual(['cats', 'kittens']);
    expect(after.rules).toHaveLength(0);
  });
});
