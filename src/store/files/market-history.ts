/**
 * The market history in the data directory: in memory, with an append-only JSON Lines file so that a
 * restart keeps the week (see core/market.ts for what it records, and alerts/market.ts for how sales
 * are priced before they reach it).
 *
 * ## Where it lives, and why there
 *
 * The delivery journal cannot stand in for it (it holds only the sales some chat was alerted about,
 * and forgets them once final), and a week of a busy marketplace is a few megabytes. The file is read
 * once on open and compacted then (old, reorganised and unreadable lines go) and every hour when it
 * holds more dead lines than live ones. Nothing here is critical: an unreadable line is skipped, a
 * failed write is logged and the record stays in memory.
 *
 * ## File format
 *
 * ```
 * {"k":"history","v":1,"since":1764000000000}
 * {"k":"sale","n":"devnet","c":"0xc0…","at":1764000123000,"tx":"0xab…","t":[["12","1",2940.5],["13","1",null]]}
 * {"k":"floor","n":"devnet","c":"0xc0…","at":1764000124000,"usd":2890}
 * {"k":"listing","n":"devnet","key":"0xc0…|12x1|0xse…|1000|0x00…","tx":"0xcd…","at":1764000125000}
 * {"k":"reorg","n":"devnet","tx":"0xab…"}
 * ```
 *
 * `t` lists the tokens sold: id, units, and their price in USD (all units) or null when unknown,
 * then, when known, what was paid for them in the order's currency: amount in its smallest units,
 * currency contract, decimals (`["12","1",2940.5,"1500000000000000000","0x00…",18]`). `b` is the
 * buyer when the sale names one. Lines without them (an earlier file) read as sales of unknown buyer
 * and payment.
 * The sales of a collection nobody watches come without their transfers (the stream is subscribed
 * to the marketplace's logs, not to the collection's): their tokens are those of the orders, one
 * unit each, and an empty id when the order could not be read. A `listing` line is a listing seen,
 * remembered to recognise an identical relist; a file of an earlier version without them reads as is.
 */
import { type FileHandle, open, readFile, rename, rm } from 'node:fs/promises';
import type { Logger } from 'pino';
import {
  type DailyMarket,
  dailyMarket,
  FLOOR_SAMPLE_INTERVAL_MS,
  type FloorSample,
  LISTING_RETENTION_MS,
  MARKET_HISTORY_RETENTION_MS,
  type MarketHistory,
  type RecordedSale,
  type SeenListing,
  type TokenSale,
  type WindowActivity,
} from '../../core/market.ts';
import { StoreFileError } from '../../core/store-errors.ts';

const HOUR_MS = 60 * 60 * 1000;

/** Sales kept per collection (the oldest go first): a week of a very busy collection. */
export const MAX_SALES_PER_COLLECTION = 50_000;
/** Collections kept; the one whose last record is the oldest goes first. */
export const MAX_COLLECTIONS = 5_000;
/** Listings remembered (the oldest go first) to recognise relists. */
export const MAX_LISTINGS = 50_000;

const FORMAT_VERSION = 1;

export interface FileMarketHistoryOptions {
  logger: Logger;
  /** How often old records are dropped and the file compacted if worth it. Default 1 h. */
  compactEveryMs?: number;
  retentionMs?: number;
  now?: () => number;
}

/** Everything a market history file holds (see {@link FileMarketHistory.read}). */
export interface MarketHistoryContent {
  /** When recording began; undefined when there is no file. */
  since: number | undefined;
  /** Per collection, in block-time order. */
  sales: RecordedSale[];
  /** Per collection, in time order. */
  floors: Array<{ network: string; collection: string } & FloorSample>;
  /** Oldest seen first. */
  listings: SeenListing[];
}

/** A sale as kept per collection: its network and collection are the collection's. */
type KeptSale = Omit<RecordedSale, 'network' | 'collection'>;

interface CollectionHistory {
  network: string;
  collection: string;
  /** In block-time order. */
  sales: KeptSale[];
  floors: FloorSample[];
  lastByToken: Map<string, { sale: KeptSale; index: number }>;
  touched: number;
}

