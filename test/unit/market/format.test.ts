/**
 * Token amounts as people read them (src/market/format.ts): thousands grouped like the US dollar
 * figures beside them, small amounts never rounded away.
 */
import { describe, expect, it } from 'vitest';
import { displayAmount, formatPrice, groupThousands } from '../../../src/market/format.ts';
import type { Order } from '../../../src/platform/types.ts';

function order(priceAmountFormatted: string, priceUSD: number): Order {
  return { priceAmountFormatted, priceAmount: '0', priceUSD } as Order;
}

describe('token amounts', () => {
  it('GIVEN a price of 1129 DUSD THEN it reads 1,129 DUSD beside $1,129.00', () => {
    expect(formatPrice(order('1129', 1129), 'DUSD')).toBe('1,129 DUSD ($1,129.00)');
    expect(formatPrice(order('1234567.891', 0), 'DUSD')).toBe('1,234,567.891 DUSD');
  });

  it('GIVEN amounts below a thousand or fractions THEN they are as they were, every decimal kept', () => {
    expect(groupThousands('113.4')).toBe('113.4');
    expect(groupThousands('999')).toBe('999');
    expect(groupThousands('0.001582')).toBe('0.001582');
    expect(groupThousands('1000.000123456789')).toBe('1,000.000123456789');
    expect(groupThousands('-12345')).toBe('-12,345');
    expect(groupThousands('not a number')).toBe('not a number');
  });

  it('GIVEN an alert amount THEN trailing zeros go, six decimals at most, a tiny amount keeps its first digits, thousands grouped', () => {
    expect(displayAmount('1129.000000000000000000')).toBe('1,129');
    expect(displayAmount('1.230000')).toBe('1.23');
    expect(displayAmount('12345.123456789')).toBe('12,345.123456');
    expect(displayAmount('0.000000123456789')).toBe('0.0000001234');
    expect(displayAmount('0.00000100')).toBe('0.000001');
    expect(displayAmount('0')).toBe('0');
  });
});
