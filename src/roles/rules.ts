/**
 * Role rules as people read them, and what a person's holdings earn under them: pure functions of
 * the rules and the counts the holdings reader gives.
 */
import type { RoleRule } from '../core/roles.ts';
import type { Requirement } from './holdings.ts';

/** `at least 2 Moon Cats (devnet), tokens 1, 2, with fur=gold`: one line per rule (untrusted names kept as text). */
export function requirementText(rule: RoleRule): string {
  const parts = [`at least ${rule.minBalance} ${rule.collectionName} (${rule.network})`];
  if (rule.tokenIds?.length) {
    const shown = rule.tokenIds.slice(0, 5).join(', ');
    parts.push(`tokens ${shown}${rule.tokenIds.length > 5 ? '…' : ''}`);
  }
  if (rule.traits?.length) parts.push(`with ${rule.traits.map((t) => `${t.name}=${t.value}`).join(', ')}`);
  return parts.join(', ');
}

/** The requirement a rule counts with. */
export function requirementOf(rule: RoleRule): Requirement {
  return {
    network: rule.network,
    collection: rule.collection,
    ...(rule.tokenIds?.length ? { tokenIds: rule.tokenIds } : {}),
    ...(rule.traits?.length ? { traits: rule.traits } : {}),
  };
}

/**
 * The targets a person's wallets earn: a target is earned when any one of its rules holds, each
 * rule counting the tokens of all the person's wallets together. `counts` holds, per wallet
 * address, the tokens meeting each rule's requirement (by index in `rules`).
 */
export function earnedTargets(
  rules: readonly RoleRule[],
  wallets: readonly string[],
  counts: ReadonlyMap<string, readonly bigint[]>,
): Set<string> {
  const earned = new Set<string>();
  rules.forEach((rule, index) => {
    let total = 0n;
    for (const wallet of wallets) total += counts.get(wallet)?.[index] ?? 0n;
    if (total >= BigInt(rule.minBalance)) earned.add(rule.target);
  });
  return earned;
}

/** The targets of a set of rules, each once, in rule order. */
export function targetsOf(rules: readonly RoleRule[]): string[] {
  return [...new Set(rules.map((rule) => rule.target))];
}
