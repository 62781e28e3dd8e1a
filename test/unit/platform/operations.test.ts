/**
 * Every one of the 20 operations against a real local HTTP server: what goes on the wire (path,
 * method, headers, exact JSON body) and the typed result that comes back from real-server shapes.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PlatformClient } from '../../../src/platform/index.ts';
import {
  ACCESS_KEY,
  ADDR,
  createTestClient,
  PROJECT_ID,
  SECRET_TOKEN,
  typedOrder,
  typedTokenMetadata,
  wireContractInfo,
  wireEventLog,
  wireOrder,
  wireReceipt,
  wireTokenMetadata,
} from '../../helpers/platform-fixtures.ts';
import { type RecordedRequest, RpcTestServer, reply } from '../../helpers/rpc-test-server.ts';

let server: RpcTestServer;
let client: PlatformClient;

beforeEach(async () => {
  server = await RpcTestServer.start();
  client = createTestClient(server);
});

afterEach(async () => {
  await server.close();
  await client.close();
});

function expectJsonPost(req: RecordedRequest): void {
  expect(req.method).toBe('POST');
  expect(req.headers['content-type']).toBe('application/json');
}

/** Public operations: the access key, never the bearer token. */
function expectAccessKeyOnly(req: RecordedRequest): void {
  expectJsonPost(req);
  expect(req.headers['x-access-key']).toBe(ACCESS_KEY);
  expect(req.headers.authorization).toBeUndefined();
}

function expectBearerOnly(req: RecordedRequest): void {
  expectJsonPost(req);
  expect(req.headers.authorization).toBe(`Bearer ${SECRET_TOKEN}`);
  expect(req.headers['x-access-key']).toBeUndefined();
}

function expectBothCredentials(req: RecordedRequest): void {
  expectJsonPost(req);
  expect(req.headers.authorization).toBe(`Bearer ${SECRET_TOKEN}`);
  expect(req.headers['x-access-key']).toBe(ACCESS_KEY);
}

describe('Metadata service', () => {
  const path = '/meta/rpc/Metadata/TokenCollectionFilters';

  it('GIVEN TokenCollectionFilters WHEN called THEN it posts chainID and chainId as strings with the access key and returns typed filters', async () => {
    server.route(
      path,
      reply.json({
        filters: [
          { name: 'Color', type: 'STRING', min: null, max: null, values: ['Red', 'Blue'] },
          { name: 'Level', type: 'INT', min: 1, max: 99, values: null, future: 'kept' },
        ],
      }),
    );

    const filters = await client.metadata.tokenCollectionFilters({
      network: 'polygon',
      contractAddress: ADDR.collection,
    });

    const req = server.onlyRequestTo(path);
    expectAccessKeyOnly(req);
    expect(req.body).toEqual({ chainID: '137', chainId: '137', contractAddress: ADDR.collection });
    expect(filters).toEqual([
      { name: 'Color', type: 'STRING', min: null, max: null, values: ['Red', 'Blue'] },
      { name: 'Level', type: 'INT', min: 1, max: 99, values: [], future: 'kept' },
    ]);
  });

  it('GIVEN TokenCollectionFilters WHEN the server sends filters: null THEN the result is an empty list', async () => {
    server.route(path, reply.json({ filters: null }));
    await expect(
      client.metadata.tokenCollectionFilters({ network: 137, contractAddress: ADDR.collection }),
    ).resolves.toEqual([]);
  });

  it('GIVEN SearchMetadata with a network and spec contract types WHEN called THEN it sends chainID and type names and normalises both lists', async () => {
    const searchPath = '/meta/rpc/Metadata/SearchMetadata';
    server.route(
      searchPath,
      reply.json({
        tokenMetadata: [
          wireTokenMetadata({ queuedAt: null, lastFetched: '2025-01-04T00:00:00Z', chainId: 137, source: 'metadata' }),
        ],
        contractInfo: [wireContractInfo()],
      }),
    );

    const result = await client.metadata.searchMetadata({
      filter: 'dragon',
      network: 137,
      types: ['ERC721', 3],
      excludeTokenMetadata: false,
    });

    const req = server.onlyRequestTo(searchPath);
    expectAccessKeyOnly(req);
    expect(req.body).toEqual({
      filter: 'dragon',
      chainID: '137',
      types: ['ERC721', 'ERC1155'],
      excludeTokenMetadata: false,
    });
    expect(result.tokenMetadata).toEqual([
      typedTokenMetadata({ lastFetched: '2025-01-04T00:00:00Z', chainId: 137, source: 'metadata' }),
    ]);
    expect(result.contractInfo).toEqual([
      {
        chainId: 137,
        address: ADDR.collection,
        source: 'indexer',
        name: 'Dragons',
        type: 'ERC721',
        symbol: 'DRG',
        logoURI: 'https://img.example/logo.png',
        deployed: true,
        bytecodeHash: '0xbeef',
        extensions: { link: 'https://dragons.example', verified: true, originChainId: 137 },
        updatedAt: '2025-01-01T00:00:00Z',
        status: 'AVAILABLE',
      },
    ]);
  });

  it('GIVEN SearchMetadata without a network WHEN called THEN only the given fields are sent and missing lists read as empty', async () => {
    const searchPath = '/meta/rpc/Metadata/SearchMetadata';
    server.route(searchPath, reply.json({}));
    const result = await client.metadata.searchMetadata({ filter: 'dragon' });
    expect(server.onlyRequestTo(searchPath).body).toEqual({ filter: 'dragon' });
    expect(result).toEqual({ tokenMetadata: [], contractInfo: [] });
  });

  it('GIVEN spec-spelled (camelCase) metadata keys WHEN read THEN they are kept as they are', async () => {
    const searchPath = '/meta/rpc/Metadata/SearchMetadata';
    server.route(
      searchPath,
      reply.json({
        tokenMetadata: [{ tokenId: 7, name: 'Seven', attributes: null, imageData: 'x', externalUrl: 'https://e' }],
      }),
    );
    const { tokenMetadata } = await client.metadata.searchMetadata({ filter: 'seven' });
    expect(tokenMetadata).toEqual([
      { tokenId: '7', name: 'Seven', attributes: [], imageData: 'x', externalUrl: 'https://e' },
    ]);
  });
});

