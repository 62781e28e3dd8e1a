import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Alerts, createAlerts } from '../../src/alerts/index.ts';
import type { MarketContext } from '../../src/bot/command.ts';
import type { CommandEngine } from '../../src/bot/engine.ts';
import { RarityIndex } from '../../src/bot/rarity.ts';
import type { Reply } from '../../src/core/reply.ts';
import { Dispatcher } from '../../src/delivery/dispatcher.ts';
import type { DevnetCollectionInfo } from '../../src/devnet/index.ts';
import { formatShare, formatUsd } from '../../src/market/format.ts';
import { nextPage } from '../../src/market/paging.ts';
import type { CollectibleOrder, CollectiblesFilter } from '../../src/platform/types.ts';
import { DeliveryJournal } from '../../src/store/files/journal/journal.ts';
import { FileMarketHistory } from '../../src/store/files/market-history.ts';
import { ADMIN, CONSOLE, type Harness, startHarness } from '../helpers/bot-harness.ts';
import { collectionNamed } from '../helpers/devnet-data.ts';
import { RecordingSink } from '../helpers/recording-sink.ts';
import { marketplacesOf, streamsFollow } from '../helpers/streams.ts';

/*
 * Issue 15, market context: /collection from the platform and from what the bot recorded, sale and
 * listing alerts set against the floor and the token's last sale, rarity in /token and /traits.
 * Everything runs through the real engine, pipeline and files against the local platform.
 */

const DAY = 24 * 60 * 60 * 1000;
const logger = pino({ level: 'silent' });

let h: Harness;
let moonCats: DevnetCollectionInfo;
let rescue: DevnetCollectionInfo;

beforeAll(async () => {
  h = await startHarness({ blockIntervalMs: 0 });
  moonCats = collectionNamed(h.devnet, 'Moon Cats');
  rescue = collectionNamed(h.devnet, 'Moon Cats Rescue');
});
afterAll(async () => {
  await h?.close();
});

/** An engine as the bot wires it, with the market context given. */
function engineWith(market: MarketContext): CommandEngine {
  return h.engineWith({
    logger,
    market,
    userLimit: { capacity: 1_000, refillPerSecond: 1_000 },
    chatLimit: { capacity: 1_000, refillPerSecond: 1_000 },
  });
}

async function run(engine: CommandEngine, line: string): Promise<Reply> {
  const reply = await engine.runLine(line, CONSOLE, ADMIN);
  if (!reply) throw new Error(`not a command: ${line}`);
  return reply;
}

function field(reply: Reply, name: string): string | undefined {
  const value = reply.fields?.find((f) => f.name === name)?.value;
  return value === undefined ? undefined : typeof value === 'string' ? value : JSON.stringify(value);
}

/** Every collectible of a collection that the filter selects, read page by page from the platform. */
async function everything(address: string, filter: CollectiblesFilter): Promise<CollectibleOrder[]> {
  const out: CollectibleOrder[] = [];
  let page: number | undefined;
  for (let more = true; more; ) {
    const result = await h.platform.marketplace.listCollectibles({
      network: 'devnet',
      side: 'listing',
      contractAddress: address,
      filter,
      page: page === undefined ? { pageSize: 100 } : { page, pageSize: 100 },
    });
    out.push(...result.collectibles);
    more = result.page.more === true;
    page = nextPage(result.page, page);
  }
  return out;
}

/** The cheapest listing of a collection in USD, with its token. */
async function floorOf(address: string): Promise<{ usd: number; tokenId: string }> {
  const listed = (await everything(address, { includeEmpty: false }))
    .map((c) => ({ usd: c.order?.priceUSD ?? 0, tokenId: c.metadata.tokenId }))
    .filter((c) => c.usd > 0)
    .sort((a, b) => a.usd - b.usd);
  if (!listed[0]) throw new Error('nothing listed');
  return listed[0];
}

