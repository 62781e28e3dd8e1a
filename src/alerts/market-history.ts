/**
 * The bot's own record of each collection's market: the sales the alert pipeline saw and samples of
 * the floor, kept for a week, for /collection (sales, volume and floor change over 24 h and 7 d)
 * and for alerts (a token's last sale).
 *
 * ## Where it lives, and why there
 *
 * In memory, with an append-only JSON Lines file in the data directory so that a restart keeps the
 * week: the delivery journal cannot stand in for it (it holds only the sales some chat was alerted
 * about, and forgets them once final), and a week of a busy marketplace is a few megabytes. The
 * file is read once on open and compacted then (old, reorganised and unreadable lines go) and every
 * hour when it holds more dead lines than live ones. Nothing here is critical: an unreadable line is
 * skipped, a failed write is logged and the record stays in memory; a crash loses the last
 * {@link MarketHistoryOptions.flushMs} of sales.
 *
 * ## Off the alert path
 *
 * The pipeline's calls ({@link MarketRecorder}) only push to memory. Every `flushMs` the sales
 * gathered are priced and written with one append.
 *
 * ## Prices
 *
 * RequestAccepted logs carry no price. Sales are priced in batches: one GetOrders call per network
 * and flush, for every sale gathered (matched by a rule or not), at most
 * {@link MAX_ORDERS_PER_CALL} orders each. That bounds the platform calls to one per network every
 * couple of seconds whatever the sales rate, where a call per sale would grow with the marketplace,
 * and it prices the sales of collections nobody watches, which /collection needs as much. A sale
 * whose orders the platform does not return, or whose pricing fails, is recorded with its count
 * only. Sales waiting for a price are bounded ({@link MAX_UNPRICED_SALES}): beyond, they are
 * recorded unpriced at once.
 *
 * ## File format
 *
 * ```
 * {"k":"history","v":1,"since":1764000000000}
 * {"k":"sale","n":"devnet","c":"0xc0…","at":1764000123000,"tx":"0xab…","t":[["12","1",2940.5],["13","1",null]]}
 * {"k":"floor","n":"devnet","c":"0xc0…","at":1764000124000,"usd":2890}
 * {"k":"reorg","n":"devnet","tx":"0xab…"}
 * ```
 *
 * `t` lists the tokens sold: id, units, and their price in USD (all units) or null when unknown.
 * The sales of a collection nobody watches come without their transfers (the stream is subscribed
 * to the marketplace's logs, not to the collection's): their tokens are those of the orders, one
 * unit each, and an empty id when the order could not be read.
 */
import { type FileHandle, open, readFile, rename, rm } from 'node:fs/promises';
import type { Logger } from 'pino';
import {
  type DailyMarket,
  type FloorSample,
  MARKET_HISTORY_RETENTION_MS,
  type MarketHistoryView,
  type TokenSale,
  type WindowActivity,
} from '../core/market.ts';
import type { PlatformClient } from '../platform/client.ts';
import type { ChartPoint, Order } from '../platform/types.ts';
import type { ChainEvent } from './types.ts';

const HOUR_MS = 60 * 60 * 1000;

/** Floor samples closer together than this are one: a week of samples stays small. */
export const FLOOR_SAMPLE_INTERVAL_MS = 5 * 60 * 1000;
/** Orders priced by one GetOrders call; the sales beyond wait for the next flush. */
export const MAX_ORDERS_PER_CALL = 200;
/** Sales waiting for their price; beyond, a sale is recorded without one. */
export const MAX_UNPRICED_SALES = 2_000;
/** Sales kept per collection (the oldest go first): a week of a very busy collection. */
export const MAX_SALES_PER_COLLECTION = 50_000;
/** Collections kept; the one whose last record is the oldest goes first. */
export const MAX_COLLECTIONS = 5_000;

const FORMAT_VERSION = 1;

/** One sale as recorded: a transaction's tokens of one collection. */
export interface RecordedSale {
  /** Block time, ms since the epoch. */
  at: number;
  txnHash: string;
  /** Tokens sold, each with its price in USD for all its units when known. */
  tokens: Array<{ tokenId: string; amount: string; usd?: number }>;
}