describe('Collections service', () => {
  const path = '/meta/rpc/Collections/UnpublishCollection';

  it('GIVEN UnpublishCollection WHEN called THEN it carries only the bearer token, defaults the project and returns the collection', async () => {
    server.route(
      path,
      reply.json({
        collection: {
          id: 7,
          projectId: PROJECT_ID,
          metadata: {
            name: 'Dragons',
            description: 'Fire',
            external_link: 'https://dragons.example',
            properties: { funCollection: true, maxNfts: 100, minNfts: 1 },
            image: null,
          },
          private: true,
          revealKey: null,
          createdAt: '2025-01-01T00:00:00Z',
          updatedAt: '2025-01-05T00:00:00Z',
        },
      }),
    );

    const collection = await client.collections.unpublishCollection({ collectionId: 7 });

    const req = server.onlyRequestTo(path);
    expectBearerOnly(req);
    expect(req.body).toEqual({ projectId: PROJECT_ID, collectionId: 7 });
    expect(collection).toEqual({
      id: 7,
      projectId: PROJECT_ID,
      metadata: {
        name: 'Dragons',
        description: 'Fire',
        externalLink: 'https://dragons.example',
        properties: { funCollection: true, maxNfts: 100, minNfts: 1 },
      },
      private: true,
      createdAt: '2025-01-01T00:00:00Z',
      updatedAt: '2025-01-05T00:00:00Z',
    });
  });

  it('GIVEN an explicit projectId WHEN unpublishing THEN it overrides the client default', async () => {
    server.route(path, reply.json({ collection: { id: 8, projectId: 5, metadata: { name: 'X' }, private: false } }));
    await client.collections.unpublishCollection({ collectionId: 8, projectId: 5 });
    expect(server.onlyRequestTo(path).body).toEqual({ projectId: 5, collectionId: 8 });
  });
});

