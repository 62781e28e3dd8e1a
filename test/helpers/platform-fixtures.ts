/**
 * Shared pieces of the platform client tests: a client wired to an {@link RpcTestServer}, test
 * credentials, a recording sleep, and wire records shaped like what real servers send
 * (shared/reference/wire-protocol.md): snake_case keys, `null` for absent values, extra fields.
 */
import { PlatformClient, type PlatformClientOptions, type PlatformEndpoints } from '../../src/platform/index.ts';
import type { RpcTestServer } from './rpc-test-server.ts';

/** The spec's example key shape (version 1, project 16815). */
export const ACCESS_KEY = 'AQAAAAAAAEGvyZiWA9FMslYeG_yayXaHnSI';
export const SECRET_TOKEN = 'eyJhbGciOiJIUzI1NiJ9.eyJwcm9qZWN0IjoxNjgxNX0.c2VjcmV0LXNpZ25hdHVyZQ';
export const PROJECT_ID = 16815;

export const NETWORKS = [
  { name: 'polygon', chainId: 137 },
  { name: 'arbitrum-nova', chainId: 42170 },
];

/** Every base address on the test server, with the network in the path where the spec puts it in the address. */
export function endpointsFor(server: RpcTestServer): PlatformEndpoints {
  return {
    metadataUrl: `${server.url}/meta`,
    marketplaceUrl: `${server.url}/mk/{network}`,
    indexerUrl: `${server.url}/idx/{network}`,
    relayerUrl: `${server.url}/rel/{network}`,
    apiUrl: `${server.url}/api`,
  };
}

export type TestClientOptions = Partial<PlatformClientOptions>;

/** A client with both credentials, the test project, and no back-off waits unless overridden. */
export function createTestClient(server: RpcTestServer, options: TestClientOptions = {}): PlatformClient {
  return new PlatformClient({
    endpoints: endpointsFor(server),
    networks: NETWORKS,
    accessKey: ACCESS_KEY,
    secretToken: SECRET_TOKEN,
    projectId: PROJECT_ID,
    sleep: async () => undefined,
    ...options,
  });
}

/** A `TransportOptions.sleep` that returns at once and records what was asked for. */
export function recordingSleep(): { sleep: (ms: number) => Promise<void>; delays: number[] } {
  const delays: number[] = [];
  return {
    delays,
    sleep: async (ms: number) => {
      delays.push(ms);
    },
  };
}

export const ADDR = {
  collection: '0x1111111111111111111111111111111111111111',
  seller: '0x2222222222222222222222222222222222222222',
  buyer: '0x3333333333333333333333333333333333333333',
  currency: '0x4444444444444444444444444444444444444444',
  feeRecipient: '0x5555555555555555555555555555555555555555',
  items: '0x6666666666666666666666666666666666666666',
} as const;

/** An order as an installed marketplace server sends it. */
export function wireOrder(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    orderId: '8745',
    marketplace: 'sequence_marketplace_v2',
    side: 'listing',
    status: 'active',
    chainId: 137,
    originName: 'sequence',
    slug: 'polygon',
    collectionContractAddress: ADDR.collection,
    tokenId: '42',
    createdBy: ADDR.seller,
    priceAmount: '1500000000000000000',
    priceAmountFormatted: '1.5',
    priceAmountNet: '1455000000000000000',
    priceAmountNetFormatted: '1.455',
    priceCurrencyAddress: ADDR.currency,
    priceDecimals: 18,
    priceUSD: 1.23,
    priceUSDFormatted: '1.23',
    quantityInitial: '1',
    quantityInitialFormatted: '1',
    quantityRemaining: '1',
    quantityRemainingFormatted: '1',
    quantityAvailable: '1',
    quantityAvailableFormatted: '1',
    quantityDecimals: 0,
    feeBps: 300,
    feeBreakdown: [{ kind: 'marketplace', recipientAddress: ADDR.feeRecipient, bps: 300 }],
    validFrom: '2025-01-01T00:00:00Z',
    validUntil: '2026-01-01T00:00:00Z',
    blockNumber: 61234567,
    orderCreatedAt: null,
    orderUpdatedAt: null,
    createdAt: '2025-01-01T00:00:01Z',
    updatedAt: '2025-01-02T00:00:00Z',
    ...overrides,
  };
}

