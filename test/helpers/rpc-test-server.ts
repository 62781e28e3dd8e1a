/**
 * A real HTTP server for client tests: the far side of the wire, not a mock of our code.
 *
 * It listens on 127.0.0.1 port 0, records every request (method, path, headers, raw and parsed
 * body) and answers each path from a queue of programmable replies: JSON with status and headers,
 * raw text (HTML error pages, truncated JSON), delays, a destroyed connection, a request left
 * hanging, or an NDJSON stream the test writes to line by line or byte by byte.
 *
 * @example
 * const server = await RpcTestServer.start();
 * server.route('/rpc/Metadata/SearchMetadata', reply.status(503, 'busy'), reply.json({ tokenMetadata: [] }));
 * // ... call the client against server.url ...
 * expect(server.requestsTo('/rpc/Metadata/SearchMetadata')).toHaveLength(2);
 * await server.close();
 */
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface RecordedRequest {
  method: string;
  /** Path with query, as received. */
  path: string;
  /** Lower-case header names. */
  headers: IncomingHttpHeaders;
  rawBody: string;
  /** The body parsed as JSON; `undefined` when it is not JSON. */
  body: unknown;
}

interface ReplyBase {
  status?: number;
  headers?: OutgoingHttpHeaders;
  /** Waits this long before sending anything (headers included). */
  delayMs?: number;
}

export type Reply =
  | ({ kind: 'json'; body: unknown } & ReplyBase)
  | ({ kind: 'text'; text: string | Buffer } & ReplyBase)
  | { kind: 'destroy'; delayMs?: number }
  | { kind: 'hang' }
  | ({ kind: 'stream'; heartbeatAtOpen: boolean } & ReplyBase)
  | { kind: 'dynamic'; make: (request: RecordedRequest) => Reply };

/** Builders for {@link Reply}. */
export const reply = {
  /** A JSON body; status 200 unless given. */
  json: (body: unknown, options: ReplyBase = {}): Reply => ({ kind: 'json', body, ...options }),
  /** A raw body, sent as is (e.g. an HTML error page or truncated JSON). */
  text: (text: string | Buffer, options: ReplyBase = {}): Reply => ({
    kind: 'text',
    text,
    headers: { 'content-type': 'text/plain; charset=utf-8' },
    ...options,
  }),
  /** A webrpc error body `{error, code, msg, status}` (plus any extra keys) with that HTTP status. */
  webrpcError: (
    status: number,
    fields: { error: string; code: number; msg?: string; message?: string; cause?: string; [key: string]: unknown },
    options: Omit<ReplyBase, 'status'> = {},
  ): Reply => ({ kind: 'json', status, body: { status, ...fields }, ...options }),
  /** An HTML error page as a proxy or load balancer sends it. */
  html: (status: number, options: Omit<ReplyBase, 'status'> = {}): Reply => ({
    kind: 'text',
    status,
    text: `<html>\r\n<head><title>${status} Bad Gateway</title></head>\r\n<body>\r\n<center><h1>${status} Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n`,
    ...options,
    headers: { 'content-type': 'text/html', ...options.headers },
  }),
  /** Closes the connection without an answer (a reset, as the client sees it). */
  destroy: (delayMs?: number): Reply => (delayMs === undefined ? { kind: 'destroy' } : { kind: 'destroy', delayMs }),
  /** Never answers; the connection stays open until the client gives up or the server closes. */
  hang: (): Reply => ({ kind: 'hang' }),
  /** An NDJSON stream; get it with {@link RpcTestServer.nextStream}. Sends the real server's `"\n"` at open. */
  stream: (options: ReplyBase & { heartbeatAtOpen?: boolean } = {}): Reply => ({
    kind: 'stream',
    ...options,
    heartbeatAtOpen: options.heartbeatAtOpen ?? true,
  }),
  /** Decides per request. */
  dynamic: (make: (request: RecordedRequest) => Reply): Reply => ({ kind: 'dynamic', make }),
};

/** The server side of one NDJSON answer. */
export class NdjsonStream {
  readonly request: RecordedRequest;
  /** Resolves when the connection is gone, whichever side closed it. */
  readonly closed: Promise<void>;
  readonly #res: ServerResponse;
  #isClosed = false;

