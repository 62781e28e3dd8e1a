import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Devnet, DevnetCollectionInfo } from '../../src/devnet/index.ts';
import { PlatformApiError, PlatformClient } from '../../src/platform/index.ts';
import { post, startTestDevnet, type TestDevnet } from './devnet-helpers.ts';

let t: TestDevnet;
let devnet: Devnet;
let cats: DevnetCollectionInfo;
let url: (path: string) => string;
let keyed: Record<string, string>;

beforeAll(async () => {
  t = await startTestDevnet({ scale: 'small' });
  devnet = t.devnet;
  cats = t.collection('devnet', 'Moon Cats');
  url = (path) => `${devnet.url}${path}`;
  keyed = { 'x-access-key': devnet.accessKey };
});

afterAll(async () => {
  await t.close();
});

async function errorBody(
  response: Response,
): Promise<{ error: string; code: number; msg: string; cause?: string; status: number }> {
  expect(response.headers.get('content-type')).toBe('application/json');
  const body = (await response.json()) as { error: string; code: number; msg: string; cause?: string; status: number };
  expect(body.status).toBe(response.status);
  expect(Object.keys(body).sort()).toEqual(expect.arrayContaining(['code', 'error', 'msg', 'status']));
  return body;
}

const collectible = '/marketplace/devnet/rpc/Marketplace/GetCollectible';

