import { describe, expect, it } from 'vitest';
import {
  looksLike,
  type OptionSpec,
  parseAddress,
  parseAmount,
  parseChoice,
  parseChoiceList,
  parseCollection,
  parseDuration,
  parseInteger,
  parsePercent,
  parseTimeOfDay,
  parseTimeZone,
  parseTokenId,
  tokenize,
} from '../../../src/bot/options.ts';

const ctx = { networks: ['devnet', 'devnet-l2'] };
const A = '0x1111111111111111111111111111111111111111';

describe('option parsers', () => {
  it('accepts an address in any case and returns it lower-cased', () => {
    expect(parseAddress(A.toUpperCase().replace('0X', '0x'))).toEqual({ ok: true, value: A });
  });

  it.each(['0x123', 'hello', `${A}1`, '0xZZ11111111111111111111111111111111111111', ''])(
    'rejects the address %j',
    (input) => {
      const result = parseAddress(input);
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.error.code).toBe('invalid_address');
    },
  );

  // EIP-55's own test vector, and the same address with one letter's case flipped.
  const CHECKSUMMED = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';
  const TYPO = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD';

  it('GIVEN a mixed-case address THEN its EIP-55 checksum must match', () => {
    expect(parseAddress(CHECKSUMMED)).toEqual({ ok: true, value: CHECKSUMMED.toLowerCase() });
    expect(parseAddress(TYPO, 'wallets')).toEqual({
      ok: false,
      error: { code: 'bad_checksum', option: 'wallets', input: TYPO },
    });
  });

  it('GIVEN an address in one case THEN it carries no checksum and is accepted', () => {
    const hex = CHECKSUMMED.slice(2);
    expect(parseAddress(`0x${hex.toLowerCase()}`)).toEqual({ ok: true, value: CHECKSUMMED.toLowerCase() });
    expect(parseAddress(`0x${hex.toUpperCase()}`)).toEqual({ ok: true, value: CHECKSUMMED.toLowerCase() });
  });

  it('GIVEN a collection written as a mistyped checksummed address, alone or on a network THEN the checksum is named', () => {
    for (const input of [TYPO, `devnet:${TYPO}`, `${TYPO}@devnet`]) {
      expect(parseCollection(input, ctx)).toMatchObject({ ok: false, error: { code: 'bad_checksum' } });
    }
    expect(parseCollection(`devnet:${CHECKSUMMED}`, ctx)).toEqual({
      ok: true,
      value: { kind: 'address', address: CHECKSUMMED.toLowerCase(), network: 'devnet' },
    });
  });

  it('reads token ids as decimal, with # or in hex, and refuses values past uint256', () => {
    expect(parseTokenId('#42')).toEqual({ ok: true, value: '42' });
    expect(parseTokenId('0x2a')).toEqual({ ok: true, value: '42' });
    expect(parseTokenId('1'.repeat(79)).ok).toBe(false);
    expect(parseTokenId(`${(1n << 256n).toString()}`).ok).toBe(false);
    expect(parseTokenId('-1').ok).toBe(false);
    expect(parseTokenId('12abc').ok).toBe(false);
  });

  it('keeps integers within their bounds and says which bound', () => {
    expect(parseInteger('5', 'count', 1, 10)).toEqual({ ok: true, value: 5 });
    expect(parseInteger('11', 'count', 1, 10)).toEqual({
      ok: false,
      error: { code: 'out_of_range', option: 'count', input: '11', min: 1, max: 10 },
    });
    expect(parseInteger('five', 'count').ok).toBe(false);
  });

  it('GIVEN a whole number too long to be exact THEN it is out of range when bounded, not "not a number"', () => {
    expect(parseInteger('99999999999999999999999', 'count', 1, 25)).toMatchObject({
      ok: false,
      error: { code: 'out_of_range', min: 1, max: 25 },
    });
    expect(parseInteger(`-${'9'.repeat(400)}`, 'count', 1, 25)).toMatchObject({ error: { code: 'out_of_range' } });
    expect(parseInteger('00000000000000000007', 'count', 1, 25)).toEqual({ ok: true, value: 7 });
    expect(parseInteger('99999999999999999999999', 'n')).toMatchObject({ error: { code: 'invalid_number' } });
  });

  it('GIVEN the plural of a choice THEN it is that choice', () => {
    const kinds = ['sale', 'listing', 'offer', 'all'];
    expect(parseChoice('Sales', 'kinds', kinds)).toEqual({ ok: true, value: 'sale' });
    expect(parseChoiceList('sales,listings offers', 'kinds', kinds)).toEqual({
      ok: true,
      value: ['sale', 'listing', 'offer'],
    });
    expect(parseChoice('saless', 'kinds', kinds).ok).toBe(false);
  });

  it('reads prices in the currency or in US dollars', () => {
    expect(parseAmount('1.5')).toEqual({ ok: true, value: { value: '1.5', usd: false } });
    expect(parseAmount('$500')).toEqual({ ok: true, value: { value: '500', usd: true } });
    expect(parseAmount('250 USD')).toEqual({ ok: true, value: { value: '250', usd: true } });
    expect(parseAmount('.25')).toEqual({ ok: true, value: { value: '0.25', usd: false } });
    expect(parseAmount('-1').ok).toBe(false);
    expect(parseAmount('1e5').ok).toBe(false);
    // A currency's symbol after the number, with or without a space; dollars however they are written.
    expect(parseAmount('0.5 DUSD')).toEqual({ ok: true, value: { value: '0.5', usd: false, currency: 'DUSD' } });
    expect(parseAmount('0.5dev')).toEqual({ ok: true, value: { value: '0.5', usd: false, currency: 'DEV' } });
    expect(parseAmount('2 USDC.e')).toEqual({ ok: true, value: { value: '2', usd: false, currency: 'USDC.E' } });
    expect(parseAmount('100usd')).toEqual({ ok: true, value: { value: '100', usd: true } });
    expect(parseAmount('$100 DUSD').ok).toBe(false);
    expect(parseAmount('DUSD').ok).toBe(false);
    expect(parseAmount('1.0000000000000000001').ok).toBe(false);
  });

  it('reads percentages from 1 to 100, with or without the sign', () => {
    expect(parsePercent('80%')).toEqual({ ok: true, value: 80 });
    expect(parsePercent(' 92.5 % ')).toEqual({ ok: true, value: 92.5 });
    expect(parsePercent('100')).toEqual({ ok: true, value: 100 });
    for (const bad of ['0%', '101%', '-5%', '0.5', '80%%', 'eighty', '1e2', '']) {
      expect(parsePercent(bad, 'floor')).toMatchObject({
        ok: false,
        error: { code: 'invalid_percent', option: 'floor' },
      });
    }
  });

  it('reads durations and rejects garbage around them', () => {
    expect(parseDuration('90s')).toEqual({ ok: true, value: 90_000 });
    expect(parseDuration('1h30m')).toEqual({ ok: true, value: 5_400_000 });
    expect(parseDuration('2 d')).toEqual({ ok: true, value: 172_800_000 });
    expect(parseDuration('5 minutes').ok).toBe(false);
    expect(parseDuration('0m').ok).toBe(false);
  });

  it('reads 24-hour and am/pm times of day', () => {
    expect(parseTimeOfDay('09:00')).toEqual({ ok: true, value: { hour: 9, minute: 0 } });
    expect(parseTimeOfDay('9:30pm')).toEqual({ ok: true, value: { hour: 21, minute: 30 } });
    expect(parseTimeOfDay('12am')).toEqual({ ok: true, value: { hour: 0, minute: 0 } });
    expect(parseTimeOfDay('24:00').ok).toBe(false);
    expect(parseTimeOfDay('9').ok).toBe(false);
    expect(parseTimeOfDay('13pm').ok).toBe(false);
  });

  it('accepts IANA time zones and refuses invented ones', () => {
    expect(parseTimeZone('asia/tokyo')).toEqual({ ok: true, value: 'Asia/Tokyo' });
    expect(parseTimeZone('UTC').ok).toBe(true);
    const bad = parseTimeZone('Mars/Olympus');
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.error.code).toBe('invalid_time_zone');
  });

  it('reads collections as addresses, addresses on a network, or names', () => {
    expect(parseCollection(A, ctx)).toEqual({ ok: true, value: { kind: 'address', address: A } });
    expect(parseCollection(`devnet-l2:${A}`, ctx)).toEqual({
      ok: true,
      value: { kind: 'address', address: A, network: 'devnet-l2' },
    });
    expect(parseCollection(`${A}@devnet`, ctx)).toEqual({
      ok: true,
      value: { kind: 'address', address: A, network: 'devnet' },
    });
    expect(parseCollection('Moon Cats', ctx)).toEqual({ ok: true, value: { kind: 'name', text: 'Moon Cats' } });
    const unknown = parseCollection(`mars:${A}`, ctx);
    expect(unknown.ok).toBe(false);
    if (!unknown.ok) expect(unknown.error).toMatchObject({ code: 'unknown_network', allowed: ctx.networks });
    expect(parseCollection('0x1234', ctx).ok).toBe(false);
  });
});

