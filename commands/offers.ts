import { defineCommand } from '../src/bot/command.ts';
import { byPriceDescending, tokenName } from '../src/bot/format.ts';
import { describeOrder, fetchToken, firstItems, footerOf, MAX_BOOK_PAGES } from '../src/bot/market.ts';
import { bold, type Reply, type ReplyButton } from '../src/bot/reply.ts';

const PAGE_SIZE = 5;

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
  async run(ctx, { collection, token, page = 1 }) {
    const target = { network: collection.network, contractAddress: collection.address, tokenId: token };
    const [metadata, list, lowest] = await Promise.all([
      fetchToken(ctx, collection, token),
      ctx.platform.marketplace.listOffersForCollectible({
        ...target,
        page: firstItems(page * PAGE_SIZE + 1),
      }),
      ctx.platform.marketplace.getLowestPriceOfferForCollectible(target),
    ]);
    const reply: Reply = {
      title: `Offers on ${tokenName(metadata, token)}`,
      tone: 'offer',
      footer: `${footerOf(collection)} · page ${page}`,
    };
    if (metadata.image) reply.thumbnail = metadata.image;
    const sorted = [...list.offers].sort(byPriceDescending);
    const shown = sorted.slice((page - 1) * PAGE_SIZE, page * PAGE_SIZE);
    if (shown.length === 0) {
      reply.lines = [
        page === 1 ? 'Nobody has made an offer on this token.' : `There is no page ${page}: the offers end earlier.`,
      ];
    } else {
      reply.fields = await Promise.all(
        shown.map(async (order, i) => ({
          name: `${(page - 1) * PAGE_SIZE + i + 1}.`,
          value: await describeOrder(ctx, collection.network, order),
        })),
      );
    }
    if (lowest)
      reply.lines = [
        ...(reply.lines ?? []),
        [bold('Lowest offer: '), ...(await describeOrder(ctx, collection.network, lowest))],
      ];
    const nav: ReplyButton[] = [];
    if (page > 1) nav.push({ label: '◀ Higher', action: ctx.rerun({ page: String(page - 1) }) });
    if (
      page < MAX_BOOK_PAGES &&
      (sorted.length > page * PAGE_SIZE || (list.page.more === true && sorted.length >= page * PAGE_SIZE))
    )
      nav.push({ label: 'More ▶', action: ctx.rerun({ page: String(page + 1) }) });
    if (nav.length) reply.buttons = [nav];
    return reply;
  },
});