describe('devnet wire conventions', () => {
  it('GIVEN an unknown route WHEN posting THEN 404 WebrpcBadRoute, whatever the method', async () => {
    const response = await post(url('/marketplace/devnet/rpc/Marketplace/NoSuchMethod'), {}, keyed);
    expect(response.status).toBe(404);
    expect(await errorBody(response)).toMatchObject({ error: 'WebrpcBadRoute', code: -2 });
    const get = await fetch(url('/nowhere'));
    expect(get.status).toBe(404);
    const builderOnMetadata = await post(url('/metadata/rpc/Builder/ListContracts'), {}, keyed);
    expect(builderOnMetadata.status).toBe(404);
    const unknownNetwork = await post(url('/indexer/mainnet/rpc/Indexer/GetTokenBalancesByContract'), {}, keyed);
    expect(unknownNetwork.status).toBe(404);
  });

  it('GIVEN a known route WHEN the method is not POST THEN 405 with Allow: POST', async () => {
    for (const method of ['GET', 'PUT', 'DELETE']) {
      const response = await fetch(url(collectible), { method, headers: keyed });
      expect(response.status).toBe(405);
      expect(response.headers.get('allow')).toBe('POST');
      expect(await errorBody(response)).toMatchObject({ error: 'WebrpcBadMethod', code: -3, status: 405 });
    }
  });

  it('GIVEN a content type other than application/json THEN 400 WebrpcBadRequest naming it', async () => {
    const response = await fetch(url(collectible), {
      method: 'POST',
      headers: { ...keyed, 'content-type': 'text/plain' },
      body: '{}',
    });
    expect(response.status).toBe(400);
    const body = await errorBody(response);
    expect(body).toMatchObject({ error: 'WebrpcBadRequest', code: -4 });
    expect(body.cause).toContain('text/plain');
    const withCharset = await post(
      url(collectible),
      { contractAddress: cats.address, tokenId: '1' },
      {
        ...keyed,
        'content-type': 'application/json; charset=utf-8',
      },
    );
    expect(withCharset.status).toBe(200);
  });

  it('GIVEN a body that is not a JSON object THEN 400 WebrpcBadRequest', async () => {
    for (const body of ['{not json', '', '[1,2]', 'null']) {
      const response = await post(url(collectible), body, keyed);
      expect(response.status).toBe(400);
      expect(await errorBody(response)).toMatchObject({ error: 'WebrpcBadRequest', code: -4 });
    }
  });

  it('GIVEN no X-Access-Key THEN 401 Unauthorized (1000); an unknown key THEN 401 AccessKeyNotFound (1101)', async () => {
    const missing = await post(url(collectible), { contractAddress: cats.address, tokenId: '1' });
    expect(missing.status).toBe(401);
    expect(await errorBody(missing)).toMatchObject({ error: 'Unauthorized', code: 1000 });
    const unknown = await post(
      url(collectible),
      { contractAddress: cats.address, tokenId: '1' },
      { 'x-access-key': 'AQAAAAAAAEGvunknownunknownunknown' },
    );
    expect(unknown.status).toBe(401);
    expect(await errorBody(unknown)).toMatchObject({ error: 'AccessKeyNotFound', code: 1101 });
  });

  it('GIVEN the secret operations WHEN the bearer token is missing or wrong THEN 401 Unauthorized', async () => {
    const unpublish = await post(url('/metadata/rpc/Collections/UnpublishCollection'), { collectionId: 1 }, keyed);
    expect(unpublish.status).toBe(401);
    expect(await errorBody(unpublish)).toMatchObject({ error: 'Unauthorized', code: 1000 });
    const wrong = await post(
      url('/metadata/rpc/Collections/UnpublishCollection'),
      { collectionId: 1 },
      { authorization: 'Bearer nope' },
    );
    expect(wrong.status).toBe(401);
    const filter = { filter: { startDate: '2025-01-01', endDate: '2025-01-02' } };
    const analytics = await post(url('/api/rpc/Analytics/WalletsTxnSentTotal'), filter, keyed);
    expect(analytics.status).toBe(401);
    expect(await errorBody(analytics)).toMatchObject({ error: 'Unauthorized', code: 1000 });
    const upper = await post(url('/api/rpc/Analytics/WalletsTxnSentTotal'), filter, {
      authorization: `BEARER ${devnet.secretToken}`,
    });
    expect(upper.status).toBe(200);
  });

  it('GIVEN the client without credentials THEN it gets typed errors with the platform codes', async () => {
    const anonymous = new PlatformClient({
      endpoints: devnet.endpoints,
      networks: devnet.networks,
      retry: { retries: 0 },
    });
    try {
      const error = await anonymous.marketplace
        .getCollectible({ network: 'devnet', contractAddress: cats.address, tokenId: '1' })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PlatformApiError);
      expect(error).toMatchObject({ code: 1000, status: 401, errorName: 'Unauthorized' });
      const secret = await anonymous.collections
        .unpublishCollection({ collectionId: 1, projectId: devnet.projectId })
        .catch((e: unknown) => e);
      expect(secret).toMatchObject({ code: 1000, status: 401 });
    } finally {
      await anonymous.close();
    }
  });

  it('GIVEN a wrong type or an impossible value THEN 400 InvalidArgument naming the field', async () => {
    const listCollectibles = url('/marketplace/devnet/rpc/Marketplace/ListCollectibles');
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ side: 'listing', contractAddress: cats.address, page: { page: -1 } }, 'page.page'],
      [{ side: 'listing', contractAddress: cats.address, page: { pageSize: 'ten' } }, 'page.pageSize'],
      [{ side: 'listing', contractAddress: '0x1234' }, 'contractAddress'],
      [{ side: 'sideways', contractAddress: cats.address }, 'side'],
      [{ side: 'listing', contractAddress: cats.address, filter: { includeEmpty: 'yes' } }, 'filter.includeEmpty'],
      [
        { side: 'listing', contractAddress: cats.address, filter: { properties: [{ values: ['Blue'] }] } },
        'filter.properties[0].name',
      ],
      [{ side: 'listing', contractAddress: cats.address, filter: { inAccounts: ['bob'] } }, 'filter.inAccounts[0]'],
      [
        { side: 'listing', contractAddress: cats.address, page: { sort: [{ column: 'colour' }] } },
        'page.sort[0].column',
      ],
    ];
    for (const [body, field] of cases) {
      const response = await post(listCollectibles, body, keyed);
      expect(response.status).toBe(400);
      const error = await errorBody(response);
      expect(error).toMatchObject({ error: 'InvalidArgument', code: 2001 });
      expect(error.msg.startsWith(field)).toBe(true);
    }
    const balances = await post(
      url('/indexer/devnet/rpc/Indexer/GetTokenBalancesByContract'),
      { filter: { contractAddresses: [] } },
      keyed,
    );
    expect((await errorBody(balances)).msg).toContain('filter.contractAddresses');
    const tokenId = await post(url(collectible), { contractAddress: cats.address, tokenId: '-3' }, keyed);
    expect((await errorBody(tokenId)).msg).toContain('tokenId');
  });

  it('accepts enum values by name, by the spec stand-in name and by position', async () => {
    const listCollectibles = url('/marketplace/devnet/rpc/Marketplace/ListCollectibles');
    const byName = await (
      await post(listCollectibles, { side: 'listing', contractAddress: cats.address }, keyed)
    ).json();
    const byPosition = await (await post(listCollectibles, { side: 1, contractAddress: cats.address }, keyed)).json();
    expect(byPosition).toEqual(byName);
    const filtered = (name: unknown) =>
      post(
        listCollectibles,
        { side: 'listing', contractAddress: cats.address, filter: { marketplaces: [name] } },
        keyed,
      ).then((r) => r.json() as Promise<{ collectibles: Array<{ order: { marketplace: string } }> }>);
    const real = await filtered('sequence_marketplace_v2');
    expect(real.collectibles.length).toBeGreaterThan(0);
    expect(real.collectibles.every((c) => c.order.marketplace === 'sequence_marketplace_v2')).toBe(true);
    expect(await filtered('service_marketplace_v2')).toEqual(real);
    expect(await filtered(2)).toEqual(real);
    const unknown = await post(
      listCollectibles,
      { side: 'listing', contractAddress: cats.address, filter: { marketplaces: ['nowhere'] } },
      keyed,
    );
    expect((await errorBody(unknown)).msg).toContain('filter.marketplaces[0]');
  });

  it('reads the marketplace network from the path, from chainId in the body, or both when they agree', async () => {
    const body = { contractAddress: cats.address, tokenId: '1' };
    const inPath = await post(url(collectible), body, keyed);
    const inBody = await post(url('/marketplace/rpc/Marketplace/GetCollectible'), { ...body, chainId: '31337' }, keyed);
    const both = await post(url(collectible), { ...body, chainId: '31337' }, keyed);
    const byChainIdPath = await post(url('/marketplace/31337/rpc/Marketplace/GetCollectible'), body, keyed);
    const expected = await inPath.json();
    expect(await inBody.json()).toEqual(expected);
    expect(await both.json()).toEqual(expected);
    expect(await byChainIdPath.json()).toEqual(expected);
    const mismatch = await post(url(collectible), { ...body, chainId: '31338' }, keyed);
    expect((await errorBody(mismatch)).msg).toContain('chainId');
    const none = await post(url('/marketplace/rpc/Marketplace/GetCollectible'), body, keyed);
    expect(none.status).toBe(400);
  });

  it('reads chainId and chainID alike in the metadata service', async () => {
    const path = url('/metadata/rpc/Metadata/TokenCollectionFilters');
    const spec = await post(path, { chainId: '31337', contractAddress: cats.address }, keyed);
    const real = await post(path, { chainID: '31337', contractAddress: cats.address }, keyed);
    const number = await post(
      path,
      { chainID: 31337, contractAddress: cats.address.toUpperCase().replace('0X', '0x') },
      keyed,
    );
    const expected = await spec.json();
    expect(await real.json()).toEqual(expected);
    expect(await number.json()).toEqual(expected);
  });

  it('answers with the webrpc header and the JSON content type', async () => {
    const response = await post(url(collectible), { contractAddress: cats.address, tokenId: '1' }, keyed);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(response.headers.get('webrpc')).toMatch(/^webrpc@/);
  });

  it('sends the real wire spellings of token metadata (snake_case keys)', async () => {
    const response = await post(url(collectible), { contractAddress: cats.address, tokenId: '1' }, keyed);
    const { metadata } = (await response.json()) as { metadata: Record<string, unknown> };
    expect(metadata).toHaveProperty('external_url');
    expect(metadata).toHaveProperty('background_color');
    expect(metadata).not.toHaveProperty('externalUrl');
  });

  it('serves the token images it links to, and 404 for the deliberately broken ones', async () => {
    const response = await post(url(collectible), { contractAddress: cats.address, tokenId: '7' }, keyed);
    const { metadata } = (await response.json()) as { metadata: { image: string } };
    expect(metadata.image.startsWith(devnet.url)).toBe(true);
    const image = await fetch(metadata.image);
    expect(image.status).toBe(200);
    expect(image.headers.get('content-type')).toBe('image/svg+xml');
    expect(await image.text()).toMatch(/^<svg[^>]*>.*<\/svg>$/s);
    const logo = await fetch(url(`/assets/devnet/${cats.address}/logo.svg`));
    expect(logo.status).toBe(200);
    const broken = await fetch(url('/assets/broken/missing.png'));
    expect(broken.status).toBe(404);
  });
});

