/**
 * Sale context: what a sale alert says beside the floor and the last sale.
 *
 * - **Held for** and **profit or loss** come from the bot's market record (core/market.ts): the
 *   token's previous recorded sale, when its buyer is this sale's seller. The platform has no query
 *   for a token's transfer or sale history (shared/spec/platform-api.md), so nothing is guessed
 *   beyond the record: a seller the record did not see buy the token (minted it, was sent it, bought
 *   it before recording began) gets neither line. Profit is the sale price less what the seller paid,
 *   before fees and royalties, in this sale's currency; a purchase in another currency is converted
 *   through US dollars at the prices' own rates, and left out when one of them is unknown.
 * - **Buyer**: how many units of the collection the buyer holds after the sale, from the platform's
 *   balances (GetTokenBalancesByContract, records checked by the client's schemas). Look-ups are
 *   batched per collection (one call in flight, the wallets asked meanwhile gathered into the next)
 *   and kept briefly; a wallet seen moving tokens of the collection is forgotten at once. An answer
 *   that does not yet show the tokens just bought (an index behind the stream) says nothing.
 * - **Whale**: the sale's US dollar value is at least FLOORWATCH_WHALE_USD.
 */
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { formatUnits, parseUnits } from 'viem';
import type { TokenSale } from '../core/market.ts';
import { displayAmount } from '../market/format.ts';
import { nextPage } from '../market/paging.ts';
import type { PlatformClient } from '../platform/client.ts';
import type { PriceInfo } from './rule-filters.ts';
import type { ChainEvent } from './types.ts';

/** Default of FLOORWATCH_WHALE_USD: a sale worth this much or more is marked. */
export const DEFAULT_WHALE_USD = 10_000;

/** What a buyer holds of a collection after a sale: units in all (each ERC-721 token is one). */
export interface BuyerHolds {
  units: bigint;
  /** They held none of it before this sale. */
  isNew: boolean;
}

/** The seller's result on a sale, in the sale's currency: `amount` is signed and formatted. */
export interface SaleProfit {
  /** `+0.5`, `-1,200`: formatted, with its sign. */
  amount: string;
  /** Relative to what was paid, when that was more than nothing. */
  percent?: number;
}

const DECIMAL = /^\d{1,78}$/;

/** The one token a sale sold, when it sold one (a sweep has no single holding time). */
function soldToken(event: ChainEvent): { tokenId: string; amount: bigint } | undefined {
  const only = event.tokens.length === 1 ? event.tokens[0] : undefined;
  if (event.kind !== 'sale' || !only || !DECIMAL.test(only.amount)) return undefined;
  return { tokenId: only.tokenId, amount: BigInt(only.amount) };
}

/**
 * Whether the recorded previous sale is the seller's purchase of what this sale sells: same
 * wallet, and no more units sold now than were bought then (more would include units it got
 * otherwise, held for some other time).
 */
function boughtBySeller(event: ChainEvent, previous: TokenSale | undefined): previous is TokenSale {
  const sold = soldToken(event);
  if (!sold || !previous?.buyer || !event.from || previous.buyer !== event.from.toLowerCase()) return false;
  if (previous.units === undefined || !DECIMAL.test(previous.units)) return false;
  return sold.amount > 0n && sold.amount <= BigInt(previous.units);
}

/** How long the seller held the token (ms): from their recorded purchase to this sale; undefined when unknown. */
export function heldFor(event: ChainEvent, previous: TokenSale | undefined): number | undefined {
  if (!boughtBySeller(event, previous)) return undefined;
  const gap = Date.parse(event.ts) - previous.at;
  return Number.isFinite(gap) && gap >= 0 ? gap : undefined;
}

/**
 * The seller's profit (negative: loss) on this sale, in its currency, from what they paid for the
 * units sold (see the module comment); undefined when the bot does not know both sides exactly.
 */
