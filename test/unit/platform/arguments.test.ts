/**
 * Caller mistakes (unknown network, missing project, unknown enum name) and the enum translation
 * tables: every Promise-returning method reports them as a rejection and sends nothing.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  contractTypeToWire,
  marketplaceKindToWire,
  orderSideToWire,
  walletKindToWire,
} from '../../../src/platform/enums.ts';
import { type PlatformClient, UnknownNetworkError } from '../../../src/platform/index.ts';
import { expandTemplate, NetworkDirectory } from '../../../src/platform/networks.ts';
import { MARKETPLACE_KINDS, SPEC_MARKETPLACE_KINDS } from '../../../src/platform/types.ts';
import { ADDR, createTestClient } from '../../helpers/platform-fixtures.ts';
import { RpcTestServer } from '../../helpers/rpc-test-server.ts';

let server: RpcTestServer;
let client: PlatformClient;
let noProject: PlatformClient;

beforeEach(async () => {
  server = await RpcTestServer.start();
  client = createTestClient(server);
  noProject = createTestClient(server, { projectId: undefined });
});

afterEach(async () => {
  await server.close();
  await client.close();
  await noProject.close();
});

/** Calls `run` and returns its rejection; a synchronous throw fails the test. */
async function rejection(run: () => Promise<unknown>): Promise<unknown> {
  let promise: Promise<unknown>;
  try {
    promise = run();
  } catch (error) {
    throw new Error(`threw synchronously instead of rejecting: ${String(error)}`);
  }
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error,
  );
}

describe('caller mistakes are rejections, and nothing is sent', () => {
  const unknownNetworkCalls: Array<[string, (c: PlatformClient) => Promise<unknown>]> = [
    [
      'TokenCollectionFilters',
      (c) => c.metadata.tokenCollectionFilters({ network: 'nowhere', contractAddress: ADDR.collection }),
    ],
    ['SearchMetadata', (c) => c.metadata.searchMetadata({ filter: 'x', network: 999 })],
    [
      'ListListingsForCollectible',
      (c) => c.marketplace.listListingsForCollectible({ network: 'nowhere', contractAddress: 'a', tokenId: '1' }),
    ],
    [
      'GetHighestPriceListingForCollectible',
      (c) =>
        c.marketplace.getHighestPriceListingForCollectible({ network: 'nowhere', contractAddress: 'a', tokenId: '1' }),
    ],
    [
      'ListOffersForCollectible',
      (c) => c.marketplace.listOffersForCollectible({ network: 'nowhere', contractAddress: 'a', tokenId: '1' }),
    ],
    [
      'GetLowestPriceOfferForCollectible',
      (c) =>
        c.marketplace.getLowestPriceOfferForCollectible({ network: 'nowhere', contractAddress: 'a', tokenId: '1' }),
    ],
    ['GetCollectible', (c) => c.marketplace.getCollectible({ network: 'nowhere', contractAddress: 'a', tokenId: '1' })],
    ['GetOrders', (c) => c.marketplace.getOrders({ network: 'nowhere', input: [] })],
    [
      'ListCollectibles',
      (c) => c.marketplace.listCollectibles({ network: 'nowhere', side: 'listing', contractAddress: 'a' }),
    ],
    [
      'GenerateBuyTransaction',
      (c) =>
        c.marketplace.generateBuyTransaction({
          network: 'nowhere',
          collectionAddress: 'a',
          buyer: 'b',
          marketplace: 1,
          ordersData: [],
        }),
    ],
    [
      'GetTokenBalancesByContract',
      (c) => c.indexer.getTokenBalancesByContract({ network: 'nowhere', filter: { contractAddresses: [] } }),
    ],
    ['ListGasSponsors', (c) => c.relayer.listGasSponsors({ network: 'nowhere' })],
  ];

  it.each(unknownNetworkCalls)(
    'GIVEN an unknown network WHEN calling %s THEN it rejects with UnknownNetworkError',
    async (_, call) => {
      const error = await rejection(() => call(client));
      expect(error).toBeInstanceOf(UnknownNetworkError);
      expect((error as UnknownNetworkError).known).toEqual(['polygon', 'arbitrum-nova']);
      expect(server.requests).toHaveLength(0);
    },
  );

  const projectCalls: Array<[string, (c: PlatformClient) => Promise<unknown>]> = [
    ['ListContracts', (c) => c.builder.listContracts()],
    ['GetAudience', (c) => c.builder.getAudience({ audienceId: 1 })],
    ['ListGasSponsors', (c) => c.relayer.listGasSponsors({ network: 'polygon' })],
  ];

  it.each(projectCalls)(
    'GIVEN no project configured or given WHEN calling %s THEN it rejects with a RangeError naming the operation',
    async (name, call) => {
      const error = await rejection(() => call(noProject));
      expect(error).toBeInstanceOf(RangeError);
      expect((error as Error).message).toContain(name);
      expect(server.requests).toHaveLength(0);
    },
  );

  it('GIVEN an unknown marketplace name WHEN calling GenerateBuyTransaction THEN it rejects with a RangeError', async () => {
    const error = await rejection(() =>
      client.marketplace.generateBuyTransaction({
        network: 'polygon',
        collectionAddress: ADDR.collection,
        buyer: ADDR.buyer,
        marketplace: 'rarible' as never,
        ordersData: [],
      }),
    );
    expect(error).toBeInstanceOf(RangeError);
    expect(server.requests).toHaveLength(0);
  });

  it('GIVEN an unknown order side WHEN calling ListCollectibles THEN it rejects with a RangeError', async () => {
    const error = await rejection(() =>
      client.marketplace.listCollectibles({ network: 'polygon', side: 7, contractAddress: ADDR.collection }),
    );
    expect(error).toBeInstanceOf(RangeError);
  });

  it('GIVEN an unknown contract type WHEN calling SearchMetadata THEN it rejects with a RangeError', async () => {
    const error = await rejection(() => client.metadata.searchMetadata({ filter: 'x', types: ['ERC9999' as never] }));
    expect(error).toBeInstanceOf(RangeError);
  });
});

