// Platform discovery (FLOORWATCH_PLATFORM_URL): the description a local platform serves, read over
// HTTP from a real devnet; and what a server that serves none, or a broken one, gets back.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Devnet, startDevnet } from '../../src/devnet/index.ts';
import { discoverPlatform, PlatformDiscoveryError } from '../../src/platform/discovery.ts';

let devnet: Devnet;
beforeAll(async () => {
  devnet = await startDevnet({ scale: 'small' });
});
afterAll(async () => {
  await devnet.close();
});

/** A server that answers every request with `status` and `body`. */
async function answering(status: number, body: string): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer((_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function failure(promise: Promise<unknown>): Promise<PlatformDiscoveryError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PlatformDiscoveryError);
  return error as PlatformDiscoveryError;
}

describe('discoverPlatform', () => {
  it('GIVEN a local platform THEN its addresses, networks, native coins, marketplace contracts, JSON-RPC, project and pages are read', async () => {
    const found = await discoverPlatform(`${devnet.url}/`);
    const info = devnet.info();
    expect(found.endpoints).toEqual(devnet.endpoints);
    expect(found.networks).toEqual(devnet.networks);
    expect(found.nativeSymbols).toEqual({ devnet: 'DEV', 'devnet-l2': 'DEV' });
    expect(found.marketplaceContracts).toEqual(
      Object.fromEntries(info.networks.map((n) => [n.name, [n.marketplaceContract.toLowerCase()]])),
    );
    expect(found.chainRpcUrl).toBe(devnet.chainRpcUrl);
    expect(found.projectId).toBe(devnet.projectId);
    expect(found.pages).toEqual({
      token: `${devnet.url}/market/{network}/{collection}/{tokenId}`,
      transaction: `${devnet.url}/explorer/{network}/tx/{txnHash}`,
    });
  });

  it('GIVEN the platform reached by another name than it knows itself by THEN its addresses follow the name given', async () => {
    const byName = devnet.url.replace('127.0.0.1', 'localhost');
    const found = await discoverPlatform(byName);
    expect(found.endpoints.indexerUrl).toBe(`${byName}/indexer/{network}`);
    expect(found.chainRpcUrl).toBe(`${byName}/chain/{network}`);
    expect(found.pages?.token.startsWith(`${byName}/market/`)).toBe(true);
  });

  it('GIVEN a server that serves no description THEN exit code 78 and a message naming the variable, the address and what to set instead', async () => {
    const server = await answering(404, '{"error":"WebrpcBadRoute"}');
    try {
      const error = await failure(discoverPlatform(server.url));
      expect(error.exitCode).toBe(78);
      expect(error.message).toContain(`FLOORWATCH_PLATFORM_URL: ${server.url}/devnet/info answered HTTP 404`);
      expect(error.message).toContain('FLOORWATCH_NETWORKS and FLOORWATCH_MARKETPLACE_CONTRACTS');
    } finally {
      await server.close();
    }
  });

  it('GIVEN a description that breaks the schema, or no JSON, or one past 1 MiB THEN it is refused naming the fault (78)', async () => {
    const doc = devnet.info();
    const broken = { ...doc, networks: [{ ...doc.networks[0], name: 'Not A Name' }] };
    for (const [body, expected] of [
      [JSON.stringify(broken), 'networks.0.name: expected a network name'],
      ['<html>hello</html>', 'did not answer JSON'],
      [JSON.stringify({ ...doc, padding: 'x'.repeat(1_100_000) }), 'over 1048576 bytes'],
      [JSON.stringify({ ...doc, networks: [] }), 'networks: expected at least one network'],
    ] as const) {
      const server = await answering(200, body);
      try {
        const error = await failure(discoverPlatform(server.url));
        expect(error.exitCode).toBe(78);
        expect(error.message).toContain(expected);
      } finally {
        await server.close();
      }
    }
  });

  it('GIVEN nothing listening THEN exit code 69 (a supervisor retries: the platform may be starting)', async () => {
    const server = await answering(200, '{}');
    const { url } = server;
    await server.close();
    const error = await failure(discoverPlatform(url));
    expect(error.exitCode).toBe(69);
    expect(error.message).toMatch(
      /cannot be reached \(ECONNREFUSED\)\. Is the local platform running \(npm run devnet\)\?/,
    );
  });
});
