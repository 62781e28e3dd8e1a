import { readFile } from 'node:fs/promises';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Enricher } from '../../src/alerts/enrich.ts';
import type { ChatRef } from '../../src/bot/command.ts';
import type { Reply } from '../../src/core/reply.ts';
import { DeliveryError } from '../../src/delivery/sink.ts';
import type { DevnetCollectionInfo } from '../../src/devnet/index.ts';
import { type AlertHarness, startAlertHarness } from '../helpers/alert-harness.ts';
import { ADMIN, CONSOLE, GROUP } from '../helpers/bot-harness.ts';

let h: AlertHarness;
let moonCats: DevnetCollectionInfo;
let gardens: DevnetCollectionInfo;

function named(name: string): DevnetCollectionInfo {
  const found = h.devnet.collections.devnet?.find((c) => c.name === name);
  if (!found) throw new Error(`no ${name}`);
  return found;
}

/** The cheapest listed tokens of a collection, from the platform. */
async function cheapest(address: string, pageSize = 10) {
  const { collectibles } = await h.platform.marketplace.listCollectibles({
    network: 'devnet',
    side: 'listing',
    contractAddress: address,
    filter: { includeEmpty: false },
    page: { pageSize },
  });
  return collectibles;
}

/** A token of the collection that is listed, with its seller, from the platform. */
async function listed(address: string): Promise<{ tokenId: string; seller: string }> {
  const collectibles = await cheapest(address);
  const item = collectibles.find((c) => c.order);
  if (!item?.order) throw new Error('nothing listed');
  return { tokenId: item.metadata.tokenId, seller: item.order.createdBy.toLowerCase() };
}

function titles(replies: Reply[]): string[] {
  return replies.map((r) => r.title ?? '');
}

beforeAll(async () => {
  h = await startAlertHarness();
  moonCats = named('Moon Cats');
  gardens = named('Glitch Gardens');
});
afterAll(async () => {
  await h?.close();
});