/**
 * What the alert pipeline tells the history, and asks of it. Every call is synchronous and cheap
 * (memory only): it runs on the alert path.
 */
export interface MarketRecorder {
  /** A sale the pipeline saw, whether a rule matched it or not; priced and written later, in a batch. */
  sale(event: ChainEvent): void;
  /** The floor of a collection as looked up at `at` (ms). */
  floor(network: string, collection: string, usd: number, at: number): void;
  /** A transaction reorganised away: its sales did not happen. */
  reorged(network: string, txnHash: string): void;
  /** The last recorded sale of a token, when the history has one. */
  lastSale(network: string, collection: string, tokenId: string): TokenSale | undefined;
}

export interface MarketHistoryOptions {
  /** Prices sales (GetOrders); without it every sale is recorded with its count only. */
  platform?: PlatformClient;
  logger: Logger;
  /** Sales gathered this long are priced and written together. Default 2 s. */
  flushMs?: number;
  /** How often old records are dropped and the file compacted if worth it. Default 1 h. */
  compactEveryMs?: number;
  retentionMs?: number;
  now?: () => number;
}

interface CollectionHistory {
  network: string;
  collection: string;
  /** In block-time order. */
  sales: RecordedSale[];
  floors: FloorSample[];
  lastByToken: Map<string, { sale: RecordedSale; index: number }>;
  touched: number;
}

interface Unpriced {
  key: string;
  event: ChainEvent;
  /** Reorganised away while waiting. */
  cancelled?: boolean;
}

type Line =
  | { k: 'history'; v: number; since: number }
  | { k: 'sale'; n: string; c: string; at: number; tx: string; t: Array<[string, string, number | null]> }
  | { k: 'floor'; n: string; c: string; at: number; usd: number }
  | { k: 'reorg'; n: string; tx: string };

const keyOf = (network: string, collection: string) => `${network}:${collection.toLowerCase()}`;
const saleKey = (network: string, txnHash: string, collection: string) =>
  `${network}:${txnHash.toLowerCase()}:${collection.toLowerCase()}`;

/**
 * The market history: {@link MarketRecorder} for the alert pipeline, {@link MarketHistoryView} for
 * commands. One process per file (the data directory's lock sees to it).
 */
export class MarketHistory implements MarketRecorder, MarketHistoryView {
  readonly file: string;
  readonly #options: MarketHistoryOptions;
  readonly #now: () => number;
  readonly #retentionMs: number;
  readonly #collections = new Map<string, CollectionHistory>();
  /** Sales recorded or waiting, so that an event seen twice (a stream resumed) counts once. */
  readonly #seen = new Set<string>();
  #unpriced: Unpriced[] = [];
  /** Sales whose price is being looked up. */
  #pricing: Unpriced[] = [];
  /** Lines waiting for the next append. */
  readonly #pending: string[] = [];
  #since: number | undefined;
  #handle: FileHandle | undefined;
  /** Lines in the file that are no longer live (dropped, reorganised, unreadable). */
  #dead = 0;
  #live = 0;
  /**
   * Set when the file cannot be used (of a newer format, unreadable, or not writable at start): it
   * is left alone and the history lives in memory.
   */
  #readOnly = false;
  #writeFailing = false;
  #writes: Promise<void> = Promise.resolve();
  #flushing: Promise<void> | undefined;
  #flushTimer: NodeJS.Timeout | undefined;
  #compactTimer: NodeJS.Timeout | undefined;
  #closed = false;

  private constructor(file: string, options: MarketHistoryOptions) {
    this.file = file;
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#retentionMs = options.retentionMs ?? MARKET_HISTORY_RETENTION_MS;
  }

