import { execFileSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LOCK_FILE } from '../../src/store/files/lock.ts';
import { runEntryPoint, spawnEntryPoint, waitUntil } from '../helpers/entry-point.ts';

/*
 * Issue 13, items 1, 3 and 5, through the real entry point (`npm start` with piped input):
 * names that are Object.prototype's members, two bots on one data directory, and state files that
 * are valid JSON but not a valid state.
 */

let dataDir: string;
beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'floorwatch-hostile-'));
});
afterEach(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

const env = () => ({ FLOORWATCH_DATA_DIR: dataDir, FLOORWATCH_DEVNET_BLOCK_MS: '0' });

describe('names that objects carry (__proto__, constructor, toString)', () => {
  it('GIVEN /watch add, /alias and /digest with such names WHEN run in a private chat THEN each is "No collection matches" or refused, nothing bad is saved, and after a restart alerts still start', async () => {
    const first = await runEntryPoint(
      [
        '/watch add __proto__',
        '/watch add constructor',
        '/watch add toString sale',
        '/alias set constructor collection="moon cats"',
        '/digest set 09:00 UTC 1 __proto__',
        '/digest preview',
        '/floor hasOwnProperty',
        '/watch add moon cats sale',
        '/watch list',
      ].join('\n'),
      env(),
    );
    expect(first.code).toBe(0);
    expect(first.stdout).not.toContain('Something went wrong');
    for (const name of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
      expect(first.stdout).toContain(`No collection matches "${name}"`);
    }
    expect(first.stdout).toContain('"constructor" is a reserved word');
    expect(first.stdout).toContain('This chat has no digest');
    expect(first.stdout).toMatch(/r1 sale of Moon Cats \(devnet\)/);
    expect(first.stdout).not.toMatch(/undefined|Object \(/);

    const state = JSON.parse(await readFile(join(dataDir, 'state.json'), 'utf8'));
    expect(state.rules).toHaveLength(1);
    expect(state.rules[0]).toMatchObject({ id: 'r1', network: 'devnet', collectionName: 'Moon Cats' });
    expect(Object.keys(state.chats['console:terminal']?.aliases ?? {})).toEqual([]);
    expect(state.chats['console:terminal']?.digest).toBeUndefined();

    const second = await runEntryPoint('/watch list\n/watch add moon cats listing\n/status\n', env());
    expect(second.code).toBe(0);
    expect(second.stdout).toMatch(/r1 sale of Moon Cats/);
    expect(second.stdout).toMatch(/r2 listing of Moon Cats/);
    expect(second.stderr).not.toContain('alert pipeline failed to start');
  });
});

describe('one data directory, one process', () => {
  it('GIVEN a bot running on a data directory WHEN a second starts on it THEN the second exits 78 naming the holder, and the first goes on', async () => {
    const holder = spawnEntryPoint(env());
    try {
      holder.child.stdin.write('/help\n');
      await waitUntil(() => holder.stdout.includes('Floorwatch commands'), 30_000);
      const lock = JSON.parse(await readFile(join(dataDir, LOCK_FILE), 'utf8'));
      expect(lock).toMatchObject({ pid: holder.child.pid, host: hostname() });
      const stateBefore = await readFile(join(dataDir, 'state.json'));

      const second = await runEntryPoint('/watch add moon cats sale\n', env());
      expect(second.code).toBe(78);
      expect(second.stderr).toContain(`data directory ${dataDir}: is in use by another Floorwatch`);
      expect(second.stderr).toContain(`pid ${holder.child.pid} on ${hostname()}`);
      expect(second.stderr).not.toMatch(/\n\s+at /);
      expect(second.stdout).toBe('');
      expect((await readFile(join(dataDir, 'state.json'))).equals(stateBefore)).toBe(true);

      holder.child.stdin.write('/watch add moon cats sale\n');
      await waitUntil(() => holder.stdout.includes('Watching'), 30_000);
      expect(holder.stdout).toContain('Watching');
    } finally {
      holder.child.stdin.end();
      await holder.exited;
    }
    // A clean stop removes the lock.
    await expect(readFile(join(dataDir, LOCK_FILE))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('GIVEN a lock left by a process that is gone (killed) WHEN the bot starts THEN it takes the lock over', async () => {
    const killed = spawnEntryPoint(env());
    await waitUntil(() => killed.stderr.includes('floorwatch started'), 30_000);
    killed.child.kill('SIGKILL');
    await killed.exited;
    expect(JSON.parse(await readFile(join(dataDir, LOCK_FILE), 'utf8')).pid).toBe(killed.child.pid);

    const next = await runEntryPoint('/help\n', env());
    expect(next.code).toBe(0);
    expect(next.stdout).toContain('Floorwatch commands');
  });
});

describe('a state file that is JSON but not a valid state', () => {
  const state = (overrides: Record<string, unknown>) =>
    JSON.stringify({ version: 2, chats: {}, buttons: {}, rules: [], nextRuleNumber: 1, ...overrides });

  const rule = (id: string, collectionName: string) => ({
    id,
    destination: { platform: 'telegram', chatId: '1' },
    network: 'devnet',
    collection: '0x00000000000000000000000000000000000000c1',
    collectionName,
    kinds: ['sale'],
    paused: false,
    createdBy: 'telegram:1',
    createdAt: '2026-01-01T00:00:00.000Z',
  });

  it.each([
    ['a rule that is null', state({ rules: [null] }), /rules\[0\]: expected Object/i],
    [
      'two rules with one id',
      state({ rules: [rule('r1', 'a'), rule('r2', 'b'), rule('r1', 'c')], nextRuleNumber: 3 }),
      /rules\[2\]\.id: r1 is the id of rules\[0\] too/,
    ],
    ['chats that are a list', state({ chats: [] }), /chats: expected an object/],
    ['aliases that are null', state({ chats: { 'telegram:1': { aliases: null } } }), /chats\.telegram:1\.aliases/],
    [
      'a rule without its collection',
      state({
        rules: [
          {
            id: 'r1',
            destination: { platform: 'telegram', chatId: '1' },
            network: 'devnet',
            collectionName: 'x',
            kinds: ['sale'],
            paused: false,
            createdBy: 'telegram:1',
            createdAt: '2026-01-01T00:00:00.000Z',
          },
        ],
      }),
      /rules\[0\]\.collection/,
    ],
  ])(
    'GIVEN %s WHEN the CLI starts THEN it exits 78, names the file and the field, and leaves the file untouched',
    async (_, content, field) => {
      const file = join(dataDir, 'state.json');
      await writeFile(file, content);
      const run = await runEntryPoint('/help\n', env());
      expect(run.code).toBe(78);
      expect(run.stderr).toContain(`${file}: has invalid content`);
      expect(run.stderr).toMatch(field);
      expect(run.stderr).not.toMatch(/\n\s+at /);
      expect(await readFile(file, 'utf8')).toBe(content);
    },
  );

  it('GIVEN an empty data directory that cannot be written WHEN the CLI starts THEN it exits 78 with one clear line, no stack trace', async () => {
    const readOnly = join(dataDir, 'ro');
    await mkdir(readOnly);
    const unwritable = await makeUnwritable(readOnly);
    try {
      const run = await runEntryPoint('/help\n', { ...env(), FLOORWATCH_DATA_DIR: unwritable });
      expect(run.code).toBe(78);
      expect(run.stderr).toMatch(
        new RegExp(`floorwatch: data directory ${unwritable}: (is not writable|cannot be created)`),
      );
      expect(run.stderr).not.toMatch(/\n\s+at /);
      expect(run.stdout).toBe('');
    } finally {
      if (unwritable === readOnly) execFileSync('umount', [readOnly]);
    }
  });
});

/**
 * A directory that refuses writes for real: a read-only bind mount of `dir` (EROFS), where this
 * machine allows mounts; otherwise a directory under /sys, which nobody may create files in.
 * Running as root, a chmod would not stop the writes.
 */
async function makeUnwritable(dir: string): Promise<string> {
  try {
    execFileSync('mount', ['-o', 'bind,ro', dir, dir], { stdio: 'ignore' });
    return dir;
  } catch {
    await chmod(dir, 0o555);
    return process.getuid?.() === 0 ? '/sys/floorwatch-data' : dir;
  }
}
