import { PlatformBadRecordError, PlatformBadResponseError } from '../errors.ts';
import type { NetworkDirectory } from '../networks.ts';
import { ShapeError } from '../normalize.ts';
import { AnswerReader, BadRecordError, type RecordDrops } from '../records/read.ts';
import type { CallOptions, Credential, Transport } from '../transport.ts';

/** Base addresses of the platform (spec, "Conventions"); `{network}` is filled per call. */
export interface PlatformEndpoints {
  /** Metadata and Collections. */
  metadataUrl: string;
  /** Marketplace; carries a network path segment, e.g. `https://host/{network}`. */
  marketplaceUrl: string;
  /** Indexer; network-specific host, e.g. `https://{network}-indexer.host`. */
  indexerUrl: string;
  /** Relayer; network-specific host. */
  relayerUrl: string;
  /** Builder and Analytics. */
  apiUrl: string;
}

/** What every service module needs; built once by the client. */
export interface ServiceContext {
  transport: Transport;
  endpoints: PlatformEndpoints;
  networks: NetworkDirectory;
  /** Default project for Builder, Relayer, Collections and Analytics calls. */
  projectId: number | undefined;
  /** Where records that fail their checks are counted. */
  drops: RecordDrops;
}

export interface Call<T> {
  baseUrl: string;
  service: string;
  method: string;
  credential: Credential;
  body: Record<string, unknown>;
  retryable?: boolean;
  /** Reads the answer's records through `read`, which checks each (see records/read.ts). */
  decode: (out: Record<string, unknown>, read: AnswerReader) => T;
}

/**
 * Sends one call and decodes its answer. Bad records of lists are dropped and counted; an answer of
 * the wrong shape is a bad response naming the operation, and one whose lone record is bad a
 * {@link PlatformBadRecordError} naming the record and its fields.
 */
export async function rpc<T>(ctx: ServiceContext, call: Call<T>, options?: CallOptions): Promise<T> {
  const out = await ctx.transport.call(
    {
      baseUrl: call.baseUrl,
      service: call.service,
      method: call.method,
      credential: call.credential,
      body: withoutUndefined(call.body),
      retryable: call.retryable ?? true,
    },
    options,
  );
  const operation = `${call.service}/${call.method}`;
  const scrub = (text: string) => ctx.transport.scrub(text);
  try {
    return call.decode(out, new AnswerReader(operation, ctx.drops, scrub));
  } catch (cause) {
    const host = new URL(call.baseUrl).host;
    if (cause instanceof BadRecordError) {
      throw new PlatformBadRecordError(operation, host, `answer holds a bad record: ${scrub(cause.message)}`, cause, {
        cause,
      });
    }
    if (cause instanceof ShapeError) {
      throw new PlatformBadResponseError(operation, host, `answer has the wrong shape: ${scrub(cause.message)}`, 200, {
        cause,
      });
    }
    throw cause;
  }
}

export function withoutUndefined(body: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key in body) if (body[key] !== undefined) out[key] = body[key];
  return out;
}

export function requireProjectId(ctx: ServiceContext, given: number | undefined, operation: string): number {
  const projectId = given ?? ctx.projectId;
  if (projectId === undefined) {
    throw new RangeError(`${operation} needs a projectId: pass one or configure the client's projectId`);
  }
  return projectId;
}
