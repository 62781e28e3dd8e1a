import { readdirSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTelegram, type TelegramAdapter, WEBHOOK_LISTENER_LIMITS } from '../../src/chat/telegram/adapter.ts';
import type { ListenerLimits } from '../../src/core/http-listener.ts';
import { HEALTH_LISTENER_LIMITS, type HealthServer, startHealthServer } from '../../src/health/http.ts';
import { FakeTelegram, SECRET_HEADER } from '../fakes/telegram.ts';
import { type Harness, startHarness } from '../helpers/bot-harness.ts';

/*
 * Issue 24, part 5c: clients that open connections to the listeners facing the outside and send
 * half a request head, or nothing, are cut off at the headers timeout (Node's default kept 4,000
 * of them, and their 4,000 descriptors, for a minute), and no more than the cap are held at once.
 * Real sockets, descriptors counted in /proc/self/fd (both ends live in this process).
 */

const openDescriptors = (): number => readdirSync('/proc/self/fd').length;

/** Slack on top of a timeout for a busy machine; Node's defaults (60 s, checked every 30 s) are far beyond it. */
const SLACK_MS = 8_000;

interface Attack {
  sockets: Socket[];
  /** Sockets the server has not closed yet. */
  open(): number;
}

/**
 * Opens `count` connections to `port`; half of them send an unfinished request head, the others
 * nothing. Resolves once each has connected (or been refused).
 */
async function halfSend(port: number, count: number): Promise<Attack> {
  const sockets: Socket[] = [];
  let closed = 0;
  await Promise.all(
    Array.from(
      { length: count },
      (_, i) =>
        new Promise<void>((resolve) => {
          const socket = connect(port, '127.0.0.1', () => {
            if (i % 2 === 0) socket.write('POST /hooks/telegram HTTP/1.1\r\nHost: bot.example\r\nContent-Type: appl');
            resolve();
          });
          sockets.push(socket);
          // Read whatever the server sends (a 408), so that its close is seen.
          socket.resume();
          socket.on('error', () => resolve());
          socket.on('close', () => {
            closed++;
            resolve();
          });
        }),
    ),
  );
  return { sockets, open: () => count - closed };
}

async function until(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return true;
}

/**
 * The attack and what must follow: at most the cap of connections held, every one closed by the
 * server within the headers timeout, the descriptors back to where they were, and a real request
 * answered afterwards.
 */
async function expectCutOff(port: number, limits: ListenerLimits, answered: () => Promise<number>): Promise<void> {
  const before = openDescriptors();
  const started = Date.now();
  const attack = await halfSend(port, 1_000);
  try {
    // Connections beyond the cap are closed as they arrive.
    expect(await until(() => attack.open() <= limits.maxConnections, SLACK_MS)).toBe(true);
    expect(openDescriptors() - before).toBeLessThan(2 * limits.maxConnections + 50);
    const allClosed = await until(() => attack.open() === 0, limits.headersTimeoutMs + SLACK_MS);
    expect({ allClosed, open: attack.open(), afterMs: Date.now() - started }).toMatchObject({ allClosed: true });
    expect(await until(() => openDescriptors() <= before + 2, 2_000)).toBe(true);
  } finally {
    for (const socket of attack.sockets) socket.destroy();
  }
  expect(await answered()).toBe(200);
}

describe('half-sent requests to the health listener', () => {
  let server: HealthServer;
  beforeAll(async () => {
    server = await startHealthServer({
      host: '127.0.0.1',
      port: 0,
      registry: new Registry(),
      logger: pino({ level: 'silent' }),
      readiness: async () => ({
        ready: true,
        reasons: [],
        streams: {},
        chats: {},
        store: { writable: true },
        journal: { writable: true, queued: 0 },
      }),
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('GIVEN 1,000 connections that send half a request head or nothing THEN at most the cap are held, all are closed within the headers timeout, and the descriptors fall back', async () => {
    const { port } = server.address;
    await expectCutOff(
      port,
      HEALTH_LISTENER_LIMITS,
      async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).status,
    );
  }, 60_000);

  it('GIVEN a request head over the size limit THEN 431, without waiting', async () => {
    const response = await fetch(`http://127.0.0.1:${server.address.port}/healthz`, {
      headers: { 'x-filler': 'a'.repeat(HEALTH_LISTENER_LIMITS.maxHeaderSize) },
    });
    expect(response.status).toBe(431);
  });
});

describe('half-sent requests to the Telegram webhook listener', () => {
  const token = '123456:TEST-token-abcdefghijklmnopqrstuvwxyz';
  const secret = 'replica-secret_0123456789';
  let h: Harness;
  let tg: FakeTelegram;
  let adapter: TelegramAdapter;

  beforeAll(async () => {
    h = await startHarness();
    tg = await FakeTelegram.start(token);
    adapter = await startTelegram({
      config: {
        token: tg.token,
        apiRoot: tg.url,
        webhookUrl: 'https://bot.example/hooks/telegram',
        webhookSecret: secret,
        webhookPort: 0,
      },
      engine: h.engine,
      logger: pino({ level: 'silent' }),
      botInfo: tg.botInfo(),
      webhookHost: '127.0.0.1',
    });
  }, 60_000);
  afterAll(async () => {
    await adapter?.stop();
    await tg?.close();
    await h?.close();
  });

  it('GIVEN 1,000 connections that send half a request head or nothing THEN at most the cap are held, all are closed within the headers timeout, and updates are still answered', async () => {
    const port = adapter.webhook?.port ?? 0;
    await expectCutOff(port, WEBHOOK_LISTENER_LIMITS, async () => {
      const update = tg.textUpdate(7501, 7501, '/help');
      const response = await fetch(`http://127.0.0.1:${port}/hooks/telegram`, {
        method: 'POST',
        headers: { [SECRET_HEADER]: secret, 'content-type': 'application/json' },
        body: JSON.stringify(update),
      });
      return response.status;
    });
  }, 60_000);
});
