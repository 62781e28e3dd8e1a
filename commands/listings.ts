import { defineCommand } from '../src/bot/command.ts';
import { bookPage, MAX_BOOK_PAGES } from '../src/bot/market-commands.ts';
import { byPriceAscending } from '../src/market/format.ts';
import { firstItems } from '../src/market/paging.ts';

export default defineCommand({
  name: 'listings',
  description: 'Listings of a token, cheapest first, with the highest asking price',
  example: '/listings moon cats 42',
  options: [
    {
      name: 'collection',
      type: 'collection',
      description: 'Collection name, alias or address',
      required: true,
      autocomplete: true,
    },
    { name: 'token', type: 'tokenId', description: 'Token id', required: true },
    { name: 'page', type: 'integer', description: 'Page (1 = cheapest)', min: 1, max: MAX_BOOK_PAGES },
  ],
  run(ctx, { collection, token, page = 1 }) {
    const target = { network: collection.network, contractAddress: collection.address, tokenId: token };
    return bookPage(ctx, collection, token, page, {
      title: 'Listings of',
      tone: 'listing',
      order: byPriceAscending,
      fetch: async (pageSize) => {
        const { listings, page } = await ctx.platform.marketplace.listListingsForCollectible({
          ...target,
          page: firstItems(pageSize),
        });
        return { orders: listings, more: page.more === true };
      },
      otherEnd: () => ctx.platform.marketplace.getHighestPriceListingForCollectible(target),
      otherEndLabel: 'Highest ask',
      ordering: 'Cheapest first',
      empty: 'This token is not listed.',
      previousLabel: '◀ Cheaper',
    });
  },
});
