import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DevnetCollectionInfo } from '../../src/devnet/index.ts';
import type { EventLog, PlatformClient, StreamOptions, TransactionReceipt } from '../../src/platform/index.ts';
import { PlatformApiError } from '../../src/platform/index.ts';
import { post, startTestDevnet, subscribe, type TestDevnet, TOPICS, ZERO_ADDRESS } from './devnet-helpers.ts';

let t: TestDevnet;
let client: PlatformClient;
let cats: DevnetCollectionInfo;
let marketplace: string;
const BUYER = '0x00000000000000000000000000000000000c0c01';
const WATCHED = '0x00000000000000000000000000000000000c0c02';
const FAST: StreamOptions = { reconnect: { initialDelayMs: 10, maxDelayMs: 50 } };

beforeAll(async () => {
  t = await startTestDevnet({ heartbeatIntervalMs: 100, finalityDepth: 3 });
  client = t.client;
  cats = t.collection('devnet', 'Moon Cats');
  marketplace = t.devnet.info().networks[0]?.marketplaceContract ?? '';
});

afterAll(async () => {
  await t.close();
});

function events(filter: Parameters<PlatformClient['indexer']['subscribeEvents']>[0]['filter'], network = 'devnet') {
  return subscribe<EventLog>((o) => client.indexer.subscribeEvents({ network, filter }, { ...FAST, ...o }));
}

function receipts(filter: Parameters<PlatformClient['indexer']['subscribeReceipts']>[0]['filter']) {
  return subscribe<TransactionReceipt>((o) =>
    client.indexer.subscribeReceipts({ network: 'devnet', filter }, { ...FAST, ...o }),
  );
}

