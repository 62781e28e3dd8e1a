import type { ChartPoint } from '../platform/types.ts';
/** What commands and digests read of the bot's own record of each collection's market. */

/** How long the record keeps sales and floor samples: a week. */
export const MARKET_HISTORY_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/** The last recorded sale of one token. */
export interface TokenSale {
  at: number;
  /** Price per unit in USD, when known. */
  usd?: number;
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

/** What commands read of the history (and the floors they look up, which they record). */
export interface MarketHistoryView {
  /** When the bot began recording (ms), or undefined when it has not yet. */
  since(): number | undefined;
  activity(network: string, collection: string, windowMs: number, now: number): WindowActivity;
  daily(network: string, collection: string, days: readonly string[], dayOf: (at: number) => string): DailyMarket;
  /**
   * A floor a command or a digest looked up and shows: it replaces a sample the alerts recorded
   * within the sampling interval before it, so that a chart drawn next shows the same floor as the text.
   */
  floor(network: string, collection: string, usd: number, at: number, lookedUp?: boolean): void;
  lastSale(network: string, collection: string, tokenId: string): TokenSale | undefined;
}