describe('/collection', () => {
  it('GIVEN a week recorded WHEN asked THEN it shows the floor, listed, holders and supply from the platform, and sales, volume and floor change over 24 h and 7 days from the record', async () => {
    const now = Date.now();
    const floor = await floorOf(moonCats.address);
    const file = join(h.dataDir, 'recorded-week.jsonl');
    const line = (value: object) => `${JSON.stringify(value)}\n`;
    const c = moonCats.address;
    await writeFile(
      file,
      [
        line({ k: 'history', v: 1, since: now - 9 * DAY }),
        line({ k: 'floor', n: 'devnet', c, at: now - 8 * DAY, usd: floor.usd / 2 }),
        line({
          k: 'sale',
          n: 'devnet',
          c,
          at: now - 3 * DAY,
          tx: '0xa1',
          t: [
            ['1', '1', 1000],
            ['2', '1', null],
          ],
        }),
        line({ k: 'floor', n: 'devnet', c, at: now - 25 * 60 * 60 * 1000, usd: floor.usd * 2 }),
        line({ k: 'sale', n: 'devnet', c, at: now - 2 * 60 * 60 * 1000, tx: '0xa2', t: [['3', '1', 500]] }),
      ].join(''),
    );
    const history = await FileMarketHistory.open(file, { logger });
    try {
      const engine = engineWith({ history });
      const reply = await run(engine, `/collection devnet:${moonCats.address}`);
      expect(reply.title).toBe('Moon Cats');
      expect(field(reply, 'Floor')).toContain(`(${formatUsd(floor.usd)})`);
      const listed = await everything(moonCats.address, { includeEmpty: false });
      expect(field(reply, 'Listed')).toBe(listed.length.toLocaleString('en-US'));
      const holders = /([\d,]+) holders? in all/.exec(
        h.text(await run(engine, `/holders devnet:${moonCats.address}`)),
      )?.[1];
      expect(field(reply, 'Holders')).toBe(holders);
      expect(field(reply, 'Supply')).toBe(moonCats.tokenCount.toLocaleString('en-US'));
      expect(field(reply, 'Last 24 hours')).toBe('1 sale · $500.00 volume · floor -50%');
      expect(field(reply, 'Last 7 days')).toBe('3 sales · $1,500.00 volume (2 of them priced) · floor +100%');
      expect(h.text(reply)).not.toContain('recording began');
      expect(reply.thumbnail).toMatch(/\/logo\.svg$/);
      // The floor it looked up is recorded: the next answers compare with it.
      expect((await history.activity('devnet', c, 60_000, Date.now() + 60_000)).floorThen?.usd).toBe(floor.usd);
    } finally {
      await history.close();
    }
  });

  it('GIVEN a bot that began recording today THEN the figures are named by since when, not as a day or a week; GIVEN no record at all THEN it says so', async () => {
    const history = await FileMarketHistory.open(join(h.dataDir, 'new-history.jsonl'), { logger });
    try {
      const reply = await run(engineWith({ history }), `/collection devnet:${rescue.address}`);
      const began = new Date((await history.since()) ?? 0).toISOString().slice(11, 16);
      expect(field(reply, 'Last 24 hours')).toBeUndefined();
      expect(field(reply, 'Last 7 days')).toBeUndefined();
      expect(field(reply, `Since ${began} UTC today`)).toBe('0 sales');
      expect(h.text(reply)).toContain(`recording began at ${began} UTC today: sales before then are not counted`);
    } finally {
      await history.close();
    }
    const bare = await run(engineWith({}), `/collection devnet:${rescue.address}`);
    expect(h.text(bare)).toContain('not recorded');
    expect(field(bare, 'Last 24 hours')).toBeUndefined();
  });

  it('GIVEN a floor sample the alerts recorded a minute ago WHEN /collection is asked twice THEN both answers give the change from that first sample: the lookup in between does not replace it', async () => {
    const now = Date.now();
    const floor = await floorOf(moonCats.address);
    const history = await FileMarketHistory.open(join(h.dataDir, 'replaced-first.jsonl'), { logger });
    try {
      // The floor was half as high a minute ago, as the alert pipeline saw it.
      await history.floor('devnet', moonCats.address, floor.usd / 2, now - 60_000);
      const engine = engineWith({ history });
      const began = new Date((await history.since()) ?? 0).toISOString().slice(11, 16);
      const first = await run(engine, `/collection devnet:${moonCats.address}`);
      expect(field(first, `Since ${began} UTC today`)).toBe('0 sales · floor +100%');
      // The first answer recorded the floor it looked up, within the sampling interval of that sample.
      const second = await run(engine, `/collection devnet:${moonCats.address}`);
      expect(field(second, `Since ${began} UTC today`)).toBe('0 sales · floor +100%');
      expect(h.text(second)).toContain(
        `since then: floor change from the first floor recorded, at ${new Date(now - 60_000).toISOString().slice(11, 16)} UTC today`,
      );
    } finally {
      await history.close();
    }
  });

  it('GIVEN no floor recorded before WHEN /collection is asked THEN it says there is not enough history for a floor change, and the next answer has one', async () => {
    const history = await FileMarketHistory.open(join(h.dataDir, 'no-floor-yet.jsonl'), { logger });
    try {
      const engine = engineWith({ history });
      const began = new Date((await history.since()) ?? 0).toISOString().slice(11, 16);
      const first = await run(engine, `/collection devnet:${moonCats.address}`);
      expect(field(first, `Since ${began} UTC today`)).toBe('0 sales');
      expect(h.text(first)).toContain('floor change: not enough history yet');
      const second = await run(engine, `/collection devnet:${moonCats.address}`);
      expect(field(second, `Since ${began} UTC today`)).toBe('0 sales · floor 0%');
      expect(h.text(second)).not.toContain('not enough history');
    } finally {
      await history.close();
    }
  });

  it('GIVEN a record of three days THEN the last 24 hours are whole, and the week is named by when recording began', async () => {
    const now = Date.now();
    const since = now - 3 * DAY;
    const file = join(h.dataDir, 'three-days.jsonl');
    const line = (value: object) => `${JSON.stringify(value)}\n`;
    const c = rescue.address;
    await writeFile(
      file,
      [
        line({ k: 'history', v: 1, since }),
        line({ k: 'sale', n: 'devnet', c, at: now - 2 * DAY, tx: '0xb1', t: [['1', '1', 300]] }),
        line({ k: 'sale', n: 'devnet', c, at: now - 60 * 60 * 1000, tx: '0xb2', t: [['2', '1', 200]] }),
      ].join(''),
    );
    const history = await FileMarketHistory.open(file, { logger });
    try {
      const reply = await run(engineWith({ history }), `/collection devnet:${rescue.address}`);
      const began = new Date(since).toISOString();
      const name = `Since ${began.slice(11, 16)} UTC on ${began.slice(0, 10)}`;
      expect(field(reply, 'Last 24 hours')).toBe('1 sale · $200.00 volume');
      expect(field(reply, 'Last 7 days')).toBeUndefined();
      expect(field(reply, name)).toBe('2 sales · $500.00 volume');
      expect(reply.fields?.map((f) => f.name)).toEqual(['Floor', 'Listed', 'Holders', 'Supply', 'Last 24 hours', name]);
    } finally {
      await history.close();
    }
  });
});

