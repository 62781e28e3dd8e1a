import { describe, expect, it } from 'vitest';
import { moveReason } from '../../../src/alerts/moves.ts';
import type { MoveLevel, MoveRule } from '../../../src/core/types.ts';

const DUSD = '0x00000000000000000000000000000000000000d1';
const DEV = '0x00000000000000000000000000000000000000d2';
const level = (amount: string, usd?: number, currency = DUSD): MoveLevel => ({
  amount,
  currency,
  ...(usd === undefined ? {} : { usd }),
  orderId: '1',
  at: '2026-11-28T12:00:00.000Z',
});
const rule = (move: Partial<MoveRule>, reference: MoveLevel | null = level('100', 100)): MoveRule => ({
  subject: 'floor',
  everyMs: 3_600_000,
  ...(reference ? { reference } : {}),
  ...move,
});

describe('moveReason', () => {
  it('GIVEN change=10% THEN a move of 10% or more either way counts, a smaller one not', () => {
    expect(moveReason(rule({ changePercent: 10 }), level('89', 89))).toBe('fell 11%');
    expect(moveReason(rule({ changePercent: 10 }), level('112.5', 112.5))).toBe('rose 13%');
    expect(moveReason(rule({ changePercent: 10 }), level('95', 95))).toBeUndefined();
  });

  it('GIVEN a line THEN only crossing it counts, in the currency or in dollars', () => {
    const below = { value: '90', usd: false };
    expect(moveReason(rule({ below }), level('85', 85))).toBe('fell below 90');
    // Already under the line when last alerted: no new crossing.
    expect(moveReason(rule({ below }, level('88', 88)), level('80', 80))).toBeUndefined();
    expect(moveReason(rule({ above: { value: '120', usd: true } }), level('0.05', 125, DEV))).toBe('rose above $120');
    expect(moveReason(rule({ above: { value: '120', usd: false } }), level('119', 119))).toBeUndefined();
  });

  it('GIVEN another currency THEN the change is read in dollars, and none without them', () => {
    expect(moveReason(rule({ changePercent: 10 }), level('0.03', 50, DEV))).toBe('fell 50%');
    expect(moveReason(rule({ changePercent: 10 }), level('0.03', undefined, DEV))).toBeUndefined();
  });

  it('GIVEN no reference THEN nothing moved yet', () => {
    expect(moveReason(rule({ changePercent: 10 }, null), level('1', 1))).toBeUndefined();
  });
});
