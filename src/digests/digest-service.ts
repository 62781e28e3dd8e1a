import type { Logger } from 'pino';
import { payloadOf } from '../core/deliveries.ts';
import { MARKET_HISTORY_RETENTION_MS, type MarketHistoryView } from '../core/market.ts';
import type { CompletenessStore, DeliveryLog, RulesRepository } from '../core/ports.ts';
import type { Reply, ReplyField } from '../core/reply.ts';
import type { ChatSettings, CollectionKey, DigestSettings, MarketSnapshot } from '../core/settings.ts';
import { completenessLines } from '../core/status.ts';
import type { AlertKind, Destination } from '../core/types.ts';
import type { DeliveryQueue } from '../delivery/dispatcher.ts';
import { encodePayload } from '../delivery/sink.ts';
import type { CurrencyDirectory } from '../market/currencies.ts';
import { byPriceAscending, byPriceDescending, formatPrice, formatUsd, momentText } from '../market/format.ts';
import type { PlatformClient } from '../platform/client.ts';
import { PlatformError } from '../platform/errors.ts';
import type { AnalyticsFilter, ChartPoint, Order } from '../platform/types.ts';
import { dict, own } from '../records.ts';
import { type ChartRenderer, type ChartSeries, chartsInThread } from './chart.ts';
import { lastDue, zonedClock, zonedDay } from './zoned-time.ts';

/** Chats whose digests are built at the same time. */
const DIGEST_CONCURRENCY = 4;
/** Listed tokens counted per collection (bounded work; beyond it the count says "at least"). */
const MAX_LISTINGS_COUNTED = 2_500;
const LISTING_PAGE = 250;

export interface DigestServiceOptions {
  platform: PlatformClient;
  store: RulesRepository;
  journal: DeliveryLog;
  dispatcher: DeliveryQueue;
  currencies: CurrencyDirectory;
  logger: Logger;
  projectId: number | undefined;
  /** Where charts are drawn; default: on the event loop ({@link chartsInThread}). The bot passes a ChartPool. */
  charts?: ChartRenderer;
  /**
   * The bot's record of sales and floors: the chart plots the collections' floor and volume day by
   * day, and the floors the digest looks up are recorded in it before the chart is drawn. Volume is
   * plotted only from the day the record begins (see {@link DigestServiceOptions.marketRetentionMs}).
   */
  market?: Pick<MarketHistoryView, 'daily' | 'floor' | 'since'>;
  /** How long that record keeps sales; default that of the bot's market history (a week). */
  marketRetentionMs?: number;
  /** The clock floor lookups are recorded by (ms); default `Date.now`. */
  now?: () => number;
  /** Called after each digest is recorded for posting, with where its time went (metrics, benchmarks). */
  onTiming?: (chatKey: string, timing: DigestTiming) => void;
  /** How complete the bot's record is per network and day: the digest shows its period's figures. */
  completeness?: Pick<CompletenessStore, 'days'>;
}

/**
 * Milliseconds one chat's digest took, by phase. Chats are built a few at a time, so these add up
 * to more than the run.
 */
export interface DigestTiming {
  /** Platform calls (shared within a run), the alerts summary and the text. */
  gatherMs: number;
  /**
   * Waiting for the chart after the rest was ready (it is drawn once the collections' floors are
   * known, while the alerts summary is read).
   */
  chartMs: number;
  /** Writing the digest to the delivery journal. */
  journalMs: number;
}

interface Series {
  points: ChartPoint[] | undefined;
  error: string | undefined;
}

interface Market {
  floor: Order | undefined;
  bestOffer: Order | undefined;
  listings: number;
  capped: boolean;
  error: string | undefined;
}

/** Platform answers shared by the chats of one run: each distinct request is made once. */
export class DigestRunCache {
  readonly analytics = new Map<string, Promise<[Series, Series]>>();
  readonly markets = new Map<string, Promise<Market>>();
  /** Each distinct chart, drawn once; undefined when it could not be drawn. */
  readonly charts = new Map<string, Promise<Uint8Array | undefined>>();
  /** "Last posted" marks, written to the state file once at the end of the run. */
  readonly posted: Array<readonly [string, (settings: ChatSettings) => void]> = [];
}

