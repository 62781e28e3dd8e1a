import { formatUnits } from 'viem';
import type { MarketHistoryView } from '../core/market.ts';
import type { Reply } from '../core/reply.ts';
import type { AlertKind, WatchRule } from '../core/types.ts';
import type { CurrencyDirectory } from '../market/currencies.ts';
import { byPriceAscending, byPriceDescending, displayAmount, marketplaceName, traitsOf } from '../market/format.ts';
import type { Links } from '../market/links.ts';
import type { PlatformClient } from '../platform/client.ts';
import type { CollectiblesFilter, Order, TokenMetadata } from '../platform/types.ts';
import { type AlertDetails, renderAlert } from './render.ts';
import { type PriceInfo, passesFloor, passesPrice, passesTraits } from './rule-filters.ts';

/** Tokens of a rule's own list looked at for a sample (two calls each). */
const MAX_RULE_TOKENS = 5;
/** Listed (or offered) tokens of the collection looked at for one that passes the rule's filters. */
const CANDIDATES = 20;
/** With a minimum price, further up the book: the cheapest orders are the ones it leaves out. */
const CANDIDATES_WITH_MINIMUM = 100;

/** What a sample reads: the market now, currency symbols, web pages, the recorded last sales, the clock. */
export interface SampleContext {
  platform: PlatformClient;
  currencies: CurrencyDirectory;
  links: Links | undefined;
  market: { history?: MarketHistoryView | undefined } | undefined;
  now: () => Date;
}

interface Candidate {
  metadata: TokenMetadata;
  /** The order the sample's price comes from: a listing, or an offer for offer rules. */
  order: Order | undefined;
}

/**
 * A sample of the alert a rule posts, built from the collection's current market rather than an
 * event: a token the rule would match (one of its tokens, with its traits, listed or offered by its
 * wallets and at its price when the market has one), priced by that token's order, set against the
 * floor for sales and listings, with the token's page and where to buy it. No transaction happened,
 * so it links none; the title and a line say it is a sample, and say which filter no current order
 * meets when the sample cannot meet them all.
 */
export async function sampleAlert(ctx: SampleContext, rule: WatchRule): Promise<Reply> {
  const kind: AlertKind = rule.kinds[0] ?? 'sale';
  const side = kind === 'offer' ? 'offer' : 'listing';
  const priced = kind === 'sale' || kind === 'listing' || kind === 'offer' || kind === 'cancel';
  const [candidates, floorBook] = await Promise.all([
    candidatesOf(ctx, rule, side),
    kind === 'sale' || kind === 'listing' ? cheapestListings(ctx, rule) : Promise.resolve([]),
  ]);
  const notes: string[] = [];
  const assess = async (candidate: Candidate) => {
    const price = candidate.order && (await priceOf(ctx, rule, candidate.order, floorBook));
    const traitsPass = passesTraits(rule, traitsOf(candidate.metadata));
    const pricePass =
      !priced || (price !== undefined && passesPrice(rule, price.info) && passesFloor(rule, price.info));
    return { candidate, price, matches: traitsPass && pricePass };
  };
  const assessed = await Promise.all(candidates.map(assess));
  // None matches: the nearest is the dearest order for a minimum price, else the first (cheapest, or the rule's own token).
  const dearest = () => [...assessed].sort((a, b) => (b.price?.info.usd ?? 0) - (a.price?.info.usd ?? 0))[0];
  const chosen = assessed.find((a) => a.matches) ?? (rule.minPrice ? dearest() : assessed[0]);
  if (!chosen) {
    return {
      title: `[Sample] ${rule.collectionName}`,
      tone: 'info',
      lines: [
        rule.tokenIds?.length
          ? `None of the tokens of rule ${rule.id} (${rule.tokenIds.slice(0, MAX_RULE_TOKENS).join(', ')}) is in ${rule.collectionName} now.`
          : `${rule.collectionName} has no token to build a sample from right now.`,
      ],
      footer: `${rule.collectionName} · ${rule.network} · sample`,
    };
  }
  if (!chosen.matches) {
    notes.push(
      priced && !chosen.candidate.order
        ? `No ${rule.tokenIds?.length ? 'token of this rule' : 'token'} has ${side === 'offer' ? 'an offer' : 'a listing'} now: the sample has no price.`
        : 'No current order meets all of this rule’s filters: the sample shows the nearest one.',
    );
  }
  const { metadata, order } = chosen.candidate;
  const tokenId = metadata.tokenId;
  const details: AlertDetails = {
    event: {
      id: `sample:${rule.id}`,
      kind,
      network: rule.network,
      collection: rule.collection,
      txnHash: '',
      blockNumber: 0,
      blockHash: '',
      ts: ctx.now().toISOString(),
      tokens: [{ tokenId, amount: '1' }],
      ...(order && priced ? { from: order.createdBy.toLowerCase() } : {}),
      accounts: [],
      orderIds: order ? [order.orderId] : [],
      logUids: [],
    },
    collectionName: rule.collectionName,
    tokens: [
      {
        tokenId,
        amount: '1',
        ...(metadata.name ? { name: metadata.name } : {}),
        ...(metadata.image ? { image: metadata.image } : {}),
        traits: traitsOf(metadata),
      },
    ],
  };
  if (chosen.price && priced) {
    details.price = chosen.price.shown;
    if (chosen.price.info.floorUsd !== undefined) details.floorUsd = chosen.price.info.floorUsd;
  }
  if (order && priced) details.marketplace = marketplaceName(order);
  if (kind === 'cancel' && order) details.cancelled = side;
  const lastSale =
    kind === 'sale' ? await ctx.market?.history?.lastSale(rule.network, rule.collection, tokenId) : undefined;
  if (lastSale) {
    details.lastSale = {
      at: new Date(lastSale.at).toISOString(),
      ...(lastSale.usd === undefined ? {} : { usd: lastSale.usd }),
    };
  }
  const page = ctx.links?.token(rule.network, rule.collection, tokenId);
  const buy = kind === 'listing' && order ? ctx.links?.order(rule.network, rule.collection, tokenId, order) : undefined;
  if (page || buy) details.links = { ...(page ? { token: page } : {}), ...(buy ? { buy } : {}) };
  const reply = renderAlert(details, { sample: true });
  const source = priced ? `the current ${side === 'offer' ? 'offers' : 'listings'}` : 'a token of the collection';
  reply.lines = [`A sample of what rule ${rule.id} posts, built from ${source}: no transaction happened.`, ...notes];
  return reply;
}

