import { describe, expect, it } from 'vitest';
import { useSharedDatabase } from '../helpers/shared-database.ts';
import { sleep, until } from '../helpers/terminal-bot.ts';

/*
 * Listing cards with two processes (src/main.ts, in this process) on one PostgreSQL: one ingests and
 * marks what became of a listing, the holder of the chat's claim edits the message, once. Both are
 * the terminal chat `console:terminal`, whose edits are printed as a note: the two outputs together
 * hold one SOLD note, and one EXPIRED note. A listing reorganised away is printed reversed, without
 * the link to its transaction's page.
 */

const EXPLORER = 'http://explorer.test/tx/';
const suite = useSharedDatabase((devnet) => ({
  FLOORWATCH_TOKEN_URL: `${devnet.url}/market/{network}/{collection}/{tokenId}`,
  FLOORWATCH_EXPLORER_URLS: `devnet=${EXPLORER}{txnHash}`,
  FLOORWATCH_LISTING_EXPIRY_CHECK_SECONDS: '1',
}));
const { start, leads } = suite;
const count = (text: string, pattern: RegExp) => (text.match(pattern) ?? []).length;

describe('listing cards of processes sharing a database', () => {
  it('GIVEN two processes WHEN a listing alerted is sold, another expires and a third is reorganised away THEN one process edits each message, once, and the reversed one links no transaction', async () => {
    const url = await suite.postgres.freshDatabase();
    const runs = [await start(url), await start(url)];
    const out = () => runs.map((r) => r.out()).join('\n');
    const listedLines = (price: string) =>
      count(out(), new RegExp(`^Listed: .* for ${price.replace('.', '\\.')} \\S+$`, 'gm'));
    runs[0]?.input.write('/watch add moon cats listing\n');
    await until(() => out().includes('Watching'), 'the watch rule');
    await until(async () => (await Promise.all(runs.map(leads))).some(Boolean), 'an ingest leader');
    const listing = (price: string, extra: Record<string, unknown> = {}) => ({
      kind: 'listing' as const,
      collection: suite.cats.address,
      currency: 'DEV',
      price,
      ...extra,
    });
    let warm = 0;
    await until(async () => {
      const price = `1.${++warm}07`;
      await suite.devnet.mine('devnet', [listing(price)]);
      await sleep(500);
      return listedLines(price) > 0;
    }, 'the streams');

    // Sold: the card is edited once, whichever process holds the chat.
    const sold = await suite.devnet.mine('devnet', [listing('4.41')]);
    const orderId = sold.transactions[0]?.orderIds[0] ?? '';
    await until(() => listedLines('4.41') === 1, 'the listing alert');
    await suite.devnet.mine('devnet', [{ kind: 'sale', orderId }]);
    const soldNote = /^SOLD · Listed: .* for 4\.41 \S+$/gm;
    await until(() => count(out(), soldNote) >= 1, 'the SOLD edit');
    expect(out()).toMatch(/Sold for 4\.41 /);

    // Expired: found by the ingesting process, edited by the claim's holder, once.
    await suite.devnet.mine('devnet', [listing('4.42', { expiresIn: 1 })]);
    await until(() => listedLines('4.42') === 1, 'the expiring listing alert');
    const expiredNote = /^EXPIRED · Listed: .* for 4\.42 \S+$/gm;
    await until(() => count(out(), expiredNote) >= 1, 'the EXPIRED edit');

    // Reorganised away: reversed, and no page of a transaction that is gone.
    const gone = await suite.devnet.mine('devnet', [listing('4.43')]);
    await until(() => listedLines('4.43') === 1, 'the listing about to be reorganised');
    const txnHash = gone.transactions[0]?.txnHash ?? '';
    expect(out()).toContain(`${EXPLORER}${txnHash}`);
    await suite.devnet.reorg('devnet', 1);
    const reversed = /^Reversed: Listed: .* for 4\.43 \S+$/gm;
    await until(() => count(out(), reversed) >= 1, 'the reversed alert');
    const note = out().slice(out().search(reversed));
    expect(note.slice(0, note.indexOf('update of alert'))).not.toContain(EXPLORER);

    await sleep(3_000);
    expect(count(out(), soldNote)).toBe(1);
    expect(count(out(), expiredNote)).toBe(1);
    expect(count(out(), reversed)).toBe(1);
  }, 180_000);
});
