/**
 * Issue 13, item 2: the real client against a local server that answers in hostile ways. A body
 * that never ends, an error body that never ends (fast or one byte at a time), a stream that
 * trickles bytes without ever finishing a line, a line without end, a flood of garbage lines, an
 * absurd Retry-After. Each ends in a typed error or a stream reported lost, the connection closed
 * rather than drained, and words a user can read. Limits are set small where the defaults would
 * make a test slow; outcomes are asserted, never durations.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NetworkStreams } from '../../src/alerts/streams.ts';
import type { AlertStatus } from '../../src/bot/command.ts';
import { CommandEngine } from '../../src/bot/engine.ts';
import { loadCommands } from '../../src/bot/registry.ts';
import { errorReply } from '../../src/bot/user-text.ts';
import { renderPlain } from '../../src/chat/console/render.ts';
import type { StreamHealth } from '../../src/core/status.ts';
import { checkReadiness } from '../../src/health/readiness.ts';
import { COMMANDS_DIR } from '../../src/main.ts';
import {
  DEFAULT_BAD_LINE_REPORT_MS,
  DEFAULT_LIMITS,
  DEFAULT_MAX_LINE_BYTES,
  DEFAULT_TIMEOUTS,
  type EventLog,
  PlatformApiError,
  PlatformBadRecordError,
  PlatformBadResponseError,
  type PlatformClient,
  type PlatformClientOptions,
  PlatformTimeoutError,
  type StreamOptions,
  type StreamState,
} from '../../src/platform/index.ts';
import { StateStore } from '../../src/store/files/state.ts';
import { ADMIN, CONSOLE } from '../helpers/bot-harness.ts';
import { spawnEntryPoint, waitUntil } from '../helpers/entry-point.ts';
import {
  ACCESS_KEY,
  ADDR,
  createTestClient,
  PROJECT_ID,
  wireContractInfo,
  wireEventLog,
  wireOrder,
  wireTokenMetadata,
} from '../helpers/platform-fixtures.ts';
import { type NdjsonStream, pause, RpcTestServer, reply } from '../helpers/rpc-test-server.ts';

const LISTINGS = '/mk/polygon/rpc/Marketplace/ListListingsForCollectible';
const EVENTS = '/idx/polygon/rpc/Indexer/SubscribeEvents';
const FAST_RECONNECT = { initialDelayMs: 10, maxDelayMs: 50 };
/** A flood that reaches this many bytes was not stopped by the client: the test fails instead of filling the disk. */
const FLOOD_CAP = 256 * 1024 * 1024;

let server: RpcTestServer;
let controller: AbortController;
const clients: PlatformClient[] = [];

beforeEach(async () => {
  server = await RpcTestServer.start();
  controller = new AbortController();
});