function destinationOf(chatKey: string): Destination {
  const at = chatKey.indexOf(':');
  return { platform: chatKey.slice(0, at) as Destination['platform'], chatId: chatKey.slice(at + 1) };
}

function reason(error: unknown): string {
  if (error instanceof PlatformError) return error.message.replace(/^[^:]*: /, '').slice(0, 160);
  return 'unexpected error';
}

const count = (v: number) => Math.round(v).toLocaleString('en-US');
/** One color per collection on the market panels (a digest has at most five). */
const LINE_COLORS = ['#7ee0a1', '#ff8fa3', '#c3a6ff', '#ffd166', '#64d2ff'];
const percent = (v: number) => `${(v <= 1 ? v * 100 : v).toFixed(1)}%`;

function isoDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/**
 * The days a digest of `count` days covers, as the platform's analytics count them: `count` UTC
 * dates, the last one that of `end` (so far). The analytics filter asks for them, every chart panel
 * shares them as its axis, and the digest's text names them.
 */
export function periodDays(end: Date, count: number): string[] {
  const last = Date.parse(isoDay(end));
  return Array.from({ length: count }, (_, i) => isoDay(new Date(last - (count - 1 - i) * 86_400_000)));
}

/** `2026-11-15 to 2026-11-21`, or `2026-11-21` for one day. */
function daysText(days: readonly string[]): string {
  const first = days[0] ?? '';
  const last = days.at(-1) ?? first;
  return first === last ? first : `${first} to ${last}`;
}

function capitalized(text: string): string {
  return `${text.charAt(0).toUpperCase()}${text.slice(1)}`;
}

function change(now: number | undefined, before: number | undefined, unit: (n: number) => string): string {
  if (now === undefined || before === undefined || before === 0) return '';
  const delta = now - before;
  if (Math.abs(delta) < 1e-9) return ' (unchanged)';
  const percent = (delta / before) * 100;
  return ` (${delta > 0 ? '+' : '−'}${unit(Math.abs(delta))}, ${percent > 0 ? '+' : ''}${percent.toFixed(1)}%)`;
}

/**
 * Builds and posts daily digests: analytics series (once per distinct filter per run), each
 * collection's floor, best offer and listing count with the change since the last digest, the
 * alerts the chat received in the period, and a chart. Posting goes through the delivery journal
 * with an id per chat and due time, so a digest is never posted twice.
 */
export class DigestService {
  readonly #o: DigestServiceOptions;

  constructor(options: DigestServiceOptions) {
    this.#o = options;
  }

  /** Builds and posts the digests of these chats for `dueAt`, a few chats at a time. */
  async run(chatKeys: readonly string[], dueAt: Date): Promise<void> {
    const cache = new DigestRunCache();
    const queue = [...chatKeys];
    const worker = async () => {
      for (let chatKey = queue.shift(); chatKey !== undefined; chatKey = queue.shift()) {
        try {
          await this.#post(chatKey, dueAt, cache);
        } catch (error) {
          this.#o.logger.error({ chat: chatKey, err: error }, 'could not post a digest');
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(DIGEST_CONCURRENCY, queue.length) }, worker));
    // A crash before this write is harmless: the journal already holds each digest under an id per
    // chat and due time, so a catch-up run records nothing twice.
    await this.#o.store.updateChats(cache.posted);
  }

