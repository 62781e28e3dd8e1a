import { UnknownNetworkError } from './errors.ts';

export interface Network {
  /** The name used in host and path templates (`{network}`), e.g. `polygon`. */
  name: string;
  chainId: number;
}

/** Networks known by name, so that configuration may list names alone. */
export const WELL_KNOWN_NETWORKS: readonly Network[] = [
  { name: 'mainnet', chainId: 1 },
  { name: 'optimism', chainId: 10 },
  { name: 'bsc', chainId: 56 },
  { name: 'polygon', chainId: 137 },
  { name: 'base', chainId: 8453 },
  { name: 'arbitrum', chainId: 42161 },
  { name: 'arbitrum-nova', chainId: 42170 },
  { name: 'avalanche', chainId: 43114 },
  { name: 'immutable-zkevm', chainId: 13371 },
  { name: 'sepolia', chainId: 11155111 },
  { name: 'amoy', chainId: 80002 },
];

/** Transaction pages on the block explorers of the well-known networks (Etherscan and its kin). */
export const EXPLORER_TX_URLS: Readonly<Record<string, string>> = {
  mainnet: 'https://etherscan.io/tx/{txnHash}',
  optimism: 'https://optimistic.etherscan.io/tx/{txnHash}',
  bsc: 'https://bscscan.com/tx/{txnHash}',
  polygon: 'https://polygonscan.com/tx/{txnHash}',
  base: 'https://basescan.org/tx/{txnHash}',
  arbitrum: 'https://arbiscan.io/tx/{txnHash}',
  'arbitrum-nova': 'https://nova.arbiscan.io/tx/{txnHash}',
  avalanche: 'https://snowtrace.io/tx/{txnHash}',
  'immutable-zkevm': 'https://explorer.immutable.com/tx/{txnHash}',
  sepolia: 'https://sepolia.etherscan.io/tx/{txnHash}',
  amoy: 'https://amoy.polygonscan.com/tx/{txnHash}',
};

/**
 * The networks a client may talk to, looked up by name or chain id.
 *
 * @example
 * const networks = new NetworkDirectory([{ name: 'polygon', chainId: 137 }]);
 * networks.resolve('137').name; // 'polygon'
 */
export class NetworkDirectory {
  readonly #byName = new Map<string, Network>();
  readonly #byChainId = new Map<number, Network>();

  constructor(networks: readonly Network[]) {
    for (const network of networks) {
      this.#byName.set(network.name.toLowerCase(), network);
      this.#byChainId.set(network.chainId, network);
    }
  }

  get all(): Network[] {
    return [...this.#byName.values()];
  }

  /** Finds a network by name (case-insensitive) or chain id; throws {@link UnknownNetworkError}. */
  resolve(ref: string | number): Network {
    const found = this.find(ref);
    if (!found)
      throw new UnknownNetworkError(
        String(ref),
        this.all.map((n) => n.name),
      );
    return found;
  }

  find(ref: string | number): Network | undefined {
    if (typeof ref === 'number') return this.#byChainId.get(ref);
    const trimmed = ref.trim();
    if (/^\d+$/.test(trimmed)) return this.#byChainId.get(Number(trimmed));
    return this.#byName.get(trimmed.toLowerCase());
  }
}

/** Fills `{network}` in an address template. */
export function expandTemplate(template: string, network: Network): string {
  return template.replaceAll('{network}', network.name);
}
