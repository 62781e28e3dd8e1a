import { defineCommand } from '../src/bot/command.ts';
import { describeOrder, footerOf, onCollection, traitConditions } from '../src/bot/market-commands.ts';
import { bold, type ReplyField } from '../src/core/reply.ts';
import { byPriceAscending, tokenName } from '../src/market/format.ts';
import { firstItems } from '../src/market/paging.ts';
import type { CollectiblesFilter } from '../src/platform/types.ts';

export default defineCommand({
  name: 'floor',
  description: 'The cheapest listings of a collection, optionally filtered by traits',
  example: '/floor moon cats count=5 background=aurora',
  acceptsTraits: true,
  options: [
    {
      name: 'collection',
      type: 'collection',
      description: 'Collection name, alias or address',
      required: true,
      autocomplete: true,
    },
    { name: 'count', type: 'integer', description: 'How many listings (1-10)', min: 1, max: 10 },
  ],
  async run(ctx, { collection, count }) {
    const properties: NonNullable<CollectiblesFilter['properties']> = (
      await traitConditions(ctx, collection, '/floor <collection> [count] [trait=value ...]')
    ).map(({ filter, value }) => ({ name: filter.name, type: filter.type, values: [value] }));
    const size = count ?? 5;
    const { collectibles } = await onCollection(collection, () =>
      ctx.platform.marketplace.listCollectibles({
        network: collection.network,
        side: 'listing',
        contractAddress: collection.address,
        filter: { includeEmpty: false, ...(properties.length ? { properties } : {}) },
        page: firstItems(size),
      }),
    );
    const listed = collectibles
      .map((c) => ({ metadata: c.metadata, order: c.order ?? c.listing }))
      .filter((c): c is typeof c & { order: NonNullable<typeof c.order> } => c.order !== undefined)
      .sort((a, b) => byPriceAscending(a.order, b.order))
      .slice(0, size);
    const traitText = properties.map((p) => `${p.name}=${p.values?.[0]}`).join(', ');
    const title = `Floor of ${collection.name}${traitText ? ` (${traitText})` : ''}`;
    if (listed.length === 0) {
      return { title, tone: 'listing', lines: ['Nothing is listed right now.'], footer: footerOf(collection) };
    }
    const fields: ReplyField[] = [];
    for (const [index, item] of listed.entries()) {
      fields.push({
        name: `${index + 1}. ${tokenName(item.metadata, item.metadata.tokenId)}`,
        value: await describeOrder(ctx, collection.network, item.order),
      });
    }
    const first = listed[0];
    return {
      title,
      tone: 'listing',
      lines: first
        ? [[bold('Floor: '), ...(await describeOrder(ctx, collection.network, first.order)).slice(0, 1)]]
        : [],
      fields,
      ...(first?.metadata.image ? { thumbnail: first.metadata.image } : {}),
      footer: footerOf(collection),
      buttons: [[{ label: 'Refresh', action: ctx.typed.rerun(), replaces: true }]],
    };
  },
});