describe('devnet control API over HTTP', () => {
  it('GET /devnet/info lists networks, collections, credentials and base addresses', async () => {
    const info = (await (await fetch(url('/devnet/info'))).json()) as ReturnType<Devnet['info']>;
    expect(info.networks.map((n) => n.name)).toEqual(['devnet', 'devnet-l2']);
    expect(info.accessKey).toBe(devnet.accessKey);
    expect(info.secretToken).toBe(devnet.secretToken);
    expect(info.endpoints).toEqual(devnet.endpoints);
    expect(info.collections.devnet?.find((c) => c.name === 'Moon Cats')).toMatchObject({
      standard: 'ERC721',
      address: cats.address,
    });
  });

  it('POST /devnet/mine mines one block with the given activity and answers its number and transactions', async () => {
    const before = devnet.info().networks[0]?.head.number ?? 0;
    const response = await post(url('/devnet/mine'), {
      network: 'devnet',
      activity: [{ kind: 'listing', collection: cats.address }, { kind: 'mint' }],
    });
    expect(response.status).toBe(200);
    const mined = (await response.json()) as {
      blockNumber: number;
      txnHashes: string[];
      transactions: Array<{ kind: string }>;
    };
    expect(mined.blockNumber).toBe(before + 1);
    expect(mined.txnHashes).toHaveLength(2);
    expect(mined.transactions.map((t) => t.kind)).toEqual(['listing', 'mint']);
  });

  it('POST /devnet/mine refuses bad activity, naming the field, and mines nothing', async () => {
    const before = devnet.info().networks[0]?.head.number;
    const badKind = await post(url('/devnet/mine'), {
      network: 'devnet',
      activity: [{ kind: 'listing' }, { kind: 'steal' }],
    });
    expect(badKind.status).toBe(400);
    expect((await errorBody(badKind)).msg).toContain('activity[1].kind');
    const noToken = await post(url('/devnet/mine'), {
      activity: [{ kind: 'transfer', collection: cats.address, tokenId: '99999999' }],
    });
    expect((await errorBody(noToken)).msg).toContain('activity[0].tokenId');
    expect(devnet.info().networks[0]?.head.number).toBe(before);
    const get = await fetch(url('/devnet/mine'));
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
  });

  it('POST /devnet/reorg rolls back the last blocks; a depth past finality is refused', async () => {
    await post(url('/devnet/mine'), { network: 'devnet-l2', activity: [] });
    const head = devnet.info().networks[1]?.head.number ?? 0;
    const response = await post(url('/devnet/reorg'), { network: 'devnet-l2', depth: 1 });
    expect(response.status).toBe(200);
    const result = (await response.json()) as { head: { number: number }; removedBlocks: Array<{ number: number }> };
    expect(result.head.number).toBe(head - 1);
    expect(result.removedBlocks.map((b) => b.number)).toEqual([head]);
    const tooDeep = await post(url('/devnet/reorg'), { network: 'devnet-l2', depth: 50 });
    expect((await errorBody(tooDeep)).msg).toContain('depth');
  });

  it('POST /devnet/faults injects 429 with Retry-After, 5xx and latency per operation; DELETE clears them', async () => {
    const body = { contractAddress: cats.address, tokenId: '1' };
    await post(url('/devnet/faults'), {
      operation: 'GetCollectible',
      rateLimitRate: 1,
      retryAfterSeconds: 2,
      times: 1,
    });
    const limited = await post(url(collectible), body, keyed);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('2');
    expect(await errorBody(limited)).toMatchObject({ error: 'RateLimited', code: 1007 });
    expect((await post(url(collectible), body, keyed)).status).toBe(200);

    await post(url('/devnet/faults'), [
      { operation: 'Marketplace/GetCollectible', errorRate: 1 },
      { operation: 'ListCollectibles', errorRate: 1, errorStatus: 503 },
      { operation: 'GetOrders', latencyMs: 5 },
    ]);
    const failed = await post(url(collectible), body, keyed);
    expect(failed.status).toBe(500);
    expect(await errorBody(failed)).toMatchObject({ error: 'WebrpcInternalError', code: -7 });
    const proxy = await post(
      url('/marketplace/devnet/rpc/Marketplace/ListCollectibles'),
      { side: 'listing', contractAddress: cats.address },
      keyed,
    );
    expect(proxy.status).toBe(503);
    expect(proxy.headers.get('content-type')).toBe('text/html');
    const slow = await post(url('/marketplace/devnet/rpc/Marketplace/GetOrders'), { input: [{ orderId: '1' }] }, keyed);
    expect(slow.status).toBe(200);
    const listed = (await (await fetch(url('/devnet/faults'))).json()) as { faults: unknown[] };
    expect(listed.faults).toHaveLength(3);

    const cleared = await fetch(url('/devnet/faults'), { method: 'DELETE' });
    expect(await cleared.json()).toEqual({ faults: [] });
    expect((await post(url(collectible), body, keyed)).status).toBe(200);
  });

  it('GIVEN a 5xx fault for two requests WHEN the client calls THEN its retries get through', async () => {
    devnet.setFaults({ operation: 'GetCollectible', errorRate: 1, times: 2 });
    const metadata = await t.client.marketplace.getCollectible({
      network: 'devnet',
      contractAddress: cats.address,
      tokenId: '3',
    });
    expect(metadata.tokenId).toBe('3');
    devnet.clearFaults();
  });
});

