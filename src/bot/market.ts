import { PlatformApiError } from '../platform/errors.ts';
import type { Order, TokenMetadata } from '../platform/types.ts';
import type { CommandContext, ResolvedCollection } from './command.ts';
import { UserError } from './errors.ts';
import { formatPrice, marketplaceName, relativeTime } from './format.ts';
import { code, type Inline } from './reply.ts';

/** `1.5 ETH ($3,012.40) · Sequence Market v2 · by 0xab…cd · ends in 3 days` */
export async function describeOrder(ctx: CommandContext, network: string, order: Order): Promise<Inline[]> {
  const symbol = await ctx.currencies.symbol(network, order.priceCurrencyAddress);
  const parts = [formatPrice(order, symbol), marketplaceName(order)];
  const quantity = order.quantityAvailableFormatted || order.quantityRemainingFormatted;
  if (quantity && quantity !== '1') parts.push(`qty ${quantity}`);
  const ends = relativeTime(order.validUntil, ctx.now());
  if (ends && Date.parse(order.validUntil) - ctx.now().getTime() < 365 * 86_400_000) parts.push(`ends ${ends}`);
  return [parts.join(' · '), ' · by ', code(order.createdBy.slice(0, 10))];
}

/** Fetches a token's metadata; a token the platform does not know becomes a clear user error. */
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
    if (error instanceof PlatformApiError && (/NotFound/.test(error.errorName) || error.status === 404)) {
      throw new UserError('token_not_found', { tokenId, collection: collection.name });
    }
    throw error;
  }
}

/**
 * Deployments differ on whether page numbers start at 0 or 1, so user-facing pages are cut from
 * the first `count` items (no page number sent), and the book is sorted here, cheapest or highest
 * first, whatever order the server used.
 */
export function firstItems(count: number): { pageSize: number } {
  return { pageSize: count };
}

/** The page after `page` as the server numbered it (works for 0- and 1-based servers). */
export function nextPage(page: { page?: number } | undefined, requested: number | undefined): number {
  return (page?.page ?? requested ?? 0) + 1;
}

/** Pages of /listings and /offers people can flip through. */
export const MAX_BOOK_PAGES = 20;

/** Footer text: `Moon Cats · devnet` */
export function footerOf(collection: ResolvedCollection): string {
  return `${collection.name} · ${collection.network}`;
}