describe('tokenize', () => {
  it('splits positional words, key=value pairs and quoted groups', () => {
    const result = tokenize(`"moon cats" count=5 Background="Deep Blue" 'x y'`);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.value.positional).toEqual(['moon cats', 'x y']);
    expect([...result.value.named]).toEqual([
      ['count', '5'],
      ['background', 'Deep Blue'],
    ]);
  });

  it('reports an unclosed quote', () => {
    const result = tokenize('"moon cats');
    expect(result).toMatchObject({ ok: false, error: { code: 'unbalanced_quotes' } });
  });
});

describe('RateLimiter', () => {
  it('lets a burst through, then asks to wait, and survives a clock set backwards', async () => {
    const { RateLimiter } = await import('../../../src/bot/rate-limit.ts');
    const limiter = new RateLimiter({ capacity: 2, refillPerSecond: 1 });
    expect(limiter.take('u', 10_000)).toBe(0);
    expect(limiter.take('u', 10_000)).toBe(0);
    expect(limiter.take('u', 10_000)).toBe(1_000);
    expect(limiter.take('u', 11_000)).toBe(0);
    // The clock jumps back an hour: the bucket neither drains nor locks the user out for an hour.
    expect(limiter.take('u', 7_400_000 - 3_600_000 * 2)).toBeLessThanOrEqual(1_000);
  });
});

