import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DevnetCollectionInfo } from '../../src/devnet/index.ts';
import type { PlatformClient } from '../../src/platform/index.ts';
import { startTestDevnet, type TestDevnet, ZERO_ADDRESS } from './devnet-helpers.ts';

let t: TestDevnet;
let client: PlatformClient;
let cats: DevnetCollectionInfo;
let dusd: string;
/** A Moon Cat with two listings (DEV and DUSD) and three offers, made for these tests. */
let token: string;
let listingIds: string[];
let offerIds: string[];

beforeAll(async () => {
  t = await startTestDevnet();
  client = t.client;
  cats = t.collection('devnet', 'Moon Cats');
  dusd = t.devnet.info().networks[0]?.currencies.find((c) => c.symbol === 'DUSD')?.address ?? '';
  token = '4321';
  const mined = await t.devnet.mine('devnet', [
    { kind: 'listing', collection: cats.address, tokenId: token, price: '2.5' },
    { kind: 'listing', collection: cats.address, tokenId: token, price: '9000', currency: 'DUSD' },
    { kind: 'offer', collection: cats.address, tokenId: token, price: '1.1', currency: 'WDEV' },
    { kind: 'offer', collection: cats.address, tokenId: token, price: '1.7', currency: 'WDEV' },
    { kind: 'offer', collection: cats.address, tokenId: token, price: '3000', currency: 'DUSD' },
  ]);
  const ids = mined.transactions.map((tx) => tx.orderIds[0] ?? '');
  listingIds = ids.slice(0, 2);
  offerIds = ids.slice(2);
});

afterAll(async () => {
  await t.close();
});

