/**
 * Retries against a real server: transient failures (5xx, 429, resets) are repeated with back-off
 * and Retry-After honoured; final failures and non-repeatable operations are not. The transport's
 * own `sleep` injection point records the delays, so no test waits for a real back-off.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type CallReport,
  PlatformApiError,
  PlatformBadResponseError,
  PlatformClient,
  PlatformNetworkError,
} from '../../../src/platform/index.ts';
import { parseRetryAfter } from '../../../src/platform/transport.ts';
import {
  ADDR,
  createTestClient,
  endpointsFor,
  NETWORKS,
  recordingSleep,
  type TestClientOptions,
  typedOrder,
  wireOrder,
} from '../../helpers/platform-fixtures.ts';
import { RpcTestServer, reply } from '../../helpers/rpc-test-server.ts';

const LISTINGS = '/mk/polygon/rpc/Marketplace/ListListingsForCollectible';
const UNPUBLISH = '/meta/rpc/Collections/UnpublishCollection';
const BUY = '/mk/polygon/rpc/Marketplace/GenerateBuyTransaction';

let server: RpcTestServer;
let client: PlatformClient;
let delays: number[];
let reports: CallReport[];

function makeClient(options: TestClientOptions = {}): PlatformClient {
  const recorder = recordingSleep();
  delays = recorder.delays;
  reports = [];
  return createTestClient(server, {
    sleep: recorder.sleep,
    retry: { retries: 3, baseDelayMs: 100, maxDelayMs: 2_000 },
    onCall: (report) => reports.push(report),
    ...options,
  });
}

beforeEach(async () => {
  server = await RpcTestServer.start();
  client = makeClient();
});

afterEach(async () => {
  await server.close();
  await client.close();
});

function listListings() {
  return client.marketplace.listListingsForCollectible({
    network: 'polygon',
    contractAddress: ADDR.collection,
    tokenId: '42',
  });
}

const ok = reply.json({ listings: [wireOrder()] });
const internal = reply.webrpcError(500, { error: 'WebrpcInternalError', code: -7, msg: 'internal error' });

describe('transient failures are retried', () => {
  it('GIVEN two 5xx answers then a success WHEN called THEN it succeeds on the third attempt with capped, growing back-off', async () => {
    server.route(LISTINGS, internal, reply.html(503), ok);

    const result = await listListings();

    expect(result.listings).toEqual([typedOrder()]);
    expect(server.requestsTo(LISTINGS)).toHaveLength(3);
    expect(delays).toHaveLength(2);
    // Full jitter: anywhere from 0 up to base * 2^(n-1).
    expect(delays[0]).toBeGreaterThanOrEqual(0);
    expect(delays[0]).toBeLessThanOrEqual(100);
    expect(delays[1]).toBeGreaterThanOrEqual(0);
    expect(delays[1]).toBeLessThanOrEqual(200);
    expect(reports.map((r) => [r.attempt, r.outcome])).toEqual([
      [1, 500],
      [2, 'PlatformBadResponseError'],
      [3, 200],
    ]);
  });

  it('GIVEN every attempt repeats the same request WHEN retried THEN method, headers and body are identical', async () => {
    server.route(LISTINGS, internal, ok);
    await listListings();
    const [first, second] = server.requestsTo(LISTINGS);
    expect(second?.rawBody).toBe(first?.rawBody);
    expect(second?.headers['x-access-key']).toBe(first?.headers['x-access-key']);
    expect(second?.method).toBe('POST');
  });

  it('GIVEN 429 with Retry-After: 1 WHEN called THEN the next attempt waits the 1000 ms the server asked for', async () => {
    server.route(
      LISTINGS,
      reply.webrpcError(
        429,
        { error: 'RateLimited', code: 1007, msg: 'Rate-limited. Please slow down.' },
        { headers: { 'retry-after': '1' } },
      ),
      ok,
    );
    await expect(listListings()).resolves.toEqual({ listings: [typedOrder()], page: {} });
    expect(delays).toEqual([1_000]);
    expect(server.requestsTo(LISTINGS)).toHaveLength(2);
  });

  it('GIVEN 429 with Retry-After: 0 WHEN called THEN it retries without waiting', async () => {
    server.route(LISTINGS, reply.text('', { status: 429, headers: { 'retry-after': '0' } }), ok);
    await listListings();
    expect(delays).toEqual([0]);
  });

  it('GIVEN the default timer sleep and Retry-After: 0 WHEN rate limited THEN the retry happens at once', async () => {
    const timerClient = new PlatformClient({
      endpoints: endpointsFor(server),
      networks: NETWORKS,
      retry: { retries: 2 },
    });
    try {
      server.route(LISTINGS, reply.text('', { status: 429, headers: { 'retry-after': '0' } }), ok);
      const started = Date.now();
      await timerClient.marketplace.listListingsForCollectible({
        network: 'polygon',
        contractAddress: ADDR.collection,
        tokenId: '1',
      });
      expect(server.requestsTo(LISTINGS)).toHaveLength(2);
      expect(Date.now() - started).toBeLessThan(2_000);
    } finally {
      await timerClient.close();
    }
  });

  it('GIVEN a 429 storm WHEN the retries run out THEN it gives up after retries + 1 attempts with a typed rate-limit error', async () => {
    server.route(
      LISTINGS,
      reply.webrpcError(
        429,
        { error: 'QuotaRateLimit', code: 1201, msg: 'Quota rate limit exceeded' },
        { headers: { 'retry-after': '1' } },
      ),
    );

    const error = await listListings().catch((e: unknown) => e);

    expect(error).toBeInstanceOf(PlatformApiError);
    expect((error as PlatformApiError).isRateLimited).toBe(true);
    expect((error as PlatformApiError).retryAfterMs).toBe(1_000);
    expect((error as PlatformApiError).errorName).toBe('QuotaRateLimit');
    expect(server.requestsTo(LISTINGS)).toHaveLength(4);
    expect(delays).toEqual([1_000, 1_000, 1_000]);
  });

  it('GIVEN a Retry-After beyond the back-off cap WHEN rate limited THEN it gives up at once instead of waiting', async () => {
    server.route(LISTINGS, reply.text('', { status: 429, headers: { 'retry-after': '3600' } }), ok);
    const error = await listListings().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PlatformApiError);
    expect((error as PlatformApiError).retryAfterMs).toBe(3_600_000);
    expect(server.requestsTo(LISTINGS)).toHaveLength(1);
    expect(delays).toEqual([]);
  });

  it('GIVEN the connection is reset before an answer WHEN called THEN the call is retried and succeeds', async () => {
    server.route(LISTINGS, reply.destroy(), ok);
    await expect(listListings()).resolves.toEqual({ listings: [typedOrder()], page: {} });
    expect(server.requestsTo(LISTINGS)).toHaveLength(2);
    expect(reports[0]?.outcome).toBe('PlatformNetworkError');
  });

  it('GIVEN every connection is reset WHEN the retries run out THEN a PlatformNetworkError names the operation', async () => {
    server.route(LISTINGS, reply.destroy());
    const error = await listListings().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PlatformNetworkError);
    expect((error as PlatformNetworkError).operation).toBe('Marketplace/ListListingsForCollectible');
    expect(server.requestsTo(LISTINGS)).toHaveLength(4);
  });

  it('GIVEN nothing listens on the port WHEN called THEN the refusal is a PlatformNetworkError after the retries', async () => {
    const port = server.port;
    await server.close();
    const closed = createTestClient(server, {
      retry: { retries: 1 },
      endpoints: { ...client.endpoints, marketplaceUrl: `http://127.0.0.1:${port}/mk/{network}` },
    });
    try {
      const error = await closed.marketplace
        .listListingsForCollectible({ network: 'polygon', contractAddress: ADDR.collection, tokenId: '1' })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PlatformNetworkError);
      expect((error as Error).message).toContain('ECONNREFUSED');
    } finally {
      await closed.close();
      server = await RpcTestServer.start();
    }
  });
});

describe('final failures and non-repeatable operations are not retried', () => {
  it('GIVEN UnpublishCollection WHEN the server answers 500 THEN it is not repeated', async () => {
    server.route(UNPUBLISH, internal, reply.json({ collection: { id: 1, metadata: { name: 'x' } } }));
    const error = await client.collections.unpublishCollection({ collectionId: 1 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PlatformApiError);
    expect((error as PlatformApiError).status).toBe(500);
    expect(server.requestsTo(UNPUBLISH)).toHaveLength(1);
    expect(delays).toEqual([]);
  });

  it('GIVEN UnpublishCollection WHEN the connection is reset THEN it is not repeated', async () => {
    server.route(UNPUBLISH, reply.destroy(), reply.json({ collection: { id: 1, metadata: { name: 'x' } } }));
    const error = await client.collections.unpublishCollection({ collectionId: 1 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PlatformNetworkError);
    expect(server.requestsTo(UNPUBLISH)).toHaveLength(1);
  });

  it('GIVEN GenerateBuyTransaction WHEN the server answers 500 THEN it is not repeated', async () => {
    server.route(BUY, internal, reply.json({ steps: [] }));
    const error = await client.marketplace
      .generateBuyTransaction({
        network: 'polygon',
        collectionAddress: ADDR.collection,
        buyer: ADDR.buyer,
        marketplace: 'service_marketplace_v2',
        ordersData: [{ orderId: '1', quantity: '1' }],
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PlatformApiError);
    expect(server.requestsTo(BUY)).toHaveLength(1);
  });

  it('GIVEN GenerateBuyTransaction WHEN rate limited with Retry-After: 0 THEN it is still not repeated', async () => {
    server.route(BUY, reply.text('', { status: 429, headers: { 'retry-after': '0' } }), reply.json({ steps: [] }));
    const error = await client.marketplace
      .generateBuyTransaction({
        network: 'polygon',
        collectionAddress: ADDR.collection,
        buyer: ADDR.buyer,
        marketplace: 1,
        ordersData: [],
      })
      .catch((e: unknown) => e);
    expect((error as PlatformApiError).isRateLimited).toBe(true);
    expect(server.requestsTo(BUY)).toHaveLength(1);
  });

  it('GIVEN a 400 InvalidArgument WHEN called THEN it is not retried', async () => {
    server.route(
      LISTINGS,
      reply.webrpcError(400, { error: 'InvalidArgument', code: 2001, msg: 'Invalid argument' }),
      ok,
    );
    const error = await listListings().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PlatformApiError);
    expect(server.requestsTo(LISTINGS)).toHaveLength(1);
    expect(delays).toEqual([]);
  });

  it('GIVEN a 401 WHEN called THEN it is not retried', async () => {
    server.route(
      LISTINGS,
      reply.webrpcError(401, { error: 'Unauthorized', code: 1000, msg: 'Unauthorized access' }),
      ok,
    );
    await expect(listListings()).rejects.toBeInstanceOf(PlatformApiError);
    expect(server.requestsTo(LISTINGS)).toHaveLength(1);
  });

  it('GIVEN a 200 answer of the wrong shape WHEN called THEN it is not retried', async () => {
    server.route(LISTINGS, reply.json({ listings: 'x' }), ok);
    await expect(listListings()).rejects.toBeInstanceOf(PlatformBadResponseError);
    expect(server.requestsTo(LISTINGS)).toHaveLength(1);
  });

  it('GIVEN truncated JSON with status 200 WHEN called THEN it is not retried', async () => {
    server.route(LISTINGS, reply.text('{"listings":['), ok);
    await expect(listListings()).rejects.toBeInstanceOf(PlatformBadResponseError);
    expect(server.requestsTo(LISTINGS)).toHaveLength(1);
  });

  it('GIVEN retries: 0 WHEN the server answers 503 THEN there is one attempt', async () => {
    await client.close();
    client = makeClient({ retry: { retries: 0 } });
    server.route(LISTINGS, reply.html(503), ok);
    await expect(listListings()).rejects.toBeInstanceOf(PlatformBadResponseError);
    expect(server.requestsTo(LISTINGS)).toHaveLength(1);
  });
});

describe('parseRetryAfter', () => {
  it('reads seconds, fractions and HTTP dates, and ignores what it cannot read', () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(parseRetryAfter('0', now)).toBe(0);
    expect(parseRetryAfter('2', now)).toBe(2_000);
    expect(parseRetryAfter(' 1.5 ', now)).toBe(1_500);
    expect(parseRetryAfter('Wed, 01 Jan 2025 00:00:05 GMT', now)).toBe(5_000);
    expect(parseRetryAfter('Tue, 31 Dec 2024 23:59:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });
});
