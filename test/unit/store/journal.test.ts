import { execFileSync, spawn } from 'node:child_process';
import { appendFile, mkdtemp, readdir, readFile, readlink, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type DeliveryRecord,
  deliveryId,
  JournalError,
  JournalWriteError,
  type NewDelivery,
  payloadOf,
} from '../../../src/core/deliveries.ts';
import type { Destination } from '../../../src/core/types.ts';
import { DeliveryJournal, type DeliveryJournalOptions } from '../../../src/store/files/journal/journal.ts';
import { StoreFileError } from '../../../src/store/files/state.ts';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const DISCORD: Destination = { platform: 'discord', chatId: '111' };
const TELEGRAM: Destination = { platform: 'telegram', chatId: '-222' };
const HOUR = 60 * 60 * 1000;

let dir: string;
let file: string;
let clock: Date;
const open = (options: DeliveryJournalOptions = {}) => DeliveryJournal.open(file, { now: () => clock, ...options });
const journals: DeliveryJournal[] = [];
const tracked = async (options: DeliveryJournalOptions = {}) => {
  const journal = await open(options);
  journals.push(journal);
  return journal;
};

function delivery(n: number, destination: Destination = DISCORD, txn = n): NewDelivery {
  return {
    eventId: `devnet:0x${txn.toString(16)}:0xc0:sale#${n}`,
    destination,
    network: 'devnet',
    txnHash: `0x${txn.toString(16)}`,
    blockNumber: 100 + txn,
    payload: { title: `Sale ${n}`, price: '1.5', tokens: [{ id: String(n) }] },
  };
}
const idOf = (d: NewDelivery) => deliveryId(d.eventId, d.destination);
const snapshot = (journal: DeliveryJournal) => ({
  all: journal.byTransaction('devnet', '0x1').concat(journal.unfinished()),
  stats: journal.stats(),
});
const lines = async () => (await readFile(file, 'utf8')).split('\n').filter((l) => l !== '');

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'floorwatch-journal-'));
  file = join(dir, 'deliveries.jsonl');
  clock = new Date('2025-06-01T12:00:00.000Z');
});
afterEach(async () => {
  await Promise.all(journals.splice(0).map((j) => j.close().catch(() => undefined)));
  await rm(dir, { recursive: true, force: true });
});

