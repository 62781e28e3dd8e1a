import { describe, expect, it } from 'vitest';
import { type AlertDetails, renderAlert } from '../../../src/alerts/render.ts';
import type { PriceInfo } from '../../../src/alerts/rule-filters.ts';
import { heldFor, isWhale, saleProfit } from '../../../src/alerts/sale-context.ts';
import { renderPlain } from '../../../src/chat/console/render.ts';
import { renderEmbed } from '../../../src/chat/discord/render.ts';
import { renderTelegram } from '../../../src/chat/telegram/render.ts';
import type { TokenSale } from '../../../src/core/market.ts';
import { ALICE, BOB, chainEvent } from './fixtures.ts';

const DAY = 86_400_000;
const DEV = '0x0000000000000000000000000000000000000000';
const DUSD = '0x00000000000000000000000000000000000000d5';
/** ALICE sells token 1 to BOB at 2026-11-21T15:00:00Z. */
const resale = chainEvent({ tokens: [{ tokenId: '1', amount: '1' }] });
const at = Date.parse(resale.ts);
/** ALICE bought it three days and two hours earlier, for 1 DEV ($2,000). */
const bought: TokenSale = {
  at: at - 3 * DAY - 2 * 3_600_000,
  usd: 2_000,
  units: '1',
  buyer: ALICE,
  paid: { amount: '1000000000000000000', currency: DEV, decimals: 18 },
};
const price = (amount: string, currency: string | undefined, usd?: number): PriceInfo => ({
  amount,
  currency,
  usd,
});

describe('held for', () => {
  it('GIVEN the previous sale of the token was bought by this seller THEN it is the time between the two sales', () => {
    expect(heldFor(resale, bought)).toBe(3 * DAY + 2 * 3_600_000);
  });

  it('GIVEN a previous sale bought by someone else, without a buyer, a sweep, more units sold than bought, or no record THEN nothing is said', () => {
    expect(heldFor(resale, { ...bought, buyer: BOB })).toBeUndefined();
    const { buyer: _b, ...anonymous } = bought;
    expect(heldFor(resale, anonymous)).toBeUndefined();
    expect(heldFor(resale, undefined)).toBeUndefined();
    const sweep = chainEvent({
      tokens: [
        { tokenId: '1', amount: '1' },
        { tokenId: '2', amount: '1' },
      ],
    });
    expect(heldFor(sweep, bought)).toBeUndefined();
    expect(heldFor(chainEvent({ tokens: [{ tokenId: '1', amount: '3' }] }), { ...bought, units: '2' })).toBeUndefined();
    const { from: _f, ...noSeller } = resale;
    expect(heldFor(noSeller, bought)).toBeUndefined();
    // A record from the future (a clock gone wrong) is no holding time.
    expect(heldFor(resale, { ...bought, at: at + 1_000 })).toBeUndefined();
  });
});

describe('profit or loss', () => {
  it('GIVEN the same currency THEN the difference is exact in its smallest units, with the share of what was paid', () => {
    expect(saleProfit(resale, bought, price('1.25', DEV, 2_600))).toEqual({ amount: '+0.25', percent: 25 });
    expect(saleProfit(resale, bought, price('0.9', DEV))).toMatchObject({ amount: '-0.1' });
    expect(saleProfit(resale, bought, price('0.9', DEV))?.percent).toBeCloseTo(-10, 10);
    // 1/3 of a DEV is no float rounding away from its true figure.
    const third = { ...bought, paid: { amount: '333333333333333333', currency: DEV, decimals: 18 } };
    expect(saleProfit(resale, third, price('0.333333333333333334', DEV))?.amount).toBe('+0.000000000000000001');
    expect(saleProfit(resale, bought, price('1', DEV))).toEqual({ amount: '±0', percent: 0 });
  });

  it('GIVEN ERC-1155 units bought together and some sold THEN the cost is their share of what was paid', () => {
    const sold = chainEvent({ tokens: [{ tokenId: '1', amount: '2' }] });
    const lot = { ...bought, units: '4', paid: { amount: '8000000', currency: DUSD, decimals: 6 } };
    expect(saleProfit(sold, lot, price('5', DUSD))).toEqual({ amount: '+1', percent: 25 });
  });

  it('GIVEN a purchase in another currency THEN it is converted through US dollars at the rates the prices carry, and left out when one is unknown', () => {
    // Paid $2,000; sold 1,500 DUSD worth $1,500 (1 DUSD = $1): a loss of 500 DUSD.
    expect(saleProfit(resale, bought, price('1500', DUSD, 1_500))).toEqual({ amount: '-500', percent: -25 });
    const { usd: _u, ...unpriced } = bought;
    expect(saleProfit(resale, unpriced, price('1500', DUSD, 1_500))).toBeUndefined();
    expect(saleProfit(resale, bought, price('1500', DUSD))).toBeUndefined();
    // The directory's last rate stands in when the sale's own USD value is unknown.
    expect(saleProfit(resale, bought, { ...price('1500', DUSD), usdRate: () => 2 })).toEqual({
      amount: '+500',
      percent: 50,
    });
  });

  it('GIVEN no price paid, a sweep in several currencies, or a seller who did not buy it THEN nothing is said', () => {
    const { paid: _p, ...unknown } = bought;
    expect(saleProfit(resale, unknown, price('2', DEV))).toBeUndefined();
    expect(saleProfit(resale, bought, price('2', undefined, 4_000))).toBeUndefined();
    expect(saleProfit(resale, { ...bought, buyer: BOB }, price('2', DEV))).toBeUndefined();
    expect(saleProfit(resale, bought, undefined)).toBeUndefined();
  });
});