  constructor(request: RecordedRequest, res: ServerResponse) {
    this.request = request;
    this.#res = res;
    this.closed = new Promise((resolve) => {
      res.once('close', () => {
        this.#isClosed = true;
        resolve();
      });
    });
  }

  get isClosed(): boolean {
    return this.#isClosed;
  }

  /** Writes one record as a JSON line. */
  send(record: unknown): Promise<void> {
    return this.write(`${JSON.stringify(record)}\n`);
  }

  /** Writes the blank heartbeat line. */
  heartbeat(): Promise<void> {
    return this.write('\n');
  }

  /** Writes raw bytes; resolves once they were handed to the socket. */
  write(chunk: string | Buffer): Promise<void> {
    if (this.#isClosed || this.#res.writableEnded) return Promise.resolve();
    return new Promise((resolve) => {
      this.#res.write(chunk, () => resolve());
    });
  }

  /**
   * Writes `data` as separate chunks cut at the given byte offsets, pausing between them so that
   * they tend to arrive as separate reads on the client.
   */
  async writeInPieces(data: string | Buffer, cuts: readonly number[], pauseMs = 15): Promise<void> {
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    let start = 0;
    for (const cut of [...cuts, bytes.length]) {
      if (cut <= start) continue;
      await this.write(bytes.subarray(start, cut));
      start = cut;
      if (start < bytes.length) await pause(pauseMs);
    }
  }

  /** Ends the answer normally (the server closed the stream). */
  end(): Promise<void> {
    if (this.#isClosed || this.#res.writableEnded) return Promise.resolve();
    return new Promise((resolve) => this.#res.end(() => resolve()));
  }

  /** Drops the connection without ending the answer. */
  destroy(): void {
    this.#res.socket?.destroy();
  }
}

export class RpcTestServer {
  readonly requests: RecordedRequest[] = [];
  readonly #server: Server;
  readonly #routes = new Map<string, Reply[]>();
  readonly #timers = new Set<NodeJS.Timeout>();
  readonly #sockets = new Set<Socket>();
  readonly #streams: NdjsonStream[] = [];
  readonly #streamWaiters: Array<{ path: string | undefined; resolve: (s: NdjsonStream) => void }> = [];
  readonly #requestWaiters = new Set<() => void>();
  #port = 0;

  private constructor() {
    this.#server = createServer((req, res) => {
      this.#handle(req, res).catch(() => res.socket?.destroy());
    });
    this.#server.on('connection', (socket) => {
      this.#sockets.add(socket);
      socket.once('close', () => this.#sockets.delete(socket));
    });
  }

  static async start(): Promise<RpcTestServer> {
    const server = new RpcTestServer();
    await new Promise<void>((resolve, reject) => {
      server.#server.once('error', reject);
      server.#server.listen(0, '127.0.0.1', () => resolve());
    });
    server.#port = (server.#server.address() as AddressInfo).port;
    return server;
  }

  get port(): number {
    return this.#port;
  }

  /** `http://127.0.0.1:<port>` */
  get url(): string {
    return `http://127.0.0.1:${this.#port}`;
  }

  /** Connections currently open to the server. */
  get openConnections(): number {
    return this.#sockets.size;
  }

  /**
   * Sets the replies of a path: each request takes the next one, and the last one repeats.
   * Replaces what was set before for that path.
   */
  route(path: string, ...replies: Reply[]): this {
    if (replies.length === 0) throw new Error('route() needs at least one reply');
    this.#routes.set(path, [...replies]);
    return this;
  }

  requestsTo(path: string): RecordedRequest[] {
    return this.requests.filter((r) => r.path === path);
  }

  /** The only request made to `path`; fails when there were none or several. */
  onlyRequestTo(path: string): RecordedRequest {
    const found = this.requestsTo(path);
    if (found.length !== 1) {
      const seen = this.requests.map((r) => r.path).join(', ') || '(none)';
      throw new Error(`expected exactly one request to ${path}, got ${found.length}; requests: ${seen}`);
    }
    return found[0] as RecordedRequest;
  }

