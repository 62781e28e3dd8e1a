import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALERT_KINDS } from '../../src/core/types.ts';
import { byPriceAscending, displayAmount } from '../../src/market/format.ts';
import type { Order } from '../../src/platform/types.ts';
import { ADMIN, CONSOLE, type Harness, startHarness } from '../helpers/bot-harness.ts';
import { collectionNamed } from '../helpers/devnet-data.ts';

/*
 * A user audit of the terminal chat: what answers said that they should not have, each checked
 * through the real engine and commands against the local platform, rendered as the terminal shows it.
 */

const NOWHERE = '0x1111111111111111111111111111111111111111';
const RLO = '\u202e';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ blockIntervalMs: 0 });
});
afterAll(async () => {
  await h?.close();
});

describe('order book lists', () => {
  it('GIVEN a token listed at 1129 DUSD WHEN /listings shows it THEN each entry is headed by its price, grouped by thousands like its US dollars, never a bare "1.:"', async () => {
    const gardens = collectionNamed(h.devnet, 'Glitch Gardens');
    const mined = await h.devnet.mine('devnet', [
      { kind: 'listing', collection: gardens.address, price: '1129', currency: 'DUSD' },
    ]);
    const tokenId = mined.transactions[0]?.tokenIds[0] ?? '';
    const text = h.text(await h.run(`/listings devnet:${gardens.address} ${tokenId}`));
    expect(text).not.toMatch(/^\d+\.:/m);
    expect(text).toMatch(/^\d+\. 1,129 DUSD \(\$1,129\.00\):\n {2}Sequence Market v2 · (ends in \d+ days · )?by 0x/m);
    expect(text).toMatch(/^Highest ask:\n {2}[\d,.]+ \w+ \(\$[\d,.]+\) · /m);
  });

  it('GIVEN /offers THEN its entries are headed by their price too', async () => {
    const moonCats = collectionNamed(h.devnet, 'Moon Cats');
    const mined = await h.devnet.mine('devnet', [
      { kind: 'offer', collection: moonCats.address, price: '2500', currency: 'DUSD' },
    ]);
    const tokenId = mined.transactions[0]?.tokenIds[0] ?? '';
    const text = h.text(await h.run(`/offers devnet:${moonCats.address} ${tokenId}`));
    expect(text).not.toMatch(/^\d+\.:/m);
    expect(text).toMatch(/^1\. 2,500 DUSD \(\$2,500\.00\):$/m);
  });
});

describe('help', () => {
  it('GIVEN /help watch THEN it names every kind a rule can follow, cancels included', async () => {
    const text = h.text(await h.run('/help watch'));
    for (const kind of ALERT_KINDS) expect(text).toContain(`${kind}s`);
    expect(text).toContain(`Alerts for this chat: ${ALERT_KINDS.map((k) => `${k}s`).join(', ')}`);
  });
});

describe('what the user typed, echoed', () => {
  it('GIVEN a quote not closed THEN the answer does not end on a usage line cut to the command name', async () => {
    const text = h.text(await h.run('/floor "moon cats'));
    expect(text).toContain('A quote is not closed');
    expect(text).not.toMatch(/^Usage: \/floor$/m);
    expect(text).toContain('Usage: /floor <collection> [count] [trait=value ...]');
    // A subcommand's own usage, when the line names one.
    expect(h.text(await h.run('/watch add "moon cats'))).toContain('Usage: /watch add <collection>');
  });

  it('GIVEN a right-to-left override typed before a name nothing has THEN the answer shows where it was and carries none raw', async () => {
    const text = h.text(await h.run(`/floor ${RLO}zzz cats`));
    expect(text).not.toMatch(/[\u200e\u200f\u202a-\u202e\u2066-\u2069]/u);
    expect(text).toContain('"<U+202E>zzz cats"');
    expect(text).toContain('Try /search zzz cats,');
  });

  it('GIVEN a right-to-left override or a zero-width space pasted into a known name THEN the name is found', async () => {
    expect((await h.run(`/floor ${RLO}moon cats`)).title).toBe('Floor of Moon Cats');
    expect((await h.run('/floor moon\u200b cats')).title).toBe('Floor of Moon Cats');
  });
});