type Line =
  | { k: 'history'; v: number; since: number }
  | { k: 'sale'; n: string; c: string; at: number; tx: string; b?: string; t: TokenEntry[] }
  | { k: 'floor'; n: string; c: string; at: number; usd: number }
  | { k: 'listing'; n: string; key: string; tx: string; at: number }
  | { k: 'reorg'; n: string; tx: string };

/** A token of a sale line: id, units, USD or null, then optionally the amount paid, its currency and decimals. */
type TokenEntry = [string, string, number | null] | [string, string, number | null, string, string, number];

const keyOf = (network: string, collection: string) => `${network}:${collection.toLowerCase()}`;
const saleKey = (network: string, txnHash: string, collection: string) =>
  `${network}:${txnHash.toLowerCase()}:${collection.toLowerCase()}`;
const listingKey = (network: string, key: string) => `${network}|${key}`;

/** {@link MarketHistory} in memory and in a file of the data directory. One process per file (the data directory's lease sees to it). */
export class FileMarketHistory implements MarketHistory {
  readonly file: string;
  readonly #options: FileMarketHistoryOptions;
  readonly #now: () => number;
  readonly #retentionMs: number;
  readonly #collections = new Map<string, CollectionHistory>();
  /** Sales recorded, so that a sale seen twice (a stream resumed) counts once. */
  readonly #seen = new Set<string>();
  /** Listings seen lately, by network and identity, in the order they were last seen (oldest first). */
  readonly #listings = new Map<string, { txnHash: string; at: number }>();
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
  #compactTimer: NodeJS.Timeout | undefined;
  #closed = false;