export function saleProfit(
  event: ChainEvent,
  previous: TokenSale | undefined,
  price: PriceInfo | undefined,
): SaleProfit | undefined {
  if (!boughtBySeller(event, previous) || !previous.paid || !price?.currency) return undefined;
  const sold = soldToken(event);
  const { paid } = previous;
  const boughtUnits = BigInt(previous.units ?? '1');
  if (!sold || !DECIMAL.test(paid.amount) || !/^\d+(\.\d+)?$/.test(price.amount)) return undefined;
  if (paid.currency === price.currency) {
    // One currency: exact, in its smallest units.
    const proceeds = parseUnits(price.amount, paid.decimals);
    const cost = (BigInt(paid.amount) * sold.amount) / boughtUnits;
    const diff = proceeds - cost;
    const shown = displayAmount(formatUnits(diff < 0n ? -diff : diff, paid.decimals));
    const amount = shown === '0' ? '±0' : `${diff < 0n ? '-' : '+'}${shown}`;
    return cost > 0n ? { amount, percent: (Number(diff) / Number(cost)) * 100 } : { amount };
  }
  // Another currency: both through US dollars, at the rates their own prices carry.
  const proceeds = Number(price.amount);
  const rate = price.usd !== undefined && proceeds > 0 ? price.usd / proceeds : price.usdRate?.(price.currency);
  if (previous.usd === undefined || rate === undefined || !(rate > 0)) return undefined;
  const cost = (previous.usd * Number(sold.amount)) / rate;
  if (!Number.isFinite(cost) || !(cost > 0)) return undefined;
  const diff = proceeds - cost;
  // Rates make it approximate: four significant digits, at most six decimals.
  const shown = displayAmount(Number(Math.abs(diff).toPrecision(4)).toFixed(6));
  const amount = shown === '0' ? '±0' : `${diff < 0 ? '-' : '+'}${shown}`;
  return { amount, percent: (diff / cost) * 100 };
}

/** Whether a sale worth `usd` is a whale's: at least `whaleUsd` (0 or less: never). */
export function isWhale(usd: number | undefined, whaleUsd: number): boolean {
  return whaleUsd > 0 && usd !== undefined && Number.isFinite(usd) && usd >= whaleUsd;
}

/** What a wallet holds of one collection: units by token id. */
type Holding = ReadonlyMap<string, bigint>;

export interface BuyerHoldingsOptions {
  logger: Logger;
  /** How long an answer is reused (default 15 s): balances change with every sale. */
  ttlMs?: number;
  /** Wallets remembered (default 10,000). */
  max?: number;
  /** Wallets asked about in one call (default 100). */
  accountsPerCall?: number;
  /** Balance rows per page (default 1,000, the platform's largest). */
  pageSize?: number;
}

/** Pages read for one call at most; a wallet past them is left unknown rather than miscounted. */
const MAX_PAGES = 10;
/**
 * A call is given up after this long (retries included): the next gathering waits for the call in
 * flight, and answers later than the alerts' budget serve nobody.
 */
const CALL_TIMEOUT_MS = 5_000;

/** Wallets of one collection waiting for the next call. */
interface Gathering {
  accounts: Set<string>;
  answer: Promise<Map<string, Holding>>;
}

/** Buyers' holdings of a collection, batched and cached (see the module comment). */
export class BuyerHoldings {
  readonly #platform: PlatformClient;
  readonly #logger: Logger;
  readonly #accountsPerCall: number;
  readonly #pageSize: number;
  readonly #cache: LRUCache<string, Holding>;
  /** Per collection: the wallets gathered for the next call. */
  readonly #gathering = new Map<string, Gathering>();
  /** Per collection: the call in flight, which the next waits for. */
  readonly #inFlight = new Map<string, Promise<unknown>>();
  /** Platform calls made (tests and benchmarks count them). */
  calls = 0;

  constructor(platform: PlatformClient, options: BuyerHoldingsOptions) {
    this.#platform = platform;
    this.#logger = options.logger;
    this.#accountsPerCall = Math.max(1, options.accountsPerCall ?? 100);
    this.#pageSize = Math.max(1, options.pageSize ?? 1_000);
    this.#cache = new LRUCache({ max: options.max ?? 10_000, ttl: options.ttlMs ?? 15_000 });
  }