  /**
   * Reads the file (creating it when missing), drops what is too old, and compacts it when needed.
   * Never fails for the file's sake: a file that cannot be read or written is logged and left
   * alone, and the history is kept in memory.
   */
  static async open(file: string, options: MarketHistoryOptions): Promise<MarketHistory> {
    const history = new MarketHistory(file, options);
    try {
      await history.#load();
      if (!history.#readOnly) {
        if (history.#dead > 0 || history.#since === undefined) await history.#compact();
        else history.#handle = await open(file, 'a');
        if (!history.#handle) throw new Error('the file could not be opened for writing');
      }
    } catch (error) {
      options.logger.error(
        { file, err: error },
        'cannot use the market history file: it is left untouched and the history is kept in memory only',
      );
      history.#readOnly = true;
      history.#since ??= history.#now();
    }
    history.#flushTimer = setInterval(() => void history.flush(), options.flushMs ?? 2_000);
    history.#flushTimer.unref();
    history.#compactTimer = setInterval(() => void history.#maintain(), options.compactEveryMs ?? HOUR_MS);
    history.#compactTimer.unref();
    return history;
  }

  since(): number | undefined {
    return this.#since;
  }

  sale(event: ChainEvent): void {
    if (this.#closed || event.kind !== 'sale' || (event.tokens.length === 0 && event.orderIds.length === 0)) return;
    const key = saleKey(event.network, event.txnHash, event.collection);
    if (this.#seen.has(key)) return;
    this.#seen.add(key);
    if (this.#unpriced.length >= MAX_UNPRICED_SALES || !this.#options.platform || event.orderIds.length === 0) {
      this.#store(event, new Map());
      return;
    }
    this.#unpriced.push({ key, event });
  }

  floor(network: string, collection: string, usd: number, at: number, lookedUp = false): void {
    if (this.#closed || !(usd > 0) || !Number.isFinite(usd)) return;
    const history = this.#collection(network, collection);
    const last = history.floors.at(-1);
    const sample = { at, usd };
    if (last && Math.abs(at - last.at) < FLOOR_SAMPLE_INTERVAL_MS) {
      if (!lookedUp || at < last.at) return;
      // The first sample stays: until an older one is recorded, floor changes are measured from it.
      if (history.floors.length > 1) history.floors[history.floors.length - 1] = sample;
      else history.floors.push(sample);
    } else if (last && at < last.at) insertSorted(history.floors, sample);
    else history.floors.push(sample);
    history.touched = this.#now();
    this.#append({ k: 'floor', n: network, c: history.collection, at, usd });
  }

  reorged(network: string, txnHash: string): void {
    const tx = txnHash.toLowerCase();
    const waiting = (u: Unpriced) => u.event.network === network && u.event.txnHash.toLowerCase() === tx;
    for (const u of [...this.#unpriced, ...this.#pricing]) {
      if (!waiting(u)) continue;
      u.cancelled = true;
      this.#seen.delete(u.key);
    }
    this.#unpriced = this.#unpriced.filter((u) => !u.cancelled);
    if (this.#removeSales(network, tx) > 0) this.#append({ k: 'reorg', n: network, tx });
  }

  lastSale(network: string, collection: string, tokenId: string): TokenSale | undefined {
    const found = this.#collections.get(keyOf(network, collection))?.lastByToken.get(tokenId);
    if (!found) return undefined;
    const token = found.sale.tokens[found.index];
    if (!token) return undefined;
    const units = Number(token.amount) || 1;
    return token.usd === undefined ? { at: found.sale.at } : { at: found.sale.at, usd: token.usd / units };
  }

  activity(network: string, collection: string, windowMs: number, now: number): WindowActivity {
    const start = now - windowMs;
    const since = this.#since ?? now;
    const out: WindowActivity = {
      from: Math.max(start, since),
      complete: since <= start,
      sales: 0,
      priced: 0,
      volumeUsd: 0,
      floorThen: undefined,
    };
    const history = this.#collections.get(keyOf(network, collection));
    if (!history) return out;
    for (let i = history.sales.length - 1; i >= 0; i--) {
      const sale = history.sales[i] as RecordedSale;
      // Block times may run a little ahead of this clock: a sale "after now" is a sale of now.
      if (sale.at < start) break;
      for (const token of sale.tokens) {
        out.sales++;
        if (token.usd !== undefined) {
          out.priced++;
          out.volumeUsd += token.usd;
        }
      }
    }
    let before: FloorSample | undefined;
    let after: FloorSample | undefined;
    for (const sample of history.floors) {
      if (sample.at <= start) before = sample;
      else if (sample.at <= now) {
        after = sample;
        break;
      }
    }
    out.floorThen = before ?? after;
    return out;
  }

  daily(network: string, collection: string, days: readonly string[], dayOf: (at: number) => string): DailyMarket {
    const history = this.#collections.get(keyOf(network, collection));
    const volume = new Map<string, number>(days.map((day) => [day, 0]));
    const closing = new Map<string, number>();
    for (const sale of history?.sales ?? []) {
      const day = dayOf(sale.at);
      const sum = volume.get(day);
      if (sum === undefined) continue;
      volume.set(day, sum + sale.tokens.reduce((usd, token) => usd + (token.usd ?? 0), 0));
    }
    const first = days[0];
    let carried: number | undefined;
    for (const sample of history?.floors ?? []) {
      const day = dayOf(sample.at);
      if (first !== undefined && day < first) carried = sample.usd;
      else closing.set(day, sample.usd);
    }
    const floor: ChartPoint[] = [];
    for (const day of days) {
      carried = closing.get(day) ?? carried;
      if (carried !== undefined) floor.push({ label: day, value: carried });
    }
    return { floor, volume: days.map((day) => ({ label: day, value: volume.get(day) ?? 0 })) };
  }

  /** Prices the sales gathered so far and writes them (the timer calls it; tests and shutdown too). */
  flush(): Promise<void> {
    if (this.#flushing) return this.#flushing.then(() => this.flush());
    if (this.#unpriced.length === 0) return this.#writes;
    this.#flushing = this.#price().finally(() => {
      this.#flushing = undefined;
    });
    return this.#flushing.then(() => this.#writes);
  }

  /** Writes what is gathered (unpriced if pricing fails) and closes the file. */
  async close(): Promise<void> {
    clearInterval(this.#flushTimer);
    clearInterval(this.#compactTimer);
    while (this.#unpriced.length > 0 || this.#flushing) await this.flush();
    this.#closed = true;
    await this.#writes;
    await this.#handle?.close();
    this.#handle = undefined;
  }

  async #price(): Promise<void> {
    const byNetwork = new Map<string, { items: Unpriced[]; orders: number }>();
    const taken: Unpriced[] = [];
    const rest: Unpriced[] = [];
    for (const item of this.#unpriced) {
      const batch = byNetwork.get(item.event.network) ?? { items: [], orders: 0 };
      if (batch.items.length > 0 && batch.orders + item.event.orderIds.length > MAX_ORDERS_PER_CALL) {
        rest.push(item);
        continue;
      }
      batch.items.push(item);
      batch.orders += item.event.orderIds.length;
      byNetwork.set(item.event.network, batch);
      taken.push(item);
    }
    this.#unpriced = rest;
    this.#pricing = taken;
    await Promise.all(
      [...byNetwork].map(async ([network, { items }]) => {
        const orders = await this.#orders(network, items);
        for (const item of items) if (!item.cancelled) this.#store(item.event, orders);
      }),
    );
    this.#pricing = [];
  }

  async #orders(network: string, items: readonly Unpriced[]): Promise<Map<string, Order>> {
    const platform = this.#options.platform;
    const found = new Map<string, Order>();
    if (!platform) return found;
    try {
      const { orders } = await platform.marketplace.getOrders({
        network,
        input: items.flatMap(({ event }) =>
          event.orderIds.map((orderId) => ({ contractAddress: event.collection, orderId })),
        ),
        page: { pageSize: MAX_ORDERS_PER_CALL },
      });
      for (const order of orders) found.set(order.orderId, order);
    } catch (error) {
      this.#options.logger.warn({ network, sales: items.length, err: error }, 'could not price sales: counted only');
    }
    return found;
  }

  /** Adds a sale to memory and to the file, priced from `orders` where they tell. */
  #store(event: ChainEvent, orders: ReadonlyMap<string, Order>): void {
    const byToken = new Map<string, Order>();
    for (const orderId of event.orderIds) {
      const order = orders.get(orderId);
      if (order?.tokenId !== undefined && order.priceUSD > 0 && !byToken.has(order.tokenId)) {
        byToken.set(order.tokenId, order);
      }
    }
    const sale: RecordedSale = {
      at: Date.parse(event.ts) || this.#now(),
      txnHash: event.txnHash.toLowerCase(),
      tokens:
        event.tokens.length > 0
          ? event.tokens.map((t) => priced(t.tokenId, t.amount, byToken.get(t.tokenId)))
          : // The stream holds no transfers of a collection nobody watches: its tokens are the orders'.
            event.orderIds.map((orderId) => {
              const order = orders.get(orderId);
              return priced(order?.tokenId ?? '', '1', order && order.priceUSD > 0 ? order : undefined);
            }),
    };
    this.#add(event.network, event.collection, sale);
    this.#append({
      k: 'sale',
      n: event.network,
      c: event.collection.toLowerCase(),
      at: sale.at,
      tx: sale.txnHash,
      t: sale.tokens.map((t) => [t.tokenId, t.amount, t.usd ?? null]),
    });
  }

  #add(network: string, collection: string, sale: RecordedSale): void {
    const history = this.#collection(network, collection);
    const last = history.sales.at(-1);
    if (last && sale.at < last.at) {
      insertSorted(history.sales, sale);
      this.#reindex(history);
    } else {
      history.sales.push(sale);
      sale.tokens.forEach((t, index) => {
        if (t.tokenId) history.lastByToken.set(t.tokenId, { sale, index });
      });
    }
    if (history.sales.length > MAX_SALES_PER_COLLECTION) {
      const gone = history.sales.splice(0, history.sales.length - MAX_SALES_PER_COLLECTION);
      this.#forget(network, history, gone);
      this.#reindex(history);
    }
    history.touched = this.#now();
  }

  #collection(network: string, collection: string): CollectionHistory {
    const key = keyOf(network, collection);
    let history = this.#collections.get(key);
    if (!history) {
      history = {
        network,
        collection: collection.toLowerCase(),
        sales: [],
        floors: [],
        lastByToken: new Map(),
        touched: this.#now(),
      };
      this.#collections.set(key, history);
      if (this.#collections.size > MAX_COLLECTIONS) this.#dropStalest();
    }
    return history;
  }

  #dropStalest(): void {
    let stalest: [string, CollectionHistory] | undefined;
    for (const entry of this.#collections) if (!stalest || entry[1].touched < stalest[1].touched) stalest = entry;
    if (!stalest) return;
    this.#collections.delete(stalest[0]);
    this.#forget(stalest[1].network, stalest[1], stalest[1].sales);
    this.#dead += stalest[1].floors.length;
    this.#live -= stalest[1].floors.length;
  }

  #forget(network: string, history: CollectionHistory, sales: readonly RecordedSale[]): void {
    for (const sale of sales) this.#seen.delete(saleKey(network, sale.txnHash, history.collection));
    this.#dead += sales.length;
    this.#live -= sales.length;
  }

  #reindex(history: CollectionHistory): void {
    history.lastByToken.clear();
    for (const sale of history.sales) {
      sale.tokens.forEach((t, index) => {
        if (t.tokenId) history.lastByToken.set(t.tokenId, { sale, index });
      });
    }
  }

  #removeSales(network: string, txnHash: string): number {
    let removed = 0;
    for (const history of this.#collections.values()) {
      if (history.network !== network) continue;
      const gone = history.sales.filter((s) => s.txnHash === txnHash);
      if (gone.length === 0) continue;
      history.sales = history.sales.filter((s) => s.txnHash !== txnHash);
      this.#forget(network, history, gone);
      this.#reindex(history);
      removed += gone.length;
    }
    return removed;
  }

  /** Drops what is older than the retention; compacts the file when most of it is dead. */
  async #maintain(): Promise<void> {
    this.#prune();
    if (this.#readOnly || this.#closed || this.#dead <= Math.max(1_000, this.#live)) return;
    await this.#compact();
  }

  #prune(): void {
    const cutoff = this.#now() - this.#retentionMs;
    for (const [key, history] of this.#collections) {
      const sales = history.sales.findIndex((s) => s.at >= cutoff);
      const oldSales = sales === -1 ? history.sales.length : sales;
      if (oldSales > 0) {
        this.#forget(history.network, history, history.sales.splice(0, oldSales));
        this.#reindex(history);
      }
      const floors = history.floors.findIndex((s) => s.at >= cutoff);
      // The last sample before the cutoff stays: it is the floor when the week began.
      const oldFloors = (floors === -1 ? history.floors.length : floors) - 1;
      if (oldFloors > 0) {
        history.floors.splice(0, oldFloors);
        this.#dead += oldFloors;
        this.#live -= oldFloors;
      }
      if (history.sales.length === 0 && history.floors.every((f) => f.at < cutoff)) {
        this.#collections.delete(key);
        this.#dead += history.floors.length;
        this.#live -= history.floors.length;
      }
    }
  }

