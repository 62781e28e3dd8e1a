import type { Network } from '../platform/networks.ts';
import type { Order } from '../platform/types.ts';
import { own } from '../records.ts';
import { marketplaceName } from './format.ts';

/**
 * Where people look at things on the web: a token on its marketplace, a transaction on an explorer.
 * Templates name their parts in braces: `{network}`, `{chainId}`, `{collection}`, `{tokenId}`,
 * `{txnHash}`.
 */
export interface LinkTemplates {
  /** The token's page on the platform's marketplace (its own orders are bought there). */
  token?: string | undefined;
  /** Transaction pages by network name. */
  transaction: Readonly<Record<string, string>>;
}

/** OpenSea's name of each network it lists, for token pages of orders placed there. */
const OPENSEA_CHAINS: Readonly<Record<string, string>> = {
  mainnet: 'ethereum',
  optimism: 'optimism',
  bsc: 'bsc',
  polygon: 'matic',
  base: 'base',
  arbitrum: 'arbitrum',
  'arbitrum-nova': 'arbitrum_nova',
  avalanche: 'avalanche',
  sepolia: 'sepolia',
  amoy: 'amoy',
};

/**
 * Magic Eden's name of each EVM network it lists (its item pages and API say `ethereum`, `polygon`:
 * not OpenSea's `matic`). Networks it does not list get no Magic Eden link.
 */
const MAGIC_EDEN_CHAINS: Readonly<Record<string, string>> = {
  mainnet: 'ethereum',
  polygon: 'polygon',
  base: 'base',
  arbitrum: 'arbitrum',
  bsc: 'bsc',
};

/** The one network a marketplace lists. */
const MAINNET_ONLY: Readonly<Record<string, string>> = { mainnet: 'ethereum' };

/**
 * Token pages of third-party marketplaces, by the platform's marketplace name. `{chain}` is the
 * network's name in that marketplace's own addresses (each names networks its own way); a network
 * missing from `chains` has no page there.
 */
const MARKETPLACE_PAGES: Readonly<Record<string, { template: string; chains: Readonly<Record<string, string>> }>> = {
  opensea: { template: 'https://opensea.io/assets/{chain}/{collection}/{tokenId}', chains: OPENSEA_CHAINS },
  blur: { template: 'https://blur.io/asset/{collection}/{tokenId}', chains: MAINNET_ONLY },
  looks_rare: { template: 'https://looksrare.org/collections/{collection}/{tokenId}', chains: MAINNET_ONLY },
  x2y2: { template: 'https://x2y2.io/eth/{collection}/{tokenId}', chains: MAINNET_ONLY },
  magic_eden: {
    template: 'https://magiceden.io/item-details/{chain}/{collection}/{tokenId}',
    chains: MAGIC_EDEN_CHAINS,
  },
};

/** The platform's own marketplaces: their orders are bought on the token page of {@link LinkTemplates.token}. */
const OWN_MARKETPLACES = new Set(['sequence_marketplace_v1', 'sequence_marketplace_v2']);

/**
 * Builds the links of answers and alerts. Every link is optional: a network without an explorer or a
 * marketplace without a web page simply gets no link.
 */
export class Links {
  readonly #templates: LinkTemplates;
  readonly #chainIds: ReadonlyMap<string, number>;

  constructor(templates: LinkTemplates, networks: readonly Network[]) {
    this.#templates = templates;
    this.#chainIds = new Map(networks.map((n) => [n.name, n.chainId]));
  }

  /** The token's page on the platform's marketplace. */
  token(network: string, collection: string, tokenId: string): string | undefined {
    const template = this.#templates.token;
    return template ? this.#fill(template, { network, collection, tokenId }) : undefined;
  }

  /** The transaction on the network's explorer. */
  transaction(network: string, txnHash: string): string | undefined {
    const template = own(this.#templates.transaction, network);
    return template ? this.#fill(template, { network, txnHash }) : undefined;
  }

  /** Where the order can be bought (or its offer seen): the page of its marketplace, when it has one. */
  order(
    network: string,
    collection: string,
    tokenId: string,
    order: Pick<Order, 'marketplace' | 'originName'>,
  ): { label: string; url: string } | undefined {
    const marketplace = order.marketplace ?? '';
    const label = marketplaceName(order);
    if (OWN_MARKETPLACES.has(marketplace)) {
      const url = this.token(network, collection, tokenId);
      return url ? { label, url } : undefined;
    }
    const page = own(MARKETPLACE_PAGES, marketplace);
    const chain = page && own(page.chains, network);
    if (!page || !chain) return undefined;
    return { label, url: this.#fill(page.template, { network, chain, collection, tokenId }) };
  }

  #fill(template: string, parts: Record<string, string>): string {
    const values: Record<string, string> = { chainId: String(this.#chainIds.get(parts.network ?? '') ?? ''), ...parts };
    return template.replace(/\{(\w+)\}/g, (whole, name: string) =>
      Object.hasOwn(values, name) ? encodeURIComponent(values[name] as string) : whole,
    );
  }
}