  /**
   * Tokens of a collection moved: what the wallets involved held is no longer known, unless the
   * receiver's holding was read after it (it shows what it received).
   */
  moved(event: ChainEvent): void {
    if (this.#cache.size === 0) return;
    const received = event.to?.toLowerCase();
    const units = unitsOf(event);
    for (const account of event.accounts) {
      const key = keyOf(event.network, event.collection, account);
      const holding = account === received ? this.#cache.get(key) : undefined;
      if (holding && units && units.size > 0 && shows(holding, units)) continue;
      this.#cache.delete(key);
    }
  }

  /**
   * What the buyer of a sale holds of its collection now, including what it bought; undefined when
   * that cannot be told (no single buyer, a failed call, an answer not showing the purchase yet).
   */
  async buyerOf(event: ChainEvent): Promise<BuyerHolds | undefined> {
    const buyer = event.to?.toLowerCase();
    if (event.kind !== 'sale' || !buyer || event.tokens.length === 0) return undefined;
    const bought = unitsOf(event);
    if (!bought) return undefined;
    const key = keyOf(event.network, event.collection, buyer);
    let holding = this.#cache.get(key);
    if (!holding || !shows(holding, bought)) {
      holding = await this.#ask(event.network, event.collection.toLowerCase(), buyer);
      if (!holding || !shows(holding, bought)) return undefined;
    }
    let units = 0n;
    for (const held of holding.values()) units += held;
    let boughtUnits = 0n;
    for (const amount of bought.values()) boughtUnits += amount;
    return { units, isNew: units === boughtUnits };
  }

  /** The holding of `account`, from the next call for its collection. Never rejects. */
  #ask(network: string, collection: string, account: string): Promise<Holding | undefined> {
    const group = `${network}:${collection}`;
    let gathering = this.#gathering.get(group);
    if (!gathering) {
      const accounts = new Set<string>();
      const previous = this.#inFlight.get(group) ?? Promise.resolve();
      // Wallets asked while the call before is in flight (or in this turn of the event loop) go in one call.
      const answer = previous
        .then(() => new Promise<void>((resolve) => setImmediate(resolve)))
        .then(() => {
          if (this.#gathering.get(group) === gathering) this.#gathering.delete(group);
          return this.#read(network, collection, [...accounts]);
        });
      gathering = { accounts, answer };
      this.#gathering.set(group, gathering);
      const settled = answer.then(
        () => undefined,
        () => undefined,
      );
      this.#inFlight.set(group, settled);
      void settled.then(() => {
        if (this.#inFlight.get(group) === settled) this.#inFlight.delete(group);
      });
    }
    gathering.accounts.add(account);
    return gathering.answer.then(
      (found) => found.get(account),
      () => undefined,
    );
  }

  /** Reads the balances of `accounts` in `collection`, caching each; throws when a call fails. */
  async #read(network: string, collection: string, accounts: readonly string[]): Promise<Map<string, Holding>> {
    const found = new Map<string, Holding>();
    const reads: Promise<void>[] = [];
    for (let at = 0; at < accounts.length; at += this.#accountsPerCall) {
      reads.push(this.#readChunk(network, collection, accounts.slice(at, at + this.#accountsPerCall), found));
    }
    try {
      await Promise.all(reads);
    } catch (error) {
      this.#logger.warn(
        { network, collection, wallets: accounts.length, err: error },
        'could not read buyers’ balances: sale alerts go out without them',
      );
      throw error;
    }
    return found;
  }

  async #readChunk(
    network: string,
    collection: string,
    accounts: readonly string[],
    found: Map<string, Holding>,
  ): Promise<void> {
    const asked = new Set(accounts);
    const holdings = new Map<string, Map<string, bigint>>(accounts.map((a) => [a, new Map()]));
    let page: number | undefined;
    for (let pages = 0; pages < MAX_PAGES; pages++) {
      this.calls++;
      const result = await this.#platform.indexer.getTokenBalancesByContract(
        {
          network,
          filter: { contractAddresses: [collection], accountAddresses: [...accounts], contractStatus: 'ALL' },
          omitMetadata: true,
          page: page === undefined ? { pageSize: this.#pageSize } : { page, pageSize: this.#pageSize },
        },
        { timeoutMs: CALL_TIMEOUT_MS },
      );
      for (const row of result.balances) {
        const account = row.accountAddress.toLowerCase();
        const tokenId = row.tokenID;
        // Rows of other wallets or contracts, or without a token, are not this question's answer.
        if (!asked.has(account) || row.contractAddress.toLowerCase() !== collection) continue;
        if (tokenId === undefined || !DECIMAL.test(tokenId) || !DECIMAL.test(row.balance)) continue;
        const units = BigInt(row.balance);
        // A row repeated is one holding, not two.
        if (units > 0n) holdings.get(account)?.set(tokenId, units);
      }
      if (result.page.more !== true || result.balances.length === 0) {
        for (const [account, holding] of holdings) {
          found.set(account, holding);
          this.#cache.set(keyOf(network, collection, account), holding);
        }
        return;
      }
      page = nextPage(result.page, page);
    }
    this.#logger.warn({ network, collection, wallets: accounts.length }, 'buyers’ balances cut after too many pages');
  }
}

function keyOf(network: string, collection: string, account: string): string {
  return `${network}:${collection.toLowerCase()}:${account.toLowerCase()}`;
}

/** Units of each token an event moved; undefined when one is not a plain number. */
function unitsOf(event: ChainEvent): Map<string, bigint> | undefined {
  const units = new Map<string, bigint>();
  for (const token of event.tokens) {
    if (!DECIMAL.test(token.amount) || !DECIMAL.test(token.tokenId)) return undefined;
    units.set(token.tokenId, (units.get(token.tokenId) ?? 0n) + BigInt(token.amount));
  }
  return units;
}

/** Whether a holding shows every unit of `bought` (else the index has not seen the sale yet). */
function shows(holding: Holding, bought: ReadonlyMap<string, bigint>): boolean {
  for (const [tokenId, amount] of bought) if ((holding.get(tokenId) ?? 0n) < amount) return false;
  return true;
}
