import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DevnetCollectionInfo, MineResult } from '../../src/devnet/index.ts';
import type { CollectibleOrder, PlatformClient } from '../../src/platform/index.ts';
import { post, startTestDevnet, type TestDevnet } from './devnet-helpers.ts';

let t: TestDevnet;
let client: PlatformClient;
let cats: DevnetCollectionInfo;
const BUYER = '0x00000000000000000000000000000000000b0b01';
const OTHER = '0x00000000000000000000000000000000000b0b02';

beforeAll(async () => {
  t = await startTestDevnet();
  client = t.client;
  cats = t.collection('devnet', 'Moon Cats');
});

afterAll(async () => {
  await t.close();
});

async function ownerOf(collection: string, tokenId: string, network = 'devnet'): Promise<string | undefined> {
  const { balances } = await client.indexer.getTokenBalancesByContract({
    network,
    filter: { contractAddresses: [collection], tokenIDs: [tokenId] },
    omitMetadata: true,
  });
  return balances[0]?.accountAddress;
}

async function listingIds(tokenId: string, collection = cats.address): Promise<string[]> {
  const { listings } = await client.marketplace.listListingsForCollectible({
    network: 'devnet',
    contractAddress: collection,
    tokenId,
    page: { pageSize: 100 },
  });
  return listings.map((l) => l.orderId);
}

async function orderById(orderId: string, collection = cats.address) {
  const { orders } = await client.marketplace.getOrders({
    network: 'devnet',
    input: [{ contractAddress: collection, orderId }],
  });
  return orders[0];
}

async function allCollectibles(
  args: Parameters<PlatformClient['marketplace']['listCollectibles']>[0],
): Promise<CollectibleOrder[]> {
  const out: CollectibleOrder[] = [];
  for (let page = 1; ; page++) {
    const result = await client.marketplace.listCollectibles({ ...args, page: { ...args.page, page, pageSize: 250 } });
    out.push(...result.collectibles);
    if (!result.page.more) return out;
  }
}

