import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Bot, webhookCallback } from 'grammy';
import type { Update } from 'grammy/types';
import type { Logger } from 'pino';
import { createLimitedServer, type ListenerLimits } from '../../core/http-listener.ts';
import { describe, type Scrub } from './bot.ts';
import { ALLOWED_UPDATES } from './updates.ts';

/** Largest webhook request body read; Telegram's updates are a few kilobytes. */
export const WEBHOOK_MAX_BODY = 1024 * 1024;
/**
 * What a client may hold of the webhook listener. Telegram (or the load balancer in front) sends a
 * request's head at once and opens at most 100 connections per bot (setWebhook's max_connections).
 */
export const WEBHOOK_LISTENER_LIMITS: ListenerLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  maxHeadersCount: 100,
  maxHeaderSize: 8 * 1024,
  maxConnections: 256,
};

/** Updates arriving, and how they stop. */
export interface Receiving {
  /** True while updates arrive (health checks). */
  ready: () => boolean;
  /** Stops receiving; updates being answered are the caller's to wait for. */
  stop: () => Promise<void>;
}

/**
 * Webhook mode: registers `url` with its secret token (every replica registers the same one, and
 * pending updates are kept for whichever answers), then listens on `port` (and `host`, all
 * interfaces by default) for Telegram's POSTs. Stopping closes the listener and leaves the webhook
 * in place: other replicas behind the same URL keep serving it.
 */
export async function receiveByWebhook(options: {
  bot: Bot;
  url: string;
  secret: string | undefined;
  port: number;
  host?: string | undefined;
  failed: (what: string, error: unknown) => Error;
  logger: Logger;
  scrub: Scrub;
}): Promise<Receiving & { webhook: { url: string; port: number } }> {
  const { bot, url, secret, logger, scrub } = options;
  if (!secret) throw new Error('Telegram: a webhook needs a secret token (FLOORWATCH_TELEGRAM_WEBHOOK_SECRET).');
  try {
    await bot.api.setWebhook(url, {
      secret_token: secret,
      allowed_updates: [...ALLOWED_UPDATES],
      drop_pending_updates: false,
    });
  } catch (error) {
    throw options.failed('setWebhook', error);
  }
  const server = await listenForUpdates({
    bot,
    path: new URL(url).pathname,
    secret,
    port: options.port,
    ...(options.host === undefined ? {} : { host: options.host }),
    onError: (error) => logger.warn({ err: describe(error, scrub) }, 'webhook request failed'),
  });
  const port = (server.address() as AddressInfo).port;
  logger.info({ bot: bot.botInfo.username, port }, 'telegram webhook listening');
  return {
    webhook: { url, port },
    ready: () => server.listening,
    async stop() {
      server.closeIdleConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * The webhook listener: POSTs on `path` carrying the secret token go to grammy's webhookCallback;
 * anything else is refused before its body is read (404 another path, 405 another method, 401 no
 * or a wrong secret, 413 a body over {@link WEBHOOK_MAX_BODY}, 400 not an update). The update is
 * acknowledged once grammy has handed it to the handlers, which answer in the background.
 */
async function listenForUpdates(options: {
  bot: Bot;
  path: string;
  secret: string;
  port: number;
  host?: string;
  onError: (error: unknown) => void;
}): Promise<Server> {
  const { bot, path, secret, onError } = options;
  const handle = webhookCallback(bot, 'callback', { onTimeout: 'return', secretToken: secret });
  const expected = Buffer.from(secret);
  const refuse = (res: ServerResponse, status: number, headers: Record<string, string> = {}) => {
    // The unread body is not drained: the connection closes with the answer.
    res.writeHead(status, { connection: 'close', ...headers }).end();
  };
  const serve = async (req: IncomingMessage, res: ServerResponse) => {
    if (new URL(req.url ?? '/', 'http://listener').pathname !== path) return refuse(res, 404);
    if (req.method !== 'POST') return refuse(res, 405, { allow: 'POST' });
    const header = req.headers['x-telegram-bot-api-secret-token'];
    const given = Buffer.from(typeof header === 'string' ? header : '');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return refuse(res, 401);
    if (Number(req.headers['content-length'] ?? 0) > WEBHOOK_MAX_BODY) return refuse(res, 413);
    const body = await readBody(req, WEBHOOK_MAX_BODY);
    if (body === undefined) return refuse(res, 413);
    let update: unknown;
    try {
      update = JSON.parse(body.toString('utf8'));
    } catch {
      return refuse(res, 400);
    }
    if (typeof update !== 'object' || update === null || typeof (update as Update).update_id !== 'number') {
      return refuse(res, 400);
    }
    await handle(
      update as Update,
      (json: string) => void res.writeHead(200, { 'content-type': 'application/json' }).end(json),
      given.toString(),
      () => void refuse(res, 401),
    );
    if (!res.headersSent) res.writeHead(200).end();
  };
  const server = createLimitedServer(WEBHOOK_LISTENER_LIMITS, (req, res) => {
    serve(req, res).catch((error: unknown) => {
      onError(error);
      if (!res.headersSent) res.writeHead(500, { connection: 'close' }).end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}

/** A request's body, or undefined once it grows past `limit` (the rest is left unread). */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
        return;
      }
      req.off('data', onData);
      req.pause();
      resolve(undefined);
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
    // A client gone before the end: nothing to answer (after 'end' this changes nothing).
    req.once('close', () => resolve(undefined));
  });
}
