import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type DeliveryRecord, deliveryId, type NewDelivery, payloadOf } from '../../../src/core/deliveries.ts';
import type { Reply } from '../../../src/core/reply.ts';
import type { Destination } from '../../../src/core/types.ts';
import { Dispatcher } from '../../../src/delivery/dispatcher.ts';
import { DeliveryError } from '../../../src/delivery/sink.ts';
import { DeliveryJournal } from '../../../src/store/files/journal/journal.ts';
import { RecordingSink } from '../../helpers/recording-sink.ts';

// After a crash or an ambiguous failure, a merged message is sent again under its idempotency key;
// the chat (like Discord's enforced nonce) answers with the message first posted under that key,
// whatever the new request holds. So the resend must hold exactly the deliveries first sent with it.

const CHAT: Destination = { platform: 'console', chatId: 'c1' };
let dir: string;
let journal: DeliveryJournal;

const delivery = (n: number): NewDelivery => ({
  eventId: `devnet:0x${n.toString(16).padStart(4, '0')}:0xc0:listing`,
  destination: CHAT,
  network: 'devnet',
  txnHash: `0x${n.toString(16).padStart(4, '0')}`,
  blockNumber: n,
  payload: { title: `alert ${n}` } satisfies Reply,
});

async function recordAll(from: number, to: number): Promise<DeliveryRecord[]> {
  const out: DeliveryRecord[] = [];
  for (let n = from; n <= to; n++) out.push(...(await journal.record([delivery(n)])));
  return out;
}

/** Posts the first message, then fails as a timeout would; `meanwhile` runs before the failure. */
class PostedThenTimedOut extends RecordingSink {
  meanwhile: () => Promise<void> = async () => undefined;
  #failed = false;

  override async send(chatId: string, replies: readonly Reply[], key: string): Promise<string> {
    const id = await super.send(chatId, replies, key);
    if (this.#failed) return id;
    this.#failed = true;
    await this.meanwhile();
    throw new DeliveryError('timed out', { permanent: false });
  }
}

/** What a dispatcher started on the journal (as after a restart) posts. */
async function resume(sink: RecordingSink): Promise<string[]> {
  const dispatcher = new Dispatcher({
    journal,
    sinks: new Map([['console', sink]]),
    logger: pino({ level: 'silent' }),
  });
  dispatcher.enqueue(journal.unfinished());
  await dispatcher.drained();
  return sink.alerts(CHAT.chatId).map((r) => r.title ?? '');
}

const titles = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `alert ${from + i}`);

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'floorwatch-resend-'));
  journal = await DeliveryJournal.open(join(dir, 'deliveries.jsonl'), { fsync: false });
});
afterEach(async () => {
  await journal.close();
  await rm(dir, { recursive: true, force: true });
});