describe('DeliveryJournal: recording and replay', () => {
  it('GIVEN deliveries recorded and marked WHEN reopened THEN every record reads back the same', async () => {
    const journal = await open();
    const [a, b, c] = [delivery(1), delivery(1, TELEGRAM), delivery(2)];
    if (!a || !b || !c) throw new Error('unreachable');
    const fresh = await journal.record([a, b, c]);
    expect(fresh.map((r) => r.id)).toEqual([idOf(a), idOf(b), idOf(c)]);
    expect(fresh[0]).toMatchObject({ state: 'pending', attempts: 0, reorged: false, final: false, blockNumber: 101 });
    clock = new Date('2025-06-01T12:00:01.000Z');
    await journal.markSending(idOf(a));
    const sent = await journal.markSent(idOf(a), 'msg-1');
    await journal.markSending(idOf(b));
    await journal.markFailed(idOf(b), '429 Too Many Requests');
    await journal.markSending(idOf(c));
    expect(sent).toMatchObject({
      state: 'sent',
      attempts: 1,
      messageId: 'msg-1',
      updatedAt: '2025-06-01T12:00:01.000Z',
    });
    expect(journal.get(idOf(b))).toMatchObject({ state: 'pending', attempts: 1, lastError: '429 Too Many Requests' });
    const before = [idOf(a), idOf(b), idOf(c)].map((id) => journal.get(id));
    const stats = journal.stats();
    await journal.close();

    const again = await tracked();
    expect([idOf(a), idOf(b), idOf(c)].map((id) => again.get(id))).toEqual(before);
    expect(again.stats()).toEqual(stats);
    expect(again.unfinished().map((r) => [r.id, r.state])).toEqual([
      [idOf(b), 'pending'],
      [idOf(c), 'sending'],
    ]);
    expect(again.byTransaction('devnet', '0x1').map((r) => r.id)).toEqual([idOf(a), idOf(b)]);
    expect((await lines())[0]).toBe('{"op":"journal","v":2}');
  });

  it("GIVEN an alert's kind and USD value WHEN recorded and reopened THEN they read back as fields, and a bad kind is refused", async () => {
    const journal = await tracked();
    const [sale] = await journal.record([{ ...delivery(1), kind: 'sale', usd: 845.25 }]);
    expect(sale).toMatchObject({ kind: 'sale', usd: 845.25 });
    await journal.close();
    const again = await tracked();
    expect(again.get(sale?.id ?? '')).toMatchObject({ kind: 'sale', usd: 845.25 });
    const since = new Date(clock.getTime() - HOUR);
    expect((await again.deliveredTo(DISCORD, since)).map((r) => r.kind)).toEqual(['sale']);
    await expect(again.record([{ ...delivery(2), kind: 'party' as 'sale' }])).rejects.toThrow(/invalid kind/);
    await expect(again.record([{ ...delivery(3), usd: Number.NaN }])).rejects.toThrow(/invalid usd/);
  });

  it('GIVEN a journal written before listing cards (no listing, "edited" without a revision) WHEN opened THEN it reads as before; a card and its fate written now read back after a reopen and compaction, and a line with a bad fate is refused naming it', async () => {
    const old = [
      '{"op":"journal","v":1}',
      `{"op":"add","r":{"id":"a>discord:111","eventId":"a","destination":{"platform":"discord","chatId":"111"},"network":"devnet","txnHash":"0x1","blockNumber":101,"state":"pending","attempts":0,"reorged":false,"final":false,"createdAt":"${clock.toISOString()}","updatedAt":"${clock.toISOString()}","payload":{"title":"Sale 1"}}}`,
      '{"op":"sending","id":"a>discord:111","k":"a>discord:111","t":"2025-06-01T12:00:00.000Z"}',
      '{"op":"sent","id":"a>discord:111","m":"m1","t":"2025-06-01T12:00:00.000Z"}',
      '{"op":"reorged","n":"devnet","h":"0x1","t":"2025-06-01T12:00:00.000Z"}',
      '{"op":"edited","id":"a>discord:111","t":"2025-06-01T12:00:01.000Z"}',
    ];
    await writeFile(file, `${old.join('\n')}\n`);
    const journal = await tracked();
    expect(journal.get('a>discord:111')).toMatchObject({ reorged: true, editedAt: '2025-06-01T12:00:01.000Z' });
    expect(journal.get('a>discord:111')?.fate).toBeUndefined();
    expect((await journal.outstanding()).edits).toEqual([]);

    const listing = { collection: '0xc0', orderIds: ['7'], tokenIds: ['9'], seller: '0xa1', buyUrl: 'https://m/9' };
    const [card] = await journal.record([{ ...delivery(2), kind: 'listing', listing }]);
    if (!card) throw new Error('not recorded');
    await journal.markSending(card.id, card.id);
    await journal.markSent(card.id, 'm2');
    const since = new Date(clock.getTime() - HOUR);
    const fate = { state: 'cancelled', txnHash: '0x5', blockNumber: 105 } as const;
    const closed = {
      network: 'devnet',
      collection: '0xc0',
      orderIds: ['7'],
      tokenIds: [],
      blockNumber: 105,
      since,
      fate,
    };
    expect((await journal.markListingsClosed(closed)).map((r) => r.fate)).toEqual([
      { ...fate, at: clock.toISOString(), rev: 1 },
    ]);
    await journal.markEdited(card.id, 1);
    await journal.compact();
    await journal.close();
    const again = await tracked();
    expect(again.get(card.id)).toMatchObject({ listing, fate: { state: 'cancelled', rev: 1 }, fateShown: 1 });
    expect((await again.outstanding()).edits).toEqual([]);
    await again.close();

    const text = await readFile(file, 'utf8');
    await writeFile(
      file,
      `${text}{"op":"fate","ids":["${card.id}"],"f":{"state":"burnt"},"t":"x"}\n{"op":"final","n":"devnet","h":"0x9","t":"x"}\n`,
    );
    const count = text.split('\n').filter((l) => l !== '').length;
    await expect(open()).rejects.toThrow(new RegExp(`line ${count + 1} has an invalid "fate"`));
  });

  it('GIVEN an id already recorded WHEN recorded again (same call, later call, after reopen) THEN it is skipped', async () => {
    const journal = await open();
    const d = delivery(7);
    expect(await journal.record([d, d])).toHaveLength(1);
    expect(await journal.record([d, delivery(8)])).toEqual([journal.get(idOf(delivery(8)))]);
    await journal.close();
    const again = await tracked();
    expect(await again.record([d])).toEqual([]);
    expect((await lines()).filter((l) => l.startsWith('{"op":"add"'))).toHaveLength(2);
  });

  it("GIVEN one event's alert to 50 chats WHEN recorded THEN its payload is written once, on one line, and every delivery reads back after reopen", async () => {
    const journal = await tracked();
    const payload = { title: 'Sale of Moon Cat #7', lines: ['x'.repeat(2_000)] };
    const chats = Array.from(
      { length: 50 },
      (_, i): NewDelivery => ({
        ...delivery(7, i % 2 ? DISCORD : TELEGRAM),
        destination: { platform: i % 2 ? 'discord' : 'telegram', chatId: String(1_000 + i) },
        payload,
        // Telegram's go out alone: recorded as sending, under their own id as key.
        sendingAlone: i % 2 === 0,
      }),
    );
    const recorded = await journal.record(chats);
    expect(recorded).toHaveLength(50);
    const written = await lines();
    expect(written).toHaveLength(2);
    expect(written[1]?.startsWith('{"op":"adds","c":{')).toBe(true);
    // What the 50 deliveries share (the event, the state, the time) is written once too.
    expect(written[1]?.split('"eventId"').length).toBe(2);
    expect((written[1]?.length ?? 0) - 2_000).toBeLessThan(50 * 120);
    expect((await readFile(file, 'utf8')).split('x'.repeat(2_000)).length - 1).toBe(1);
    await journal.markSent(recorded[3]?.id ?? '', '42');
    await journal.close();
    const again = await tracked();
    expect(recorded.map((r) => again.get(r.id)?.payloadJson)).toEqual(recorded.map(() => JSON.stringify(payload)));
    expect(recorded.map((r) => [again.get(r.id)?.state, again.get(r.id)?.sendKey])).toEqual(
      recorded.map((r, i) => (i === 3 ? ['sent', undefined] : i % 2 ? ['pending', undefined] : ['sending', r.id])),
    );
    expect(again.get(recorded[3]?.id ?? '')?.state).toBe('sent');
    expect(again.unfinished()).toHaveLength(49);
    await again.compact();
    await again.close();
    const compacted = await tracked();
    expect(recorded.map((r) => compacted.get(r.id)?.id)).toEqual(recorded.map((r) => r.id));
    expect((await readFile(file, 'utf8')).split('x'.repeat(2_000)).length - 1).toBe(1);
  });

  it('GIVEN a version 1 file (one add line per delivery) WHEN opened THEN it reads, and a bad record inside an adds line names the line', async () => {
    const record = (n: number) => ({
      id: `e${n}>discord:1`,
      eventId: `e${n}`,
      destination: { platform: 'discord', chatId: '1' },
      network: 'devnet',
      txnHash: '0x1',
      blockNumber: 1,
      state: 'pending',
      attempts: 0,
      reorged: false,
      final: false,
      createdAt: clock.toISOString(),
      updatedAt: clock.toISOString(),
    });
    await writeFile(
      file,
      `{"op":"journal","v":1}\n${JSON.stringify({ op: 'add', r: { ...record(1), payload: { title: 'a' } } })}\n`,
    );
    const old = await tracked();
    expect(old.get('e1>discord:1')?.payloadJson).toBe('{"title":"a"}');
    await old.close();
    await writeFile(
      file,
      `{"op":"journal","v":2}\n${JSON.stringify({ op: 'adds', c: {}, r: [record(2), { ...record(3), state: 'lost' }], payload: { title: 'b' } })}\n{}\n`,
    );
    await expect(open()).rejects.toThrow(/line 2 has an invalid record 2: state/);
  });

  it('GIVEN calls made in the same tick WHEN they resolve THEN they were written together in order', async () => {
    const journal = await tracked();
    const d = delivery(3);
    const [recorded, sending, sent] = await Promise.all([
      journal.record([d]),
      journal.markSending(idOf(d)),
      journal.markSent(idOf(d), 'm3'),
    ]);
    expect(recorded).toHaveLength(1);
    expect(sending.state).toBe('sending');
    expect(sent.state).toBe('sent');
    expect((await lines()).map((l) => JSON.parse(l).op)).toEqual(['journal', 'add', 'sending', 'sent']);
  });

  it("GIVEN a payload WHEN recorded THEN the record holds its JSON, apart from the caller's object, and what could not be replayed is refused", async () => {
    const journal = await tracked();
    const payload = { when: new Date('2025-01-01T00:00:00Z'), skip: undefined, list: [1] };
    const [r] = await journal.record([{ ...delivery(1), payload }]);
    if (!r) throw new Error('not recorded');
    payload.list.push(2);
    expect(payloadOf(r)).toEqual({ when: '2025-01-01T00:00:00.000Z', list: [1] });
    expect(Object.isFrozen(r)).toBe(true);
    (payloadOf(r) as { list: number[] }).list.push(3); // a copy each time
    expect(payloadOf(r)).toEqual({ when: '2025-01-01T00:00:00.000Z', list: [1] });
    expect(JSON.parse((await lines())[1] ?? '').r.payload).toEqual({ when: '2025-01-01T00:00:00.000Z', list: [1] });
    await expect(journal.record([{ ...delivery(2), payload: undefined }])).rejects.toThrow(TypeError);
    await expect(journal.record([{ ...delivery(3), payload: { n: 1n } }])).rejects.toThrow(TypeError);
    await expect(journal.record([{ ...delivery(4), blockNumber: Number.NaN }])).rejects.toThrow(/invalid blockNumber/);
    expect(journal.stats().records).toBe(1);
  });

  it('GIVEN changes the state does not allow WHEN asked THEN they are refused with JournalError and nothing is written', async () => {
    const journal = await tracked();
    const d = delivery(4);
    await journal.record([d]);
    await journal.markSending(idOf(d));
    await journal.markSent(idOf(d), 'm4');
    const size = (await stat(file)).size;
    await expect(journal.markSending('nope')).rejects.toThrow(JournalError);
    await expect(journal.markSending(idOf(d))).rejects.toThrow(/it is sent/);
    await expect(journal.markSent(idOf(d), 'other')).rejects.toThrow(/already sent as message m4/);
    await expect(journal.markFailed(idOf(d), 'boom')).rejects.toThrow(/already sent/);
    expect(await journal.markSent(idOf(d), 'm4')).toMatchObject({ messageId: 'm4' });
    expect((await stat(file)).size).toBe(size);
    await journal.close();
    await expect(journal.record([delivery(5)])).rejects.toThrow(/closed/);
  });

  it('GIVEN a failure marked permanent WHEN listed THEN it is failed, not unfinished', async () => {
    const journal = await tracked();
    const d = delivery(6);
    await journal.record([d]);
    await journal.markSending(idOf(d));
    expect(await journal.markFailed(idOf(d), 'Missing Access', { final: true })).toMatchObject({
      state: 'failed',
      lastError: 'Missing Access',
    });
    expect(journal.unfinished()).toEqual([]);
    expect(journal.stats()).toMatchObject({ records: 1, failed: 1, pending: 0 });
  });
});