describe('Marketplace service', () => {
  const mk = (op: string) => `/mk/polygon/rpc/Marketplace/${op}`;
  const page = { page: 2, pageSize: 3, more: true, sort: [{ column: 'price', order: 'ASC' }] };

  it('GIVEN ListListingsForCollectible with spec marketplace names WHEN called THEN the network fills the path, chainId is a string and names are the real ones', async () => {
    server.route(
      mk('ListListingsForCollectible'),
      reply.json({ listings: [wireOrder(), wireOrder({ orderId: '2' })], page }),
    );

    const result = await client.marketplace.listListingsForCollectible({
      network: 'polygon',
      contractAddress: ADDR.collection,
      tokenId: '42',
      filter: {
        createdBy: [ADDR.seller],
        marketplace: ['service_marketplace_v1', 'external_marketplace_3', 'blur', 2],
        currencies: [ADDR.currency],
      },
      page: { page: 1, pageSize: 3 },
    });

    const req = server.onlyRequestTo(mk('ListListingsForCollectible'));
    expectAccessKeyOnly(req);
    expect(req.body).toEqual({
      chainId: '137',
      contractAddress: ADDR.collection,
      tokenId: '42',
      filter: {
        createdBy: [ADDR.seller],
        marketplace: ['sequence_marketplace_v1', 'opensea', 'blur', 'sequence_marketplace_v2'],
        currencies: [ADDR.currency],
      },
      page: { page: 1, pageSize: 3 },
    });
    expect(result).toEqual({ listings: [typedOrder(), typedOrder({ orderId: '2' })], page });
  });

  it('GIVEN a network given by chain id WHEN calling the marketplace THEN the path carries the network name', async () => {
    server.route('/mk/arbitrum-nova/rpc/Marketplace/ListListingsForCollectible', reply.json({ listings: null }));
    const result = await client.marketplace.listListingsForCollectible({
      network: 42170,
      contractAddress: ADDR.collection,
      tokenId: '1',
    });
    const req = server.onlyRequestTo('/mk/arbitrum-nova/rpc/Marketplace/ListListingsForCollectible');
    expect(req.body).toEqual({ chainId: '42170', contractAddress: ADDR.collection, tokenId: '1' });
    expect(result).toEqual({ listings: [], page: {} });
  });

  it('GIVEN GetHighestPriceListingForCollectible WHEN called THEN it sends the filter and returns the order', async () => {
    server.route(mk('GetHighestPriceListingForCollectible'), reply.json({ order: wireOrder({ feeBreakdown: null }) }));

    const order = await client.marketplace.getHighestPriceListingForCollectible({
      network: 'polygon',
      contractAddress: ADDR.collection,
      tokenId: '42',
      filter: { marketplace: ['service_marketplace_v2'] },
    });

    const req = server.onlyRequestTo(mk('GetHighestPriceListingForCollectible'));
    expectAccessKeyOnly(req);
    expect(req.body).toEqual({
      chainId: '137',
      contractAddress: ADDR.collection,
      tokenId: '42',
      filter: { marketplace: ['sequence_marketplace_v2'] },
    });
    expect(order).toEqual(typedOrder({ feeBreakdown: [] }));
  });

  it('GIVEN GetHighestPriceListingForCollectible WHEN the server sends order: null THEN the result is undefined', async () => {
    server.route(mk('GetHighestPriceListingForCollectible'), reply.json({ order: null }));
    await expect(
      client.marketplace.getHighestPriceListingForCollectible({
        network: 'polygon',
        contractAddress: ADDR.collection,
        tokenId: '42',
      }),
    ).resolves.toBeUndefined();
  });

  it('GIVEN ListOffersForCollectible WHEN called THEN it sends the page and returns offers (collection offers without tokenId)', async () => {
    server.route(mk('ListOffersForCollectible'), reply.json({ offers: [wireOrder({ side: 'offer', tokenId: null })] }));

    const result = await client.marketplace.listOffersForCollectible({
      network: 'polygon',
      contractAddress: ADDR.collection,
      tokenId: '42',
      page: { page: 0, pageSize: 50 },
    });

    const req = server.onlyRequestTo(mk('ListOffersForCollectible'));
    expectAccessKeyOnly(req);
    expect(req.body).toEqual({
      chainId: '137',
      contractAddress: ADDR.collection,
      tokenId: '42',
      page: { page: 0, pageSize: 50 },
    });
    expect(result.offers).toEqual([typedOrder({ side: 'offer', tokenId: null })]);
    expect(result.offers[0]).not.toHaveProperty('tokenId');
    expect(result.page).toEqual({});
  });

  it('GIVEN GetLowestPriceOfferForCollectible WHEN called THEN it returns the order, numeric marketplace read as its name', async () => {
    server.route(
      mk('GetLowestPriceOfferForCollectible'),
      reply.json({ order: wireOrder({ side: 'offer', marketplace: 5 }) }),
    );

    const order = await client.marketplace.getLowestPriceOfferForCollectible({
      network: 'polygon',
      contractAddress: ADDR.collection,
      tokenId: '42',
      filter: { currencies: [ADDR.currency] },
    });

    const req = server.onlyRequestTo(mk('GetLowestPriceOfferForCollectible'));
    expectAccessKeyOnly(req);
    expect(req.body).toEqual({
      chainId: '137',
      contractAddress: ADDR.collection,
      tokenId: '42',
      filter: { currencies: [ADDR.currency] },
    });
    expect(order).toEqual(typedOrder({ side: 'offer', marketplace: 'opensea' }));
  });

  it('GIVEN GetCollectible WHEN the server sends snake_case metadata THEN the result has camelCase keys and no nulls', async () => {
    server.route(mk('GetCollectible'), reply.json({ metadata: wireTokenMetadata({ video: null, brandNew: [1, 2] }) }));

    const metadata = await client.marketplace.getCollectible({
      network: 'polygon',
      contractAddress: ADDR.collection,
      tokenId: '42',
    });

    const req = server.onlyRequestTo(mk('GetCollectible'));
    expectAccessKeyOnly(req);
    expect(req.body).toEqual({ chainId: '137', contractAddress: ADDR.collection, tokenId: '42' });
    expect(metadata).toEqual(typedTokenMetadata({ brandNew: [1, 2] }));
    expect(metadata).not.toHaveProperty('image_data');
    expect(metadata).not.toHaveProperty('properties');
  });

  it('GIVEN GetCollectible WHEN optional metadata fields are missing THEN the minimal record is returned', async () => {
    server.route(mk('GetCollectible'), reply.json({ metadata: { tokenId: '1', name: 'One', attributes: [] } }));
    await expect(
      client.marketplace.getCollectible({ network: 'polygon', contractAddress: ADDR.collection, tokenId: '1' }),
    ).resolves.toEqual({ tokenId: '1', name: 'One', attributes: [] });
  });

  it('GIVEN GetOrders inputs without a marketplace WHEN called THEN each input gets the platform marketplace and given ones are translated', async () => {
    server.route(mk('GetOrders'), reply.json({ orders: [wireOrder()], page: { page: 1, pageSize: 2, more: false } }));

    const result = await client.marketplace.getOrders({
      network: 'polygon',
      input: [
        { contractAddress: ADDR.collection, orderId: '8745' },
        { contractAddress: ADDR.collection, orderId: '99', marketplace: 'external_marketplace_3' },
      ],
      page: { page: 1, pageSize: 2 },
    });

    const req = server.onlyRequestTo(mk('GetOrders'));
    expectAccessKeyOnly(req);
    expect(req.body).toEqual({
      chainId: '137',
      input: [
        { contractAddress: ADDR.collection, orderId: '8745', marketplace: 'sequence_marketplace_v2' },
        { contractAddress: ADDR.collection, orderId: '99', marketplace: 'opensea' },
      ],
      page: { page: 1, pageSize: 2 },
    });
    expect(result).toEqual({ orders: [typedOrder()], page: { page: 1, pageSize: 2, more: false } });
  });

  it('GIVEN ListCollectibles WHEN called THEN side and marketplaces are names, includeEmpty is defaulted and null orders are dropped', async () => {
    server.route(
      mk('ListCollectibles'),
      reply.json({
        collectibles: [
          { metadata: wireTokenMetadata(), order: wireOrder(), listing: wireOrder(), offer: null },
          {
            metadata: { tokenId: '43', name: 'Dragon #43', attributes: null },
            order: null,
            listing: null,
            offer: null,
          },
        ],
        page: { page: 1, pageSize: 2, more: true },
      }),
    );

    const result = await client.marketplace.listCollectibles({
      network: 'polygon',
      side: 'listing',
      contractAddress: ADDR.collection,
      filter: { searchText: 'dragon', marketplaces: ['service_marketplace_v1', 11] },
      page: { page: 1, pageSize: 2 },
    });

    const req = server.onlyRequestTo(mk('ListCollectibles'));
    expectAccessKeyOnly(req);
    expect(req.body).toEqual({
      chainId: '137',
      side: 'listing',
      contractAddress: ADDR.collection,
      filter: { searchText: 'dragon', includeEmpty: false, marketplaces: ['sequence_marketplace_v1', 'magic_eden'] },
      page: { page: 1, pageSize: 2 },
    });
    expect(result).toEqual({
      collectibles: [
        { metadata: typedTokenMetadata(), order: typedOrder(), listing: typedOrder() },
        { metadata: { tokenId: '43', name: 'Dragon #43', attributes: [] } },
      ],
      page: { page: 1, pageSize: 2, more: true },
    });
  });

  it('GIVEN ListCollectibles with a side position and no filter WHEN called THEN the side is sent by name and no filter key is sent', async () => {
    server.route(mk('ListCollectibles'), reply.json({ collectibles: null }));
    await client.marketplace.listCollectibles({ network: 'polygon', side: 2, contractAddress: ADDR.collection });
    expect(server.onlyRequestTo(mk('ListCollectibles')).body).toEqual({
      chainId: '137',
      side: 'offer',
      contractAddress: ADDR.collection,
    });
  });

  it('GIVEN GenerateBuyTransaction with spec enum names WHEN called THEN real names are sent and the steps are returned', async () => {
    const steps = [
      {
        id: 'tokenApproval',
        data: '0x095ea7b3',
        to: ADDR.currency,
        value: '0',
        price: '0',
        signature: null,
        post: null,
        executeType: null,
      },
      { id: 'buy', data: '0xabcdef', to: ADDR.collection, value: '1500000000000000000', price: '1500000000000000000' },
    ];
    server.route(mk('GenerateBuyTransaction'), reply.json({ steps }));

    const result = await client.marketplace.generateBuyTransaction({
      network: 'polygon',
      collectionAddress: ADDR.collection,
      buyer: ADDR.buyer,
      marketplace: 'service_marketplace_v2',
      ordersData: [{ orderId: '8745', quantity: '1', tokenId: '42' }],
      additionalFees: [{ amount: '100', receiver: ADDR.feeRecipient }],
      walletType: 'service',
    });

    const req = server.onlyRequestTo(mk('GenerateBuyTransaction'));
    expectAccessKeyOnly(req);
    expect(req.body).toEqual({
      chainId: '137',
      collectionAddress: ADDR.collection,
      buyer: ADDR.buyer,
      marketplace: 'sequence_marketplace_v2',
      ordersData: [{ orderId: '8745', quantity: '1', tokenId: '42' }],
      additionalFees: [{ amount: '100', receiver: ADDR.feeRecipient }],
      walletType: 'sequence',
    });
    expect(result).toEqual([
      { id: 'tokenApproval', data: '0x095ea7b3', to: ADDR.currency, value: '0', price: '0' },
      { id: 'buy', data: '0xabcdef', to: ADDR.collection, value: '1500000000000000000', price: '1500000000000000000' },
    ]);
  });

  it('GIVEN GenerateBuyTransaction WHEN the server sends steps: null and the steps under resp THEN the resp.steps are used', async () => {
    const signature = {
      domain: { name: 'Seaport', version: '1.6', chainId: 137, verifyingContract: ADDR.items },
      types: { Order: [] },
      primaryType: 'Order',
      value: { offerer: ADDR.buyer },
    };
    server.route(
      mk('GenerateBuyTransaction'),
      reply.json({
        resp: {
          steps: [{ id: 'signEIP712', signature, post: { endpoint: '/x', method: 'POST', body: { a: 1 } } }],
          canBeUsedWithTrails: false,
        },
        steps: null,
      }),
    );

    const result = await client.marketplace.generateBuyTransaction({
      network: 'polygon',
      collectionAddress: ADDR.collection,
      buyer: ADDR.buyer,
      marketplace: 'opensea',
      ordersData: [{ orderId: '1', quantity: '1' }],
    });

    expect(server.onlyRequestTo(mk('GenerateBuyTransaction')).body).toEqual({
      chainId: '137',
      collectionAddress: ADDR.collection,
      buyer: ADDR.buyer,
      marketplace: 'opensea',
      ordersData: [{ orderId: '1', quantity: '1' }],
      additionalFees: [],
    });
    expect(result).toEqual([
      {
        id: 'signEIP712',
        data: '',
        to: '',
        value: '',
        price: '',
        signature,
        post: { endpoint: '/x', method: 'POST', body: { a: 1 } },
      },
    ]);
  });
});

