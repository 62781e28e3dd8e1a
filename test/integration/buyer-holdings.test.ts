import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BuyerHoldings } from '../../src/alerts/sale-context.ts';
import type { ChainEvent } from '../../src/alerts/types.ts';
import { type Devnet, type DevnetCollectionInfo, type MineResult, startDevnet } from '../../src/devnet/index.ts';
import { PlatformClient } from '../../src/platform/client.ts';
import { collectionNamed } from '../helpers/devnet-data.ts';

/*
 * Buyers' holdings as sale alerts read them: the real client over HTTP against the local platform,
 * whose balances change with the sales mined through it.
 */

const silent = pino({ level: 'silent' });
let devnet: Devnet;
let client: PlatformClient;
let cats: DevnetCollectionInfo;

const wallet = (n: number) => `0x${n.toString(16).padStart(4, '0')}${'e'.repeat(36)}`;

/** Buys the cheapest listed tokens of the collection, one transaction each, for the wallets given. */
async function buy(buyers: readonly string[]): Promise<ChainEvent[]> {
  const mined: MineResult = await devnet.mine(
    'devnet',
    buyers.map((to) => ({ kind: 'sale', collection: cats.address, to })),
  );
  return mined.transactions.map((t, i) => saleEvent(t.tokenIds, buyers[i] ?? '', t.txnHash));
}

function saleEvent(tokenIds: readonly string[], to: string, txnHash = '0x01'): ChainEvent {
  return {
    id: `devnet:${txnHash}:${cats.address}:sale`,
    kind: 'sale',
    network: 'devnet',
    collection: cats.address,
    txnHash,
    blockNumber: 1,
    blockHash: '0x02',
    ts: new Date().toISOString(),
    tokens: tokenIds.map((tokenId) => ({ tokenId, amount: '1' })),
    to,
    accounts: [to],
    orderIds: [],
    logUids: [],
  };
}

beforeAll(async () => {
  devnet = await startDevnet({ scale: 'small', heartbeatIntervalMs: 1_000 });
  client = new PlatformClient({
    endpoints: devnet.endpoints,
    networks: devnet.networks,
    accessKey: devnet.accessKey,
    retry: { retries: 1, baseDelayMs: 10 },
  });
  cats = collectionNamed(devnet, 'Moon Cats');
}, 60_000);

afterAll(async () => {
  await client?.close();
  await devnet?.close();
});

describe("buyers' holdings", () => {
  it('GIVEN five sales of one block to four wallets THEN one call answers them all: first-time buyers are new, a wallet that bought twice holds 2', async () => {
    const buyers = [wallet(1), wallet(2), wallet(3), wallet(4), wallet(1)];
    const events = await buy(buyers);
    const holdings = new BuyerHoldings(client, { logger: silent });
    const answers = await Promise.all(events.map((event) => holdings.buyerOf(event)));
    expect(holdings.calls).toBe(1);
    expect(answers.slice(1, 4)).toEqual([
      { units: 1n, isNew: true },
      { units: 1n, isNew: true },
      { units: 1n, isNew: true },
    ]);
    // Wallet 1 bought in two transactions of the block: after either, it holds both.
    expect(answers[0]).toEqual({ units: 2n, isNew: false });
    expect(answers[4]).toEqual({ units: 2n, isNew: false });

    // Asked again within the cache's life: no call.
    expect(await holdings.buyerOf(events[1] as ChainEvent)).toEqual({ units: 1n, isNew: true });
    expect(holdings.calls).toBe(1);

    // The wallet buys again: the cached holding does not show that token, so it is read again.
    const [again] = await buy([wallet(2)]);
    expect(await holdings.buyerOf(again as ChainEvent)).toEqual({ units: 2n, isNew: false });
    expect(holdings.calls).toBe(2);
  });

  it('GIVEN sales asked about while a call is in flight THEN they wait for it and share the next call', async () => {
    const holdings = new BuyerHoldings(client, { logger: silent });
    const first = await buy([wallet(10)]);
    devnet.setFaults({ operation: 'GetTokenBalancesByContract', latencyMs: 300, times: 1 });
    const slow = holdings.buyerOf(first[0] as ChainEvent);
    const later = await buy([wallet(11), wallet(12), wallet(13)]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const rest = later.map((event) => holdings.buyerOf(event));
    expect(await slow).toEqual({ units: 1n, isNew: true });
    expect(await Promise.all(rest)).toEqual([
      { units: 1n, isNew: true },
      { units: 1n, isNew: true },
      { units: 1n, isNew: true },
    ]);
    expect(holdings.calls).toBe(2);
  });

  it('GIVEN balances that do not show the purchase yet (an index behind), or a failing platform THEN nothing is said, and the next sale asks again', async () => {
    const holdings = new BuyerHoldings(client, { logger: silent });
    // A token the wallet never received: the index "has not seen" that sale.
    const behind = saleEvent(['999999'], wallet(20));
    expect(await holdings.buyerOf(behind)).toBeUndefined();

    const [bought] = await buy([wallet(21)]);
    devnet.setFaults({ operation: 'GetTokenBalancesByContract', errorRate: 1 });
    try {
      expect(await holdings.buyerOf(bought as ChainEvent)).toBeUndefined();
    } finally {
      devnet.clearFaults();
    }
    expect(await holdings.buyerOf(bought as ChainEvent)).toEqual({ units: 1n, isNew: true });
  });

  it('GIVEN a sale with no single buyer, or not a sale THEN no call is made', async () => {
    const holdings = new BuyerHoldings(client, { logger: silent });
    const { to: _none, ...anonymous } = saleEvent(['1'], wallet(30));
    expect(await holdings.buyerOf(anonymous)).toBeUndefined();
    expect(await holdings.buyerOf({ ...saleEvent(['1'], wallet(30)), kind: 'transfer' })).toBeUndefined();
    expect(holdings.calls).toBe(0);
  });
});
