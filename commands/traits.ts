import { defineCommand, isGroup, type ResolvedCollection } from '../src/bot/command.ts';
import { footerOf, onCollection, rarityPending } from '../src/bot/market-commands.ts';
import { oneLine, type Reply } from '../src/core/reply.ts';
import { formatShare } from '../src/market/format.ts';
import type { PropertyFilter } from '../src/platform/types.ts';

const MAX_VALUES = 20;

/** A trait name the command line can take as `key=value` (see tokenize in src/bot/options.ts). */
const TYPEABLE_KEY = /^[A-Za-z_][\w .-]{0,40}$/;

/**
 * A `/floor` line with a trait filter that runs as shown in a chat whose network is `chatNetwork`:
 * the collection on another network carries its network, a name that would not read back as itself
 * is given as the address, and a word with spaces is quoted. `optionNames` are /floor's own options,
 * which a trait of the same name would be read as. None when no trait can be typed as `key=value`.
 */
export function filterExample(
  collection: ResolvedCollection,
  filters: readonly PropertyFilter[],
  chatNetwork: string,
  optionNames: readonly string[],
): string | undefined {
  const typeable = (value: string) => value !== '' && value.trim() === value && !/["']/.test(value);
  const taken = new Set(['network', ...optionNames]);
  const filter = filters.find(
    (f) => TYPEABLE_KEY.test(f.name) && !taken.has(f.name.toLowerCase()) && f.values.map(String).some(typeable),
  );
  const value = filter?.values.map(String).find(typeable);
  if (!filter || value === undefined) return undefined;
  // Quotes open a quoted word, 0x starts an address, and a last word that is a number reads as the count.
  const plainName = /^[\p{L}\p{N}][\p{L}\p{N} .-]*$/u.test(collection.name) && !/^0x|\s\d+$/i.test(collection.name);
  const name = plainName ? collection.name.toLowerCase() : collection.address;
  const where = collection.network === chatNetwork ? name : `${collection.network}:${name}`;
  const word = `${filter.name}=${value}`;
  return `/floor ${where} ${/\s/.test(word) ? `"${word}"` : word}`;
}

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
    const floor = ctx.bot.commands.find((c) => c.name === 'floor');
    const example = filterExample(
      collection,
      filters,
      ctx.store.chat(ctx.chatKey).network ?? ctx.settings.defaultNetwork,
      floor && !isGroup(floor) ? floor.options.map((o) => o.name) : [],
    );
    if (example) lines.push(`Filter the floor by a trait: ${example}`);
    if (lines.length) reply.lines = lines;
    return reply;
  },
});
