/**
 * Timeouts and aborts against a server that stalls: each ends the call quickly with the right
 * typed error, and nothing is left hanging. Timing bounds are generous on purpose.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  PlatformAbortedError,
  PlatformClient,
  type PlatformClientOptions,
  PlatformTimeoutError,
} from '../../../src/platform/index.ts';
import { ADDR, createTestClient, endpointsFor, NETWORKS } from '../../helpers/platform-fixtures.ts';
import { RpcTestServer, reply } from '../../helpers/rpc-test-server.ts';

const LISTINGS = '/mk/polygon/rpc/Marketplace/ListListingsForCollectible';
const EVENTS = '/idx/polygon/rpc/Indexer/SubscribeEvents';
/** Far above every timeout configured here, far below the test timeout. */
const SLOW = 5_000;

let server: RpcTestServer;
const clients: PlatformClient[] = [];

function makeClient(options: Partial<PlatformClientOptions> = {}): PlatformClient {
  const client = createTestClient(server, { retry: { retries: 0 }, ...options });
  clients.push(client);
  return client;
}

beforeEach(async () => {
  server = await RpcTestServer.start();
});

afterEach(async () => {
  await server.close();
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

function listListings(client: PlatformClient, options?: { signal?: AbortSignal; timeoutMs?: number }) {
  return client.marketplace.listListingsForCollectible(
    { network: 'polygon', contractAddress: ADDR.collection, tokenId: '42' },
    options,
  );
}

async function timed<T>(promise: Promise<T>): Promise<{ error: unknown; ms: number }> {
  const started = performance.now();
  try {
    await promise;
    return { error: undefined, ms: performance.now() - started };
  } catch (error) {
    return { error, ms: performance.now() - started };
  }
}

describe('timeouts', () => {
  it('GIVEN a server that never sends headers WHEN the header timeout is 150 ms THEN a PlatformTimeoutError comes quickly', async () => {
    server.route(LISTINGS, reply.hang());
    const client = makeClient({ timeouts: { headersMs: 150 } });

    const { error, ms } = await timed(listListings(client));

    expect(error).toBeInstanceOf(PlatformTimeoutError);
    expect((error as PlatformTimeoutError).timeoutMs).toBe(150);
    expect((error as Error).message).toContain('waiting for response headers');
    expect((error as PlatformTimeoutError).operation).toBe('Marketplace/ListListingsForCollectible');
    expect(ms).toBeLessThan(SLOW / 2);
  });

  it('GIVEN a stream whose server never sends headers WHEN the header timeout is 150 ms THEN the stream ends with a PlatformTimeoutError quickly', async () => {
    server.route(EVENTS, reply.hang());
    const client = makeClient({ timeouts: { headersMs: 150 } });
    const states: string[] = [];
    const events = client.indexer.subscribeEvents(
      { network: 'polygon', filter: { contractAddresses: [ADDR.collection] } },
      { reconnect: false, onState: (state) => states.push(state.kind) },
    );

    const { error, ms } = await timed(events.next());

    expect(error).toBeInstanceOf(PlatformTimeoutError);
    expect((error as PlatformTimeoutError).timeoutMs).toBe(150);
    expect((error as Error).message).toContain('waiting for response headers');
    expect((error as PlatformTimeoutError).operation).toBe('Indexer/SubscribeEvents');
    expect(states).toEqual(['connecting', 'disconnected']);
    expect(ms).toBeLessThan(SLOW / 2);
  });

  it('GIVEN a header timeout WHEN retries are allowed THEN the timed-out call is tried again', async () => {
    server.route(LISTINGS, reply.hang(), reply.json({ listings: [] }));
    const client = makeClient({ timeouts: { headersMs: 150 }, retry: { retries: 1 } });
    await expect(listListings(client)).resolves.toEqual({ listings: [], page: {} });
    expect(server.requestsTo(LISTINGS)).toHaveLength(2);
  });

  it('GIVEN a server that sends headers and then stalls the body WHEN the body timeout is 150 ms THEN a PlatformTimeoutError comes quickly', async () => {
    server.route(LISTINGS, reply.stream({ heartbeatAtOpen: false, headers: { 'content-type': 'application/json' } }));
    const client = makeClient({ timeouts: { bodyMs: 150 } });
    const pending = timed(listListings(client));
    const stream = await server.nextStream(LISTINGS);
    await stream.write('{"listings":[');

    const { error, ms } = await pending;

    expect(error).toBeInstanceOf(PlatformTimeoutError);
    expect((error as Error).message).toContain('waiting for the response body');
    expect(ms).toBeLessThan(SLOW / 2);
  });

  it('GIVEN a per-call timeoutMs of 200 WHEN the server hangs THEN the whole-call PlatformTimeoutError comes quickly', async () => {
    server.route(LISTINGS, reply.hang());
    const client = makeClient();

    const { error, ms } = await timed(listListings(client, { timeoutMs: 200 }));

    expect(error).toBeInstanceOf(PlatformTimeoutError);
    expect((error as PlatformTimeoutError).timeoutMs).toBe(200);
    expect((error as Error).message).toContain('for the whole call');
    expect(ms).toBeGreaterThanOrEqual(150);
    expect(ms).toBeLessThan(SLOW / 2);
  });

  it('GIVEN a client-wide total timeout of 200 ms WHEN the server answers late THEN the call times out', async () => {
    server.route(LISTINGS, reply.json({ listings: [] }, { delayMs: SLOW }));
    const client = makeClient({ timeouts: { totalMs: 200 } });
    const { error, ms } = await timed(listListings(client));
    expect(error).toBeInstanceOf(PlatformTimeoutError);
    expect(ms).toBeLessThan(SLOW / 2);
  });

  it('GIVEN the whole-call deadline WHEN it passes during a retry back-off THEN the call ends with a PlatformTimeoutError at the deadline', async () => {
    server.route(LISTINGS, reply.html(503));
    const client = new PlatformClient({
      endpoints: endpointsFor(server),
      networks: NETWORKS,
      retry: { retries: 5, baseDelayMs: SLOW, maxDelayMs: SLOW },
      timeouts: { totalMs: 300 },
    });
    clients.push(client);
    // Jitter may pick a short first back-off; the deadline still bounds the call.
    const { error, ms } = await timed(listListings(client));
    expect(error).toBeInstanceOf(PlatformTimeoutError);
    expect((error as Error).message).toContain('for the whole call');
    expect(ms).toBeLessThan(SLOW / 2);
  });
  it('GIVEN the whole-call deadline passed during an attempt WHEN retries remain THEN no further attempt or back-off is made', async () => {
    server.route(LISTINGS, reply.hang());
    const delays: number[] = [];
    const attempts: number[] = [];
    const client = makeClient({
      retry: { retries: 3 },
      // Ignores the abort signal, as an injected sleep may.
      sleep: async (ms) => {
        delays.push(ms);
      },
      onCall: (report) => attempts.push(report.attempt),
    });

    const { error } = await timed(listListings(client, { timeoutMs: 200 }));

    expect(error).toBeInstanceOf(PlatformTimeoutError);
    expect(attempts).toEqual([1]);
    expect(delays).toEqual([]);
    expect(server.requestsTo(LISTINGS)).toHaveLength(1);
  });
});

describe('caller aborts', () => {
  it('GIVEN a request in flight WHEN the caller aborts THEN a PlatformAbortedError comes at once and nothing is retried', async () => {
    server.route(LISTINGS, reply.hang());
    const client = makeClient({ retry: { retries: 3 } });
    const controller = new AbortController();
    const pending = timed(listListings(client, { signal: controller.signal }));
    await server.waitForRequests(LISTINGS, 1);

    controller.abort();
    const { error, ms } = await pending;

    expect(error).toBeInstanceOf(PlatformAbortedError);
    expect((error as PlatformAbortedError).operation).toBe('Marketplace/ListListingsForCollectible');
    expect(ms).toBeLessThan(SLOW / 2);
    expect(server.requestsTo(LISTINGS)).toHaveLength(1);
  });

  it('GIVEN an already aborted signal WHEN calling THEN it fails with PlatformAbortedError', async () => {
    server.route(LISTINGS, reply.json({ listings: [] }));
    const client = makeClient();
    await expect(listListings(client, { signal: AbortSignal.abort() })).rejects.toBeInstanceOf(PlatformAbortedError);
  });

  it('GIVEN a retry back-off in progress WHEN the caller aborts THEN the call ends with PlatformAbortedError without another attempt', async () => {
    server.route(LISTINGS, reply.html(503));
    const client = new PlatformClient({
      endpoints: endpointsFor(server),
      networks: NETWORKS,
      retry: { retries: 5, baseDelayMs: SLOW, maxDelayMs: SLOW },
    });
    clients.push(client);
    const controller = new AbortController();
    const pending = timed(listListings(client, { signal: controller.signal }));
    await server.waitForRequests(LISTINGS, 1);
    // Give the answer time to arrive so the back-off has started.
    await new Promise((resolve) => setTimeout(resolve, 50));

    controller.abort();
    const { error, ms } = await pending;

    expect(error).toBeInstanceOf(PlatformAbortedError);
    expect(ms).toBeLessThan(SLOW / 2);
    expect(server.requestsTo(LISTINGS).length).toBeLessThanOrEqual(2);
  });

  it('GIVEN a closed client WHEN calling THEN it fails at once without retrying', async () => {
    server.route(LISTINGS, reply.json({ listings: [] }));
    const client = new PlatformClient({
      endpoints: endpointsFor(server),
      networks: NETWORKS,
      retry: { retries: 5, baseDelayMs: SLOW, maxDelayMs: SLOW },
    });
    await client.close();
    const { error, ms } = await timed(listListings(client));
    expect(error).toBeInstanceOf(PlatformAbortedError);
    expect((error as Error).message).toContain('closed');
    expect(ms).toBeLessThan(SLOW / 2);
    expect(server.requestsTo(LISTINGS)).toHaveLength(0);
  });
});