describe('devnet market state: mining changes what the operations return, consistently', () => {
  it('GIVEN a listed token WHEN a sale is mined through POST /devnet/mine THEN the listing is gone, the order is filled and the buyer holds the token', async () => {
    const tokenId = '777';
    const seller = await ownerOf(cats.address, tokenId);
    const listed = await t.devnet.mine('devnet', [
      { kind: 'listing', collection: cats.address, tokenId, price: '0.42' },
      { kind: 'listing', collection: cats.address, tokenId, price: '0.9' },
    ]);
    const [cheap, dear] = listed.transactions.map((tx) => tx.orderIds[0] ?? '');
    expect(await listingIds(tokenId)).toEqual(expect.arrayContaining([cheap, dear]));
    const best = await client.marketplace.listCollectibles({
      network: 'devnet',
      side: 'listing',
      contractAddress: cats.address,
      filter: { searchText: tokenId, inAccounts: seller ? [seller] : [] },
    });
    expect(best.collectibles.find((c) => c.metadata.tokenId === tokenId)?.order?.orderId).toBe(cheap);

    const response = await post(`${t.devnet.url}/devnet/mine`, {
      network: 'devnet',
      activity: [{ kind: 'sale', collection: cats.address, tokenId, to: BUYER }],
    });
    expect(response.status).toBe(200);
    const sale = (await response.json()) as MineResult;
    expect(sale.txnHashes).toHaveLength(1);
    expect(sale.transactions[0]).toMatchObject({ kind: 'sale', orderIds: [cheap], tokenIds: [tokenId], from: BUYER });

    const remaining = await listingIds(tokenId);
    expect(remaining).not.toContain(cheap);
    expect(remaining).not.toContain(dear);
    expect(await orderById(cheap ?? '')).toMatchObject({
      status: 'filled',
      quantityRemaining: '0',
      quantityAvailable: '0',
      priceAmount: '420000000000000000',
      createdBy: seller,
    });
    expect(await orderById(dear ?? '')).toMatchObject({ status: 'inactive' });
    expect(await ownerOf(cats.address, tokenId)).toBe(BUYER);
    const held = await client.indexer.getTokenBalancesByContract({
      network: 'devnet',
      filter: { contractAddresses: [cats.address], accountAddresses: [BUYER] },
    });
    expect(held.balances.map((b) => b.tokenID)).toEqual([tokenId]);
    const owned = await client.marketplace.listCollectibles({
      network: 'devnet',
      side: 'listing',
      contractAddress: cats.address,
      filter: { inAccounts: [BUYER], includeEmpty: true },
    });
    expect(owned.collectibles.map((c) => c.metadata.tokenId)).toEqual([tokenId]);
    expect(owned.collectibles[0]?.order).toBeUndefined();
  });

  it('GIVEN three listed tokens WHEN a sweep is mined THEN one transaction fills the three orders', async () => {
    const tokenIds = ['1001', '1002', '1003'];
    const listed = await t.devnet.mine(
      'devnet',
      tokenIds.map((tokenId) => ({ kind: 'listing' as const, collection: cats.address, tokenId, price: '0.01' })),
    );
    const orderIds = listed.transactions.map((tx) => tx.orderIds[0]);
    const sweep = await t.devnet.mine('devnet', [{ kind: 'sale', collection: cats.address, tokenIds, to: OTHER }]);
    expect(sweep.txnHashes).toHaveLength(1);
    expect(sweep.transactions[0]?.orderIds).toEqual(orderIds);
    for (const tokenId of tokenIds) expect(await ownerOf(cats.address, tokenId)).toBe(OTHER);
    const { orders } = await client.marketplace.getOrders({
      network: 'devnet',
      input: orderIds.map((orderId) => ({ contractAddress: cats.address, orderId: orderId ?? '' })),
    });
    expect(orders.map((o) => o.status)).toEqual(['filled', 'filled', 'filled']);
  });

  it('GIVEN an offer WHEN the owner accepts it THEN the token goes to the offer maker', async () => {
    const tokenId = '2024';
    const offered = await t.devnet.mine('devnet', [
      { kind: 'offer', collection: cats.address, tokenId, from: OTHER, price: '0.05', currency: 'WDEV' },
    ]);
    const orderId = offered.transactions[0]?.orderIds[0] ?? '';
    const { offers } = await client.marketplace.listOffersForCollectible({
      network: 'devnet',
      contractAddress: cats.address,
      tokenId,
    });
    expect(offers.find((o) => o.orderId === orderId)).toMatchObject({ createdBy: OTHER, priceAmountFormatted: '0.05' });
    await t.devnet.mine('devnet', [{ kind: 'sale', orderId }]);
    expect(await ownerOf(cats.address, tokenId)).toBe(OTHER);
    expect(await orderById(orderId)).toMatchObject({ status: 'filled', side: 'offer' });
  });

  it('GIVEN a listing WHEN it is cancelled THEN it leaves the book and GetOrders says cancelled', async () => {
    const listed = await t.devnet.mine('devnet', [
      { kind: 'listing', collection: cats.address, tokenId: '3030', price: '1' },
    ]);
    const orderId = listed.transactions[0]?.orderIds[0] ?? '';
    expect(await listingIds('3030')).toContain(orderId);
    await t.devnet.mine('devnet', [{ kind: 'cancel', orderId }]);
    expect(await listingIds('3030')).not.toContain(orderId);
    expect(await orderById(orderId)).toMatchObject({ status: 'cancelled' });
  });

  it('GIVEN a still-minting collection WHEN tokens are minted and burned THEN counts, owners and lists follow', async () => {
    const gardens = t.collection('devnet', 'Glitch Gardens');
    const minted = await t.devnet.mine('devnet', [{ kind: 'mint', collection: gardens.address, to: BUYER, count: 2 }]);
    const newIds = minted.transactions[0]?.tokenIds ?? [];
    expect(newIds).toEqual([String(gardens.tokenCount + 1), String(gardens.tokenCount + 2)]);
    expect(t.collection('devnet', 'Glitch Gardens').tokenCount).toBe(gardens.tokenCount + 2);
    const metadata = await client.marketplace.getCollectible({
      network: 'devnet',
      contractAddress: gardens.address,
      tokenId: newIds[0] ?? '',
    });
    expect(metadata.attributes.length).toBeGreaterThan(0);
    expect(await ownerOf(gardens.address, newIds[1] ?? '')).toBe(BUYER);

    await t.devnet.mine('devnet', [{ kind: 'burn', collection: gardens.address, tokenId: newIds[1] ?? '' }]);
    expect(await ownerOf(gardens.address, newIds[1] ?? '')).toBeUndefined();
    const all = await allCollectibles({
      network: 'devnet',
      side: 'listing',
      contractAddress: gardens.address,
      filter: { includeEmpty: true },
    });
    const ids = all.map((c) => c.metadata.tokenId);
    expect(ids).toContain(newIds[0]);
    expect(ids).not.toContain(newIds[1]);
  });

  it('GIVEN an ERC-1155 holder WHEN it transfers a quantity THEN both balances change by it', async () => {
    const potions = t.collection('devnet', 'Pixel Potions');
    const before = await client.indexer.getTokenBalancesByContract({
      network: 'devnet',
      filter: { contractAddresses: [potions.address], tokenIDs: ['2'] },
      omitMetadata: true,
    });
    const holder = before.balances.find((b) => BigInt(b.balance) >= 3n);
    expect(holder).toBeDefined();
    await t.devnet.mine('devnet', [
      {
        kind: 'transfer',
        collection: potions.address,
        tokenId: '2',
        from: holder?.accountAddress ?? '',
        to: OTHER,
        quantity: '3',
      },
    ]);
    const after = await client.indexer.getTokenBalancesByContract({
      network: 'devnet',
      filter: {
        contractAddresses: [potions.address],
        tokenIDs: ['2'],
        accountAddresses: [holder?.accountAddress ?? '', OTHER],
      },
      omitMetadata: true,
    });
    const balanceOf = (address: string) => after.balances.find((b) => b.accountAddress === address)?.balance ?? '0';
    expect(BigInt(balanceOf(holder?.accountAddress ?? ''))).toBe(BigInt(holder?.balance ?? '0') - 3n);
    expect(balanceOf(OTHER)).toBe('3');
  });

  it('GIVEN a mined sale WHEN its block is reorganised away THEN the listing, the order and the owner are back', async () => {
    const tokenId = '5150';
    const seller = await ownerOf(cats.address, tokenId);
    const listed = await t.devnet.mine('devnet', [
      { kind: 'listing', collection: cats.address, tokenId, price: '0.3' },
    ]);
    const orderId = listed.transactions[0]?.orderIds[0] ?? '';
    await t.devnet.mine('devnet', [{ kind: 'sale', orderId, to: BUYER }]);
    expect(await ownerOf(cats.address, tokenId)).toBe(BUYER);
    const reorg = await t.devnet.reorg('devnet', 1);
    expect(reorg.reorgedTxnHashes).toHaveLength(1);
    expect(await ownerOf(cats.address, tokenId)).toBe(seller);
    expect(await listingIds(tokenId)).toContain(orderId);
    expect(await orderById(orderId)).toMatchObject({ status: 'active', quantityRemaining: '1' });
  });

  it('refuses activity that does not fit the state and leaves the state untouched', async () => {
    const before = t.devnet.info().networks[0]?.head.number;
    const notOwner = t.devnet.mine('devnet', [
      { kind: 'listing', collection: cats.address, tokenId: '6000', price: '1' },
      { kind: 'transfer', collection: cats.address, tokenId: '6000', from: BUYER, to: OTHER },
    ]);
    await expect(notOwner).rejects.toMatchObject({
      errorName: 'InvalidArgument',
      message: expect.stringContaining('activity[1].from'),
    });
    expect(t.devnet.info().networks[0]?.head.number).toBe(before);
    const ids = await listingIds('6000');
    const { orders } = await client.marketplace.getOrders({
      network: 'devnet',
      input: ids.map((orderId) => ({ contractAddress: cats.address, orderId })),
    });
    expect(orders.every((o) => o.priceAmountFormatted !== '1')).toBe(true);
  });
});