  async #post(chatKey: string, dueAt: Date, cache: DigestRunCache): Promise<void> {
    const digest = this.#o.store.chat(chatKey).digest;
    if (!digest) return;
    if (digest.lastPostedFor && Date.parse(digest.lastPostedFor) >= dueAt.getTime()) return;
    const { reply, market, timing } = await this.build(chatKey, digest, dueAt, cache);
    const journalStarted = performance.now();
    const recorded = await this.#o.journal.record([
      {
        eventId: `digest:${dueAt.toISOString()}`,
        destination: destinationOf(chatKey),
        network: 'digest',
        txnHash: `digest:${chatKey}:${dueAt.toISOString()}`,
        blockNumber: 0,
        kind: 'digest',
        payload: encodePayload(reply),
      },
    ]);
    this.#o.onTiming?.(chatKey, { ...timing, journalMs: performance.now() - journalStarted });
    cache.posted.push([
      chatKey,
      (settings) => {
        if (settings.digest) {
          settings.digest.lastPostedFor = dueAt.toISOString();
          settings.digest.lastMarket = market;
        }
      },
    ]);
    this.#o.dispatcher.enqueue(recorded);
    this.#o.logger.info({ chat: chatKey, due: dueAt }, 'digest posted');
  }

  /**
   * The digest of a chat for the period ending at `dueAt`. At a time its schedule falls due it is the
   * daily digest; at any other time (/digest preview) it covers the period up to that moment and says
   * it is a preview.
   */
  async build(
    chatKey: string,
    digest: DigestSettings,
    dueAt: Date,
    cache = new DigestRunCache(),
  ): Promise<{ reply: Reply; market: Record<string, MarketSnapshot>; timing: Omit<DigestTiming, 'journalMs'> }> {
    const started = performance.now();
    const end = dueAt;
    // Alerts are counted over whole days back from the due time, so that daily digests miss none.
    const start = new Date(end.getTime() - digest.days * 86_400_000);
    const days = periodDays(end, digest.days);
    const analytics = this.#analytics(digest, days, cache);
    // Each collection's floor is recorded as it is looked up, so the chart drawn after plots it.
    const markets = Promise.all(digest.collections.map((collection) => this.#market(collection, cache)));
    const [wallets, conversion] = await analytics;
    const looked = await markets;
    const recordedFrom = await this.#recordedFrom();
    const marketPanels = await this.#marketSeries(digest, days, recordedFrom);
    const chart = this.#chart(digest, days, marketPanels.series, [wallets, conversion], cache);
    const fields: ReplyField[] = [];
    const notes: string[] = [];
    if (this.#o.market && digest.collections.length > 0) {
      const began = recordedFrom === undefined ? '' : momentText(recordedFrom, dueAt.getTime());
      if (recordedFrom === undefined) notes.push('Sales volume: not recorded yet, so the chart draws none.');
      else if (!marketPanels.sold) {
        notes.push(
          recordedFrom > Date.parse(days[0] ?? '')
            ? `Sales volume: no sale recorded since ${began} (when the bot's record of sales begins), so the chart leaves it out.`
            : `Sales volume: no sale recorded ${days.length === 1 ? `on ${days[0]}` : 'in these days'}, so the chart leaves it out.`,
        );
      } else if (recordedFrom > Date.parse(days[0] ?? '')) {
        notes.push(
          `Sales volume: the bot's record of sales begins at ${began}; the chart draws no day before, and that day's sales from then only.`,
        );
      }
    }
    const expectedDays = days.length;
    const describeSeries = (name: string, s: Series, format: (v: number) => string) => {
      if (s.error) {
        notes.push(`${name}: unavailable (${s.error}).`);
        return;
      }
      const points = s.points ?? [];
      if (points.length === 0) {
        notes.push(`${name}: no data for these days.`);
        return;
      }
      if (points.length < expectedDays) notes.push(`${name}: data for ${points.length} of ${expectedDays} days only.`);
      const values = points.map((p) => p.value);
      const last = points[points.length - 1];
      const total = values.reduce((a, b) => a + b, 0);
      fields.push({
        name,
        value: `latest ${format(last?.value ?? 0)} (${last?.label ?? ''}) · average ${format(total / values.length)}`,
      });
    };
    describeSeries('Wallets that sent transactions', wallets, count);
    describeSeries('Conversion rate', conversion, percent);

    const market = dict<MarketSnapshot>();
    for (const [i, collection] of digest.collections.entries()) {
      const key = `${collection.network}:${collection.address}`;
      const m = looked[i] as Market;
      const name = collection.name ?? collection.address;
      if (m.error) {
        fields.push({ name, value: `market data unavailable (${m.error})` });
        continue;
      }
      const before = digest.lastMarket && own(digest.lastMarket, key);
      const snapshot: MarketSnapshot = { listings: m.listings };
      const parts: string[] = [];
      if (m.floor) {
        snapshot.floorUsd = m.floor.priceUSD;
        const symbol = await this.#o.currencies.symbol(collection.network, m.floor.priceCurrencyAddress);
        parts.push(
          `floor ${formatPrice(m.floor, symbol)}${change(m.floor.priceUSD, before?.floorUsd, (n) => formatUsd(n) ?? String(n))}`,
        );
      } else parts.push('nothing listed');
      if (m.bestOffer) {
        snapshot.bestOfferUsd = m.bestOffer.priceUSD;
        const symbol = await this.#o.currencies.symbol(collection.network, m.bestOffer.priceCurrencyAddress);
        parts.push(
          `best offer ${formatPrice(m.bestOffer, symbol)}${change(m.bestOffer.priceUSD, before?.bestOfferUsd, (n) => formatUsd(n) ?? String(n))}`,
        );
      } else parts.push('no offers');
      parts.push(
        `${m.capped ? 'at least ' : ''}${m.listings.toLocaleString('en-US')} listed${change(m.listings, before?.listings, (n) => String(Math.round(n)))}`,
      );
      fields.push({ name: `${name} (${collection.network})`, value: parts.join('\n') });
      market[key] = snapshot;
    }

    fields.push({ name: 'Alerts in this chat', value: await this.#alertsSummary(chatKey, start) });
    const record = await this.#completeness(digest, days);
    if (record) fields.push(record);
    const gathered = performance.now();
    const png = await chart;
    if (!png) notes.push('Chart: unavailable (it could not be drawn).');
    const day = zonedDay(dueAt, digest.timeZone);
    const scheduled = lastDue(dueAt, digest.hour, digest.minute, digest.timeZone).getTime() === dueAt.getTime();
    const span = digest.days === 1 ? 'the last 24 hours' : `the last ${digest.days} days`;
    const clock = `${zonedClock(dueAt, digest.timeZone)} ${digest.timeZone}`;
    const scheduledClock = `${String(digest.hour).padStart(2, '0')}:${String(digest.minute).padStart(2, '0')} ${digest.timeZone}`;
    const reply: Reply = {
      title: `Daily digest · ${day}${scheduled ? '' : ' (preview)'}`,
      tone: 'info',
      lines: [
        scheduled
          ? `${capitalized(span)}, to ${clock}.`
          : `Preview: ${span}, to now (${clock}). The daily digest covers the same span to ${scheduledClock}.`,
        `Chart and analytics by UTC date: ${daysText(days)}${days.length === 1 ? '' : ` (${days.length} days)`}, the last one to ${dueAt.toISOString().slice(11, 16)} UTC.`,
        ...notes,
      ],
      fields,
      ...(png ? { attachments: [{ name: 'digest-chart.png', contentType: 'image/png', data: png }] } : {}),
      footer: 'Floorwatch digest · /digest show, /digest off',
      timestamp: dueAt.toISOString(),
    };
    return {
      reply,
      market,
      timing: { gatherMs: gathered - started, chartMs: performance.now() - gathered },
    };
  }

  /** Starts drawing the chart of these series (once per distinct chart in a run). */
  #chart(
    digest: DigestSettings,
    days: readonly string[],
    market: readonly ChartSeries[],
    [wallets, conversion]: [Series, Series],
    cache: DigestRunCache,
  ): Promise<Uint8Array | undefined> {
    const title = `Project activity, ${days.length} day${days.length === 1 ? '' : 's'}: ${daysText(days)} (UTC)`;
    // The market panels differ between chats of a run only by what they plot.
    const plotted = market.map((s) => [s.name, s.lines?.map((l) => [l.name, l.points])]);
    const key = `${JSON.stringify(this.#filter(digest, days))}|${title}|${JSON.stringify(plotted)}`;
    let pending = cache.charts.get(key);
    if (!pending) {
      const series: ChartSeries[] = [
        ...market,
        {
          name: 'Wallets that sent transactions',
          points: wallets.points ?? [],
          format: count,
          color: '#5aa9ff',
          axis: days,
        },
        { name: 'Conversion rate', points: conversion.points ?? [], format: percent, color: '#f5a524', axis: days },
      ];
      pending = (this.#o.charts ?? chartsInThread).render(title, series).catch((error: unknown) => {
        this.#o.logger.error({ chart: title, err: error }, 'could not draw a digest chart');
        return undefined;
      });
      cache.charts.set(key, pending);
    }
    return pending;
  }

  /**
   * When the bot's record of sales begins, of what it still holds: when it began recording, or the
   * oldest sale it keeps; undefined while it has not begun.
   */
  async #recordedFrom(): Promise<number | undefined> {
    const since = await this.#o.market?.since();
    if (since === undefined) return undefined;
    const now = (this.#o.now ?? Date.now)();
    return Math.max(since, now - (this.#o.marketRetentionMs ?? MARKET_HISTORY_RETENTION_MS));
  }

  /**
   * Floor and sales volume of the digest's collections, a line each, over its days (what the bot
   * recorded), and whether any sale was recorded. The record sums a day's sales as 0 whether it saw
   * none or was not recording, so a day's volume is drawn only when the bot recorded that day from its
   * start (a 0 is then no sales) or saw sales on it: a day or part of a day it did not see is no data,
   * never $0. Without any sale the volume panel is left out (a flat $0 says less than a sentence).
   */
  async #marketSeries(
    digest: DigestSettings,
    days: readonly string[],
    recordedFrom: number | undefined,
  ): Promise<{ series: ChartSeries[]; sold: boolean }> {
    const market = this.#o.market;
    if (!market || digest.collections.length === 0) return { series: [], sold: false };
    const dayOf = (at: number) => isoDay(new Date(at));
    const recorded = (points: readonly ChartPoint[]) =>
      recordedFrom === undefined
        ? []
        : points.filter((p) => p.label >= dayOf(recordedFrom) && (p.value > 0 || recordedFrom <= Date.parse(p.label)));
    const lines = await Promise.all(
      digest.collections.map(async (collection, i) => {
        const daily = await market.daily(collection.network, collection.address, days, dayOf);
        return {
          name: collection.name ?? collection.address,
          color: LINE_COLORS[i % LINE_COLORS.length] as string,
          floor: daily.floor,
          volume: recorded(daily.volume),
        };
      }),
    );
    const usd = (v: number) => formatUsd(v) ?? '$0';
    const sold = lines.some((l) => l.volume.some((p) => p.value > 0));
    const series: ChartSeries[] = [
      {
        name: 'Floor (USD)',
        points: [],
        color: '#f2f4f8',
        format: usd,
        lines: lines.map((l) => ({ name: l.name, color: l.color, points: l.floor })),
        axis: days,
      },
    ];
    if (sold) {
      series.push({
        name: 'Sales volume (USD)',
        points: [],
        color: '#f2f4f8',
        format: usd,
        lines: lines.map((l) => ({ name: l.name, color: l.color, points: l.volume })),
        axis: days,
      });
    }
    return { series, sold };
  }

  #filter(digest: DigestSettings, days: readonly string[]): AnalyticsFilter {
    return {
      ...(this.#o.projectId === undefined ? {} : { projectId: this.#o.projectId }),
      startDate: days[0] ?? '',
      endDate: days.at(-1) ?? '',
      collections: digest.collections.map((c) => c.address).sort(),
    };
  }

  #analytics(digest: DigestSettings, days: readonly string[], cache: DigestRunCache): Promise<[Series, Series]> {
    const filter = this.#filter(digest, days);
    const key = JSON.stringify(filter);
    let pending = cache.analytics.get(key);
    if (!pending) {
      const settle = async (call: Promise<ChartPoint[]>): Promise<Series> => {
        try {
          return { points: await call, error: undefined };
        } catch (error) {
          return { points: undefined, error: reason(error) };
        }
      };
      pending = Promise.all([
        settle(this.#o.platform.analytics.walletsTxnSentTotal(filter)),
        settle(this.#o.platform.analytics.dailyWalletTxnConversionRate(filter)),
      ]);
      cache.analytics.set(key, pending);
    }
    return pending;
  }

  #market(collection: CollectionKey, cache: DigestRunCache): Promise<Market> {
    const key = `${collection.network}:${collection.address}`;
    let pending = cache.markets.get(key);
    if (!pending) {
      pending = this.#fetchMarket(collection);
      cache.markets.set(key, pending);
    }
    return pending;
  }

  async #fetchMarket(collection: CollectionKey): Promise<Market> {
    const { platform } = this.#o;
    const target = { network: collection.network, contractAddress: collection.address };
    try {
      const offers = await platform.marketplace.listCollectibles({
        ...target,
        side: 'offer',
        filter: { includeEmpty: false },
        page: { pageSize: 20 },
      });
      let listings = 0;
      let floor: Order | undefined;
      let page: number | undefined;
      let more = true;
      while (more && listings < MAX_LISTINGS_COUNTED) {
        const result = await platform.marketplace.listCollectibles({
          ...target,
          side: 'listing',
          filter: { includeEmpty: false },
          page: page === undefined ? { pageSize: LISTING_PAGE } : { page, pageSize: LISTING_PAGE },
        });
        for (const item of result.collectibles) {
          const order = item.order ?? item.listing;
          if (!order) continue;
          listings++;
          if (!floor || byPriceAscending(order, floor) < 0) floor = order;
        }
        more = result.page.more === true && result.collectibles.length > 0;
        page = (result.page.page ?? page ?? 0) + 1;
      }
      const bestOffer = offers.collectibles
        .map((c) => c.order ?? c.offer)
        .filter((o): o is Order => o !== undefined)
        .sort(byPriceDescending)[0];
      if (floor)
        await this.#o.market?.floor(
          collection.network,
          collection.address,
          floor.priceUSD,
          (this.#o.now ?? Date.now)(),
          true,
        );
      return { floor, bestOffer, listings, capped: more, error: undefined };
    } catch (error) {
      return { floor: undefined, bestOffer: undefined, listings: 0, capped: false, error: reason(error) };
    }
  }

  /**
   * How complete the bot's record of the digest's networks is over its UTC days (every network
   * counted when it follows no collection): events seen, blocks read back, blocks missed.
   */
  async #completeness(digest: DigestSettings, days: readonly string[]): Promise<ReplyField | undefined> {
    const store = this.#o.completeness;
    const first = days[0];
    const last = days.at(-1);
    if (!store || !first || !last) return undefined;
    const name = `Bot's record, ${daysText(days)} (UTC)`;
    try {
      const networks = [...new Set(digest.collections.map((c) => c.network))];
      const counted = await store.days(first, last);
      const shown = networks.length ? counted.filter((d) => networks.includes(d.network)) : counted;
      const lines = completenessLines(shown, networks);
      return { name, value: lines.length ? lines.join('\n') : 'nothing counted in these days' };
    } catch (error) {
      this.#o.logger.warn({ err: error }, 'could not read the completeness counts');
      return { name, value: `unavailable (${reason(error)})` };
    }
  }

  /** Alerts delivered to the chat since `since`, by kind, with the biggest sale (from the delivery log). */
  async #alertsSummary(chatKey: string, since: Date): Promise<string> {
    const counts = new Map<AlertKind, number>();
    let biggest: { usd: number; title: string } | undefined;
    for (const record of await this.#o.journal.deliveredTo(destinationOf(chatKey), since)) {
      const kind = record.kind;
      if (kind === undefined || kind === 'digest') continue;
      counts.set(kind, (counts.get(kind) ?? 0) + 1);
      if (kind === 'sale' && record.usd !== undefined && (!biggest || record.usd > biggest.usd)) {
        biggest = { usd: record.usd, title: (payloadOf(record) as Reply).title ?? '' };
      }
    }
    if (counts.size === 0) return 'none in this period';
    const parts = [...counts].map(([kind, n]) => `${n} ${kind}${n === 1 ? '' : 's'}`);
    return biggest
      ? `${parts.join(', ')}\nbiggest sale: ${biggest.title} (${formatUsd(biggest.usd)})`
      : parts.join(', ');
  }
}
