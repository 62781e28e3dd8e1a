// The data directory's lease (src/store/files/lock.ts) on real files, with a short time to live. A frozen
// holder is one whose renewals stop: its timer is held off by a busy loop, as SIGSTOP holds a process.
import { mkdtemp, readFile, rm, stat, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LeaseLostError } from '../../../src/core/lease.ts';
import { DeliveryJournal } from '../../../src/store/files/journal/journal.ts';
import { DataDirError, LOCK_FILE, type LockOptions, lockDataDir } from '../../../src/store/files/lock.ts';
import { buttonsFileOf, StateStore, StoreWriteError } from '../../../src/store/files/state.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'floorwatch-lock-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
/** Holds the event loop, as a frozen or stalled process does: no timer of this process runs. */
function freeze(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy
  }
}

/** A lease of 1.5 s, renewed every 100 ms, counted valid for 1 s after a renewal. */
const SHORT: LockOptions = { ttlMs: 1_500, renewMs: 100, marginMs: 500 };
/** Another "process" of this host, alive: only the lease's age can free its lock. */
const other = (lost: LeaseLostError[] = []): LockOptions => ({
  ...SHORT,
  pid: 4_000_000,
  isAlive: () => true,
  onLost: (error) => lost.push(error),
});

describe('the data directory lease', () => {
  it('GIVEN a holder that renews THEN another live process is refused, long past the time to live', async () => {
    const lost: LeaseLostError[] = [];
    const holder = await lockDataDir(dir, other(lost));
    await sleep(2_000);
    await expect(lockDataDir(dir, { ...SHORT, isAlive: () => true })).rejects.toBeInstanceOf(DataDirError);
    expect(holder.check()).toBeUndefined();
    expect(lost).toEqual([]);
    await holder.release();
  });

  it('GIVEN a holder frozen past its lease WHEN another process takes the directory over THEN the holder, woken, fails its check before anything and loses the lease once', async () => {
    const lost: LeaseLostError[] = [];
    const holder = await lockDataDir(dir, other(lost));
    // Frozen: its renewals stop and the lock file ages, as another process sees it.
    const old = new Date(Date.now() - 120_000);
    await utimes(join(dir, LOCK_FILE), old, old);
    // (With a lease of its own long enough to outlive this test's freeze of the whole test process.)
    const taker = await lockDataDir(dir, { ttlMs: 60_000, isAlive: () => true });
    expect(JSON.parse(await readFile(join(dir, LOCK_FILE), 'utf8')).token).toBe(taker.token);
    freeze(1_100);
    // Woken: the first thing it does before a write or a send is the check, which tries to take the
    // lease again and finds the taker's token.
    await expect(holder.check()).rejects.toThrow(/another process took the directory over/);
    expect(() => holder.assertMaySend({ platform: 'console', chatId: 'terminal' })).toThrow(/data directory/);
    expect(lost).toHaveLength(1);
    // It leaves the taker's lock alone.
    await holder.release();
    expect(JSON.parse(await readFile(join(dir, LOCK_FILE), 'utf8')).token).toBe(taker.token);
    expect(taker.check()).toBeUndefined();
    await taker.release();
  });

  it('GIVEN a holder frozen past its lease WHEN nobody took the directory THEN woken, its check takes the lease again with the same token and renews the file, and it keeps the lease', async () => {
    const lost: LeaseLostError[] = [];
    const retaken: number[] = [];
    const holder = await lockDataDir(dir, { ...other(lost), onRetaken: (ms) => retaken.push(ms) });
    const file = join(dir, LOCK_FILE);
    const old = new Date(Date.now() - 120_000);
    await utimes(file, old, old);
    freeze(1_100);
    const retaking = holder.check();
    expect(retaking).toBeInstanceOf(Promise);
    // A send asked meanwhile waits for the same renewal.
    const sending = holder.assertMaySend({ platform: 'console', chatId: 'terminal' });
    expect(sending).toBe(retaking);
    await retaking;
    expect(lost).toEqual([]);
    expect(retaken).toHaveLength(1);
    expect(retaken[0]).toBeGreaterThanOrEqual(1_000);
    expect(JSON.parse(await readFile(file, 'utf8')).token).toBe(holder.token);
    expect(Date.now() - (await stat(file)).mtimeMs).toBeLessThan(60_000);
    expect(holder.check()).toBeUndefined();
    // It goes on renewing: another process is still refused, long past the time to live.
    await sleep(2_000);
    await expect(lockDataDir(dir, { ...SHORT, isAlive: () => true })).rejects.toBeInstanceOf(DataDirError);
    expect(lost).toEqual([]);
    await holder.release();
  });

  it('GIVEN a holder frozen past its lease WHEN its lock file was removed meanwhile THEN woken, its check loses the lease', async () => {
    const lost: LeaseLostError[] = [];
    const holder = await lockDataDir(dir, other(lost));
    await rm(join(dir, LOCK_FILE));
    freeze(1_100);
    await expect(holder.check()).rejects.toThrow(/was removed/);
    expect(lost).toHaveLength(1);
    await holder.release();
  });

  it('GIVEN another process took the directory over while the holder still counted its lease valid THEN its next renewal notices and loses the lease', async () => {
    const lost: LeaseLostError[] = [];
    const holder = await lockDataDir(dir, { ...other(lost), ttlMs: 60_000, marginMs: 1_000 });
    await rm(join(dir, LOCK_FILE));
    const taker = await lockDataDir(dir, SHORT);
    const deadline = Date.now() + 2_000;
    while (lost.length === 0 && Date.now() < deadline) await sleep(20);
    expect(lost.map((e) => e.message)).toEqual([expect.stringMatching(/another process took the directory over/)]);
    expect(() => holder.check()).toThrow(LeaseLostError);
    await taker.release();
  });

  it('GIVEN a journal fenced by the lease WHEN the holder was frozen and nobody took the directory THEN the write waits for the lease to be taken again and is made', async () => {
    const lost: LeaseLostError[] = [];
    const retaken: number[] = [];
    const holder = await lockDataDir(dir, { ...other(lost), onRetaken: (ms) => retaken.push(ms) });
    const file = join(dir, 'deliveries.jsonl');
    const journal = await DeliveryJournal.open(file, { fsync: false, fence: () => holder.check() });
    const delivery = {
      eventId: 'devnet:0x1:0xc0:sale',
      destination: { platform: 'console' as const, chatId: 'terminal' },
      network: 'devnet',
      txnHash: '0x1',
      blockNumber: 1,
      payload: { title: 'sale 1' },
    };
    freeze(1_100);
    expect(await journal.record([delivery])).toHaveLength(1);
    expect(retaken).toHaveLength(1);
    expect(lost).toEqual([]);
    expect(await readFile(file, 'utf8')).toContain('sale 1');
    await journal.close();
    await holder.release();
  });

  it('GIVEN a journal fenced by the lease WHEN the lease was taken over while the holder was frozen THEN the write is not made and every later one is refused', async () => {
    const holder = await lockDataDir(dir, other());
    const file = join(dir, 'deliveries.jsonl');
    const journal = await DeliveryJournal.open(file, { fsync: false, fence: () => holder.check() });
    const delivery = (n: number) => ({
      eventId: `devnet:0x${n}:0xc0:sale`,
      destination: { platform: 'console' as const, chatId: 'terminal' },
      network: 'devnet',
      txnHash: `0x${n}`,
      blockNumber: n,
      payload: { title: `sale ${n}` },
    });
    expect(await journal.record([delivery(1)])).toHaveLength(1);
    const before = await readFile(file, 'utf8');
    const old = new Date(Date.now() - 120_000);
    await utimes(join(dir, LOCK_FILE), old, old);
    const taker = await lockDataDir(dir, { ttlMs: 60_000, isAlive: () => true });
    freeze(1_100);
    await expect(journal.record([delivery(2)])).rejects.toBeInstanceOf(LeaseLostError);
    await expect(journal.record([delivery(3)])).rejects.toBeInstanceOf(LeaseLostError);
    expect(await readFile(file, 'utf8')).toBe(before);
    await journal.close();
    await holder.release();
    await taker.release();
  });

  it('GIVEN the buttons file fenced by the lease, as the state file is WHEN the lease was taken over while the holder was frozen THEN neither an append nor a rewrite of it is made', async () => {
    const lost: LeaseLostError[] = [];
    const holder = await lockDataDir(dir, other(lost));
    const file = join(dir, 'state.json');
    // At most 2 buttons kept: a thousand saves at once make the next write a rewrite of the file.
    const store = await StateStore.open(file, { fence: () => holder.check(), maxButtons: 2 });
    await store.saveButton('h0', '/floor cats', new Date());
    const buttonsFile = buttonsFileOf(file);
    const before = await readFile(buttonsFile, 'utf8');
    expect(before).toContain('/floor cats');
    const old = new Date(Date.now() - 120_000);
    await utimes(join(dir, LOCK_FILE), old, old);
    const taker = await lockDataDir(dir, { ttlMs: 60_000, isAlive: () => true });
    freeze(1_100);
    // An append.
    const append = store.saveButton('h1', '/floor dogs', new Date());
    await expect(append).rejects.toBeInstanceOf(StoreWriteError);
    await expect(append).rejects.toMatchObject({ cause: expect.any(LeaseLostError) });
    expect(lost).toHaveLength(1);
    // A rewrite (more dropped lines than kept ones).
    const many = Array.from({ length: 1_100 }, (_, i) => store.saveButton(`m${i}`, `/floor m${i}`, new Date()));
    const settled = await Promise.allSettled(many);
    expect(settled.every((s) => s.status === 'rejected' && s.reason instanceof StoreWriteError)).toBe(true);
    expect(await readFile(buttonsFile, 'utf8')).toBe(before);
    await holder.release();
    await taker.release();
  });
});
