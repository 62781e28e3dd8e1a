import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRef } from '../../src/bot/command.ts';
import { type AlertHarness, startAlertHarness } from '../helpers/alert-harness.ts';
import { ADMIN, CONSOLE } from '../helpers/bot-harness.ts';
import { collectionNamed } from '../helpers/devnet-data.ts';

/*
 * Issue 15: what an alert says and where it leads. A sweep that paid in two currencies shows both
 * totals and one US dollar total over all the orders (it used to total the first currency only);
 * alerts link the token's page, the transaction on an explorer, and where a listing can be bought.
 */

let h: AlertHarness;
beforeAll(async () => {
  h = await startAlertHarness({ blockIntervalMs: 0 });
});
afterAll(async () => {
  await h?.close();
});

describe('alert prices', () => {
  it('GIVEN a sweep of two tokens listed in DEV and in DUSD WHEN it is mined THEN the alert totals each currency and sums the US dollars of both', async () => {
    const moonCats = collectionNamed(h.devnet, 'Moon Cats');
    expect((await h.run(`/watch add ${moonCats.address} sale`)).title).toBe('Watching');
    await h.planned();
    const minted = await h.devnet.mine('devnet', [{ kind: 'mint', collection: moonCats.address, count: 2 }]);
    const [a, b] = minted.transactions[0]?.tokenIds ?? [];
    if (!a || !b) throw new Error('no tokens minted');
    await h.devnet.mine('devnet', [
      { kind: 'listing', collection: moonCats.address, tokenId: a, price: '2', currency: 'DEV' },
      { kind: 'listing', collection: moonCats.address, tokenId: b, price: '150', currency: 'DUSD' },
    ]);
    const book = async (tokenId: string) =>
      (
        await h.platform.marketplace.listListingsForCollectible({
          network: 'devnet',
          contractAddress: moonCats.address,
          tokenId,
        })
      ).listings[0];
    const [listingA, listingB] = [await book(a), await book(b)];
    if (!listingA || !listingB) throw new Error('listings not on the platform');
    const before = h.console.alerts(CONSOLE.id).length;
    await h.devnet.mine('devnet', [{ kind: 'sale', collection: moonCats.address, tokenIds: [a, b] }]);
    await h.console.until(() => h.console.alerts(CONSOLE.id).length > before);
    const sweep = h.console.alerts(CONSOLE.id)[before];
    expect(sweep?.title).toMatch(/^Sweep: 2 × Moon Cats for /);
    expect(sweep?.title).toContain('2 DEV');
    expect(sweep?.title).toContain('150 DUSD');
    expect(sweep?.title).toMatch(/ for [\d.]+ \w+ \+ [\d.]+ \w+$/);
    const total = sweep?.fields?.find((f) => f.name === 'Total')?.value;
    const usd = Number(/\(\$([\d,.]+)\)/.exec(String(total))?.[1]?.replace(/,/g, ''));
    expect(usd).toBeCloseTo(listingA.priceUSD + listingB.priceUSD, 0);
  });
});

describe('alert links', () => {
  it('GIVEN a listing on the platform marketplace WHEN it is alerted THEN the title opens the token page, and the alert links where to buy it and the transaction, each a page the local platform serves', async () => {
    const gardens = collectionNamed(h.devnet, 'Glitch Gardens');
    expect((await h.run(`/watch add ${gardens.address} listing`)).title).toBe('Watching');
    await h.planned();
    const before = h.console.alerts(CONSOLE.id).length;
    const mined = await h.devnet.mine('devnet', [{ kind: 'listing', collection: gardens.address, price: '3' }]);
    const tokenId = mined.transactions[0]?.tokenIds[0] ?? '';
    await h.console.until(() => h.console.alerts(CONSOLE.id).length > before);
    const alert = h.console.alerts(CONSOLE.id)[before];
    expect(alert?.url).toBe(`${h.devnet.url}/market/devnet/${gardens.address}/${tokenId}`);
    const links = alert?.fields?.find((f) => f.name === 'Links')?.value;
    expect(links).toEqual([
      { link: 'Buy on Sequence Market v2', href: alert?.url },
      ' · ',
      { link: 'Transaction', href: `${h.devnet.url}/explorer/devnet/tx/${mined.txnHashes[0]}` },
    ]);
    const tokenPage = await fetch(alert?.url ?? '');
    expect(tokenPage.status).toBe(200);
    const html = await tokenPage.text();
    expect(html).toContain(`Glitch Garden`);
    expect(html).toContain('3 DEV');
    const txnPage = await fetch(`${h.devnet.url}/explorer/devnet/tx/${mined.txnHashes[0]}`);
    expect(txnPage.status).toBe(200);
    expect(await txnPage.text()).toContain(mined.txnHashes[0] ?? 'missing');
    expect((await fetch(`${h.devnet.url}/explorer/devnet/tx/0x${'0'.repeat(64)}`)).status).toBe(404);
  });
});

