/**
 * The bot's own record of each collection's market: what commands, digests and alerts read of it,
 * and the port its stores implement.
 */
import type { ChartPoint } from '../platform/types.ts';

/** The last recorded sale of one token. */
export interface TokenSale {
  at: number;
  /** Price per unit in USD, when known. */
  usd?: number;
  /** Who bought it (lower case), when the record says: the seller of its next sale paid this. */
  buyer?: string;
  /** Units of the token sold then. */
  units?: string;
  /** What was paid for all those units, in the order's currency, when known. */
  paid?: PaidPrice;
}

/** A price in a currency's smallest units: `amount` 1500000000000000000 with 18 decimals is 1.5. */
export interface PaidPrice {
  /** Integer string, smallest units of the currency. */
  amount: string;
  /** Lower-case currency contract (the zero address for the native coin). */
  currency: string;
  decimals: number;
}

/** A floor as the bot looked it up: the cheapest listing of the collection, per token in USD. */
export interface FloorSample {
  at: number;
  usd: number;
}

/** What the bot recorded of a collection over a window ending now. */
export interface WindowActivity {
  /** Start of the window, or when recording began if that is later. */
  from: number;
  /** Whether the bot was recording when the window began. */
  complete: boolean;
  /** Tokens sold (a sweep of three is three sales). */
  sales: number;
  /** Of those, how many have a price in USD. */
  priced: number;
  /** Total USD of the priced sales. */
  volumeUsd: number;
  /** The floor when the window began: the last sample before it, else the first one in it. */
  floorThen: FloorSample | undefined;
}

/** A collection's market day by day, for charts: days as their labels (the caller's time zone). */
export interface DailyMarket {
  /** The floor at the end of each day that has one (the last sample of the day, else the day before's). */
  floor: ChartPoint[];
  /** USD of the priced sales of each day (0 on a day without any). */
  volume: ChartPoint[];
}

/** What commands and digests read of the history (and the floors they look up, which they record). */
export interface MarketHistoryView {
  /** When the bot began recording (ms), or undefined when it has not yet. */
  since(): Promise<number | undefined>;
  activity(network: string, collection: string, windowMs: number, now: number): Promise<WindowActivity>;
  daily(
    network: string,
    collection: string,
    days: readonly string[],
    dayOf: (at: number) => string,
  ): Promise<DailyMarket>;
  /**
   * A floor looked up at `at` (ms): samples closer together than {@link FLOOR_SAMPLE_INTERVAL_MS}
   * are one. A floor a command or a digest looked up and shows (`lookedUp`) replaces a sample the
   * alerts recorded within that interval before it, so that a chart drawn next shows the same floor
   * as the text. Never rejects: a floor that cannot be kept is logged by the store.
   */
  floor(network: string, collection: string, usd: number, at: number, lookedUp?: boolean): Promise<void>;
  lastSale(network: string, collection: string, tokenId: string): Promise<TokenSale | undefined>;
}

/** How long sales and floor samples are kept. */
export const MARKET_HISTORY_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;
/** The longest relist window (FLOORWATCH_RELIST_WINDOW_HOURS at most 720): how long listings are remembered. */
export const LISTING_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;
/** Floor samples closer together than this are one: a week of samples stays small. */
export const FLOOR_SAMPLE_INTERVAL_MS = 5 * 60 * 1000;

/** One sale as recorded: a transaction's tokens of one collection. */
export interface RecordedSale {
  network: string;
  /** Lower case. */
  collection: string;
  /** Lower case. */
  txnHash: string;
  /** Block time, ms since the epoch. */
  at: number;
  /** The one buyer (lower case), when the sale names one. */
  buyer?: string;
  /**
   * Tokens sold, each with its price in USD for all its units when known, and what was paid for
   * them in the order's currency. An empty token id: a sale known by its order alone, its token unknown.
   */
  tokens: Array<{ tokenId: string; amount: string; usd?: number; paid?: PaidPrice }>;
}

/** A listing, by what makes two of them identical (token, seller, price and currency), and when it was seen. */
export interface SeenListing {
  network: string;
  /** Identity of the listing within the network: collection, tokens, seller, price, currency. */
  key: string;
  txnHash: string;
  /** When it was seen (ms). */
  at: number;
}

/**
 * The bot's own record of each collection's market: sales (priced by the alert path), floors,
 * listings seen lately. The file adapter keeps it in the data directory for one process; the
 * PostgreSQL adapter in tables shared by every process, so that /collection and relists are the same
 * whichever process saw the sales and listings. Writes are idempotent: a sale or a listing recorded
 * twice (a stream resumed, two ingest leaders in turn) counts once.
 */
export interface MarketHistory extends MarketHistoryView {
  /** Records sales; one already recorded (same network, transaction and collection) is skipped. */
  addSales(sales: readonly RecordedSale[]): Promise<void>;
  /** A transaction reorganised away: its sales did not happen, its listings were not made. */
  reorged(network: string, txnHash: string): Promise<void>;
  /**
   * Remembers a listing, and tells whether an identical one was seen within the last `windowMs` in
   * another transaction that was not reorganised away (then the listing only repeats it).
   */
  relist(listing: SeenListing, windowMs: number): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * A collection's market day by day from its sales and floor samples (both in time order): each day's
 * USD volume, and its closing floor, carried over days without a sample. Both stores answer
 * {@link MarketHistoryView.daily} with it.
 */
export function dailyMarket(
  sales: ReadonlyArray<Pick<RecordedSale, 'at' | 'tokens'>>,
  floors: readonly FloorSample[],
  days: readonly string[],
  dayOf: (at: number) => string,
): DailyMarket {
  const volume = new Map<string, number>(days.map((day) => [day, 0]));
  const closing = new Map<string, number>();
  for (const sale of sales) {
    const day = dayOf(sale.at);
    const sum = volume.get(day);
    if (sum === undefined) continue;
    volume.set(day, sum + sale.tokens.reduce((usd, token) => usd + (token.usd ?? 0), 0));
  }
  const first = days[0];
  let carried: number | undefined;
  for (const sample of floors) {
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
