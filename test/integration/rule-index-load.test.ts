// The alert pipeline's rule index on the PostgreSQL store, read page by page while another process
// changes rules: the changes heard during the read are applied once it ends, so that a rule paused
// after its page was read does not alert, and a rule added meanwhile does.
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createAlerts } from '../../src/alerts/index.ts';
import type { WatchRule } from '../../src/core/types.ts';
import { Dispatcher } from '../../src/delivery/dispatcher.ts';
import { devnetLinks } from '../../src/main.ts';
import { Links } from '../../src/market/links.ts';
import { DeliveryJournal } from '../../src/store/files/journal/journal.ts';
import { FileMarketHistory } from '../../src/store/files/market-history.ts';
import { openSharedDatabase, type SharedDatabase } from '../../src/store/pg/index.ts';
import { PgRulesRepository } from '../../src/store/pg/rules.ts';
import { type Harness, startHarness } from '../helpers/bot-harness.ts';
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.ts';
import { RecordingSink } from '../helpers/recording-sink.ts';

const silent = pino({ level: 'silent' });
let postgres: TestPostgres;
let h: Harness;

beforeAll(async () => {
  postgres = await startTestPostgres();
  h = await startHarness({ blockIntervalMs: 0 });
}, 120_000);
afterAll(async () => {
  await h?.close();
  await postgres?.stop();
});

async function eventually(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

it('GIVEN 3,000 rules read one a page WHEN another process pauses the first and adds one meanwhile THEN the index ends with both changes', async () => {
  const moonCats = h.devnet.collections.devnet?.find((c) => c.name === 'Moon Cats');
  if (!moonCats) throw new Error('no Moon Cats');
  const url = await postgres.freshDatabase();
  const processes: SharedDatabase[] = [];
  const open = async () => {
    const shared = await openSharedDatabase({ url, poolSize: 2 }, silent, () => {});
    processes.push(shared);
    return shared;
  };
  const writer = await open();
  const rule = (chatId: string): Omit<WatchRule, 'id'> => ({
    destination: { platform: 'console', chatId },
    network: 'devnet',
    collection: moonCats.address.toLowerCase(),
    collectionName: 'Moon Cats',
    kinds: ['sale'],
    paused: false,
    createdBy: 'console:1',
    createdAt: '2026-11-25T00:00:00.000Z',
  });
  // r1 watches Moon Cats; r2 to r3000 watch collections elsewhere, so that reading takes 3,000 queries.
  const first = await writer.rules.addRule(rule('paused-later'), 50);
  expect(first?.id).toBe('r1');
  await writer.db.pool.query(
    `INSERT INTO rules (id, chat_key, rule)
     SELECT 'r' || n, 'console:elsewhere-' || n,
            jsonb_build_object('id', 'r' || n, 'destination', jsonb_build_object('platform', 'console', 'chatId', 'elsewhere-' || n),
              'network', 'devnet', 'collection', '0x' || lpad(to_hex(n), 40, 'e'), 'collectionName', 'Elsewhere',
              'kinds', jsonb_build_array('sale'), 'paused', false, 'createdBy', 'console:1',
              'createdAt', '2026-11-25T00:00:00.000Z')
     FROM generate_series(2, 3000) AS n`,
  );
  await writer.db.pool.query(`SELECT setval('rule_numbers', 3000)`);

  const reader = await open();
  const store = await PgRulesRepository.open(reader.db, { logger: silent, rulesPerPage: 1 });
  const sink = new RecordingSink('console', 10);
  const journal = await DeliveryJournal.open(join(h.dataDir, 'index-load-deliveries.jsonl'), { fsync: false });
  const dispatcher = new Dispatcher({ journal, sinks: new Map([['console', sink]]), logger: silent });
  const market = await FileMarketHistory.open(join(h.dataDir, 'index-load-market.jsonl'), { logger: silent });
  const alerts = createAlerts({
    platform: h.platform,
    market,
    rules: store,
    deliveries: journal,
    queue: dispatcher,
    currencies: h.engine.currencies,
    links: new Links(devnetLinks(h.devnet), h.devnet.networks),
    logger: silent,
    marketplaceContracts: Object.fromEntries(h.devnet.info().networks.map((n) => [n.name, [n.marketplaceContract]])),
    replanDelayMs: 20,
    flushDelayMs: 5,
  });
  try {
    let loaded = false;
    const starting = alerts.start().then(() => {
      loaded = true;
    });
    // Once r1's page is behind the reader: pause it, and add a rule for another chat.
    await new Promise((resolve) => setTimeout(resolve, 200));
    await writer.rules.updateRule('r1', (r) => ({ ...r, paused: true }));
    const added = await writer.rules.addRule(rule('added'), 50);
    expect(added?.id).toBe('r3001');
    expect(loaded).toBe(false);
    await starting;
    await eventually(() => alerts.status().streams.some((s) => s.network === 'devnet' && s.events === 'connected'));

    const mined = await h.devnet.mine('devnet', [{ kind: 'sale', collection: moonCats.address }]);
    expect(mined.txnHashes).toHaveLength(1);
    await eventually(() => sink.sent.some((m) => m.chatId === 'added'));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(sink.sent.map((m) => m.chatId)).toEqual(['added']);
  } finally {
    await alerts.stop();
    await dispatcher.stop();
    await journal.close();
    await market.close();
    for (const shared of processes) await shared.close();
  }
}, 120_000);