describe('a contract address the platform does not know', () => {
  it('GIVEN /floor, /token, /listings, /traits and a trait filter on it THEN each says there is no collection at that address on that network, and the log keeps the platform words', async () => {
    const lines: string[] = [];
    const logger = pino(
      { level: 'info' },
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          lines.push(chunk.toString());
          done();
        },
      }),
    );
    const engine = h.engineWith({ logger });
    const expected = `No collection at ${NOWHERE} on devnet. Check the address (another network: network:0x…), or find the collection by name with /search.`;
    for (const line of [
      `/floor ${NOWHERE}`,
      `/floor ${NOWHERE} background=aurora`,
      `/token ${NOWHERE} 1`,
      `/listings ${NOWHERE} 1`,
      `/offers ${NOWHERE} 1`,
      `/traits ${NOWHERE}`,
      `/collection ${NOWHERE}`,
      `/floor devnet-l2:${collectionNamed(h.devnet, 'Moon Cats').address}`,
    ]) {
      const reply = await engine.runLine(line, CONSOLE, ADMIN);
      const text = h.text(reply ?? {});
      if (line.includes('devnet-l2:')) {
        expect(text).toMatch(/^No collection at 0x[0-9a-f]{40} on devnet-l2\./);
        continue;
      }
      expect(text).toBe(expected);
      expect(text).not.toContain('The platform found nothing');
    }
    const failures = lines.filter((l) => l.includes('"command failed"'));
    expect(failures).toHaveLength(8);
    for (const entry of failures) expect(entry).toMatch(/unknown_collection_address: .*NotFound.*no collection 0x/);
    expect(failures.join('')).toContain(`contractAddress: no collection ${NOWHERE} on devnet`);
  });

  it('GIVEN a known collection and a token it does not have THEN the answer is still about the token', async () => {
    const text = h.text(await h.run('/token moon cats 99999999'));
    expect(text).toBe('Token 99999999 does not exist in Moon Cats.');
    expect(h.text(await h.run('/listings moon cats 99999999'))).toBe('Token 99999999 does not exist in Moon Cats.');
  });
});

describe('/watch test', () => {
  const sampleOf = async (rule: string) => {
    const added = await h.run(`/watch add ${rule}`);
    expect(added.title).toBe('Watching');
    const id = h.store.rules.at(-1)?.id ?? '';
    return h.run(`/watch test ${id}`);
  };

  it('GIVEN a rule on tokens 1, 2 and 3 THEN the sample is about the first of them that is listed, priced by its cheapest listing against the floor, links its page, and links no transaction', async () => {
    const gardens = collectionNamed(h.devnet, 'Glitch Gardens');
    const target = { network: 'devnet', contractAddress: gardens.address };
    const cheapest = async (tokenId: string) =>
      [...(await h.platform.marketplace.listListingsForCollectible({ ...target, tokenId })).listings].sort(
        byPriceAscending,
      )[0];
    let listed: { tokenId: string; order: Order } | undefined;
    for (const tokenId of ['1', '2', '3']) {
      const order = await cheapest(tokenId);
      if (order) {
        listed = { tokenId, order };
        break;
      }
    }
    if (!listed) throw new Error('none of tokens 1-3 is listed in the dataset');
    const reply = await sampleOf(`${gardens.address} all tokens=1,2,3`);
    const token = await h.platform.marketplace.getCollectible({ ...target, tokenId: listed.tokenId });
    expect(reply.title).toMatch(
      new RegExp(
        `^\\[Sample\\] Sold: ${token.name} for ${displayAmount(listed.order.priceAmountFormatted).replace('.', '\\.')} \\w+$`,
      ),
    );
    expect(reply.url).toBe(`${h.devnet.url}/market/devnet/${gardens.address}/${listed.tokenId}`);
    expect(reply.image).toBe(token.image);
    const text = h.text(reply);
    expect(text).toMatch(/^Floor: \$[\d,.]+ · .*floor$/m);
    expect(text).toContain('A sample of what rule');
    expect(text).toContain('no transaction happened');
    expect(text).not.toMatch(/0x0{4}…0{4}|0x0{64}|Transaction|block \d/);
    expect(reply.footer).toBe('Glitch Gardens · devnet · sample');
  });

  it('GIVEN a listing rule with a trait THEN the sample is a listed token with that trait, with where to buy it', async () => {
    const moonCats = collectionNamed(h.devnet, 'Moon Cats');
    const { collectibles } = await h.platform.marketplace.listCollectibles({
      network: 'devnet',
      side: 'listing',
      contractAddress: moonCats.address,
      filter: { includeEmpty: true, properties: [{ name: 'Background', values: ['Aurora'] }] },
      page: { pageSize: 1 },
    });
    const tokenId = collectibles[0]?.metadata.tokenId ?? '';
    // The cheapest Aurora listing, on the platform's own marketplace (which has a page to buy it on).
    await h.devnet.mine('devnet', [{ kind: 'listing', collection: moonCats.address, tokenId, price: '0.0001' }]);
    const reply = await sampleOf(`${moonCats.address} listing background=aurora`);
    expect(reply.title).toMatch(new RegExp(`^\\[Sample\\] Listed: Moon Cat #${tokenId} for 0\\.0001 DEV$`));
    expect(reply.url).toBe(`${h.devnet.url}/market/devnet/${moonCats.address}/${tokenId}`);
    expect(reply.fields?.find((f) => f.name === 'Links')?.value).toEqual([
      { link: 'Buy on Sequence Market v2', href: reply.url },
    ]);
    expect(h.text(reply)).toMatch(/^Floor: \$[\d,.]+ · \d+% below floor$/m);
  });

  it('GIVEN a rule on a token that does not exist THEN the sample says so', async () => {
    const gardens = collectionNamed(h.devnet, 'Glitch Gardens');
    const reply = await sampleOf(`${gardens.address} listing tokens=99999`);
    expect(h.text(reply)).toContain('(99999) is in Glitch Gardens now.');
  });
});
