import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * What one HTTP listener that faces the outside (the health server, the Telegram webhook) lets a
 * client hold. Node's defaults let a client that sends half a request head, or nothing, keep its
 * connection for a minute or more (headers timeout 60 s, checked every 30 s), with no cap on
 * connections: 4,000 such connections held 4,000 descriptors for a minute.
 */
export interface ListenerLimits {
  /** A request head must arrive in full within this time of the connection or the previous request. */
  headersTimeoutMs: number;
  /** A whole request (head and body) must arrive within this time. */
  requestTimeoutMs: number;
  /** An idle kept-alive connection is closed after this time. */
  keepAliveTimeoutMs: number;
  /** Most header lines read; further ones are dropped. */
  maxHeadersCount: number;
  /** Largest request head (431 beyond). */
  maxHeaderSize: number;
  /** Most connections open at once; further ones are closed as they arrive. */
  maxConnections: number;
}

/** How often the timeouts are checked, at most: a fraction of the headers timeout, so that it is kept closely. */
const MAX_CHECK_INTERVAL_MS = 1_000;

/** A node:http server that keeps to `limits` (see {@link ListenerLimits}); not yet listening. */
export function createLimitedServer(
  limits: ListenerLimits,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Server {
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      maxHeaderSize: limits.maxHeaderSize,
      connectionsCheckingInterval: Math.min(MAX_CHECK_INTERVAL_MS, Math.ceil(limits.headersTimeoutMs / 4)),
    },
    handler,
  );
  server.maxHeadersCount = limits.maxHeadersCount;
  server.maxConnections = limits.maxConnections;
  return server;
}

/** A listening server: where it listens, and how to stop it (idle connections closed at once). */
export interface RunningListener {
  address: { host: string; port: number };
  close(): Promise<void>;
}

/** Starts `server` on `host`:`port` (0: any free port) and resolves once it listens, or rejects with the bind error. */
export async function listenOn(server: Server, host: string, port: number): Promise<RunningListener> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address() as AddressInfo;
  return {
    address: { host, port: bound.port },
    async close() {
      server.closeIdleConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