describe('Dispatcher: resending a merged message', () => {
  it('GIVEN a crash after the chat took a batch of 3 THEN the restart resends those 3 under the same key, then the rest', async () => {
    const [a, b, c] = await recordAll(1, 3);
    await recordAll(4, 8);
    const sink = new RecordingSink('console', 10);
    for (const r of [a, b, c]) await journal.markSending(r?.id ?? '', a?.id);
    // The chat got the message; the bot died before it heard the answer.
    await sink.send(
      CHAT.chatId,
      [a, b, c].map((r) => (r ? payloadOf(r) : undefined) as Reply),
      a?.id ?? '',
    );

    expect(await resume(sink)).toEqual(titles(1, 8));
    expect(sink.sent.map((m) => m.replies.length)).toEqual([3, 5]);
    expect(journal.unfinished()).toEqual([]);
    expect(new Set([a, b, c].map((r) => journal.get(r?.id ?? '')?.messageId))).toEqual(new Set(['1']));
  });

  it('GIVEN a crash between the "sent" records of a batch THEN the rest of it is not posted again', async () => {
    const [a, b, c] = await recordAll(1, 3);
    const sink = new RecordingSink('console', 10);
    for (const r of [a, b, c]) await journal.markSending(r?.id ?? '', a?.id);
    const id = await sink.send(
      CHAT.chatId,
      [a, b, c].map((r) => (r ? payloadOf(r) : undefined) as Reply),
      a?.id ?? '',
    );
    await journal.markSent(a?.id ?? '', id);

    expect(await resume(sink)).toEqual(titles(1, 3));
    expect(journal.get(c?.id ?? '')).toMatchObject({ state: 'sent', messageId: id });
  });

  it('GIVEN a failed send that reached the chat and more alerts since THEN the retry does not fold them into the old key', async () => {
    const [a, b] = await recordAll(1, 2);
    const sink = new RecordingSink('console', 10);
    for (const r of [a, b]) await journal.markSending(r?.id ?? '', a?.id);
    await sink.send(
      CHAT.chatId,
      [a, b].map((r) => (r ? payloadOf(r) : undefined) as Reply),
      a?.id ?? '',
    );
    // A timeout: the bot cannot tell that the message was posted.
    for (const r of [a, b]) await journal.markFailed(r?.id ?? '', 'timed out');
    await recordAll(3, 12);

    expect(await resume(sink)).toEqual(titles(1, 12));
    expect(sink.sent.map((m) => m.replies.length)).toEqual([2, 10]);
  });

  it('GIVEN a send that reached the chat but timed out WHEN more alerts queue up before the retry THEN none is lost', async () => {
    const sink = new PostedThenTimedOut('console', 10);
    const dispatcher = new Dispatcher({
      journal,
      sinks: new Map([['console', sink]]),
      logger: pino({ level: 'silent' }),
      retryDelayMs: 5,
    });
    sink.meanwhile = async () => dispatcher.enqueue(await recordAll(3, 12));
    dispatcher.enqueue(await recordAll(1, 2));
    await dispatcher.drained();

    expect(sink.alerts(CHAT.chatId).map((r) => r.title)).toEqual(titles(1, 12));
    expect(sink.sent.map((m) => m.replies.length)).toEqual([2, 10]);
    expect(journal.unfinished()).toEqual([]);
  });

  it('GIVEN a journal reopened and compacted THEN the key of a send in flight is still known', async () => {
    const [a, b] = await recordAll(1, 2);
    for (const r of [a, b]) await journal.markSending(r?.id ?? '', a?.id);
    await journal.close();
    journal = await DeliveryJournal.open(join(dir, 'deliveries.jsonl'), { fsync: false });
    expect(journal.get(b?.id ?? '')).toMatchObject({ state: 'sending', sendKey: a?.id });
    await journal.compact();
    await journal.close();
    journal = await DeliveryJournal.open(join(dir, 'deliveries.jsonl'), { fsync: false });
    expect(journal.unfinished().map((r) => r.sendKey)).toEqual([a?.id, a?.id]);
  });
});

/** Holds each send until released, so something can happen while it is on its way. */
class SlowSink extends RecordingSink {
  meanwhile: () => Promise<void> = async () => undefined;
  override async send(chatId: string, replies: readonly Reply[], key: string): Promise<string> {
    await this.meanwhile();
    return super.send(chatId, replies, key);
  }
}

describe('Dispatcher: a reorg while the alert is on its way', () => {
  it('GIVEN the transaction is reorganised during the send THEN the sent message is edited at once', async () => {
    const [record] = await recordAll(1, 1);
    const sink = new SlowSink('console', 10);
    sink.meanwhile = async () => {
      await journal.markReorged('devnet', record?.txnHash ?? '');
    };
    const dispatcher = new Dispatcher({
      journal,
      sinks: new Map([['console', sink]]),
      logger: pino({ level: 'silent' }),
    });
    dispatcher.enqueue([record as DeliveryRecord]);
    await dispatcher.drained();
    expect(sink.sent).toHaveLength(1);
    expect(sink.edits).toHaveLength(1);
    expect(sink.edits[0]?.replies[0]?.title).toBe('Reversed: alert 1');
    expect(journal.get(record?.id ?? '')?.editedAt).toBeDefined();
  });
});