  #append(line: Line): void {
    this.#live += line.k === 'reorg' ? 0 : 1;
    if (line.k === 'reorg') this.#dead++;
    if (this.#readOnly) return;
    const text = `${JSON.stringify(line)}\n`;
    this.#pending.push(text);
    if (this.#pending.length === 1) this.#writes = this.#writes.then(() => this.#writePending());
  }

  async #writePending(): Promise<void> {
    const text = this.#pending.join('');
    this.#pending.length = 0;
    if (!text || !this.#handle) return;
    try {
      await this.#handle.appendFile(text);
      if (this.#writeFailing) {
        this.#writeFailing = false;
        this.#options.logger.info({ file: this.file }, 'the market history is written again');
      }
    } catch (error) {
      if (!this.#writeFailing) {
        this.#writeFailing = true;
        this.#options.logger.warn(
          { file: this.file, err: error },
          'could not write the market history: it is kept in memory only until a write succeeds',
        );
      }
    }
  }

  async #load(): Promise<void> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    const cutoff = this.#now() - this.#retentionMs;
    let unreadable = 0;
    const lines = text.split('\n');
    for (const [index, raw] of lines.entries()) {
      if (raw.trim() === '') continue;
      let line: Line | undefined;
      try {
        line = readLine(JSON.parse(raw));
      } catch {
        line = undefined;
      }
      if (!line) {
        // A torn last line is what a crash mid-write leaves: not worth a warning.
        if (index < lines.length - 1) unreadable++;
        this.#dead++;
        continue;
      }
      if (line.k === 'history') {
        if (line.v > FORMAT_VERSION) {
          this.#options.logger.error(
            { file: this.file, version: line.v },
            'the market history file is of a newer version: it is left untouched and the history is kept in memory only',
          );
          this.#readOnly = true;
          this.#collections.clear();
          this.#seen.clear();
          this.#since = this.#now();
          return;
        }
        this.#since = Math.min(line.since, this.#since ?? line.since);
        continue;
      }
      if (line.k === 'reorg') {
        this.#removeSales(line.n, line.tx);
        this.#dead++;
        continue;
      }
      if (line.k === 'floor') {
        insertSorted(this.#collection(line.n, line.c).floors, { at: line.at, usd: line.usd });
        this.#live++;
        continue;
      }
      if (line.at < cutoff) {
        this.#dead++;
        continue;
      }
      const key = saleKey(line.n, line.tx, line.c);
      if (this.#seen.has(key)) {
        this.#dead++;
        continue;
      }
      this.#seen.add(key);
      const tokens = line.t.map(([tokenId, amount, usd]) =>
        usd === null ? { tokenId, amount } : { tokenId, amount, usd },
      );
      this.#add(line.n, line.c, { at: line.at, txnHash: line.tx, tokens });
      this.#live++;
    }
    this.#prune();
    if (unreadable > 0) {
      this.#options.logger.warn(
        { file: this.file, lines: unreadable },
        'skipped unreadable lines of the market history',
      );
    }
  }

  /** Rewrites the file with the live records only (beside it, then renamed over it). */
  #compact(): Promise<void> {
    const run = async () => {
      this.#since ??= this.#now();
      const temp = `${this.file}.compact`;
      const lines: Line[] = [{ k: 'history', v: FORMAT_VERSION, since: this.#since }];
      for (const history of this.#collections.values()) {
        for (const f of history.floors) lines.push({ k: 'floor', n: history.network, c: history.collection, ...f });
        for (const s of history.sales) {
          lines.push({
            k: 'sale',
            n: history.network,
            c: history.collection,
            at: s.at,
            tx: s.txnHash,
            t: s.tokens.map((t) => [t.tokenId, t.amount, t.usd ?? null]),
          });
        }
      }
      // Lines queued before this point are in the snapshot; they are appended again if it fails.
      const queued = this.#pending.splice(0);
      try {
        await this.#handle?.close();
        this.#handle = undefined;
        const out = await open(temp, 'w');
        try {
          await out.writeFile(lines.map((l) => `${JSON.stringify(l)}\n`).join(''));
          await out.sync();
        } finally {
          await out.close();
        }
        await rename(temp, this.file);
        this.#dead = 0;
        this.#live = lines.length - 1;
      } catch (error) {
        await rm(temp, { force: true }).catch(() => undefined);
        this.#options.logger.warn({ file: this.file, err: error }, 'could not compact the market history');
        if (queued.length > 0) {
          const scheduled = this.#pending.length > 0;
          this.#pending.unshift(...queued);
          if (!scheduled) this.#writes = this.#writes.then(() => this.#writePending());
        }
      }
      if (!this.#handle) {
        try {
          this.#handle = await open(this.file, 'a');
        } catch (error) {
          this.#options.logger.warn({ file: this.file, err: error }, 'could not open the market history');
        }
      }
    };
    this.#writes = this.#writes.then(run);
    return this.#writes;
  }
}