  private constructor(file: string, options: FileMarketHistoryOptions) {
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
  static async open(file: string, options: FileMarketHistoryOptions): Promise<FileMarketHistory> {
    const history = new FileMarketHistory(file, options);
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
    history.#compactTimer = setInterval(() => void history.#maintain(), options.compactEveryMs ?? HOUR_MS);
    history.#compactTimer.unref();
    return history;
  }

  /**
   * What {@link FileMarketHistory.open} would hold (old records left out as it leaves them out), read
   * only: nothing is written or compacted (for `npm run migrate-data`, which leaves the files as they
   * were). A missing file holds nothing. Unlike open, which then keeps the history in memory only, it
   * throws a {@link StoreFileError} when the file cannot be read or is of a newer version: a move
   * must not drop a record silently.
   */
  static async read(file: string, options: FileMarketHistoryOptions): Promise<MarketHistoryContent> {
    const history = new FileMarketHistory(file, options);
    try {
      await history.#load();
    } catch (cause) {
      throw new StoreFileError(file, `cannot be read (${cause instanceof Error ? cause.message : String(cause)})`, {
        cause,
      });
    }
    if (history.#readOnly) {
      throw new StoreFileError(
        file,
        `was written by a newer Floorwatch (this one reads up to version ${FORMAT_VERSION})`,
      );
    }
    const content: MarketHistoryContent = { since: history.#since, sales: [], floors: [], listings: [] };
    for (const { network, collection, sales, floors } of history.#collections.values()) {
      for (const sale of sales) content.sales.push({ network, collection, ...sale });
      for (const floor of floors) content.floors.push({ network, collection, ...floor });
    }
    for (const [key, seen] of history.#listings) {
      const bar = key.indexOf('|');
      content.listings.push({
        network: key.slice(0, bar),
        key: key.slice(bar + 1),
        txnHash: seen.txnHash,
        at: seen.at,
      });
    }
    return content;
  }

  async since(): Promise<number | undefined> {
    return this.#since;
  }

  async addSales(sales: readonly RecordedSale[]): Promise<void> {
    for (const sale of sales) {
      if (this.#closed) return;
      const key = saleKey(sale.network, sale.txnHash, sale.collection);
      if (this.#seen.has(key)) continue;
      this.#seen.add(key);
      const kept: KeptSale = {
        at: sale.at,
        txnHash: sale.txnHash.toLowerCase(),
        tokens: sale.tokens,
        ...(sale.buyer ? { buyer: sale.buyer.toLowerCase() } : {}),
      };
      this.#add(sale.network, sale.collection, kept);
      this.#append(saleLine(sale.network, sale.collection.toLowerCase(), kept));
    }
  }

  async floor(network: string, collection: string, usd: number, at: number, lookedUp = false): Promise<void> {
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

  async reorged(network: string, txnHash: string): Promise<void> {
    const tx = txnHash.toLowerCase();
    const sales = this.#removeSales(network, tx);
    const listings = this.#removeListings(network, tx);
    if (sales + listings > 0) this.#append({ k: 'reorg', n: network, tx });
  }

  async relist(listing: SeenListing, windowMs: number): Promise<boolean> {
    const key = listingKey(listing.network, listing.key);
    const earlier = this.#listings.get(key);
    const txnHash = listing.txnHash.toLowerCase();
    this.#listings.delete(key);
    this.#listings.set(key, { txnHash, at: listing.at });
    if (this.#listings.size > MAX_LISTINGS) {
      const oldest = this.#listings.keys().next().value;
      if (oldest !== undefined) this.#listings.delete(oldest);
      this.#dead++;
      this.#live--;
    }
    if (!this.#closed)
      this.#append({ k: 'listing', n: listing.network, key: listing.key, tx: txnHash, at: listing.at });
    if (earlier) {
      this.#dead++;
      this.#live--;
    }
    return earlier !== undefined && earlier.txnHash !== txnHash && listing.at - earlier.at < windowMs;
  }

  async lastSale(network: string, collection: string, tokenId: string): Promise<TokenSale | undefined> {
    const found = this.#collections.get(keyOf(network, collection))?.lastByToken.get(tokenId);
    if (!found) return undefined;
    const token = found.sale.tokens[found.index];
    if (!token) return undefined;
    const units = Number(token.amount) || 1;
    return {
      at: found.sale.at,
      units: token.amount,
      ...(token.usd === undefined ? {} : { usd: token.usd / units }),
      ...(found.sale.buyer ? { buyer: found.sale.buyer } : {}),
      ...(token.paid ? { paid: token.paid } : {}),
    };
  }

  async activity(network: string, collection: string, windowMs: number, now: number): Promise<WindowActivity> {
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
      const sale = history.sales[i] as KeptSale;
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

  async daily(
    network: string,
    collection: string,
    days: readonly string[],
    dayOf: (at: number) => string,
  ): Promise<DailyMarket> {
    const history = this.#collections.get(keyOf(network, collection));
    return dailyMarket(history?.sales ?? [], history?.floors ?? [], days, dayOf);
  }

  /** Writes what is queued and closes the file. */
  async close(): Promise<void> {
    clearInterval(this.#compactTimer);
    this.#closed = true;
    await this.#writes;
    await this.#handle?.close();
    this.#handle = undefined;
  }

  /** Resolves once every line queued so far is written (or failed, and logged). */
  flushed(): Promise<void> {
    return this.#writes;
  }

  #add(network: string, collection: string, sale: KeptSale): void {
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

  #forget(network: string, history: CollectionHistory, sales: readonly KeptSale[]): void {
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

  #removeListings(network: string, txnHash: string): number {
    let removed = 0;
    const prefix = `${network}|`;
    for (const [key, seen] of this.#listings) {
      if (seen.txnHash !== txnHash || !key.startsWith(prefix)) continue;
      this.#listings.delete(key);
      removed++;
    }
    this.#dead += removed;
    this.#live -= removed;
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
    // A listing is remembered for the longest relist window (the window itself is the caller's).
    const listingCutoff = this.#now() - LISTING_RETENTION_MS;
    for (const [key, seen] of this.#listings) {
      if (seen.at >= listingCutoff) break;
      this.#listings.delete(key);
      this.#dead++;
      this.#live--;
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
          this.#listings.clear();
          this.#since = this.#now();
          return;
        }
        this.#since = Math.min(line.since, this.#since ?? line.since);
        continue;
      }
      if (line.k === 'reorg') {
        this.#removeSales(line.n, line.tx);
        this.#removeListings(line.n, line.tx);
        this.#dead++;
        continue;
      }
      if (line.k === 'floor') {
        const floors = this.#collection(line.n, line.c).floors;
        const last = floors.at(-1);
        // Only a looked-up floor is written this close to the sample before it: it replaced that one,
        // unless that one was the collection's first (see floor()).
        if (last && floors.length > 1 && line.at >= last.at && line.at - last.at < FLOOR_SAMPLE_INTERVAL_MS) {
          floors[floors.length - 1] = { at: line.at, usd: line.usd };
          this.#dead++;
        } else {
          insertSorted(floors, { at: line.at, usd: line.usd });
          this.#live++;
        }
        continue;
      }
      if (line.k === 'listing') {
        if (line.at < this.#now() - LISTING_RETENTION_MS) {
          this.#dead++;
          continue;
        }
        const key = listingKey(line.n, line.key);
        if (this.#listings.delete(key)) this.#dead++;
        else this.#live++;
        this.#listings.set(key, { txnHash: line.tx, at: line.at });
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
      const tokens = line.t.map(([tokenId, amount, usd, paid, currency, decimals]) => ({
        tokenId,
        amount,
        ...(usd === null ? {} : { usd }),
        ...(paid !== undefined && currency !== undefined && decimals !== undefined
          ? { paid: { amount: paid, currency, decimals } }
          : {}),
      }));
      this.#add(line.n, line.c, { at: line.at, txnHash: line.tx, tokens, ...(line.b ? { buyer: line.b } : {}) });
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
        for (const s of history.sales) lines.push(saleLine(history.network, history.collection, s));
      }
      for (const [key, seen] of this.#listings) {
        const bar = key.indexOf('|');
        lines.push({ k: 'listing', n: key.slice(0, bar), key: key.slice(bar + 1), tx: seen.txnHash, at: seen.at });
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

/** The line of a sale kept for `collection` (lower case) of `network`. */
function saleLine(network: string, collection: string, sale: KeptSale): Line {
  return {
    k: 'sale',
    n: network,
    c: collection,
    at: sale.at,
    tx: sale.txnHash,
    ...(sale.buyer ? { b: sale.buyer } : {}),
    t: sale.tokens.map((t): TokenEntry => {
      const usd = t.usd ?? null;
      return t.paid
        ? [t.tokenId, t.amount, usd, t.paid.amount, t.paid.currency, t.paid.decimals]
        : [t.tokenId, t.amount, usd];
    }),
  };
}

/** Inserts by time, after any record of the same time. */
function insertSorted<T extends { at: number }>(list: T[], item: T): void {
  let index = list.length;
  while (index > 0 && (list[index - 1] as T).at > item.at) index--;
  list.splice(index, 0, item);
}

function isText(value: unknown, max = 200): value is string {
  return typeof value === 'string' && value.length > 0 && value.length < max;
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
    case 'listing':
      return isText(v.n) && isText(v.key, 4_000) && isText(v.tx) && isTime(v.at)
        ? { k: 'listing', n: v.n, key: v.key, tx: v.tx, at: v.at }
        : undefined;
    case 'sale': {
      if (!isText(v.n) || !isText(v.c) || !isTime(v.at) || !isText(v.tx) || !Array.isArray(v.t)) return undefined;
      if (v.b !== undefined && !isText(v.b)) return undefined;
      const tokens: TokenEntry[] = [];
      for (const item of v.t as unknown[]) {
        // An empty token id: a sale known by its order alone, its token unknown.
        if (!Array.isArray(item) || typeof item[0] !== 'string' || item[0].length > 200 || !isText(item[1])) {
          return undefined;
        }
        const usd: unknown = item[2];
        if (usd !== null && !isTime(usd)) return undefined;
        if (item.length === 3) {
          tokens.push([item[0], item[1], usd]);
          continue;
        }
        const [, , , paid, currency, decimals] = item as unknown[];
        if (
          item.length !== 6 ||
          typeof paid !== 'string' ||
          !/^\d{1,78}$/.test(paid) ||
          !isText(currency) ||
          typeof decimals !== 'number' ||
          !Number.isInteger(decimals) ||
          decimals < 0 ||
          decimals > 36
        ) {
          return undefined;
        }
        tokens.push([item[0], item[1], usd, paid, currency, decimals]);
      }
      return tokens.length > 0
        ? { k: 'sale', n: v.n, c: v.c, at: v.at, tx: v.tx, t: tokens, ...(isText(v.b) ? { b: v.b } : {}) }
        : undefined;
    }
    default:
      return undefined;
  }
}
