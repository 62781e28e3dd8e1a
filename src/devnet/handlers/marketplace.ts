import { encodeFunctionData, parseAbi } from 'viem/utils';
import { MARKETPLACE_KINDS, PROPERTY_TYPES, SPEC_MARKETPLACE_KINDS, WALLET_KINDS } from '../../platform/types.ts';
import { OWN_MARKETPLACE } from '../catalog.ts';
import {
  bestOrder,
  type CollectiblesQuery,
  type OrderConstraints,
  orderPasses,
  PRICE_COLUMNS,
  type PriceRange,
  type PropertyConstraint,
} from '../collectibles.ts';
import type { CollectionState } from '../collection.ts';
import { errors } from '../errors.ts';
import type { OrderRecord, Side } from '../model.ts';
import { compareListings, compareOffers } from '../orderbook.ts';
import { type PageRules, pageJson, paginate, readPage } from '../paging.ts';
import type { NetworkState } from '../state.ts';
import { checkEnum, In, invalid, type Json } from '../validate.ts';
import { orderJson, tokenMetadataJson } from '../wire.ts';
import {
  type RequestContext,
  requestNetwork,
  requireCollection,
  requireToken,
  type UnaryOperation,
} from './context.ts';

const SPEC_ALIASES: Readonly<Record<string, number>> = Object.fromEntries(
  SPEC_MARKETPLACE_KINDS.map((name, i) => [name, i]),
);
const SIDES = ['unknown', 'listing', 'offer'] as const;

const ORDER_PAGE: PageRules = {
  defaultSize: 30,
  maxSize: 250,
  columns: { price: 'price', priceUSD: 'price', price_usd: 'price', createdAt: 'createdAt', created_at: 'createdAt' },
  defaultSort: [{ column: 'price', order: 'ASC' }],
};

function marketplaceOf(value: unknown, path: string): number {
  return checkEnum(value, path, MARKETPLACE_KINDS, SPEC_ALIASES);
}

function nonEmpty<T>(values: T[] | undefined): Set<T> | undefined {
  return values && values.length > 0 ? new Set(values) : undefined;
}

/** The listing filter of the per-collectible operations: createdBy, marketplace, currencies. */
function readOrderFilter(body: In): OrderConstraints {
  const filter = body.optObject('filter');
  if (!filter) return {};
  const out: OrderConstraints = {};
  const createdBy = nonEmpty(filter.optAddressList('createdBy'));
  if (createdBy) out.createdBy = createdBy;
  const marketplaces = nonEmpty(filter.optList('marketplace')?.map((item) => marketplaceOf(item.value, item.path)));
  if (marketplaces) out.marketplaces = marketplaces;
  const currencies = nonEmpty(filter.optAddressList('currencies'));
  if (currencies) out.currencies = currencies;
  return out;
}

interface Collectible {
  network: NetworkState;
  collection: CollectionState;
  index: number;
}

function readCollectible(ctx: RequestContext, body: In): Collectible {
  const network = requestNetwork(ctx, body, 'Marketplace');
  const collection = requireCollection(network, body.address('contractAddress'), 'Marketplace');
  const index = requireToken(collection, body.uint('tokenId'), 'Marketplace');
  return { network, collection, index };
}

function ordersOf(c: Collectible, side: Side, constraints: OrderConstraints): OrderRecord[] {
  return c.network.book.side(c.collection.address, c.index, side).filter((o) => orderPasses(o, constraints));
}

function renderOrder(network: NetworkState, order: OrderRecord | undefined): Json | null {
  return order ? orderJson(order, network, network.byAddress.get(order.collectionAddress)) : null;
}

