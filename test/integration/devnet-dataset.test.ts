import { decodeAbiParameters } from 'viem/utils';
import { describe, expect, it } from 'vitest';
import { type Dataset, generateDataset } from '../../src/devnet/dataset.ts';
import { canonicalSignature, EVENTS, encodeLog, topicOf } from '../../src/devnet/events.ts';
import { TOPICS, ZERO_ADDRESS } from './devnet-helpers.ts';

/** A plain, comparable picture of everything a seed decides. */
function snapshot(dataset: Dataset) {
  return {
    accounts: dataset.accounts.addresses,
    accessKey: dataset.accessKey,
    secretToken: dataset.secretToken,
    networks: dataset.networks.map((network) => ({
      name: network.name,
      marketplace: network.marketplaceAddress,
      currencies: network.currencies,
      collections: network.collections.map((c) => ({
        address: c.address,
        name: c.name,
        tokenIds: c.tokenIds,
        traits: c.traitValues.map((values) => Array.from(values.subarray(0, c.size))),
        numeric: c.numericValues.map((values) => Array.from(values.subarray(0, c.size))),
        owners: c.standard === 'ERC721' ? Array.from(c.owners.subarray(0, c.size)) : [],
        balances: c.balances.map((b) => [...b.entries()].map(([account, amount]) => [account, amount.toString()])),
      })),
      orders: [...network.book.byId.values()].map((o) => ({
        ...o,
        currency: o.currency.symbol,
        price: o.price.toString(),
        quantityInitial: o.quantityInitial.toString(),
        quantityRemaining: o.quantityRemaining.toString(),
      })),
    })),
    project: dataset.project,
  };
}

describe('devnet dataset', () => {
  const one = generateDataset({ seed: 1, scale: 'full', projectId: 16815 });

  it('GIVEN the same seed WHEN the dataset is generated twice THEN both are identical', () => {
    const again = generateDataset({ seed: 1, scale: 'full', projectId: 16815 });
    expect(snapshot(again)).toEqual(snapshot(one));
  });

  it('GIVEN another seed WHEN the dataset is generated THEN addresses, owners and orders differ', () => {
    const other = snapshot(generateDataset({ seed: 2, scale: 'full', projectId: 16815 }));
    const first = snapshot(one);
    expect(other.accounts).not.toEqual(first.accounts);
    expect(other.networks[0]?.collections[0]?.address).not.toEqual(first.networks[0]?.collections[0]?.address);
    expect(other.networks[0]?.orders).not.toEqual(first.networks[0]?.orders);
    expect(other.accessKey).not.toEqual(first.accessKey);
  });

  it('has two networks, each with collections of both token standards, one of 10,000 tokens', () => {
    expect(one.networks.map((n) => [n.name, n.chainId])).toEqual([
      ['devnet', 31337],
      ['devnet-l2', 31338],
    ]);
    for (const network of one.networks) {
      expect(network.collections.length).toBeGreaterThanOrEqual(4);
      expect(new Set(network.collections.map((c) => c.standard))).toEqual(new Set(['ERC721', 'ERC1155']));
    }
    const all = one.networks.flatMap((n) => n.collections);
    expect(all.some((c) => c.standard === 'ERC721' && c.size === 10_000)).toBe(true);
    expect(all.some((c) => c.standard === 'ERC1155' && c.size <= 12)).toBe(true);
    expect(Math.min(...all.map((c) => c.size))).toBeLessThanOrEqual(5);
    const names = all.map((c) => c.name);
    expect(names).toContain('Moon Cats');
    expect(names).toContain('Moon Cats Rescue');
  });

  it('has a hostile collection: markdown, HTML, mentions, a 10,000-character description, broken images', () => {
    const hostile = one.networks.flatMap((n) => n.collections).find((c) => c.blueprint.hostile);
    expect(hostile).toBeDefined();
    const overrides = [...(hostile?.overrides.values() ?? [])];
    const text = overrides.map((o) => `${o.name} ${o.description}`).join('\n');
    for (const needle of [
      '**',
      '||',
      '[here](http://evil',
      '<b>',
      '<script>',
      '@everyone',
      '@here',
      '<@123456789012345678>',
    ]) {
      expect(text).toContain(needle);
    }
    expect(overrides.some((o) => o.description?.length === 10_000)).toBe(true);
    expect(overrides.some((o) => o.image === 'javascript:alert(1)')).toBe(true);
    expect(overrides.some((o) => o.image?.startsWith('ipfs://'))).toBe(true);
    expect(hostile?.tokenIds).toContain(((1n << 256n) - 1n).toString());
  });

  it('prices orders in a native coin and a 6-decimal dollar token, on several marketplaces', () => {
    const network = one.networks[0];
    const currencies = network?.currencies ?? [];
    expect(currencies[0]).toMatchObject({ address: ZERO_ADDRESS, decimals: 18, native: true });
    expect(currencies.some((c) => c.decimals === 6 && c.usd === 1)).toBe(true);
    const orders = [...(network?.book.byId.values() ?? [])];
    expect(new Set(orders.map((o) => o.currency.symbol)).size).toBeGreaterThanOrEqual(2);
    expect(new Set(orders.map((o) => o.marketplace)).size).toBeGreaterThanOrEqual(3);
    expect(orders.some((o) => o.side === 'offer') && orders.some((o) => o.side === 'listing')).toBe(true);
    expect(orders.every((o) => o.priceUsd > 0)).toBe(true);
  });

  it('gives balances to thousands of accounts, and listings only by holders', () => {
    const holders = new Set<number>();
    for (const network of one.networks) {
      for (const c of network.collections) {
        for (let i = 0; i < c.size; i++) {
          if (c.standard === 'ERC721') holders.add(c.ownerOf(i));
          else for (const account of c.balances[i]?.keys() ?? []) holders.add(account);
        }
        for (const tokens of network.book.activeTokens(c.address).values()) {
          for (const listing of tokens.listings) {
            const account = one.accounts.indexOf(listing.maker) ?? -1;
            expect(c.balanceOf(listing.tokenIndex, account)).toBeGreaterThanOrEqual(1n);
          }
        }
      }
    }
    expect(holders.size).toBeGreaterThanOrEqual(1_000);
  });

  it('derives a v1 access key that names the project', () => {
    const bytes = Buffer.from(one.accessKey, 'base64url');
    expect(bytes.length).toBe(26);
    expect(bytes[0]).toBe(1);
    expect(bytes.readBigUInt64BE(1)).toBe(16815n);
  });
});