describe('devnet streams', () => {
  it('opens an NDJSON stream with a blank line, then a blank line every heartbeat interval', async () => {
    const controller = new AbortController();
    const response = await post(
      `${t.devnet.url}/indexer/devnet/rpc/Indexer/SubscribeEvents`,
      { filter: { contractAddresses: [cats.address] } },
      { 'x-access-key': t.devnet.accessKey },
    );
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/x-ndjson');
    expect(response.headers.get('cache-control')).toBe('no-store');
    const reader = response.body?.getReader();
    let text = '';
    while (text.length < 3 && reader) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    expect(text.startsWith('\n')).toBe(true);
    expect(text.replaceAll('\n', '')).toBe('');
    controller.abort();
    await reader?.cancel();
  });

  it('refuses a filter with neither contracts nor accounts', async () => {
    const raw = await post(
      `${t.devnet.url}/indexer/devnet/rpc/Indexer/SubscribeEvents`,
      { filter: { events: ['Transfer(address,address,uint256)'] } },
      { 'x-access-key': t.devnet.accessKey },
    );
    expect(raw.status).toBe(400);
    expect(await raw.json()).toMatchObject({ error: 'InvalidArgument', code: 2001 });
    const sub = events({ tokenIDs: ['1'] });
    await sub.ended();
    expect(sub.error()).toBeInstanceOf(PlatformApiError);
    expect(sub.error()).toMatchObject({ code: 2001 });
    const badEvent = events({ contractAddresses: [cats.address], events: ['Transfer(address'] });
    await badEvent.ended();
    expect(badEvent.error()).toMatchObject({ code: 2001, detail: expect.stringContaining('filter.events[0]') });
  });

  it('GIVEN a subscriber to a collection WHEN a sale is mined THEN RequestAccepted and Transfer arrive in one transaction, and GetOrders gives the price', async () => {
    const sub = events({ contractAddresses: [cats.address] });
    await sub.connected();
    const tokenId = '8080';
    const listed = await t.devnet.mine('devnet', [
      { kind: 'listing', collection: cats.address, tokenId, price: '0.77' },
    ]);
    const orderId = listed.transactions[0]?.orderIds[0] ?? '';
    const [created] = await sub.waitFor((l) => l.txnHash === listed.txnHashes[0], 1, 'RequestCreated');
    expect(created?.contractAddress).toBe(marketplace);
    expect(created?.event).toMatchObject({ topicHash: TOPICS.RequestCreated });
    expect(created?.event?.names).toEqual([
      'requestId',
      'creator',
      'tokenContract',
      'tokenId',
      'isListing',
      'quantity',
      'currency',
      'pricePerToken',
      'expiry',
    ]);
    expect(created?.event?.values.slice(0, 8)).toEqual([
      orderId,
      listed.transactions[0]?.from,
      cats.address,
      tokenId,
      'true',
      '1',
      ZERO_ADDRESS,
      '770000000000000000',
    ]);
    expect(created?.event?.eventSig).toContain('uint256 indexed requestId');

    const sale = await t.devnet.mine('devnet', [{ kind: 'sale', collection: cats.address, tokenId, to: BUYER }]);
    const logs = await sub.waitFor((l) => l.txnHash === sale.txnHashes[0], 2, 'sale logs');
    const accepted = logs.find((l) => l.event?.topicHash === TOPICS.RequestAccepted);
    const transfer = logs.find((l) => l.event?.topicHash === TOPICS.Transfer);
    expect(accepted).toMatchObject({ contractAddress: marketplace, blockNumber: sale.blockNumber });
    expect(accepted?.event?.values).toEqual([orderId, BUYER, cats.address, BUYER, '1', '0']);
    expect(transfer).toMatchObject({
      contractAddress: cats.address,
      blockNumber: sale.blockNumber,
      blockHash: sale.blockHash,
    });
    expect(transfer?.event?.values).toEqual([listed.transactions[0]?.from, BUYER, tokenId]);
    expect(transfer?.rawLog?.topics).toHaveLength(4);
    expect(accepted?.uid).not.toBe(transfer?.uid);
    expect(accepted?.txnInfo).toMatchObject({ from: BUYER, to: marketplace, value: '770000000000000000' });
    const { orders } = await client.marketplace.getOrders({
      network: 'devnet',
      input: [{ contractAddress: cats.address, orderId: accepted?.event?.values[0] ?? '' }],
    });
    expect(orders[0]).toMatchObject({ priceAmountFormatted: '0.77', status: 'filled', tokenId });
    await sub.close();
  });

  it('GIVEN a sweep WHEN it is mined THEN several RequestAccepted + Transfer pairs share one txnHash', async () => {
    const sub = events({ contractAddresses: [cats.address] });
    await sub.connected();
    const tokenIds = ['8101', '8102', '8103'];
    await t.devnet.mine(
      'devnet',
      tokenIds.map((tokenId) => ({ kind: 'listing' as const, collection: cats.address, tokenId, price: '0.02' })),
    );
    const sweep = await t.devnet.mine('devnet', [{ kind: 'sale', collection: cats.address, tokenIds, to: BUYER }]);
    const logs = await sub.waitFor((l) => l.txnHash === sweep.txnHashes[0], 6, 'sweep logs');
    expect(logs.filter((l) => l.event?.topicHash === TOPICS.RequestAccepted)).toHaveLength(3);
    expect(logs.filter((l) => l.event?.topicHash === TOPICS.Transfer).map((l) => l.event?.values[2])).toEqual(tokenIds);
    expect(new Set(logs.map((l) => l.txnLogIndex)).size).toBe(6);
    await sub.close();
  });

  it('delivers to an accounts filter only the logs that name the account', async () => {
    const sub = events({ accounts: [WATCHED] });
    await sub.connected();
    await t.devnet.mine('devnet', [{ kind: 'transfer', collection: cats.address, tokenId: '9001', to: BUYER }]);
    const mine = await t.devnet.mine('devnet', [
      { kind: 'transfer', collection: cats.address, tokenId: '9002', to: WATCHED },
    ]);
    await sub.waitFor((l) => l.txnHash === mine.txnHashes[0]);
    expect(sub.items.every((l) => l.event?.values.includes(WATCHED))).toBe(true);
    expect(sub.items).toHaveLength(1);
    await sub.close();
  });

  it('delivers to a token id filter only that token, including its marketplace logs', async () => {
    const sub = events({ contractAddresses: [cats.address], tokenIDs: ['9100'] });
    await sub.connected();
    await t.devnet.mine('devnet', [{ kind: 'listing', collection: cats.address, tokenId: '9101', price: '1' }]);
    const listed = await t.devnet.mine('devnet', [
      { kind: 'listing', collection: cats.address, tokenId: '9100', price: '1' },
    ]);
    const cancel = await t.devnet.mine('devnet', [
      { kind: 'cancel', orderId: listed.transactions[0]?.orderIds[0] ?? '' },
    ]);
    await sub.waitFor((l) => l.txnHash === cancel.txnHashes[0]);
    expect(sub.items.map((l) => l.event?.topicHash)).toEqual([TOPICS.RequestCreated, TOPICS.RequestCancelled]);
    await sub.close();
  });

  it('delivers to an events filter only those events, whatever the spelling of the signature', async () => {
    const sub = events({
      contractAddresses: [cats.address],
      events: [
        'RequestCreated(uint256 indexed,address indexed,address indexed,uint256,bool,uint256,address,uint256,uint256)',
      ],
    });
    await sub.connected();
    await t.devnet.mine('devnet', [{ kind: 'transfer', collection: cats.address, tokenId: '9200', to: BUYER }]);
    const offer = await t.devnet.mine('devnet', [
      { kind: 'offer', collection: cats.address, tokenId: '9200', from: WATCHED, price: '0.01', currency: 'WDEV' },
    ]);
    await sub.waitFor((l) => l.txnHash === offer.txnHashes[0]);
    expect(sub.items.map((l) => l.event?.topicHash)).toEqual([TOPICS.RequestCreated]);
    expect(sub.items[0]?.event?.values[4]).toBe('false');
    await sub.close();

    const byName = events({ contractAddresses: [cats.address], events: ['RequestCancelled'] });
    await byName.connected();
    await t.devnet.mine('devnet', [{ kind: 'transfer', collection: cats.address, tokenId: '9201', to: BUYER }]);
    const cancel = await t.devnet.mine('devnet', [
      { kind: 'cancel', orderId: offer.transactions[0]?.orderIds[0] ?? '' },
    ]);
    await byName.waitFor((l) => l.txnHash === cancel.txnHashes[0]);
    expect(byName.items.map((l) => l.event?.topicHash)).toEqual([TOPICS.RequestCancelled]);
    await byName.close();
  });

  it('emits TransferBatch for a batch mint and TransferSingle for a transfer of ERC-1155 tokens', async () => {
    const potions = t.collection('devnet', 'Pixel Potions');
    const sub = events({ contractAddresses: [potions.address] });
    await sub.connected();
    const minted = await t.devnet.mine('devnet', [
      { kind: 'mint', collection: potions.address, tokenIds: ['1', '2'], quantity: '2', to: WATCHED },
    ]);
    const moved = await t.devnet.mine('devnet', [
      { kind: 'transfer', collection: potions.address, tokenId: '1', from: WATCHED, to: BUYER },
    ]);
    const [batch] = await sub.waitFor((l) => l.txnHash === minted.txnHashes[0]);
    const [single] = await sub.waitFor((l) => l.txnHash === moved.txnHashes[0]);
    expect(batch?.event).toMatchObject({
      topicHash: TOPICS.TransferBatch,
      values: [WATCHED, ZERO_ADDRESS, WATCHED, '["1","2"]', '["2","2"]'],
    });
    expect(single?.event).toMatchObject({
      topicHash: TOPICS.TransferSingle,
      values: [WATCHED, WATCHED, BUYER, '1', '1'],
    });
    await sub.close();
  });

  it('sends a receipt when a transaction is mined and again, final, after the finality depth', async () => {
    const sub = receipts({ contractAddress: cats.address });
    await sub.connected();
    const listed = await t.devnet.mine('devnet', [
      { kind: 'listing', collection: cats.address, tokenId: '9300', price: '3' },
    ]);
    const hash = listed.txnHashes[0];
    const [first] = await sub.waitFor((r) => r.txnHash === hash);
    expect(first).toMatchObject({
      final: false,
      reorged: false,
      blockNumber: listed.blockNumber,
      blockHash: listed.blockHash,
    });
    expect(first?.logs[0]?.topics[0]).toBe(TOPICS.RequestCreated);
    await t.devnet.mine('devnet', []);
    await t.devnet.mine('devnet', []);
    expect(sub.items.filter((r) => r.txnHash === hash && r.final)).toEqual([]);
    await t.devnet.mine('devnet', []);
    const [final] = await sub.waitFor((r) => r.txnHash === hash && r.final, 1, 'final receipt');
    expect(final).toMatchObject({ final: true, reorged: false });
    await sub.close();
  });

  it('GIVEN a mined sale WHEN its block is reorganised THEN its receipt comes again with reorged: true', async () => {
    const sub = receipts({ from: BUYER });
    await sub.connected();
    const sale = await t.devnet.mine('devnet', [{ kind: 'sale', collection: cats.address, to: BUYER }]);
    await sub.waitFor((r) => r.txnHash === sale.txnHashes[0]);
    const reorg = await t.devnet.reorg('devnet', 1);
    expect(reorg.reorgedTxnHashes).toEqual(sale.txnHashes);
    const [reorged] = await sub.waitFor((r) => r.txnHash === sale.txnHashes[0] && r.reorged, 1, 'reorged receipt');
    expect(reorged).toMatchObject({ final: false, reorged: true, blockNumber: sale.blockNumber });
    await sub.close();
  });

  it('GIVEN a stream dropped by a fault WHEN the client reconnects THEN mined activity arrives again', async () => {
    t.devnet.setFaults({ operation: 'SubscribeEvents', dropStreamAfterMessages: 1, times: 1 });
    const sub = events({ contractAddresses: [cats.address] });
    await sub.connected(1);
    const before = await t.devnet.mine('devnet', [
      { kind: 'listing', collection: cats.address, tokenId: '9400', price: '1' },
    ]);
    await sub.waitFor((l) => l.txnHash === before.txnHashes[0]);
    await sub.connected(2);
    expect(sub.states.some((s) => s.kind === 'disconnected' && s.willReconnect)).toBe(true);
    const after = await t.devnet.mine('devnet', [
      { kind: 'listing', collection: cats.address, tokenId: '9401', price: '1' },
    ]);
    await sub.waitFor((l) => l.txnHash === after.txnHashes[0]);
    await sub.close();
    t.devnet.clearFaults();
  });

  it('GIVEN a stream ended by a WebrpcStreamLost line WHEN the client reconnects THEN it goes on', async () => {
    t.devnet.setFaults({ operation: 'Indexer/SubscribeReceipts', dropStreamAfterMs: 0, dropMode: 'error', times: 1 });
    const sub = receipts({ contractAddress: cats.address });
    await sub.connected(2);
    const lost = sub.states.find((s) => s.kind === 'disconnected');
    expect(lost).toMatchObject({ willReconnect: true, reason: { code: -9, errorName: 'WebrpcStreamLost' } });
    const mined = await t.devnet.mine('devnet', [
      { kind: 'listing', collection: cats.address, tokenId: '9402', price: '1' },
    ]);
    await sub.waitFor((r) => r.txnHash === mined.txnHashes[0]);
    await sub.close();
    t.devnet.clearFaults();
  });

  it('closes open streams promptly when the devnet closes', async () => {
    const own = await startTestDevnet({ scale: 'small' });
    const sub = subscribe<EventLog>((o) =>
      own.client.indexer.subscribeEvents(
        { network: 'devnet', filter: { accounts: [BUYER] } },
        { ...o, reconnect: false },
      ),
    );
    await sub.connected();
    await own.devnet.close();
    await sub.ended();
    await own.client.close();
  });
});

describe('devnet random blocks on a timer', () => {
  it('mines random activity that streams out as logs and receipts', async () => {
    const live = await startTestDevnet({ scale: 'small', blockIntervalMs: 20, finalityDepth: 1 });
    try {
      const market = live.devnet.info().networks[0]?.marketplaceContract ?? '';
      const logs = subscribe<EventLog>((o) =>
        live.client.indexer.subscribeEvents({ network: 'devnet', filter: { contractAddresses: [market] } }, o),
      );
      const finals = subscribe<TransactionReceipt>((o) =>
        live.client.indexer.subscribeReceipts({ network: 'devnet', filter: {} }, o),
      );
      await logs.waitFor(() => true, 3, 'marketplace logs');
      await finals.waitFor((r) => r.final, 1, 'a final receipt');
      expect(logs.items.every((l) => l.contractAddress === market)).toBe(true);
      await logs.close();
      await finals.close();
    } finally {
      await live.close();
    }
  });
});
