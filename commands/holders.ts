import { defineCommand } from '../src/bot/command.ts';
import { footerOf } from '../src/bot/market-commands.ts';
import { code, type Reply } from '../src/core/reply.ts';
import { shortAddress } from '../src/market/format.ts';
import { nextPage } from '../src/market/paging.ts';

/** Bounded work: at most this many balance records are read. */
const PAGE_SIZE = 1_000;
const MAX_PAGES = 10;

export default defineCommand({
  name: 'holders',
  description: 'The top holders of a collection',
  example: '/holders moon cats',
  options: [
    {
      name: 'collection',
      type: 'collection',
      description: 'Collection name, alias or address',
      required: true,
      autocomplete: true,
    },
    { name: 'count', type: 'integer', description: 'How many holders (1-25)', min: 1, max: 25 },
  ],
  async run(ctx, { collection, count = 10 }) {
    const byAccount = new Map<string, bigint>();
    let more = true;
    let page: number | undefined;
    let pages = 0;
    let records = 0;
    while (more && pages < MAX_PAGES) {
      const result = await ctx.platform.indexer.getTokenBalancesByContract({
        network: collection.network,
        filter: { contractAddresses: [collection.address], contractStatus: 'ALL' },
        omitMetadata: true,
        page: page === undefined ? { pageSize: PAGE_SIZE } : { page, pageSize: PAGE_SIZE },
      });
      for (const balance of result.balances) {
        const account = balance.accountAddress.toLowerCase();
        byAccount.set(account, (byAccount.get(account) ?? 0n) + BigInt(balance.balance || '0'));
      }
      records += result.balances.length;
      more = result.page.more === true;
      page = nextPage(result.page, page);
      pages++;
    }
    const ranked = [...byAccount.entries()]
      .filter(([, amount]) => amount > 0n)
      .sort((a, b) => (b[1] > a[1] ? 1 : b[1] < a[1] ? -1 : 0));
    const reply: Reply = { title: `Top holders of ${collection.name}`, tone: 'info', footer: footerOf(collection) };
    if (ranked.length === 0) {
      reply.lines = ['Nobody holds a token of this collection.'];
      return reply;
    }
    const total = ranked.reduce((sum, [, amount]) => sum + amount, 0n);
    reply.lines = ranked.slice(0, count).map(([account, amount], i) => {
      const share = total > 0n ? Number((amount * 10_000n) / total) / 100 : 0;
      // Shortened to read, then whole in a code span to copy (a shortened address copies as no address).
      return [`${i + 1}. ${shortAddress(account)} holds ${amount} (${share}%) · `, code(account)];
    });
    reply.lines = [
      ...reply.lines,
      more
        ? `Counted the first ${records.toLocaleString('en-US')} balances only: the collection has more holders than the bot reads at once, so the ranking may be incomplete.`
        : `${ranked.length.toLocaleString('en-US')} holder${ranked.length === 1 ? '' : 's'} in all.`,
    ];
    return reply;
  },
});