describe('devnet ListCollectibles filters, best orders, sorting and paging', () => {
  const base = () => ({ network: 'devnet' as const, side: 'listing' as const, contractAddress: cats.address });
  const trait = (c: CollectibleOrder, name: string) => c.metadata.attributes.find((a) => a.trait_type === name)?.value;

  it('a property filter keeps only tokens with one of the values; two properties must both hold', async () => {
    const furs = await allCollectibles({
      ...base(),
      filter: { properties: [{ name: 'Fur', type: 'STRING', values: ['Calico', 'Ginger'] }] },
    });
    expect(furs.length).toBeGreaterThan(10);
    expect(furs.every((c) => ['Calico', 'Ginger'].includes(String(trait(c, 'Fur'))))).toBe(true);
    expect(new Set(furs.map((c) => trait(c, 'Fur')))).toEqual(new Set(['Calico', 'Ginger']));
    const both = await allCollectibles({
      ...base(),
      filter: {
        properties: [
          { name: 'Fur', values: ['Calico', 'Ginger'] },
          { name: 'Hat', values: ['None'] },
        ],
      },
    });
    expect(both.length).toBeGreaterThan(0);
    expect(both.length).toBeLessThan(furs.length);
    expect(both.every((c) => trait(c, 'Hat') === 'None')).toBe(true);
    const lives = await allCollectibles({
      ...base(),
      filter: { properties: [{ name: 'Lives', type: 'INT', min: 8, max: 9 }] },
    });
    expect(lives.length).toBeGreaterThan(0);
    expect(lives.every((c) => Number(trait(c, 'Lives')) >= 8)).toBe(true);
    const unknown = await allCollectibles({ ...base(), filter: { properties: [{ name: 'Wings', values: ['Yes'] }] } });
    expect(unknown).toEqual([]);
  });

  it('the best order of a listing side is the cheapest listing; of an offer side the highest offer', async () => {
    const page = await client.marketplace.listCollectibles({ ...base(), page: { page: 1, pageSize: 20 } });
    for (const c of page.collectibles.slice(0, 5)) {
      const { listings } = await client.marketplace.listListingsForCollectible({
        network: 'devnet',
        contractAddress: cats.address,
        tokenId: c.metadata.tokenId,
      });
      expect(c.order?.priceUSD).toBe(Math.min(...listings.map((l) => l.priceUSD)));
    }
    const offers = await client.marketplace.listCollectibles({
      ...base(),
      side: 'offer',
      page: { page: 1, pageSize: 5 },
    });
    for (const c of offers.collectibles) {
      const list = await client.marketplace.listOffersForCollectible({
        network: 'devnet',
        contractAddress: cats.address,
        tokenId: c.metadata.tokenId,
      });
      expect(c.order?.priceUSD).toBe(Math.max(...list.offers.map((o) => o.priceUSD)));
      expect(c.offer?.orderId).toBe(c.order?.orderId);
    }
  });

  it('sorts by price (listings cheapest first, offers highest first) unless asked otherwise', async () => {
    const listings = await allCollectibles(base());
    const usd = listings.map((c) => c.order?.priceUSD ?? 0);
    expect(usd).toEqual([...usd].sort((a, b) => a - b));
    const offers = await allCollectibles({ ...base(), side: 'offer' });
    const offerUsd = offers.map((c) => c.order?.priceUSD ?? 0);
    expect(offerUsd).toEqual([...offerUsd].sort((a, b) => b - a));
    const byToken = await client.marketplace.listCollectibles({
      ...base(),
      page: { page: 1, pageSize: 50, sort: [{ column: 'tokenId', order: 'DESC' }] },
    });
    const ids = byToken.collectibles.map((c) => Number(c.metadata.tokenId));
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    const dearest = await client.marketplace.listCollectibles({
      ...base(),
      page: { page: 1, pageSize: 5, sort: [{ column: 'price', order: 'DESC' }] },
    });
    expect(dearest.collectibles[0]?.order?.priceUSD).toBe(Math.max(...usd));
  });

  it('pages are disjoint, in order, and `more` turns false on the last one', async () => {
    const all = await allCollectibles(base());
    const first = await client.marketplace.listCollectibles({ ...base(), page: { page: 1, pageSize: 40 } });
    const second = await client.marketplace.listCollectibles({ ...base(), page: { page: 2, pageSize: 40 } });
    expect(first.collectibles.map((c) => c.metadata.tokenId)).toEqual(all.slice(0, 40).map((c) => c.metadata.tokenId));
    expect(second.collectibles.map((c) => c.metadata.tokenId)).toEqual(
      all.slice(40, 80).map((c) => c.metadata.tokenId),
    );
    expect(first.page.more).toBe(true);
    const last = await client.marketplace.listCollectibles({
      ...base(),
      page: { page: Math.ceil(all.length / 40), pageSize: 40 },
    });
    expect(last.page.more).toBe(false);
  });

  it('includeEmpty adds the tokens without an order at the end', async () => {
    const rescue = t.collection('devnet', 'Moon Cats Rescue');
    const listed = await allCollectibles({ ...base(), contractAddress: rescue.address });
    const everything = await allCollectibles({
      ...base(),
      contractAddress: rescue.address,
      filter: { includeEmpty: true },
    });
    expect(everything).toHaveLength(rescue.tokenCount);
    expect(everything.slice(0, listed.length).map((c) => c.metadata.tokenId)).toEqual(
      listed.map((c) => c.metadata.tokenId),
    );
    expect(everything.slice(listed.length).every((c) => c.order === undefined)).toBe(true);
  });

  it('searchText, accounts, currencies, prices and marketplaces narrow the results', async () => {
    const search = await allCollectibles({ ...base(), filter: { searchText: 'Moon Cat #12', includeEmpty: true } });
    expect(search.length).toBeGreaterThan(0);
    expect(search.every((c) => c.metadata.name.startsWith('Moon Cat #12'))).toBe(true);

    const listed = await allCollectibles(base());
    const maker = listed[0]?.order?.createdBy ?? '';
    const byAccount = await allCollectibles({ ...base(), filter: { inAccounts: [maker] } });
    expect(byAccount.length).toBeGreaterThan(0);
    const notByAccount = await allCollectibles({ ...base(), filter: { notInAccounts: [maker] } });
    expect(byAccount.length + notByAccount.length).toBe(listed.length);

    const dusd = t.devnet.info().networks[0]?.currencies.find((c) => c.symbol === 'DUSD')?.address ?? '';
    const inDollars = await allCollectibles({ ...base(), filter: { inCurrencyAddresses: [dusd] } });
    expect(inDollars.length).toBeGreaterThan(0);
    expect(inDollars.every((c) => c.order?.priceCurrencyAddress === dusd)).toBe(true);
    const notDollars = await allCollectibles({ ...base(), filter: { notInCurrencyAddresses: [dusd] } });
    expect(notDollars.every((c) => c.order?.priceCurrencyAddress !== dusd)).toBe(true);

    const cheap = await allCollectibles({
      ...base(),
      filter: { prices: [{ contractAddress: dusd, min: '100000000', max: '200000000' }] },
    });
    expect(cheap.length).toBeGreaterThan(0);
    expect(
      cheap.every(
        (c) =>
          BigInt(c.order?.priceAmount ?? '0') >= 100_000_000n && BigInt(c.order?.priceAmount ?? '0') <= 200_000_000n,
      ),
    ).toBe(true);

    const opensea = await allCollectibles({ ...base(), filter: { marketplaces: ['opensea'] } });
    expect(opensea.length).toBeGreaterThan(0);
    expect(opensea.every((c) => c.order?.marketplace === 'opensea')).toBe(true);
    const createdBy = await allCollectibles({ ...base(), filter: { ordersCreatedBy: [maker] } });
    expect(createdBy.every((c) => c.order?.createdBy === maker)).toBe(true);
  });
});
