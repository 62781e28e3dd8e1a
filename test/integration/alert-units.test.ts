import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRef } from '../../src/bot/command.ts';
import type { DevnetCollectionInfo } from '../../src/devnet/index.ts';
import { type AlertHarness, startAlertHarness } from '../helpers/alert-harness.ts';
import { ADMIN, CONSOLE, GROUP } from '../helpers/bot-harness.ts';

// The local platform's prices: its native coin DEV is worth $2,450, its dollar DUSD $1.
const OTHER_GROUP: ChatRef = { platform: 'telegram', id: '-100300', kind: 'group' };
const LEGACY_GROUP: ChatRef = { platform: 'telegram', id: '-100400', kind: 'group' };

let h: AlertHarness;
let moonCats: DevnetCollectionInfo;

beforeAll(async () => {
  h = await startAlertHarness();
  const found = h.devnet.collections.devnet?.find((c) => c.name === 'Moon Cats');
  if (!found) throw new Error('no Moon Cats');
  moonCats = found;
});
afterAll(async () => {
  await h?.close();
});

/** Lists a token of Moon Cats at `price` in `currency` and sells it: the sale's transaction hash. */
async function sell(price: string, currency: string): Promise<string> {
  const listed = await h.devnet.mine('devnet', [{ kind: 'listing', collection: moonCats.address, price, currency }]);
  const orderId = listed.transactions[0]?.orderIds[0];
  if (!orderId) throw new Error('no order');
  const sold = await h.devnet.mine('devnet', [{ kind: 'sale', collection: moonCats.address, orderId }]);
  return sold.txnHashes[0] ?? '';
}

/** The titles of the alerts a chat has received about sales. */
function sales(chat: ChatRef): string[] {
  const sink = chat.platform === 'console' ? h.console : h.telegram;
  return sink
    .alerts(chat.id)
    .map((a) => a.title ?? '')
    .filter((t) => t.startsWith('Sold: '));
}

describe('minimum prices with a unit', () => {
  it('GIVEN rules in DEV, DUSD and dollars WHEN a 95 DUSD sale and a 0.2 DEV sale happen THEN each rule compares in its own unit or through USD', async () => {
    // The floor of Moon Cats is priced in the native coin: a bare number is read in DEV.
    const bare = await h.run(`/watch add ${moonCats.address} sale min=0.1`, CONSOLE, ADMIN);
    expect(bare.title).toBe('Watching');
    expect(h.text(bare)).toContain('min 0.1 DEV');
    expect(h.text(bare)).toMatch(
      /orders in other currencies by their US dollar value \(0\.1 DEV is \$245(\.00)? now\)/,
    );
    // Typed as two words, and glued.
    const dusd = await h.run(`/watch add ${moonCats.address} sale min=90 DUSD`, GROUP, ADMIN);
    expect(dusd.title).toBe('Watching');
    expect(h.text(dusd)).toContain('min 90 DUSD');
    const small = await h.run(`/watch add ${moonCats.address} sale min=0.03dev`, OTHER_GROUP, ADMIN);
    expect(h.text(small)).toContain('min 0.03 DEV');
    expect(h.text(await h.run('/watch list', CONSOLE, ADMIN))).toMatch(/min 0\.1 DEV/);
    expect(h.text(await h.run('/watch list', CONSOLE, ADMIN))).not.toMatch(/min 0\.1(?! DEV)/);
    await h.planned();

    await sell('95', 'DUSD');
    // 95 DUSD: $95. Not 0.1 DEV ($245); at least 90 DUSD by amount; at least 0.03 DEV ($73.50) through USD.
    await h.telegram.until(() => sales(GROUP).length >= 1 && sales(OTHER_GROUP).length >= 1);
    await sell('0.2', 'DEV');
    // 0.2 DEV ($490): at least 0.1 DEV by amount; at least 90 DUSD through USD; at least 0.03 DEV.
    await h.console.until(() => sales(CONSOLE).length >= 1);
    await h.telegram.until(() => sales(GROUP).length >= 2 && sales(OTHER_GROUP).length >= 2);
    await h.alerts.settled();
    await h.dispatcher.drained();
    expect(sales(CONSOLE)).toEqual([expect.stringMatching(/ for 0\.2 DEV$/)]);
    expect(sales(GROUP)).toEqual([expect.stringMatching(/ for 95 DUSD$/), expect.stringMatching(/ for 0\.2 DEV$/)]);
    expect(sales(OTHER_GROUP)).toEqual([
      expect.stringMatching(/ for 95 DUSD$/),
      expect.stringMatching(/ for 0\.2 DEV$/),
    ]);
  });

  it('GIVEN a currency the bot does not know THEN /watch add refuses it and stores nothing', async () => {
    const before = (await h.store.rulesOf('console:terminal')).length;
    const refused = await h.run(`/watch add ${moonCats.address} sale min=5 NOPE`, CONSOLE, ADMIN);
    expect(refused.tone).toBe('error');
    expect(h.text(refused)).toContain('NOPE is not a currency the bot knows on devnet');
    expect((await h.store.rulesOf('console:terminal')).length).toBe(before);
  });

  it('GIVEN a rule stored before minimums had a unit THEN it reads in the native coin: listed with DEV, 95 DUSD does not pass 0.1', async () => {
    const stored = await h.store.addRule(
      {
        destination: { platform: 'telegram', chatId: LEGACY_GROUP.id },
        network: 'devnet',
        collection: moonCats.address,
        collectionName: 'Moon Cats',
        kinds: ['sale'],
        minPrice: { value: '0.1', usd: false },
        paused: false,
        createdBy: 'telegram:1',
        createdAt: new Date().toISOString(),
      },
      50,
    );
    expect(stored).toBeDefined();
    expect(h.text(await h.run('/watch list', LEGACY_GROUP, ADMIN))).toContain('min 0.1 DEV');
    await h.planned();
    await sell('95', 'DUSD');
    await sell('0.5', 'DEV');
    await h.telegram.until(() => sales(LEGACY_GROUP).length >= 1);
    await h.alerts.settled();
    await h.dispatcher.drained();
    expect(sales(LEGACY_GROUP)).toEqual([expect.stringMatching(/ for 0\.5 DEV$/)]);
  });
});
