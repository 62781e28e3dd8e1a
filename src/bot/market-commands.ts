/**
 * What the market commands share: trait conditions, order lines, a token's book page by page, the
 * answers to NotFound, and bounded counts of listings and holders. They take the command context;
 * the vocabulary they speak (amounts, prices, links) is src/market/.
 */
import { bold, code, type Inline, type Reply, type ReplyButton } from '../core/reply.ts';
import { byPriceAscending, formatPrice, marketplaceName, relativeTime, tokenName } from '../market/format.ts';
import { nextPage } from '../market/paging.ts';
import { PlatformApiError } from '../platform/errors.ts';
import type { CollectibleOrder, Order, PropertyFilter, TokenMetadata } from '../platform/types.ts';
import type { CommandContext, ResolvedCollection } from './command.ts';
import { ArgumentError, UserError } from './errors.ts';
import type { RarityLookup } from './rarity.ts';

/**
 * The `trait=value` words of a command, checked against the collection's traits: each becomes the
 * trait and value as the collection spells them. An unknown trait lists the traits; an unknown
 * value lists that trait's values.
 */
export async function traitConditions(
  ctx: CommandContext,
  collection: ResolvedCollection,
  usage: string,
): Promise<Array<{ filter: PropertyFilter; value: string }>> {
  if (ctx.typed.extras.size === 0) return [];
  const filters = await onCollection(collection, () =>
    ctx.platform.metadata.tokenCollectionFilters({
      network: collection.network,
      contractAddress: collection.address,
    }),
  );
  const out: Array<{ filter: PropertyFilter; value: string }> = [];
  for (const [key, wanted] of ctx.typed.extras) {
    const filter = filters.find((f) => f.name.toLowerCase() === key.toLowerCase());
    if (!filter) {
      throw new ArgumentError({ code: 'invalid_trait', input: key, allowed: filters.map((f) => f.name) }, usage);
    }
    const value = filter.values.map(String).find((v) => v.toLowerCase() === wanted.toLowerCase());
    if (value === undefined) {
      throw new ArgumentError(
        {
          code: 'invalid_trait',
          input: `${filter.name}=${wanted}`,
          allowed: filter.values.map((v) => `${filter.name}=${v}`).slice(0, 15),
        },
        usage,
      );
    }
    out.push({ filter, value });
  }
  return out;
}

/**
 * An order in two parts: its price (`1.5 ETH ($3,012.40)`) and the rest (`Sequence Market v2 · by
 * 0xab…cd · ends in 3 days`), for lists that head each entry with its price.
 */
export async function orderParts(
  ctx: CommandContext,
  network: string,
  order: Order,
): Promise<{ price: string; rest: [string, ...Inline[]] }> {
  const symbol = await ctx.currencies.symbol(network, order.priceCurrencyAddress);
  const parts = [marketplaceName(order)];
  const quantity = order.quantityAvailableFormatted || order.quantityRemainingFormatted;
  if (quantity && quantity !== '1') parts.push(`qty ${quantity}`);
  const ends = relativeTime(order.validUntil, ctx.now());
  if (ends && Date.parse(order.validUntil) - ctx.now().getTime() < 365 * 86_400_000) parts.push(`ends ${ends}`);
  return { price: formatPrice(order, symbol), rest: [parts.join(' · '), ' · by ', code(order.createdBy.slice(0, 10))] };
}

/** `1.5 ETH ($3,012.40) · Sequence Market v2 · by 0xab…cd · ends in 3 days` */
export async function describeOrder(ctx: CommandContext, network: string, order: Order): Promise<Inline[]> {
  const { price, rest } = await orderParts(ctx, network, order);
  const [first, ...others] = rest;
  return [`${price} · ${first}`, ...others];
}

/** The platform's "no such thing" (webrpc NotFound, or HTTP 404), not one of its other *NotFound errors. */
function isNotFound(error: unknown): error is PlatformApiError {
  return error instanceof PlatformApiError && (error.errorName === 'NotFound' || error.status === 404);
}

/** The answer for a collection the platform does not know; the platform's own words stay in the log. */
function missingCollection(collection: ResolvedCollection, cause: unknown): UserError {
  return new UserError(
    'unknown_collection_address',
    { address: collection.address, network: collection.network },
    { cause },
  );
}

