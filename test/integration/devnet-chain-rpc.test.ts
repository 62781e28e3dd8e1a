import { createPublicClient, http, type PublicClient, parseAbiItem } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChainLogReader } from '../../src/alerts/backfill.ts';
import type { DevnetCollectionInfo } from '../../src/devnet/index.ts';
import type { EventLog } from '../../src/platform/index.ts';
import { post, startTestDevnet, subscribe, type TestDevnet, TOPICS } from './devnet-helpers.ts';

let t: TestDevnet;
let rpc: PublicClient;
let rpcUrl: string;
let cats: DevnetCollectionInfo;
let marketplace: string;

beforeAll(async () => {
  t = await startTestDevnet({ heartbeatIntervalMs: 100, finalityDepth: 3 });
  rpcUrl = t.devnet.chainRpcUrl.replace('{network}', 'devnet');
  rpc = createPublicClient({ transport: http(rpcUrl, { retryCount: 0 }), cacheTime: 0 });
  cats = t.collection('devnet', 'Moon Cats');
  marketplace = t.devnet.info().networks[0]?.marketplaceContract ?? '';
});

afterAll(async () => {
  await t.close();
});

async function call(body: unknown, url = rpcUrl): Promise<{ status: number; json: unknown }> {
  const response = await post(url, body);
  const text = await response.text();
  return { status: response.status, json: text === '' ? undefined : JSON.parse(text) };
}

const hex = (n: number): `0x${string}` => `0x${n.toString(16)}`;

