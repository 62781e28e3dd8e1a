/**
 * What verified wallets hold, as role rules ask: balances through the platform's
 * GetTokenBalancesByContract (many wallets and every collection of a network in one call, a page at
 * a time) and traits through the platform's metadata (the balance rows' own, else GetCollectible,
 * remembered for a while). A balance row the platform answers badly counts as nothing held; a call
 * that fails fails the whole count (an outage must not read as "holds nothing" and take roles away).
 */
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import type { TraitCondition } from '../core/types.ts';
import { type Trait, traitsOf } from '../market/format.ts';
import { nextPage } from '../market/paging.ts';
import type { PlatformClient } from '../platform/client.ts';
import type { TokenBalance } from '../platform/types.ts';

/** What one rule counts: tokens of a collection, perhaps only some ids, perhaps only some traits. */
export interface Requirement {
  network: string;
  /** Lower-case contract. */
  collection: string;
  tokenIds?: readonly string[] | undefined;
  traits?: readonly TraitCondition[] | undefined;
}

export interface HoldingsOptions {
  logger: Logger;
  /** Wallets asked about in one call (default 200). */
  accountsPerCall?: number;
  /** Balance rows per page (default 1,000, the platform's largest). */
  pageSize?: number;
  /** Tokens whose traits are remembered (default 50,000), and for how long (default 10 minutes). */
  traitCache?: { max: number; ttlMs: number };
}

/** Pages read for one call at most: 100,000 rows, far beyond what a few hundred wallets hold. */
const MAX_PAGES = 100;

const DECIMAL = /^\d{1,78}$/;

/** Case-insensitive, as watch rules match traits. */
const same = (a: string, b: string) => a.localeCompare(b, undefined, { sensitivity: 'accent' }) === 0;

/** Whether a token's traits satisfy every condition. */
export function hasTraits(traits: readonly Trait[], conditions: readonly TraitCondition[]): boolean {
  return conditions.every((condition) =>
    traits.some((t) => same(t.name, condition.name) && same(t.value, condition.value)),
  );
}

/** Reads holdings (see the module comment). */
export class HoldingsReader {
  readonly #platform: PlatformClient;
  readonly #logger: Logger;
  readonly #accountsPerCall: number;
  readonly #pageSize: number;
  readonly #traits: LRUCache<string, Trait[]>;
  /** Platform calls made, for benchmarks and metrics. */
  calls = 0;

  constructor(platform: PlatformClient, options: HoldingsOptions) {
    this.#platform = platform;
    this.#logger = options.logger;
    this.#accountsPerCall = options.accountsPerCall ?? 200;
    this.#pageSize = options.pageSize ?? 1_000;
    const cache = options.traitCache ?? { max: 50_000, ttlMs: 10 * 60_000 };
    this.#traits = new LRUCache({ max: cache.max, ttl: cache.ttlMs });
  }

  /**
   * For each address (lower-case) asked about, how many tokens it holds that meet each requirement
   * (by index in `requirements`). Addresses holding nothing are in the map with zeros.
   */
  async count(requirements: readonly Requirement[], addresses: Iterable<string>): Promise<Map<string, bigint[]>> {
    const counts = new Map<string, bigint[]>();
    for (const address of addresses)
      counts.set(
        address.toLowerCase(),
        requirements.map(() => 0n),
      );
    if (counts.size === 0 || requirements.length === 0) return counts;
    const byNetwork = new Map<string, Array<{ requirement: Requirement; index: number }>>();
    requirements.forEach((requirement, index) => {
      const list = byNetwork.get(requirement.network) ?? [];
      list.push({ requirement, index });
      byNetwork.set(requirement.network, list);
    });
    const accounts = [...counts.keys()];
    const work: Promise<void>[] = [];
    for (const [network, list] of byNetwork) {
      // Collections whose rules ask for traits are read with their metadata; the others without.
      const withTraits = new Set(list.filter((r) => r.requirement.traits?.length).map((r) => r.requirement.collection));
      const plain = new Set(list.map((r) => r.requirement.collection).filter((c) => !withTraits.has(c)));
      for (let at = 0; at < accounts.length; at += this.#accountsPerCall) {
        const chunk = accounts.slice(at, at + this.#accountsPerCall);
        for (const [contracts, metadata] of [
          [plain, false],
          [withTraits, true],
        ] as const) {
          if (contracts.size === 0) continue;
          work.push(this.#read(network, [...contracts], chunk, metadata, list, counts));
        }
      }
    }
    await Promise.all(work);
    return counts;
  }

  async #read(
    network: string,
    contracts: string[],
    accounts: string[],
    metadata: boolean,
    requirements: ReadonlyArray<{ requirement: Requirement; index: number }>,
    counts: Map<string, bigint[]>,
  ): Promise<void> {
    let page: number | undefined;
    for (let pages = 0; pages < MAX_PAGES; pages++) {
      this.calls++;
      const result = await this.#platform.indexer.getTokenBalancesByContract({
        network,
        filter: { contractAddresses: contracts, accountAddresses: accounts, contractStatus: 'ALL' },
        omitMetadata: !metadata,
        page: page === undefined ? { pageSize: this.#pageSize } : { page, pageSize: this.#pageSize },
      });
      for (const balance of result.balances) await this.#add(network, balance, requirements, counts);
      if (result.page.more !== true || result.balances.length === 0) return;
      page = nextPage(result.page, page);
    }
    this.#logger.warn({ network, accounts: accounts.length }, 'balances cut after too many pages');
  }

  async #add(
    network: string,
    balance: TokenBalance,
    requirements: ReadonlyArray<{ requirement: Requirement; index: number }>,
    counts: Map<string, bigint[]>,
  ): Promise<void> {
    const held = counts.get(balance.accountAddress.toLowerCase());
    if (!held || !DECIMAL.test(balance.balance)) return;
    const amount = BigInt(balance.balance);
    if (amount === 0n) return;
    const contract = balance.contractAddress.toLowerCase();
    const tokenId = balance.tokenID;
    for (const { requirement, index } of requirements) {
      if (requirement.collection !== contract) continue;
      if (requirement.tokenIds?.length && (tokenId === undefined || !requirement.tokenIds.includes(tokenId))) continue;
      if (requirement.traits?.length) {
        if (tokenId === undefined) continue;
        const traits = await this.#traitsOf(network, contract, tokenId, balance);
        if (!hasTraits(traits, requirement.traits)) continue;
      }
      held[index] = (held[index] ?? 0n) + amount;
    }
  }

  /** A token's traits: from the balance row's metadata, else remembered, else GetCollectible. */
  async #traitsOf(network: string, contract: string, tokenId: string, balance: TokenBalance): Promise<Trait[]> {
    const key = `${network}:${contract}:${tokenId}`;
    if (balance.tokenMetadata?.attributes) {
      const traits = traitsOf(balance.tokenMetadata);
      this.#traits.set(key, traits);
      return traits;
    }
    const known = this.#traits.get(key);
    if (known) return known;
    this.calls++;
    const metadata = await this.#platform.marketplace.getCollectible({ network, contractAddress: contract, tokenId });
    const traits = traitsOf(metadata);
    this.#traits.set(key, traits);
    return traits;
  }
}
