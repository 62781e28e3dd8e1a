import { oneLine } from '../core/reply.ts';
import type { Order, TokenMetadata } from '../platform/types.ts';
import { own } from '../records.ts';

export function shortAddress(address: string): string {
  return address.length > 12 ? `${address.slice(0, 6)}…${address.slice(-4)}` : address;
}

const usdFormat = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', maximumFractionDigits: 2 });

export function formatUsd(value: number | undefined): string | undefined {
  if (value === undefined || !Number.isFinite(value) || value <= 0) return undefined;
  return usdFormat.format(value);
}

/**
 * A decimal amount of a token with its whole part grouped by thousands as US dollars are
 * (`1129` -> `1,129`, `12345.5` -> `12,345.5`); the fraction is kept as it is, so small amounts
 * (`0.000012`) keep every digit. Text that is not a plain decimal is returned unchanged.
 */
export function groupThousands(amount: string): string {
  const match = /^(-?)(\d+)(\.\d+)?$/.exec(amount);
  if (!match) return amount;
  const whole = (match[2] ?? '').replace(/\B(?=(\d{3})+$)/g, ',');
  return `${match[1] ?? ''}${whole}${match[3] ?? ''}`;
}

/** Decimals shown of an amount; one below 0.000001 keeps this many significant digits instead. */
const SHOWN_DECIMALS = 6;
const SMALL_DIGITS = 4;

/**
 * An amount for display: `1.230000` -> `1.23`, at most 6 decimals (`0.0000001234` keeps its first
 * significant digits rather than reading `0`), the whole part grouped by thousands (`1,129`).
 */
export function displayAmount(amount: string): string {
  const [whole = amount, fraction = ''] = amount.split('.');
  const significant = fraction.search(/[1-9]/);
  const shown = /^-?0+$/.test(whole) && significant >= SHOWN_DECIMALS ? significant + SMALL_DIGITS : SHOWN_DECIMALS;
  const cut = fraction.slice(0, shown).replace(/0+$/, '');
  return groupThousands(cut ? `${whole}.${cut}` : whole);
}

/** `1.5 ETH ($3,012.40)`, `1,129 DUSD ($1,129.00)` */
export function formatPrice(order: Order, symbol: string): string {
  const amount = groupThousands(order.priceAmountFormatted || order.priceAmount);
  const usd = formatUsd(order.priceUSD);
  return usd ? `${amount} ${symbol} (${usd})` : `${amount} ${symbol}`;
}

const MARKETPLACE_NAMES: Record<string, string> = {
  sequence_marketplace_v1: 'Sequence Market v1',
  sequence_marketplace_v2: 'Sequence Market v2',
  blur: 'Blur',
  zerox: '0x',
  opensea: 'OpenSea',
  looks_rare: 'LooksRare',
  x2y2: 'X2Y2',
  alienswap: 'AlienSwap',
  payment_processor: 'Payment Processor',
  mintify: 'Mintify',
  magic_eden: 'Magic Eden',
};

const DAY_MS = 24 * 60 * 60 * 1000;

/** `09:41 UTC today`, `18:02 UTC yesterday`, `09:41 UTC on 2026-11-24` (days as of `now`, both in ms). */
export function momentText(at: number, now: number): string {
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  const on = day(at);
  const when = on === day(now) ? 'today' : on === day(now - DAY_MS) ? 'yesterday' : `on ${on}`;
  return `${new Date(at).toISOString().slice(11, 16)} UTC ${when}`;
}

/** Where an order lives, for people. */
export function marketplaceName(order: Pick<Order, 'marketplace' | 'originName'>): string {
  const known = order.marketplace && own(MARKETPLACE_NAMES, order.marketplace);
  if (known) return known;
  if (order.originName?.trim()) return oneLine(order.originName, 40);
  return 'unknown market';
}

/** `Moon Cat #12`, or `#12` when the token has no name. */
export function tokenName(metadata: Pick<TokenMetadata, 'name' | 'tokenId'> | undefined, tokenId: string): string {
  const name = oneLine(metadata?.name ?? '', 80);
  return name || `#${tokenId}`;
}

export interface Trait {
  name: string;
  value: string;
}

/** Traits of a token from `attributes` (`{trait_type, value}`), as strings. */
export function traitsOf(metadata: TokenMetadata): Trait[] {
  const traits: Trait[] = [];
  for (const attribute of metadata.attributes) {
    const name = attribute.trait_type ?? attribute.traitType ?? attribute.name;
    const value = attribute.value;
    if (typeof name !== 'string' || value === undefined || value === null) continue;
    traits.push({ name, value: typeof value === 'object' ? JSON.stringify(value) : String(value) });
  }
  return traits;
}

/** Orders cheapest first by USD value when both have one, else by amount in the same currency. */
export function byPriceAscending(a: Order, b: Order): number {
  if (a.priceUSD > 0 && b.priceUSD > 0) return a.priceUSD - b.priceUSD;
  if (a.priceCurrencyAddress === b.priceCurrencyAddress) {
    const x = BigInt(a.priceAmount || '0');
    const y = BigInt(b.priceAmount || '0');
    return x < y ? -1 : x > y ? 1 : 0;
  }
  return 0;
}

/** Offers highest first. */
export function byPriceDescending(a: Order, b: Order): number {
  return byPriceAscending(b, a);
}

/** Relative time like `in 3 days` or `5 hours ago`. */
export function relativeTime(iso: string | undefined, now: Date): string | undefined {
  if (!iso) return undefined;
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return undefined;
  const seconds = Math.round((at - now.getTime()) / 1000);
  const units: Array<[Intl.RelativeTimeFormatUnit, number]> = [
    ['day', 86_400],
    ['hour', 3_600],
    ['minute', 60],
  ];
  const format = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });
  for (const [unit, size] of units) {
    if (Math.abs(seconds) >= size) return format.format(Math.round(seconds / size), unit);
  }
  return format.format(seconds, 'second');
}

/** `4.1%`, `0.05%`, `50%`: one decimal, two significant digits below 1%. */
export function formatShare(share: number): string {
  const percent = share * 100;
  if (percent >= 1) return `${Number(percent.toFixed(1))}%`;
  if (percent <= 0) return '0%';
  return `${Number(percent.toPrecision(2))}%`;
}

/** `1,234`, or `at least 2,000` when counting stopped at a bound. */
export function countText(count: number | bigint, capped: boolean): string {
  const text = count.toLocaleString('en-US');
  return capped ? `at least ${text}` : text;
}