function listOrders(side: Side, method: string, key: string): UnaryOperation {
  return {
    kind: 'unary',
    service: 'Marketplace',
    method,
    base: 'marketplace',
    credential: 'accessKey',
    handle(ctx, body) {
      const collectible = readCollectible(ctx, body);
      const constraints = readOrderFilter(body);
      const rules =
        side === 'listing' ? ORDER_PAGE : { ...ORDER_PAGE, defaultSort: [{ column: 'price', order: 'DESC' as const }] };
      const page = readPage(body, rules);
      const orders = ordersOf(collectible, side, constraints);
      const natural = page.sort.length === 1 && page.sort[0]?.column === 'price';
      const sorted = natural ? orders : [...orders].sort((a, b) => orderSort(a, b, page.sort, side));
      if (natural && page.sort[0]?.order !== (side === 'listing' ? 'ASC' : 'DESC')) sorted.reverse();
      const { items, more } = paginate(sorted, page);
      return {
        [key]: items.map((o) => renderOrder(collectible.network, o)),
        page: pageJson(page, more, 'marketplace'),
      };
    },
  };
}

function orderSort(
  a: OrderRecord,
  b: OrderRecord,
  sort: ReadonlyArray<{ column: string; order: 'ASC' | 'DESC' }>,
  side: Side,
): number {
  for (const key of sort) {
    const diff = key.column === 'createdAt' ? a.createdAt - b.createdAt : a.priceUsd - b.priceUsd;
    if (diff !== 0) return key.order === 'ASC' ? diff : -diff;
  }
  return side === 'listing' ? compareListings(a, b) : compareOffers(a, b);
}

function extremeOrder(side: Side, method: string, pick: 'highest' | 'lowest'): UnaryOperation {
  return {
    kind: 'unary',
    service: 'Marketplace',
    method,
    base: 'marketplace',
    credential: 'accessKey',
    handle(ctx, body) {
      const collectible = readCollectible(ctx, body);
      const orders = ordersOf(collectible, side, readOrderFilter(body));
      let chosen: OrderRecord | undefined;
      for (const order of orders) {
        if (!chosen || (pick === 'highest' ? order.priceUsd > chosen.priceUsd : order.priceUsd < chosen.priceUsd)) {
          chosen = order;
        }
      }
      return { order: renderOrder(collectible.network, chosen) };
    },
  };
}

const getCollectible: UnaryOperation = {
  kind: 'unary',
  service: 'Marketplace',
  method: 'GetCollectible',
  base: 'marketplace',
  credential: 'accessKey',
  handle(ctx, body) {
    const { collection, index } = readCollectible(ctx, body);
    return { metadata: tokenMetadataJson(collection, index, ctx.baseUrl, 'marketplace') };
  },
};

const getOrders: UnaryOperation = {
  kind: 'unary',
  service: 'Marketplace',
  method: 'GetOrders',
  base: 'marketplace',
  credential: 'accessKey',
  handle(ctx, body) {
    const network = requestNetwork(ctx, body, 'Marketplace');
    const inputs = body.optList('input') ?? [];
    if (inputs.length > 500) throw errors.invalidArgument(`input: at most 500 orders per call, got ${inputs.length}`);
    const page = readPage(body, { ...ORDER_PAGE, defaultSize: 100, maxSize: 500, defaultSort: [] });
    const found: OrderRecord[] = [];
    for (const item of inputs) {
      const input = new In(item.value, item.path);
      const contract = input.optAddress('contractAddress');
      const orderId = input.string('orderId');
      const marketplaceRaw = input.raw('marketplace');
      const marketplace = marketplaceRaw === undefined ? 0 : marketplaceOf(marketplaceRaw, input.at('marketplace'));
      const order = network.book.get(orderId);
      if (!order) continue;
      if (contract !== undefined && order.collectionAddress !== contract) continue;
      if (marketplace !== 0 && order.marketplace !== marketplace) continue;
      if (!found.includes(order)) found.push(order);
    }
    const sorted = page.sort.length > 0 ? [...found].sort((a, b) => orderSort(a, b, page.sort, 'listing')) : found;
    const { items, more } = paginate(sorted, page);
    return { orders: items.map((o) => renderOrder(network, o)), page: pageJson(page, more, 'marketplace') };
  },
};