describe('cancel alerts', () => {
  it('GIVEN a listing WHEN it is cancelled THEN the alert names the token the order was for, shows its image, and links its page and the transaction like other alerts', async () => {
    const gulls = collectionNamed(h.devnet, 'Harbor Gulls', 'devnet-l2');
    expect((await h.run(`/watch add devnet-l2:${gulls.address} listing,cancel`)).title).toBe('Watching');
    await h.planned();
    let before = h.console.alerts(CONSOLE.id).length;
    const listed = await h.devnet.mine('devnet-l2', [
      { kind: 'listing', collection: gulls.address, price: '1164.6', currency: 'DUSD' },
    ]);
    const tokenId = listed.transactions[0]?.tokenIds[0] ?? '';
    const orderId = listed.transactions[0]?.orderIds[0] ?? '';
    await h.console.until(() => h.console.alerts(CONSOLE.id).length > before);
    const listing = h.console.alerts(CONSOLE.id)[before];
    expect(listing?.title).toMatch(/^Listed: .+ for 1,164\.6 DUSD$/);

    before = h.console.alerts(CONSOLE.id).length;
    const cancel = await h.devnet.mine('devnet-l2', [{ kind: 'cancel', orderId }]);
    await h.console.until(() => h.console.alerts(CONSOLE.id).length > before);
    const alert = h.console.alerts(CONSOLE.id)[before];
    const token = await h.platform.marketplace.getCollectible({
      network: 'devnet-l2',
      contractAddress: gulls.address,
      tokenId,
    });
    expect(token.name).toBeTruthy();
    expect(alert?.title).toBe(`Cancelled listing: ${token.name} for 1,164.6 DUSD`);
    expect(alert?.url).toBe(`${h.devnet.url}/market/devnet-l2/${gulls.address}/${tokenId}`);
    expect(alert?.image).toBe(token.image);
    expect(alert?.fields?.find((f) => f.name === 'Links')?.value).toEqual([
      { link: 'Transaction', href: `${h.devnet.url}/explorer/devnet-l2/tx/${cancel.txnHashes[0]}` },
    ]);
    expect(alert?.fields?.find((f) => f.name === 'Price')?.value).toBe('1,164.6 DUSD ($1,164.60)');
  });

  it('GIVEN rules on tokens WHEN a listing is cancelled THEN only the rule on that token alerts (the token is learnt from the order)', async () => {
    const cats = collectionNamed(h.devnet, 'Moon Cats Rescue');
    const listed = await h.devnet.mine('devnet', [{ kind: 'listing', collection: cats.address, price: '3' }]);
    const tokenId = listed.transactions[0]?.tokenIds[0] ?? '';
    const other = String(Number(tokenId) + 1);
    const onToken: ChatRef = { platform: 'telegram', id: '-100777001', kind: 'group' };
    const onOther: ChatRef = { platform: 'telegram', id: '-100777002', kind: 'group' };
    expect(h.text(await h.run(`/watch add ${cats.address} cancel tokens=${tokenId}`, onToken, ADMIN))).toContain(
      'cancel of',
    );
    expect(h.text(await h.run(`/watch add ${cats.address} cancel tokens=${other}`, onOther, ADMIN))).toContain(
      'cancel of',
    );
    await h.planned();
    await h.devnet.mine('devnet', [{ kind: 'cancel', orderId: listed.transactions[0]?.orderIds[0] ?? '' }]);
    await h.telegram.until(() => h.telegram.alerts(onToken.id).length > 0);
    expect(h.telegram.alerts(onToken.id)[0]?.title).toContain(`#${tokenId}`);
    // Both chats' alerts of one event are recorded together: the other's would be there by now.
    await h.dispatcher.drained();
    expect(h.telegram.alerts(onOther.id)).toHaveLength(0);
  });

  it('GIVEN an offer WHEN it is cancelled THEN the alert says an offer was cancelled, on which token, by whom', async () => {
    const gardens = collectionNamed(h.devnet, 'Glitch Gardens');
    expect((await h.run(`/watch add ${gardens.address} cancel`)).title).toBe('Watching');
    await h.planned();
    const offered = await h.devnet.mine('devnet', [{ kind: 'offer', collection: gardens.address, price: '2' }]);
    const tokenId = offered.transactions[0]?.tokenIds[0] ?? '';
    const before = h.console.alerts(CONSOLE.id).length;
    await h.devnet.mine('devnet', [{ kind: 'cancel', orderId: offered.transactions[0]?.orderIds[0] ?? '' }]);
    await h.console.until(() => h.console.alerts(CONSOLE.id).length > before);
    const alert = h.console.alerts(CONSOLE.id)[before];
    expect(alert?.title).toMatch(/^Cancelled offer: Glitch Garden #\d+ for 2 WDEV$/);
    expect(alert?.title).toContain(`#${tokenId}`);
    expect(alert?.url).toBe(`${h.devnet.url}/market/devnet/${gardens.address}/${tokenId}`);
    expect(alert?.fields?.map((f) => f.name)).toContain('Bidder');
  });
});
