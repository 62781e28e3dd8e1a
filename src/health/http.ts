import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { createLimitedServer, type ListenerLimits, listenOn } from '../core/http-listener.ts';
import type { ReadinessReport } from './readiness.ts';

export interface HealthServerOptions {
  host: string;
  /** 0 picks a free port (tests). */
  port: number;
  readiness: () => Promise<ReadinessReport>;
  registry: Registry;
  logger: Logger;
}

export interface HealthServer {
  /** Where it listens (the port actually bound when 0 was asked). */
  address: { host: string; port: number };
  close(): Promise<void>;
}

/**
 * What a client may hold of the health listener. Probes and scrapers send a short GET at once and
 * are few; anything slower or more is not one of them.
 */
export const HEALTH_LISTENER_LIMITS: ListenerLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 15_000,
  keepAliveTimeoutMs: 5_000,
  maxHeadersCount: 100,
  maxHeaderSize: 8 * 1024,
  maxConnections: 64,
};

/**
 * The operator's HTTP listener: `GET /healthz` (the process runs), `GET /readyz` (200 or 503 with
 * the reasons, JSON) and `GET /metrics` (Prometheus text). Other paths 404, other methods 405.
 * Within {@link HEALTH_LISTENER_LIMITS}.
 */
export async function startHealthServer(options: HealthServerOptions): Promise<HealthServer> {
  const { logger } = options;
  const routes: Record<string, (res: ServerResponse) => Promise<void>> = {
    '/healthz': async (res) => {
      send(res, 200, 'text/plain; charset=utf-8', 'ok\n');
    },
    '/readyz': async (res) => {
      const report = await options.readiness();
      send(res, report.ready ? 200 : 503, 'application/json', `${JSON.stringify(report)}\n`);
    },
    '/metrics': async (res) => {
      send(res, 200, options.registry.contentType, await options.registry.metrics());
    },
  };
  const server: Server = createLimitedServer(HEALTH_LISTENER_LIMITS, (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const route = routes[path];
    if (!route) {
      send(res, 404, 'text/plain; charset=utf-8', 'not found\n');
      return;
    }
    if (req.method !== 'GET') {
      res.setHeader('allow', 'GET');
      send(res, 405, 'text/plain; charset=utf-8', 'method not allowed\n');
      return;
    }
    route(res).catch((error: unknown) => {
      logger.error({ err: error, path }, 'health endpoint failed');
      if (!res.headersSent) send(res, 500, 'text/plain; charset=utf-8', 'internal error\n');
      else res.destroy();
    });
  });
  const listener = await listenOn(server, options.host, options.port);
  logger.info({ host: options.host, port: listener.address.port }, 'health and metrics listening');
  return listener;
}

function send(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, { 'content-type': contentType, 'cache-control': 'no-store' });
  res.end(body);
}