describe('DeliveryJournal: reorgs and finality', () => {
  it('GIVEN a transaction with sent, in-flight and unsent deliveries WHEN reorged THEN sent ones are returned for editing and unsent ones dropped', async () => {
    const journal = await open();
    const [sent, inFlight, unsent, other] = [
      delivery(1, DISCORD, 1),
      delivery(2, DISCORD, 1),
      delivery(3, TELEGRAM, 1),
      delivery(4, DISCORD, 2),
    ];
    if (!sent || !inFlight || !unsent || !other) throw new Error('unreachable');
    await journal.record([sent, inFlight, unsent, other]);
    await journal.markSending(idOf(sent));
    await journal.markSent(idOf(sent), 'm1');
    await journal.markSending(idOf(inFlight));

    const { edits: toEdit } = await journal.markReorged('devnet', '0x1');
    expect(toEdit.map((r) => r.id)).toEqual([idOf(sent)]);
    expect(journal.get(idOf(unsent))).toMatchObject({ state: 'dropped', reorged: true });
    expect(journal.get(idOf(inFlight))).toMatchObject({ state: 'sending', reorged: true });
    expect(journal.unfinished().map((r) => r.id)).toEqual([idOf(other)]);
    await expect(journal.markSending(idOf(unsent))).rejects.toThrow(/reorganised/);
    await expect(journal.markSending(idOf(inFlight))).rejects.toThrow(/reorganised/);
    // The send in flight completes: its message must be edited too.
    expect(await journal.markSent(idOf(inFlight), 'm2')).toMatchObject({ reorged: true, state: 'sent' });
    expect((await journal.markReorged('devnet', '0x1')).edits.map((r) => r.id)).toEqual([idOf(sent), idOf(inFlight)]);
    await journal.markEdited(idOf(sent));
    await journal.close();

    const again = await tracked();
    expect(again.pendingEdits().map((r) => r.id)).toEqual([idOf(inFlight)]);
    expect(again.get(idOf(sent))?.editedAt).toBe(clock.toISOString());
    await expect(again.markEdited(idOf(unsent))).rejects.toThrow(/no message to edit/);
  });

  it('GIVEN a burst sent as one message WHEN looked up by message THEN its deliveries come back, also after reopen', async () => {
    const journal = await open();
    const burst = [delivery(1), delivery(2), delivery(3)];
    const elsewhere = delivery(1, TELEGRAM);
    await journal.record([...burst, elsewhere]);
    for (const d of burst) await journal.markSent(idOf(d), 'm-burst');
    await journal.markSent(idOf(elsewhere), 'm-burst');
    const ids = burst.map(idOf);
    expect(journal.byMessage(DISCORD, 'm-burst').map((r) => r.id)).toEqual(ids);
    expect(journal.byMessage(TELEGRAM, 'm-burst').map((r) => r.id)).toEqual([idOf(elsewhere)]);
    await journal.compact();
    await journal.close();
    const again = await tracked();
    expect(again.byMessage(DISCORD, 'm-burst').map((r) => r.id)).toEqual(ids);
    expect(again.byMessage(DISCORD, 'other')).toEqual([]);
  });

  it('GIVEN a reorged transaction WHEN a retryable failure is reported for its send THEN the delivery is dropped', async () => {
    const journal = await tracked();
    const d = delivery(9);
    await journal.record([d]);
    await journal.markSending(idOf(d));
    await journal.markReorged('devnet', '0x9');
    expect(await journal.markFailed(idOf(d), 'timeout')).toMatchObject({ state: 'dropped' });
  });

  it('GIVEN sent deliveries WHEN their receipt is final THEN they are closed and forgotten after the retention', async () => {
    const journal = await tracked({ retentionMs: HOUR });
    const d = delivery(1);
    await journal.record([d, delivery(2)]);
    await journal.markSending(idOf(d));
    await journal.markSent(idOf(d), 'm1');
    await journal.markFinal('devnet', '0x1');
    expect(journal.get(idOf(d))?.final).toBe(true);
    await journal.compact();
    expect(journal.has(idOf(d))).toBe(true);
    clock = new Date(clock.getTime() + HOUR + 1);
    await journal.compact();
    expect(journal.has(idOf(d))).toBe(false);
    expect(journal.has(idOf(delivery(2)))).toBe(true);
  });
});