describe('devnet operations through the platform client', () => {
  it('TokenCollectionFilters lists the traits of a collection with their values', async () => {
    const filters = await client.metadata.tokenCollectionFilters({ network: 'devnet', contractAddress: cats.address });
    const names = filters.map((f) => f.name);
    expect(names).toEqual(['Background', 'Fur', 'Eyes', 'Hat', 'Mouth', 'Lives']);
    expect(filters[0]).toMatchObject({ type: 'STRING', min: null, max: null });
    expect(filters[0]?.values).toContain('Solar Gold');
    expect(filters.find((f) => f.name === 'Lives')).toMatchObject({ type: 'INT', min: 1, max: 9 });
  });

  it('SearchMetadata finds both similar names, and restricts by network, type and tokens', async () => {
    const both = await client.metadata.searchMetadata({ filter: 'moon cats', excludeTokenMetadata: true });
    expect(both.contractInfo.map((c) => c.name).sort()).toEqual(['Moon Cats', 'Moon Cats Rescue']);
    expect(both.tokenMetadata).toEqual([]);
    const tokens = await client.metadata.searchMetadata({ filter: 'Moon Cat #42', network: 'devnet' });
    expect(tokens.tokenMetadata.length).toBeGreaterThan(0);
    expect(tokens.tokenMetadata.every((m) => m.name.includes('Moon Cat #42'))).toBe(true);
    expect(tokens.tokenMetadata[0]).toHaveProperty('lastFetched');
    const elsewhere = await client.metadata.searchMetadata({ filter: 'moon cats', network: 'devnet-l2' });
    expect(elsewhere.contractInfo).toEqual([]);
    const semiFungible = await client.metadata.searchMetadata({
      filter: 's',
      types: ['ERC1155'],
      excludeTokenMetadata: true,
    });
    expect(semiFungible.contractInfo.length).toBeGreaterThan(0);
    expect(semiFungible.contractInfo.every((c) => c.type === 'ERC1155')).toBe(true);
  });

  it('UnpublishCollection needs the bearer token and takes the collection out of search', async () => {
    const tractors = t.collection('devnet-l2', 'Tiny Tractors');
    const before = await client.metadata.searchMetadata({ filter: 'Tiny Tractors', excludeTokenMetadata: true });
    expect(before.contractInfo).toHaveLength(1);
    const collectionId = tractors.id;
    const collection = await client.collections.unpublishCollection({ collectionId });
    expect(collection).toMatchObject({ id: collectionId, projectId: t.devnet.projectId, private: true });
    expect(collection.metadata.name).toBe('Tiny Tractors');
    expect(collection.metadata.externalLink).toContain('tiny-tractors');
    const after = await client.metadata.searchMetadata({ filter: 'Tiny Tractors', excludeTokenMetadata: true });
    expect(after.contractInfo).toEqual([]);
    const missing = await client.collections.unpublishCollection({ collectionId: 999 }).catch((e: unknown) => e);
    expect(missing).toMatchObject({ errorName: 'NotFound' });
  });

  it('ListListingsForCollectible lists a token listings, cheapest first, with filters and pages', async () => {
    const all = await client.marketplace.listListingsForCollectible({
      network: 'devnet',
      contractAddress: cats.address,
      tokenId: token,
    });
    const mine = all.listings.filter((l) => listingIds.includes(l.orderId));
    expect(mine.map((l) => l.orderId)).toEqual(listingIds);
    const usd = all.listings.map((l) => l.priceUSD);
    expect(usd).toEqual([...usd].sort((a, b) => a - b));
    expect(mine[0]).toMatchObject({
      priceAmount: '2500000000000000000',
      priceAmountFormatted: '2.5',
      priceDecimals: 18,
      priceCurrencyAddress: ZERO_ADDRESS,
    });
    expect(mine[1]).toMatchObject({
      priceAmount: '9000000000',
      priceDecimals: 6,
      priceCurrencyAddress: dusd,
      priceUSD: 9000,
    });
    const inDollars = await client.marketplace.listListingsForCollectible({
      network: 'devnet',
      contractAddress: cats.address,
      tokenId: token,
      filter: { currencies: [dusd] },
    });
    expect(inDollars.listings.map((l) => l.orderId)).toContain(listingIds[1]);
    expect(inDollars.listings.every((l) => l.priceCurrencyAddress === dusd)).toBe(true);
    const paged = await client.marketplace.listListingsForCollectible({
      network: 'devnet',
      contractAddress: cats.address,
      tokenId: token,
      page: { page: 1, pageSize: 1 },
    });
    expect(paged.listings).toHaveLength(1);
    expect(paged.page).toMatchObject({ page: 1, pageSize: 1, more: true });
  });

  it('GetHighestPriceListingForCollectible returns the most expensive listing', async () => {
    const all = await client.marketplace.listListingsForCollectible({
      network: 'devnet',
      contractAddress: cats.address,
      tokenId: token,
    });
    const highest = await client.marketplace.getHighestPriceListingForCollectible({
      network: 'devnet',
      contractAddress: cats.address,
      tokenId: token,
    });
    expect(highest?.priceUSD).toBe(Math.max(...all.listings.map((l) => l.priceUSD)));
    expect(highest?.orderId).toBe(listingIds[1]);
    const none = await client.marketplace.getHighestPriceListingForCollectible({
      network: 'devnet',
      contractAddress: cats.address,
      tokenId: token,
      filter: { createdBy: ['0x000000000000000000000000000000000000dead'] },
    });
    expect(none).toBeUndefined();
  });

  it('ListOffersForCollectible lists offers, highest first', async () => {
    const { offers } = await client.marketplace.listOffersForCollectible({
      network: 'devnet',
      contractAddress: cats.address,
      tokenId: token,
    });
    const usd = offers.map((o) => o.priceUSD);
    expect(usd).toEqual([...usd].sort((a, b) => b - a));
    expect(offers.map((o) => o.orderId)).toEqual(expect.arrayContaining(offerIds));
    expect(offers.every((o) => o.side === 'offer' && o.status === 'active')).toBe(true);
  });

  it('GetLowestPriceOfferForCollectible returns the cheapest offer', async () => {
    const { offers } = await client.marketplace.listOffersForCollectible({
      network: 'devnet',
      contractAddress: cats.address,
      tokenId: token,
    });
    const lowest = await client.marketplace.getLowestPriceOfferForCollectible({
      network: 'devnet',
      contractAddress: cats.address,
      tokenId: token,
    });
    expect(lowest?.priceUSD).toBe(Math.min(...offers.map((o) => o.priceUSD)));
  });

  it('GetCollectible returns the token metadata with traits and a served image', async () => {
    const metadata = await client.marketplace.getCollectible({
      network: 'devnet',
      contractAddress: cats.address,
      tokenId: token,
    });
    expect(metadata).toMatchObject({ tokenId: token, name: `Moon Cat #${token}` });
    expect(metadata.attributes.map((a) => a.trait_type)).toEqual([
      'Background',
      'Fur',
      'Eyes',
      'Hat',
      'Mouth',
      'Lives',
    ]);
    expect(metadata.externalUrl).toContain(token);
    expect(metadata.image?.startsWith(t.devnet.url)).toBe(true);
    const missing = await client.marketplace
      .getCollectible({ network: 'devnet', contractAddress: cats.address, tokenId: '10001' })
      .catch((e: unknown) => e);
    expect(missing).toMatchObject({ errorName: 'NotFound', code: 2000 });
  });

  it('GetCollectible passes the hostile collection metadata through untouched', async () => {
    const gremlins = t.devnet.collections.devnet?.find((c) => c.hostile);
    expect(gremlins?.name).toContain('@everyone');
    const read = (tokenId: string) =>
      client.marketplace.getCollectible({ network: 'devnet', contractAddress: gremlins?.address ?? '', tokenId });
    expect((await read('1')).description).toContain('[here](http://evil.example/phish)');
    expect((await read('2')).name).toBe("<script>alert('xss')</script>");
    expect((await read('2')).image).toBe('javascript:alert(1)');
    expect((await read('3')).description).toContain('<@123456789012345678>');
    expect((await read('4')).description).toHaveLength(10_000);
    const maxId = ((1n << 256n) - 1n).toString();
    expect((await read(maxId)).tokenId).toBe(maxId);
  });

  it('GetOrders returns orders by id, whatever their state', async () => {
    const { orders } = await client.marketplace.getOrders({
      network: 'devnet',
      input: [...listingIds, ...offerIds, 'no-such-order'].map((orderId) => ({
        contractAddress: cats.address,
        orderId,
      })),
    });
    expect(orders.map((o) => o.orderId)).toEqual([...listingIds, ...offerIds]);
    expect(orders[0]).toMatchObject({
      marketplace: 'sequence_marketplace_v2',
      tokenId: token,
      collectionContractAddress: cats.address,
    });
  });

  it('ListCollectibles returns collectibles with their best order', async () => {
    const { collectibles, page } = await client.marketplace.listCollectibles({
      network: 'devnet',
      side: 'listing',
      contractAddress: cats.address,
      filter: { properties: [{ name: 'Hat', values: ['Crown'] }] },
      page: { page: 1, pageSize: 10 },
    });
    expect(collectibles.length).toBeGreaterThan(0);
    expect(page.pageSize).toBe(10);
    for (const c of collectibles) {
      expect(c.metadata.attributes).toContainEqual({ trait_type: 'Hat', value: 'Crown' });
      expect(c.order?.side).toBe('listing');
      expect(c.listing?.orderId).toBe(c.order?.orderId);
    }
  });

  it('GenerateBuyTransaction gives a buy step for a native listing and an approval first for a token listing', async () => {
    const buyer = '0x00000000000000000000000000000000000b0b00';
    const native = await client.marketplace.generateBuyTransaction({
      network: 'devnet',
      collectionAddress: cats.address,
      buyer,
      marketplace: 'sequence_marketplace_v2',
      ordersData: [{ orderId: listingIds[0] ?? '', quantity: '1', tokenId: token }],
      walletType: 'service',
    });
    const marketplace = t.devnet.info().networks[0]?.marketplaceContract;
    expect(native).toHaveLength(1);
    expect(native[0]).toMatchObject({
      id: 'buy',
      to: marketplace,
      value: '2500000000000000000',
      price: '2500000000000000000',
    });
    expect(native[0]?.data).toMatch(/^0x[0-9a-f]{8}/);
    const token20 = await client.marketplace.generateBuyTransaction({
      network: 'devnet',
      collectionAddress: cats.address,
      buyer,
      marketplace: 2,
      ordersData: [{ orderId: listingIds[1] ?? '', quantity: '1' }],
    });
    expect(token20.map((s) => s.id)).toEqual(['tokenApproval', 'buy']);
    expect(token20[0]).toMatchObject({ to: dusd, value: '0' });
    expect(token20[0]?.data.startsWith('0x095ea7b3')).toBe(true);
    expect(token20[1]).toMatchObject({ value: '0', price: '9000000000' });
    const offer = await client.marketplace
      .generateBuyTransaction({
        network: 'devnet',
        collectionAddress: cats.address,
        buyer,
        marketplace: 2,
        ordersData: [{ orderId: offerIds[0] ?? '', quantity: '1' }],
      })
      .catch((e: unknown) => e);
    expect(offer).toMatchObject({ errorName: 'InvalidArgument' });
  });

  it('GetTokenBalancesByContract returns holders, by account and token, with metadata unless omitted', async () => {
    const { balances } = await client.indexer.getTokenBalancesByContract({
      network: 'devnet',
      filter: { contractAddresses: [cats.address], tokenIDs: [token] },
    });
    expect(balances).toHaveLength(1);
    const owner = balances[0]?.accountAddress ?? '';
    expect(balances[0]).toMatchObject({ contractAddress: cats.address, tokenID: token, balance: '1', chainId: 31337 });
    expect(balances[0]?.tokenMetadata?.name).toBe(`Moon Cat ${'#'}${token}`);
    expect(balances[0]?.contractInfo?.name).toBe('Moon Cats');
    const { listings } = await client.marketplace.listListingsForCollectible({
      network: 'devnet',
      contractAddress: cats.address,
      tokenId: token,
    });
    expect(listings.filter((l) => listingIds.includes(l.orderId)).every((l) => l.createdBy === owner)).toBe(true);
    const byOwner = await client.indexer.getTokenBalancesByContract({
      network: 'devnet',
      filter: { contractAddresses: [cats.address], accountAddresses: [owner] },
      omitMetadata: true,
    });
    expect(byOwner.balances.map((b) => b.tokenID)).toContain(token);
    expect(byOwner.balances.every((b) => b.accountAddress === owner && b.tokenMetadata === undefined)).toBe(true);
    const pageOne = await client.indexer.getTokenBalancesByContract({
      network: 'devnet',
      filter: { contractAddresses: [cats.address] },
      omitMetadata: true,
      page: { page: 1, pageSize: 50 },
    });
    const pageTwo = await client.indexer.getTokenBalancesByContract({
      network: 'devnet',
      filter: { contractAddresses: [cats.address] },
      omitMetadata: true,
      page: { page: 2, pageSize: 50 },
    });
    expect(pageOne.balances).toHaveLength(50);
    expect(pageOne.page.more).toBe(true);
    expect(pageTwo.balances[0]?.tokenID).toBe('51');
  });

  it('GetTokenBalancesByContract gives ERC-1155 balances per holder', async () => {
    const potions = t.collection('devnet', 'Pixel Potions');
    const { balances } = await client.indexer.getTokenBalancesByContract({
      network: 'devnet',
      filter: { contractAddresses: [potions.address], tokenIDs: ['1'] },
      omitMetadata: true,
      page: { pageSize: 1000 },
    });
    const total = balances.reduce((sum, b) => sum + BigInt(b.balance), 0n);
    expect(total).toBe(500n);
    expect(balances.every((b) => b.contractType === 'ERC1155')).toBe(true);
  });

  it('ListContractSources lists the shared sources and the project ones, with pages', async () => {
    const { contractSources, page } = await client.builder.listContractSources({});
    expect(contractSources.length).toBeGreaterThanOrEqual(8);
    expect(contractSources.some((s) => s.projectId === t.devnet.projectId)).toBe(true);
    expect(contractSources.some((s) => s.disabled)).toBe(true);
    expect(page.more).toBe(false);
    const first = await client.builder.listContractSources({ page: { page: 1, pageSize: 3 } });
    expect(first.contractSources).toHaveLength(3);
    expect(first.page.more).toBe(true);
  });

  it('ListContracts filters the project contracts by chain and type', async () => {
    const all = await client.builder.listContracts({});
    expect(all.contracts.length).toBeGreaterThanOrEqual(10);
    const l2Tokens = await client.builder.listContracts({ filter: { chainId: 31338, contractType: 'ERC1155' } });
    expect(l2Tokens.contracts.length).toBe(2);
    expect(l2Tokens.contracts.every((c) => c.chainId === 31338 && c.contractType === 'ERC1155')).toBe(true);
    const sales = all.contracts.filter((c) => c.contractType.endsWith('_SALE'));
    expect(sales.every((c) => c.itemsContractAddress && c.audienceId === 1)).toBe(true);
    const other = await client.builder.listContracts({ projectId: 1 }).catch((e: unknown) => e);
    expect(other).toMatchObject({ errorName: 'AccessKeyMismatch' });
  });

  it('GetAudience returns the allowlist with its contacts and contracts', async () => {
    const result = await client.builder.getAudience({ audienceId: 1 });
    expect(result.audience).toMatchObject({ id: 1, name: 'Genesis Allowlist', deletedAt: null });
    expect(result.contacts).toHaveLength(result.audience.contactCount);
    expect(result.contacts.every((c) => /^0x[0-9a-f]{40}$/.test(c.address))).toBe(true);
    expect(result.contracts.length).toBeGreaterThan(0);
    const retired = await client.builder.getAudience({ audienceId: 3 });
    expect(retired.audience.deletedAt).not.toBeNull();
    const missing = await client.builder.getAudience({ audienceId: 42 }).catch((e: unknown) => e);
    expect(missing).toMatchObject({ errorName: 'NotFound', status: 422 });
  });

  it('ListGasSponsors lists the sponsors of one network, some inactive', async () => {
    const { gasSponsors, page } = await client.relayer.listGasSponsors({ network: 'devnet-l2' });
    expect(gasSponsors.length).toBe(6);
    expect(gasSponsors.every((s) => s.chainId === 31338)).toBe(true);
    expect(gasSponsors.some((s) => !s.active)).toBe(true);
    expect(page).toMatchObject({ totalRecords: 6, more: false });
  });

  it('WalletsTxnSentTotal gives one point per day, the same every time, and sums per week', async () => {
    const filter = { startDate: '2025-03-01', endDate: '2025-03-14' };
    const daily = await client.analytics.walletsTxnSentTotal(filter);
    expect(daily).toHaveLength(14);
    expect(daily[0]?.label).toBe('2025-03-01');
    expect(daily.every((p) => Number.isInteger(p.value) && p.value > 0)).toBe(true);
    expect(await client.analytics.walletsTxnSentTotal(filter)).toEqual(daily);
    const weekly = await client.analytics.walletsTxnSentTotal({ ...filter, dateInterval: 'WEEK' });
    expect(weekly.reduce((s, p) => s + p.value, 0)).toBe(daily.reduce((s, p) => s + p.value, 0));
    const scoped = await client.analytics.walletsTxnSentTotal({ ...filter, collections: [cats.address] });
    expect(scoped).not.toEqual(daily);
    const backwards = await client.analytics
      .walletsTxnSentTotal({ startDate: '2025-03-14', endDate: '2025-03-01' })
      .catch((e: unknown) => e);
    expect(backwards).toMatchObject({ errorName: 'InvalidArgument' });
  });

  it('DailyWalletTxnConversionRate gives a rate between 0 and 1 per day', async () => {
    const rates = await client.analytics.dailyWalletTxnConversionRate({
      startDate: '2025-02-01',
      endDate: '2025-02-28',
    });
    expect(rates).toHaveLength(28);
    expect(rates.every((p) => p.value > 0 && p.value < 1)).toBe(true);
    const monthly = await client.analytics.dailyWalletTxnConversionRate({
      startDate: '2025-01-15',
      endDate: '2025-03-15',
      dateInterval: 'MONTH',
    });
    expect(monthly.map((p) => p.label)).toEqual(['2025-01-01', '2025-02-01', '2025-03-01']);
  });
});