describe('parseRole', () => {
  it('reads a Discord role mention or a bare id, and nothing else', async () => {
    const { parseRole } = await import('../../../src/bot/options.ts');
    expect(parseRole('<@&123456789012345678>')).toEqual({ ok: true, value: '123456789012345678' });
    expect(parseRole('123456789012345678')).toEqual({ ok: true, value: '123456789012345678' });
    expect(parseRole('@everyone')).toMatchObject({ ok: false, error: { code: 'invalid_role' } });
    expect(parseRole('<@123456789012345678>')).toMatchObject({ ok: false, error: { code: 'invalid_role' } });
  });
});

describe('looksLike: words the option after a collection name claims even when they do not parse', () => {
  const count: OptionSpec = { name: 'count', type: 'integer', description: 'count', min: 1, max: 10 };
  const kinds: OptionSpec = {
    name: 'kinds',
    type: 'choiceList',
    description: 'kinds',
    choices: ['sale', 'listing', 'offer', 'mint', 'transfer', 'burn', 'cancel', 'all'],
  };

  it.each(['50', '1000', '-3', '2.5', '1,000', '1e3'])('GIVEN %s THEN it reads as a count', (word) => {
    expect(looksLike(count, word, ctx)).toBe(true);
  });

  it.each(['rescue', 'cats', '51st', 'x'])('GIVEN %s THEN it is left to the name of a count', (word) => {
    expect(looksLike(count, word, ctx)).toBe(false);
  });

  it.each(['sael', 'sails', 'lisitng', 'list', 'tranfser', 'sale,nope'])('GIVEN %s THEN it reads as kinds', (word) => {
    expect(looksLike(kinds, word, ctx)).toBe(true);
  });

  it.each(['rescue', 'cats', 'gulls', 'club', 'gardens', 'potions', 'tractors', 'x'.repeat(500)])(
    'GIVEN %s THEN it is left to the name of kinds',
    (word) => {
      expect(looksLike(kinds, word, ctx)).toBe(false);
    },
  );

  it('GIVEN free text or a collection THEN no word is claimed', () => {
    expect(looksLike({ name: 'c', type: 'collection', description: 'c' }, '50', ctx)).toBe(false);
    expect(looksLike({ name: 't', type: 'text', description: 't' }, '50', ctx)).toBe(false);
  });
});
