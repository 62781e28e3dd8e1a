/**
 * The values a platform record may hold, as valibot schemas: what every record schema of
 * schemas.ts is built from. Each says what a field must be before anything above the client sees
 * it; a record with one field outside its bounds is not used at all (see read.ts).
 */
import * as v from 'valibot';

/** The largest amount or token id a chain holds: 2^256 - 1 (78 digits). */
export const UINT256_MAX = (1n << 256n) - 1n;

/**
 * Most decimals a currency or token may have. ERC-20 tokens use 18 and a few use up to 27; past 36
 * an amount of at most 78 digits (see {@link UINT256_MAX}) keeps fewer than half of them in its
 * whole part, which no price is written with.
 */
export const MAX_DECIMALS = 36;

/**
 * Largest USD value of an order: a quadrillion dollars, ten times the world's yearly output. A
 * larger one is not a price (1e308 would print as 400 digits).
 */
export const MAX_USD_PRICE = 1e15;

/** Fees in basis points: at most the whole price. */
export const MAX_BPS = 10_000;

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const LOWER_ADDRESS = /^0x[0-9a-f]{40}$/;
const DIGITS = /^\d{1,78}$/;
const DECIMAL = /^\d{1,78}(?:\.\d{1,78})?$/;

/** Whether `value` is an address as the client hands it out: `0x` and 40 lower-case hex digits, nothing around. */
export function isCanonicalAddress(value: unknown): value is string {
  return typeof value === 'string' && value.length === 42 && LOWER_ADDRESS.test(value);
}

/** Whether `value` is a whole number a chain can hold: decimal digits only, at most {@link UINT256_MAX}. */
export function isUint256Text(value: string): boolean {
  // Fewer than 78 digits is always below 2^256 (a 78-digit number); only those are compared.
  return DIGITS.test(value) && (value.length < 78 || BigInt(value) <= UINT256_MAX);
}

/** The digits without leading zeros (`007` -> `7`, `000` -> `0`). */
function withoutLeadingZeros(digits: string): string {
  if (digits.length < 2 || digits.charCodeAt(0) !== 48) return digits;
  const trimmed = digits.replace(/^0+/, '');
  return trimmed === '' ? '0' : trimmed;
}

/**
 * A 20-byte address, handed out in lower case (a checksummed one is the same address). Anything
 * around it, a space included, makes it no address: it would never match the same address typed
 * by a person, and rules keyed by it would never fire.
 */
export const address = v.pipe(
  v.string('expected an address'),
  v.regex(ADDRESS, 'expected an address (0x and 40 hex digits)'),
  v.toLowerCase(),
);

/** An amount or quantity: a whole number from 0 to 2^256 - 1 in decimal digits, without leading zeros. */
export const amount = v.pipe(
  v.string('expected a whole number as text'),
  v.check(isUint256Text, 'expected a whole number from 0 to 2^256 - 1'),
  v.transform(withoutLeadingZeros),
);

/** A token id: as {@link amount} (ids are uint256 on chain). */
export const tokenId = amount;

/** Decimals of a currency or a quantity: a whole number from 0 to {@link MAX_DECIMALS}. */
export const decimals = v.pipe(
  v.number('expected a number of decimals'),
  v.integer('expected a whole number of decimals'),
  v.minValue(0, 'expected at least 0 decimals'),
  v.maxValue(MAX_DECIMALS, `expected at most ${MAX_DECIMALS} decimals`),
);

/** A USD value: finite, from 0 to {@link MAX_USD_PRICE}. */
export const usdPrice = v.pipe(
  v.number('expected a USD value'),
  v.finite('expected a finite USD value'),
  v.minValue(0, 'expected a USD value of at least 0'),
  v.maxValue(MAX_USD_PRICE, `expected a USD value of at most ${MAX_USD_PRICE}`),
);

/** A formatted amount as shown to people (`1.5`, `1129`): plain decimal digits, or empty for none. */
export const decimalText = v.pipe(
  v.string('expected a decimal number as text'),
  v.check((text) => text === '' || DECIMAL.test(text), 'expected a decimal number of at most 78 digits, without sign'),
);

/** A count, a block number, a chain or record id: a whole number from 0 to 2^53 - 1. */
export const count = v.pipe(
  v.number('expected a whole number'),
  v.safeInteger('expected a whole number'),
  v.minValue(0, 'expected a whole number of at least 0'),
);

/** Basis points of a fee: a whole number from 0 to {@link MAX_BPS}. */
export const bps = v.pipe(
  v.number('expected basis points'),
  v.integer('expected whole basis points'),
  v.minValue(0, 'expected at least 0 basis points'),
  v.maxValue(MAX_BPS, `expected at most ${MAX_BPS} basis points`),
);

/** Text of any content (escaped where it is shown); only its type is checked here. */
export const text = v.string('expected text');