/**
 * Runs a platform call about a whole collection (its listings, its traits). A NotFound from such a
 * call means the collection itself is unknown (an address typed with a typo, or of another network):
 * it becomes "No collection at 0x… on devnet." rather than the platform's words.
 */
export async function onCollection<T>(collection: ResolvedCollection, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw isNotFound(error) ? missingCollection(collection, error) : error;
  }
}

/**
 * Why a call about one token was refused as NotFound: the collection is unknown (asked once, of
 * the collection as a whole), else the token is. Throws the answer; other failures pass through.
 */
export async function explainNotFound(
  ctx: CommandContext,
  collection: ResolvedCollection,
  tokenId: string,
  error: unknown,
): Promise<never> {
  if (!isNotFound(error)) throw error;
  await onCollection(collection, () =>
    ctx.platform.marketplace.listCollectibles({
      network: collection.network,
      side: 'listing',
      contractAddress: collection.address,
      filter: { includeEmpty: true },
      page: { pageSize: 1 },
    }),
  );
  throw new UserError('token_not_found', { tokenId, collection: collection.name }, { cause: error });
}

/**
 * Fetches a token's metadata; a token (or collection) the platform does not know becomes a clear
 * user error.
 */
export async function fetchToken(
  ctx: CommandContext,
  collection: ResolvedCollection,
  tokenId: string,
): Promise<TokenMetadata> {
  try {
    return await ctx.platform.marketplace.getCollectible({
      network: collection.network,
      contractAddress: collection.address,
      tokenId,
    });
  } catch (error) {
    return explainNotFound(ctx, collection, tokenId, error);
  }
}

/** Pages of /listings and /offers people can flip through. */
export const MAX_BOOK_PAGES = 20;

/** Footer text: `Moon Cats · devnet` */
export function footerOf(collection: ResolvedCollection): string {
  return `${collection.name} · ${collection.network}`;
}

/** One side of a token's order book as people page through it. */
export interface BookSide {
  /** `Listings of`, `Offers on`. */
  title: string;
  tone: 'listing' | 'offer';
  /** Best first: cheapest listing, highest offer. */
  order: (a: Order, b: Order) => number;
  /** This side's orders, the first `pageSize`. */
  fetch: (pageSize: number) => Promise<{ orders: Order[]; more: boolean }>;
  /** The other end of this side: the highest ask, the lowest offer. */
  otherEnd: () => Promise<Order | undefined>;
  otherEndLabel: string;
  /** How the list is sorted, said above it: `Cheapest first`, `Highest first`. */
  ordering: string;
  empty: string;
  previousLabel: string;
}

const BOOK_PAGE_SIZE = 5;

/** A page of one side of a token's book, best first, with the other end and paging buttons. */
export async function bookPage(
  ctx: CommandContext,
  collection: ResolvedCollection,
  tokenId: string,
  page: number,
  side: BookSide,
): Promise<Reply> {
  const [metadata, list, otherEnd] = await Promise.all([
    fetchToken(ctx, collection, tokenId),
    side.fetch(page * BOOK_PAGE_SIZE + 1),
    side.otherEnd(),
  ]).catch((error: unknown) => explainNotFound(ctx, collection, tokenId, error));
  const reply: Reply = {
    title: `${side.title} ${tokenName(metadata, tokenId)}`,
    tone: side.tone,
    footer: `${footerOf(collection)} · page ${page}`,
  };
  if (metadata.image) reply.thumbnail = metadata.image;
  const sorted = [...list.orders].sort(side.order);
  const shown = sorted.slice((page - 1) * BOOK_PAGE_SIZE, page * BOOK_PAGE_SIZE);
  if (shown.length === 0) {
    reply.lines = [page === 1 ? side.empty : `There is no page ${page}: the ${side.tone}s end earlier.`];
  } else {
    reply.lines = [`${side.ordering}:`];
    // Each entry is headed by its price: a bare "1." heads nothing (the terminal showed "1.:").
    reply.fields = await Promise.all(
      shown.map(async (order, i) => {
        const { price, rest } = await orderParts(ctx, collection.network, order);
        return { name: `${(page - 1) * BOOK_PAGE_SIZE + i + 1}. ${price}`, value: rest };
      }),
    );
  }
  // The other end closes the answer: above the list it would read as the list's heading.
  if (otherEnd) {
    const value = await describeOrder(ctx, collection.network, otherEnd);
    if (reply.fields) reply.fields = [...reply.fields, { name: side.otherEndLabel, value }];
    else reply.lines = [...(reply.lines ?? []), [bold(`${side.otherEndLabel}: `), ...value]];
  }
  const nav: ReplyButton[] = [];
  if (page > 1)
    nav.push({ label: side.previousLabel, action: ctx.typed.rerun({ page: String(page - 1) }), replaces: true });
  const more = sorted.length > page * BOOK_PAGE_SIZE || (list.more && sorted.length >= page * BOOK_PAGE_SIZE);
  if (page < MAX_BOOK_PAGES && more) {
    nav.push({ label: 'More ▶', action: ctx.typed.rerun({ page: String(page + 1) }), replaces: true });
  }
  if (nav.length) reply.buttons = [nav];
  return reply;
}

