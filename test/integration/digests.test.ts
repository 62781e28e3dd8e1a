import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { DigestSettings } from '../../src/core/settings.ts';
import { type ChartSeries, chartSvg, chartsInThread, renderSvgPng } from '../../src/digests/chart.ts';
import { ChartPool } from '../../src/digests/chart-pool.ts';
import { DigestService, type DigestServiceOptions } from '../../src/digests/digest-service.ts';
import { DigestScheduler } from '../../src/digests/scheduler.ts';
import { lastDue, zonedDay, zonedMoment, zonedToInstant } from '../../src/digests/zoned-time.ts';
import { formatUsd } from '../../src/market/format.ts';
import { FileMarketHistory } from '../../src/store/files/market-history.ts';
import { type AlertHarness, startAlertHarness } from '../helpers/alert-harness.ts';
import { ADMIN, CONSOLE, GROUP } from '../helpers/bot-harness.ts';
import { overlappingTexts, svgTexts } from '../helpers/svg-text.ts';

const silent = pino({ level: 'silent' });
let h: AlertHarness;
let service: DigestService;
let charts: ChartPool;

function digestOf(chatKey: string): DigestSettings {
  const digest = h.store.chat(chatKey).digest;
  if (!digest) throw new Error(`no digest for ${chatKey}`);
  return digest;
}

/** A digest service as the bot wires it, on the harness's platform, store, journal and dispatcher. */
function digestService(parts: Pick<DigestServiceOptions, 'charts'> & Partial<DigestServiceOptions>): DigestService {
  return new DigestService({
    platform: h.platform,
    store: h.store,
    journal: h.journal,
    dispatcher: h.dispatcher,
    currencies: h.engine.currencies,
    logger: silent,
    projectId: h.devnet.projectId,
    ...parts,
  });
}