describe('Indexer service', () => {
  const idx = (op: string) => `/idx/polygon/rpc/Indexer/${op}`;

  it('GIVEN GetTokenBalancesByContract WHEN called THEN the network fills the indexer address and balances come back normalised', async () => {
    server.route(
      idx('GetTokenBalancesByContract'),
      reply.json({
        page: { page: 1, pageSize: 50, more: false, column: 'id', before: null, after: 123 },
        balances: [
          {
            contractType: 'ERC721',
            contractAddress: ADDR.collection,
            accountAddress: ADDR.buyer,
            tokenID: '42',
            balance: '1',
            blockHash: `0x${'aa'.repeat(32)}`,
            blockNumber: 61000000,
            chainId: 137,
            uniqueCollectibles: '0',
            isSummary: false,
            contractInfo: wireContractInfo({ extensions: null }),
            tokenMetadata: wireTokenMetadata({ queuedAt: null }),
            priceUpdatedAt: null,
          },
        ],
      }),
    );

    const result = await client.indexer.getTokenBalancesByContract({
      network: 'polygon',
      filter: { contractAddresses: [ADDR.collection], accountAddresses: [ADDR.buyer], contractStatus: 'ALL' },
      omitMetadata: false,
      page: { pageSize: 50 },
    });

    const req = server.onlyRequestTo(idx('GetTokenBalancesByContract'));
    expectAccessKeyOnly(req);
    expect(req.body).toEqual({
      filter: { contractAddresses: [ADDR.collection], accountAddresses: [ADDR.buyer], contractStatus: 'ALL' },
      omitMetadata: false,
      page: { pageSize: 50 },
    });
    const { extensions: _extensions, queuedAt: _queuedAt, ...contractInfo } = wireContractInfo();
    expect(result).toEqual({
      page: { page: 1, pageSize: 50, more: false, column: 'id', after: 123 },
      balances: [
        {
          contractType: 'ERC721',
          contractAddress: ADDR.collection,
          accountAddress: ADDR.buyer,
          tokenID: '42',
          balance: '1',
          blockHash: `0x${'aa'.repeat(32)}`,
          blockNumber: 61000000,
          chainId: 137,
          uniqueCollectibles: '0',
          isSummary: false,
          contractInfo,
          tokenMetadata: typedTokenMetadata(),
        },
      ],
    });
  });

  it('GIVEN SubscribeEvents WHEN opened THEN it posts the filter with the access key to the network indexer and yields typed logs', async () => {
    server.route(idx('SubscribeEvents'), reply.stream());
    const controller = new AbortController();
    const events = client.indexer.subscribeEvents(
      {
        network: 'polygon',
        filter: {
          events: ['Transfer(address indexed from, address indexed to, uint256 indexed tokenId)'],
          contractAddresses: [ADDR.collection],
        },
      },
      { signal: controller.signal },
    );
    const first = events.next();
    const stream = await server.nextStream(idx('SubscribeEvents'));
    await stream.send({ log: wireEventLog(1) });

    const { value } = await first;
    controller.abort();
    await events.return(undefined);

    expectAccessKeyOnly(stream.request);
    expect(stream.request.body).toEqual({
      filter: {
        events: ['Transfer(address indexed from, address indexed to, uint256 indexed tokenId)'],
        contractAddresses: [ADDR.collection],
      },
    });
    const expected = wireEventLog(1);
    delete expected.rawLog;
    expect(value).toEqual(expected);
  });

  it('GIVEN SubscribeReceipts WHEN opened THEN it posts the filter and yields typed receipts', async () => {
    server.route(idx('SubscribeReceipts'), reply.stream());
    const controller = new AbortController();
    const receipts = client.indexer.subscribeReceipts(
      { network: 137, filter: { contractAddress: ADDR.collection, event: 'Transfer' } },
      { signal: controller.signal },
    );
    const first = receipts.next();
    const stream = await server.nextStream(idx('SubscribeReceipts'));
    await stream.send({ receipt: wireReceipt({ logs: null, extra: true }) });

    const { value } = await first;
    controller.abort();
    await receipts.return(undefined);

    expectAccessKeyOnly(stream.request);
    expect(stream.request.body).toEqual({ filter: { contractAddress: ADDR.collection, event: 'Transfer' } });
    expect(value).toEqual(wireReceipt({ logs: [], extra: true }));
  });

  it('GIVEN an indexer host template WHEN a network is used THEN the network fills the host', async () => {
    const hostClient = createTestClient(server, {
      endpoints: {
        metadataUrl: server.url,
        marketplaceUrl: server.url,
        relayerUrl: server.url,
        apiUrl: server.url,
        indexerUrl: `http://{network}:${server.port}`,
      },
      networks: [{ name: '127.0.0.1', chainId: 31337 }],
    });
    try {
      server.route('/rpc/Indexer/GetTokenBalancesByContract', reply.json({ balances: [] }));
      await hostClient.indexer.getTokenBalancesByContract({ network: 31337, filter: { contractAddresses: [] } });
      expect(server.onlyRequestTo('/rpc/Indexer/GetTokenBalancesByContract').headers.host).toBe(
        `127.0.0.1:${server.port}`,
      );
    } finally {
      await hostClient.close();
    }
  });
});