/** What to say when a collection's rarity is not ready: why, and whether asking again helps. */
export function rarityPending(lookup: Exclude<RarityLookup, { status: 'ready' }>): string {
  switch (lookup.status) {
    case 'computing':
      return 'computing, ask again in a minute';
    case 'too_many_tokens':
      return `not available: the collection has more than ${lookup.limit.toLocaleString('en-US')} tokens`;
    case 'busy':
      return 'not available right now: other collections are being counted, ask again in a few minutes';
    case 'failed':
      return 'not available right now: the tokens could not be read, ask again in a minute';
  }
}

/** Bounded reading: at most this many listed tokens are counted. */
const LISTED_PAGE_SIZE = 250;
const LISTED_MAX_PAGES = 8;

/** A collection's listed tokens, counted up to a bound, and its cheapest listing. */
export async function listedSummary(
  ctx: CommandContext,
  collection: ResolvedCollection,
): Promise<{ count: number; capped: boolean; cheapest: CollectibleOrder | undefined }> {
  const seen = new Set<string>();
  let cheapest: CollectibleOrder | undefined;
  let page: number | undefined;
  let more = true;
  for (let pages = 0; more && pages < LISTED_MAX_PAGES; pages++) {
    const result = await ctx.platform.marketplace.listCollectibles({
      network: collection.network,
      side: 'listing',
      contractAddress: collection.address,
      filter: { includeEmpty: false },
      page: page === undefined ? { pageSize: LISTED_PAGE_SIZE } : { page, pageSize: LISTED_PAGE_SIZE },
    });
    for (const item of result.collectibles) {
      const order = item.order ?? item.listing;
      if (!order) continue;
      seen.add(item.metadata.tokenId);
      const best = cheapest?.order ?? cheapest?.listing;
      if (!best || byPriceAscending(order, best) < 0) cheapest = { ...item, order };
    }
    more = result.page.more === true && result.collectibles.length > 0;
    page = nextPage(result.page, page);
  }
  return { count: seen.size, capped: more, cheapest };
}

/** Bounded reading: at most this many balance records are read (as /holders does). */
const BALANCES_PAGE_SIZE = 1_000;
const BALANCES_MAX_PAGES = 10;
const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000';

/** A collection's holders and supply from its token balances, counted up to a bound. */
export async function holdersSummary(
  ctx: CommandContext,
  collection: ResolvedCollection,
): Promise<{ holders: number; supply: bigint; capped: boolean }> {
  const byAccount = new Map<string, bigint>();
  let page: number | undefined;
  let more = true;
  for (let pages = 0; more && pages < BALANCES_MAX_PAGES; pages++) {
    const result = await ctx.platform.indexer.getTokenBalancesByContract({
      network: collection.network,
      filter: { contractAddresses: [collection.address], contractStatus: 'ALL' },
      omitMetadata: true,
      page: page === undefined ? { pageSize: BALANCES_PAGE_SIZE } : { page, pageSize: BALANCES_PAGE_SIZE },
    });
    for (const balance of result.balances) {
      const account = balance.accountAddress.toLowerCase();
      if (account === ZERO_ADDRESS || !/^\d+$/.test(balance.balance)) continue;
      byAccount.set(account, (byAccount.get(account) ?? 0n) + BigInt(balance.balance));
    }
    more = result.page.more === true && result.balances.length > 0;
    page = nextPage(result.page, page);
  }
  let holders = 0;
  let supply = 0n;
  for (const amount of byAccount.values()) {
    if (amount <= 0n) continue;
    holders++;
    supply += amount;
  }
  return { holders, supply, capped: more };
}
