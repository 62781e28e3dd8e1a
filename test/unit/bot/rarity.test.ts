import { describe, expect, it } from 'vitest';
import { RarityTable } from '../../../src/bot/rarity.ts';
import { formatShare } from '../../../src/market/format.ts';

const trait = (name: string, value: string) => ({ name, value });

describe('RarityTable: statistical rarity', () => {
  // Fur: Gold 1, Gray 3. Hat: Crown 2, Cap 1, none 1. Score = sum of 4 / count.
  const table = new RarityTable([
    { tokenId: 'A', traits: [trait('Fur', 'Gold'), trait('Hat', 'Crown')] },
    { tokenId: 'B', traits: [trait('Fur', 'Gray'), trait('Hat', 'Crown'), trait('Fur', 'Gold')] },
    { tokenId: 'C', traits: [trait('Fur', 'Gray')] },
    { tokenId: 'D', traits: [trait('Fur', 'Gray'), trait('Hat', 'Cap')] },
  ]);

  it('GIVEN tokens with common, rare and missing traits THEN each score sums 1 / share over every trait, a missing trait counting as the value "none"', () => {
    expect(table.tokens).toBe(4);
    expect(table.rank('A')).toEqual({ rank: 1, of: 4, score: 4 / 1 + 4 / 2 });
    expect(table.rank('C')).toEqual({ rank: 2, of: 4, score: 4 / 3 + 4 / 1 });
    // Equal scores share a rank; the next one comes after both.
    expect(table.rank('D')?.rank).toBe(2);
    expect(table.rank('B')).toEqual({ rank: 4, of: 4, score: 4 / 3 + 4 / 2 });
    expect(table.rank('Z')).toBeUndefined();
  });

  it('GIVEN a trait listed twice on a token THEN its first value counts, once', () => {
    expect(table.share('Fur', 'Gray')).toBe(0.75);
    expect(table.share('Fur', 'Gold')).toBe(0.25);
  });

  it('GIVEN names and values in another case THEN they are found; an unknown value has no share, an unknown trait none at all', () => {
    expect(table.share('hat', 'crown')).toBe(0.5);
    expect(table.share('Hat', 'Beret')).toBe(0);
    expect(table.share('Eyes', 'Blue')).toBeUndefined();
  });
});

describe('formatShare', () => {
  it('GIVEN shares large and small THEN one decimal from 1%, two significant digits below', () => {
    expect([0.041, 0.5, 1, 0.0001, 0.00123, 0].map(formatShare)).toEqual([
      '4.1%',
      '50%',
      '100%',
      '0.01%',
      '0.12%',
      '0%',
    ]);
  });
});
