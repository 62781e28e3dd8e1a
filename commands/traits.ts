import { defineCommand } from '../src/bot/command.ts';
import { footerOf } from '../src/bot/market.ts';
import { type Reply, truncate } from '../src/bot/reply.ts';

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
    const filters = await ctx.platform.metadata.tokenCollectionFilters({
      network: collection.network,
      contractAddress: collection.address,
    });
    const reply: Reply = { title: `Traits of ${collection.name}`, tone: 'info', footer: footerOf(collection) };
    if (filters.length === 0) {
      reply.lines = ['This collection has no traits to filter by.'];
      return reply;
    }
    reply.fields = filters.slice(0, 25).map((f) => {
      const values = f.values.map((v) => truncate(String(v), 40));
      const range = f.min !== null || f.max !== null ? ` (${f.min ?? '…'} to ${f.max ?? '…'})` : '';
      const shown = values.slice(0, MAX_VALUES).join(', ');
      return {
        name: `${truncate(f.name, 60)}${range}`,
        value: values.length > MAX_VALUES ? `${shown} and ${values.length - MAX_VALUES} more` : shown || '(any value)',
      };
    });
    const example = filters[0];
    if (example && example.values.length > 0) {
      reply.lines = [
        `Filter the floor by a trait: /floor ${collection.name} ${example.name}=${String(example.values[0])}`,
      ];
    }
    return reply;
  },
});
