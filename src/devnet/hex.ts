import { createHash } from 'node:crypto';
import { keccak256, stringToBytes } from 'viem/utils';

export const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000';

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const HASH = /^0x[0-9a-fA-F]{64}$/;

export function isAddress(value: string): boolean {
  return ADDRESS.test(value);
}

export function isHash(value: string): boolean {
  return HASH.test(value);
}

/** keccak256 of a UTF-8 text, as `0x`-prefixed lower-case hex. */
export function keccakText(text: string): string {
  return keccak256(stringToBytes(text));
}

/**
 * A 32-byte identifier (block or transaction hash) derived from a label. SHA-256 rather than
 * keccak: the value only has to look like a hash and be stable, and it is on the mining hot path.
 */
export function hashText(text: string): string {
  return `0x${createHash('sha256').update(text).digest('hex')}`;
}

/** A stable address derived from a label: the last 20 bytes of keccak256(label). */
export function deriveAddress(label: string): string {
  return `0x${keccakText(label).slice(-40)}`;
}

/** One ABI word (32 bytes) for an unsigned integer, without `0x`. */
export function uintWord(value: bigint | number): string {
  return BigInt(value).toString(16).padStart(64, '0');
}

/** One ABI word for a lower-case address, without `0x`. */
export function addressWord(address: string): string {
  return address.slice(2).padStart(64, '0');
}

export function boolWord(value: boolean): string {
  return uintWord(value ? 1 : 0);
}

/** Decimal string of a token id or amount given as decimal or `0x` hex; undefined when neither. */
export function canonicalUint(value: string): string | undefined {
  const text = value.trim();
  if (/^\d+$/.test(text)) return BigInt(text).toString();
  if (/^0x[0-9a-fA-F]+$/.test(text)) return BigInt(text).toString();
  return undefined;
}

/** `amount / 10^decimals` as a plain decimal string without trailing zeros. */
export function formatUnits(amount: bigint, decimals: number): string {
  const negative = amount < 0n;
  const abs = negative ? -amount : amount;
  const base = 10n ** BigInt(decimals);
  const whole = abs / base;
  const fraction = (abs % base).toString().padStart(decimals, '0').replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${fraction ? `.${fraction}` : ''}`;
}

/** A decimal text ("1.5") in units of `decimals`; undefined when it is not a non-negative decimal. */
export function parseUnits(text: string, decimals: number): bigint | undefined {
  const match = /^(\d+)(?:\.(\d+))?$/.exec(text.trim());
  if (!match) return undefined;
  const whole = match[1] ?? '0';
  const fraction = match[2] ?? '';
  if (fraction.length > decimals && /[1-9]/.test(fraction.slice(decimals))) return undefined;
  const padded = fraction.slice(0, decimals).padEnd(decimals, '0');
  return BigInt(whole) * 10n ** BigInt(decimals) + BigInt(padded || '0');
}
