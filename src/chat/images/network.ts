import { type LookupAddress, lookup } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { Agent, buildConnector, type Dispatcher, interceptors } from 'undici';

/** An image address that resolves only to a loopback, private, link-local or otherwise internal host. */
export class BlockedAddressError extends Error {
  override name = 'BlockedAddressError';
  readonly host: string;
  constructor(host: string) {
    super(`${host} is not a public address`);
    this.host = host;
  }
}

/** Everything that is not the public internet (RFC 6890 special-purpose blocks). */
const INTERNAL = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 3],
] as const) {
  INTERNAL.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 127],
  ['64:ff9b:1::', 48],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  INTERNAL.addSubnet(network, prefix, 'ipv6');
}

/** Whether an IP address is internal; IPv4-mapped IPv6 addresses are judged as IPv4. */
export function isInternalAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  return INTERNAL.check(address, family === 4 ? 'ipv4' : 'ipv6');
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
  /** Host names (or IP addresses) fetched even when internal: the platform's own, e.g. a local devnet. */
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
  const allowed = new Set(options.allowHosts.map(normalHost));
  const guarded = buildConnector({ timeout: options.connectTimeoutMs, lookup: publicLookup });
  const trusted = buildConnector({ timeout: options.connectTimeoutMs });
  const connect: buildConnector.connector = (target, callback) => {
    const host = normalHost(target.hostname);
    if (allowed.has(host)) trusted(target, callback);
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