function readProperties(filter: In, collection: CollectionState): PropertyConstraint[] {
  const items = filter.optList('properties') ?? [];
  return items.map((item) => {
    const property = new In(item.value, item.path);
    const name = property.string('name');
    const typeRaw = property.raw('type');
    if (typeRaw !== undefined) checkEnum(typeRaw, property.at('type'), PROPERTY_TYPES);
    const values = (property.optList('values') ?? []).map((v) => {
      if (typeof v.value !== 'string' && typeof v.value !== 'number' && typeof v.value !== 'boolean') {
        invalid(v.path, 'a string or a number', v.value);
      }
      return String(v.value);
    });
    const min = property.optNumber('min');
    const max = property.optNumber('max');
    const blueprint = collection.blueprint;
    const lower = name.toLowerCase();
    let trait = blueprint.traits.findIndex((t) => t.name === name);
    if (trait < 0) trait = blueprint.traits.findIndex((t) => t.name.toLowerCase() === lower);
    if (trait >= 0) {
      const known = blueprint.traits[trait]?.values ?? [];
      const allowed = new Uint8Array(256);
      if (values.length === 0) allowed.fill(1);
      for (const value of values) {
        let v = known.findIndex(([text]) => text === value);
        if (v < 0) v = known.findIndex(([text]) => text.toLowerCase() === value.toLowerCase());
        if (v >= 0) allowed[v] = 1;
      }
      return { kind: 'string', trait, allowed };
    }
    const numeric = (blueprint.numeric ?? []).findIndex((n) => n.name.toLowerCase() === lower);
    if (numeric < 0) return { kind: 'none' };
    if (values.length > 0 && min === undefined && max === undefined) {
      const allowed = new Uint8Array(256);
      for (const value of values) {
        const n = Number(value);
        if (Number.isInteger(n) && n >= 0 && n < 256) allowed[n] = 1;
      }
      return { kind: 'intset', trait: numeric, allowed };
    }
    return { kind: 'int', trait: numeric, min: min ?? Number.NEGATIVE_INFINITY, max: max ?? Number.POSITIVE_INFINITY };
  });
}

function accountSet(ctx: RequestContext, addresses: string[] | undefined): Set<number> | undefined {
  if (!addresses || addresses.length === 0) return undefined;
  const out = new Set<number>();
  for (const address of addresses) {
    const index = ctx.state.accounts.indexOf(address);
    if (index !== undefined) out.add(index);
  }
  return out;
}

function readPrices(filter: In): PriceRange[] | undefined {
  const items = filter.optList('prices');
  if (!items || items.length === 0) return undefined;
  return items.map((item) => {
    const price = new In(item.value, item.path);
    const min = price.optUint('min');
    const max = price.optUint('max');
    return {
      currency: price.address('contractAddress'),
      min: min === undefined ? undefined : BigInt(min),
      max: max === undefined ? undefined : BigInt(max),
    };
  });
}