describe('rarity in /token and /traits', () => {
  it('GIVEN a collection not counted yet THEN /token answers at once without rarity, and once counted shows the rank and each trait share as the platform counts them', async () => {
    const rarity = new RarityIndex(h.platform);
    const engine = engineWith({ rarity });
    const tokenId = (await floorOf(moonCats.address)).tokenId;
    const first = await run(engine, `/token devnet:${moonCats.address} ${tokenId}`);
    expect(field(first, 'Rarity rank')).toBe('computing, ask again in a minute');
    expect(field(first, 'Fur')).not.toContain('%');

    expect((await rarity.settled('devnet', moonCats.address)).status).toBe('ready');
    const second = await run(engine, `/token devnet:${moonCats.address} ${tokenId}`);
    const rank = /^([\d,]+) of ([\d,]+)$/.exec(field(second, 'Rarity rank') ?? '');
    expect(rank?.[2]).toBe(moonCats.tokenCount.toLocaleString('en-US'));
    expect(Number(rank?.[1]?.replace(/,/g, ''))).toBeGreaterThanOrEqual(1);
    expect(Number(rank?.[1]?.replace(/,/g, ''))).toBeLessThanOrEqual(moonCats.tokenCount);

    const token = await h.platform.marketplace.getCollectible({
      network: 'devnet',
      contractAddress: moonCats.address,
      tokenId,
    });
    const fur = String(token.attributes.find((a) => a.trait_type === 'Fur')?.value);
    const withFur = await everything(moonCats.address, {
      includeEmpty: true,
      properties: [{ name: 'Fur', values: [fur] }],
    });
    const share = formatShare(withFur.length / moonCats.tokenCount);
    expect(field(second, 'Fur')).toBe(`${fur} · ${share}`);

    const traits = await run(engine, `/traits devnet:${moonCats.address}`);
    expect(field(traits, 'Fur')).toContain(`${fur} ${share}`);
    expect(h.text(traits)).toContain(`Shares of the ${moonCats.tokenCount.toLocaleString('en-US')} tokens`);
  });

  it("GIVEN Pixel Potions, whose tokens have a trait named Rarity WHEN /token shows one THEN the bot's rank and the trait are two lines with different labels", async () => {
    const potions = collectionNamed(h.devnet, 'Pixel Potions');
    const rarity = new RarityIndex(h.platform);
    const engine = engineWith({ rarity });
    const pending = await run(engine, `/token devnet:${potions.address} 1`);
    expect(field(pending, 'Rarity rank')).toBe('computing, ask again in a minute');
    expect((await rarity.settled('devnet', potions.address)).status).toBe('ready');
    const reply = await run(engine, `/token devnet:${potions.address} 1`);
    const token = await h.platform.marketplace.getCollectible({
      network: 'devnet',
      contractAddress: potions.address,
      tokenId: '1',
    });
    const trait = String(token.attributes.find((a) => a.trait_type === 'Rarity')?.value);
    expect(field(reply, 'Rarity rank')).toMatch(/^\d+ of \d+$/);
    expect(field(reply, 'Rarity')).toMatch(new RegExp(`^${trait}( · |$)`));
    const lines = h.text(reply).split('\n');
    expect(lines.filter((l) => l.startsWith('Rarity rank: '))).toHaveLength(1);
    expect(lines.filter((l) => l.startsWith('Rarity: '))).toEqual([expect.stringContaining(trait)]);
  });

  it('GIVEN a collection larger than the bound THEN rarity is not available, and says why', async () => {
    const rarity = new RarityIndex(h.platform, { maxTokens: 100 });
    const engine = engineWith({ rarity });
    const traits = await run(engine, `/traits devnet:${moonCats.address}`);
    expect(h.text(traits)).toContain('Shares of each value: computing, ask again in a minute.');
    expect((await rarity.settled('devnet', moonCats.address)).status).toBe('too_many_tokens');
    const reply = await run(engine, `/token devnet:${moonCats.address} 1`);
    expect(field(reply, 'Rarity rank')).toBe('not available: the collection has more than 100 tokens');
  });
});

