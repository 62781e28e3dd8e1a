import { LRUCache } from 'lru-cache';
import { formatUnits } from 'viem';
import type { PlatformClient } from '../platform/client.ts';
import { own } from '../records.ts';

export const NATIVE_CURRENCY = '0x0000000000000000000000000000000000000000';

const NATIVE_SYMBOLS: Record<string, string> = {
  polygon: 'POL',
  amoy: 'POL',
  bsc: 'BNB',
  avalanche: 'AVAX',
  'immutable-zkevm': 'IMX',
};

/**
 * Symbols of the currencies orders are priced in: the native coin by network, other tokens looked
 * up once with SearchMetadata (ERC-20) and remembered; a short address when the platform does not
 * know the token.
 */
export class CurrencyDirectory {
  readonly #platform: PlatformClient;
  readonly #symbols = new LRUCache<string, string>({ max: 1_000 });
  readonly #decimals = new LRUCache<string, number>({ max: 1_000 });
  /** US dollars per whole unit, learned from orders the platform priced; kept a few minutes. */
  readonly #usdRates = new LRUCache<string, number>({ max: 1_000, ttl: 5 * 60_000 });
  readonly #pending = new Map<string, Promise<string>>();
  readonly #native: Readonly<Record<string, string>>;

  /** `nativeSymbols` names the native coin per network where the built-in table does not. */
  constructor(platform: PlatformClient, nativeSymbols: Readonly<Record<string, string>> = {}) {
    this.#platform = platform;
    this.#native = { ...NATIVE_SYMBOLS, ...nativeSymbols };
  }

  async symbol(network: string, address: string): Promise<string> {
    const lower = address.toLowerCase();
    if (lower === NATIVE_CURRENCY) return own(this.#native, network) ?? 'ETH';
    const key = `${network}:${lower}`;
    const known = this.#symbols.get(key);
    if (known) return known;
    let pending = this.#pending.get(key);
    if (!pending) {
      pending = this.#lookup(network, lower).finally(() => this.#pending.delete(key));
      this.#pending.set(key, pending);
    }
    return pending;
  }

  /** Decimals of a currency when known (the native coin: 18). */
  decimals(network: string, address: string): number | undefined {
    const lower = address.toLowerCase();
    return lower === NATIVE_CURRENCY ? 18 : this.#decimals.get(`${network}:${lower}`);
  }

  /** Learns a currency's USD rate and decimals from an order the platform priced. */
  learn(
    network: string,
    order: { priceCurrencyAddress: string; priceDecimals: number; priceUSD: number; priceAmount: string },
  ): void {
    const key = `${network}:${order.priceCurrencyAddress.toLowerCase()}`;
    this.#decimals.set(key, order.priceDecimals);
    if (!/^\d+$/.test(order.priceAmount) || order.priceUSD <= 0) return;
    const amount = Number(formatUnits(BigInt(order.priceAmount), order.priceDecimals));
    if (amount > 0 && Number.isFinite(amount)) this.#usdRates.set(key, order.priceUSD / amount);
  }

  /** US dollars per whole unit of a currency, when an order priced it recently. */
  usdRate(network: string, address: string): number | undefined {
    return this.#usdRates.get(`${network}:${address.toLowerCase()}`);
  }

  async #lookup(network: string, address: string): Promise<string> {
    const fallback = `${address.slice(0, 6)}…`;
    try {
      const { contractInfo } = await this.#platform.metadata.searchMetadata({
        filter: address,
        network,
        types: ['ERC20'],
        excludeTokenMetadata: true,
      });
      const found = contractInfo.find((c) => c.address.toLowerCase() === address);
      if (typeof found?.decimals === 'number') this.#decimals.set(`${network}:${address}`, found.decimals);
      const symbol = found?.symbol?.trim() || fallback;
      this.#symbols.set(`${network}:${address}`, symbol);
      return symbol;
    } catch {
      return fallback;
    }
  }
}
