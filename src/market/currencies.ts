import { LRUCache } from 'lru-cache';
import { formatUnits } from 'viem';
import { NATIVE_COIN_ADDRESS } from '../core/types.ts';
import type { PlatformClient } from '../platform/client.ts';
import { own } from '../records.ts';

export const NATIVE_CURRENCY = NATIVE_COIN_ADDRESS;

/** A currency a symbol names on a network. */
export interface KnownCurrency {
  /** Lower-case address; {@link NATIVE_CURRENCY} for the native coin. */
  address: string;
  /** The symbol as the network spells it. */
  symbol: string;
}

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
  /**
   * The last rate learned per currency, however old: what a rule's minimum in one currency is worth
   * when an order in another comes (a rate a few minutes stale moves a threshold less than refusing
   * to compare at all would).
   */
  readonly #lastUsdRates = new LRUCache<string, number>({ max: 1_000 });
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
    if (amount > 0 && Number.isFinite(amount)) {
      this.#usdRates.set(key, order.priceUSD / amount);
      this.#lastUsdRates.set(key, order.priceUSD / amount);
    }
  }

  /** US dollars per whole unit of a currency as last learned from any order, however long ago. */
  lastUsdRate(network: string, address: string): number | undefined {
    return this.#lastUsdRates.get(`${network}:${address.toLowerCase()}`);
  }

  /**
   * The currency a symbol names on a network (`dev`, `DUSD`; case-insensitive): the native coin, or
   * an ERC-20 token the platform finds by that exact symbol; undefined when none or more than one
   * does (a symbol two tokens share names neither for sure).
   */
  async bySymbol(network: string, symbol: string): Promise<KnownCurrency | undefined> {
    const wanted = symbol.trim().toLowerCase();
    const native = own(this.#native, network) ?? 'ETH';
    if (native.toLowerCase() === wanted) return { address: NATIVE_CURRENCY, symbol: native };
    const { contractInfo } = await this.#platform.metadata.searchMetadata({
      filter: wanted,
      network,
      types: ['ERC20'],
      excludeTokenMetadata: true,
    });
    const found = contractInfo.filter((c) => c.type === 'ERC20' && c.symbol?.trim().toLowerCase() === wanted);
    const addresses = new Set(found.map((c) => c.address.toLowerCase()));
    const [first] = found;
    if (!first?.symbol || addresses.size !== 1) return undefined;
    const address = first.address.toLowerCase();
    this.#symbols.set(`${network}:${address}`, first.symbol.trim());
    if (typeof first.decimals === 'number') this.#decimals.set(`${network}:${address}`, first.decimals);
    return { address, symbol: first.symbol.trim() };
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
