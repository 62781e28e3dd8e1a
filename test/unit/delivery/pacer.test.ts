import { describe, expect, it } from 'vitest';
import { RatePacer } from '../../../src/delivery/pacer.ts';

describe('RatePacer', () => {
  it('GIVEN 3 a second WHEN 9 requests ask at once THEN no window of a second ever starts more than 3, and they start in the order they asked', async () => {
    const pacer = new RatePacer(3);
    const starts: Array<{ n: number; at: number }> = [];
    await Promise.all(
      Array.from({ length: 9 }, (_, n) => pacer.take().then(() => starts.push({ n, at: performance.now() }))),
    );
    expect(starts.map((s) => s.n)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    // A lower bound only: a busy machine makes them later, never earlier.
    for (let i = 3; i < starts.length; i++) {
      expect((starts[i]?.at ?? 0) - (starts[i - 3]?.at ?? 0)).toBeGreaterThanOrEqual(1_000);
    }
  });

  it('GIVEN a pace below one a second THEN it is refused', () => {
    expect(() => new RatePacer(0)).toThrow(RangeError);
  });
});
