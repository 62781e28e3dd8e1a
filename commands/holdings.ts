import { defineCommand } from '../src/bot/command.ts';
import { footerOf } from '../src/bot/market-commands.ts';
import type { Reply } from '../src/core/reply.ts';
import { shortAddress, tokenName } from '../src/market/format.ts';
import { nextPage } from '../src/market/paging.ts';
import type { TokenBalance } from '../src/platform/types.ts';

const PAGE_SIZE = 100;
const MAX_PAGES = 5;
const SHOWN = 20;

export default defineCommand({
  name: 'holdings',
  description: 'What a wallet holds in a collection',
  example: '/holdings moon cats 0x1234…',
  options: [
    {
      name: 'collection',
      type: 'collection',
      description: 'Collection name, alias or address',
      required: true,
      autocomplete: true,
    },
    { name: 'address', type: 'address', description: 'Wallet address', required: true },
  ],
  async run(ctx, { collection, address }) {
    const balances: TokenBalance[] = [];
    let more = true;
    let page: number | undefined;
    let pages = 0;
    while (more && pages < MAX_PAGES) {
      const result = await ctx.platform.indexer.getTokenBalancesByContract({
        network: collection.network,
        filter: { contractAddresses: [collection.address], accountAddresses: [address], contractStatus: 'ALL' },
        omitMetadata: false,
        page: page === undefined ? { pageSize: PAGE_SIZE } : { page, pageSize: PAGE_SIZE },
      });
      balances.push(...result.balances.filter((b) => b.balance !== '0'));
      more = result.page.more === true;
      page = nextPage(result.page, page);
      pages++;
    }
    const reply: Reply = {
      title: `${shortAddress(address)} in ${collection.name}`,
      tone: 'info',
      footer: footerOf(collection),
    };
    if (balances.length === 0) {
      reply.lines = ['This wallet holds nothing in this collection.'];
      return reply;
    }
    const total = balances.reduce((sum, b) => sum + BigInt(b.balance), 0n);
    reply.lines = [
      `${total} token${total === 1n ? '' : 's'} across ${balances.length} id${balances.length === 1 ? '' : 's'}${more ? ' (first part only: the wallet holds more)' : ''}.`,
    ];
    reply.fields = [
      {
        name: 'Tokens',
        value:
          balances
            .slice(0, SHOWN)
            .map((b) => {
              const id = b.tokenID ?? '?';
              const name = tokenName(b.tokenMetadata, id);
              return b.balance === '1' ? name : `${name} ×${b.balance}`;
            })
            .join('\n') + (balances.length > SHOWN ? `\n… and ${balances.length - SHOWN} more` : ''),
      },
    ];
    return reply;
  },
});