const listCollectibles: UnaryOperation = {
  kind: 'unary',
  service: 'Marketplace',
  method: 'ListCollectibles',
  base: 'marketplace',
  credential: 'accessKey',
  handle(ctx, body) {
    const network = requestNetwork(ctx, body, 'Marketplace');
    const sideRaw = body.raw('side');
    if (sideRaw === undefined) invalid('side', 'listing or offer', sideRaw);
    const sidePosition = checkEnum(sideRaw, 'side', SIDES);
    if (sidePosition === 0) invalid('side', 'listing or offer', sideRaw);
    const side = SIDES[sidePosition] as Side;
    const collection = requireCollection(network, body.address('contractAddress'), 'Marketplace');
    const filter = body.optObject('filter') ?? new In({}, 'filter');
    const orders: OrderConstraints = {};
    const marketplaces = nonEmpty(filter.optList('marketplaces')?.map((item) => marketplaceOf(item.value, item.path)));
    if (marketplaces) orders.marketplaces = marketplaces;
    const createdBy = nonEmpty(filter.optAddressList('ordersCreatedBy'));
    if (createdBy) orders.createdBy = createdBy;
    const notCreatedBy = nonEmpty(filter.optAddressList('ordersNotCreatedBy'));
    if (notCreatedBy) orders.notCreatedBy = notCreatedBy;
    const currencies = nonEmpty(filter.optAddressList('inCurrencyAddresses'));
    if (currencies) orders.currencies = currencies;
    const notCurrencies = nonEmpty(filter.optAddressList('notInCurrencyAddresses'));
    if (notCurrencies) orders.notCurrencies = notCurrencies;
    const prices = readPrices(filter);
    if (prices) orders.prices = prices;
    const page = readPage(body, {
      defaultSize: 30,
      maxSize: 250,
      columns: PRICE_COLUMNS,
      defaultSort: [{ column: 'price', order: side === 'listing' ? 'ASC' : 'DESC' }],
    });
    const query: CollectiblesQuery = {
      side,
      includeEmpty: filter.optBool('includeEmpty') ?? false,
      searchText: filter.optString('searchText'),
      properties: readProperties(filter, collection),
      inAccounts: accountSet(ctx, filter.optAddressList('inAccounts')),
      notInAccounts: accountSet(ctx, filter.optAddressList('notInAccounts')),
      orders,
      sort: page.sort,
    };
    const entries = ctx.collectibles.query(network.book, collection, query);
    const { items, more } = paginate(entries, page);
    const collectibles = items.map((entry) => {
      const listing =
        side === 'listing' ? entry.best : bestOrder(network.book, collection, entry.index, 'listing', orders);
      const offer = side === 'offer' ? entry.best : bestOrder(network.book, collection, entry.index, 'offer', orders);
      return {
        metadata: tokenMetadataJson(collection, entry.index, ctx.baseUrl, 'marketplace'),
        order: renderOrder(network, entry.best),
        listing: renderOrder(network, listing),
        offer: renderOrder(network, offer),
      };
    });
    return { collectibles, page: pageJson(page, more, 'marketplace') };
  },
};

const CHECKOUT_ABI = parseAbi([
  'function approve(address spender, uint256 amount)',
  'function acceptRequestBatch(uint256[] requestIds, uint256[] quantities, address[] recipients, uint256[] additionalFees, address[] additionalFeeRecipients)',
]);

