import { defineCommand } from '../src/bot/command.ts';
import { tokenName } from '../src/bot/format.ts';
import { describeOrder, fetchToken, footerOf, wirePage } from '../src/bot/market.ts';
import { bold, type Reply, type ReplyButton } from '../src/bot/reply.ts';

const PAGE_SIZE = 5;

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
    { name: 'page', type: 'integer', description: 'Page (1 = cheapest)', min: 1, max: 1000 },
  ],
  async run(ctx, { collection, token, page = 1 }) {
    const target = { network: collection.network, contractAddress: collection.address, tokenId: token };
    const [metadata, list, highest] = await Promise.all([
      fetchToken(ctx, collection, token),
      ctx.platform.marketplace.listListingsForCollectible({
        ...target,
        page: { page: wirePage(page), pageSize: PAGE_SIZE, sort: [{ column: 'price', order: 'ASC' }] },
      }),
      ctx.platform.marketplace.getHighestPriceListingForCollectible(target),
    ]);
    const title = `Listings of ${tokenName(metadata, token)}`;
    const reply: Reply = { title, tone: 'listing', footer: `${footerOf(collection)} · page ${page}` };
    if (metadata.image) reply.thumbnail = metadata.image;
    if (list.listings.length === 0) {
      reply.lines = [page === 1 ? 'This token is not listed.' : `There is no page ${page}: the listings end earlier.`];
    } else {
      reply.fields = await Promise.all(
        list.listings.map(async (order, i) => ({
          name: `${(page - 1) * PAGE_SIZE + i + 1}.`,
          value: await describeOrder(ctx, collection.network, order),
        })),
      );
    }
    if (highest)
      reply.lines = [
        ...(reply.lines ?? []),
        [bold('Highest ask: '), ...(await describeOrder(ctx, collection.network, highest))],
      ];
    const nav: ReplyButton[] = [];
    if (page > 1) nav.push({ label: '◀ Cheaper', action: ctx.rerun({ page: String(page - 1) }) });
    if (list.page.more || list.listings.length === PAGE_SIZE)
      nav.push({ label: 'More ▶', action: ctx.rerun({ page: String(page + 1) }) });
    if (nav.length) reply.buttons = [nav];
    return reply;
  },
});