describe('Builder service', () => {
  const api = (op: string) => `/api/rpc/Builder/${op}`;

  it('GIVEN ListContractSources WHEN called THEN it sends the default project and keeps a null projectId', async () => {
    server.route(
      api('ListContractSources'),
      reply.json({
        page: { page: 1, pageSize: 20, more: false },
        contractSources: [
          {
            id: 1,
            uid: 'erc721-items',
            contractType: 'ERC721',
            projectId: null,
            name: 'Items',
            description: 'NFT items',
            author: 'Platform',
            license: 'MIT',
            audited: true,
            moreInfoUrl: '',
            disabled: false,
            factorySourceUid: '',
            abi: '[]',
            bytecode: '0x60',
            createdAt: '2025-01-01T00:00:00Z',
            updatedAt: '2025-01-01T00:00:00Z',
          },
        ],
      }),
    );

    const result = await client.builder.listContractSources({ page: { page: 1, pageSize: 20 } });

    const req = server.onlyRequestTo(api('ListContractSources'));
    expectAccessKeyOnly(req);
    expect(req.body).toEqual({ projectId: PROJECT_ID, page: { page: 1, pageSize: 20 } });
    expect(result.page).toEqual({ page: 1, pageSize: 20, more: false });
    expect(result.contractSources).toHaveLength(1);
    expect(result.contractSources[0]?.projectId).toBeNull();
    expect(result.contractSources[0]?.uid).toBe('erc721-items');
  });

  it('GIVEN ListContracts with a contract type WHEN called THEN both the spec filter and the newer list are sent and bytecode_hash is renamed', async () => {
    server.route(
      api('ListContracts'),
      reply.json({
        page: { page: 1, pageSize: 10 },
        contracts: [
          {
            id: 3,
            projectId: PROJECT_ID,
            contractName: 'Dragons',
            contractAddress: ADDR.collection,
            contractType: 'ERC721',
            chainId: 137,
            source: 'DEPLOYED',
            bytecode_hash: '0xhash',
            audienceId: null,
            contractExtensions: { itemsContractAddress: ADDR.items },
            tags: null,
            createdAt: '2025-01-01T00:00:00Z',
            updatedAt: '2025-01-01T00:00:00Z',
          },
        ],
      }),
    );

    const result = await client.builder.listContracts({ filter: { chainId: 137, contractType: 'ERC721' } });

    const req = server.onlyRequestTo(api('ListContracts'));
    expectAccessKeyOnly(req);
    expect(req.body).toEqual({
      projectId: PROJECT_ID,
      filter: { chainId: 137, contractType: 'ERC721', contractTypes: ['ERC721'] },
    });
    expect(result).toEqual({
      page: { page: 1, pageSize: 10 },
      contracts: [
        {
          id: 3,
          projectId: PROJECT_ID,
          contractName: 'Dragons',
          contractAddress: ADDR.collection,
          contractType: 'ERC721',
          chainId: 137,
          source: 'DEPLOYED',
          bytecodeHash: '0xhash',
          audienceId: null,
          contractExtensions: { itemsContractAddress: ADDR.items },
          itemsContractAddress: ADDR.items,
          createdAt: '2025-01-01T00:00:00Z',
          updatedAt: '2025-01-01T00:00:00Z',
        },
      ],
    });
  });

  it('GIVEN GetAudience WHEN a newer server sends no contacts THEN contacts is empty and deletedAt stays null', async () => {
    server.route(
      api('GetAudience'),
      reply.json({
        audience: {
          id: 4,
          projectId: PROJECT_ID,
          name: 'Allowlist',
          contactCount: 0,
          createdAt: '2025-01-01T00:00:00Z',
          updatedAt: '2025-01-01T00:00:00Z',
          deletedAt: null,
        },
        contracts: [],
      }),
    );

    const result = await client.builder.getAudience({ audienceId: 4 });

    const req = server.onlyRequestTo(api('GetAudience'));
    expectAccessKeyOnly(req);
    expect(req.body).toEqual({ projectId: PROJECT_ID, audienceId: 4 });
    expect(result).toEqual({
      audience: {
        id: 4,
        projectId: PROJECT_ID,
        name: 'Allowlist',
        contactCount: 0,
        createdAt: '2025-01-01T00:00:00Z',
        updatedAt: '2025-01-01T00:00:00Z',
        deletedAt: null,
      },
      contacts: [],
      contracts: [],
    });
  });

  it('GIVEN GetAudience WHEN an older server sends contacts THEN they are returned', async () => {
    server.route(
      api('GetAudience'),
      reply.json({
        audience: { id: 4, projectId: 1, name: 'A', contactCount: 1, createdAt: 'c', updatedAt: 'u' },
        contacts: [{ id: 1, audienceId: 4, address: ADDR.buyer, name: 'Ann', email: 'a@x', user_ip: '1.2.3.4' }],
        contracts: null,
      }),
    );
    const result = await client.builder.getAudience({ projectId: 1, audienceId: 4 });
    expect(server.onlyRequestTo(api('GetAudience')).body).toEqual({ projectId: 1, audienceId: 4 });
    expect(result.contacts).toEqual([
      { id: 1, audienceId: 4, address: ADDR.buyer, name: 'Ann', email: 'a@x', user_ip: '1.2.3.4' },
    ]);
    expect(result.contracts).toEqual([]);
    expect(result.audience.deletedAt).toBeNull();
  });
});