describe('enum names on the wire', () => {
  it('maps every spec stand-in and every position of the marketplace enumeration to the real name', () => {
    SPEC_MARKETPLACE_KINDS.forEach((spec, position) => {
      expect(marketplaceKindToWire(spec)).toBe(MARKETPLACE_KINDS[position]);
      expect(marketplaceKindToWire(position)).toBe(MARKETPLACE_KINDS[position]);
      expect(marketplaceKindToWire(MARKETPLACE_KINDS[position] as never)).toBe(MARKETPLACE_KINDS[position]);
    });
    expect(marketplaceKindToWire('external_marketplace_3')).toBe('opensea');
    expect(() => marketplaceKindToWire(12)).toThrow(RangeError);
    expect(() => marketplaceKindToWire(-1)).toThrow(RangeError);
  });

  it('maps the wallet kinds, the stand-in service being sequence', () => {
    expect(walletKindToWire('service')).toBe('sequence');
    expect(walletKindToWire('sequence')).toBe('sequence');
    expect(walletKindToWire('unknown')).toBe('unknown');
    expect(walletKindToWire(1)).toBe('sequence');
    expect(() => walletKindToWire(2)).toThrow(RangeError);
  });

  it('maps order sides and contract types by name or position', () => {
    expect(orderSideToWire(1)).toBe('listing');
    expect(orderSideToWire('offer')).toBe('offer');
    expect(() => orderSideToWire('bid' as never)).toThrow(RangeError);
    expect(contractTypeToWire(2)).toBe('ERC721');
    expect(contractTypeToWire('MISC')).toBe('MISC');
    expect(() => contractTypeToWire(9)).toThrow(RangeError);
  });
});

describe('networks', () => {
  it('finds networks by name (any case) or chain id (number or digits) and fills templates', () => {
    const networks = new NetworkDirectory([{ name: 'Polygon', chainId: 137 }]);
    expect(networks.resolve('polygon').chainId).toBe(137);
    expect(networks.resolve(' POLYGON ').chainId).toBe(137);
    expect(networks.resolve('137').name).toBe('Polygon');
    expect(networks.resolve(137).name).toBe('Polygon');
    expect(() => networks.resolve('mainnet')).toThrow(UnknownNetworkError);
    expect(expandTemplate('https://{network}-indexer.example/{network}', { name: 'base', chainId: 8453 })).toBe(
      'https://base-indexer.example/base',
    );
  });
});