describe('devnet background activity: POST /devnet/pause and /devnet/resume', () => {
  const headOf = (d: Devnet) => d.info().networks[0]?.head.number ?? 0;

  it('GIVEN a devnet mining a random block every 20 ms WHEN paused THEN no block comes by itself, a block asked for still does, and resume starts them again', async () => {
    const live = await startTestDevnet({ scale: 'small', blockIntervalMs: 20 });
    try {
      const base = live.devnet.url;
      const start = headOf(live.devnet);
      await waitUntil(() => headOf(live.devnet) > start, 10_000);
      expect(headOf(live.devnet)).toBeGreaterThan(start);

      const paused = await post(`${base}/devnet/pause`, {});
      expect(paused.status).toBe(200);
      expect(await paused.json()).toEqual({ blockIntervalMs: 20, paused: true });
      const atPause = headOf(live.devnet);
      // Fifteen intervals: an unpaused miner would have mined here even on a busy machine.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(headOf(live.devnet)).toBe(atPause);
      expect(live.devnet.info().paused).toBe(true);
      const mined = await post(`${base}/devnet/mine`, { network: 'devnet', activity: [] });
      expect(mined.status).toBe(200);
      expect(headOf(live.devnet)).toBe(atPause + 1);

      const resumed = await post(`${base}/devnet/resume`, { blockIntervalMs: 30 });
      expect(await resumed.json()).toEqual({ blockIntervalMs: 30, paused: false });
      await waitUntil(() => headOf(live.devnet) > atPause + 1, 10_000);
      expect(headOf(live.devnet)).toBeGreaterThan(atPause + 1);
      expect(live.devnet.info()).toMatchObject({ blockIntervalMs: 30, paused: false });
    } finally {
      await live.close();
    }
  });

  it('GIVEN a devnet that mines only on request (interval 0) WHEN resumed without an interval THEN 400 says to give one', async () => {
    expect(devnet.info()).toMatchObject({ blockIntervalMs: 0, paused: true });
    const response = await post(url('/devnet/resume'), {});
    expect(response.status).toBe(400);
    expect((await errorBody(response)).msg).toContain('blockIntervalMs');
    const get = await fetch(url('/devnet/pause'));
    expect(get.status).toBe(405);
  });
});

async function waitUntil(check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
}