const generateBuyTransaction: UnaryOperation = {
  kind: 'unary',
  service: 'Marketplace',
  method: 'GenerateBuyTransaction',
  base: 'marketplace',
  credential: 'accessKey',
  handle(ctx, body) {
    const network = requestNetwork(ctx, body, 'Marketplace');
    const collection = requireCollection(
      network,
      body.address('collectionAddress'),
      'Marketplace',
      'collectionAddress',
    );
    const buyer = body.address('buyer');
    const marketplaceRaw = body.raw('marketplace');
    const marketplace = marketplaceRaw === undefined ? 0 : marketplaceOf(marketplaceRaw, 'marketplace');
    const walletRaw = body.raw('walletType');
    if (walletRaw !== undefined) checkEnum(walletRaw, 'walletType', WALLET_KINDS, { service: 1 });
    const items = body.optList('ordersData');
    if (!items || items.length === 0)
      invalid('ordersData', 'a non-empty list of {orderId, quantity, tokenId}', body.raw('ordersData'));
    const fills = items.map((item) => {
      const data = new In(item.value, item.path);
      const orderId = data.string('orderId');
      const quantity = BigInt(data.uint('quantity'));
      const tokenId = data.optUint('tokenId');
      const order = network.book.get(orderId);
      if (!order) throw errors.notFound('Marketplace', `${data.at('orderId')}: no order ${orderId} on ${network.name}`);
      if (order.collectionAddress !== collection.address) {
        throw errors.invalidArgument(
          `${data.at('orderId')}: order ${orderId} is for ${order.collectionAddress}, not ${collection.address}`,
        );
      }
      if (order.side !== 'listing')
        throw errors.invalidArgument(
          `${data.at('orderId')}: order ${orderId} is an offer; only listings can be bought`,
        );
      if (order.status !== 'active')
        throw errors.invalidArgument(`${data.at('orderId')}: order ${orderId} is ${order.status}`);
      if (marketplace !== 0 && order.marketplace !== marketplace) {
        throw errors.invalidArgument(
          `marketplace: order ${orderId} is on ${MARKETPLACE_KINDS[order.marketplace]}, not ${MARKETPLACE_KINDS[marketplace]}`,
        );
      }
      if (tokenId !== undefined && tokenId !== order.tokenId) {
        throw errors.invalidArgument(`${data.at('tokenId')}: order ${orderId} is for token ${order.tokenId}`);
      }
      if (quantity < 1n || quantity > order.quantityRemaining) {
        throw errors.invalidArgument(
          `${data.at('quantity')}: expected 1 to ${order.quantityRemaining}, got ${quantity}`,
        );
      }
      if (order.maker === buyer) throw errors.invalidArgument(`buyer: ${buyer} made order ${orderId}`);
      return { order, quantity };
    });
    const fees = (body.optList('additionalFees') ?? []).map((item) => {
      const fee = new In(item.value, item.path);
      return { amount: BigInt(fee.uint('amount')), receiver: fee.address('receiver') };
    });
    const first = fills[0] as { order: OrderRecord; quantity: bigint };
    const currency = first.order.currency;
    const spender =
      first.order.marketplace === OWN_MARKETPLACE
        ? network.marketplaceAddress
        : (network.externalMarketplaces.get(first.order.marketplace) ?? network.marketplaceAddress);
    fills.forEach(({ order }, i) => {
      if (order.currency !== currency) {
        throw errors.invalidArgument(
          `ordersData[${i}].orderId: order ${order.orderId} is in ${order.currency.symbol}, the first in ${currency.symbol}; buy one currency at a time`,
        );
      }
      if (order.marketplace !== first.order.marketplace) {
        throw errors.invalidArgument(
          `ordersData[${i}].orderId: order ${order.orderId} is on another marketplace than the first`,
        );
      }
    });
    const price =
      fills.reduce((sum, { order, quantity }) => sum + order.price * quantity, 0n) +
      fees.reduce((sum, fee) => sum + fee.amount, 0n);
    const steps: Json[] = [];
    if (!currency.native) {
      steps.push({
        id: 'tokenApproval',
        data: encodeFunctionData({
          abi: CHECKOUT_ABI,
          functionName: 'approve',
          args: [spender as `0x${string}`, price],
        }),
        to: currency.address,
        value: '0',
        price: '0',
        signature: null,
        post: null,
        executeType: null,
      });
    }
    steps.push({
      id: 'buy',
      data: encodeFunctionData({
        abi: CHECKOUT_ABI,
        functionName: 'acceptRequestBatch',
        args: [
          fills.map((f) => BigInt(f.order.orderId)),
          fills.map((f) => f.quantity),
          fills.map(() => buyer as `0x${string}`),
          fees.map((f) => f.amount),
          fees.map((f) => f.receiver as `0x${string}`),
        ],
      }),
      to: spender,
      value: currency.native ? price.toString() : '0',
      price: price.toString(),
      signature: null,
      post: null,
      executeType: 'order',
    });
    return { resp: { steps, canBeUsedWithTrails: false }, steps };
  },
};

export const marketplaceOperations: UnaryOperation[] = [
  listOrders('listing', 'ListListingsForCollectible', 'listings'),
  extremeOrder('listing', 'GetHighestPriceListingForCollectible', 'highest'),
  listOrders('offer', 'ListOffersForCollectible', 'offers'),
  extremeOrder('offer', 'GetLowestPriceOfferForCollectible', 'lowest'),
  getCollectible,
  getOrders,
  listCollectibles,
  generateBuyTransaction,
];