beforeAll(async () => {
  h = await startAlertHarness();
  charts = new ChartPool({ size: 1 });
  service = digestService({
    charts,
  });
});
afterAll(async () => {
  await charts?.close();
  await h?.close();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('digest schedules', () => {
  it('turns a wall-clock time in a zone into the right instant, across daylight-saving changes', () => {
    expect(zonedToInstant({ year: 2026, month: 11, day: 22 }, 9, 0, 'Asia/Tokyo').toISOString()).toBe(
      '2026-11-22T00:00:00.000Z',
    );
    // New York leaves daylight-saving time on 2026-11-01: 09:00 is 13:00 UTC before and 14:00 UTC after.
    expect(zonedToInstant({ year: 2026, month: 10, day: 31 }, 9, 0, 'America/New_York').toISOString()).toBe(
      '2026-10-31T13:00:00.000Z',
    );
    expect(zonedToInstant({ year: 2026, month: 11, day: 2 }, 9, 0, 'America/New_York').toISOString()).toBe(
      '2026-11-02T14:00:00.000Z',
    );
    expect(lastDue(new Date('2026-11-21T23:59:00Z'), 9, 0, 'Asia/Tokyo').toISOString()).toBe(
      '2026-11-21T00:00:00.000Z',
    );
  });

  it('names an instant in the zone of a schedule, with UTC in brackets (and its date when it differs)', () => {
    expect(zonedMoment(new Date('2026-11-22T08:00:00Z'), 'Europe/Paris')).toBe(
      '2026-11-22 09:00 Europe/Paris (08:00 UTC)',
    );
    expect(zonedMoment(new Date('2026-11-21T20:00:00Z'), 'Pacific/Auckland')).toBe(
      '2026-11-22 09:00 Pacific/Auckland (20:00 UTC on 2026-11-21)',
    );
    expect(zonedMoment(new Date('2026-11-22T09:00:00Z'), 'UTC')).toBe('2026-11-22 09:00 UTC');
  });

  it('GIVEN a digest at 09:00 Asia/Tokyo THEN it fires at 00:00 UTC', async () => {
    // Real timers while the store writes: it coalesces writes behind a timer.
    await h.run('/digest set 09:00 Asia/Tokyo', { ...GROUP, id: '-700' }, ADMIN);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    vi.setSystemTime(new Date('2026-11-21T23:58:00Z'));
    const fired: Array<{ at: string; due: string; chats: string[] }> = [];
    const scheduler = new DigestScheduler({
      store: h.store,
      logger: silent,
      run: async (chats, due) => {
        fired.push({ at: new Date().toISOString(), due: due.toISOString(), chats });
      },
    });
    scheduler.rebuild();
    await vi.advanceTimersByTimeAsync(3 * 60_000);
    await scheduler.stop();
    vi.useRealTimers();
    expect(fired).toEqual([
      { at: expect.stringMatching(/^2026-11-22T00:00:0/), due: '2026-11-22T00:00:00.000Z', chats: ['telegram:-700'] },
    ]);
    await h.run('/digest off', { ...GROUP, id: '-700' }, ADMIN);
  });

  it('GIVEN a digest at 09:00 New York across the end of daylight-saving time THEN it keeps 09:00 local', async () => {
    await h.run('/digest set 09:00 America/New_York', { ...GROUP, id: '-701' }, ADMIN);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    vi.setSystemTime(new Date('2026-10-31T12:00:00Z'));
    const fired: string[] = [];
    const scheduler = new DigestScheduler({
      store: h.store,
      logger: silent,
      run: async (_chats, due) => {
        fired.push(due.toISOString());
      },
    });
    scheduler.rebuild();
    await vi.advanceTimersByTimeAsync(3 * 86_400_000);
    await scheduler.stop();
    vi.useRealTimers();
    expect(fired).toEqual(['2026-10-31T13:00:00.000Z', '2026-11-01T14:00:00.000Z', '2026-11-02T14:00:00.000Z']);
    await h.run('/digest off', { ...GROUP, id: '-701' }, ADMIN);
  });

  it('an invalid time zone gets a clear answer and schedules nothing', async () => {
    const text = h.text(await h.run('/digest set 09:00 Mars/Olympus_Mons', { ...GROUP, id: '-702' }, ADMIN));
    expect(text).toContain('"Mars/Olympus_Mons" is not a time zone: use an IANA name such as Europe/Paris');
    expect(h.store.chat('telegram:-702').digest).toBeUndefined();
  });
});

describe('digest content and posting', () => {
  it('matches the platform data, with a chart, and is posted once for a due time', async () => {
    const moonCats = h.devnet.collections.devnet?.find((c) => c.name === 'Moon Cats');
    const gardens = h.devnet.collections.devnet?.find((c) => c.name === 'Glitch Gardens');
    expect((await h.run(`/digest set 09:00 Europe/Paris 7 ${moonCats?.address}, ${gardens?.address}`)).title).toBe(
      'Digest scheduled',
    );
    const due = lastDue(new Date(), 9, 0, 'Europe/Paris');
    const { reply } = await service.build('console:terminal', digestOf('console:terminal'), due);

    const listings = await h.platform.marketplace.listCollectibles({
      network: 'devnet',
      side: 'listing',
      contractAddress: moonCats?.address ?? '',
      filter: { includeEmpty: false },
      page: { pageSize: 250 },
    });
    const floorUsd = Math.min(...listings.collectibles.map((c) => c.order?.priceUSD ?? Number.POSITIVE_INFINITY));
    const moonField = reply.fields?.find((f) => f.name === 'Moon Cats (devnet)');
    expect(h.text({ lines: [moonField?.value ?? ''] })).toContain(
      `($${floorUsd.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })})`,
    );
    const wallets = await h.platform.analytics.walletsTxnSentTotal({
      projectId: h.devnet.projectId,
      startDate: new Date(due.getTime() - 6 * 86_400_000).toISOString().slice(0, 10),
      endDate: due.toISOString().slice(0, 10),
      collections: [moonCats?.address ?? '', gardens?.address ?? ''].sort(),
    });
    expect(h.text({ lines: [reply.fields?.[0]?.value ?? ''] })).toContain(
      `latest ${Math.round(wallets.at(-1)?.value ?? 0)}`,
    );

    const chart = reply.attachments?.[0];
    expect(chart?.contentType).toBe('image/png');
    const png = Buffer.from(chart?.data ?? new Uint8Array());
    expect(png.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
    expect(png.readUInt32BE(16)).toBe(960);
    expect(png.readUInt32BE(20)).toBeGreaterThan(400);
    expect(png.length).toBeGreaterThan(10_000);
    expect(png.length).toBeLessThan(1_000_000);

    const before = h.console.sent.length;
    await service.run(['console:terminal'], due);
    await service.run(['console:terminal'], due);
    await h.dispatcher.drained();
    const posted = h.console.sent.slice(before).flatMap((m) => m.replies);
    expect(posted.filter((r) => r.title?.startsWith('Daily digest'))).toHaveLength(1);
    expect(
      Buffer.from(posted[0]?.attachments?.[0]?.data ?? [])
        .subarray(1, 4)
        .toString(),
    ).toBe('PNG');
    expect(digestOf('console:terminal').lastPostedFor).toBe(due.toISOString());
  });

  it('GIVEN alerts delivered to a chat THEN its digest counts them by their recorded kind and names the biggest sale by its recorded USD value', async () => {
    const chat = { platform: 'telegram', chatId: '-703' } as const;
    await h.run('/digest set 09:00 UTC 1', { ...GROUP, id: '-703' }, ADMIN);
    const alert = (n: number, kind: 'sale' | 'listing', title: string, usd?: number) => ({
      eventId: `devnet:0x${n.toString(16).padStart(64, '0')}:0xc0:${kind}@0xb${n}`,
      destination: chat,
      network: 'devnet',
      txnHash: `0x${n.toString(16).padStart(64, '0')}`,
      blockNumber: n,
      kind,
      ...(usd === undefined ? {} : { usd }),
      // The rendered text says nothing of the price: the summary must come from the fields.
      payload: { title, lines: ['no price in the text'] },
    });
    await h.journal.record([
      alert(9101, 'sale', 'Moon Cat #1', 120.5),
      alert(9102, 'sale', 'Moon Cat #2', 845.25),
      alert(9103, 'sale', 'Moon Cat #3'),
      alert(9104, 'listing', 'Moon Cat #4', 9_999),
    ]);
    const due = new Date(Date.now() + 60_000);
    const { reply } = await service.build('telegram:-703', digestOf('telegram:-703'), due);
    const summary = h.text({ lines: [reply.fields?.find((f) => f.name === 'Alerts in this chat')?.value ?? ''] });
    expect(summary).toContain('3 sales, 1 listing');
    expect(summary).toContain('biggest sale: Moon Cat #2 ($845.25)');
    await h.run('/digest off', { ...GROUP, id: '-703' }, ADMIN);
  });

  it('a digest missed while the bot was down is posted once after a restart', async () => {
    const chat = { ...CONSOLE, id: 'restart-digest' };
    const now = new Date();
    const due = lastDue(now, 9, 0, 'UTC');
    await h.store.updateChat(`console:${chat.id}`, (s) => {
      s.digest = {
        hour: 9,
        minute: 0,
        timeZone: 'UTC',
        days: 1,
        collections: [],
        setAt: new Date(due.getTime() - 86_400_000).toISOString(),
      };
    });
    const before = h.console.alerts(chat.id).length;
    const start = async () => {
      const scheduler = new DigestScheduler({
        store: h.store,
        logger: silent,
        run: (chats, dueAt) => service.run(chats, dueAt),
        // One hour after the due time: within the catch-up window.
        now: () => new Date(due.getTime() + 3_600_000),
      });
      await scheduler.start();
      await scheduler.stop();
    };
    await start();
    await start();
    await h.dispatcher.drained();
    expect(h.console.alerts(chat.id).length - before).toBe(1);
  });

  it("GIVEN the chart worker dies drawing one chat's chart THEN that digest is posted without it and says so, the others with theirs", async () => {
    // The crashing worker dies on the chart of a 3-day digest.
    const crashing = new ChartPool({
      size: 1,
      workerUrl: new URL('../unit/digests/crashing-chart-worker.ts', import.meta.url),
    });
    const withCrashes = digestService({
      charts: crashing,
    });
    const due = lastDue(new Date(), 9, 0, 'UTC');
    const chats = { 'chart-crash': 3, 'chart-fine': 2 };
    for (const [id, days] of Object.entries(chats)) {
      await h.store.updateChat(`console:${id}`, (s) => {
        s.digest = {
          hour: 9,
          minute: 0,
          timeZone: 'UTC',
          days,
          collections: [],
          setAt: new Date(due.getTime() - 86_400_000).toISOString(),
        };
      });
    }
    try {
      await withCrashes.run(
        Object.keys(chats).map((id) => `console:${id}`),
        due,
      );
      await h.dispatcher.drained();
    } finally {
      await crashing.close();
    }
    const [crashed] = h.console.alerts('chart-crash');
    const [fine] = h.console.alerts('chart-fine');
    expect(crashed?.title).toMatch(/^Daily digest/);
    expect(crashed?.attachments ?? []).toEqual([]);
    expect(h.text(crashed ?? {})).toContain('Chart: unavailable (it could not be drawn).');
    expect(fine?.attachments?.[0]?.contentType).toBe('image/png');
    expect(h.text(fine ?? {})).not.toContain('Chart: unavailable');
  });

  it('gaps and platform errors are stated in the digest', async () => {
    h.devnet.setFaults({ operation: 'WalletsTxnSentTotal', errorRate: 1 });
    try {
      const { reply } = await service.build('console:terminal', digestOf('console:terminal'), new Date());
      expect(h.text(reply)).toMatch(/Wallets that sent transactions: unavailable \(/);
    } finally {
      h.devnet.clearFaults();
    }
  });
});

describe('digest charts of the market', () => {
  it("GIVEN the bot's record of a collection's sales and floors THEN the digest chart adds its floor and sales volume panels, one line per collection", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'floorwatch-digest-market-'));
    const moonCats = h.devnet.collections.devnet?.find((c) => c.name === 'Moon Cats');
    const gardens = h.devnet.collections.devnet?.find((c) => c.name === 'Glitch Gardens');
    if (!moonCats || !gardens) throw new Error('no collections');
    const now = Date.now();
    // Recording for three days, with a sale of Moon Cats yesterday.
    const recorded = [
      { k: 'history', v: 1, since: now - 3 * 86_400_000 },
      {
        k: 'sale',
        n: 'devnet',
        c: moonCats.address,
        at: now - 86_400_000,
        tx: `0x${'ab'.repeat(32)}`,
        t: [['1', '1', 300]],
      },
    ];
    await writeFile(join(dir, 'market-history.jsonl'), `${recorded.map((l) => JSON.stringify(l)).join('\n')}\n`);
    const history = await FileMarketHistory.open(join(dir, 'market-history.jsonl'), { logger: silent });
    await history.floor('devnet', moonCats.address, 110, now - 2 * 86_400_000);
    await history.floor('devnet', moonCats.address, 125, now - 60_000);
    await history.floor('devnet', gardens.address, 40, now - 60_000);
    const drawn: string[] = [];
    const recording = {
      render: async (title: string, series: readonly ChartSeries[]) => {
        drawn.push(chartSvg(title, series));
        return chartsInThread.render(title, series);
      },
    };
    const service = digestService({
      charts: recording,
      market: history,
    });
    const collections = [moonCats, gardens].map((c) => ({ network: 'devnet', address: c.address, name: c.name }));
    const due = new Date();
    const built = await service.build(
      'console:market-chart',
      { hour: 9, minute: 0, timeZone: 'UTC', days: 3, collections, setAt: new Date(now - 86_400_000).toISOString() },
      due,
    );
    await history.close();
    await rm(dir, { recursive: true, force: true });
    const svg = drawn.at(-1) ?? '';
    expect(svg).toContain('Floor (USD)');
    expect(svg).toContain('Sales volume (USD)');
    expect(svg).toContain('● Moon Cats');
    expect(svg).toContain('● Glitch Gardens');
    const png = built.reply.attachments?.[0]?.data;
    if (!png) throw new Error('no chart');
    // Four panels (floor, volume, wallets, conversion): the PNG is taller than the two-panel chart.
    const height = Buffer.from(png).readUInt32BE(20);
    expect(height).toBeGreaterThan(4 * 220);
  });
});

describe('the floor a digest looks up, in its own chart', () => {
  /** The cheapest listing of a collection in USD, read page by page from the platform. */
  async function floorUsdOf(address: string): Promise<number> {
    let floor = Number.POSITIVE_INFINITY;
    let page: number | undefined;
    for (let more = true; more; ) {
      const result = await h.platform.marketplace.listCollectibles({
        network: 'devnet',
        side: 'listing',
        contractAddress: address,
        filter: { includeEmpty: false },
        page: page === undefined ? { pageSize: 250 } : { page, pageSize: 250 },
      });
      for (const c of result.collectibles)
        if (c.order && c.order.priceUSD > 0) floor = Math.min(floor, c.order.priceUSD);
      more = result.page.more === true && result.collectibles.length > 0;
      page = (result.page.page ?? page ?? 0) + 1;
    }
    return floor;
  }

  it('GIVEN no floor recorded before WHEN a digest is built THEN the floor it looked up is recorded first, drawn as a marker with its value on a real axis, and every panel spans the same days', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'floorwatch-digest-floor-'));
    const history = await FileMarketHistory.open(join(dir, 'market-history.jsonl'), { logger: silent });
    const moonCats = h.devnet.collections.devnet?.find((c) => c.name === 'Moon Cats');
    if (!moonCats) throw new Error('no Moon Cats');
    const drawn: Array<{ svg: string; series: readonly ChartSeries[] }> = [];
    const service = digestService({
      charts: {
        render: async (title, series) => {
          drawn.push({ svg: chartSvg(title, series), series });
          return chartsInThread.render(title, series);
        },
      },
      market: history,
    });
    try {
      const floorUsd = await floorUsdOf(moonCats.address);
      const usd = formatUsd(floorUsd) ?? '';
      const due = new Date();
      const { reply } = await service.build(
        'console:floor-chart',
        {
          hour: 9,
          minute: 0,
          timeZone: 'Pacific/Auckland',
          days: 1,
          collections: [{ network: 'devnet', address: moonCats.address, name: 'Moon Cats' }],
          setAt: new Date(due.getTime() - 86_400_000).toISOString(),
        },
        due,
      );
      // The digest's text and its chart tell the same floor, and the record keeps it.
      expect(h.text(reply)).toContain(`(${usd})`);
      expect((await history.activity('devnet', moonCats.address, 60_000, Date.now() + 1)).floorThen?.usd).toBe(
        floorUsd,
      );
      const { svg, series } = drawn.at(-1) ?? { svg: '', series: [] };
      const floorPanel = series.find((s) => s.name === 'Floor (USD)');
      expect(floorPanel?.lines?.[0]?.points).toEqual([{ label: due.toISOString().slice(0, 10), value: floorUsd }]);
      expect(svg).not.toContain('no data');
      expect(svg).toContain(`>${usd}</text>`);
      expect(svg).not.toContain('>$0.00<');
      expect(svg).toContain('>$0</text>');

      // Every panel covers the days the analytics were asked for: one axis, its labels drawn once, at the bottom.
      const wallets = series.find((s) => s.name === 'Wallets that sent transactions')?.points ?? [];
      const days = wallets.map((p) => p.label);
      expect(days).toEqual([due.toISOString().slice(0, 10)]);
      for (const panel of series) expect(panel.axis).toEqual(days);
      for (const day of days) expect(svg.split(`>${day.slice(5)}</text>`)).toHaveLength(2);
    } finally {
      await history.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('sales volume in the digest chart: what the bot recorded, no more', () => {
  const DAY = 86_400_000;
  const isoDay = (at: number) => new Date(at).toISOString().slice(0, 10);

  /** A market history file as the bot leaves it: recording since `since`, with these priced sales. */
  async function recordedHistory(since: number, sales: Array<{ address: string; at: number; usd: number }>) {
    const dir = await mkdtemp(join(tmpdir(), 'floorwatch-digest-volume-'));
    const lines = [
      { k: 'history', v: 1, since },
      ...sales.map((s, n) => ({
        k: 'sale',
        n: 'devnet',
        c: s.address,
        at: s.at,
        tx: `0x${(n + 1).toString(16).padStart(64, '0')}`,
        t: [[String(n + 1), '1', s.usd]],
      })),
    ];
    await writeFile(join(dir, 'market-history.jsonl'), `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
    const history = await FileMarketHistory.open(join(dir, 'market-history.jsonl'), { logger: silent });
    return {
      history,
      close: async () => {
        await history.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  }

  async function buildWith(history: FileMarketHistory, now: number, days: number) {
    const moonCats = h.devnet.collections.devnet?.find((c) => c.name === 'Moon Cats');
    if (!moonCats) throw new Error('no Moon Cats');
    const drawn: Array<{ svg: string; series: readonly ChartSeries[] }> = [];
    const service = digestService({
      charts: {
        render: async (title, series) => {
          drawn.push({ svg: chartSvg(title, series), series });
          return new Uint8Array([1]);
        },
      },
      market: history,
      now: () => now,
    });
    const { reply } = await service.build(
      `console:volume-${days}`,
      {
        hour: 9,
        minute: 0,
        timeZone: 'UTC',
        days,
        collections: [{ network: 'devnet', address: moonCats.address, name: 'Moon Cats' }],
        setAt: new Date(now - DAY).toISOString(),
      },
      new Date(now),
    );
    const { svg, series } = drawn.at(-1) ?? { svg: '', series: [] };
    const volume = series.find((s) => s.name === 'Sales volume (USD)');
    return {
      reply,
      moonCats,
      svg,
      volume,
      axis: series[0]?.axis ?? [],
      points: volume?.lines?.[0]?.points ?? [],
    };
  }

  /** {@link buildWith} on a record that began at `since` with `sales`, closed after. */
  async function builtOnRecord(since: number, sales: Parameters<typeof recordedHistory>[1], now: number, days: number) {
    const record = await recordedHistory(since, sales);
    try {
      return await buildWith(record.history, now, days);
    } finally {
      await record.close();
    }
  }

  /** Noon UTC today: the tests' clock, so that which days are whole does not depend on the hour they run. */
  const noon = () => Date.parse(isoDay(Date.now())) + 12 * 3_600_000;
  const moonCatsAddress = () => h.devnet.collections.devnet?.find((c) => c.name === 'Moon Cats')?.address ?? '';

  it('GIVEN recording began at 03:00 two days ago, with a sale yesterday WHEN a 7-day digest is built THEN its volume is drawn from the first whole day recorded, a whole day without sales is $0, the part-recorded day and the days before are no data, and the text says when the record begins', async () => {
    const now = noon();
    const today = Date.parse(isoDay(now));
    const since = today - 2 * DAY + 3 * 3_600_000;
    const { reply, axis, points } = await builtOnRecord(
      since,
      [{ address: moonCatsAddress(), at: today - DAY + 3_600_000, usd: 500 }],
      now,
      7,
    );
    expect(axis).toHaveLength(7);
    expect(points).toEqual([
      { label: isoDay(today - DAY), value: 500 },
      { label: isoDay(today), value: 0 },
    ]);
    expect(h.text(reply)).toContain(
      `Sales volume: the bot's record of sales begins at 03:00 UTC on ${isoDay(since)}; the chart draws no day before, and that day's sales from then only.`,
    );
  });

  it('GIVEN recording began three weeks ago, with a sale two days ago WHEN a 30-day digest is built THEN its volume is drawn from the first whole day the record still holds (it keeps a week), and the text says so', async () => {
    const now = noon();
    const { reply, axis, points } = await builtOnRecord(
      now - 21 * DAY,
      [{ address: moonCatsAddress(), at: now - 2 * DAY, usd: 200 }],
      now,
      30,
    );
    expect(axis).toHaveLength(30);
    // The record keeps sales from noon a week ago: that day is only half recorded.
    expect(points[0]?.label).toBe(isoDay(now - 6 * DAY));
    expect(points.map((p) => p.label)).toEqual(axis.filter((day) => day >= isoDay(now - 6 * DAY)));
    expect(points).toContainEqual({ label: isoDay(now - 2 * DAY), value: 200 });
    expect(h.text(reply)).toContain(`the bot's record of sales begins at 12:00 UTC on ${isoDay(now - 7 * DAY)}`);
  });

  it('GIVEN recording began before the period WHEN a digest is built THEN every day has its volume and the text adds no note', async () => {
    const now = noon();
    const { reply, axis, points } = await builtOnRecord(
      now - 6 * DAY,
      [{ address: moonCatsAddress(), at: now - DAY, usd: 100 }],
      now,
      3,
    );
    expect(points.map((p) => p.label)).toEqual(axis);
    expect(h.text(reply)).not.toContain('Sales volume:');
  });

  it('GIVEN a bot that began recording this morning and saw no sale WHEN a 1-day digest is built THEN the chart draws no volume panel (no lone $0) and the text says why', async () => {
    const now = noon();
    const since = now - 3 * 3_600_000;
    const { reply, svg, volume, axis } = await builtOnRecord(since, [], now, 1);
    expect(axis).toEqual([isoDay(now)]);
    expect(volume).toBeUndefined();
    expect(svg).not.toContain('Sales volume');
    expect(h.text(reply)).toContain(
      "Sales volume: no sale recorded since 09:00 UTC today (when the bot's record of sales begins), so the chart leaves it out.",
    );
  });

  it('GIVEN a bot recording for days that saw no sale in the period THEN the volume panel is left out and the text says no sale was recorded', async () => {
    const now = noon();
    const { reply, volume } = await builtOnRecord(now - 5 * DAY, [], now, 1);
    expect(volume).toBeUndefined();
    expect(h.text(reply)).toContain(`Sales volume: no sale recorded on ${isoDay(now)}, so the chart leaves it out.`);
  });

  it('GIVEN one day of data with a sale WHEN a 1-day digest is built THEN the volume panel draws a marker with its value, and the PNG draws', async () => {
    const now = noon();
    const record = await recordedHistory(now - 2 * 3_600_000, [
      { address: moonCatsAddress(), at: now - 3_600_000, usd: 845.25 },
    ]);
    try {
      const { svg, points } = await buildWith(record.history, now, 1);
      expect(points).toEqual([{ label: isoDay(now), value: 845.25 }]);
      const texts = svgTexts(svg);
      const panel = texts.find((t) => t.text === 'Sales volume (USD)');
      const value = texts.find((t) => t.text === '$845.25' && t.y > (panel?.y ?? Number.POSITIVE_INFINITY));
      expect(value).toBeDefined();
      expect(svg).toMatch(/<circle [^>]*r="6"/);
      expect(overlappingTexts(svg)).toEqual([]);
      expect(Buffer.from(renderSvgPng(svg)).subarray(1, 4).toString()).toBe('PNG');
    } finally {
      await record.close();
    }
  });
});

describe('what a digest covers, and when, as a new user reads it', () => {
  const DAY = 86_400_000;
  const isoDay = (at: number) => new Date(at).toISOString().slice(0, 10);

  it('GIVEN a 7-day digest at 09:00 Europe/Paris THEN the analytics, every chart panel, the chart axis and the text cover 7 UTC dates, the last that of the due time', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'floorwatch-digest-days-'));
    const history = await FileMarketHistory.open(join(dir, 'market-history.jsonl'), { logger: silent });
    const moonCats = h.devnet.collections.devnet?.find((c) => c.name === 'Moon Cats');
    if (!moonCats) throw new Error('no Moon Cats');
    const drawn: Array<{ title: string; svg: string; series: readonly ChartSeries[] }> = [];
    const service = digestService({
      charts: {
        render: async (title, series) => {
          drawn.push({ title, svg: chartSvg(title, series), series });
          return chartsInThread.render(title, series);
        },
      },
      market: history,
    });
    try {
      const due = lastDue(new Date(), 9, 0, 'Europe/Paris');
      const week = Array.from({ length: 7 }, (_, i) => isoDay(due.getTime() - (6 - i) * DAY));
      const { reply } = await service.build(
        'console:seven-days',
        {
          hour: 9,
          minute: 0,
          timeZone: 'Europe/Paris',
          days: 7,
          collections: [{ network: 'devnet', address: moonCats.address, name: 'Moon Cats' }],
          setAt: new Date(due.getTime() - DAY).toISOString(),
        },
        due,
      );
      const { title, svg, series } = drawn.at(-1) ?? { title: '', svg: '', series: [] };
      // The platform was asked for these days: its series has one point a day.
      const wallets = series.find((s) => s.name === 'Wallets that sent transactions');
      expect(wallets?.points.map((p) => p.label)).toEqual(week);
      for (const panel of series) expect(panel.axis).toEqual(week);
      // The x axis of the drawn chart: a label per day, each day once.
      const dayLabels = svgTexts(svg)
        .filter((t) => /^\d{2}-\d{2}$/.test(t.text))
        .map((t) => t.text);
      expect(dayLabels).toEqual(week.map((day) => day.slice(5)));
      expect(title).toBe(`Project activity, 7 days: ${week[0]} to ${week[6]} (UTC)`);
      const text = h.text(reply);
      expect(text).toContain('The last 7 days, to 09:00 Europe/Paris.');
      expect(text).toContain(
        `Chart and analytics by UTC date: ${week[0]} to ${week[6]} (7 days), the last one to ${due.toISOString().slice(11, 16)} UTC.`,
      );
      expect(text).not.toContain('days only');
      expect(reply.title).toBe(`Daily digest · ${week[6]}`);
    } finally {
      await history.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('GIVEN a digest at 09:00 UTC WHEN previewed at 05:27 UTC through the engine THEN it says it covers the period up to now, not to 09:00', async () => {
    const chat = { ...CONSOLE, id: 'preview-early' };
    await h.run('/digest set 09:00 UTC moon cats', chat, ADMIN);
    const at = new Date(`${isoDay(Date.now())}T05:27:00Z`);
    // As the composition root wires the digest port, on a clock that reads 05:27.
    const engine = h.engineWith({
      digests: {
        preview: async (chatKey, digest) => (await service.build(chatKey, digest, at)).reply,
        nextRun: () => null,
      },
    });
    const reply = await engine.runLine('/digest preview', chat, ADMIN);
    if (!reply) throw new Error('no answer');
    const text = h.text(reply);
    expect(reply.title).toBe(`Daily digest · ${isoDay(at.getTime())} (preview)`);
    expect(text).toContain(
      'Preview: the last 24 hours, to now (05:27 UTC). The daily digest covers the same span to 09:00 UTC.',
    );
    expect(text).toContain(`Chart and analytics by UTC date: ${isoDay(at.getTime())}, the last one to 05:27 UTC.`);
    expect(text).not.toContain('The last 24 hours, to 09:00 UTC.');
    await h.run('/digest off', chat, ADMIN);
  });

  it('GIVEN a digest at 09:00 Europe/Paris WHEN shown THEN its next run is given in Paris time, with UTC in brackets', async () => {
    const chat = { ...CONSOLE, id: 'next-in-paris' };
    await h.run('/digest set 09:00 Europe/Paris', chat, ADMIN);
    const scheduler = new DigestScheduler({ store: h.store, logger: silent, run: async () => {} });
    scheduler.rebuild();
    try {
      const next = scheduler.nextRun(9, 0, 'Europe/Paris');
      if (!next) throw new Error('not scheduled');
      const engine = h.engineWith({
        digests: {
          preview: async () => ({}),
          nextRun: (digest) => scheduler.nextRun(digest.hour, digest.minute, digest.timeZone),
        },
      });
      const reply = await engine.runLine('/digest show', chat, ADMIN);
      if (!reply) throw new Error('no answer');
      const text = h.text(reply);
      // Paris is one hour ahead of UTC in winter, two in summer: the next 09:00 there is 08:00 or 07:00 UTC.
      const utc = next.toISOString().slice(11, 16);
      expect(['07:00', '08:00']).toContain(utc);
      expect(text).toContain(`Next: ${zonedDay(next, 'Europe/Paris')} 09:00 Europe/Paris (${utc} UTC).`);
    } finally {
      await scheduler.stop();
      await h.run('/digest off', chat, ADMIN);
    }
  });
});

describe('/digest set reads its words by position', () => {
  let chat = 0;
  /** A fresh group chat for each case (a digest keeps what it is not told). */
  const fresh = () => ({ ...GROUP, id: `-78${chat++}` });
  const digestIn = (c: { id: string }) => h.store.chat(`telegram:${c.id}`).digest;

  it('GIVEN only days after the time THEN they are the days, in UTC', async () => {
    const c = fresh();
    const reply = await h.run('/digest set 09:00 7', c, ADMIN);
    expect(reply.title, h.text(reply)).toBe('Digest scheduled');
    expect(digestIn(c)).toMatchObject({ hour: 9, minute: 0, timeZone: 'UTC', days: 7 });
  });

  it('GIVEN a time zone then collections THEN the days are the default and the collections are read', async () => {
    const c = fresh();
    const reply = await h.run('/digest set 09:00 UTC moon cats', c, ADMIN);
    expect(reply.title, h.text(reply)).toBe('Digest scheduled');
    expect(digestIn(c)).toMatchObject({ timeZone: 'UTC', days: 1, collections: [{ name: 'Moon Cats' }] });
  });

  it('GIVEN days before the time zone THEN both are read', async () => {
    const c = fresh();
    await h.run('/digest set 09:00 3 Europe/Paris glitch gardens', c, ADMIN);
    expect(digestIn(c)).toMatchObject({ timeZone: 'Europe/Paris', days: 3, collections: [{ name: 'Glitch Gardens' }] });
  });

  it('GIVEN a collection named twice THEN the digest covers it once', async () => {
    const c = fresh();
    const reply = await h.run('/digest set 09:00 UTC 7 moon cats,moon cats, Moon  Cats', c, ADMIN);
    expect(digestIn(c)?.collections).toHaveLength(1);
    expect(h.text(reply)).toContain('Collections: Moon Cats (devnet).');
  });

  it('GIVEN days out of range or a malformed time zone in their place THEN the answer is about that option and nothing is scheduled', async () => {
    const c = fresh();
    expect(h.text(await h.run('/digest set 09:00 UTC 40 moon cats', c, ADMIN))).toContain(
      'days must be between 1 and 30; got 40',
    );
    expect(h.text(await h.run('/digest set 09:00 Europe/Pariss 7', c, ADMIN))).toContain(
      '"Europe/Pariss" is not a time zone',
    );
    expect(digestIn(c)).toBeUndefined();
  });

  it('GIVEN days and a time zone by name THEN words that read as them are the collections', async () => {
    const c = fresh();
    await h.run('/digest set 09:00 days=2 timezone=Asia/Tokyo moon cats', c, ADMIN);
    expect(digestIn(c)).toMatchObject({ timeZone: 'Asia/Tokyo', days: 2, collections: [{ name: 'Moon Cats' }] });
    const reply = await h.run('/digest set 09:00 days=2 timezone=UTC 5', c, ADMIN);
    expect(h.text(reply)).toContain('No collection matches "5"');
  });

  it('GIVEN a first word that only an abbreviation table reads as a time zone (gb, nz, eire) THEN it begins a collection name, not the time zone', async () => {
    const c = fresh();
    expect(h.text(await h.run('/digest set 09:00 gb moon cats', c, ADMIN))).toContain(
      'No collection matches "gb moon cats"',
    );
    expect(digestIn(c)).toBeUndefined();
    await h.run('/digest set 09:00 utc moon cats', c, ADMIN);
    expect(digestIn(c)).toMatchObject({ timeZone: 'UTC', collections: [{ name: 'Moon Cats' }] });
  });

  it('GIVEN collections given by name THEN none of their words is read as the days or the time zone', async () => {
    const c = fresh();
    const reply = await h.run('/digest set 09:00 collections="7 moon cats"', c, ADMIN);
    expect(h.text(reply)).toContain('No collection matches "7 moon cats"');
    expect(digestIn(c)).toBeUndefined();
  });

  it('GIVEN a digest WHEN only its time is set again THEN it keeps its time zone, days and collections, and says so', async () => {
    const c = fresh();
    await h.run('/digest set 09:00 Europe/Paris 7 moon cats, glitch gardens', c, ADMIN);
    const reply = await h.run('/digest set 10am', c, ADMIN);
    expect(digestIn(c)).toMatchObject({
      hour: 10,
      minute: 0,
      timeZone: 'Europe/Paris',
      days: 7,
      collections: [{ name: 'Moon Cats' }, { name: 'Glitch Gardens' }],
    });
    expect(h.text(reply)).toContain('Kept from the previous digest: time zone, days, collections.');
    const again = await h.run('/digest set 10am 2 glitch gardens', c, ADMIN);
    expect(digestIn(c)).toMatchObject({ days: 2, collections: [{ name: 'Glitch Gardens' }] });
    expect(h.text(again)).toContain('Kept from the previous digest: time zone.');
  });
});