afterEach(async () => {
  controller.abort();
  await server.close();
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

function makeClient(options: Partial<PlatformClientOptions> = {}): PlatformClient {
  const client = createTestClient(server, options);
  clients.push(client);
  return client;
}

function listListings(client: PlatformClient) {
  return client.marketplace.listListingsForCollectible({
    network: 'polygon',
    contractAddress: ADDR.collection,
    tokenId: '42',
  });
}

function subscribe(client: PlatformClient, options: StreamOptions = {}) {
  return client.indexer.subscribeEvents(
    { network: 'polygon', filter: { contractAddresses: [ADDR.collection] } },
    { signal: controller.signal, reconnect: FAST_RECONNECT, ...options },
  );
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('the call succeeded');
}

/** Writes as fast as the client reads until it closes the connection; resolves with the bytes written. */
async function flood(stream: NdjsonStream): Promise<number> {
  const chunk = Buffer.alloc(16 * 1024, 'x');
  let written = 0;
  while (!stream.isClosed && written < FLOOD_CAP) {
    await Promise.race([stream.write(chunk), stream.closed]);
    written += chunk.length;
  }
  return written;
}

/** Writes one byte every `everyMs` until the client closes the connection; resolves with the bytes written. */
async function trickle(stream: NdjsonStream, everyMs: number): Promise<number> {
  let written = 0;
  while (!stream.isClosed && written < 10_000) {
    await stream.write('x');
    written++;
    await Promise.race([pause(everyMs), stream.closed]);
  }
  return written;
}

/** The real command engine and commands on a client of the hostile server, as the bot wires them; runs a line, renders the answer. */
async function engineOn(client: PlatformClient, dataDir: string, alerts?: () => Promise<AlertStatus>) {
  const engine = new CommandEngine({
    platform: client,
    store: await StateStore.open(join(dataDir, 'state.json')),
    logger: pino({ level: 'silent' }),
    settings: { operators: [], projectId: PROJECT_ID, allowlistAudience: 1, defaultNetwork: 'polygon', version: 't' },
    commands: await loadCommands(COMMANDS_DIR),
    userLimit: { capacity: 1_000, refillPerSecond: 1_000 },
    chatLimit: { capacity: 1_000, refillPerSecond: 1_000 },
    ...(alerts ? { alerts } : {}),
  });
  return async (line: string) => {
    const answer = await engine.runLine(line, CONSOLE, ADMIN);
    if (!answer) throw new Error(`not a command: ${line}`);
    return renderPlain(answer).text;
  };
}

/** Records a subscription's states; `first(kind)` resolves with the first of that kind, seen or to come. */
function stateRecorder() {
  const states: StreamState[] = [];
  const waiters: Array<() => void> = [];
  return {
    states,
    onState: (state: StreamState) => {
      states.push(state);
      for (const wake of waiters.splice(0)) wake();
    },
    async first<K extends StreamState['kind']>(kind: K): Promise<Extract<StreamState, { kind: K }>> {
      for (;;) {
        const found = states.find((s): s is Extract<StreamState, { kind: K }> => s.kind === kind);
        if (found) return found;
        await new Promise<void>((resolve) => waiters.push(resolve));
      }
    },
  };
}

describe('documented defaults', () => {
  it('GIVEN no options THEN answers are capped at 16 MiB, error bodies at 64 KiB and 10 s, stream lines at 1 MiB, bad-line reports at one a minute', () => {
    expect(DEFAULT_LIMITS).toEqual({ bodyBytes: 16 * 1024 * 1024, errorBodyBytes: 64 * 1024 });
    expect(DEFAULT_TIMEOUTS.errorBodyMs).toBe(10_000);
    expect(DEFAULT_MAX_LINE_BYTES).toBe(1024 * 1024);
    expect(DEFAULT_BAD_LINE_REPORT_MS).toBe(60_000);
  });
});

describe('unary answers that never end', () => {
  it('GIVEN a 200 answer whose body never ends WHEN called THEN a PlatformBadResponseError names the operation and the limit, and the connection is closed', async () => {
    server.route(LISTINGS, reply.stream({ heartbeatAtOpen: false }));
    const client = makeClient({ limits: { bodyBytes: 256 * 1024 }, timeouts: { totalMs: 10_000 } });

    const pending = failure(listListings(client));
    const written = await flood(await server.nextStream(LISTINGS));
    const error = await pending;

    expect(error).toBeInstanceOf(PlatformBadResponseError);
    const bad = error as PlatformBadResponseError;
    expect(bad.message).toContain('Marketplace/ListListingsForCollectible');
    expect(bad.message).toContain('larger than the limit of 262144 bytes');
    expect(bad.status).toBe(200);
    expect(written).toBeLessThan(FLOOD_CAP);
    // A body that is too large would be too large again: not retried.
    expect(server.requestsTo(LISTINGS)).toHaveLength(1);
  });

  it('GIVEN a 500 answer whose error body never ends WHEN called THEN the default 64 KiB limit ends it as a transient bad response (HTTP 500)', async () => {
    server.route(LISTINGS, reply.stream({ status: 500, heartbeatAtOpen: false }));
    const client = makeClient({ retry: { retries: 0 }, timeouts: { totalMs: 10_000 } });

    const pending = failure(listListings(client));
    const written = await flood(await server.nextStream(LISTINGS));
    const error = await pending;

    expect(error).toBeInstanceOf(PlatformBadResponseError);
    const bad = error as PlatformBadResponseError;
    expect(bad.status).toBe(500);
    expect(bad.message).toContain('error answer body is larger than the limit of 65536 bytes');
    expect(written).toBeLessThan(FLOOD_CAP);
    expect(errorReply(error, 'r1').lines).toEqual([
      "The platform's Marketplace service is having trouble (HTTP 500). Try again in a minute.",
    ]);
  });

  it('GIVEN a 503 whose error body trickles one byte every 20 ms WHEN errorBodyMs is 200 THEN the call fails with a bad response naming that time, and the connection is closed', async () => {
    server.route(LISTINGS, reply.stream({ status: 503, heartbeatAtOpen: false }));
    const client = makeClient({ retry: { retries: 0 }, timeouts: { errorBodyMs: 200, totalMs: 10_000 } });

    const pending = failure(listListings(client));
    const written = await trickle(await server.nextStream(LISTINGS), 20);
    const error = await pending;

    expect(error).toBeInstanceOf(PlatformBadResponseError);
    expect((error as PlatformBadResponseError).status).toBe(503);
    expect((error as Error).message).toContain('error answer body did not end within 200 ms');
    expect(written).toBeLessThan(10_000);
  });

  it('GIVEN a 429 with an endless body WHEN the limit cuts it THEN it is still a rate-limit error with its Retry-After', async () => {
    server.route(LISTINGS, reply.stream({ status: 429, heartbeatAtOpen: false, headers: { 'retry-after': '2' } }));
    const client = makeClient({ retry: { retries: 0 }, limits: { errorBodyBytes: 1024 } });

    const pending = failure(listListings(client));
    await flood(await server.nextStream(LISTINGS));
    const error = await pending;

    expect(error).toBeInstanceOf(PlatformApiError);
    expect((error as PlatformApiError).isRateLimited).toBe(true);
    expect((error as PlatformApiError).retryAfterMs).toBe(2_000);
  });
});

describe('SubscribeEvents answered with a non-2xx status and an endless error body', () => {
  it('GIVEN a 503 with an endless error body WHEN subscribing THEN the open fails with a bad response naming the limit, the connection is closed, and the client reconnects', async () => {
    server.route(EVENTS, reply.stream({ status: 503, heartbeatAtOpen: false }), reply.stream());
    const client = makeClient({ limits: { errorBodyBytes: 4 * 1024 } });
    const recorder = stateRecorder();
    const events = subscribe(client, { onState: recorder.onState });

    const first = events.next();
    const written = await flood(await server.nextStream(EVENTS));
    const disconnected = await recorder.first('disconnected');
    const healthy = await server.nextStream(EVENTS);
    await healthy.send({ log: wireEventLog(1) });

    expect((await first).value).toMatchObject({ blockNumber: wireEventLog(1).blockNumber });
    expect(disconnected.reason).toBeInstanceOf(PlatformBadResponseError);
    expect(disconnected.reason.message).toContain('Indexer/SubscribeEvents');
    expect(disconnected.reason.message).toContain('larger than the limit of 4096 bytes');
    expect(disconnected.willReconnect).toBe(true);
    expect(written).toBeLessThan(FLOOD_CAP);
    await events.return(undefined);
  });

  it('GIVEN a 401 whose error body trickles WHEN errorBodyMs passes THEN the iterator ends with a final bad response (HTTP 401) and does not reconnect', async () => {
    server.route(EVENTS, reply.stream({ status: 401, heartbeatAtOpen: false }));
    const client = makeClient({ timeouts: { errorBodyMs: 200 } });
    const events = subscribe(client);

    const ending = failure(events.next());
    const written = await trickle(await server.nextStream(EVENTS), 20);
    const error = await ending;

    expect(error).toBeInstanceOf(PlatformBadResponseError);
    expect((error as PlatformBadResponseError).status).toBe(401);
    expect((error as Error).message).toContain('did not end within 200 ms');
    expect(written).toBeLessThan(10_000);
    expect(server.requestsTo(EVENTS)).toHaveLength(1);
  });
});

describe('stream liveness counts complete lines only', () => {
  it('GIVEN a stream that trickles one byte every 30 ms and never ends a line WHEN the heartbeat timeout passes THEN it is reported disconnected and reconnects', async () => {
    server.route(EVENTS, reply.stream());
    const client = makeClient();
    const recorder = stateRecorder();
    const events = subscribe(client, { heartbeatTimeoutMs: 300, onState: recorder.onState });

    const pending = events.next();
    const trickled = trickle(await server.nextStream(EVENTS), 30);
    const disconnected = await recorder.first('disconnected');
    const reconnecting = await recorder.first('reconnecting');
    controller.abort();
    await pending;

    expect(disconnected.reason).toBeInstanceOf(PlatformTimeoutError);
    expect(disconnected.reason.message).toContain('waiting for a heartbeat or a line');
    expect(disconnected.willReconnect).toBe(true);
    expect(reconnecting.attempt).toBe(2);
    expect(await trickled).toBeLessThan(10_000);
  });

  it('GIVEN a stream that answers with headers and never a line WHEN the heartbeat timeout passes THEN it was never connected and is dropped; a heartbeat on the next connection makes it connected', async () => {
    server.route(EVENTS, reply.stream({ heartbeatAtOpen: false }), reply.stream({ heartbeatAtOpen: false }));
    const client = makeClient();
    const recorder = stateRecorder();
    const events = subscribe(client, { heartbeatTimeoutMs: 300, onState: recorder.onState });

    const pending = events.next();
    await server.nextStream(EVENTS);
    const disconnected = await recorder.first('disconnected');
    const next = await server.nextStream(EVENTS);
    await next.heartbeat();
    const connected = await recorder.first('connected');
    await next.send({ log: wireEventLog(7) });

    expect((await pending).value).toMatchObject({ uid: 'uid-7' });
    expect(disconnected.reason).toBeInstanceOf(PlatformTimeoutError);
    expect(recorder.states.slice(0, 2).map((s) => s.kind)).toEqual(['connecting', 'disconnected']);
    expect(connected.attempt).toBe(2);
    await events.return(undefined);
  });

  it('GIVEN an events stream whose server sends headers and then nothing WHEN /readyz and /status look during its connections THEN neither ever says connected; they do once lines come', async () => {
    server.route(EVENTS, reply.stream({ heartbeatAtOpen: false }));
    server.route('/idx/polygon/rpc/Indexer/SubscribeReceipts', reply.stream());
    const client = makeClient();
    const dataDir = await mkdtemp(join(tmpdir(), 'floorwatch-liveness-'));
    const streams = new NetworkStreams(
      client,
      'polygon',
      { onLog: () => undefined, onReceipt: () => undefined },
      pino({ level: 'silent' }),
      { heartbeatTimeoutMs: 400, reconnect: FAST_RECONNECT },
    );
    const health = (): StreamHealth[] => [streams.health()];
    const readiness = () =>
      checkReadiness({ watchedNetworks: () => ['polygon'], streams: health, chats: () => [], dataDir });
    const status = await engineOn(client, dataDir, async () => ({
      streams: health(),
      journal: { records: 0, pending: 0, failed: 0 },
      counters: { logs: 0, events: 0, matched: 0, deliveries: 0, reorged: 0, dropped: 0 },
      backlog: undefined,
    }));
    try {
      void streams.plan({ contractAddresses: [ADDR.collection] });
      const seen = new Set<string>();
      // Three connections of 400 ms each, looked at every few milliseconds.
      while (server.requestsTo(EVENTS).length < 4) {
        seen.add(streams.health().events);
        await pause(5);
      }
      const notReady = await readiness();
      const statusText = await status('/status');

      server.route(EVENTS, reply.stream());
      while (streams.health().events !== 'connected') await pause(10);
      const ready = await readiness();

      expect([...seen]).not.toContain('connected');
      expect(seen.has('connecting')).toBe(true);
      expect(notReady.ready).toBe(false);
      expect(notReady.reasons.join('\n')).toMatch(/alert events stream of polygon is (connecting|reconnecting)/);
      expect(statusText).toMatch(/⚠️ polygon: events (connecting|reconnecting), receipts /);
      // The receipts stream is left silent after its opening heartbeat here: only the events are looked at.
      expect(ready.streams.polygon?.events).toBe('connected');
      expect(ready.reasons.filter((r) => r.includes('events'))).toEqual([]);
    } finally {
      streams.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('GIVEN the default line cap WHEN a line grows past 1 MiB without a newline THEN the connection is dropped as a bad response and reopened', async () => {
    server.route(EVENTS, reply.stream());
    const client = makeClient();
    const recorder = stateRecorder();
    const events = subscribe(client, { onState: recorder.onState });

    const pending = events.next();
    const endless = await server.nextStream(EVENTS);
    await endless.write('{"log":"');
    const written = await flood(endless);
    const disconnected = await recorder.first('disconnected');
    await (await server.nextStream(EVENTS)).send({ log: wireEventLog(5) });

    expect((await pending).value).toMatchObject({ blockNumber: wireEventLog(5).blockNumber });
    expect(disconnected.reason).toBeInstanceOf(PlatformBadResponseError);
    expect(disconnected.reason.message).toContain(`longer than ${1024 * 1024} bytes`);
    expect(written).toBeLessThan(FLOOD_CAP);
    await events.return(undefined);
  });
});

describe('garbage lines are reported as a summary, not one by one', () => {
  function garbage(count: number): string {
    return Array.from({ length: count }, (_, i) => `<html>garbage ${i} key=${ACCESS_KEY} ${'z'.repeat(500)}\n`).join(
      '',
    );
  }

  it('GIVEN 1,000 garbage lines within one interval WHEN read THEN one report comes at once and one with the other 999 when the subscription ends', async () => {
    server.route(EVENTS, reply.stream());
    const client = makeClient();
    const reports: Array<{ sample: PlatformBadResponseError; skipped: number }> = [];
    const events = subscribe(client, { onBadLine: (sample, skipped) => reports.push({ sample, skipped }) });

    const pending = events.next();
    const stream = await server.nextStream(EVENTS);
    await stream.write(garbage(1_000));
    await stream.send({ log: wireEventLog(1) });
    const first = await pending;

    expect((first.value as EventLog).blockNumber).toBe(wireEventLog(1).blockNumber);
    expect(reports.map((r) => r.skipped)).toEqual([1]);
    await events.return(undefined);
    expect(reports.map((r) => r.skipped)).toEqual([1, 999]);
    for (const { sample } of reports) {
      expect(sample).toBeInstanceOf(PlatformBadResponseError);
      expect(sample.message).toContain('not JSON');
      expect(sample.message).not.toContain(ACCESS_KEY);
      expect(sample.message.length).toBeLessThan(250);
    }
    expect(server.requestsTo(EVENTS)).toHaveLength(1);
  });

  it('GIVEN bursts of bad lines WHEN the report interval is 100 ms THEN a few reports account for every line', async () => {
    server.route(EVENTS, reply.stream());
    const client = makeClient();
    const reports: number[] = [];
    const events = subscribe(client, { badLineReportMs: 100, onBadLine: (_, skipped) => reports.push(skipped) });

    const pending = events.next();
    const stream = await server.nextStream(EVENTS);
    for (let burst = 0; burst < 3; burst++) {
      await stream.write(garbage(100));
      await pause(150);
    }
    await stream.send({ log: wireEventLog(1) });
    await pending;
    await events.return(undefined);

    expect(reports.reduce((a, b) => a + b, 0)).toBe(300);
    expect(reports.length).toBeLessThanOrEqual(10);
  });
});

describe('Retry-After beyond an hour', () => {
  it('GIVEN a 429 with Retry-After: 251606819987 WHEN the call gives up THEN the user is told to try again later, not in 251606819987 s', async () => {
    server.route(LISTINGS, reply.text('', { status: 429, headers: { 'retry-after': '251606819987' } }));
    const client = makeClient();

    const error = await failure(listListings(client));

    expect(error).toBeInstanceOf(PlatformApiError);
    expect(server.requestsTo(LISTINGS)).toHaveLength(1);
    expect(errorReply(error, 'r2').lines).toEqual([
      'The platform is rate-limiting requests (Marketplace). Try again later.',
    ]);
  });

  it('GIVEN a 429 with Retry-After as a date in the year 9999 WHEN the call gives up THEN the user is told to try again later', async () => {
    server.route(
      LISTINGS,
      reply.text('', { status: 429, headers: { 'retry-after': 'Fri, 31 Dec 9999 23:59:59 GMT' } }),
    );
    const client = makeClient();

    const error = await failure(listListings(client));

    expect(errorReply(error, 'r3').lines?.[0]).toMatch(/Try again later\.$/);
  });
});

/*
 * Issue 24, part 3: records are checked at the client's door. A record with an address that is not
 * one, an amount that is no whole number or past 2^256, a negative price or one of 1e308 never
 * reaches a command, a store or the alert pipeline: in a list it is dropped and counted, as a lone
 * answer it is a bad response a user can read.
 */
describe('records checked at the door', () => {
  const SEARCH = '/meta/rpc/Metadata/SearchMetadata';
  const BALANCES = '/idx/polygon/rpc/Indexer/GetTokenBalancesByContract';
  const COLLECTIBLES = '/mk/polygon/rpc/Marketplace/ListCollectibles';
  const NATIVE = '0x0000000000000000000000000000000000000000';
  const HUGE = `1${'0'.repeat(80)}`;
  let dataDir: string;

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'floorwatch-records-'));
  });
  afterEach(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  function balance(account: string, amount: string, tokenID = '1'): Record<string, unknown> {
    return { contractAddress: ADDR.collection, accountAddress: account, balance: amount, tokenID, chainId: 137 };
  }

  function listed(tokenId: string, order: Record<string, unknown>): Record<string, unknown> {
    return {
      metadata: wireTokenMetadata({ tokenId, name: `Dragon #${tokenId}` }),
      order: wireOrder({ orderId: `o${tokenId}`, tokenId, priceCurrencyAddress: NATIVE, ...order }),
    };
  }

  it('GIVEN SearchMetadata answers an address with a trailing space WHEN /watch add runs in the bot THEN it says no collection matches, a good match next to it is watched under its canonical address, the bot goes on, and a restart reads its state', async () => {
    const checksummed = '0x52908400098527886E0F7030069857D2E4169EE7';
    server.route(
      SEARCH,
      reply.dynamic((request) => {
        const filter = (request.body as { filter?: string }).filter ?? '';
        const spaced = wireContractInfo({ address: `${ADDR.collection} `, name: 'Spacey' });
        if (filter === 'spacey') return reply.json({ tokenMetadata: [], contractInfo: [spaced] });
        const good = wireContractInfo({ address: checksummed, name: 'Dragons' });
        return reply.json({ tokenMetadata: [], contractInfo: [{ ...spaced, name: 'Dragons' }, good] });
      }),
    );
    server.route(EVENTS, reply.stream());
    server.route('/idx/polygon/rpc/Indexer/SubscribeReceipts', reply.stream());
    const env = {
      FLOORWATCH_DATA_DIR: dataDir,
      FLOORWATCH_METADATA_URL: `${server.url}/meta`,
      FLOORWATCH_MARKETPLACE_URL: `${server.url}/mk/{network}`,
      FLOORWATCH_INDEXER_URL: `${server.url}/idx/{network}`,
      FLOORWATCH_RELAYER_URL: `${server.url}/rel/{network}`,
      FLOORWATCH_API_URL: `${server.url}/api`,
      FLOORWATCH_ACCESS_KEY: ACCESS_KEY,
      FLOORWATCH_NETWORKS: 'polygon',
      FLOORWATCH_HTTP_PORT: '0',
    };

    const bot = spawnEntryPoint(env);
    try {
      bot.child.stdin.write('/watch add spacey sale\n/watch add dragons sale\n/watch list\n/status\n');
      await waitUntil(() => bot.stdout.includes('Floorwatch status'), 30_000);
      const port = /"port":(\d+)[^\n]*health and metrics listening/.exec(bot.stderr)?.[1];
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(metrics).toMatch(
        /floorwatch_platform_records_dropped_total\{operation="Metadata\/SearchMetadata"\} [1-9]/,
      );
    } finally {
      bot.child.stdin.end();
    }
    const first = await bot.exited;
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('No collection matches "spacey" on polygon');
    expect(first.stdout).toContain('r1 sale of Dragons (polygon)');
    expect(first.stdout).not.toContain('Something went wrong');
    expect(first.stdout).toMatch(/Platform records dropped .*Metadata\/SearchMetadata/);
    const dropped = first.stderr.split('\n').find((l) => l.includes('dropped platform records'));
    expect(JSON.parse(dropped ?? '{}')).toMatchObject({
      level: 40,
      operation: 'Metadata/SearchMetadata',
      reason: expect.stringContaining('contractInfo[0] is not a valid record: address: expected an address'),
    });
    const state = JSON.parse(await readFile(join(dataDir, 'state.json'), 'utf8'));
    expect(state.rules.map((r: { collection: string }) => r.collection)).toEqual([checksummed.toLowerCase()]);

    const restarted = spawnEntryPoint(env);
    restarted.child.stdin.end('/watch list\n');
    const second = await restarted.exited;
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('r1 sale of Dragons (polygon)');
  });

  it('GIVEN balances that are not numbers WHEN /holders and /holdings run THEN the good balances are counted, the bad ones dropped, and /status counts them', async () => {
    server.route(SEARCH, reply.json({ tokenMetadata: [], contractInfo: [wireContractInfo()] }));
    const run = await engineOn(makeClient(), dataDir);

    server.route(
      BALANCES,
      reply.json({
        balances: [
          balance(ADDR.seller, '3'),
          balance(ADDR.buyer, 'lots'),
          balance(ADDR.items, '1'),
          balance(ADDR.currency, '-2'),
        ],
      }),
    );
    const holders = await run(`/holders ${ADDR.collection}`);
    server.route(
      BALANCES,
      reply.json({
        balances: [balance(ADDR.buyer, '2', '5'), balance(ADDR.buyer, 'many', '6'), balance(ADDR.buyer, '1.5', '7')],
      }),
    );
    const holdings = await run(`/holdings ${ADDR.collection} ${ADDR.buyer}`);
    const status = await run('/status');

    expect(holders).not.toContain('Something went wrong');
    expect(holders).toMatch(/1\. 0x2222…2222 holds 3 \(75%\)/);
    expect(holders).toMatch(/2\. 0x6666…6666 holds 1 \(25%\)/);
    expect(holders).toContain('2 holders in all.');
    expect(holdings).not.toContain('Something went wrong');
    expect(holdings).toContain('2 tokens across 1 id.');
    // Four from the commands, and the two bad ones of the same answer when /status probes the Indexer.
    expect(status).toContain(
      'Platform records dropped (values that failed their checks): 6 since start (Indexer/GetTokenBalancesByContract 6)',
    );
  });

  it('GIVEN a balance past 2^256 WHEN /holders and /holdings run THEN it is dropped, not shown as the whole supply', async () => {
    server.route(SEARCH, reply.json({ tokenMetadata: [], contractInfo: [wireContractInfo()] }));
    const run = await engineOn(makeClient(), dataDir);

    server.route(BALANCES, reply.json({ balances: [balance(ADDR.seller, '3'), balance(ADDR.buyer, HUGE)] }));
    const holders = await run(`/holders ${ADDR.collection}`);
    server.route(BALANCES, reply.json({ balances: [balance(ADDR.buyer, '2', '5'), balance(ADDR.buyer, HUGE, '6')] }));
    const holdings = await run(`/holdings ${ADDR.collection} ${ADDR.buyer}`);

    expect(holders).toMatch(/1\. 0x2222…2222 holds 3 \(100%\)/);
    expect(holders).toContain('1 holder in all.');
    expect(holders).not.toContain('holders in all');
    // No number of 20 digits, outside the whole addresses given to copy.
    expect(holders.replace(/0x[0-9a-fA-F]{40}/g, '')).not.toMatch(/\d{20}/);
    expect(holdings).toContain('2 tokens across 1 id.');
    expect(holdings).not.toMatch(/\d{20}/);
  });

  it('GIVEN a listing with a negative price WHEN /floor runs THEN the floor is the cheapest real listing', async () => {
    server.route(SEARCH, reply.json({ tokenMetadata: [], contractInfo: [wireContractInfo()] }));
    server.route(
      COLLECTIBLES,
      reply.json({
        collectibles: [
          listed('1', { priceAmount: '-1000000000000000000', priceAmountFormatted: '-1', priceUSD: -1.23 }),
          listed('2', {}),
        ],
      }),
    );
    const run = await engineOn(makeClient(), dataDir);

    const floor = await run(`/floor ${ADDR.collection}`);

    expect(floor).toContain('Floor: 1.5 POL ($1.23)');
    expect(floor).toContain('Dragon #2');
    expect(floor).not.toContain('Dragon #1');
    expect(floor).not.toContain('-1');
  });

  it('GIVEN a listing priced at 1e308 USD WHEN /floor runs THEN it is dropped rather than printed as 400 digits', async () => {
    server.route(SEARCH, reply.json({ tokenMetadata: [], contractInfo: [wireContractInfo()] }));
    server.route(COLLECTIBLES, reply.json({ collectibles: [listed('3', { priceUSD: 1e308 }), listed('2', {})] }));
    const run = await engineOn(makeClient(), dataDir);

    const floor = await run(`/floor ${ADDR.collection}`);

    expect(floor).toContain('Floor: 1.5 POL ($1.23)');
    expect(floor).not.toContain('Dragon #3');
    expect(floor).not.toMatch(/\d{1,3}(,\d{3}){6}/);
  });

  it('GIVEN a lone record with a bad address or a negative price WHEN it is the answer THEN the call fails with a PlatformBadRecordError a user can read, not retried', async () => {
    const client = makeClient();
    server.route(
      '/mk/polygon/rpc/Marketplace/GetCollectible',
      reply.json({ metadata: wireTokenMetadata({ contractAddress: `${ADDR.collection} ` }) }),
    );
    server.route(
      '/mk/polygon/rpc/Marketplace/GetHighestPriceListingForCollectible',
      reply.json({ order: wireOrder({ priceAmount: '-5' }) }),
    );

    const token = await failure(
      client.marketplace.getCollectible({ network: 'polygon', contractAddress: ADDR.collection, tokenId: '42' }),
    );
    const order = await failure(
      client.marketplace.getHighestPriceListingForCollectible({
        network: 'polygon',
        contractAddress: ADDR.collection,
        tokenId: '42',
      }),
    );

    expect(token).toBeInstanceOf(PlatformBadRecordError);
    expect(token).toMatchObject({ record: 'token details', fields: ['contractAddress'], status: 200 });
    expect(errorReply(token, 'r4').lines).toEqual([
      "The platform's Marketplace service sent token details with impossible values (contractAddress), so the bot did not use it. It was logged for the operators.",
    ]);
    expect(order).toMatchObject({ record: 'an order', fields: ['priceAmount'] });
    expect((order as Error).message).toContain('Marketplace/GetHighestPriceListingForCollectible');
    expect(server.requestsTo('/mk/polygon/rpc/Marketplace/GetCollectible')).toHaveLength(1);
  });

  it('GIVEN stream logs with a spaced contract address or a negative block WHEN read THEN they are dropped and counted, and a checksummed address is handed out in lower case', async () => {
    server.route(EVENTS, reply.stream());
    const client = makeClient();
    const reports: PlatformBadResponseError[] = [];
    const events = subscribe(client, { onBadLine: (sample) => reports.push(sample) });

    const pending = [events.next(), events.next()];
    const stream = await server.nextStream(EVENTS);
    await stream.send({ log: wireEventLog(1, { contractAddress: `${ADDR.collection} ` }) });
    await stream.send({ log: wireEventLog(2, { blockNumber: -5 }) });
    await stream.send({
      log: wireEventLog(3, { contractAddress: ADDR.collection.replace(/1/g, 'A').toUpperCase().replace('0X', '0x') }),
    });
    await stream.send({ log: wireEventLog(4) });
    const delivered = (await Promise.all(pending)).map((r) => r.value as EventLog);
    await events.return(undefined);

    expect(delivered.map((l) => l.uid)).toEqual(['uid-3', 'uid-4']);
    expect(delivered[0]?.contractAddress).toBe(ADDR.collection.replace(/1/g, 'a'));
    expect(client.droppedRecords.snapshot().byOperation.get('Indexer/SubscribeEvents')).toBe(2);
    expect(reports[0]?.message).toContain('contractAddress: expected an address');
  });
});