describe('DeliveryJournal: recovery', () => {
  async function writeSome(): Promise<{ text: string; records: (DeliveryRecord | undefined)[] }> {
    const journal = await open();
    await journal.record([delivery(1), delivery(2), delivery(3)]);
    await journal.markSending(idOf(delivery(1)));
    await journal.markSent(idOf(delivery(1)), 'm1');
    const records = [1, 2, 3].map((n) => journal.get(idOf(delivery(n))));
    await journal.close();
    return { text: await readFile(file, 'utf8'), records };
  }

  it.each([
    ['half a line', '{"op":"sent","id":"devnet:0x2:0xc0:sa'],
    ['an invalid last line ending in a newline', '{"op":"sent","id":"x",\n'],
    ['zeros from a lost page', '\0\0\0\0\0\0\0\0'],
  ])(
    'GIVEN a journal ending in %s (a torn write) WHEN reopened THEN earlier records are intact and the tail is cut off',
    async (_, tail) => {
      const { text, records } = await writeSome();
      await appendFile(file, tail);
      const journal = await tracked();
      expect([1, 2, 3].map((n) => journal.get(idOf(delivery(n))))).toEqual(records);
      expect(await readFile(file, 'utf8')).toBe(text);
      await journal.markSending(idOf(delivery(2)));
      await journal.close();
      expect((await tracked()).get(idOf(delivery(2)))?.state).toBe('sending');
    },
  );

  it.each([
    [
      'invalid JSON before the last line',
      (l: string[]) => l.toSpliced(2, 0, '{"op":"add",'),
      /line 3 is not valid JSON/,
    ],
    [
      'an unknown operation',
      (l: string[]) => l.toSpliced(2, 0, '{"op":"teleport","id":"x"}'),
      /line 3 has an unknown operation "teleport"/,
    ],
    [
      'an operation on an unknown delivery',
      (l: string[]) => l.concat('{"op":"sent","id":"ghost","m":"1","t":"x"}'),
      /line 7 changes delivery "ghost"/,
    ],
    [
      'a malformed record',
      (l: string[]) => l.toSpliced(1, 1, (l[1] ?? '').replace('"attempts":0', '"attempts":-1')),
      /line 2 has an invalid record: attempts/,
    ],
    ['an empty line in the middle', (l: string[]) => l.toSpliced(2, 0, ''), /line 3 is not valid JSON/],
    ['a newer format', (l: string[]) => ['{"op":"journal","v":3}', ...l.slice(1)], /newer Floorwatch/],
    [
      'another file (no header)',
      () => ['{"version":1,"chats":{},"buttons":{}}', '{}'],
      /not a delivery journal header/,
    ],
  ])(
    'GIVEN %s WHEN opened THEN it refuses with StoreFileError naming file and line, and leaves the file untouched',
    async (_, corrupt, problem) => {
      const { text } = await writeSome();
      const content = Buffer.from(`${corrupt(text.split('\n').slice(0, -1)).join('\n')}\n`);
      await writeFile(file, content);
      const error = await open().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreFileError);
      expect((error as StoreFileError).message).toContain(file);
      expect((error as StoreFileError).message).toMatch(problem);
      expect((await readFile(file)).equals(content)).toBe(true);
    },
  );
});

