import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/bot-harness.ts';
import { collectionNamed } from '../helpers/devnet-data.ts';

/* Issue 15: answers that said something other than what they showed. */

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ blockIntervalMs: 0 });
});
afterAll(async () => {
  await h?.close();
});

describe('order book answers', () => {
  it('GIVEN /offers THEN the list is introduced as highest first and the lowest offer comes after it', async () => {
    const moonCats = collectionNamed(h.devnet, 'Moon Cats');
    const { collectibles } = await h.platform.marketplace.listCollectibles({
      network: 'devnet',
      side: 'offer',
      contractAddress: moonCats.address,
      filter: { includeEmpty: false },
      page: { pageSize: 1 },
    });
    const tokenId = collectibles[0]?.metadata.tokenId ?? '1';
    const text = h.text(await h.run(`/offers moon cats ${tokenId}`));
    expect(text).toMatch(/Highest first:\n1\. [\d,.]+ \w+/);
    const lowest = text.indexOf('Lowest offer:');
    expect(lowest).toBeGreaterThan(text.indexOf('1. '));
  });
});

describe('watch rules', () => {
  it('GIVEN a rule WHEN the same rule is added again (its lists in another order) THEN it is refused, naming the rule; a different rule is added', async () => {
    const moonCats = collectionNamed(h.devnet, 'Moon Cats');
    expect((await h.run(`/watch add ${moonCats.address} sale,listing min=$50`)).title).toBe('Watching');
    const again = await h.run(`/watch add ${moonCats.address} listing,sale min=$50`);
    expect(again.tone).toBe('error');
    expect(h.text(again)).toContain('r1 already watches exactly this');
    expect((await h.run(`/watch add ${moonCats.address} sale,listing min=$60`)).title).toBe('Watching');
    await h.run('/watch pause r1');
    expect(h.text(await h.run(`/watch add ${moonCats.address} sale,listing min=$50`))).toContain(
      'r1 already watches exactly this (paused: /watch resume r1)',
    );
    expect(h.store.rules.map((r) => r.id)).toEqual(['r1', 'r2']);
  });

  it('GIVEN rules r1 (paused) and r2 THEN pause, resume and remove take several ids, say which were already so, and change nothing when one id is not the chat', async () => {
    expect(h.text(await h.run('/watch pause r1,r2'))).toBe(
      'Rule r2 paused. /watch resume r2 turns it back on.\nRule r1 was already paused.',
    );
    expect(h.text(await h.run('/watch pause r2'))).toBe('Rule r2 was already paused.');
    expect(h.text(await h.run('/watch resume r1 r2'))).toBe('Rules r1 and r2 are on again.');
    expect(h.text(await h.run('/watch resume 2'))).toBe('Rule r2 was not paused.');
    const missing = await h.run('/watch remove r1,r9');
    expect(h.text(missing)).toBe('This chat has no rule r9: nothing was changed. /watch list shows them.');
    expect(h.store.rules.map((r) => r.id)).toEqual(['r1', 'r2']);
    expect(h.text(await h.run('/watch remove r1,r2'))).toBe('Rules r1 and r2 removed.');
    expect(h.store.rules).toEqual([]);
  });
});

describe('trait filters', () => {
  it('GIVEN /watch add with a trait the collection has but a value it does not THEN the answer lists that trait values; a known value is saved as the collection spells it', async () => {
    const moonCats = collectionNamed(h.devnet, 'Moon Cats');
    const wrong = h.text(await h.run(`/watch add ${moonCats.address} sale background=blue`));
    expect(wrong).toContain('"Background=blue" is not a trait filter of this collection');
    expect(wrong).toContain('Background=Aurora');
    const right = await h.run(`/watch add ${moonCats.address} sale background=aurora`);
    expect(right.title).toBe('Watching');
    expect(h.store.rules.at(-1)?.traits).toEqual([{ name: 'Background', value: 'Aurora' }]);
  });
});

describe('links in answers', () => {
  it('GIVEN /token on a token listed on the platform marketplace THEN its title opens the token page and a Buy button opens where the best listing is', async () => {
    const gardens = collectionNamed(h.devnet, 'Glitch Gardens');
    const mined = await h.devnet.mine('devnet', [{ kind: 'listing', collection: gardens.address, price: '0.0001' }]);
    const tokenId = mined.transactions[0]?.tokenIds[0] ?? '';
    const reply = await h.run(`/token ${gardens.address} ${tokenId}`);
    const page = `${h.devnet.url}/market/devnet/${gardens.address}/${tokenId}`;
    expect(reply.url).toBe(page);
    const buy = reply.buttons?.flat().find((b) => b.label.startsWith('Buy on '));
    expect(buy).toMatchObject({ label: 'Buy on Sequence Market v2', url: page });
    expect((await fetch(page)).status).toBe(200);
  });
});