describe('alerts in market context, and what the pipeline records', () => {
  let history: FileMarketHistory;
  let journal: DeliveryJournal;
  let dispatcher: Dispatcher;
  let pipeline: Alerts;
  let engine: CommandEngine;
  const sink = new RecordingSink('console', 10);
  /** The Moon Cat the first test sells. */
  let soldToken = '';

  beforeAll(async () => {
    history = await FileMarketHistory.open(join(h.dataDir, 'market-history.jsonl'), { logger });
    engine = engineWith({ history });
    journal = await DeliveryJournal.open(join(h.dataDir, 'deliveries.jsonl'), { fsync: false });
    dispatcher = new Dispatcher({ journal, sinks: new Map([['console', sink]]), logger, retryDelayMs: 20 });
    pipeline = createAlerts({
      platform: h.platform,
      rules: h.store,
      deliveries: journal,
      queue: dispatcher,
      currencies: engine.currencies,
      logger,
      marketplaceContracts: marketplacesOf(h.devnet),
      replanDelayMs: 20,
      flushDelayMs: 5,
      market: history,
      marketFlushMs: 60_000,
    });
    await pipeline.start();
  });
  afterAll(async () => {
    await pipeline?.stop();
    await dispatcher?.stop();
    await journal?.close();
    await history?.close();
  });

  async function planned(): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (!streamsFollow(pipeline.status().streams, h.store.rules, marketplacesOf(h.devnet))) {
      if (Date.now() > deadline) throw new Error('streams not planned');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  async function alertsAfter(before: number, count: number): Promise<Reply[]> {
    await sink.until(() => sink.alerts(CONSOLE.id).length >= before + count);
    await pipeline.settled();
    await dispatcher.drained();
    await pipeline.settled();
    return sink.alerts(CONSOLE.id).slice(before);
  }

  it('GIVEN no watch rule at all WHEN a sale is mined THEN the marketplace stream shows it: it is recorded with its price, and alerts nobody', async () => {
    expect(h.store.rules).toEqual([]);
    await planned();
    expect(pipeline.status().streams.find((s) => s.network === 'devnet')).toMatchObject({
      events: 'connected',
      contracts: 1,
    });
    const gardens = collectionNamed(h.devnet, 'Glitch Gardens');
    const sold = await floorOf(gardens.address);
    const before = { alerts: sink.alerts(CONSOLE.id).length, matched: pipeline.status().counters.matched };
    await h.devnet.mine('devnet', [{ kind: 'sale', collection: gardens.address, tokenId: sold.tokenId }]);
    const recorded = () => history.activity('devnet', gardens.address, DAY, Date.now() + 60_000);
    const deadline = Date.now() + 10_000;
    while ((await recorded()).sales === 0 && Date.now() < deadline) {
      await pipeline.settled();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(await recorded()).toMatchObject({ sales: 1, priced: 1 });
    expect((await recorded()).volumeUsd).toBeCloseTo(sold.usd, 2);
    const reply = await run(engine, `/collection devnet:${gardens.address}`);
    expect(h.text(reply)).toMatch(/1 sale · \$[\d,.]+ volume/);
    await dispatcher.drained();
    expect(pipeline.status().counters.matched).toBe(before.matched);
    expect(sink.alerts(CONSOLE.id)).toHaveLength(before.alerts);
  });

  it('GIVEN sales of a watched and an unwatched collection THEN the alert compares the price with the floor and both sales are recorded with their price', async () => {
    expect((await run(engine, `/watch add ${moonCats.address} sale,listing`)).title).toBe('Watching');
    await planned();
    const cat = await floorOf(moonCats.address);
    soldToken = cat.tokenId;
    const rescued = await floorOf(rescue.address);
    const before = sink.alerts(CONSOLE.id).length;
    await h.devnet.mine('devnet', [
      { kind: 'sale', collection: moonCats.address, tokenId: cat.tokenId },
      { kind: 'sale', collection: rescue.address, tokenId: rescued.tokenId },
    ]);
    const [sold, ...others] = await alertsAfter(before, 1);
    expect(others).toEqual([]);
    // The cheapest listing was bought: the floor left is the next one.
    expect(field(sold ?? {}, 'Floor')).toMatch(/^\$[\d,.]+ · (\d+% below floor|at floor)$/);
    expect(field(sold ?? {}, 'Last sale')).toBeUndefined();

    const cats = await history.activity('devnet', moonCats.address, DAY, Date.now() + 60_000);
    expect(cats).toMatchObject({ sales: 1, priced: 1 });
    expect(cats.volumeUsd).toBeCloseTo(cat.usd, 2);
    const unwatched = await history.activity('devnet', rescue.address, DAY, Date.now() + 60_000);
    expect(unwatched).toMatchObject({ sales: 1, priced: 1 });
    expect(unwatched.volumeUsd).toBeCloseTo(rescued.usd, 2);
    // The floor enrichment looked up is a sample of the record.
    expect((await history.activity('devnet', moonCats.address, 1, Date.now() + 60_000)).floorThen?.usd).toBeGreaterThan(
      0,
    );
  });

  it('GIVEN a token sold before WHEN it is listed far above the floor and sold again THEN the listing says how far, and the sale shows the last sale', async () => {
    const tokenId = soldToken;
    const sold = await history.lastSale('devnet', moonCats.address, tokenId);
    expect(sold?.usd).toBeGreaterThan(0);
    const floor = await floorOf(moonCats.address);
    const dev = h.devnet.info().networks[0]?.currencies.find((c) => c.symbol === 'DEV')?.usd ?? 0;
    const before = sink.alerts(CONSOLE.id).length;
    await h.devnet.mine('devnet', [
      {
        kind: 'listing',
        collection: moonCats.address,
        tokenId,
        price: ((floor.usd * 3) / dev).toFixed(4),
        currency: 'DEV',
      },
    ]);
    await h.devnet.mine('devnet', [{ kind: 'sale', collection: moonCats.address, tokenId }]);
    const [listing, sale] = await alertsAfter(before, 2);
    expect(listing?.title).toMatch(/^Listed: /);
    expect(field(listing ?? {}, 'Floor')).toMatch(/^\$[\d,.]+ · \d+(\.\d)?× floor$/);
    expect(sale?.title).toMatch(/^Sold: /);
    expect(field(sale ?? {}, 'Last sale')).toBe(`${formatUsd(sold?.usd)}, moments earlier`);
    expect((await history.activity('devnet', moonCats.address, DAY, Date.now() + 60_000)).sales).toBe(2);
  });

  it('GIVEN a recorded sale WHEN its block is reorganised away THEN the record forgets it', async () => {
    const count = async () => {
      await pipeline.settled();
      return (await history.activity('devnet', moonCats.address, DAY, Date.now() + 60_000)).sales;
    };
    const before = sink.alerts(CONSOLE.id).length;
    await h.devnet.mine('devnet', [{ kind: 'sale', collection: moonCats.address }]);
    await alertsAfter(before, 1);
    expect(await count()).toBe(3);
    const edits = sink.edits.length;
    await h.devnet.reorg('devnet', 1);
    await sink.until(() => sink.edits.length > edits);
    expect(await count()).toBe(2);
  });

  it('GIVEN the floor listing just sold WHEN another token sells seconds later THEN the floor of that alert is the next listing, not the sold one', async () => {
    const listed = async () =>
      (await everything(moonCats.address, { includeEmpty: false }))
        .map((c) => ({ usd: c.order?.priceUSD ?? 0, tokenId: c.metadata.tokenId }))
        .filter((c) => c.usd > 0)
        .sort((a, b) => a.usd - b.usd);
    const [cheapest] = await listed();
    if (!cheapest) throw new Error('nothing listed');
    let before = sink.alerts(CONSOLE.id).length;
    await h.devnet.mine('devnet', [{ kind: 'sale', collection: moonCats.address, tokenId: cheapest.tokenId }]);
    await alertsAfter(before, 1);
    const left = await listed();
    const [next] = left;
    const dear = left.at(-1);
    if (!next || !dear || dear.tokenId === next.tokenId) throw new Error('too few listings');
    before = sink.alerts(CONSOLE.id).length;
    await h.devnet.mine('devnet', [{ kind: 'sale', collection: moonCats.address, tokenId: dear.tokenId }]);
    const [sold] = await alertsAfter(before, 1);
    const shown = Number(/^\$([\d,.]+)/.exec(field(sold ?? {}, 'Floor') ?? '')?.[1]?.replace(/,/g, ''));
    expect(shown).toBeCloseTo(next.usd, 1);
    expect(shown).not.toBeCloseTo(cheapest.usd, 1);
  });
});

describe('marketplace streams and ingestion', () => {
  it('GIVEN a process that does not ingest a network THEN it opens no marketplace stream there; WHEN it becomes the ingesting one THEN it does', async () => {
    let leads = false;
    const journal = await DeliveryJournal.open(join(h.dataDir, 'ingest-deliveries.jsonl'), { fsync: false });
    const dispatcher = new Dispatcher({ journal, sinks: new Map(), logger });
    const market = await FileMarketHistory.open(join(h.dataDir, 'ingest-market-history.jsonl'), { logger });
    const pipeline = createAlerts({
      platform: h.platform,
      market,
      rules: h.store,
      deliveries: journal,
      queue: dispatcher,
      ingests: (network) => leads && network === 'devnet',
      currencies: h.engine.currencies,
      logger,
      marketplaceContracts: marketplacesOf(h.devnet),
      replanDelayMs: 20,
    });
    try {
      await pipeline.start();
      expect(pipeline.status().streams).toEqual([]);
      leads = true;
      await pipeline.replan();
      // The rules earlier tests left, and the marketplace: on the network it leads only.
      expect(pipeline.status().streams.map((s) => s.network)).toEqual(['devnet']);
      const devnetMarket = { devnet: marketplacesOf(h.devnet).devnet ?? [] };
      expect(streamsFollow(pipeline.status().streams, h.store.rules, devnetMarket)).toBe(true);
      leads = false;
      await pipeline.replan();
      expect(pipeline.status().streams.map((s) => [s.network, s.events, s.contracts])).toEqual([['devnet', 'idle', 0]]);
    } finally {
      await pipeline.stop();
      await dispatcher.stop();
      await journal.close();
      await market.close();
    }
  });
});
