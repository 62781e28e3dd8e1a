/**
 * SubscribeEvents / SubscribeReceipts against a real server writing NDJSON (wire-protocol.md §1.8):
 * framing, heartbeats, reconnects, in-stream and open errors, and the ways a consumer ends it.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type EventLog,
  PlatformApiError,
  PlatformBadResponseError,
  type PlatformClient,
  PlatformTimeoutError,
  type StreamOptions,
  type StreamState,
} from '../../../src/platform/index.ts';
import { ACCESS_KEY, ADDR, createTestClient, wireEventLog, wireReceipt } from '../../helpers/platform-fixtures.ts';
import { pause, RpcTestServer, reply } from '../../helpers/rpc-test-server.ts';

const EVENTS = '/idx/polygon/rpc/Indexer/SubscribeEvents';
const RECEIPTS = '/idx/polygon/rpc/Indexer/SubscribeReceipts';
const FILTER = { contractAddresses: [ADDR.collection] };
const FAST_RECONNECT = { initialDelayMs: 10, maxDelayMs: 50 };

let server: RpcTestServer;
let client: PlatformClient;
let controller: AbortController;

beforeEach(async () => {
  server = await RpcTestServer.start();
  client = createTestClient(server);
  controller = new AbortController();
  server.route(EVENTS, reply.stream());
  server.route(RECEIPTS, reply.stream());
});

afterEach(async () => {
  controller.abort();
  await server.close();
  await client.close();
});

/** The typed log for {@link wireEventLog}: `null` values dropped. */
function typedLog(index: number, overrides: Record<string, unknown> = {}): EventLog {
  const log = wireEventLog(index, overrides);
  for (const key of Object.keys(log)) if (log[key] === null) delete log[key];
  return log as unknown as EventLog;
}

function subscribe(options: StreamOptions = {}) {
  return client.indexer.subscribeEvents(
    { network: 'polygon', filter: FILTER },
    { signal: controller.signal, reconnect: FAST_RECONNECT, ...options },
  );
}