describe('Dispatcher: an alert recorded as already sending', () => {
  const alone = (n: number): NewDelivery => ({ ...delivery(n), sendingAlone: true });
  const dispatcherFor = (sink: RecordingSink) =>
    new Dispatcher({ journal, sinks: new Map([['console', sink]]), logger: pino({ level: 'silent' }) });

  it('GIVEN an idle chat WHEN a lone alert is recorded as sending THEN it is sent under its own id without another journal write before the send', async () => {
    const sink = new SlowSink('console', 10);
    const dispatcher = dispatcherFor(sink);
    expect(dispatcher.isIdle(CHAT)).toBe(true);
    const [record] = await journal.record([alone(1)]);
    expect(record).toMatchObject({ state: 'sending', attempts: 1, sendKey: record?.id });
    const bytes = journal.stats().bytes;
    let written = -1;
    sink.meanwhile = async () => {
      written = journal.stats().bytes - bytes; // nothing written between record and send
    };
    dispatcher.enqueue([record as DeliveryRecord]);
    await dispatcher.drained();
    expect(written).toBe(0);
    expect(sink.sent.map((m) => m.key)).toEqual([record?.id]);
    // drained() waits for the outcome, written after the lane went on.
    expect(journal.get(record?.id ?? '')).toMatchObject({ state: 'sent', messageId: '1', attempts: 1 });
  });

  it('GIVEN a crash right after such an alert reached the chat WHEN the journal is reopened THEN it is sent again under the same key, and the chat keeps one message', async () => {
    const sink = new RecordingSink('console', 10);
    const [record] = await journal.record([alone(1)]);
    await journal.record([delivery(2), delivery(3)]);
    await sink.send(CHAT.chatId, [payloadOf(record as DeliveryRecord) as Reply], record?.id ?? '');
    await journal.close();
    journal = await DeliveryJournal.open(join(dir, 'deliveries.jsonl'), { fsync: false });
    expect(journal.get(record?.id ?? '')).toMatchObject({ state: 'sending', sendKey: record?.id });

    expect(await resume(sink)).toEqual(titles(1, 3));
    expect(sink.sent.map((m) => m.replies.length)).toEqual([1, 2]); // not merged with the lone one
    expect(journal.unfinished()).toEqual([]);
  });

  it('GIVEN a busy chat THEN the dispatcher says so, and pending alerts are merged as before', async () => {
    const sink = new SlowSink('console', 10);
    const dispatcher = dispatcherFor(sink);
    let release: () => void = () => undefined;
    sink.meanwhile = () => new Promise<void>((resolve) => (release = resolve));
    dispatcher.enqueue(await journal.record([alone(1)]));
    await new Promise((resolve) => setImmediate(resolve));
    expect(dispatcher.isIdle(CHAT)).toBe(false);
    dispatcher.enqueue(await journal.record([delivery(2), delivery(3), delivery(4)]));
    sink.meanwhile = async () => undefined;
    release();
    await dispatcher.drained();
    expect(sink.sent.map((m) => m.replies.length)).toEqual([1, 3]);
    expect(dispatcher.isIdle(CHAT)).toBe(true);
  });

  it('GIVEN a platform with one alert per message THEN any number of alerts, busy chat or not, are recorded as sending and go out in order without another write', async () => {
    const sink = new SlowSink('console', 1);
    const dispatcher = dispatcherFor(sink);
    let release: () => void = () => undefined;
    sink.meanwhile = () => new Promise<void>((resolve) => (release = resolve));
    expect(dispatcher.sendsAlone(CHAT, 3)).toBe(true);
    dispatcher.enqueue(await journal.record([alone(1)]));
    await new Promise((resolve) => setImmediate(resolve));
    expect(dispatcher.sendsAlone(CHAT, 3)).toBe(true); // busy, yet nothing would be merged
    const rest = await journal.record([alone(2), alone(3), alone(4)]);
    expect(rest.map((r) => r.state)).toEqual(['sending', 'sending', 'sending']);
    dispatcher.enqueue(rest);
    sink.meanwhile = async () => undefined;
    release();
    await dispatcher.drained();
    expect(sink.alerts(CHAT.chatId).map((r) => r.title)).toEqual(titles(1, 4));
    expect(sink.sent.map((m) => m.key)).toEqual([1, 2, 3, 4].map((n) => deliveryId(delivery(n).eventId, CHAT)));
    // Recorded as sending, then sent: no separate "sending" operation in the journal.
    const ops = (await readFile(join(dir, 'deliveries.jsonl'), 'utf8')).split('\n').filter(Boolean);
    expect(ops.filter((line) => JSON.parse(line).op === 'sending')).toEqual([]);
    expect(ops.filter((line) => JSON.parse(line).op === 'sent')).toHaveLength(4);
    expect(journal.unfinished()).toEqual([]);
  });

  it('GIVEN a platform that merges bursts THEN only a lone alert to an idle chat is sent alone', async () => {
    const dispatcher = dispatcherFor(new RecordingSink('console', 10));
    expect(dispatcher.sendsAlone(CHAT, 1)).toBe(true);
    expect(dispatcher.sendsAlone(CHAT, 2)).toBe(false);
    expect(dispatcher.sendsAlone({ platform: 'telegram', chatId: 'x' }, 1)).toBe(false); // no adapter here
  });
});
