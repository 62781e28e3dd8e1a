import { defineCommand } from '../src/bot/command.ts';
import { footerOf, formatShare, onCollection, rarityPending } from '../src/bot/market.ts';
import { oneLine, type Reply } from '../src/core/reply.ts';

const MAX_VALUES = 20;

export default defineCommand({
  name: 'traits',
  description: 'The traits of a collection and their values',
  example: '/traits moon cats',
  options: [
    {
      name: 'collection',
      type: 'collection',
      description: 'Collection name, alias or address',
      required: true,
      autocomplete: true,
    },
  ],
  async run(ctx, { collection }) {
    const filters = await onCollection(collection, () =>
      ctx.platform.metadata.tokenCollectionFilters({
        network: collection.network,
        contractAddress: collection.address,
      }),
    );
    const reply: Reply = { title: `Traits of ${collection.name}`, tone: 'info', footer: footerOf(collection) };
    if (filters.length === 0) {
      reply.lines = ['This collection has no traits to filter by.'];
      return reply;
    }
    const rarity = ctx.market?.rarity?.lookup(collection.network, collection.address);
    const table = rarity?.status === 'ready' ? rarity.table : undefined;
    reply.fields = filters.slice(0, 25).map((f) => {
      const values = f.values.map((v) => {
        const share = table?.share(f.name, String(v));
        const text = oneLine(String(v), 40);
        return share === undefined ? text : `${text} ${formatShare(share)}`;
      });
      const range = f.min !== null || f.max !== null ? ` (${f.min ?? '…'} to ${f.max ?? '…'})` : '';
      const shown = values.slice(0, MAX_VALUES).join(', ');
      return {
        name: `${oneLine(f.name, 60)}${range}`,
        value: values.length > MAX_VALUES ? `${shown} and ${values.length - MAX_VALUES} more` : shown || '(any value)',
      };
    });
    const lines: string[] = [];
    if (rarity?.status === 'ready') {
      lines.push(`Shares of the ${rarity.table.tokens.toLocaleString('en-US')} tokens that have each value.`);
    } else if (rarity) {
      lines.push(`Shares of each value: ${rarityPending(rarity)}.`);
    }
    const example = filters[0];
    if (example && example.values.length > 0) {
      lines.push(`Filter the floor by a trait: /floor ${collection.name} ${example.name}=${String(example.values[0])}`);
    }
    if (lines.length) reply.lines = lines;
    return reply;
  },
});
