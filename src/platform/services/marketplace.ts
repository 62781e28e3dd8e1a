import { marketplaceKindToWire, orderSideToWire, walletKindToWire } from '../enums.ts';
import { expandTemplate, type Network } from '../networks.ts';
import * as n from '../normalize.ts';
import * as r from '../records/read.ts';
import type { CallOptions } from '../transport.ts';
import type {
  AdditionalFee,
  CollectibleOrder,
  CollectiblesFilter,
  GetOrdersInput,
  MarketplaceKindInput,
  Order,
  OrderData,
  OrderFilter,
  OrderSide,
  Page,
  Step,
  TokenMetadata,
  WalletKindInput,
} from '../types.ts';
import { type Call, rpc, type ServiceContext } from './context.ts';

interface OnNetwork {
  /** Network name or chain id; fills the address's `{network}` and the body's `chainId`. */
  network: string | number;
}

export interface CollectibleArgs extends OnNetwork {
  contractAddress: string;
  tokenId: string;
}

export interface CollectibleOrdersArgs extends CollectibleArgs {
  filter?: OrderFilter;
  page?: Page;
}

export interface ListCollectiblesArgs extends OnNetwork {
  side: OrderSide | number;
  contractAddress: string;
  filter?: CollectiblesFilter;
  page?: Page;
}

export interface GenerateBuyTransactionArgs extends OnNetwork {
  collectionAddress: string;
  buyer: string;
  marketplace: MarketplaceKindInput;
  ordersData: OrderData[];
  additionalFees?: AdditionalFee[];
  walletType?: WalletKindInput;
}

/** The platform's own marketplace: the default for GetOrders inputs that name none. */
export const DEFAULT_ORDER_MARKETPLACE = 'sequence_marketplace_v2';

function wireOrderFilter(filter: OrderFilter | undefined): Record<string, unknown> | undefined {
  if (!filter) return undefined;
  return { ...filter, marketplace: filter.marketplace?.map(marketplaceKindToWire) };
}

/**
 * Marketplace service: collectibles, listings, offers, orders and checkout. Methods are `async` so
 * that argument errors (unknown network or enum name) arrive as rejections, like every other failure.
 */
export class MarketplaceService {
  constructor(private readonly ctx: ServiceContext) {}

