import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { NewDelivery } from '../../../src/core/deliveries.ts';
import { plain, type Reply } from '../../../src/core/reply.ts';
import type { Destination } from '../../../src/core/types.ts';
import { Dispatcher } from '../../../src/delivery/dispatcher.ts';
import { agoText } from '../../../src/delivery/lateness.ts';
import { type AlertSink, DeliveryError } from '../../../src/delivery/sink.ts';
import { DeliveryJournal } from '../../../src/store/files/journal/journal.ts';
import { RecordingSink } from '../../helpers/recording-sink.ts';

// Whether an alert is late is known only when it is sent: the dispatcher adds the note from the
// payload's `happened` and what it knows of the delivery (recorded late, failed sends, a restart, a
// wait in the chat's lane). These run the real dispatcher on a real journal file against a sink
// that records what the chat would get.

const CHAT: Destination = { platform: 'telegram', chatId: 't1' };
let dir: string;
let journal: DeliveryJournal;
let serial = 0;

const ago = (ms: number) => new Date(Date.now() - ms).toISOString();

function delivery(title: string, happened: Reply['happened'] | undefined): NewDelivery {
  serial++;
  return {
    eventId: `devnet:0x${serial.toString(16).padStart(4, '0')}:0xc0:sale`,
    destination: CHAT,
    network: 'devnet',
    txnHash: `0x${serial.toString(16).padStart(4, '0')}`,
    blockNumber: serial,
    payload: { title, lines: ['Price 1 DEV'], ...(happened ? { happened } : {}) } satisfies Reply,
  };
}

/** A chat that takes one message per `minIntervalMs`, as a rate-limited one; what it got is in `chat`. */
class PacedSink implements AlertSink {
  readonly platform = 'telegram';
  readonly maxBatch = 1;
  readonly minIntervalMs: number;
  readonly chat = new RecordingSink('telegram', 1);
  constructor(minIntervalMs: number) {
    this.minIntervalMs = minIntervalMs;
  }
  send(chatId: string, replies: readonly Reply[], key: string): Promise<string> {
    return this.chat.send(chatId, replies, key);
  }
  edit(chatId: string, messageId: string, replies: readonly Reply[]): Promise<void> {
    return this.chat.edit(chatId, messageId, replies);
  }
}

function dispatcherFor(sink: AlertSink, timeZone?: string, retryDelayMs = 1_000): Dispatcher {
  return new Dispatcher({
    journal,
    sinks: new Map([['telegram', sink]]),
    logger: pino({ level: 'silent' }),
    retryDelayMs,
    ...(timeZone ? { timeZoneOf: () => timeZone } : {}),
  });
}

/** The first line of each message the chat got, by title. */
function notes(sink: RecordingSink): Record<string, string> {
  const out: Record<string, string> = {};
  for (const reply of sink.alerts(CHAT.chatId)) out[reply.title ?? ''] = plain(reply.lines?.[0] ?? '');
  return out;
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'floorwatch-late-'));
  journal = await DeliveryJournal.open(join(dir, 'deliveries.jsonl'), { fsync: false });
});
afterEach(async () => {
  await journal.close();
  await rm(dir, { recursive: true, force: true });
});

describe('late alerts say when', () => {
  it('GIVEN alerts of old and fresh events, read back or not, and one recorded before the field existed THEN only the late ones get a note, in the chat zone, with the reason the payload gives', async () => {
    const sink = new RecordingSink('telegram', 1);
    const dispatcher = dispatcherFor(sink, 'Asia/Tokyo');
    const at = ago(12 * 60_000 + 5_000);
    dispatcher.enqueue(
      await journal.record([
        delivery('restart', { at, readBack: 'restart' }),
        delivery('reconnect', { at: ago(3 * 60_000), readBack: 'reconnect' }),
        delivery('slow indexer', { at: ago(5 * 60_000) }),
        delivery('fresh', { at: ago(5_000) }),
        delivery('fresh read back', { at: ago(5_000), readBack: 'reconnect' }),
        delivery('old payload', undefined),
        delivery('bad time', { at: 'yesterday' }),
      ]),
    );
    await dispatcher.drained();
    const tokyo = new Intl.DateTimeFormat('en-CA', {
      timeZone: 'Asia/Tokyo',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    }).format(new Date(at));
    expect(notes(sink)).toEqual({
      restart: expect.stringMatching(
        new RegExp(`^⏱ 12 min ago \\(\\d{4}-\\d\\d-\\d\\d ${tokyo} Asia/Tokyo\\), read back after a restart$`),
      ),
      reconnect: expect.stringMatching(/^⏱ 3 min ago \(.* Asia\/Tokyo\), read back after the stream broke$/),
      // Recorded as late as it was sent: the bot does not know why (the event reached it late).
      'slow indexer': expect.stringMatching(/^⏱ 5 min ago \([^)]*\)$/),
      fresh: 'Price 1 DEV',
      'fresh read back': 'Price 1 DEV',
      'old payload': 'Price 1 DEV',
      'bad time': 'Price 1 DEV',
    });
  });

  it('GIVEN alerts recorded in time WHEN the chat rate limit, failed sends or a restart hold them past a minute THEN each note says which', async () => {
    // Recorded 58 s after their blocks: the chat takes one message per 4 s, so the second goes out late.
    const paced = new PacedSink(4_000);
    const lane = dispatcherFor(paced);
    lane.enqueue(
      await journal.record([delivery('first', { at: ago(58_000) }), delivery('second', { at: ago(58_000) })]),
    );
    await lane.drained();
    expect(notes(paced.chat).second).toMatch(
      /^⏱ \d+ min ago \(\d{4}-\d\d-\d\d \d\d:\d\d UTC\), held back by the chat's rate limit$/,
    );

    // The chat fails the first send; the retry 4 s later is past the minute.
    const failing = new RecordingSink('telegram', 1);
    failing.failures = [new DeliveryError('Bad Gateway', { permanent: false })];
    const retried = dispatcherFor(failing, undefined, 8_000);
    retried.enqueue(await journal.record([delivery('retried', { at: ago(58_000) })]));
    await retried.drained();
    expect(notes(failing).retried).toMatch(/, held back by failed sends to this chat$/);

    // Recorded by a process that stopped before sending it; the next one sends it past the minute.
    await journal.record([delivery('restarted', { at: ago(59_000) })]);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const after = new RecordingSink('telegram', 1);
    const next = dispatcherFor(after);
    next.enqueue(journal.unfinished().filter((r) => r.state === 'pending'));
    await next.drained();
    expect(notes(after).restarted).toMatch(/, held over a restart$/);
  }, 30_000);

  it('says how long ago in the units a reader expects', () => {
    expect(agoText(61_000)).toBe('1 min ago');
    expect(agoText(12 * 60_000 + 59_000)).toBe('12 min ago');
    expect(agoText(60 * 60_000)).toBe('1 h ago');
    expect(agoText(3 * 3_600_000 + 5 * 60_000)).toBe('3 h 5 min ago');
    expect(agoText(3 * 86_400_000)).toBe('3 days ago');
  });
});
