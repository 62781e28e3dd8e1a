import type { Standard } from './catalog.ts';

export type { Standard } from './catalog.ts';

export interface Currency {
  address: string;
  symbol: string;
  name: string;
  decimals: number;
  usd: number;
  native: boolean;
}

export type Side = 'listing' | 'offer';
export type OrderState = 'active' | 'inactive' | 'expired' | 'cancelled' | 'filled';

/** One order of the book. `price` is per token, in the currency's smallest unit. */
export interface OrderRecord {
  orderId: string;
  /** Position in MARKETPLACE_KINDS. */
  marketplace: number;
  side: Side;
  status: OrderState;
  collectionAddress: string;
  tokenIndex: number;
  tokenId: string;
  maker: string;
  currency: Currency;
  price: bigint;
  priceUsd: number;
  quantityInitial: bigint;
  quantityRemaining: bigint;
  feeBps: number;
  royaltyBps: number;
  validFrom: number;
  validUntil: number;
  blockNumber: number;
  createdAt: number;
  updatedAt: number;
}

/** Every address the devnet knows as a holder, by index. */
export class Accounts {
  readonly addresses: string[] = [];
  readonly #index = new Map<string, number>();

  add(address: string): number {
    const lower = address.toLowerCase();
    const known = this.#index.get(lower);
    if (known !== undefined) return known;
    this.addresses.push(lower);
    this.#index.set(lower, this.addresses.length - 1);
    return this.addresses.length - 1;
  }

  indexOf(address: string): number | undefined {
    return this.#index.get(address.toLowerCase());
  }

  at(index: number): string {
    const address = this.addresses[index];
    if (address === undefined) throw new RangeError(`no account ${index}`);
    return address;
  }

  get size(): number {
    return this.addresses.length;
  }
}

export interface NetworkRef {
  name: string;
  chainId: number;
}

export function standardLabel(standard: Standard): string {
  return standard === 'ERC721' ? 'ERC-721' : 'ERC-1155';
}
