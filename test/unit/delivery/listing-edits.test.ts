import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { NewDelivery } from '../../../src/core/deliveries.ts';
import type { Reply } from '../../../src/core/reply.ts';
import type { Destination } from '../../../src/core/types.ts';
import { Dispatcher } from '../../../src/delivery/dispatcher.ts';
import { DeliveryJournal } from '../../../src/store/files/journal/journal.ts';
import { RecordingSink } from '../../helpers/recording-sink.ts';

/*
 * Edits of listing cards and new alerts in one chat's queue, through the real dispatcher and journal:
 * they take turns, so that a wave of sold listings never holds up new alerts.
 */

const CHAT: Destination = { platform: 'telegram', chatId: '77' };
const C = '0x00000000000000000000000000000000000000c1';
let dir: string;
let journal: DeliveryJournal;

/** A sink that notes the order of its sends and edits. */
class OrderSink extends RecordingSink {
  readonly order: string[] = [];
  override async send(chatId: string, replies: readonly Reply[], key: string): Promise<string> {
    this.order.push(`send ${replies[0]?.title}`);
    return super.send(chatId, replies, key);
  }
  override async edit(chatId: string, messageId: string, replies: readonly Reply[]): Promise<void> {
    this.order.push(`edit ${replies[0]?.title}`);
    return super.edit(chatId, messageId, replies);
  }
}

function listing(n: number): NewDelivery {
  return {
    eventId: `devnet:0x${n}:${C}:listing`,
    destination: CHAT,
    network: 'devnet',
    txnHash: `0x${n}`,
    blockNumber: n,
    kind: 'listing',
    payload: { title: `listing ${n}`, fields: [{ name: 'Links', value: [{ link: 'Buy', href: `https://m/${n}` }] }] },
    listing: { collection: C, orderIds: [String(n)], tokenIds: [String(n)], buyUrl: `https://m/${n}` },
  };
}

const alert = (n: number): NewDelivery => ({ ...listing(n), eventId: `devnet:0x${n}:${C}:sale`, kind: 'sale' });

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'floorwatch-listing-edits-'));
  journal = await DeliveryJournal.open(join(dir, 'deliveries.jsonl'), { fsync: false });
});
afterEach(async () => {
  await journal.close();
  await rm(dir, { recursive: true, force: true });
});

describe('listing card edits in a chat queue', () => {
  it('GIVEN four sold listing cards to edit and four new alerts WHEN the queue runs THEN sends and edits take turns, each card is edited once to SOLD without its Buy link', async () => {
    const sink = new OrderSink('telegram');
    const dispatcher = new Dispatcher({
      journal,
      sinks: new Map([['telegram', sink]]),
      logger: pino({ level: 'silent' }),
    });
    dispatcher.enqueue(await journal.record([1, 2, 3, 4].map(listing)));
    await dispatcher.drained();
    sink.order.length = 0;

    const edits = [];
    for (const n of [1, 2, 3, 4]) {
      edits.push(
        ...(await journal.markListingsClosed({
          network: 'devnet',
          collection: C,
          orderIds: [String(n)],
          tokenIds: [],
          blockNumber: 10 + n,
          since: new Date(Date.now() - 60_000),
          fate: { state: 'sold', txnHash: `0x1${n}`, blockNumber: 10 + n, orderIds: [String(n)] },
        })),
      );
    }
    dispatcher.enqueue(await journal.record([5, 6, 7, 8].map(alert)));
    dispatcher.reorged(edits);
    await dispatcher.drained();

    expect(sink.order).toEqual([
      'send listing 5',
      'edit SOLD · listing 1',
      'send listing 6',
      'edit SOLD · listing 2',
      'send listing 7',
      'edit SOLD · listing 3',
      'send listing 8',
      'edit SOLD · listing 4',
    ]);
    expect(JSON.stringify(sink.edits)).not.toContain('https://m/');
    expect((await journal.outstanding()).edits).toEqual([]);
  });
});