/** Pulls `count` values, failing (instead of hanging) when they do not come in time. */
async function take<T>(iterator: AsyncIterator<T>, count: number, timeoutMs = 5_000): Promise<T[]> {
  const out: T[] = [];
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`took ${out.length} of ${count} values in ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    while (out.length < count) {
      const next = await Promise.race([iterator.next(), timeout]);
      if (next.done) throw new Error(`the stream ended after ${out.length} of ${count} values`);
      out.push(next.value);
    }
    return out;
  } finally {
    clearTimeout(timer);
  }
}

/** The error the iterator ends with (fails when it ends cleanly or takes too long). */
async function endingError(iterator: AsyncIterator<unknown>, timeoutMs = 5_000): Promise<unknown> {
  const deadline = Date.now() + timeoutMs;
  try {
    while (Date.now() < deadline) {
      const next = await Promise.race([
        iterator.next(),
        pause(Math.max(1, deadline - Date.now())).then(() => {
          throw new Error('the stream did not end in time');
        }),
      ]);
      if (next.done) throw new Error('the stream ended without an error');
    }
  } catch (error) {
    return error;
  }
  throw new Error('the stream did not end in time');
}

function kinds(states: StreamState[]): string[] {
  return states.map((s) => (s.kind === 'connecting' || s.kind === 'connected' ? `${s.kind}:${s.attempt}` : s.kind));
}

describe('framing', () => {
  it('GIVEN the heartbeat at open WHEN records follow THEN they arrive in order and the state goes connecting -> connected', async () => {
    const states: StreamState[] = [];
    const events = subscribe({ onState: (s) => states.push(s) });
    const pending = take(events, 2);
    const stream = await server.nextStream(EVENTS);
    await stream.send({ log: wireEventLog(1) });
    await stream.send({ log: wireEventLog(2) });

    expect(await pending).toEqual([typedLog(1), typedLog(2)]);
    expect(kinds(states)).toEqual(['connecting:1', 'connected:1']);
    await events.return(undefined);
  });

  it('GIVEN lines written in chunks WHEN read a batch at a time THEN each batch holds what arrived together, none empty, all in order', async () => {
    const batches = client.indexer.subscribeEventBatches(
      { network: 'polygon', filter: FILTER },
      { signal: controller.signal, reconnect: FAST_RECONNECT },
    );
    const first = take(batches, 1);
    const stream = await server.nextStream(EVENTS);
    await stream.write(Array.from({ length: 50 }, (_, i) => `${JSON.stringify({ log: wireEventLog(i) })}\n`).join(''));
    const [batch] = await first;
    const seen = [...(batch ?? [])];
    expect(seen.length).toBeGreaterThan(0);
    // A heartbeat alone is no batch; the next lines are.
    await stream.write('\n');
    await stream.write(`${JSON.stringify({ log: wireEventLog(50) })}\n`);
    while (seen.length < 51) {
      const [next] = await take(batches, 1);
      expect(next?.length).toBeGreaterThan(0);
      seen.push(...(next ?? []));
    }
    expect(seen).toEqual(Array.from({ length: 51 }, (_, i) => typedLog(i)));
    await batches.return(undefined);
  });

  it('GIVEN many lines in one chunk WHEN written at once THEN every record arrives in order', async () => {
    const events = subscribe();
    const pending = take(events, 200);
    const stream = await server.nextStream(EVENTS);
    const lines = Array.from({ length: 200 }, (_, i) => `${JSON.stringify({ log: wireEventLog(i) })}\n`).join('');
    await stream.write(lines);

    const logs = await pending;
    expect(logs.map((l) => l.blockNumber)).toEqual(Array.from({ length: 200 }, (_, i) => 61000000 + i));
    expect(logs[199]).toEqual(typedLog(199));
  });

  it('GIVEN lines cut across chunks at odd places WHEN written piece by piece THEN each record arrives whole', async () => {
    const events = subscribe();
    const pending = take(events, 3);
    const stream = await server.nextStream(EVENTS);
    const text = [1, 2, 3].map((i) => `${JSON.stringify({ log: wireEventLog(i) })}\n`).join('');
    const first = text.indexOf('\n');
    // Inside a key, right before and right after a newline, and in the middle of the last record.
    await stream.writeInPieces(text, [1, 10, first, first + 1, first + 2, text.length - 40, text.length - 1]);

    expect(await pending).toEqual([typedLog(1), typedLog(2), typedLog(3)]);
  });

  it('GIVEN multi-byte UTF-8 characters cut between chunks WHEN written THEN they are decoded whole', async () => {
    const events = subscribe();
    const pending = take(events, 1);
    const stream = await server.nextStream(EVENTS);
    const name = 'Drachen-Ü 🐉 ドラゴン';
    const wire = wireEventLog(5, {
      event: { topicHash: '0x1', eventSig: 'Named(string name)', types: ['string'], names: ['name'], values: [name] },
    });
    const bytes = Buffer.from(`${JSON.stringify({ log: wire })}\n`, 'utf8');
    const dragon = bytes.indexOf(Buffer.from('🐉', 'utf8'));
    const katakana = bytes.indexOf(Buffer.from('ド', 'utf8'));
    const umlaut = bytes.indexOf(Buffer.from('Ü', 'utf8'));
    await stream.writeInPieces(bytes, [umlaut + 1, dragon + 1, dragon + 2, dragon + 3, katakana + 2]);

    const [log] = await pending;
    expect(log?.event?.values).toEqual([name]);
  });

  it('GIVEN blank-line heartbeats and CRLF endings between records WHEN read THEN only the records come out', async () => {
    const events = subscribe();
    const pending = take(events, 3);
    const stream = await server.nextStream(EVENTS);
    await stream.write(`\n\n${JSON.stringify({ log: wireEventLog(1) })}\n\n\r\n`);
    await stream.heartbeat();
    await stream.write(`${JSON.stringify({ log: wireEventLog(2) })}\r\n\n`);
    await stream.write(`${JSON.stringify({ log: wireEventLog(3) })}\n`);

    expect(await pending).toEqual([typedLog(1), typedLog(2), typedLog(3)]);
    expect(server.requestsTo(EVENTS)).toHaveLength(1);
  });

  it('GIVEN several next() calls made without waiting WHEN records arrive THEN they resolve in order, one record each', async () => {
    const events = subscribe();
    const calls = [events.next(), events.next(), events.next()];
    const stream = await server.nextStream(EVENTS);
    await stream.send({ log: wireEventLog(1) });
    await stream.write([2, 3].map((i) => `${JSON.stringify({ log: wireEventLog(i) })}\n`).join(''));

    const results = await Promise.all(calls);
    expect(results.map((r) => r.value)).toEqual([typedLog(1), typedLog(2), typedLog(3)]);
    await events.return(undefined);
  });

  it('GIVEN receipts WHEN streamed THEN each {"receipt": ...} line becomes a typed receipt', async () => {
    const receipts = client.indexer.subscribeReceipts(
      { network: 'polygon', filter: { contractAddress: ADDR.collection } },
      { signal: controller.signal },
    );
    const pending = take(receipts, 2);
    const stream = await server.nextStream(RECEIPTS);
    await stream.send({ receipt: wireReceipt() });
    await stream.send({ receipt: wireReceipt({ final: true, reorged: null }) });

    const [first, second] = await pending;
    expect(first).toEqual(wireReceipt());
    expect(second?.final).toBe(true);
    expect(second?.reorged).toBe(false);
  });
});

describe('bad lines', () => {
  it('GIVEN a line that is not JSON and badLineReportMs: 0 WHEN read THEN it is reported via onBadLine and the stream goes on', async () => {
    const bad: PlatformBadResponseError[] = [];
    const events = subscribe({ badLineReportMs: 0, onBadLine: (e) => bad.push(e) });
    const pending = take(events, 2);
    const stream = await server.nextStream(EVENTS);
    await stream.send({ log: wireEventLog(1) });
    await stream.write('{"log":{"id":1,\n');
    await stream.write(`not json at all, key=${ACCESS_KEY}\n`);
    await stream.send({ log: wireEventLog(2) });

    expect(await pending).toEqual([typedLog(1), typedLog(2)]);
    expect(bad).toHaveLength(2);
    for (const error of bad) {
      expect(error).toBeInstanceOf(PlatformBadResponseError);
      expect(error.operation).toBe('Indexer/SubscribeEvents');
      expect(error.message).toContain('not JSON');
      expect(error.message).not.toContain(ACCESS_KEY);
    }
    expect(server.requestsTo(EVENTS)).toHaveLength(1);
  });

  it('GIVEN records of the wrong shape or without "log" and badLineReportMs: 0 WHEN read THEN each is reported and skipped', async () => {
    const bad: PlatformBadResponseError[] = [];
    const events = subscribe({ badLineReportMs: 0, onBadLine: (e) => bad.push(e) });
    const pending = take(events, 1);
    const stream = await server.nextStream(EVENTS);
    await stream.send({ log: wireEventLog(1, { blockNumber: 'soon' }) });
    await stream.send({ receipt: wireReceipt() });
    await stream.send({ log: null });
    await stream.write('42\n');
    await stream.send({ log: wireEventLog(2) });

    expect(await pending).toEqual([typedLog(2)]);
    expect(bad.map((e) => e.message)).toEqual([
      expect.stringContaining('log.blockNumber'),
      expect.stringContaining('no "log"'),
      expect.stringContaining('no "log"'),
      expect.stringContaining('not a JSON object'),
    ]);
  });
});

describe('heartbeat timeout and reconnects', () => {
  it('GIVEN silence longer than the heartbeat timeout WHEN it passes THEN the client reconnects with the same request', async () => {
    const states: StreamState[] = [];
    const events = subscribe({ heartbeatTimeoutMs: 200, onState: (s) => states.push(s) });
    const pending = take(events, 1);
    const silent = await server.nextStream(EVENTS);

    const second = await server.nextStream(EVENTS);
    await second.send({ log: wireEventLog(7) });

    expect(await pending).toEqual([typedLog(7)]);
    await silent.closed;
    expect(second.request.rawBody).toBe(silent.request.rawBody);
    expect(second.request.headers['x-access-key']).toBe(ACCESS_KEY);
    expect(kinds(states)).toEqual([
      'connecting:1',
      'connected:1',
      'disconnected',
      'reconnecting',
      'connecting:2',
      'connected:2',
    ]);
    const disconnected = states[2] as Extract<StreamState, { kind: 'disconnected' }>;
    expect(disconnected.reason).toBeInstanceOf(PlatformTimeoutError);
    expect(disconnected.reason.message).toContain('heartbeat');
    expect(disconnected.willReconnect).toBe(true);
    const reconnecting = states[3] as Extract<StreamState, { kind: 'reconnecting' }>;
    expect(reconnecting.attempt).toBe(2);
    expect(reconnecting.delayMs).toBeGreaterThanOrEqual(5);
    expect(reconnecting.delayMs).toBeLessThanOrEqual(50);
  });

  it('GIVEN regular heartbeats WHEN they come well within the timeout THEN the stream stays on one connection', async () => {
    const events = subscribe({ heartbeatTimeoutMs: 400 });
    const pending = take(events, 1);
    const stream = await server.nextStream(EVENTS);
    for (let i = 0; i < 12; i++) {
      await pause(40);
      await stream.heartbeat();
    }
    await stream.send({ log: wireEventLog(1) });

    expect(await pending).toEqual([typedLog(1)]);
    expect(server.requestsTo(EVENTS)).toHaveLength(1);
  });

  it('GIVEN a consumer that takes longer than the heartbeat timeout per record WHEN records are waiting for it THEN the stream is not reported lost', async () => {
    const states: StreamState[] = [];
    const events = subscribe({ heartbeatTimeoutMs: 300, onState: (s) => states.push(s) });
    const first = events.next();
    const stream = await server.nextStream(EVENTS);
    await stream.write([1, 2, 3].map((i) => `${JSON.stringify({ log: wireEventLog(i) })}\n`).join(''));

    const seen = [(await first).value];
    for (let i = 0; i < 2; i++) {
      await pause(700);
      seen.push((await events.next()).value);
    }
    const fourth = events.next();
    await stream.send({ log: wireEventLog(4) });
    seen.push((await fourth).value);

    expect(seen).toEqual([typedLog(1), typedLog(2), typedLog(3), typedLog(4)]);
    expect(kinds(states)).toEqual(['connecting:1', 'connected:1']);
    expect(server.requestsTo(EVENTS)).toHaveLength(1);
    await events.return(undefined);
  });

  it('GIVEN a consumer that stops asking WHEN the server keeps sending THEN the client stops reading (the server waits) and later every record arrives in order', async () => {
    const events = subscribe({ heartbeatTimeoutMs: 60_000 });
    const first = events.next();
    const stream = await server.nextStream(EVENTS);
    await stream.send({ log: wireEventLog(0) });
    expect((await first).value).toEqual(typedLog(0));

    // Writes until one is not taken by the socket for a while: the client has stopped reading.
    const cap = 64 * 1024 * 1024;
    const batch = 200;
    let sent = 1;
    let written = 0;
    let blocked = false;
    while (!blocked && written < cap) {
      const text = Array.from({ length: batch }, (_, i) => `${JSON.stringify({ log: wireEventLog(sent + i) })}\n`).join(
        '',
      );
      const write = stream.write(text);
      sent += batch;
      written += text.length;
      blocked = (await Promise.race([write.then(() => false), pause(500).then(() => true)])) === true;
    }
    expect(written).toBeLessThan(cap);

    for (let i = 1; i < sent; i++) {
      const next = await events.next();
      expect(next.value?.blockNumber).toBe(61000000 + i);
    }
    expect(server.requestsTo(EVENTS)).toHaveLength(1);
    await events.return(undefined);
  });

  it('GIVEN the server ends the stream WHEN it closes THEN the client reconnects and goes on', async () => {
    const events = subscribe();
    const pending = take(events, 2);
    const first = await server.nextStream(EVENTS);
    await first.send({ log: wireEventLog(1) });
    await first.end();
    const second = await server.nextStream(EVENTS);
    await second.send({ log: wireEventLog(2) });

    expect(await pending).toEqual([typedLog(1), typedLog(2)]);
    expect(server.requestsTo(EVENTS)).toHaveLength(2);
  });

  it('GIVEN the connection drops mid-line WHEN it is lost THEN the partial line is dropped and the client reconnects', async () => {
    const bad: PlatformBadResponseError[] = [];
    const events = subscribe({ onBadLine: (e) => bad.push(e) });
    const pending = take(events, 2);
    const first = await server.nextStream(EVENTS);
    await first.send({ log: wireEventLog(1) });
    await first.write('{"log":{"id":2,"blockNu');
    await pause(20);
    first.destroy();
    const second = await server.nextStream(EVENTS);
    await second.send({ log: wireEventLog(3) });

    expect(await pending).toEqual([typedLog(1), typedLog(3)]);
    expect(bad).toEqual([]);
  });

  it('GIVEN reconnect: false WHEN the server ends the stream THEN the iterator finishes without an error', async () => {
    const events = subscribe({ reconnect: false });
    const seen: EventLog[] = [];
    const consumer = (async () => {
      for await (const log of events) seen.push(log);
    })();
    const stream = await server.nextStream(EVENTS);
    await stream.send({ log: wireEventLog(1) });
    await stream.end();

    await expect(consumer).resolves.toBeUndefined();
    expect(seen).toEqual([typedLog(1)]);
    expect(server.requestsTo(EVENTS)).toHaveLength(1);
  });

  it('GIVEN reconnect: false WHEN the heartbeat times out THEN the iterator throws the PlatformTimeoutError', async () => {
    const events = subscribe({ reconnect: false, heartbeatTimeoutMs: 150 });
    const error = await endingError(events);
    expect(error).toBeInstanceOf(PlatformTimeoutError);
    expect(server.requestsTo(EVENTS)).toHaveLength(1);
  });

  it('GIVEN maxAttempts: 2 WHEN every connection fails THEN the iterator gives up after three connections', async () => {
    server.route(EVENTS, reply.html(503));
    const states: StreamState[] = [];
    const events = subscribe({ reconnect: { ...FAST_RECONNECT, maxAttempts: 2 }, onState: (s) => states.push(s) });
    const error = await endingError(events);
    expect(error).toBeInstanceOf(PlatformBadResponseError);
    expect(server.requestsTo(EVENTS)).toHaveLength(3);
    const last = states.at(-1) as Extract<StreamState, { kind: 'disconnected' }>;
    expect(last.kind).toBe('disconnected');
    expect(last.willReconnect).toBe(false);
  });
  it('GIVEN connections that open and then fail at once WHEN reconnecting THEN the back-off still grows', async () => {
    const delays: number[] = [];
    const events = subscribe({
      reconnect: { initialDelayMs: 10, maxDelayMs: 1_000 },
      onState: (s) => {
        if (s.kind === 'reconnecting') delays.push(s.delayMs);
      },
    });
    const ending = events.next();
    for (let i = 0; i < 5; i++) {
      const stream = await server.nextStream(EVENTS);
      await stream.send({
        webrpcError: { error: 'QuotaRateLimit', code: 1201, msg: 'Quota rate limit exceeded', status: 429 },
      });
    }
    await server.nextStream(EVENTS);
    controller.abort();
    await ending;

    // Ceilings 10, 20, 40, 80, 160; each delay is between half its ceiling and the ceiling.
    expect(delays).toHaveLength(5);
    delays.forEach((delay, i) => {
      expect(delay).toBeGreaterThanOrEqual((10 * 2 ** i) / 2);
      expect(delay).toBeLessThanOrEqual(10 * 2 ** i);
    });
  });

  it('GIVEN a record arrives after failures WHEN the next connection fails THEN the back-off starts again from the first delay', async () => {
    const delays: number[] = [];
    const events = subscribe({
      reconnect: { initialDelayMs: 10, maxDelayMs: 1_000 },
      onState: (s) => {
        if (s.kind === 'reconnecting') delays.push(s.delayMs);
      },
    });
    const pending = take(events, 1);
    for (let i = 0; i < 3; i++) await (await server.nextStream(EVENTS)).end();
    const healthy = await server.nextStream(EVENTS);
    await healthy.send({ log: wireEventLog(1) });
    await pending;
    const more = events.next();
    await healthy.end();
    await server.nextStream(EVENTS);
    controller.abort();
    await more;

    expect(delays).toHaveLength(4);
    expect(delays[2]).toBeGreaterThanOrEqual(20);
    expect(delays[3]).toBeLessThanOrEqual(10);
  });

  it('GIVEN a 429 with Retry-After on open WHEN reconnecting THEN the delay honours it (up to the cap)', async () => {
    server.route(EVENTS, reply.text('', { status: 429, headers: { 'retry-after': '1' } }), reply.stream());
    const states: StreamState[] = [];
    const events = subscribe({
      reconnect: { initialDelayMs: 10, maxDelayMs: 5_000 },
      onState: (s) => {
        states.push(s);
        if (s.kind === 'reconnecting') controller.abort();
      },
    });
    await events.next();
    expect(states.find((s) => s.kind === 'reconnecting')).toMatchObject({ delayMs: 1_000 });
  });

  it('GIVEN a line longer than maxLineBytes WHEN it keeps coming THEN the connection is dropped and reopened', async () => {
    const states: StreamState[] = [];
    const events = subscribe({ maxLineBytes: 1_024, onState: (s) => states.push(s) });
    const pending = take(events, 1);
    const first = await server.nextStream(EVENTS);
    await first.write('{"log":"'.padEnd(2_000, 'x'));
    const second = await server.nextStream(EVENTS);
    await second.send({ log: wireEventLog(1) });

    expect(await pending).toEqual([typedLog(1)]);
    const disconnected = states.find((s) => s.kind === 'disconnected') as Extract<
      StreamState,
      { kind: 'disconnected' }
    >;
    expect(disconnected.reason).toBeInstanceOf(PlatformBadResponseError);
    expect(disconnected.reason.message).toContain('longer than 1024 bytes');
  });
});

describe('errors', () => {
  it('GIVEN a transient webrpcError line WHEN it arrives THEN the client reconnects', async () => {
    const states: StreamState[] = [];
    const events = subscribe({ onState: (s) => states.push(s) });
    const pending = take(events, 2);
    const first = await server.nextStream(EVENTS);
    await first.send({ log: wireEventLog(1) });
    await first.send({ webrpcError: { error: 'WebrpcStreamLost', code: -9, msg: 'stream lost', status: 400 } });
    const second = await server.nextStream(EVENTS);
    await second.send({ log: wireEventLog(2) });

    expect(await pending).toEqual([typedLog(1), typedLog(2)]);
    const disconnected = states.find((s) => s.kind === 'disconnected') as Extract<
      StreamState,
      { kind: 'disconnected' }
    >;
    expect(disconnected.reason).toBeInstanceOf(PlatformApiError);
    expect((disconnected.reason as PlatformApiError).code).toBe(-9);
    await first.closed;
  });

  it('GIVEN a final webrpcError line (1101, HTTP 401) WHEN it arrives THEN the iterator ends with that PlatformApiError', async () => {
    const states: StreamState[] = [];
    const ending = endingError(subscribe({ onState: (s) => states.push(s) }));
    const stream = await server.nextStream(EVENTS);
    await stream.send({
      webrpcError: {
        error: 'AccessKeyNotFound',
        code: 1101,
        msg: `Access key ${ACCESS_KEY} not found`,
        cause: 'key revoked',
        status: 401,
      },
    });

    const error = (await ending) as PlatformApiError;
    expect(error).toBeInstanceOf(PlatformApiError);
    expect(error).toMatchObject({ errorName: 'AccessKeyNotFound', code: 1101, status: 401, causeText: 'key revoked' });
    expect(error.operation).toBe('Indexer/SubscribeEvents');
    expect(error.message).not.toContain(ACCESS_KEY);
    expect(server.requestsTo(EVENTS)).toHaveLength(1);
    expect(states.at(-1)).toMatchObject({ kind: 'disconnected', willReconnect: false });
    await stream.closed;
  });

  it('GIVEN records and a final webrpcError in one chunk WHEN read THEN the records arrive first and then the error ends the iterator', async () => {
    const seen: EventLog[] = [];
    const consumer = (async () => {
      for await (const log of subscribe()) seen.push(log);
    })();
    const stream = await server.nextStream(EVENTS);
    const error = { webrpcError: { error: 'Unauthorized', code: 1000, msg: 'Unauthorized access', status: 401 } };
    await stream.write(
      [{ log: wireEventLog(1) }, { log: wireEventLog(2) }, error, { log: wireEventLog(3) }]
        .map((line) => `${JSON.stringify(line)}\n`)
        .join(''),
    );

    await expect(consumer).rejects.toMatchObject({ errorName: 'Unauthorized', code: 1000 });
    expect(seen).toEqual([typedLog(1), typedLog(2)]);
    expect(server.requestsTo(EVENTS)).toHaveLength(1);
  });

  it('GIVEN a webrpcError line with message instead of msg WHEN it arrives THEN the message is read', async () => {
    const ending = endingError(subscribe());
    const stream = await server.nextStream(EVENTS);
    await stream.send({
      webrpcError: { error: 'InvalidArgument', code: 2001, message: 'filter needs contracts', status: 400 },
    });
    const error = (await ending) as PlatformApiError;
    expect(error.detail).toBe('filter needs contracts');
  });

  it('GIVEN a 401 answer on open WHEN subscribing THEN the iterator throws the PlatformApiError without reconnecting', async () => {
    server.route(
      EVENTS,
      reply.webrpcError(401, { error: 'AccessKeyNotFound', code: 1101, msg: 'Access key not found' }),
    );
    const error = (await endingError(subscribe())) as PlatformApiError;
    expect(error).toBeInstanceOf(PlatformApiError);
    expect(error.status).toBe(401);
    expect(server.requestsTo(EVENTS)).toHaveLength(1);
  });

  it('GIVEN a 503 answer on open WHEN subscribing THEN the client reconnects until the stream opens', async () => {
    server.route(
      EVENTS,
      reply.html(503),
      reply.webrpcError(500, { error: 'WebrpcServerPanic', code: -6, msg: 'panic' }),
      reply.stream(),
    );
    const events = subscribe();
    const pending = take(events, 1);
    const stream = await server.nextStream(EVENTS);
    await stream.send({ log: wireEventLog(1) });

    expect(await pending).toEqual([typedLog(1)]);
    expect(server.requestsTo(EVENTS)).toHaveLength(3);
  });
});

describe('ending a subscription', () => {
  it('GIVEN a consumer in a for-await loop WHEN the signal aborts THEN the loop ends without an error and the connection closes', async () => {
    const events = subscribe();
    const seen: EventLog[] = [];
    const consumer = (async () => {
      for await (const log of events) {
        seen.push(log);
        if (seen.length === 2) controller.abort();
      }
    })();
    const stream = await server.nextStream(EVENTS);
    await stream.send({ log: wireEventLog(1) });
    await stream.send({ log: wireEventLog(2) });
    await stream.send({ log: wireEventLog(3) });

    await expect(consumer).resolves.toBeUndefined();
    expect(seen).toEqual([typedLog(1), typedLog(2)]);
    await stream.closed;
    expect(stream.isClosed).toBe(true);
  });

  it('GIVEN many records in one chunk WHEN the consumer aborts after the second THEN it gets no more and the connection closes', async () => {
    const events = subscribe();
    const seen: EventLog[] = [];
    const consumer = (async () => {
      for await (const log of events) {
        seen.push(log);
        if (seen.length === 2) controller.abort();
      }
    })();
    const stream = await server.nextStream(EVENTS);
    await stream.write(
      Array.from({ length: 50 }, (_, i) => `${JSON.stringify({ log: wireEventLog(i + 1) })}\n`).join(''),
    );

    await expect(consumer).resolves.toBeUndefined();
    expect(seen).toEqual([typedLog(1), typedLog(2)]);
    await stream.closed;
    expect(stream.isClosed).toBe(true);
  });

  it('GIVEN a consumer waiting for the next record WHEN the signal aborts THEN the pending next() resolves as done', async () => {
    const events = subscribe();
    const next = events.next();
    const stream = await server.nextStream(EVENTS);
    controller.abort();
    await expect(next).resolves.toEqual({ done: true, value: undefined });
    await stream.closed;
  });

  it('GIVEN a reconnect back-off WHEN the signal aborts THEN the iterator ends without another connection', async () => {
    const states: StreamState[] = [];
    const events = subscribe({
      reconnect: { initialDelayMs: 5_000, maxDelayMs: 5_000 },
      onState: (s) => {
        states.push(s);
        if (s.kind === 'reconnecting') controller.abort();
      },
    });
    const next = events.next();
    const stream = await server.nextStream(EVENTS);
    await stream.end();
    await expect(next).resolves.toEqual({ done: true, value: undefined });
    expect(server.requestsTo(EVENTS)).toHaveLength(1);
  });

  it('GIVEN a pending next() WHEN return() is called THEN that next() still gets its record, later calls are done and the connection closes', async () => {
    const events = subscribe();
    const pending = events.next();
    const stream = await server.nextStream(EVENTS);
    const returned = events.return(undefined);
    await stream.write([1, 2, 3].map((i) => `${JSON.stringify({ log: wireEventLog(i) })}\n`).join(''));

    expect(await pending).toEqual({ done: false, value: typedLog(1) });
    expect(await returned).toEqual({ done: true, value: undefined });
    expect(await events.next()).toEqual({ done: true, value: undefined });
    await stream.closed;
    expect(server.requestsTo(EVENTS)).toHaveLength(1);
  });

  it('GIVEN a consumer that breaks out of for-await WHEN it breaks THEN the connection closes', async () => {
    const events = subscribe();
    const consumer = (async () => {
      for await (const log of events) {
        if (log.blockNumber === 61000002) break;
      }
    })();
    const stream = await server.nextStream(EVENTS);
    await stream.send({ log: wireEventLog(1) });
    await stream.send({ log: wireEventLog(2) });

    await consumer;
    await stream.closed;
    expect(stream.isClosed).toBe(true);
    expect(server.requestsTo(EVENTS)).toHaveLength(1);
  });

  it('GIVEN an open subscription WHEN the client is closed THEN the iterator finishes and close() does not hang', async () => {
    const events = subscribe();
    const next = events.next();
    const stream = await server.nextStream(EVENTS);

    await client.close();

    await expect(next).resolves.toEqual({ done: true, value: undefined });
    await stream.closed;
    expect(server.requestsTo(EVENTS)).toHaveLength(1);
  });
});
