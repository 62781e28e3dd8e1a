import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { useSharedDatabase } from '../helpers/shared-database.ts';
import { sleep, type TerminalBot, until } from '../helpers/terminal-bot.ts';

/*
 * Two bots (src/main.ts, in this process) on one PostgreSQL, as two replicas: one ingests, the other
 * waits. What the bot knows of the market (the sales it recorded, the listings it saw) is the
 * database's, not the ingesting process's: once the first stops and the second takes the ingestion
 * over, an identical relist is still a relist, and /collection on the second counts the sale the
 * first saw. Alerts are counted in both terminal chats' output (both are chat `console:terminal`:
 * whichever holds its claim prints them). The second process takes over from the shared cursor, past
 * the blocks the first saw: it reads none of them back.
 */

const suite = useSharedDatabase();
const { start, leads } = suite;

type Run = TerminalBot;

describe('the market record of processes sharing a database', () => {
  it('GIVEN two processes WHEN the one that ingests stops and the other takes over THEN an identical relist stays a relist, and /collection on the other counts the sale the first saw', async () => {
    const url = await suite.postgres.freshDatabase();
    const runs = [await start(url), await start(url)];
    const out = () => runs.map((r) => r.out()).join('\n');
    const alertsFor = (price: string) =>
      (out().match(new RegExp(`^Listed: .* for ${price.replace('.', '\\.')} \\S+$`, 'gm')) ?? []).length;
    runs[0]?.input.write('/watch add moon cats all\n');
    await until(() => out().includes('Watching'), 'the watch rule');
    await until(async () => (await Promise.all(runs.map(leads))).some(Boolean), 'an ingest leader');
    const leader = (await leads(runs[0] as Run)) ? (runs[0] as Run) : (runs[1] as Run);
    const follower = runs.find((r) => r !== leader) as Run;

    const { collectibles } = await leader.bot.platform.marketplace.listCollectibles({
      network: 'devnet',
      side: 'listing',
      contractAddress: suite.cats.address,
      filter: { includeEmpty: false },
      page: { pageSize: 20 },
    });
    const [listedToken, soldToken] = collectibles.filter((c) => c.order).map((c) => c.metadata.tokenId);
    if (!listedToken || !soldToken) throw new Error('nothing listed');
    const listing = { kind: 'listing' as const, collection: suite.cats.address, tokenId: listedToken, currency: 'DEV' };

    // The leader's streams are open once one of its listings is alerted (a first start begins at the head).
    let warm = 0;
    await until(async () => {
      await suite.devnet.mine('devnet', [{ ...listing, price: `1.${++warm}01` }]);
      await sleep(500);
      return alertsFor(`1.${warm}01`) > 0;
    }, "the leader's streams");
    await suite.devnet.mine('devnet', [{ ...listing, price: '7.777' }]);
    await until(() => alertsFor('7.777') === 1, 'the listing alert');
    const sold = await suite.devnet.mine('devnet', [
      { kind: 'sale', collection: suite.cats.address, tokenId: soldToken },
    ]);
    await until(() => /^Sold: /m.test(out()), 'the sale alert');
    // The shared cursor passed these blocks: the next leader does not read them back (it never sees them).
    const probe = new pg.Client({ connectionString: url });
    await probe.connect();
    try {
      const cursor = async () =>
        Number((await probe.query<{ block: string }>('SELECT block FROM cursors')).rows[0]?.block ?? 0);
      await until(async () => (await cursor()) >= sold.blockNumber, 'the cursor past the sale');
    } finally {
      await probe.end();
    }

    await suite.stop(leader);
    await until(() => leads(follower), 'the other process leading the ingestion');
    await until(async () => {
      await suite.devnet.mine('devnet', [{ ...listing, price: `2.${++warm}01` }]);
      await sleep(500);
      return alertsFor(`2.${warm}01`) > 0;
    }, "the new leader's streams");

    // The same listing again: a relist for the process that never saw the first.
    await suite.devnet.mine('devnet', [{ ...listing, price: '7.777' }]);
    await suite.devnet.mine('devnet', [{ ...listing, price: '7.778' }]);
    await until(() => alertsFor('7.778') === 1, 'the next listing alert');
    await sleep(1_000);
    expect(alertsFor('7.777')).toBe(1);

    // The sale the first process recorded, on the second.
    const before = follower.out().length;
    follower.input.write('/collection moon cats\n');
    await until(() => follower.out().slice(before).includes('Sales and floor changes'), 'the /collection answer');
    expect(follower.out().slice(before)).toMatch(/\b1 sale · \$[\d,.]+ volume/);
  }, 180_000);
});
