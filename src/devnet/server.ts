import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serveAsset } from './assets.ts';
import { CHAIN_RPC_PREFIX, serveChainRpc } from './chain-rpc.ts';
import type { CollectiblesIndex } from './collectibles.ts';
import { errors, type RpcError } from './errors.ts';
import type { Faults } from './faults.ts';
import { analyticsOperations } from './handlers/analytics.ts';
import { builderOperations } from './handlers/builder.ts';
import { collectionsOperations } from './handlers/collections.ts';
import type { BaseName, Operation, RequestContext } from './handlers/context.ts';
import { indexerOperations } from './handlers/indexer.ts';
import { marketplaceOperations } from './handlers/marketplace.ts';
import { metadataOperations } from './handlers/metadata.ts';
import { relayerOperations } from './handlers/relayer.ts';
import { asRpcError, parseJsonObject, readBody, sendError, sendJson, sendText, sleep } from './http.ts';
import { PAGE_PREFIXES, servePage } from './pages.ts';
import type { DevnetState, NetworkState } from './state.ts';
import type { StreamHub } from './streams.ts';
import { In } from './validate.ts';

/** Every operation of the spec, by `base|Service/Method`. */
const OPERATIONS: ReadonlyMap<string, Operation> = new Map(
  [
    ...metadataOperations,
    ...collectionsOperations,
    ...marketplaceOperations,
    ...indexerOperations,
    ...builderOperations,
    ...relayerOperations,
    ...analyticsOperations,
  ].map((op) => [`${op.base}|${op.service}/${op.method}`, op]),
);

export const OPERATION_COUNT = OPERATIONS.size;

const RPC_PATH = /^\/(metadata|marketplace|indexer|relayer|api)(?:\/([^/]+))?\/rpc\/([A-Za-z]+)\/([A-Za-z]+)$/;

/** Bases whose address carries the network: required (indexer, relayer) or optional (marketplace). */
const NETWORK_SEGMENT: Readonly<Record<BaseName, 'required' | 'optional' | 'none'>> = {
  metadata: 'none',
  api: 'none',
  marketplace: 'optional',
  indexer: 'required',
  relayer: 'required',
};

export interface ServerDeps {
  state: DevnetState;
  hub: StreamHub;
  faults: Faults;
  collectibles: CollectiblesIndex;
  control: (req: IncomingMessage, res: ServerResponse, path: string) => Promise<void>;
  onError: (error: unknown, path: string) => void;
  /** An image under `/assets/` was answered (whatever the status). */
  onAsset?: (path: string) => void;
}

interface Route {
  op: Operation;
  network: NetworkState | undefined;
}

/**
 * The devnet's HTTP server: the spec's operations under per-service base paths with the real wire
 * conventions (route before method, POST only with `Allow: POST`, JSON only, webrpc error bodies,
 * credentials), plus token images under `/assets/`, web pages under `/market/` and `/explorer/`
 * (see pages.ts), Ethereum JSON-RPC per network under `/chain/<network>` (see chain-rpc.ts), and the
 * control API under `/devnet/`.
 */
export class RpcServer {
  readonly http: Server;
  readonly #deps: ServerDeps;
  #baseUrl = '';

  constructor(deps: ServerDeps) {
    this.#deps = deps;
    this.http = createServer((req, res) => {
      void this.#handle(req, res);
    });
    this.http.keepAliveTimeout = 5_000;
  }

  get baseUrl(): string {
    return this.#baseUrl;
  }

