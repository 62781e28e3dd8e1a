/**
 * Every error shape a server (or a proxy in front of it) puts on the wire, turned into the typed
 * errors of src/platform/errors.ts, with messages that name the operation and host and never a
 * credential.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  isTransient,
  PlatformApiError,
  PlatformBadResponseError,
  type PlatformClient,
  PlatformError,
} from '../../../src/platform/index.ts';
import { ACCESS_KEY, ADDR, createTestClient, SECRET_TOKEN, wireOrder } from '../../helpers/platform-fixtures.ts';
import { RpcTestServer, reply } from '../../helpers/rpc-test-server.ts';

let server: RpcTestServer;
let client: PlatformClient;

const LISTINGS = '/mk/polygon/rpc/Marketplace/ListListingsForCollectible';
const OPERATION = 'Marketplace/ListListingsForCollectible';

beforeEach(async () => {
  server = await RpcTestServer.start();
  client = createTestClient(server, { retry: { retries: 0 } });
});

afterEach(async () => {
  await server.close();
  await client.close();
});

function listListings(c: PlatformClient = client) {
  return c.marketplace.listListingsForCollectible({
    network: 'polygon',
    contractAddress: ADDR.collection,
    tokenId: '42',
  });
}

async function failure(promise: Promise<unknown>): Promise<PlatformError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(PlatformError);
    return error as PlatformError;
  }
  throw new Error('expected the call to fail');
}

function expectNamesOperationAndHost(error: PlatformError, operation = OPERATION): void {
  expect(error.operation).toBe(operation);
  expect(error.host).toBe(`127.0.0.1:${server.port}`);
  expect(error.message).toContain(operation);
  expect(error.message).toContain(`127.0.0.1:${server.port}`);
}

describe('webrpc error bodies', () => {
  it('GIVEN a Go server error with msg WHEN the call fails THEN a PlatformApiError carries name, code, status and message', async () => {
    server.route(
      LISTINGS,
      reply.webrpcError(401, { error: 'AccessKeyNotFound', code: 1101, msg: 'Access key not found' }),
    );

    const error = await failure(listListings());

    expect(error).toBeInstanceOf(PlatformApiError);
    const api = error as PlatformApiError;
    expect(api).toMatchObject({
      errorName: 'AccessKeyNotFound',
      code: 1101,
      status: 401,
      detail: 'Access key not found',
    });
    expect(api.causeText).toBeUndefined();
    expect(api.isUnauthorized).toBe(true);
    expect(isTransient(api)).toBe(false);
    expectNamesOperationAndHost(api);
    expect(api.message).toContain('AccessKeyNotFound (code 1101, HTTP 401): Access key not found');
  });

  it('GIVEN an error body with message instead of msg WHEN read THEN the message is used', async () => {
    server.route(LISTINGS, reply.webrpcError(400, { error: 'InvalidArgument', code: 2001, message: 'bad tokenId' }));
    const error = (await failure(listListings())) as PlatformApiError;
    expect(error).toBeInstanceOf(PlatformApiError);
    expect(error.detail).toBe('bad tokenId');
  });

  it('GIVEN both msg and message WHEN read THEN msg wins', async () => {
    server.route(
      LISTINGS,
      reply.webrpcError(400, { error: 'InvalidArgument', code: 2001, msg: 'from msg', message: 'from message' }),
    );
    expect(((await failure(listListings())) as PlatformApiError).detail).toBe('from msg');
  });

  it('GIVEN an error body with a cause WHEN read THEN the cause is kept and shown', async () => {
    server.route(
      LISTINGS,
      reply.webrpcError(400, {
        error: 'WebrpcBadRequest',
        code: -4,
        msg: 'bad request',
        cause: 'failed to unmarshal request data: unexpected EOF',
      }),
    );
    const error = (await failure(listListings())) as PlatformApiError;
    expect(error.causeText).toBe('failed to unmarshal request data: unexpected EOF');
    expect(error.message).toContain('(failed to unmarshal request data: unexpected EOF)');
  });

  it('GIVEN an unknown error name and code WHEN read THEN they are carried as given', async () => {
    server.route(LISTINGS, reply.webrpcError(418, { error: 'TeapotOverflow', code: 7777, msg: 'short and stout' }));
    const error = (await failure(listListings())) as PlatformApiError;
    expect(error).toMatchObject({ errorName: 'TeapotOverflow', code: 7777, status: 418, detail: 'short and stout' });
    expect(isTransient(error)).toBe(false);
  });

  it('GIVEN an error body with only a code WHEN read THEN the name is UnknownError and the detail says there was no message', async () => {
    server.route(LISTINGS, reply.json({ code: 1234 }, { status: 400 }));
    const error = (await failure(listListings())) as PlatformApiError;
    expect(error).toBeInstanceOf(PlatformApiError);
    expect(error).toMatchObject({ errorName: 'UnknownError', code: 1234, status: 400, detail: 'no message' });
  });

  it.each([
    [401, 'Unauthorized', 1000, 'isUnauthorized'],
    [403, 'PermissionDenied', 1001, 'isPermissionDenied'],
    [404, 'WebrpcBadRoute', -2, undefined],
    [405, 'WebrpcBadMethod', -3, undefined],
  ] as const)(
    'GIVEN HTTP %i %s WHEN the call fails THEN it is a final PlatformApiError',
    async (status, name, code, flag) => {
      server.route(LISTINGS, reply.webrpcError(status, { error: name, code, msg: name.toLowerCase() }));
      const error = (await failure(listListings())) as PlatformApiError;
      expect(error).toBeInstanceOf(PlatformApiError);
      expect(error).toMatchObject({ errorName: name, code, status });
      if (flag) expect(error[flag]).toBe(true);
      expect(isTransient(error)).toBe(false);
      expectNamesOperationAndHost(error);
      expect(server.requestsTo(LISTINGS)).toHaveLength(1);
    },
  );

  it('GIVEN a path the server does not know WHEN called THEN its bad-route answer becomes a 404 PlatformApiError', async () => {
    const error = (await failure(
      client.marketplace.getCollectible({ network: 'polygon', contractAddress: '0x', tokenId: '1' }),
    )) as PlatformApiError;
    expect(error).toMatchObject({ errorName: 'WebrpcBadRoute', code: -2, status: 404 });
    expectNamesOperationAndHost(error, 'Marketplace/GetCollectible');
  });
});

describe('answers that are not platform error bodies', () => {
  it('GIVEN an HTML 502 page from a proxy WHEN the call fails THEN a transient PlatformBadResponseError shows the status and a preview', async () => {
    server.route(LISTINGS, reply.html(502));
    const error = (await failure(listListings())) as PlatformBadResponseError;
    expect(error).toBeInstanceOf(PlatformBadResponseError);
    expect(error.status).toBe(502);
    expect(error.message).toContain('HTTP 502');
    expect(error.message).toContain('502 Bad Gateway');
    expect(isTransient(error)).toBe(true);
    expectNamesOperationAndHost(error);
  });

  it('GIVEN a 404 with an empty body WHEN the call fails THEN the message says the body was empty', async () => {
    server.route(LISTINGS, reply.text('', { status: 404 }));
    const error = (await failure(listListings())) as PlatformBadResponseError;
    expect(error).toBeInstanceOf(PlatformBadResponseError);
    expect(error.status).toBe(404);
    expect(error.message).toContain('(empty body)');
    expect(isTransient(error)).toBe(false);
  });

  it('GIVEN truncated JSON with status 200 WHEN read THEN a final PlatformBadResponseError says it is not JSON', async () => {
    server.route(
      LISTINGS,
      reply.text('{"listings":[{"orderId":"1","priceAm', { headers: { 'content-type': 'application/json' } }),
    );
    const error = (await failure(listListings())) as PlatformBadResponseError;
    expect(error).toBeInstanceOf(PlatformBadResponseError);
    expect(error.status).toBe(200);
    expect(error.message).toContain('not JSON');
    expect(isTransient(error)).toBe(false);
    expectNamesOperationAndHost(error);
  });

  it('GIVEN a JSON array instead of an object WHEN read THEN it is a PlatformBadResponseError', async () => {
    server.route(LISTINGS, reply.json([wireOrder()]));
    const error = await failure(listListings());
    expect(error).toBeInstanceOf(PlatformBadResponseError);
    expect(error.message).toContain('not a JSON object');
  });

  it('GIVEN JSON null WHEN read THEN it is a PlatformBadResponseError', async () => {
    server.route(LISTINGS, reply.text('null'));
    expect(await failure(listListings())).toBeInstanceOf(PlatformBadResponseError);
  });

  it('GIVEN listings: "x" WHEN read THEN the PlatformBadResponseError names the operation and the field', async () => {
    server.route(LISTINGS, reply.json({ listings: 'x' }));
    const error = await failure(listListings());
    expect(error).toBeInstanceOf(PlatformBadResponseError);
    expectNamesOperationAndHost(error);
    expect(error.message).toContain('listings');
    expect(error.message).toContain('wrong shape');
    expect(isTransient(error)).toBe(false);
  });

  it('GIVEN an order with a wrong field deep in the list WHEN read THEN the good one is returned and the bad one is dropped, counted and reported with that field', async () => {
    const reports: Array<{ operation: string; reason: string; dropped: number }> = [];
    const reporting = createTestClient(server, {
      retry: { retries: 0 },
      onDroppedRecords: (sample, dropped) => reports.push({ ...sample, dropped }),
    });
    server.route(LISTINGS, reply.json({ listings: [wireOrder(), wireOrder({ priceDecimals: '18x' })] }));
    const { listings } = await listListings(reporting);
    await reporting.close();
    expect(listings.map((l) => l.orderId)).toEqual(['8745']);
    expect(reports).toEqual([
      { operation: OPERATION, reason: expect.stringContaining('listings[1].priceDecimals'), dropped: 1 },
    ]);
    expect(reporting.droppedRecords.snapshot()).toMatchObject({ total: 1, byOperation: new Map([[OPERATION, 1]]) });
  });

  it('GIVEN a 429 without a body WHEN the call gives up THEN it is a rate-limit PlatformApiError', async () => {
    server.route(LISTINGS, reply.text('', { status: 429 }));
    const error = (await failure(listListings())) as PlatformApiError;
    expect(error).toBeInstanceOf(PlatformApiError);
    expect(error.isRateLimited).toBe(true);
    expect(error.status).toBe(429);
  });
});

describe('credentials never appear in error messages', () => {
  function everyText(error: unknown): string {
    const parts: string[] = [];
    let current: unknown = error;
    while (current instanceof Error) {
      parts.push(current.message, String(current));
      current = current.cause;
    }
    if (error instanceof PlatformApiError) parts.push(error.detail, error.errorName, error.causeText ?? '');
    return parts.join('\n');
  }

  function expectNoSecrets(error: unknown): void {
    const text = everyText(error);
    expect(text).not.toContain(ACCESS_KEY);
    expect(text).not.toContain(SECRET_TOKEN);
    // No long fragment of either secret, e.g. one cut by a preview.
    for (const secret of [ACCESS_KEY, SECRET_TOKEN]) {
      for (let i = 0; i + 12 <= secret.length; i++) expect(text).not.toContain(secret.slice(i, i + 12));
    }
  }

  it('GIVEN a server that echoes the access key in msg and cause WHEN the call fails THEN neither shows the key', async () => {
    server.route(
      LISTINGS,
      reply.webrpcError(401, {
        error: 'AccessKeyNotFound',
        code: 1101,
        msg: `Access key ${ACCESS_KEY} not found`,
        cause: `lookup of "${ACCESS_KEY}" failed`,
      }),
    );
    const error = (await failure(listListings())) as PlatformApiError;
    expectNoSecrets(error);
    expect(error.detail).toContain('[redacted]');
    expect(error.causeText).toContain('[redacted]');
  });

  it('GIVEN a server that echoes the bearer token WHEN UnpublishCollection fails THEN the token is not shown', async () => {
    server.route(
      '/meta/rpc/Collections/UnpublishCollection',
      reply.webrpcError(403, { error: 'SessionExpired', code: 1002, msg: `token ${SECRET_TOKEN} expired` }),
    );
    const error = await failure(client.collections.unpublishCollection({ collectionId: 1 }));
    expectNoSecrets(error);
  });

  it('GIVEN a server that echoes the key in the error name WHEN the call fails THEN the name is scrubbed', async () => {
    server.route(LISTINGS, reply.webrpcError(400, { error: `Bad${ACCESS_KEY}`, code: 1, msg: 'x' }));
    expectNoSecrets(await failure(listListings()));
  });

  it('GIVEN an HTML page that echoes the key in its text WHEN the call fails THEN the preview does not show it', async () => {
    server.route(LISTINGS, reply.text(`<html><body>denied for key=${ACCESS_KEY}</body></html>`, { status: 403 }));
    expectNoSecrets(await failure(listListings()));
  });

  it('GIVEN the key echoed where the preview cuts the text WHEN the call fails THEN no part of the key is shown', async () => {
    for (let offset = 100; offset <= 125; offset++) {
      server.route(LISTINGS, reply.text(`${'x'.repeat(offset)}${ACCESS_KEY} and more text after it`, { status: 502 }));
      expectNoSecrets(await failure(listListings()));
    }
  });

  it('GIVEN the token echoed in a truncated 200 answer WHEN the call fails THEN the token is not shown', async () => {
    server.route(LISTINGS, reply.text(`{"echo":"${SECRET_TOKEN}`, { status: 200 }));
    expectNoSecrets(await failure(listListings()));
  });

  it('GIVEN a token that contains the access key WHEN the server echoes the token THEN no part of either is shown', async () => {
    const token = `${SECRET_TOKEN}.${ACCESS_KEY}.tail-of-token`;
    const nested = createTestClient(server, { secretToken: token, retry: { retries: 0 } });
    try {
      server.route(
        '/meta/rpc/Collections/UnpublishCollection',
        reply.webrpcError(401, { error: 'Unauthorized', code: 1000, msg: `bad token ${token}` }),
      );
      const error = await failure(nested.collections.unpublishCollection({ collectionId: 1 }));
      expectNoSecrets(error);
      expect(everyText(error)).not.toContain('tail-of-token');
    } finally {
      await nested.close();
    }
  });
});