  /** ListListingsForCollectible: a token's listings, one page. */
  async listListingsForCollectible(
    args: CollectibleOrdersArgs,
    options?: CallOptions,
  ): Promise<{ listings: Order[]; page: Page }> {
    return this.#call(
      args,
      'ListListingsForCollectible',
      {
        contractAddress: args.contractAddress,
        tokenId: args.tokenId,
        filter: wireOrderFilter(args.filter),
        page: args.page,
      },
      (out, read) => ({ listings: read.list(out.listings, 'listings', r.order), page: n.page(out.page) }),
      options,
    );
  }

  /** GetHighestPriceListingForCollectible: the most expensive listing, or undefined when there is none. */
  async getHighestPriceListingForCollectible(
    args: CollectibleArgs & { filter?: OrderFilter },
    options?: CallOptions,
  ): Promise<Order | undefined> {
    return this.#call(
      args,
      'GetHighestPriceListingForCollectible',
      { contractAddress: args.contractAddress, tokenId: args.tokenId, filter: wireOrderFilter(args.filter) },
      (out, read) => read.optional(out.order, 'order', r.order),
      options,
    );
  }

  /** ListOffersForCollectible: a token's offers, one page. */
  async listOffersForCollectible(
    args: CollectibleOrdersArgs,
    options?: CallOptions,
  ): Promise<{ offers: Order[]; page: Page }> {
    return this.#call(
      args,
      'ListOffersForCollectible',
      {
        contractAddress: args.contractAddress,
        tokenId: args.tokenId,
        filter: wireOrderFilter(args.filter),
        page: args.page,
      },
      (out, read) => ({ offers: read.list(out.offers, 'offers', r.order), page: n.page(out.page) }),
      options,
    );
  }

  /** GetLowestPriceOfferForCollectible: the lowest offer, or undefined when there is none. */
  async getLowestPriceOfferForCollectible(
    args: CollectibleArgs & { filter?: OrderFilter },
    options?: CallOptions,
  ): Promise<Order | undefined> {
    return this.#call(
      args,
      'GetLowestPriceOfferForCollectible',
      { contractAddress: args.contractAddress, tokenId: args.tokenId, filter: wireOrderFilter(args.filter) },
      (out, read) => read.optional(out.order, 'order', r.order),
      options,
    );
  }

  /** GetCollectible: a token's metadata. */
  async getCollectible(args: CollectibleArgs, options?: CallOptions): Promise<TokenMetadata> {
    return this.#call(
      args,
      'GetCollectible',
      { contractAddress: args.contractAddress, tokenId: args.tokenId },
      (out, read) => read.one(out.metadata, 'metadata', r.tokenMetadata),
      options,
    );
  }

  /** GetOrders: orders by id. */
  async getOrders(
    args: OnNetwork & { input: GetOrdersInput[]; page?: Page },
    options?: CallOptions,
  ): Promise<{ orders: Order[]; page: Page }> {
    return this.#call(
      args,
      'GetOrders',
      {
        input: args.input.map((input) => ({
          contractAddress: input.contractAddress,
          orderId: input.orderId,
          marketplace: marketplaceKindToWire(input.marketplace ?? DEFAULT_ORDER_MARKETPLACE),
        })),
        page: args.page,
      },
      (out, read) => ({ orders: read.list(out.orders, 'orders', r.order), page: n.page(out.page) }),
      options,
    );
  }

  /** ListCollectibles: tokens of a collection with their best order on one side of the book. */
  async listCollectibles(
    args: ListCollectiblesArgs,
    options?: CallOptions,
  ): Promise<{ collectibles: CollectibleOrder[]; page: Page }> {
    const filter = args.filter
      ? {
          ...args.filter,
          includeEmpty: args.filter.includeEmpty ?? false,
          marketplaces: args.filter.marketplaces?.map(marketplaceKindToWire),
        }
      : undefined;
    return this.#call(
      args,
      'ListCollectibles',
      { side: orderSideToWire(args.side), contractAddress: args.contractAddress, filter, page: args.page },
      (out, read) => ({
        collectibles: read.list(out.collectibles, 'collectibles', r.collectibleOrder),
        page: n.page(out.page),
      }),
      options,
    );
  }

  /** GenerateBuyTransaction: the checkout steps to buy orders. Never retried. */
  async generateBuyTransaction(args: GenerateBuyTransactionArgs, options?: CallOptions): Promise<Step[]> {
    return this.#call(
      args,
      'GenerateBuyTransaction',
      {
        collectionAddress: args.collectionAddress,
        buyer: args.buyer,
        marketplace: marketplaceKindToWire(args.marketplace),
        ordersData: args.ordersData,
        additionalFees: args.additionalFees ?? [],
        walletType: args.walletType === undefined ? undefined : walletKindToWire(args.walletType),
      },
      (out, read) => {
        // Newer servers wrap the steps in `resp` as well; older ones send only `steps`.
        const resp = out.resp && typeof out.resp === 'object' ? (out.resp as Record<string, unknown>) : undefined;
        return read.list(out.steps ?? resp?.steps, 'steps', r.step);
      },
      options,
      false,
    );
  }

  #call<T>(
    args: OnNetwork,
    method: string,
    body: Record<string, unknown>,
    decode: Call<T>['decode'],
    options: CallOptions | undefined,
    retryable = true,
  ): Promise<T> {
    const network: Network = this.ctx.networks.resolve(args.network);
    return rpc(
      this.ctx,
      {
        baseUrl: expandTemplate(this.ctx.endpoints.marketplaceUrl, network),
        service: 'Marketplace',
        method,
        credential: 'accessKey',
        retryable,
        // Newer servers read the network from `chainId` in the body, older ones from the path.
        body: { chainId: String(network.chainId), ...body },
        decode,
      },
      options,
    );
  }
}
