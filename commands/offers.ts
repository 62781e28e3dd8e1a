import { defineCommand } from '../src/bot/command.ts';
import { bookPage, MAX_BOOK_PAGES } from '../src/bot/market-commands.ts';
import { byPriceDescending } from '../src/market/format.ts';
import { firstItems } from '../src/market/paging.ts';

export default defineCommand({
  name: 'offers',
  description: 'Offers on a token, highest first, with the lowest offer',
  example: '/offers moon cats 42',
  options: [
    {
      name: 'collection',
      type: 'collection',
      description: 'Collection name, alias or address',
      required: true,
      autocomplete: true,
    },
    { name: 'token', type: 'tokenId', description: 'Token id', required: true },
    { name: 'page', type: 'integer', description: 'Page (1 = highest)', min: 1, max: MAX_BOOK_PAGES },
  ],
  run(ctx, { collection, token, page = 1 }) {
    const target = { network: collection.network, contractAddress: collection.address, tokenId: token };
    return bookPage(ctx, collection, token, page, {
      title: 'Offers on',
      tone: 'offer',
      order: byPriceDescending,
      fetch: async (pageSize) => {
        const { offers, page } = await ctx.platform.marketplace.listOffersForCollectible({
          ...target,
          page: firstItems(pageSize),
        });
        return { orders: offers, more: page.more === true };
      },
      otherEnd: () => ctx.platform.marketplace.getLowestPriceOfferForCollectible(target),
      otherEndLabel: 'Lowest offer',
      ordering: 'Highest first',
      empty: 'Nobody has made an offer on this token.',
      previousLabel: '◀ Higher',
    });
  },
});
