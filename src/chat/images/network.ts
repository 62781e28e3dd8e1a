import { type LookupAddress, lookup } from 'node:dns';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, buildConnector, type Dispatcher, interceptors } from 'undici';

/** An image address that resolves only to a loopback, private, link-local, documentation or otherwise special-purpose host. */
export class BlockedAddressError extends Error {
  override name = 'BlockedAddressError';
  readonly host: string;
  constructor(host: string) {
    super(`${host} is not a public address`);
    this.host = host;
  }
}

/**
 * Whether an IP address is anything but an ordinary public one: ipaddr.js's special-purpose ranges
 * (RFC 6890 and later: loopback, private, link-local, shared, multicast, reserved, documentation
 * such as 192.0.2.0/24 and 2001:db8::/32, benchmarking, 6to4, Teredo, NAT64 and the rest) all
 * count as internal; an IPv4-mapped IPv6 address is judged as the IPv4 address it carries. Text
 * that is not an IP address is not an address: false.
 */
export function isInternalAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const parsed = ipaddr.process(address);
  return parsed.range() !== 'unicast';
}

/** DNS resolution that keeps only public addresses, so a name cannot point the bot at its own network. */
const publicLookup: LookupFunction = (hostname, options, callback) => {
  lookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
    if (error) {
      callback(error, '', 0);
      return;
    }
    const usable = addresses.filter((a) => !isInternalAddress(a.address));
    const first = usable[0];
    if (!first) callback(new BlockedAddressError(hostname), '', 0);
    else if (options.all) callback(null, usable);
    else callback(null, first.address, first.family);
  });
};

export interface ImageDispatcherOptions {
  /**
   * `host:port` pairs (`127.0.0.1:8545`, `[::1]:8545`, `images.example:443`) fetched even when
   * internal: the platform's own, e.g. a local devnet. Only that port of the host is exempt.
   */
  allowHosts: readonly string[];
  connectTimeoutMs: number;
  maxRedirections: number;
}

/**
 * The HTTP client for image addresses found in token metadata, which anyone who deploys a
 * collection controls. It refuses to connect to internal addresses (metadata must not make the bot
 * probe its own network or a cloud metadata service), checked on the address actually connected
 * to: after DNS resolution and on every redirect, so neither a DNS answer nor a redirect gets
 * around it. The hosts in `allowHosts` are exempt.
 */
export function imageDispatcher(options: ImageDispatcherOptions): Dispatcher {
  const allowed = new Set(options.allowHosts.flatMap((entry) => hostAndPort(entry) ?? []));
  const guarded = buildConnector({ timeout: options.connectTimeoutMs, lookup: publicLookup });
  const trusted = buildConnector({ timeout: options.connectTimeoutMs });
  const connect: buildConnector.connector = (target, callback) => {
    const host = normalHost(target.hostname);
    const port = target.port || (target.protocol === 'https:' ? '443' : '80');
    if (allowed.has(`${host}:${port}`)) trusted(target, callback);
    else if (isInternalAddress(host)) callback(new BlockedAddressError(host), null);
    else guarded(target, callback);
  };
  return new Agent({ connect, connections: 8 }).compose(
    interceptors.redirect({ maxRedirections: options.maxRedirections }),
  );
}

function normalHost(host: string): string {
  return host.replace(/^\[|\]$/g, '').toLowerCase();
}

/** `host:port` with the host normalised (no brackets, lower case), or undefined without a port. */
function hostAndPort(entry: string): string | undefined {
  const colon = entry.lastIndexOf(':');
  const port = Number(entry.slice(colon + 1));
  if (colon < 0 || !Number.isInteger(port) || port < 1 || port > 65_535 || entry.endsWith(']')) return undefined;
  return `${normalHost(entry.slice(0, colon))}:${port}`;
}