describe('Relayer service', () => {
  it('GIVEN ListGasSponsors WHEN called THEN the network fills the relayer address and sponsors come back typed', async () => {
    const path = '/rel/polygon/rpc/Relayer/ListGasSponsors';
    const page = { pageSize: 10, page: 1, more: false, column: 'id', sort: [{ column: 'id', order: 'DESC' }] };
    server.route(
      path,
      reply.json({
        page,
        gasSponsors: [
          {
            id: 1,
            gasTankId: 2,
            projectId: PROJECT_ID,
            ecosystemId: 9,
            chainId: 137,
            address: ADDR.buyer,
            name: 'Main wallet',
            active: true,
            updatedAt: null,
            createdAt: '2025-01-01T00:00:00Z',
          },
        ],
      }),
    );

    const result = await client.relayer.listGasSponsors({ network: 'polygon', page: { pageSize: 10 } });

    const req = server.onlyRequestTo(path);
    expectAccessKeyOnly(req);
    expect(req.body).toEqual({ projectId: PROJECT_ID, page: { pageSize: 10 } });
    expect(result).toEqual({
      page,
      gasSponsors: [
        {
          id: 1,
          gasTankId: 2,
          projectId: PROJECT_ID,
          ecosystemId: 9,
          chainId: 137,
          address: ADDR.buyer,
          name: 'Main wallet',
          active: true,
          createdAt: '2025-01-01T00:00:00Z',
        },
      ],
    });
  });
});

