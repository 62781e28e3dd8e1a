/**
 * Platform discovery: a platform that describes itself (the local platform, `npm run devnet`, at
 * `GET /devnet/info`) gives the bot its addresses, networks, chain ids, native coins, marketplace
 * contracts, chain JSON-RPC, project and page links, so that FLOORWATCH_PLATFORM_URL and the
 * credentials are all the configuration it needs. Real platforms publish no such document: there
 * the configuration names everything itself.
 */
import { request } from 'undici';
import * as v from 'valibot';
import { type BodyRead, readBody } from './body.ts';
import type { Network } from './networks.ts';
import type { PlatformEndpoints } from './services/context.ts';

/** Where a platform's description is served, below the base address the operator gives. */
export const DISCOVERY_PATH = '/devnet/info';
const MAX_BYTES = 1024 * 1024;
const TIMEOUT_MS = 10_000;

/** What the bot takes from a platform's description. */
export interface PlatformDescription {
  endpoints: PlatformEndpoints;
  networks: Network[];
  /** Native coin symbol per network (the currency at the zero address). */
  nativeSymbols: Record<string, string>;
  /** The platform's marketplace contract(s) per network. */
  marketplaceContracts: Record<string, string[]>;
  /** Ethereum JSON-RPC, `{network}` standing for the network's name. */
  chainRpcUrl: string | undefined;
  projectId: number | undefined;
  /** Token and transaction page templates, when the platform serves such pages. */
  pages: { token: string; transaction: string } | undefined;
}

/**
 * The description could not be had. `exitCode` 69 (EX_UNAVAILABLE): the platform could not be
 * reached, which a supervisor should retry; 78 (EX_CONFIG): it answered, but with no usable
 * description, which a restart will not change.
 */
export class PlatformDiscoveryError extends Error {
  override name = 'PlatformDiscoveryError';
  readonly exitCode: 69 | 78;
  constructor(message: string, exitCode: 69 | 78, options?: { cause?: unknown }) {
    super(message, options);
    this.exitCode = exitCode;
  }
}

const httpUrl = v.pipe(
  v.string(),
  v.check((text) => {
    try {
      const url = new URL(text.replace(/\{\w+\}/g, 'x'));
      return (url.protocol === 'http:' || url.protocol === 'https:') && !url.username && !url.password;
    } catch {
      return false;
    }
  }, 'expected an http(s) address'),
);
const address = v.pipe(v.string(), v.regex(/^0x[0-9a-fA-F]{40}$/, 'expected an address (0x and 40 hex digits)'));

const DescriptionSchema = v.object({
  url: httpUrl,
  endpoints: v.object({
    metadataUrl: httpUrl,
    marketplaceUrl: v.pipe(httpUrl, v.includes('{network}', 'expected {network} in the address')),
    indexerUrl: v.pipe(httpUrl, v.includes('{network}', 'expected {network} in the address')),
    relayerUrl: v.pipe(httpUrl, v.includes('{network}', 'expected {network} in the address')),
    apiUrl: httpUrl,
  }),
  chainRpcUrl: v.optional(httpUrl),
  pages: v.optional(
    v.object({
      token: v.pipe(httpUrl, v.includes('{tokenId}', 'expected {tokenId} in the address')),
      transaction: v.pipe(httpUrl, v.includes('{txnHash}', 'expected {txnHash} in the address')),
    }),
  ),
  projectId: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
  networks: v.pipe(
    v.array(
      v.object({
        name: v.pipe(v.string(), v.regex(/^[a-z][a-z0-9-]{0,40}$/, 'expected a network name (a-z, 0-9, -)')),
        chainId: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(999_999_999_999)),
        marketplaceContract: v.optional(address),
        currencies: v.optional(
          v.array(v.object({ address, symbol: v.pipe(v.string(), v.regex(/^[A-Za-z0-9.]{1,12}$/)) })),
        ),
      }),
    ),
    v.minLength(1, 'expected at least one network'),
    v.maxLength(100, 'expected at most 100 networks'),
  ),
});