describe('DeliveryJournal: compaction', () => {
  it('GIVEN closed and open records WHEN compacted THEN unfinished and recent ones stay, old closed ones go, the file shrinks and reopens the same', async () => {
    const journal = await open({ retentionMs: HOUR });
    await journal.record(Array.from({ length: 40 }, (_, n) => delivery(n)));
    for (let n = 0; n < 30; n++) {
      await journal.markSending(idOf(delivery(n)));
      await journal.markSent(idOf(delivery(n)), `m${n}`);
    }
    for (let n = 0; n < 20; n++) await journal.markFinal('devnet', `0x${n.toString(16)}`);
    await journal.markReorged('devnet', '0x22'); // unsent: dropped, closed
    clock = new Date(clock.getTime() + 2 * HOUR);
    await journal.markFinal('devnet', '0x14'); // closed, but within the retention
    const sizeBefore = (await stat(file)).size;
    await journal.compact();

    expect((await stat(file)).size).toBeLessThan(sizeBefore / 2);
    expect(journal.stats().bytes).toBe((await stat(file)).size);
    expect(journal.has(idOf(delivery(0))) || journal.has(idOf(delivery(0x22)))).toBe(false);
    expect(journal.has(idOf(delivery(0x14)))).toBe(true);
    const kept = Array.from({ length: 40 }, (_, n) => journal.get(idOf(delivery(n))));
    expect(kept.filter(Boolean)).toHaveLength(19);
    expect(journal.unfinished().map((r) => r.id)).toEqual(
      Array.from({ length: 10 }, (_, k) => idOf(delivery(30 + k))).filter((id) => id !== idOf(delivery(0x22))),
    );
    await journal.markSending(idOf(delivery(35)));
    const state = snapshot(journal);
    const records = kept.map((r) => (r ? journal.get(r.id) : undefined));
    await journal.close();

    const again = await tracked();
    expect(snapshot(again)).toEqual(state);
    expect(Array.from({ length: 40 }, (_, n) => again.get(idOf(delivery(n))))).toEqual(records);
    expect(await readdir(dir)).toEqual(['deliveries.jsonl']);
  });

  it('GIVEN a small threshold WHEN many changes are written THEN the journal compacts itself and stays bounded', async () => {
    const journal = await tracked({ compactAfterBytes: 16 * 1024, retentionMs: 0 });
    for (let n = 0; n < 200; n++) {
      const d = delivery(n);
      await journal.record([d]);
      await journal.markSending(idOf(d));
      await journal.markSent(idOf(d), `m${n}`);
      await journal.markFinal(d.network, d.txnHash);
    }
    expect(journal.stats().bytes).toBeLessThanOrEqual(16 * 1024 + 2048);
    expect(journal.stats().bytes).toBe((await stat(file)).size);
    expect(journal.has(idOf(delivery(199)))).toBe(true);
  });

  it('GIVEN a file larger than the threshold WHEN opened THEN it is compacted on open', async () => {
    const first = await open({ retentionMs: 0 });
    for (let n = 0; n < 50; n++) {
      await first.record([delivery(n)]);
      await first.markSent(idOf(delivery(n)), `m${n}`);
      await first.markFinal('devnet', `0x${n.toString(16)}`);
    }
    await first.record([delivery(99)]);
    await first.close();
    const size = (await stat(file)).size;
    const journal = await tracked({ retentionMs: 0, compactAfterBytes: size - 1 });
    expect((await stat(file)).size).toBeLessThan(size / 10);
    expect(journal.stats().records).toBe(1);
    expect(journal.unfinished().map((r) => r.id)).toEqual([idOf(delivery(99))]);
  });

  it('GIVEN writes made while a compaction runs WHEN it finishes and the journal is reopened THEN every write is there, also on records the compaction had left out', async () => {
    const journal = await open({ retentionMs: 0, compactAfterBytes: 4 * 1024 });
    const failed = delivery(1);
    const closed = delivery(2);
    await journal.record([failed, closed]);
    await journal.markFailed(idOf(failed), 'channel deleted', { final: true });
    await journal.markSent(idOf(closed), 'm2');
    await journal.markFinal('devnet', '0x2');
    // Crosses the threshold: the compaction takes its snapshot when this write is done, with both closed.
    await journal.record(Array.from({ length: 40 }, (_, n) => delivery(100 + n)));
    // Written while the compaction's first phase runs: a change to a record it leaves out, a new one.
    const late = [journal.markSent(idOf(failed), 'm1'), journal.record([delivery(200)])];
    await Promise.all(late);
    expect(journal.get(idOf(failed))).toMatchObject({ state: 'sent', messageId: 'm1' });
    await journal.close(); // finishes the compaction

    const after = journal.byDestination(DISCORD);
    expect(after.map((r) => r.id)).not.toContain(idOf(closed)); // compacted away
    expect(journal.get(idOf(failed))).toMatchObject({ state: 'sent', messageId: 'm1' }); // kept: changed after the snapshot
    expect(after).toHaveLength(42);
    const again = await tracked();
    expect(again.byDestination(DISCORD)).toEqual(after);
    expect(again.stats().bytes).toBe((await stat(file)).size);
    expect(await readdir(dir)).toEqual(['deliveries.jsonl']);
  });

  it('GIVEN a compaction in the middle of forgetting thousands of old records WHEN one it forgot already changes THEN the change is kept, in memory and in the file', async () => {
    const writer = await open({ retentionMs: 0, compactAfterBytes: 1024 ** 3, fsync: false });
    const count = 20_000;
    for (let n = 0; n < count; n += 500) {
      const batch = Array.from({ length: 500 }, (_, k) => delivery(n + k));
      await writer.record(batch);
      await Promise.all(batch.map((d) => writer.markFailed(idOf(d), 'channel deleted', { final: true })));
    }
    await writer.close();
    // The next write crosses the threshold: the compaction runs beside the writes, in slices.
    const journal = await open({ retentionMs: 0, compactAfterBytes: (await stat(file)).size + 1, fsync: false });
    await journal.record([delivery(count)]);
    const first = idOf(delivery(0));
    // Phase 1 forgets the records it leaves out a slice at a time: the first is gone long before the last.
    while (journal.get(first)) await new Promise((resolve) => setImmediate(resolve));
    expect(journal.get(idOf(delivery(count - 1)))).toBeDefined();
    expect(await journal.markSent(first, 'late')).toMatchObject({ state: 'sent', messageId: 'late' });
    await journal.compact(); // after the one under way
    expect(journal.get(first)).toMatchObject({ state: 'sent', messageId: 'late' });
    expect(journal.get(idOf(delivery(count - 1)))).toBeUndefined();
    expect(journal.stats().records).toBe(2);
    await journal.close();
    const again = await tracked();
    expect(again.get(first)).toMatchObject({ state: 'sent', messageId: 'late' });
    expect(again.stats().records).toBe(2);
  }, 60_000);

  it('GIVEN a compaction that fails after forgetting the old records WHEN it fails THEN they are in memory again, as the file still holds them', async () => {
    let refuse = false;
    const journal = await tracked({
      retentionMs: 0,
      compactAfterBytes: 1024 ** 3,
      fence: () => (refuse ? Promise.reject(new Error('the fence is down')) : undefined),
    });
    const closed = Array.from({ length: 5 }, (_, n) => delivery(n));
    await journal.record([...closed, delivery(9)]);
    for (const d of closed) await journal.markFailed(idOf(d), 'channel deleted', { final: true });
    const before = journal.byDestination(DISCORD);
    refuse = true;
    await expect(journal.compact()).rejects.toThrow(/could not be compacted/);
    refuse = false;
    expect(
      journal
        .byDestination(DISCORD)
        .map((r) => r.id)
        .sort(),
    ).toEqual(before.map((r) => r.id).sort());
    for (const d of closed) expect(journal.get(idOf(d))).toMatchObject({ state: 'failed' });
    expect(journal.byTransaction('devnet', '0x1').map((r) => r.id)).toEqual([idOf(delivery(1))]);
    await journal.compact();
    expect(journal.byDestination(DISCORD).map((r) => r.id)).toEqual([idOf(delivery(9))]);
    await journal.close();
    expect((await tracked()).byDestination(DISCORD).map((r) => r.id)).toEqual([idOf(delivery(9))]);
  });

  it('GIVEN many concurrent writers and a tiny threshold WHEN the journal compacts again and again THEN a reopen finds exactly the state in memory', async () => {
    const journal = await open({ retentionMs: 0, compactAfterBytes: 2 * 1024 });
    const writer = async (w: number) => {
      for (let n = 0; n < 30; n++) {
        const d = delivery(w * 1000 + n, n % 2 ? DISCORD : TELEGRAM);
        await journal.record([d]);
        await journal.markSending(idOf(d));
        if (n % 5 === 0) await journal.markFailed(idOf(d), 'timeout');
        else await journal.markSent(idOf(d), `m${w}-${n}`);
        if (n % 3 === 0) await journal.markFinal(d.network, d.txnHash);
        if (n % 7 === 0) await journal.markReorged(d.network, d.txnHash);
      }
    };
    await Promise.all(Array.from({ length: 8 }, (_, w) => writer(w + 1)));
    await journal.close(); // finishes a compaction under way
    const [discord, telegram, unfinished] = [
      journal.byDestination(DISCORD),
      journal.byDestination(TELEGRAM),
      journal.unfinished(),
    ];
    expect(discord.length + telegram.length).toBeLessThan(8 * 30); // closed records were compacted away
    const again = await tracked();
    expect(again.byDestination(DISCORD)).toEqual(discord);
    expect(again.byDestination(TELEGRAM)).toEqual(telegram);
    expect(again.unfinished()).toEqual(unfinished);
    expect(await readdir(dir)).toEqual(['deliveries.jsonl']);
  });

  it('GIVEN a crash in the middle of a compaction (temporary file left behind) WHEN reopened THEN the journal is intact and the leftover is removed', async () => {
    const journal = await open();
    await journal.record([delivery(1), delivery(2)]);
    await journal.markSent(idOf(delivery(1)), 'm1');
    const records = [journal.get(idOf(delivery(1))), journal.get(idOf(delivery(2)))];
    await journal.close();
    const text = await readFile(file, 'utf8');
    await writeFile(`${file}.compact`, `${text.split('\n')[0]}\n{"op":"add","r":{"id":"half`);

    const again = await tracked();
    expect([again.get(idOf(delivery(1))), again.get(idOf(delivery(2)))]).toEqual(records);
    expect(await readdir(dir)).toEqual(['deliveries.jsonl']);
    await again.compact();
    await again.close();
    const third = await tracked();
    expect([third.get(idOf(delivery(1))), third.get(idOf(delivery(2)))]).toEqual(records);
  });

  it.runIf(process.platform === 'linux')(
    'GIVEN compactions that replace the file WHEN the journal is closed THEN no handle to a replaced file is left open',
    async () => {
      const openFilesOf = async () => {
        const out: string[] = [];
        for (const fd of await readdir('/proc/self/fd')) {
          const target = await readlink(join('/proc/self/fd', fd)).catch(() => '');
          if (target.startsWith(dir)) out.push(target);
        }
        return out;
      };
      const journal = await open({ retentionMs: 0 });
      for (let n = 0; n < 20; n++) {
        await journal.record([delivery(n)]);
        await journal.markSent(idOf(delivery(n)), `m${n}`);
        await journal.markFinal('devnet', `0x${n.toString(16)}`);
        await journal.compact();
        // Writes go on while the replaced file is closed in the background.
        expect(journal.has(idOf(delivery(n)))).toBe(false);
      }
      await journal.record([delivery(99)]);
      await journal.close();
      expect(await openFilesOf()).toEqual([]);
      const again = await tracked();
      expect(again.unfinished().map((r) => r.id)).toEqual([idOf(delivery(99))]);
    },
  );
});

