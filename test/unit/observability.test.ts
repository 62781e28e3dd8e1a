/**
 * What operators see: the logger keeps credentials out of its lines, the health listener's
 * variables are validated, and every platform call carries one request id across its retries.
 */
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, secretsOf } from '../../src/config.ts';
import { checkReadiness } from '../../src/health/readiness.ts';
import { createLogger } from '../../src/logger.ts';
import type { CallReport } from '../../src/platform/index.ts';
import { describeDatabaseUrl } from '../../src/store/pg/database.ts';
import { ADDR, createTestClient, recordingSleep, wireOrder } from '../helpers/platform-fixtures.ts';
import { RpcTestServer, reply } from '../helpers/rpc-test-server.ts';

function capture(): { stream: Writable; lines: () => string[] } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  return { stream, lines: () => text.split('\n').filter(Boolean) };
}

function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    loadConfig(env, '/srv/bot');
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe('log redaction', () => {
  it('GIVEN request headers with credentials WHEN logged THEN both values are [redacted]', () => {
    const out = capture();
    const logger = createLogger('debug', [], out.stream);
    logger.debug({ headers: { authorization: 'Bearer x', 'x-access-key': 'k' } }, 'request');
    logger.debug({ request: { headers: { authorization: 'Bearer y', 'x-access-key': 'k2' } } }, 'nested');
    const [first, second] = out.lines().map((l) => JSON.parse(l) as Record<string, Record<string, unknown>>);
    expect(first?.headers).toEqual({ authorization: '[redacted]', 'x-access-key': '[redacted]' });
    expect(second?.request?.headers).toEqual({ authorization: '[redacted]', 'x-access-key': '[redacted]' });
  });

  it('GIVEN a configuration with tokens WHEN logged whole or quoted in a message THEN no token appears', () => {
    const config = loadConfig({
      FLOORWATCH_DATA_DIR: '/tmp/fw',
      DISCORD_TOKEN: 'discord-token-abcdef',
      DISCORD_APPLICATION_ID: '123',
      TELEGRAM_BOT_TOKEN: '123456:ABCDEFGHIJKLMNOPQRSTUVWXYZ',
      FLOORWATCH_SECRET_TOKEN: 'secret-token-xyz',
    });
    const out = capture();
    const logger = createLogger('info', secretsOf(config), out.stream);
    logger.info({ config }, 'configuration');
    logger.info({ secretToken: 'secret-token-xyz', token: 'plain' }, 'top level');
    logger.info(`the token is ${config.telegram?.token ?? ''}`);
    const text = out.lines().join('\n');
    expect(text).toContain('[redacted]');
    for (const secret of ['discord-token-abcdef', '123456:ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'secret-token-xyz', 'plain']) {
      expect(text).not.toContain(secret);
    }
    const [line] = out.lines().map((l) => JSON.parse(l) as { config: { discord: { token: string } } });
    expect(line?.config.discord.token).toBe('[redacted]');
  });

  it('GIVEN database passwords in the URL, in its userinfo or its query string, WHEN the URL or an error quoting it is logged THEN neither password appears, written or decoded', () => {
    const url =
      'postgres://bot:p%40ss-word@db.example:5432/floorwatch?sslmode=require&password=q%22uoted%5Cpw&sslpassword=ssl-secret';
    const config = loadConfig({ FLOORWATCH_DATA_DIR: '/tmp/fw', FLOORWATCH_DATABASE_URL: url });
    const out = capture();
    const logger = createLogger('info', secretsOf(config), out.stream);
    logger.info({ url }, 'the URL as written');
    logger.info(`connect failed: password "${'p@ss-word'}" / ${'q"uoted\\pw'} / ssl-secret rejected`);
    const text = out.lines().join('\n');
    for (const secret of ['p%40ss-word', 'p@ss-word', 'q%22uoted%5Cpw', 'q\\"uoted', 'ssl-secret'])
      expect(text).not.toContain(secret);
    expect(describeDatabaseUrl(url)).toBe('postgres://bot@db.example:5432/floorwatch');
  });
});

describe('FLOORWATCH_HTTP_PORT and FLOORWATCH_HTTP_HOST', () => {
  it('GIVEN neither THEN no listener is configured', () => {
    expect(loadConfig({}, '/srv/bot').http).toBeUndefined();
  });

  it('GIVEN a port THEN the listener binds to 127.0.0.1 unless a host is given', () => {
    expect(loadConfig({ FLOORWATCH_HTTP_PORT: '9464' }, '/srv/bot').http).toEqual({ host: '127.0.0.1', port: 9464 });
    expect(loadConfig({ FLOORWATCH_HTTP_PORT: '0', FLOORWATCH_HTTP_HOST: '0.0.0.0' }, '/srv/bot').http).toEqual({
      host: '0.0.0.0',
      port: 0,
    });
    expect(loadConfig({ FLOORWATCH_HTTP_PORT: '80', FLOORWATCH_HTTP_HOST: '::' }, '/srv/bot').http?.host).toBe('::');
  });

  it('GIVEN bad values THEN each problem names its variable', () => {
    expect(problemsOf({ FLOORWATCH_HTTP_PORT: '70000' })).toEqual([
      expect.stringContaining('FLOORWATCH_HTTP_PORT must be a whole number from 0 to 65535'),
    ]);
    expect(problemsOf({ FLOORWATCH_HTTP_PORT: '80', FLOORWATCH_HTTP_HOST: 'http://x/' })).toEqual([
      expect.stringContaining('FLOORWATCH_HTTP_HOST must be a host name or an IP address'),
    ]);
    expect(problemsOf({ FLOORWATCH_HTTP_HOST: 'localhost' })).toEqual([
      expect.stringContaining('FLOORWATCH_HTTP_HOST is set but FLOORWATCH_HTTP_PORT is not'),
    ]);
  });
});

describe('request ids on platform calls', () => {
  let server: RpcTestServer;
  beforeEach(async () => {
    server = await RpcTestServer.start();
  });
  afterEach(async () => {
    await server.close();
  });

  it('GIVEN a call retried after a 500 THEN every attempt sends the same x-request-id, reported with each attempt, and the next call another', async () => {
    const reports: CallReport[] = [];
    const client = createTestClient(server, {
      sleep: recordingSleep().sleep,
      retry: { retries: 3, baseDelayMs: 1, maxDelayMs: 10 },
      onCall: (report) => reports.push(report),
    });
    const path = '/mk/polygon/rpc/Marketplace/ListListingsForCollectible';
    const ok = reply.json({ listings: [wireOrder()] });
    server.route(
      path,
      reply.webrpcError(500, { error: 'WebrpcInternalError', code: -7, msg: 'internal error' }),
      ok,
      ok,
    );
    const call = () =>
      client.marketplace.listListingsForCollectible({
        network: 'polygon',
        contractAddress: ADDR.collection,
        tokenId: '42',
      });
    try {
      await call();
      await call();
    } finally {
      await client.close();
    }
    const [first, second, third] = server.requestsTo(path).map((r) => r.headers['x-request-id']);
    expect(first).toMatch(/^[0-9a-f]{12}$/);
    expect(second).toBe(first);
    expect(third).not.toBe(first);
    expect(reports.map((r) => [r.attempt, r.outcome, r.requestId])).toEqual([
      [1, 500, first],
      [2, 200, first],
      [1, 200, third],
    ]);
  });
});

describe('readiness', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'floorwatch-ready-'));
  });
  afterEach(async () => {
    await chmod(dir, 0o700);
    await rm(dir, { recursive: true, force: true });
  });

  it('GIVEN a chat not connected, a watched network without streams and a read-only data dir THEN each is a reason', async () => {
    await chmod(dir, 0o500);
    const report = await checkReadiness({
      watchedNetworks: () => ['polygon', 'polygon'],
      streams: () => [],
      chats: () => [
        { platform: 'console', ready: () => true },
        { platform: 'discord', ready: () => false },
      ],
      dataDir: dir,
    });
    expect(report.ready).toBe(false);
    expect(report.chats).toEqual({ console: true, discord: false });
    const expected = [
      'alert events stream of polygon is idle',
      'alert receipts stream of polygon is idle',
      'discord chat is not connected',
    ];
    // Root ignores file modes: the data-dir check can only be seen failing as another user.
    if (process.getuid?.() !== 0) expected.push('data directory is not writable');
    expect(report.reasons).toEqual(expected);
  });
});