function priced(tokenId: string, amount: string, order: Order | undefined): RecordedSale['tokens'][number] {
  return order ? { tokenId, amount, usd: order.priceUSD * (Number(amount) || 1) } : { tokenId, amount };
}

/** Inserts by time, after any record of the same time. */
function insertSorted<T extends { at: number }>(list: T[], item: T): void {
  let index = list.length;
  while (index > 0 && (list[index - 1] as T).at > item.at) index--;
  list.splice(index, 0, item);
}

function isText(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length < 200;
}

function isTime(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0;
}

/** A line of the file, or undefined when it is not one this version writes. */
function readLine(value: unknown): Line | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  switch (v.k) {
    case 'history':
      return typeof v.v === 'number' && isTime(v.since) ? { k: 'history', v: v.v, since: v.since } : undefined;
    case 'reorg':
      return isText(v.n) && isText(v.tx) ? { k: 'reorg', n: v.n, tx: v.tx } : undefined;
    case 'floor':
      return isText(v.n) && isText(v.c) && isTime(v.at) && isTime(v.usd)
        ? { k: 'floor', n: v.n, c: v.c, at: v.at, usd: v.usd }
        : undefined;
    case 'sale': {
      if (!isText(v.n) || !isText(v.c) || !isTime(v.at) || !isText(v.tx) || !Array.isArray(v.t)) return undefined;
      const tokens: Array<[string, string, number | null]> = [];
      for (const item of v.t as unknown[]) {
        // An empty token id: a sale known by its order alone, its token unknown.
        if (!Array.isArray(item) || typeof item[0] !== 'string' || item[0].length > 200 || !isText(item[1])) {
          return undefined;
        }
        const usd: unknown = item[2];
        if (usd !== null && !isTime(usd)) return undefined;
        tokens.push([item[0], item[1], usd]);
      }
      return tokens.length > 0 ? { k: 'sale', n: v.n, c: v.c, at: v.at, tx: v.tx, t: tokens } : undefined;
    }
    default:
      return undefined;
  }
}
