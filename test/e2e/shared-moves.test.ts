import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { useSharedDatabase } from '../helpers/shared-database.ts';
import { sleep, type TerminalBot, until } from '../helpers/terminal-bot.ts';

/*
 * Floor rules with a shared database: two bots (src/main.ts, in this process) on one PostgreSQL, one
 * ingesting. The rule is kept in the database with the level it last alerted; only the ingesting
 * process checks it, so a floor that falls is alerted once, and after the other process takes the
 * ingestion over it measures from the same level (no second alert for a line already crossed).
 * Alerts are counted in both terminal chats' output (both are chat `console:terminal`).
 */

const suite = useSharedDatabase();
const { start, leads } = suite;

type Run = TerminalBot;

describe('floor rules of processes sharing a database', () => {
  it('GIVEN two processes and a floor rule WHEN the floor falls below its line THEN one alert, the rule keeps the level in the database, and the process that takes over alerts nothing for the same line', async () => {
    const url = await suite.postgres.freshDatabase();
    const runs = [await start(url), await start(url)];
    const out = () => runs.map((r) => r.out()).join('\n');
    const alerts = () => (out().match(/^Floor of Moon Cats fell below/gm) ?? []).length;
    await until(async () => (await Promise.all(runs.map(leads))).some(Boolean), 'an ingest leader');
    const leader = (await leads(runs[0] as Run)) ? (runs[0] as Run) : (runs[1] as Run);
    const follower = runs.find((r) => r !== leader) as Run;

    const { collectibles } = await leader.bot.platform.marketplace.listCollectibles({
      network: 'devnet',
      side: 'listing',
      contractAddress: suite.cats.address,
      filter: { includeEmpty: false },
      page: { pageSize: 50 },
    });
    const floor = collectibles
      .flatMap((c) => (c.order ? [{ order: c.order, tokenId: c.metadata.tokenId }] : []))
      .sort((a, b) => a.order.priceUSD - b.order.priceUSD)[0];
    if (!floor) throw new Error('nothing listed');
    const price = Number(floor.order.priceAmountFormatted);
    const line = (price * 0.8).toFixed(4);
    // Added on the process that does not ingest: the rule reaches the other through the database.
    follower.input.write(`/watch add moon cats floor below=${line}\n`);
    await until(() => out().includes('Watching'), 'the floor rule');
    const listing = {
      kind: 'listing' as const,
      collection: suite.cats.address,
      currency: floor.order.priceCurrencyAddress,
    };
    await suite.devnet.mine('devnet', [{ ...listing, tokenId: floor.tokenId, price: (price * 0.5).toFixed(4) }]);
    await until(() => alerts() === 1, 'the floor alert');

    const probe = new pg.Client({ connectionString: url });
    await probe.connect();
    try {
      const stored = async () =>
        (
          await probe.query<{ rule: { move?: { lastAlertAt?: string; reference?: { amount: string } } } }>(
            'SELECT rule FROM rules',
          )
        ).rows[0]?.rule.move;
      await until(async () => Boolean((await stored())?.lastAlertAt), 'the rule saved with its alert');
      expect((await stored())?.reference?.amount).toBe(String(Number((price * 0.5).toFixed(4))));
    } finally {
      await probe.end();
    }

    await suite.stop(leader);
    await until(() => leads(follower), 'the other process leading the ingestion');
    await sleep(1_500);
    // Lower still: the line was crossed already, as the database says; the new leader checks and stays quiet.
    await suite.devnet.mine('devnet', [{ ...listing, tokenId: floor.tokenId, price: (price * 0.4).toFixed(4) }]);
    await until(() => follower.bot.alerts.status().moves.checks > 0, 'a check by the new leader');
    await follower.bot.alerts.settled();
    await sleep(500);
    expect(alerts()).toBe(1);
    expect(leader.bot.alerts.status().moves.alerts + follower.bot.alerts.status().moves.alerts).toBe(1);
  }, 180_000);
});