describe('Analytics service', () => {
  const filter = {
    startDate: '2025-01-01',
    endDate: '2025-01-07',
    collections: [ADDR.collection],
    tokenId: '42',
  };

  it('GIVEN WalletsTxnSentTotal WHEN called THEN it carries both credentials, defaults the project and returns the walletStats series', async () => {
    const path = '/api/rpc/Analytics/WalletsTxnSentTotal';
    server.route(
      path,
      reply.json({
        walletStats: [
          { value: 12, label: '2025-01-01' },
          { value: 3.5, label: '2025-01-02', extra: 1 },
        ],
      }),
    );

    const points = await client.analytics.walletsTxnSentTotal(filter);

    const req = server.onlyRequestTo(path);
    expectBothCredentials(req);
    expect(req.body).toEqual({ filter: { ...filter, projectId: PROJECT_ID } });
    expect(points).toEqual([
      { value: 12, label: '2025-01-01' },
      { value: 3.5, label: '2025-01-02' },
    ]);
  });

  it('GIVEN DailyWalletTxnConversionRate WHEN called THEN it carries both credentials and returns the marketStats series', async () => {
    const path = '/api/rpc/Analytics/DailyWalletTxnConversionRate';
    server.route(path, reply.json({ marketStats: [{ value: 0.25, label: '2025-01-01' }] }));

    const points = await client.analytics.dailyWalletTxnConversionRate({
      ...filter,
      projectId: 7,
      ecosystemId: 2,
      dateInterval: 'WEEK',
    });

    const req = server.onlyRequestTo(path);
    expectBothCredentials(req);
    expect(req.body).toEqual({ filter: { ...filter, projectId: 7, ecosystemId: 2, dateInterval: 'WEEK' } });
    expect(points).toEqual([{ value: 0.25, label: '2025-01-01' }]);
  });

  it('GIVEN an analytics answer with null stats WHEN read THEN the series is empty', async () => {
    server.route('/api/rpc/Analytics/DailyWalletTxnConversionRate', reply.json({ marketStats: null }));
    await expect(client.analytics.dailyWalletTxnConversionRate(filter)).resolves.toEqual([]);
  });
});