describe('devnet chain JSON-RPC', () => {
  it('GIVEN the devnet network WHEN asked its chain id and head THEN they are the devnet chain id and head', async () => {
    const info = t.devnet.info().networks[0];
    expect(await rpc.getChainId()).toBe(info?.chainId);
    expect(await rpc.getBlockNumber()).toBe(BigInt(info?.head.number ?? -1));
    const mined = await t.devnet.mine('devnet', []);
    expect(await rpc.getBlockNumber()).toBe(BigInt(mined.blockNumber));
    const byChainId = createPublicClient({
      transport: http(t.devnet.chainRpcUrl.replace('{network}', String(info?.chainId))),
    });
    expect(await byChainId.getBlockNumber()).toBe(BigInt(mined.blockNumber));
  });

  it('GIVEN mined sales WHEN eth_getLogs covers their block THEN the logs are exactly the raw logs the events stream served', async () => {
    const sub = subscribe<EventLog>((o) =>
      t.client.indexer.subscribeEvents(
        { network: 'devnet', filter: { contractAddresses: [cats.address, marketplace] } },
        { reconnect: { initialDelayMs: 10, maxDelayMs: 50 }, ...o },
      ),
    );
    await sub.connected();
    const mined = await t.devnet.mine('devnet', [
      { kind: 'sale', collection: cats.address },
      { kind: 'listing', collection: cats.address },
      { kind: 'sale', collection: cats.address, count: 2 },
    ]);
    const streamed = await sub.waitFor((l) => l.blockNumber === mined.blockNumber, 1, 'logs of the block');
    await new Promise((resolve) => setTimeout(resolve, 50));
    await sub.close();
    const expected = sub.items.filter((l) => l.blockNumber === mined.blockNumber);
    expect(streamed.length).toBeGreaterThan(0);

    const logs = await rpc.getLogs({
      fromBlock: BigInt(mined.blockNumber),
      toBlock: BigInt(mined.blockNumber),
      address: [cats.address as `0x${string}`, marketplace as `0x${string}`],
    });
    expect(
      logs.map((l) => ({
        address: l.address,
        topics: l.topics,
        data: l.data,
        blockNumber: Number(l.blockNumber),
        blockHash: l.blockHash,
        transactionHash: l.transactionHash,
        logIndex: l.logIndex,
        removed: l.removed,
      })),
    ).toEqual(
      expected.map((l) => ({
        address: l.contractAddress,
        topics: (l.rawLog as { topics: string[] }).topics,
        data: (l.rawLog as { data: string }).data,
        blockNumber: l.blockNumber,
        blockHash: l.blockHash,
        transactionHash: l.txnHash,
        logIndex: l.txnLogIndex,
        removed: false,
      })),
    );
    expect(new Set(logs.map((l) => l.transactionHash))).toEqual(new Set(mined.txnHashes));
    const block = await rpc.getBlock({ blockNumber: BigInt(mined.blockNumber), includeTransactions: true });
    expect(block.hash).toBe(mined.blockHash);
    expect(new Date(Number(block.timestamp) * 1000).toISOString()).toBe(expected[0]?.ts);
    expect(block.transactions.map((x) => x.hash)).toEqual(mined.txnHashes);
    expect(block.transactions.map((x) => x.from)).toEqual(
      mined.txnHashes.map((h) => expected.find((l) => l.txnHash === h)?.txnInfo?.from),
    );
    expect(logs[0]?.blockTimestamp).toBe(block.timestamp);
    const parent = await rpc.getBlock({ blockNumber: BigInt(mined.blockNumber - 1) });
    expect(block.parentHash).toBe(parent.hash);
    const byHash = await rpc.getBlock({ blockHash: mined.blockHash as `0x${string}` });
    expect(byHash.number).toBe(BigInt(mined.blockNumber));
  });

  it('GIVEN more watched contracts than a request names WHEN the backfill reader reads a range THEN by signature alone it keeps the same logs as by addresses', async () => {
    const gulls = t.collection('devnet', 'Glitch Gardens');
    const mined = await t.devnet.mine('devnet', [
      { kind: 'sale', collection: cats.address },
      { kind: 'transfer', collection: gulls.address },
      { kind: 'transfer', collection: cats.address },
    ]);
    const watched = [cats.address.toLowerCase(), marketplace.toLowerCase()];
    const contracts = {
      size: watched.length,
      has: (address: string) => watched.includes(address),
      *lists(size: number) {
        for (let i = 0; i < watched.length; i += size) yield watched.slice(i, i + size);
      },
    };
    const read = (fields: { addressesPerRequest?: number; addressFilterMax?: number }) =>
      new ChainLogReader({
        network: 'devnet',
        chainId: t.devnet.info().networks[0]?.chainId ?? 0,
        url: rpcUrl,
        ...fields,
      })
        .logs(mined.blockNumber, mined.blockNumber, contracts)
        .then((logs) => logs.map((l) => `${l.contractAddress}:${l.txnLogIndex}`));
    const byAddress = await read({});
    expect(byAddress.length).toBeGreaterThan(0);
    expect(byAddress.every((l) => watched.includes(l.split(':')[0] ?? ''))).toBe(true);
    // One contract a request: two requests, merged in chain order.
    expect(await read({ addressesPerRequest: 1 })).toEqual(byAddress);
    // Past the limit: no address named; the unwatched collection's transfer, which the node sends then, is dropped here.
    expect(await read({ addressFilterMax: 1 })).toEqual(byAddress);
    const everything = await rpc.getLogs({ fromBlock: BigInt(mined.blockNumber), toBlock: BigInt(mined.blockNumber) });
    expect(everything.some((l) => l.address.toLowerCase() === gulls.address.toLowerCase())).toBe(true);
  });

  it('GIVEN an events ABI, an address and topic filters WHEN eth_getLogs is asked THEN wildcards, OR lists and addresses select as on a node', async () => {
    const mined = await t.devnet.mine('devnet', [
      { kind: 'sale', collection: cats.address },
      { kind: 'cancel', collection: cats.address },
    ]);
    const range = { fromBlock: BigInt(mined.blockNumber), toBlock: BigInt(mined.blockNumber) };
    const all = await rpc.getLogs(range);
    const sales = await rpc.getLogs({
      ...range,
      event: parseAbiItem(
        'event RequestAccepted(uint256 indexed requestId, address indexed buyer, address indexed tokenContract, address receiver, uint256 quantity, uint256 quantityRemaining)',
      ),
    });
    expect(sales).toHaveLength(1);
    expect(sales[0]?.args.tokenContract?.toLowerCase()).toBe(cats.address);
    const either = await rpc.request({
      method: 'eth_getLogs',
      params: [
        {
          fromBlock: hex(mined.blockNumber),
          toBlock: hex(mined.blockNumber),
          topics: [[TOPICS.RequestAccepted, TOPICS.RequestCancelled]],
        },
      ],
    });
    expect(either.map((l) => l.topics[0])).toEqual(
      all
        .filter((l) => l.topics[0] === TOPICS.RequestAccepted || l.topics[0] === TOPICS.RequestCancelled)
        .map((l) => l.topics[0]),
    );
    const byCollectionTopic = await rpc.request({
      method: 'eth_getLogs',
      params: [
        {
          fromBlock: hex(mined.blockNumber),
          toBlock: hex(mined.blockNumber),
          topics: [null, null, null, `0x${cats.address.slice(2).padStart(64, '0')}`],
        },
      ],
    });
    // Position 3 is the collection of RequestAccepted; RequestCancelled has no fourth topic.
    expect(byCollectionTopic.map((l) => l.topics[0])).toEqual([TOPICS.RequestAccepted]);
    const transfers = await rpc.getLogs({ ...range, address: cats.address as `0x${string}` });
    expect(transfers.every((l) => l.address === cats.address)).toBe(true);
    expect(transfers.length).toBeGreaterThan(0);
    expect(await rpc.getLogs({ ...range, address: '0x00000000000000000000000000000000000000aa' })).toEqual([]);
  });

  it('GIVEN a reorganised block WHEN its range or hash is asked THEN its logs and block are no longer served', async () => {
    const mined = await t.devnet.mine('devnet', [{ kind: 'sale', collection: cats.address }]);
    const range = { fromBlock: BigInt(mined.blockNumber), toBlock: BigInt(mined.blockNumber) };
    expect((await rpc.getLogs(range)).length).toBeGreaterThan(0);
    await t.devnet.reorg('devnet', 1);
    expect(await rpc.getBlockNumber()).toBe(BigInt(mined.blockNumber - 1));
    expect(await rpc.getLogs(range)).toEqual([]);
    const next = await t.devnet.mine('devnet', []);
    expect(next.blockNumber).toBe(mined.blockNumber);
    expect(await rpc.getLogs(range)).toEqual([]);
    const again = await call({ jsonrpc: '2.0', id: 1, method: 'eth_getBlockByHash', params: [mined.blockHash, false] });
    expect(again.json).toEqual({ jsonrpc: '2.0', id: 1, result: null });
    const block = await rpc.getBlock({ blockNumber: BigInt(next.blockNumber) });
    expect(block.hash).toBe(next.blockHash);
  });

  it('GIVEN an events stream WHEN a block is reorganised THEN its logs come again with type BLOCK_REMOVED and the same uids', async () => {
    const sub = subscribe<EventLog>((o) =>
      t.client.indexer.subscribeEvents(
        { network: 'devnet', filter: { contractAddresses: [cats.address] } },
        { reconnect: { initialDelayMs: 10, maxDelayMs: 50 }, ...o },
      ),
    );
    await sub.connected();
    const mined = await t.devnet.mine('devnet', [{ kind: 'transfer', collection: cats.address }]);
    const added = await sub.waitFor((l) => l.blockNumber === mined.blockNumber, 1, 'added logs');
    await t.devnet.reorg('devnet', 1);
    const removed = await sub.waitFor((l) => l.type === 'BLOCK_REMOVED', added.length, 'removed logs');
    await sub.close();
    expect(added.every((l) => l.type === 'BLOCK_ADDED')).toBe(true);
    expect(removed.map((l) => [l.uid, l.txnHash, l.blockHash])).toEqual(
      added.map((l) => [l.uid, l.txnHash, l.blockHash]),
    );
  });

  it('GIVEN a range over 10,000 blocks WHEN eth_getLogs is asked THEN it is refused with -32005 and says the limit', async () => {
    const head = await rpc.getBlockNumber();
    const error = await rpc.getLogs({ fromBlock: head - 10_000n, toBlock: head }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: -32005 });
    expect(String((error as Error).message)).toMatch(/10001 blocks.*at most 10000/s);
    await expect(rpc.getLogs({ fromBlock: head - 9_999n, toBlock: head })).resolves.toBeInstanceOf(Array);
  });

  it('GIVEN a batch WHEN it mixes good and bad calls THEN each gets its own answer or JSON-RPC error object', async () => {
    const { status, json } = await call([
      { jsonrpc: '2.0', id: 1, method: 'eth_chainId' },
      { jsonrpc: '2.0', id: 'b', method: 'eth_sendRawTransaction', params: ['0x00'] },
      { jsonrpc: '2.0', id: 3, method: 'eth_getBlockByNumber', params: ['not-a-block', false] },
      {
        jsonrpc: '2.0',
        id: 4,
        method: 'eth_getLogs',
        params: [{ fromBlock: '0x10', toBlock: '0x1', address: 'nope' }],
      },
      { id: 5, method: 'eth_chainId' },
      { jsonrpc: '2.0', method: 'eth_chainId' },
      { jsonrpc: '2.0', id: 6, method: 'eth_getBlockByNumber', params: [hex(10 ** 12), false] },
    ]);
    expect(status).toBe(200);
    const chainId = hex(t.devnet.networks[0]?.chainId ?? 0);
    expect(json).toEqual([
      { jsonrpc: '2.0', id: 1, result: chainId },
      {
        jsonrpc: '2.0',
        id: 'b',
        error: { code: -32601, message: 'the method eth_sendRawTransaction does not exist/is not available' },
      },
      { jsonrpc: '2.0', id: 3, error: { code: -32602, message: expect.stringContaining('invalid block number') } },
      { jsonrpc: '2.0', id: 4, error: { code: -32602, message: expect.stringContaining('invalid address') } },
      { jsonrpc: '2.0', id: 5, error: { code: -32600, message: expect.stringContaining('jsonrpc must be "2.0"') } },
      { jsonrpc: '2.0', id: 6, result: null },
    ]);
    expect((await call('{"jsonrpc":"2.0",')).json).toMatchObject({ id: null, error: { code: -32700 } });
    expect((await call([])).json).toMatchObject({ id: null, error: { code: -32600, message: 'empty batch' } });
    const unknown = await call({ jsonrpc: '2.0', id: 1, method: 'eth_chainId' }, rpcUrl.replace(/devnet$/, 'nowhere'));
    expect(unknown.status).toBe(404);
    expect(unknown.json).toMatchObject({
      error: { code: -32600, message: expect.stringContaining('unknown network') },
    });
    const get = await fetch(rpcUrl);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
  });

  it('GIVEN a node keeping 5 blocks WHEN logs before them are asked THEN it says they are pruned instead of answering nothing', async () => {
    const small = await startTestDevnet({ historyBlocks: 5 });
    try {
      const client = createPublicClient({
        transport: http(small.devnet.chainRpcUrl.replace('{network}', 'devnet'), { retryCount: 0 }),
      });
      const start = Number(await client.getBlockNumber());
      for (let i = 0; i < 8; i++) await small.devnet.mine('devnet', []);
      const error = await client
        .getLogs({ fromBlock: BigInt(start + 1), toBlock: BigInt(start + 8) })
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ code: -32000 });
      expect(String((error as Error).message)).toContain(`logs before block ${start + 4}`);
      await expect(client.getLogs({ fromBlock: BigInt(start + 4), toBlock: BigInt(start + 8) })).resolves.toEqual([]);
      await expect(client.getLogs({ fromBlock: BigInt(start - 5), toBlock: BigInt(start) })).resolves.toEqual([]);
    } finally {
      await small.close();
    }
  });
});