/** {@link wireOrder} as the client returns it: `null` values gone, unknown keys kept. */
export function typedOrder(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(wireOrder(overrides))) if (value !== null) out[key] = value;
  return out;
}

/** Marketplace token metadata with the real snake_case keys. */
export function wireTokenMetadata(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    tokenId: '42',
    name: 'Dragon #42',
    description: 'A red dragon',
    image: 'https://img.example/42.png',
    properties: null,
    attributes: [{ trait_type: 'Color', value: 'Red' }],
    image_data: '<svg/>',
    external_url: 'https://dragons.example/42',
    background_color: 'ffffff',
    animation_url: 'https://dragons.example/42.mp4',
    decimals: 0,
    updatedAt: '2025-01-03T00:00:00Z',
    assets: [
      {
        id: 9,
        collectionId: 5,
        tokenId: '42',
        metadataField: 'image',
        url: 'https://img.example/42.png',
        filename: '42.png',
        filesize: 1024,
        mimeType: 'image/png',
        width: 512,
        height: 512,
        updatedAt: '2025-01-03T00:00:00Z',
      },
    ],
    status: 'AVAILABLE',
    ...overrides,
  };
}

export function typedTokenMetadata(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const wire = wireTokenMetadata();
  const out: Record<string, unknown> = {
    tokenId: wire.tokenId,
    name: wire.name,
    description: wire.description,
    image: wire.image,
    attributes: wire.attributes,
    imageData: '<svg/>',
    externalUrl: 'https://dragons.example/42',
    backgroundColor: 'ffffff',
    animationUrl: 'https://dragons.example/42.mp4',
    decimals: 0,
    updatedAt: wire.updatedAt,
    assets: wire.assets,
    status: 'AVAILABLE',
    ...overrides,
  };
  return out;
}

export function wireContractInfo(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    chainId: 137,
    address: ADDR.collection,
    source: 'indexer',
    name: 'Dragons',
    type: 'ERC721',
    symbol: 'DRG',
    logoURI: 'https://img.example/logo.png',
    deployed: true,
    bytecodeHash: '0xbeef',
    extensions: { link: 'https://dragons.example', verified: true, ogImage: null, originChainId: 137 },
    updatedAt: '2025-01-01T00:00:00Z',
    queuedAt: null,
    status: 'AVAILABLE',
    ...overrides,
  };
}

/** A decoded ERC-721 Transfer log as SubscribeEvents sends it (wire-protocol.md §4.2). */
export function wireEventLog(index: number, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const hex = (n: number, width: number) => n.toString(16).padStart(width, '0');
  return {
    id: 1000 + index,
    uid: `uid-${index}`,
    type: 'BLOCK_ADDED',
    blockNumber: 61000000 + index,
    blockHash: `0x${hex(index, 64)}`,
    parentBlockHash: `0x${hex(index + 1, 64)}`,
    contractAddress: ADDR.collection,
    contractType: 'ERC721',
    txnHash: `0x${hex(index * 7 + 1, 64)}`,
    txnIndex: index % 50,
    txnLogIndex: index % 7,
    logDataType: 'TOKEN_TRANSFER',
    ts: '2025-01-01T00:00:00Z',
    txnInfo: { from: ADDR.seller, to: ADDR.collection, value: '0' },
    rawLog: null,
    event: {
      topicHash: '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef',
      eventSig: 'Transfer(address indexed from, address indexed to, uint256 indexed tokenId)',
      types: ['address', 'address', 'uint256'],
      names: ['from', 'to', 'tokenId'],
      values: [ADDR.seller, ADDR.buyer, String(index)],
    },
    ...overrides,
  };
}

export function wireReceipt(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    txnHash: `0x${'ab'.repeat(32)}`,
    txnStatus: 'SUCCESSFUL',
    txnIndex: 3,
    txnType: 'DynamicFeeTxnType',
    blockHash: `0x${'cd'.repeat(32)}`,
    blockNumber: 61000001,
    gasUsed: 51234,
    effectiveGasPrice: '30000000000',
    from: ADDR.buyer,
    to: ADDR.collection,
    logs: [{ contractAddress: ADDR.collection, topics: ['0xddf252ad'], data: '0x', index: 0 }],
    final: false,
    reorged: false,
    ...overrides,
  };
}
