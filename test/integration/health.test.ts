/**
 * The health and metrics listener of a running bot (local platform, terminal chat): liveness,
 * readiness with its reasons, Prometheus metrics after real commands, and the 404/405 rules.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReadinessReport } from '../../src/health/readiness.ts';
import { type RunningBot, startBot } from '../../src/main.ts';

let bot: RunningBot;
let dataDir: string;
let base: string;
let logs = '';

const terminal = { platform: 'console', id: 'terminal', kind: 'private' } as const;
const operator = { id: 'local', canManage: true };

async function get(path: string, init: RequestInit = {}): Promise<{ status: number; text: string; type: string }> {
  const response = await fetch(`${base}${path}`, init);
  return { status: response.status, text: await response.text(), type: response.headers.get('content-type') ?? '' };
}

async function until<T>(probe: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The value of one sample line, e.g. `floorwatch_commands_total{command="help",outcome="ok"}`. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'floorwatch-health-'));
  bot = await startBot({
    env: {
      FLOORWATCH_DATA_DIR: dataDir,
      FLOORWATCH_DEVNET_BLOCK_MS: '0',
      FLOORWATCH_HTTP_PORT: '0',
      LOG_LEVEL: 'debug',
    },
    stdin: new PassThrough(),
    stdout: new Writable({ write: (_chunk, _encoding, done) => done() }),
    logDestination: new Writable({
      write(chunk: Buffer, _encoding, done) {
        logs += chunk.toString();
        done();
      },
    }),
  });
  if (!bot.http) throw new Error('the health listener did not start');
  base = `http://${bot.http.host}:${bot.http.port}`;
}, 60_000);

afterAll(async () => {
  await bot?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

describe('GIVEN a bot started with FLOORWATCH_HTTP_PORT', () => {
  it('THEN it listens on 127.0.0.1 by default and /healthz answers 200 ok', async () => {
    expect(bot.http?.host).toBe('127.0.0.1');
    expect(bot.http?.port).toBeGreaterThan(0);
    const health = await get('/healthz');
    expect(health.status).toBe(200);
    expect(health.text.trim()).toBe('ok');
  });

  it('WHEN no rule is set THEN /readyz is 200 with the console ready and the store writable', async () => {
    const ready = await get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.type).toContain('application/json');
    const report = JSON.parse(ready.text) as ReadinessReport;
    expect(report).toMatchObject({
      ready: true,
      reasons: [],
      chats: { console: true },
      store: { writable: true },
      journal: { writable: true, queued: 0 },
    });
    // The data directory is probed by writing a file, which is removed again.
    expect((await readdir(dataDir)).filter((name) => name.includes('probe'))).toEqual([]);
  });

  it('WHEN commands ran THEN /metrics counts them by name and outcome and times the platform calls', async () => {
    await bot.engine.runLine('/help', terminal, operator);
    await bot.engine.runLine('/floor moon cats', terminal, operator);
    await bot.engine.runLine('/nosuchcommand', terminal, operator);
    const metrics = await get('/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.type).toContain('text/plain');
    const text = metrics.text;
    expect(sample(text, 'floorwatch_commands_total{command="help",outcome="ok"}')).toBe(1);
    expect(sample(text, 'floorwatch_commands_total{command="floor",outcome="ok"}')).toBe(1);
    // A name the registry does not know is never a label value of its own.
    expect(text).not.toContain('nosuchcommand');
    expect(sample(text, 'floorwatch_commands_total{command="unknown",outcome="user_error"}')).toBe(1);
    const counts = text
      .split('\n')
      .filter((l) => l.startsWith('floorwatch_platform_call_duration_seconds_count{') && l.includes('status="200"'));
    expect(counts.length).toBeGreaterThan(0);
    expect(text).toMatch(/floorwatch_platform_call_duration_seconds_bucket\{le="0\.1",operation="[A-Za-z]+\/\w+"/);
    for (const name of [
      'floorwatch_pipeline_logs_total',
      'floorwatch_pipeline_events_total',
      'floorwatch_pipeline_matched_total',
      'floorwatch_pipeline_deliveries_total',
      'floorwatch_pipeline_reorged_total',
      'floorwatch_pipeline_dropped_total',
    ]) {
      expect(sample(text, name)).toBeGreaterThanOrEqual(0);
    }
    expect(sample(text, 'floorwatch_journal_records{state="pending"}')).toBe(0);
    expect(sample(text, 'floorwatch_journal_bytes')).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'floorwatch_journal_writable')).toBe(1);
    expect(sample(text, 'floorwatch_journal_retry_queue_depth')).toBe(0);
    expect(text).toContain('# TYPE floorwatch_alert_deliveries_total counter');
    expect(text).toContain('# TYPE floorwatch_delivery_queue_depth gauge');
    expect(text).toContain('# TYPE floorwatch_stream_connected gauge');
    expect(text).toContain('process_cpu_user_seconds_total');
    // No credential of the platform appears in a label or value.
    expect(text).not.toContain(bot.devnet?.accessKey ?? 'no key');
  });

  it('THEN each platform call is logged at debug with its request id, and no credential is', () => {
    const calls = logs
      .split('\n')
      .filter((l) => l.includes('"msg":"platform call"'))
      .map((l) => JSON.parse(l) as { operation: string; status: number | string; ms: number; requestId: string });
    expect(calls.length).toBeGreaterThan(0);
    for (const call of calls) {
      expect(call.requestId).toMatch(/^[0-9a-f]{12}$/);
      expect(typeof call.ms).toBe('number');
    }
    expect(logs).not.toContain(bot.devnet?.accessKey ?? 'no key');
    expect(logs).not.toContain(bot.devnet?.secretToken ?? 'no token');
  });

  it('THEN other paths are 404 and other methods 405', async () => {
    expect((await get('/nope')).status).toBe(404);
    expect((await get('/')).status).toBe(404);
    const post = await get('/metrics', { method: 'POST', body: 'x' });
    expect(post.status).toBe(405);
    expect((await get('/healthz', { method: 'DELETE' })).status).toBe(405);
    expect((await get('/healthz?probe=1')).status).toBe(200);
  });

  it('WHEN a rule watches a network whose events stream cannot connect THEN /readyz is 503 naming it', async () => {
    bot.devnet?.setFaults({ operation: 'SubscribeEvents', errorRate: 1 });
    await bot.engine.runLine('/watch add moon cats', terminal, operator);
    // Before the re-plan (~1 s) the stream is idle; after it, it keeps failing to connect.
    const report = await until(async () => {
      const ready = await get('/readyz');
      const body = JSON.parse(ready.text) as ReadinessReport;
      return ready.status === 503 && body.streams.devnet?.events !== 'idle' ? body : undefined;
    });
    expect(report.ready).toBe(false);
    expect(report.reasons).toContainEqual(
      expect.stringMatching(/^alert events stream of devnet is (connecting|reconnecting|failed)$/),
    );
    expect(report.streams.devnet?.events).not.toBe('connected');
    const text = await until(async () => {
      const metrics = await get('/metrics');
      return metrics.text.includes('floorwatch_stream_connected{network="devnet",stream="events"} 0')
        ? metrics.text
        : undefined;
    });
    expect(text).toContain('floorwatch_stream_reconnects_total{network="devnet"}');
    expect(await get('/healthz')).toMatchObject({ status: 200 });
  });

  it('WHEN the fault is gone THEN the stream reconnects and /readyz is 200 again', async () => {
    bot.devnet?.clearFaults();
    const ready = await until(async () => {
      const answer = await get('/readyz');
      return answer.status === 200 ? (JSON.parse(answer.text) as ReadinessReport) : undefined;
    }, 30_000);
    expect(ready.streams.devnet).toEqual({ events: 'connected', receipts: 'connected' });
    const metrics = await get('/metrics');
    expect(sample(metrics.text, 'floorwatch_stream_connected{network="devnet",stream="events"}')).toBe(1);
    expect(sample(metrics.text, 'floorwatch_stream_reconnects_total{network="devnet"}')).toBeGreaterThan(0);
  }, 40_000);

  it('WHEN an alert is delivered THEN it is counted by platform and outcome and logged at debug', async () => {
    const moonCats = bot.devnet?.collections.devnet?.find((c) => c.name === 'Moon Cats');
    if (!moonCats) throw new Error('no Moon Cats');
    // The rule set above watches sales (the default kind).
    await bot.devnet?.mine('devnet', [{ kind: 'sale', collection: moonCats.address }]);
    // The send is counted when the message is out; the journal records it sent a write later: both
    // are waited for, since a busy machine can answer /metrics in between.
    const text = await until(async () => {
      const metrics = await get('/metrics');
      const sent = sample(metrics.text, 'floorwatch_alert_deliveries_total{platform="console",outcome="sent"}') ?? 0;
      const recorded = sample(metrics.text, 'floorwatch_journal_records{state="sent"}') ?? 0;
      return sent > 0 && recorded > 0 ? metrics.text : undefined;
    }, 30_000);
    expect(sample(text, 'floorwatch_pipeline_deliveries_total')).toBeGreaterThan(0);
    expect(sample(text, 'floorwatch_pipeline_matched_total')).toBeGreaterThan(0);
    expect(sample(text, 'floorwatch_delivery_queue_depth{platform="console"}')).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'floorwatch_journal_records{state="sent"}')).toBeGreaterThan(0);
    const line = logs.split('\n').find((l) => l.includes('"msg":"alert delivery"'));
    expect(JSON.parse(line ?? '{}')).toMatchObject({ outcome: 'sent', platform: 'console', count: 1 });
  });
});