describe('DeliveryJournal: write failures', () => {
  it('GIVEN a full disk (the journal is /dev/full) WHEN recording THEN it rejects with JournalWriteError and nothing changes', async () => {
    await symlink('/dev/full', file);
    const journal = await tracked();
    const error = await journal.record([delivery(1)]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JournalWriteError);
    expect((error as JournalWriteError).code).toBe('ENOSPC');
    expect((error as JournalWriteError).message).toMatch(/deliveries\.jsonl: could not write .*ENOSPC.*not recorded/);
    expect(journal.has(idOf(delivery(1)))).toBe(false);
    expect(journal.stats()).toMatchObject({ records: 0, bytes: 0 });
    await expect(journal.record([delivery(1)])).rejects.toThrow(JournalWriteError);
  });

  it('GIVEN writes refused (the file size limit of this process) THEN writeFailure says since when and why, until a write succeeds', async () => {
    const journal = await tracked();
    await journal.record([delivery(1)]);
    expect(journal.writeFailure()).toBeUndefined();
    const soft = execFileSync('prlimit', [`--pid=${process.pid}`, '--fsize', '--output=SOFT', '--noheadings', '--raw'])
      .toString()
      .trim();
    execFileSync('prlimit', [`--pid=${process.pid}`, `--fsize=${(await stat(file)).size}:`]);
    try {
      await expect(journal.record([delivery(2)])).rejects.toMatchObject({ code: 'EFBIG' });
      const first = journal.writeFailure();
      expect(first).toMatchObject({ since: clock.toISOString(), at: clock.toISOString(), code: 'EFBIG', failures: 1 });
      expect(first?.message).toMatch(/file too large/i);
      clock = new Date(clock.getTime() + 60_000);
      await expect(journal.markSending(idOf(delivery(1)))).rejects.toThrow(JournalWriteError);
      expect(journal.writeFailure()).toMatchObject({
        since: first?.since,
        at: clock.toISOString(),
        code: 'EFBIG',
        failures: 2,
        broken: false,
      });
    } finally {
      execFileSync('prlimit', [`--pid=${process.pid}`, `--fsize=${soft}:`]);
    }
    await journal.record([delivery(2)]);
    expect(journal.writeFailure()).toBeUndefined();
    expect(journal.has(idOf(delivery(2)))).toBe(true);
  });

  it('GIVEN a file size limit (ulimit -f) WHEN a write is cut short THEN the call rejects, the partial bytes are undone and the journal keeps working', async () => {
    const fixture = join(root, 'test/fixtures/journal-fsize.ts');
    // No tsx cache writes in the child: they would hit the limit too.
    const { stdout, code } = await run(
      'bash',
      ['-c', 'ulimit -f 16 && exec "$0" --import tsx "$1" "$2"', process.execPath, fixture, file],
      { env: { ...process.env, TSX_DISABLE_CACHE: '1' } },
    );
    expect(code).toBe(0);
    const report = JSON.parse(stdout) as {
      recorded: string[];
      failure: { name: string; code: string; message: string };
      afterFailure: { hasFailed: boolean; records: number; bytes: number; fileSize: number };
      laterWrite: string;
      finalBytes: number;
    };
    expect(report.failure).toMatchObject({ name: 'JournalWriteError', code: 'EFBIG' });
    expect(report.afterFailure).toMatchObject({ hasFailed: false, records: report.recorded.length });
    expect(report.afterFailure.fileSize).toBe(report.afterFailure.bytes);
    expect(report.laterWrite).toBe('ok');
    const journal = await tracked();
    expect(journal.stats()).toMatchObject({ records: report.recorded.length, bytes: report.finalBytes, sending: 1 });
    expect(report.recorded.every((id) => journal.has(id))).toBe(true);
  });
});