describe('whale', () => {
  it('GIVEN a size THEN sales worth at least it are marked; 0 marks none; an unknown value is no whale', () => {
    expect(isWhale(10_000, 10_000)).toBe(true);
    expect(isWhale(9_999.99, 10_000)).toBe(false);
    expect(isWhale(1e9, 0)).toBe(false);
    expect(isWhale(undefined, 1)).toBe(false);
    expect(isWhale(Number.NaN, 1)).toBe(false);
  });
});

describe('the sale context in the alert', () => {
  const details: AlertDetails = {
    event: resale,
    collectionName: 'Moon Cats',
    tokens: [{ tokenId: '1', amount: '1', name: 'Moon Cat #1' }],
    price: { amount: '1.25', symbol: '<b>DEV</b>', usd: 12_500 },
    heldForMs: 3 * DAY + 2 * 3_600_000,
    profit: { amount: '+0.25', percent: 25 },
    buyerHolds: { units: '1', isNew: true },
    whale: true,
  };
  const field = (d: AlertDetails, name: string) => renderAlert(d).fields?.find((f) => f.name === name)?.value;

  it('GIVEN what the bot knows THEN held for, profit, the buyer as new and the whale mark are shown', () => {
    const reply = renderAlert(details);
    expect(reply.title).toBe('🐋 Whale · Sold: Moon Cat #1 for 1.25 <b>DEV</b>');
    expect(field(details, 'Held for')).toBe('3 days');
    expect(field(details, 'Profit')).toBe('+0.25 <b>DEV</b> (+25%)');
    expect(field(details, 'Buyer')).toEqual([{ code: '0xb000…00b0' }, ' · new to the collection']);
    expect(field({ ...details, buyerHolds: { units: '1204', isNew: false } }, 'Buyer')).toEqual([
      { code: '0xb000…00b0' },
      ' · now holds 1,204',
    ]);
    expect(field({ ...details, profit: { amount: '-0.1', percent: -7.25 } }, 'Loss')).toBe('-0.1 <b>DEV</b> (-7.3%)');
    expect(field({ ...details, heldForMs: 59_000 }, 'Held for')).toBe('under a minute');
    expect(field({ ...details, heldForMs: 3_600_000 }, 'Held for')).toBe('1 hour');
  });

  it('GIVEN nothing known THEN the alert is as before: no line, no mark', () => {
    const { heldForMs: _h, profit: _p, buyerHolds: _b, whale: _w, ...plain } = details;
    const reply = renderAlert(plain);
    expect(reply.title).toBe('Sold: Moon Cat #1 for 1.25 <b>DEV</b>');
    expect(reply.fields?.map((f) => f.name)).not.toContain('Held for');
    expect(reply.fields?.map((f) => f.name)).not.toContain('Profit');
    expect(field(plain, 'Buyer')).toEqual([{ code: '0xb000…00b0' }]);
  });

  it('GIVEN each platform THEN the lines are escaped by its converter and ping nobody', () => {
    const hostile = { ...details, price: { amount: '1.25', symbol: '@everyone <a href="x">*DEV*</a>', usd: 1 } };
    const telegram = renderTelegram(renderAlert(hostile)).html;
    expect(telegram).toContain('Held for');
    expect(telegram).toContain('+0.25 @\u2060everyone &lt;a href=&quot;x&quot;&gt;*DEV*&lt;/a&gt; (+25%)');
    expect(telegram).toContain('<code>0xb000…00b0</code> · new to the collection');
    const embed = renderEmbed(renderAlert(hostile));
    const profit = embed.fields?.find((f) => f.name === 'Profit')?.value;
    expect(profit).toContain('+0.25 @\u200beveryone');
    expect(profit).toContain('\\*DEV\\*');
    expect(profit).not.toContain('<a href="x">');
    expect(embed.fields?.find((f) => f.name === 'Buyer')?.value).toBe('`0xb000…00b0` · new to the collection');
    expect(embed.fields?.find((f) => f.name === 'Held for')?.value).toBe('3 days');
    const plain = renderPlain(renderAlert(hostile)).text;
    expect(plain).toContain('🐋 Whale · Sold: Moon Cat #1');
    expect(plain).toMatch(/Held for: 3 days/);
    expect(plain).toMatch(/Buyer: 0xb000…00b0 · new to the collection/);
  });
});