describe('hostile or odd records', () => {
  it('GIVEN a record with a "__proto__" key WHEN normalised THEN the key is ignored and cannot supply fields', async () => {
    const path = '/mk/polygon/rpc/Marketplace/GetCollectible';
    server.route(
      path,
      reply.text(
        '{"metadata":{"__proto__":{"tokenId":"999","polluted":true},"tokenId":"1","name":"One","attributes":[]}}',
        {
          headers: { 'content-type': 'application/json' },
        },
      ),
    );
    const metadata = await client.marketplace.getCollectible({
      network: 'polygon',
      contractAddress: ADDR.collection,
      tokenId: '1',
    });
    expect(Object.getPrototypeOf(metadata)).toBe(Object.prototype);
    expect((metadata as unknown as Record<string, unknown>).polluted).toBeUndefined();
    expect(metadata).toEqual({ tokenId: '1', name: 'One', attributes: [] });
  });

  it('GIVEN a record whose only tokenId is under "__proto__" WHEN normalised THEN it is a wrong shape', async () => {
    const path = '/mk/polygon/rpc/Marketplace/GetCollectible';
    server.route(path, reply.text('{"metadata":{"__proto__":{"tokenId":"999"},"name":"One","attributes":[]}}'));
    await expect(
      client.marketplace.getCollectible({ network: 'polygon', contractAddress: ADDR.collection, tokenId: '1' }),
    ).rejects.toThrow(/metadata\.tokenId/);
  });
});

describe('credentials', () => {
  it('GIVEN a client without credentials WHEN calling a public operation THEN neither credential header is sent', async () => {
    const bare = createTestClient(server, { accessKey: undefined, secretToken: undefined });
    try {
      server.route('/api/rpc/Analytics/WalletsTxnSentTotal', reply.json({ walletStats: [] }));
      await bare.analytics.walletsTxnSentTotal({ startDate: '2025-01-01', endDate: '2025-01-02' });
      const req = server.onlyRequestTo('/api/rpc/Analytics/WalletsTxnSentTotal');
      expect(req.headers['x-access-key']).toBeUndefined();
      expect(req.headers.authorization).toBeUndefined();
    } finally {
      await bare.close();
    }
  });
});