describe('devnet events', () => {
  it('computes the topic hashes of shared/reference/chain-events.md', () => {
    expect(EVENTS.Transfer.topicHash).toBe(TOPICS.Transfer);
    expect(EVENTS.TransferERC20.topicHash).toBe(TOPICS.Transfer);
    expect(EVENTS.TransferSingle.topicHash).toBe(TOPICS.TransferSingle);
    expect(EVENTS.TransferBatch.topicHash).toBe(TOPICS.TransferBatch);
    expect(EVENTS.RequestCreated.topicHash).toBe(TOPICS.RequestCreated);
    expect(EVENTS.RequestAccepted.topicHash).toBe(TOPICS.RequestAccepted);
    expect(EVENTS.RequestCancelled.topicHash).toBe(TOPICS.RequestCancelled);
  });

  it('reads event filters with or without argument names and indexed', () => {
    const spellings = [
      'Transfer(address indexed from, address indexed to, uint256 indexed tokenId)',
      'Transfer(address indexed,address indexed,uint256)',
      'Transfer(address,address,uint)',
      'event Transfer(address from, address to, uint256 tokenId);',
      TOPICS.Transfer.toUpperCase().replace('0X', '0x'),
    ];
    for (const spelling of spellings) expect(topicOf(spelling)).toBe(TOPICS.Transfer);
    expect(
      canonicalSignature(
        'TransferBatch(address indexed operator, address indexed from, address indexed to, uint256[] ids, uint256[] values)',
      ),
    ).toBe('TransferBatch(address,address,address,uint256[],uint256[])');
    expect(topicOf('not an event')).toBeUndefined();
  });

  it('ABI-encodes logs: indexed arguments in topics, the rest in data', () => {
    const batch = encodeLog(EVENTS.TransferBatch, [
      '0x1111111111111111111111111111111111111111',
      ZERO_ADDRESS,
      '0x2222222222222222222222222222222222222222',
      [1n, 2n, 3n],
      [10n, 20n, 30n],
    ]);
    expect(batch.topics).toHaveLength(4);
    const [ids, values] = decodeAbiParameters(
      [{ type: 'uint256[]' }, { type: 'uint256[]' }],
      batch.data as `0x${string}`,
    );
    expect(ids).toEqual([1n, 2n, 3n]);
    expect(values).toEqual([10n, 20n, 30n]);
    expect(batch.values[3]).toBe('["1","2","3"]');

    const created = encodeLog(EVENTS.RequestCreated, [
      7n,
      '0x1111111111111111111111111111111111111111',
      '0x2222222222222222222222222222222222222222',
      42n,
      true,
      1n,
      ZERO_ADDRESS,
      1_500_000_000_000_000_000n,
      1_900_000_000n,
    ]);
    expect(created.topics).toHaveLength(4);
    const decoded = decodeAbiParameters(
      [
        { type: 'uint256' },
        { type: 'bool' },
        { type: 'uint256' },
        { type: 'address' },
        { type: 'uint256' },
        { type: 'uint256' },
      ],
      created.data as `0x${string}`,
    );
    expect(decoded).toEqual([42n, true, 1n, ZERO_ADDRESS, 1_500_000_000_000_000_000n, 1_900_000_000n]);
    expect(created.values).toEqual([
      '7',
      '0x1111111111111111111111111111111111111111',
      '0x2222222222222222222222222222222222222222',
      '42',
      'true',
      '1',
      ZERO_ADDRESS,
      '1500000000000000000',
      '1900000000',
    ]);
  });
});