describe('DeliveryJournal: SIGKILL', () => {
  it('GIVEN a writer killed repeatedly mid-burst WHEN the journal is reopened THEN everything it acknowledged is there, and in the end each delivery is sent once', async () => {
    const fixture = join(root, 'test/fixtures/journal-writer.ts');
    const seen = { R: new Set<string>(), S: new Map<string, number>() };
    const check = async () => {
      const journal = await DeliveryJournal.open(file);
      for (const id of seen.R) expect(journal.has(id), id).toBe(true);
      for (const id of seen.S.keys()) expect(journal.get(id)).toMatchObject({ state: 'sent', messageId: `m-${id}` });
      await journal.close();
    };
    for (const [round, after] of [80, 250, 500].entries()) {
      const out = await run(process.execPath, ['--import', 'tsx', fixture, file, 'loop'], { killAfterLines: after });
      expect(out.signal, `round ${round}`).toBe('SIGKILL');
      tally(out.stdout, seen);
      await check();
    }
    const final = await run(process.execPath, ['--import', 'tsx', fixture, file, 'drain']);
    expect(final.code).toBe(0);
    tally(final.stdout, seen);
    await check();
    const journal = await tracked();
    expect(journal.unfinished()).toEqual([]);
    expect(seen.R.size).toBeGreaterThan(100);
    for (const id of seen.R) expect(journal.get(id)?.state).toBe('sent');
    expect([...seen.S.values()].every((count) => count === 1)).toBe(true);
  });
});

function tally(stdout: string, seen: { R: Set<string>; S: Map<string, number> }): void {
  for (const line of stdout.split('\n')) {
    const [kind, id] = line.split(' ');
    if (!id) continue;
    if (kind === 'R') seen.R.add(id);
    if (kind === 'S') seen.S.set(id, (seen.S.get(id) ?? 0) + 1);
  }
}

/** Runs a child process to its end, or kills it with SIGKILL (by its PID) once it printed enough lines. */
function run(
  command: string,
  args: string[],
  options: { killAfterLines?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<{ stdout: string; code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: options.env ?? process.env,
    });
    let stdout = '';
    let stderr = '';
    let killed = false;
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      const wanted = options.killAfterLines;
      if (!killed && wanted !== undefined && stdout.split('\n').length > wanted && child.pid !== undefined) {
        killed = true;
        process.kill(child.pid, 'SIGKILL');
      }
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code !== 0 && signal === null) reject(new Error(`${command} exited with ${code}: ${stderr}`));
      else resolve({ stdout, code, signal });
    });
  });
}
