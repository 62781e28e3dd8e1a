import { LRUCache } from 'lru-cache';
import { oneLine, withoutInvisible } from '../core/reply.ts';
import type { ChatSettings } from '../core/settings.ts';
import type { PlatformClient } from '../platform/client.ts';
import type { ContractInfo } from '../platform/types.ts';
import { own } from '../records.ts';
import type { CollectionLookup, ResolvedCollection } from './command.ts';
import { AmbiguousCollectionError, UserError } from './errors.ts';
import type { CollectionRef } from './options.ts';

/** How many candidates an ambiguous name offers. */
export const MAX_CANDIDATES = 5;

/**
 * Turns what a user typed into one collection: an address (named via the metadata service when it
 * knows it), a chat alias, or a name looked up with SearchMetadata on the invocation's network. A
 * name found only on other configured networks is offered, never taken: {@link AmbiguousCollectionError}
 * with `searched` set. Lookups are cached briefly.
 */
export class CollectionResolver implements CollectionLookup {
  readonly #platform: PlatformClient;
  readonly #search = new LRUCache<string, ContractInfo[]>({ max: 2_000, ttl: 5 * 60_000 });

  constructor(platform: PlatformClient) {
    this.#platform = platform;
  }

  async resolve(
    ref: CollectionRef,
    network: string,
    settings: ChatSettings,
    option: string,
  ): Promise<ResolvedCollection> {
    if (ref.kind === 'address') {
      const on = ref.network ?? network;
      const known = (await this.#lookup(ref.address, on)).find((c) => c.address.toLowerCase() === ref.address);
      return describe(known, on, ref.address);
    }
    const text = nameText(ref.text);
    const alias = ref.network === undefined ? own(settings.aliases, text.toLowerCase()) : undefined;
    if (alias) return { network: alias.network, address: alias.address, name: alias.name ?? alias.alias };
    if (ref.network !== undefined) network = ref.network;
    const found = await this.#lookup(text, network);
    if (found.length === 0) {
      const elsewhere = await this.#elsewhere(text, network);
      if (elsewhere.length === 0) {
        // `mainnet:moon cats` with no network of that name: most likely a network this bot does not follow.
        const prefix = ref.network === undefined ? /^([A-Za-z0-9-]+):\S/.exec(ref.text)?.[1] : undefined;
        const networks = this.#platform.networks.all.map((n) => n.name).join(', ');
        throw new UserError('unknown_collection', {
          query: ref.text,
          network,
          ...(prefix ? { prefix, networks } : {}),
        });
      }
      throw new AmbiguousCollectionError(ref.text, elsewhere, option, network);
    }
    const only = onlyMatch(found, text);
    if (only) return describe(only, network, only.address);
    const exact = exactMatches(found, text);
    const candidates = (exact.length > 1 ? exact : found)
      .slice(0, MAX_CANDIDATES)
      .map((c) => describe(c, network, c.address));
    throw new AmbiguousCollectionError(ref.text, candidates, option);
  }

  /**
   * Whether `ref` names one collection without asking: an alias, an address, or a name with one match
   * (or one exact match) on its network. Other networks are not searched. For trying readings of a
   * refused line, at the cost of one (cached) search.
   */
  async probe(ref: CollectionRef, network: string, settings: ChatSettings): Promise<boolean> {
    if (ref.kind === 'address') return true;
    const text = nameText(ref.text);
    if (ref.network === undefined && own(settings.aliases, text.toLowerCase())) return true;
    return onlyMatch(await this.#lookup(text, ref.network ?? network), text) !== undefined;
  }

  /**
   * Matches of a name on the configured networks other than `network`, exact names first when
   * there are any. Looked up only when `network` has none; a network whose search fails is left
   * out, as this only offers alternatives to "no collection matches".
   */
  async #elsewhere(text: string, network: string): Promise<ResolvedCollection[]> {
    const others = this.#platform.networks.all.map((n) => n.name).filter((name) => name !== network);
    const settled = await Promise.allSettled(
      others.map(async (name) => (await this.#lookup(text, name)).map((info) => ({ info, network: name }))),
    );
    const found = settled.flatMap((result) => (result.status === 'fulfilled' ? result.value : []));
    const wanted = text.toLowerCase();
    const exact = found.filter((c) => c.info.name.toLowerCase() === wanted);
    return (exact.length > 0 ? exact : found)
      .slice(0, MAX_CANDIDATES)
      .map((c) => describe(c.info, c.network, c.info.address));
  }

  /** Collections whose name starts with or contains `text`, for autocomplete. */
  async suggest(text: string, network: string): Promise<ResolvedCollection[]> {
    if (text.trim().length < 2) return [];
    return (await this.#lookup(text.trim(), network)).map((c) => describe(c, network, c.address));
  }

  async #lookup(text: string, network: string): Promise<ContractInfo[]> {
    const key = `${network}\u0000${text.toLowerCase()}`;
    const cached = this.#search.get(key);
    if (cached) return cached;
    const chainId = this.#platform.networks.resolve(network).chainId;
    const { contractInfo } = await this.#platform.metadata.searchMetadata({
      filter: text,
      network,
      types: ['ERC721', 'ERC1155'],
      excludeTokenMetadata: true,
    });
    const onNetwork = contractInfo.filter((c) => c.chainId === undefined || c.chainId === chainId);
    this.#search.set(key, onNetwork);
    return onNetwork;
  }
}

/** A name as typed, without the bidi overrides or zero-width spaces a paste may bring. */
function nameText(typed: string): string {
  return withoutInvisible(typed).trim() || typed;
}

function exactMatches(found: readonly ContractInfo[], text: string): ContractInfo[] {
  const wanted = text.toLowerCase();
  return found.filter((c) => c.name.toLowerCase() === wanted);
}

/** The one collection a name means among its matches: its only exact match, else its only match. */
function onlyMatch(found: readonly ContractInfo[], text: string): ContractInfo | undefined {
  const exact = exactMatches(found, text);
  if (exact.length === 1) return exact[0];
  return found.length === 1 ? found[0] : undefined;
}

function describe(info: ContractInfo | undefined, network: string, address: string): ResolvedCollection {
  const out: ResolvedCollection = {
    network,
    address: address.toLowerCase(),
    name: oneLine(info?.name ?? '', 100) || `${address.slice(0, 6)}…${address.slice(-4)}`,
  };
  if (info?.type) out.standard = info.type;
  if (info?.logoURI) out.image = info.logoURI;
  return out;
}