/**
 * Reads the description of the platform at `baseUrl` (`<baseUrl>/devnet/info`). Addresses it gives on
 * its own origin are read relative to `baseUrl`, so a platform reached by another name than it knows
 * itself by (a container's service name, a forwarded port) still works.
 *
 * @throws {@link PlatformDiscoveryError}
 */
export async function discoverPlatform(
  baseUrl: string,
  options: { timeoutMs?: number } = {},
): Promise<PlatformDescription> {
  const base = baseUrl.replace(/\/+$/, '');
  const where = `${base}${DISCOVERY_PATH}`;
  const timeoutMs = options.timeoutMs ?? TIMEOUT_MS;
  let response: Awaited<ReturnType<typeof request>>;
  try {
    // undici follows no redirect unless told to.
    response = await request(where, { method: 'GET', headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  } catch (error) {
    throw new PlatformDiscoveryError(
      `FLOORWATCH_PLATFORM_URL: ${where} cannot be reached (${reason(error)}). Is the local platform running (npm run devnet)?`,
      69,
    );
  }
  let read: BodyRead;
  try {
    read = await readBody(response.body, { maxBytes: MAX_BYTES, timeoutMs });
  } catch (error) {
    throw new PlatformDiscoveryError(`FLOORWATCH_PLATFORM_URL: ${where} broke off its answer (${reason(error)}).`, 69);
  }
  const notADescription = (why: string) =>
    new PlatformDiscoveryError(
      `FLOORWATCH_PLATFORM_URL: ${where} ${why}. It is meant for a platform that describes itself there (the local platform, npm run devnet); for another platform set the five addresses (FLOORWATCH_METADATA_URL ... FLOORWATCH_API_URL), FLOORWATCH_NETWORKS and FLOORWATCH_MARKETPLACE_CONTRACTS instead.`,
      78,
    );
  if (response.statusCode !== 200) throw notADescription(`answered HTTP ${response.statusCode}`);
  if (read.kind !== 'complete') throw notADescription(`sent an answer over ${MAX_BYTES} bytes or too slowly`);
  let json: unknown;
  try {
    json = JSON.parse(read.text);
  } catch {
    throw notADescription('did not answer JSON');
  }
  const parsed = v.safeParse(DescriptionSchema, json);
  if (!parsed.success) {
    const issue = parsed.issues[0];
    const path = issue ? v.getDotPath(issue) : null;
    throw notADescription(`answered a description that is not valid (${path ?? 'document'}: ${issue?.message ?? '?'})`);
  }
  const doc = parsed.output;
  // Addresses on the platform's own origin follow the address the operator gave.
  const rebase = (url: string) => (url.startsWith(doc.url) ? `${base}${url.slice(doc.url.length)}` : url);
  const nativeSymbols: Record<string, string> = {};
  const marketplaceContracts: Record<string, string[]> = {};
  for (const network of doc.networks) {
    const native = network.currencies?.find((c) => /^0x0{40}$/.test(c.address));
    if (native) nativeSymbols[network.name] = native.symbol;
    if (network.marketplaceContract) marketplaceContracts[network.name] = [network.marketplaceContract.toLowerCase()];
  }
  return {
    endpoints: {
      metadataUrl: rebase(doc.endpoints.metadataUrl),
      marketplaceUrl: rebase(doc.endpoints.marketplaceUrl),
      indexerUrl: rebase(doc.endpoints.indexerUrl),
      relayerUrl: rebase(doc.endpoints.relayerUrl),
      apiUrl: rebase(doc.endpoints.apiUrl),
    },
    networks: doc.networks.map((n) => ({ name: n.name, chainId: n.chainId })),
    nativeSymbols,
    marketplaceContracts,
    chainRpcUrl: doc.chainRpcUrl === undefined ? undefined : rebase(doc.chainRpcUrl),
    projectId: doc.projectId,
    pages: doc.pages && { token: rebase(doc.pages.token), transaction: rebase(doc.pages.transaction) },
  };
}

/** A short reason: the system's error code (ECONNREFUSED, ENOTFOUND) or undici's. */
function reason(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  return error instanceof Error ? error.message : String(error);
}
