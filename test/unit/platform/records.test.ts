/**
 * The records' checks (src/platform/records): the bounds of each kind of field, and the stream
 * log's fast path, which must hand out only what the log's schema accepts, as the schema would.
 */
import fc from 'fast-check';
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { ShapeError } from '../../../src/platform/normalize.ts';
import {
  address,
  amount,
  decimals,
  decimalText,
  MAX_DECIMALS,
  MAX_USD_PRICE,
  UINT256_MAX,
  usdPrice,
} from '../../../src/platform/records/fields.ts';
import { BadRecordError, eventLog, receipt, tokenBalance } from '../../../src/platform/records/read.ts';
import { eventLogSchema } from '../../../src/platform/records/schemas.ts';
import { ADDR, wireEventLog, wireReceipt } from '../../helpers/platform-fixtures.ts';

const accepts = (schema: v.GenericSchema, value: unknown) => v.safeParse(schema, value).success;

describe('field bounds', () => {
  it('GIVEN addresses THEN 0x and 40 hex digits pass in lower case, anything around them or fewer digits fail', () => {
    expect(v.parse(address, '0x52908400098527886E0F7030069857D2E4169EE7')).toBe(
      '0x52908400098527886e0f7030069857d2e4169ee7',
    );
    for (const bad of [
      `${ADDR.collection} `,
      ` ${ADDR.collection}`,
      `${ADDR.collection}\n`,
      '0xabc',
      ADDR.collection.slice(2),
      '',
    ]) {
      expect(accepts(address, bad)).toBe(false);
    }
  });

  it('GIVEN amounts THEN whole numbers from 0 to 2^256 - 1 pass without leading zeros; signs, fractions, words and 2^256 fail', () => {
    expect(v.parse(amount, UINT256_MAX.toString())).toBe(UINT256_MAX.toString());
    expect(v.parse(amount, '007')).toBe('7');
    expect(v.parse(amount, '000')).toBe('0');
    for (const bad of [(UINT256_MAX + 1n).toString(), `1${'0'.repeat(80)}`, '-1', '1.5', 'lots', '1e3', ' 1', '']) {
      expect(accepts(amount, bad)).toBe(false);
    }
  });

  it(`GIVEN decimals and USD values THEN 0 to ${MAX_DECIMALS} decimals and finite values from 0 to ${MAX_USD_PRICE} pass`, () => {
    expect([0, 18, MAX_DECIMALS].map((d) => accepts(decimals, d))).toEqual([true, true, true]);
    expect([-1, 1.5, MAX_DECIMALS + 1, 255].map((d) => accepts(decimals, d))).toEqual([false, false, false, false]);
    expect([0, 1.23, MAX_USD_PRICE].map((p) => accepts(usdPrice, p))).toEqual([true, true, true]);
    expect([-0.01, 1e308, Number.POSITIVE_INFINITY, Number.NaN].map((p) => accepts(usdPrice, p))).toEqual([
      false,
      false,
      false,
      false,
    ]);
    expect(['', '1.5', '1129'].map((t) => accepts(decimalText, t))).toEqual([true, true, true]);
    expect(['-1', '1e308', '1,5', '9'.repeat(79)].map((t) => accepts(decimalText, t))).toEqual([
      false,
      false,
      false,
      false,
    ]);
  });

  it('GIVEN a balance with a bad nested token THEN the whole record fails naming the nested field', () => {
    const error = (() => {
      try {
        tokenBalance(
          {
            contractAddress: ADDR.collection,
            accountAddress: ADDR.buyer,
            balance: '1',
            tokenMetadata: { tokenId: '-4', name: 'x', attributes: [] },
          },
          'balances[3]',
        );
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(BadRecordError);
    expect(error).toMatchObject({ record: 'a token balance', fields: ['tokenMetadata.tokenId'] });
    expect((error as Error).message).toMatch(/^balances\[3\] is not a valid record: tokenMetadata\.tokenId: /);
  });
});

describe('stream records: the fast path hands out only what the schema accepts', () => {
  const addresses = fc.constantFrom(
    ADDR.collection,
    '0x52908400098527886E0F7030069857D2E4169EE7',
    `${ADDR.collection} `,
    '0xabc',
    '',
    42,
  );
  const blocks = fc.oneof(fc.nat(), fc.constantFrom(-1, 1.5, Number.MAX_SAFE_INTEGER + 2, '61000000'));

  it('GIVEN logs with any contract address and block WHEN read THEN each is refused as a shape error, or handed out with a lower-case address and a whole block, equal to what the schema makes of it', () => {
    fc.assert(
      fc.property(fc.nat({ max: 1_000 }), addresses, blocks, fc.boolean(), (index, contract, block, forceCopy) => {
        const wire: Record<string, unknown> = {
          ...wireEventLog(index, { contractAddress: contract, blockNumber: block }),
          rawLog: {},
        };
        if (forceCopy) wire.parentBlockHash = null;
        let log: ReturnType<typeof eventLog>;
        try {
          log = eventLog(JSON.parse(JSON.stringify(wire)));
        } catch (error) {
          expect(error).toBeInstanceOf(ShapeError);
          return;
        }
        expect(log.contractAddress).toMatch(/^0x[0-9a-f]{40}$/);
        expect(Number.isSafeInteger(log.blockNumber) && log.blockNumber >= 0).toBe(true);
        const checked = v.parse(eventLogSchema, log);
        expect(checked).toEqual(log);
      }),
    );
  });

  it('GIVEN receipts with a negative or fractional block THEN they are refused; a whole block passes', () => {
    expect(receipt(wireReceipt()).blockNumber).toBe(61000001);
    for (const blockNumber of [-1, 1.5]) {
      expect(() => receipt(wireReceipt({ blockNumber }))).toThrow(ShapeError);
      expect(() => receipt(wireReceipt({ blockNumber, txnType: null }))).toThrow(ShapeError);
    }
  });
});
