import type { ServerResponse } from 'node:http';
import type { CollectiblesIndex } from '../collectibles.ts';
import type { CollectionState } from '../collection.ts';
import { errors, type ServiceName } from '../errors.ts';
import type { StreamDrop } from '../faults.ts';
import type { DevnetState, NetworkState } from '../state.ts';
import type { StreamHub } from '../streams.ts';
import type { In, Json } from '../validate.ts';

/** Where an operation is served: the base address it hangs under. */
export type BaseName = 'metadata' | 'marketplace' | 'indexer' | 'relayer' | 'api';

export interface RequestContext {
  state: DevnetState;
  /** The network named in the path (marketplace, indexer, relayer). */
  pathNetwork: NetworkState | undefined;
  /** `http://host:port` of this server, for the image and logo URLs it serves. */
  baseUrl: string;
  hub: StreamHub;
  collectibles: CollectiblesIndex;
  now: number;
}

interface OperationBase {
  service: ServiceName;
  method: string;
  base: BaseName;
  /** `accessKey`: X-Access-Key. `bearer`: Authorization: Bearer with the secret token. */
  credential: 'accessKey' | 'bearer';
}

export interface UnaryOperation extends OperationBase {
  kind: 'unary';
  handle(ctx: RequestContext, body: In): Json;
}

export interface StreamOperation extends OperationBase {
  kind: 'stream';
  open(ctx: RequestContext, body: In, res: ServerResponse, drop: StreamDrop | undefined): void;
}

export type Operation = UnaryOperation | StreamOperation;

/** The network of a request: from the path, or from `chainId`/`chainID` in the body, which must agree. */
export function requestNetwork(ctx: RequestContext, body: In, service: ServiceName): NetworkState {
  const fromBody: Array<{ key: string; value: unknown }> = [];
  for (const key of ['chainId', 'chainID']) {
    const value = body.raw(key);
    if (value !== undefined && value !== '') fromBody.push({ key, value });
  }
  let network = ctx.pathNetwork;
  for (const { key, value } of fromBody) {
    if (typeof value !== 'string' && typeof value !== 'number') {
      throw errors.invalidArgument(`${key}: expected a chain id as a string, got ${typeof value}`);
    }
    const named = ctx.state.network(value);
    if (!named) {
      throw errors.invalidArgument(
        `${key}: unknown chain ${JSON.stringify(value)}; this devnet serves ${ctx.state.describeNetworks()}`,
      );
    }
    if (network && named !== network) {
      throw errors.invalidArgument(
        `${key}: chain ${value} does not match the network ${network.name} (${network.chainId}) of the address`,
      );
    }
    network = named;
  }
  if (!network) {
    throw errors.invalidArgument(
      `chainId: the ${service} call names no network (neither in the address nor as chainId); this devnet serves ${ctx.state.describeNetworks()}`,
    );
  }
  return network;
}

export function requireCollection(
  network: NetworkState,
  address: string,
  service: ServiceName,
  field = 'contractAddress',
): CollectionState {
  const collection = network.byAddress.get(address);
  if (!collection) throw errors.notFound(service, `${field}: no collection ${address} on ${network.name}`);
  return collection;
}

export function requireToken(collection: CollectionState, tokenId: string, service: ServiceName): number {
  const index = collection.indexOf(tokenId);
  if (index === undefined) throw errors.notFound(service, `tokenId: no token ${tokenId} in ${collection.address}`);
  return index;
}

/** A `projectId` of the body, which must be the devnet's project; `required` when the real server requires it. */
export function checkProject(
  ctx: RequestContext,
  body: In,
  service: ServiceName,
  required: boolean,
  key = 'projectId',
): number {
  const projectId = required ? body.int(key, { min: 1 }) : body.optInt(key, { min: 0 });
  if (projectId === undefined || projectId === 0) return ctx.state.projectId;
  if (projectId !== ctx.state.projectId) {
    throw errors.accessKeyMismatch(
      service,
      `${key} ${projectId} is not the project of the access key (${ctx.state.projectId})`,
    );
  }
  return projectId;
}
