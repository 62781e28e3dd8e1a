import {
  CONTRACT_TYPES,
  type ContractType,
  MARKETPLACE_KINDS,
  type MarketplaceKind,
  type MarketplaceKindInput,
  ORDER_SIDES,
  type OrderSide,
  SPEC_MARKETPLACE_KINDS,
  WALLET_KINDS,
  type WalletKind,
  type WalletKindInput,
} from './types.ts';

/**
 * Enum values travel as names (wire-protocol.md §1.5). Callers may use the spec's stand-in names or
 * positions; these functions turn them into the names real servers read. An unknown value is an
 * error here, because a Go server would silently read it as `unknown`.
 */
export function marketplaceKindToWire(input: MarketplaceKindInput): MarketplaceKind {
  if (typeof input === 'number') {
    const byPosition = MARKETPLACE_KINDS[input];
    if (byPosition) return byPosition;
  } else {
    if ((MARKETPLACE_KINDS as readonly string[]).includes(input)) return input as MarketplaceKind;
    const position = (SPEC_MARKETPLACE_KINDS as readonly string[]).indexOf(input);
    const real = MARKETPLACE_KINDS[position];
    if (position >= 0 && real) return real;
  }
  throw new RangeError(`unknown marketplace kind ${JSON.stringify(input)}`);
}

export function walletKindToWire(input: WalletKindInput): WalletKind {
  if (input === 'service') return 'sequence';
  if (typeof input === 'number') {
    const byPosition = WALLET_KINDS[input];
    if (byPosition) return byPosition;
  } else if ((WALLET_KINDS as readonly string[]).includes(input)) {
    return input;
  }
  throw new RangeError(`unknown wallet kind ${JSON.stringify(input)}`);
}

export function orderSideToWire(input: OrderSide | number): OrderSide {
  const side = typeof input === 'number' ? ORDER_SIDES[input] : input;
  if (side && (ORDER_SIDES as readonly string[]).includes(side)) return side;
  throw new RangeError(`unknown order side ${JSON.stringify(input)}`);
}

export function contractTypeToWire(input: ContractType | number): ContractType {
  const type = typeof input === 'number' ? CONTRACT_TYPES[input] : input;
  if (type && (CONTRACT_TYPES as readonly string[]).includes(type)) return type;
  throw new RangeError(`unknown contract type ${JSON.stringify(input)}`);
}