describe('alerts from the live stream', () => {
  it('GIVEN a rule for every kind WHEN activity is mined THEN exactly the matching alerts arrive, enriched', async () => {
    expect((await h.run(`/watch add ${moonCats.address} all`)).title).toBe('Watching');
    expect((await h.run(`/watch add ${gardens.address} mint`)).title).toBe('Watching');
    await h.planned();
    const sale = await listed(moonCats.address);
    const before = h.console.alerts(CONSOLE.id).length;
    await h.devnet.mine('devnet', [
      { kind: 'sale', collection: moonCats.address, tokenId: sale.tokenId },
      { kind: 'listing', collection: moonCats.address, price: '2.5' },
      { kind: 'offer', collection: moonCats.address, price: '0.75' },
      { kind: 'transfer', collection: moonCats.address },
      { kind: 'burn', collection: moonCats.address },
      { kind: 'mint', collection: gardens.address },
      // Not watched: no alert.
      { kind: 'sale', collection: named('Moon Cats Rescue').address },
    ]);
    await h.console.until(() => h.console.alerts(CONSOLE.id).length >= before + 6);
    await h.alerts.settled();
    await h.dispatcher.drained();
    const alerts = h.console.alerts(CONSOLE.id).slice(before);
    expect(alerts).toHaveLength(6);
    const byVerb = (verb: string) => alerts.find((a) => a.title?.startsWith(verb));
    const sold = byVerb('Sold: ');
    expect(sold?.title).toMatch(/^Sold: Moon Cat #\d+ for [\d.]+ (DEV|WDEV|DUSD)$/);
    expect(sold?.fields?.find((f) => f.name === 'Price')?.value).toMatch(/\(\$[\d,.]+\)/);
    expect(JSON.stringify(sold?.fields)).toContain(sale.seller.slice(0, 6));
    expect(sold?.image).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/assets\//);
    expect(byVerb('Listed: ')?.title).toMatch(/ for 2\.5 DEV$/);
    expect(byVerb('Offer: ')?.title).toMatch(/ for 0\.75 WDEV$/);
    expect(byVerb('Transferred: ')).toBeDefined();
    expect(byVerb('Burned: ')).toBeDefined();
    expect(byVerb('Minted: ')?.title).toMatch(/^Minted: /);
    // The sale's own Transfer is part of the sale, not a second alert.
    expect(titles(alerts).filter((t) => t.startsWith('Transferred')).length).toBe(1);
  });

  it('GIVEN a sweep of three tokens in one transaction THEN one alert lists them with the total', async () => {
    const before = h.console.alerts(CONSOLE.id).length;
    const mined = await h.devnet.mine('devnet', [{ kind: 'sale', collection: moonCats.address, count: 3 }]);
    expect(mined.transactions[0]?.tokenIds).toHaveLength(3);
    await h.console.until(() => h.console.alerts(CONSOLE.id).length > before);
    await h.alerts.settled();
    await h.dispatcher.drained();
    const alerts = h.console.alerts(CONSOLE.id).slice(before);
    expect(alerts).toHaveLength(1);
    // The cheapest three may be priced in different currencies: one total per currency.
    expect(alerts[0]?.title).toMatch(/^Sweep: 3 × Moon Cats for [\d.]+ \w+( \+ [\d.]+ \w+)*$/);
    expect(alerts[0]?.fields?.find((f) => f.name === 'Tokens (3)')).toBeDefined();
    // A lone alert for an idle chat was recorded as sending: one journal write before its send.
    const [record] = h.journal.byTransaction('devnet', mined.txnHashes[0] ?? '');
    expect(record).toMatchObject({ state: 'sent', attempts: 1, sendKey: record?.id });
    const ops = (await readFile(h.journal.file, 'utf8'))
      .split('\n')
      .filter((line) => line.includes(JSON.stringify(record?.id)))
      .map((line) => JSON.parse(line) as { op: string; r?: { state: string } });
    expect(ops.map((o) => (o.r ? `${o.op}:${o.r.state}` : o.op))).toEqual(['add:sending', 'sent']);
  });

  it('GIVEN a second chat with narrow rules THEN it gets only its own matches', async () => {
    const whale = '0x00000000000000000000000000000000000a11ce';
    await h.run(`/watch add ${moonCats.address} listing min=5`, GROUP, ADMIN);
    await h.run(`/watch add ${moonCats.address} transfer wallets=${whale}`, GROUP, ADMIN);
    await h.planned();
    const consoleBefore = h.console.alerts(CONSOLE.id).length;
    await h.devnet.mine('devnet', [
      { kind: 'listing', collection: moonCats.address, price: '1' },
      { kind: 'listing', collection: moonCats.address, price: '9' },
      { kind: 'transfer', collection: moonCats.address },
      { kind: 'transfer', collection: moonCats.address, to: whale },
    ]);
    await h.telegram.until(() => h.telegram.alerts(GROUP.id).length >= 2);
    await h.alerts.settled();
    await h.dispatcher.drained();
    const group = titles(h.telegram.alerts(GROUP.id));
    expect(group).toHaveLength(2);
    expect(group.some((t) => /^Listed: .* for 9 DEV$/.test(t))).toBe(true);
    expect(group.some((t) => t.startsWith('Transferred: '))).toBe(true);
    // The console chat watches everything of Moon Cats: all four.
    expect(h.console.alerts(CONSOLE.id).length - consoleBefore).toBe(4);
  });

  it('GIVEN a token filter and a trait filter THEN only those tokens alert', async () => {
    const filters = await h.platform.metadata.tokenCollectionFilters({
      network: 'devnet',
      contractAddress: moonCats.address,
    });
    const fur = filters.find((f) => f.name === 'Fur');
    const value = String(fur?.values[0]);
    const chat = { ...GROUP, id: '-100300' };
    await h.run(`/watch add ${moonCats.address} transfer tokens=1,2`, chat, ADMIN);
    await h.run(`/watch add ${moonCats.address} transfer fur="${value}"`, chat, ADMIN);
    await h.planned();
    // Tokens 1 and 2, and tokens with and without the trait.
    const { collectibles } = await h.platform.marketplace.listCollectibles({
      network: 'devnet',
      side: 'listing',
      contractAddress: moonCats.address,
      filter: { includeEmpty: true, properties: [{ name: 'Fur', values: [value] }] },
      page: { pageSize: 1 },
    });
    const withTrait = collectibles[0]?.metadata.tokenId ?? '';
    const withoutTrait = (
      await h.platform.marketplace.listCollectibles({
        network: 'devnet',
        side: 'listing',
        contractAddress: moonCats.address,
        filter: { includeEmpty: true },
        page: { pageSize: 50 },
      })
    ).collectibles.find(
      (c) =>
        !c.metadata.attributes.some((a) => a.trait_type === 'Fur' && String(a.value) === value) &&
        !['1', '2'].includes(c.metadata.tokenId),
    )?.metadata.tokenId;
    await h.devnet.mine('devnet', [
      { kind: 'transfer', collection: moonCats.address, tokenId: '2' },
      { kind: 'transfer', collection: moonCats.address, tokenId: withTrait },
      { kind: 'transfer', collection: moonCats.address, tokenId: withoutTrait ?? '3' },
    ]);
    await h.telegram.until(() => h.telegram.alerts(chat.id).length >= 2);
    await h.alerts.settled();
    await h.dispatcher.drained();
    const got = titles(h.telegram.alerts(chat.id)).join('\n');
    expect(h.telegram.alerts(chat.id)).toHaveLength(withTrait === '2' ? 1 : 2);
    expect(got).toContain('#2');
    expect(got).not.toContain(`#${withoutTrait} `);
  });

  it('GIVEN a sale alert WHEN its block is reorganised away THEN the message is edited to say so', async () => {
    const before = h.console.sent.length;
    const { tokenId } = await listed(moonCats.address);
    const mined = await h.devnet.mine('devnet', [{ kind: 'sale', collection: moonCats.address, tokenId }]);
    await h.console.until(() => h.console.sent.length > before);
    await h.alerts.settled();
    await h.dispatcher.drained();
    const message = h.console.sent.at(-1);
    expect(message?.replies[0]?.title).toMatch(/^Sold: /);
    await h.devnet.reorg('devnet', 1);
    await h.console.until(() => h.console.edits.some((e) => e.messageId === message?.messageId));
    const edit = h.console.edits.find((e) => e.messageId === message?.messageId);
    expect(edit?.replies.some((r) => r.title?.startsWith('Reversed: Sold: '))).toBe(true);
    expect(h.journal.byTransaction('devnet', mined.txnHashes[0] ?? '').every((r) => r.reorged)).toBe(true);
  });

  it('GIVEN a reversed alert whose edit fails once THEN the edit is tried again and the message says so', async () => {
    const before = h.console.sent.length;
    const { tokenId } = await listed(moonCats.address);
    await h.devnet.mine('devnet', [{ kind: 'sale', collection: moonCats.address, tokenId }]);
    await h.console.until(() => h.console.sent.length > before);
    await h.alerts.settled();
    await h.dispatcher.drained();
    const message = h.console.sent.at(-1);
    h.console.failures = [new DeliveryError('chat down', { permanent: false })];
    await h.devnet.reorg('devnet', 1);
    await h.console.until(() => h.console.edits.some((e) => e.messageId === message?.messageId));
    expect(h.console.failures).toEqual([]);
    const edit = h.console.edits.find((e) => e.messageId === message?.messageId);
    expect(edit?.replies.some((r) => r.title?.startsWith('Reversed: Sold: '))).toBe(true);
  });

  it('GIVEN alerts recorded but not sent WHEN the bot restarts THEN each is delivered once', async () => {
    const before = h.console.sent.length;
    const recorded = h.journal.stats().records;
    h.console.failures = Array.from({ length: 5 }, () => new DeliveryError('chat down', { permanent: false }));
    await h.devnet.mine('devnet', [{ kind: 'listing', collection: moonCats.address, price: '3.25' }]);
    await h.console.until(() => h.journal.stats().records > recorded);
    expect(h.journal.unfinished().length).toBeGreaterThan(0);
    h.console.failures = [];
    await h.restart();
    await h.console.until(() => h.console.sent.length > before);
    await h.dispatcher.drained();
    const listings = h.console.sent
      .slice(before)
      .flatMap((m) => m.replies)
      .filter((r) => r.title?.endsWith('for 3.25 DEV'));
    expect(listings).toHaveLength(1);
    await h.restart();
    await h.dispatcher.drained();
    expect(
      h.console.sent
        .slice(before)
        .flatMap((m) => m.replies)
        .filter((r) => r.title?.endsWith('for 3.25 DEV')),
    ).toHaveLength(1);
  });

  it('GIVEN a dropped stream THEN it reconnects by itself and /status shows the blocks it missed', async () => {
    // The next events stream is dropped after one record; reconnects then fail until the faults are cleared.
    h.devnet.setFaults({ operation: 'SubscribeEvents', dropStreamAfterMessages: 1, times: 1 });
    await h.restart();
    await h.planned();
    h.devnet.setFaults({ operation: 'SubscribeEvents', errorRate: 1 });
    const before = h.console.alerts(CONSOLE.id).length;
    await h.devnet.mine('devnet', [{ kind: 'listing', collection: moonCats.address, price: '4' }]);
    await h.console.until(() =>
      h.alerts.status().streams.some((s) => s.network === 'devnet' && s.events === 'reconnecting'),
    );
    // Blocks mined while the events stream is down: the receipts still show the chain moving.
    const rescue = named('Moon Cats Rescue').address;
    const missed: number[] = [];
    for (let i = 0; i < 3; i++)
      missed.push((await h.devnet.mine('devnet', [{ kind: 'transfer', collection: rescue }])).blockNumber);
    await new Promise((resolve) => setTimeout(resolve, 100));
    h.devnet.clearFaults();
    await h.console.until(() =>
      h.alerts.status().streams.some((s) => s.network === 'devnet' && s.events === 'connected'),
    );
    await h.devnet.mine('devnet', [{ kind: 'listing', collection: moonCats.address, price: '5.5' }]);
    await h.console.until(() =>
      h.console
        .alerts(CONSOLE.id)
        .slice(before)
        .some((a) => a.title?.endsWith('for 5.5 DEV')),
    );
    const health = h.alerts.status().streams.find((s) => s.network === 'devnet');
    expect(health?.reconnects).toBeGreaterThan(0);
    const gap = health?.gaps.at(-1);
    expect(gap?.fromBlock).toBeLessThanOrEqual(missed[0] ?? 0);
    expect(gap?.toBlock).toBeGreaterThanOrEqual(missed[2] ?? 0);
    const status = h.text(await h.run('/status'));
    expect(status).toMatch(
      /devnet: events connected, receipts connected, \d+ contracts?, last event \d+ s ago \(block \d+\), [1-9]\d* reconnects?/,
    );
    expect(status).toContain(`gap: blocks ${gap?.fromBlock}-${gap?.toBlock} not seen`);
  });

  it('GIVEN a platform too slow to enrich an event THEN the alert goes out in time with what the chain says', async () => {
    const enricher = new Enricher(h.platform, h.engine.currencies, pino({ level: 'silent' }));
    h.devnet.setFaults([
      { operation: 'GetOrders', latencyMs: 1_500 },
      { operation: 'GetCollectible', latencyMs: 1_500 },
    ]);
    try {
      const started = performance.now();
      const enriched = await enricher.enrichWithin(
        {
          id: 'devnet:0xabc:0xc0:sale',
          kind: 'sale',
          network: 'devnet',
          collection: moonCats.address,
          txnHash: '0xabc',
          blockNumber: 1,
          blockHash: '0x1',
          ts: new Date().toISOString(),
          tokens: [{ tokenId: '7', amount: '1' }],
          accounts: [],
          orderIds: ['1'],
          logUids: [],
        },
        'Moon Cats',
        200,
      );
      expect(performance.now() - started).toBeLessThan(1_400);
      expect(enriched.price).toBeUndefined();
      expect(enriched.details.tokens).toEqual([{ tokenId: '7', amount: '1' }]);
      expect(enriched.missing.length).toBeGreaterThan(0);
    } finally {
      h.devnet.clearFaults();
    }
  });

  it('GIVEN a currency the bot has seen priced THEN a listing alert is priced from the chain, without an order lookup', async () => {
    // A first listing in DEV: its order teaches the bot the currency's decimals and USD rate.
    const before = h.console.alerts(CONSOLE.id).length;
    await h.devnet.mine('devnet', [{ kind: 'listing', collection: moonCats.address, price: '1.125', currency: 'DEV' }]);
    await h.console.until(() =>
      h.console
        .alerts(CONSOLE.id)
        .slice(before)
        .some((a) => a.title?.endsWith('for 1.125 DEV')),
    );
    // Now the order lookups fail: the next listing still has its price and USD value.
    h.devnet.setFaults({ operation: 'GetOrders', errorRate: 1 });
    try {
      await h.devnet.mine('devnet', [
        { kind: 'listing', collection: moonCats.address, price: '2.25', currency: 'DEV' },
      ]);
      await h.console.until(() =>
        h.console
          .alerts(CONSOLE.id)
          .slice(before)
          .some((a) => a.title?.endsWith('for 2.25 DEV')),
      );
    } finally {
      h.devnet.clearFaults();
    }
    const alert = h.console
      .alerts(CONSOLE.id)
      .slice(before)
      .find((a) => a.title?.endsWith('for 2.25 DEV'));
    const price = h.text({ lines: [alert?.fields?.find((f) => f.name === 'Price')?.value ?? ''] });
    expect(price).toMatch(/^2\.25 DEV \(\$[\d,.]+\)$/);
    // The rate was learned from an order whose USD value the platform rounded to cents.
    const usd = Number(/\$([\d,.]+)/.exec(price)?.[1]?.replace(/,/g, ''));
    expect(Math.abs(usd - 2.25 * 2_450)).toBeLessThan(2.25 * 2_450 * 0.001);
    expect(alert?.fields?.find((f) => f.name === 'Market')?.value).toBe('Sequence Market v2');
  });

  it('GIVEN a rule that ignores a wallet THEN events involving it do not alert, others do; a bad address is refused by name', async () => {
    const bot = '0x00000000000000000000000000000000000b0b07';
    const refused = await h.run(`/watch add ${gardens.address} transfer ignore=0x123`, GROUP, ADMIN);
    expect(h.text(refused)).toMatch(/ignore/);
    const added = await h.run(
      `/watch add ${gardens.address} transfer ignore=${bot.toUpperCase().replace('0X', '0x')}`,
      GROUP,
      ADMIN,
    );
    expect(h.text(added)).toContain('ignoring');
    await h.planned();
    const before = h.telegram.alerts(GROUP.id).length;
    await h.devnet.mine('devnet', [
      { kind: 'transfer', collection: gardens.address, to: bot },
      { kind: 'transfer', collection: gardens.address },
    ]);
    await h.telegram.until(() => h.telegram.alerts(GROUP.id).length > before);
    await h.alerts.settled();
    await h.dispatcher.drained();
    const alerts = h.telegram.alerts(GROUP.id).slice(before);
    expect(alerts).toHaveLength(1); // two transfers mined: the one to the ignored wallet did not alert
  });

  it('GIVEN the same token listed again by its seller at the same price THEN the relist does not alert, except for rules that show relists', async () => {
    const { tokenId } = await listed(moonCats.address);
    const added = await h.run(`/watch add ${moonCats.address} listing tokens=${tokenId} relists=show`, GROUP, ADMIN);
    expect(h.text(added)).toContain('relists shown');
    await h.planned();
    const listing = {
      kind: 'listing' as const,
      collection: moonCats.address,
      tokenId,
      price: '4.321',
      currency: 'DEV',
    };
    const count = () => ({
      console: titles(h.console.alerts(CONSOLE.id)).filter((t) => t.endsWith('for 4.321 DEV')).length,
      group: titles(h.telegram.alerts(GROUP.id)).filter((t) => t.endsWith('for 4.321 DEV')).length,
    });
    const relistsBefore = h.alerts.status().counters.relists;
    await h.devnet.mine('devnet', [listing]);
    await h.telegram.until(() => count().group === 1);
    await h.devnet.mine('devnet', [listing]);
    await h.telegram.until(() => count().group === 2);
    await h.devnet.mine('devnet', [{ ...listing, price: '4.4' }]); // another price: news
    await h.console.until(() => titles(h.console.alerts(CONSOLE.id)).some((t) => t.endsWith('for 4.4 DEV')));
    await h.alerts.settled();
    await h.dispatcher.drained();
    expect(count()).toEqual({ console: 1, group: 2 });
    expect(h.alerts.status().counters.relists - relistsBefore).toBe(1);

    // A listing whose block was reorganised away did not happen: the same listing mined again is news.
    const again = { ...listing, price: '4.5' };
    const first = await h.devnet.mine('devnet', [again]);
    await h.console.until(() => titles(h.console.alerts(CONSOLE.id)).some((t) => t.endsWith('for 4.5 DEV')));
    await h.alerts.settled();
    await h.dispatcher.drained();
    await h.devnet.reorg('devnet', 1);
    await h.console.until(() =>
      h.journal.byTransaction('devnet', first.txnHashes[0] ?? '').every((r) => r.reorged && r.editedAt),
    );
    await h.devnet.mine('devnet', [again]);
    await h.console.until(
      () => titles(h.console.alerts(CONSOLE.id)).filter((t) => t.endsWith('for 4.5 DEV')).length === 2,
    );
  });

  it('GIVEN a rule for listings under a share of the floor THEN a listing far below the floor alerts and one above does not', async () => {
    const snipers: ChatRef = { platform: 'telegram', id: '-100900', kind: 'group' };
    const refused = await h.run(`/watch add ${moonCats.address} mint floor=50%`, snipers, ADMIN);

    expect(h.text(refused)).toMatch(/floor=.*sale, listing/s);
    expect(h.text(await h.run(`/watch add ${moonCats.address} listing floor=120%`, snipers, ADMIN))).toMatch(
      /not a percentage from 1 to 100/,
    );
    const added = await h.run(`/watch add ${moonCats.address} listing floor=50%`, snipers, ADMIN);
    expect(h.text(added)).toContain('at most 50% of floor');
    await h.planned();
    const collectibles = await cheapest(moonCats.address, 20);
    const floorUsd = Math.min(...collectibles.map((c) => c.order?.priceUSD ?? Number.POSITIVE_INFINITY));
    // DEV is worth about $2,450 on the devnet (see the chain-priced listing above).
    const dev = (usd: number) => (usd / 2_450).toFixed(4);
    const [cheap, dear] = [dev(floorUsd * 0.2), dev(floorUsd * 3)];
    await h.devnet.mine('devnet', [
      { kind: 'listing', collection: moonCats.address, price: cheap, currency: 'DEV' },
      { kind: 'listing', collection: moonCats.address, price: dear, currency: 'DEV' },
    ]);
    await h.telegram.until(() => h.telegram.alerts(snipers.id).length > 0);
    await h.alerts.settled();
    await h.dispatcher.drained();
    expect(titles(h.telegram.alerts(snipers.id))).toEqual([
      expect.stringMatching(new RegExp(`for ${cheap.replace(/0+$/, '').replace('.', '\\.')} DEV$`)),
    ]);
  });

  it("GIVEN rules that ping roles THEN an alert carries the roles of its chat's matching rules, once each, and other chats ping none", async () => {
    const [first, second] = ['112233445566778899', '998877665544332211'];
    await h.run(`/watch add ${moonCats.address} listing mention=${first}`);
    await h.run(`/watch add ${moonCats.address} listing,offer mention=${second}`);
    await h.run(`/watch add ${moonCats.address} listing,transfer mention=${first}`);
    await h.planned();
    const before = { console: h.console.alerts(CONSOLE.id).length, group: h.telegram.alerts(GROUP.id).length };
    await h.devnet.mine('devnet', [
      { kind: 'listing', collection: moonCats.address, price: '7' },
      { kind: 'burn', collection: moonCats.address },
    ]);
    await h.console.until(() => h.console.alerts(CONSOLE.id).length >= before.console + 2);
    await h.alerts.settled();
    await h.dispatcher.drained();
    const alerts = h.console.alerts(CONSOLE.id).slice(before.console);
    expect(alerts.find((a) => a.title?.startsWith('Listed:'))?.mentionRoles).toEqual([first, second]);
    expect(alerts.find((a) => a.title?.startsWith('Burned:'))?.mentionRoles ?? []).toEqual([]);
    // The group's own listing rule (min=5) matched the same event: its message pings nobody.
    const group = h.telegram.alerts(GROUP.id).slice(before.group);
    expect(group.map((a) => a.title)).toEqual([alerts.find((a) => a.title?.startsWith('Listed:'))?.title]);
    expect(group[0]?.mentionRoles ?? []).toEqual([]);
  });
});