  /** Resolves once `count` requests reached `path`. */
  async waitForRequests(path: string, count: number, timeoutMs = 5_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.requestsTo(path).length < count) {
      if (Date.now() > deadline) {
        throw new Error(`timed out waiting for ${count} requests to ${path} (got ${this.requestsTo(path).length})`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, 50);
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.#requestWaiters.add(done);
      });
    }
  }

  /**
   * The next stream opened (optionally on `path`) that was not handed out yet, waiting for it when
   * needed. Streams are handed out in the order they were opened.
   */
  nextStream(path?: string, timeoutMs = 5_000): Promise<NdjsonStream> {
    const index = this.#streams.findIndex((s) => path === undefined || s.request.path === path);
    if (index >= 0) {
      const [stream] = this.#streams.splice(index, 1);
      return Promise.resolve(stream as NdjsonStream);
    }
    return new Promise((resolve, reject) => {
      const waiter = {
        path,
        resolve: (s: NdjsonStream) => {
          clearTimeout(timer);
          resolve(s);
        },
      };
      const timer = setTimeout(() => {
        const i = this.#streamWaiters.indexOf(waiter);
        if (i >= 0) this.#streamWaiters.splice(i, 1);
        reject(new Error(`timed out waiting for a stream${path ? ` on ${path}` : ''}`));
      }, timeoutMs);
      this.#streamWaiters.push(waiter);
    });
  }

  /** Closes every connection (streams and hanging requests included) and stops listening. */
  async close(): Promise<void> {
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    for (const socket of this.#sockets) socket.destroy();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const rawBody = Buffer.concat(chunks).toString('utf8');
    let body: unknown;
    try {
      body = JSON.parse(rawBody);
    } catch {
      body = undefined;
    }
    const recorded: RecordedRequest = {
      method: req.method ?? '',
      path: req.url ?? '',
      headers: req.headers,
      rawBody,
      body,
    };
    this.requests.push(recorded);
    for (const wake of [...this.#requestWaiters]) wake();
    this.#requestWaiters.clear();

    const queue = this.#routes.get(recorded.path);
    if (!queue) {
      this.#sendJson(res, 404, { error: 'WebrpcBadRoute', code: -2, msg: 'bad route', status: 404 });
      return;
    }
    let next = (queue.length > 1 ? queue.shift() : queue[0]) as Reply;
    while (next.kind === 'dynamic') next = next.make(recorded);
    const chosen = next;
    const delayMs = 'delayMs' in chosen ? chosen.delayMs : undefined;
    if (delayMs) await this.#delay(delayMs);
    if (res.destroyed) return;
    this.#send(recorded, res, chosen);
  }

  #send(request: RecordedRequest, res: ServerResponse, r: Exclude<Reply, { kind: 'dynamic' }>): void {
    switch (r.kind) {
      case 'json':
        this.#sendJson(res, r.status ?? 200, r.body, r.headers);
        return;
      case 'text':
        res.writeHead(r.status ?? 200, r.headers ?? {});
        res.end(r.text);
        return;
      case 'destroy':
        res.socket?.destroy();
        return;
      case 'hang':
        return;
      case 'stream': {
        res.writeHead(r.status ?? 200, {
          'cache-control': 'no-store',
          'content-type': 'application/x-ndjson',
          'x-content-type-options': 'nosniff',
          ...r.headers,
        });
        const stream = new NdjsonStream(request, res);
        if (r.heartbeatAtOpen) res.write('\n');
        else res.flushHeaders();
        const waiter = this.#streamWaiters.findIndex((w) => w.path === undefined || w.path === request.path);
        if (waiter >= 0) {
          const [w] = this.#streamWaiters.splice(waiter, 1);
          w?.resolve(stream);
        } else {
          this.#streams.push(stream);
        }
        return;
      }
    }
  }

  #sendJson(res: ServerResponse, status: number, body: unknown, headers: OutgoingHttpHeaders = {}): void {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(text);
  }

  #delay(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#timers.delete(timer);
        resolve();
      }, ms);
      this.#timers.add(timer);
    });
  }
}

export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