  listen(port: number, host: string): Promise<string> {
    return new Promise((resolve, reject) => {
      this.http.once('error', reject);
      this.http.listen(port, host, () => {
        this.http.off('error', reject);
        const address = this.http.address() as AddressInfo;
        const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
        this.#baseUrl = `http://${shownHost}:${address.port}`;
        resolve(this.#baseUrl);
      });
    });
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.http.close(() => resolve());
      this.http.closeAllConnections();
    });
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let path = req.url ?? '/';
    try {
      path = new URL(path, 'http://devnet').pathname;
      if (path === '/devnet' || path.startsWith('/devnet/')) {
        await this.#deps.control(req, res, path);
        return;
      }
      if (path.startsWith(CHAIN_RPC_PREFIX)) {
        await serveChainRpc(this.#deps.state, req, res, path);
        return;
      }
      if (path.startsWith('/assets/')) {
        serveAsset(this.#deps.state, req, res, path);
        this.#deps.onAsset?.(path);
        return;
      }
      if (PAGE_PREFIXES.some((prefix) => path.startsWith(prefix))) {
        servePage(this.#deps.state, req, res, path);
        return;
      }
      const route = this.#route(path);
      if (req.method !== 'POST') throw errors.badMethod(req.method ?? '');
      this.#authenticate(req, route.op);
      const stream = route.op.kind === 'stream';
      const decision = this.#deps.faults.decide(route.op.service, route.op.method, stream);
      if (decision.latencyMs > 0) await sleep(decision.latencyMs);
      if (decision.proxyStatus !== undefined) {
        req.resume();
        sendText(
          res,
          decision.proxyStatus,
          'text/html',
          `<html><head><title>${decision.proxyStatus}</title></head><body><center><h1>${decision.proxyStatus} Server Error</h1></center><hr><center>devnet-proxy</center></body></html>\n`,
        );
        return;
      }
      if (decision.error) throw decision.error;
      const contentType = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
      if (contentType !== 'application/json') {
        throw errors.badRequest(
          `unsupported Content-Type "${req.headers['content-type'] ?? ''}" (only application/json is allowed)`,
        );
      }
      const body = new In(parseJsonObject(await readBody(req)));
      const ctx: RequestContext = {
        state: this.#deps.state,
        pathNetwork: route.network,
        baseUrl: this.#baseUrl,
        hub: this.#deps.hub,
        collectibles: this.#deps.collectibles,
        now: Date.now(),
      };
      const sessionType = route.op.credential === 'bearer' ? 'Project' : 'AccessKey';
      if (route.op.kind === 'stream') {
        res.setHeader('session-type', sessionType);
        route.op.open(ctx, body, res, decision.drop);
        return;
      }
      sendJson(res, 200, route.op.handle(ctx, body), { 'session-type': sessionType });
    } catch (error) {
      const rpcError: RpcError = asRpcError(error);
      if (rpcError.code === -7 && rpcError.causeText !== 'injected fault') this.#deps.onError(error, path);
      if (!req.readableEnded) req.resume();
      sendError(res, rpcError);
    }
  }

  #route(path: string): Route {
    const match = RPC_PATH.exec(path);
    if (!match) throw errors.badRoute(path);
    const base = match[1] as BaseName;
    const segment = match[2];
    const op = OPERATIONS.get(`${base}|${match[3]}/${match[4]}`);
    if (!op) throw errors.badRoute(path);
    const rule = NETWORK_SEGMENT[base];
    if (segment === undefined) {
      if (rule === 'required') throw errors.badRoute(path);
      return { op, network: undefined };
    }
    if (rule === 'none') throw errors.badRoute(path);
    let name: string;
    try {
      name = decodeURIComponent(segment);
    } catch {
      throw errors.badRoute(path);
    }
    const network = this.#deps.state.network(name);
    if (!network) throw errors.badRoute(path);
    return { op, network };
  }

  #authenticate(req: IncomingMessage, op: Operation): void {
    const { state } = this.#deps;
    const key = header(req, 'x-access-key');
    if (key !== undefined && key !== state.accessKey)
      throw errors.accessKeyNotFound('the X-Access-Key is not a key of this platform');
    if (op.credential === 'accessKey') {
      if (key === undefined) throw errors.unauthorized('missing X-Access-Key header');
      return;
    }
    const authorization = header(req, 'authorization');
    const bearer = authorization === undefined ? undefined : /^bearer\s+(\S+)\s*$/i.exec(authorization)?.[1];
    if (bearer === undefined)
      throw errors.unauthorized(`${op.service}/${op.method} needs Authorization: Bearer <secret token>`);
    if (bearer !== state.secretToken) throw errors.unauthorized('invalid bearer token');
  }
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  const text = Array.isArray(value) ? value[0] : value;
  return text === undefined || text.trim() === '' ? undefined : text.trim();
}