/** Tokens the rule could alert about, best first: its own tokens, else the orders that meet its filters. */
async function candidatesOf(ctx: SampleContext, rule: WatchRule, side: 'listing' | 'offer'): Promise<Candidate[]> {
  const target = { network: rule.network, contractAddress: rule.collection };
  if (rule.tokenIds?.length) {
    return Promise.all(
      rule.tokenIds
        .slice(0, MAX_RULE_TOKENS)
        .map(async (tokenId): Promise<Candidate | undefined> => {
          const [metadata, orders] = await Promise.all([
            ctx.platform.marketplace.getCollectible({ ...target, tokenId }),
            side === 'offer'
              ? ctx.platform.marketplace
                  .listOffersForCollectible({ ...target, tokenId, page: { pageSize: CANDIDATES } })
                  .then((r) => [...r.offers].sort(byPriceDescending))
              : ctx.platform.marketplace
                  .listListingsForCollectible({ ...target, tokenId, page: { pageSize: CANDIDATES } })
                  .then((r) => [...r.listings].sort(byPriceAscending)),
          ]);
          return { metadata, order: orders[0] };
        })
        .map((lookup) => lookup.catch(() => undefined)),
    ).then((found) => {
      // A token that no longer exists (burned, or never minted) is left out, not the sample.
      const all = found.filter((c): c is Candidate => c !== undefined);
      return [...all.filter((c) => c.order), ...all.filter((c) => !c.order)];
    });
  }
  const filter: CollectiblesFilter = { includeEmpty: false };
  if (rule.traits?.length) filter.properties = rule.traits.map((t) => ({ name: t.name, values: [t.value] }));
  if (rule.wallets?.length) filter.ordersCreatedBy = rule.wallets;
  if (rule.ignoreWallets?.length) filter.ordersNotCreatedBy = rule.ignoreWallets;
  const read = async (wanted: CollectiblesFilter) =>
    (
      await ctx.platform.marketplace.listCollectibles({
        ...target,
        side,
        filter: wanted,
        page: { pageSize: rule.minPrice ? CANDIDATES_WITH_MINIMUM : CANDIDATES },
      })
    ).collectibles.map((c) => ({ metadata: c.metadata, order: c.order ?? (side === 'offer' ? c.offer : c.listing) }));
  const found = await read(filter);
  if (found.length > 0) return found;
  // Nothing meets the filters now: any order, else any token, so that the sample still shows one.
  const any = await read({ includeEmpty: false });
  return any.length > 0 ? any : read({ includeEmpty: true });
}

/** The collection's cheapest listings, for the floor a sale or listing is set against. */
async function cheapestListings(ctx: SampleContext, rule: WatchRule): Promise<Order[]> {
  const { collectibles } = await ctx.platform.marketplace.listCollectibles({
    network: rule.network,
    side: 'listing',
    contractAddress: rule.collection,
    filter: { includeEmpty: false },
    page: { pageSize: CANDIDATES },
  });
  return collectibles.map((c) => c.order ?? c.listing).filter((o): o is Order => o !== undefined && o.priceUSD > 0);
}

/** An order's price as the alert shows it and as the rule's filters read it (floor: the cheapest other listing). */
async function priceOf(
  ctx: SampleContext,
  rule: WatchRule,
  order: Order,
  book: readonly Order[],
): Promise<{ shown: NonNullable<AlertDetails['price']>; info: PriceInfo }> {
  for (const known of [order, ...book]) ctx.currencies.learn(rule.network, known);
  const symbol = await ctx.currencies.symbol(rule.network, order.priceCurrencyAddress);
  const usd = order.priceUSD > 0 ? order.priceUSD : undefined;
  const others = book.filter((o) => o.orderId !== order.orderId).map((o) => o.priceUSD);
  const floorUsd = others.length > 0 ? Math.min(...others) : undefined;
  const amount = order.priceAmountFormatted || formatUnits(BigInt(order.priceAmount || '0'), order.priceDecimals ?? 18);
  return {
    shown: { amount: displayAmount(amount), symbol, ...(usd === undefined ? {} : { usd }) },
    info: {
      amount,
      usd,
      usdPerToken: usd,
      floorUsd,
      currency: order.priceCurrencyAddress.toLowerCase(),
      usdRate: (currency) => ctx.currencies.lastUsdRate(rule.network, currency),
    },
  };
}
