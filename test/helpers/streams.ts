import type { StreamHealth } from '../../src/core/status.ts';
import type { Devnet } from '../../src/devnet/index.ts';

/** The local platform's marketplace contracts per network, as the bot subscribes to them. */
export function marketplacesOf(devnet: Devnet): Record<string, string[]> {
  return Object.fromEntries(devnet.info().networks.map((n) => [n.name, [n.marketplaceContract]]));
}

/**
 * Whether the alert streams follow these rules: every network with active rules or marketplace
 * contracts is connected and subscribed to exactly its watched collections plus the marketplaces.
 * The marketplaces are subscribed from start-up, so "some contracts" says nothing of the rules.
 */
export function streamsFollow(
  health: readonly StreamHealth[],
  rules: ReadonlyArray<{ network: string; collection: string; paused?: boolean }>,
  marketplaces: Readonly<Record<string, readonly string[]>>,
): boolean {
  const collections = new Map<string, Set<string>>();
  for (const rule of rules) {
    if (rule.paused) continue;
    const set = collections.get(rule.network) ?? new Set();
    set.add(rule.collection.toLowerCase());
    collections.set(rule.network, set);
  }
  const networks = new Set([...collections.keys(), ...Object.keys(marketplaces)]);
  return [...networks].every((network) => {
    const expected = (collections.get(network)?.size ?? 0) + (marketplaces[network]?.length ?? 0);
    const stream = health.find((s) => s.network === network);
    return expected === 0 || (stream?.events === 'connected' && stream.contracts === expected);
  });
}
