import { defineCommand } from '../src/bot/command.ts';
import { shortAddress } from '../src/bot/format.ts';
import { code, type Reply, truncate } from '../src/core/reply.ts';

const MAX_RESULTS = 8;

export default defineCommand({
  name: 'search',
  description: 'Find collections and tokens by name',
  example: '/search moon',
  options: [{ name: 'text', type: 'text', description: 'Words to look for', required: true, rest: true }],
  async run(ctx, { text }) {
    const { contractInfo, tokenMetadata } = await ctx.platform.metadata.searchMetadata({
      filter: text,
      network: ctx.network,
      types: ['ERC721', 'ERC1155'],
    });
    const reply: Reply = { title: `Search: ${truncate(text, 60)}`, tone: 'info', footer: ctx.network };
    if (contractInfo.length === 0 && tokenMetadata.length === 0) {
      reply.lines = [`Nothing on ${ctx.network} matches. Try fewer or other words.`];
      return reply;
    }
    const fields = [];
    if (contractInfo.length > 0) {
      fields.push({
        name: `Collections (${contractInfo.length})`,
        value: contractInfo
          .slice(0, MAX_RESULTS)
          .map((c) => `${truncate(c.name || 'unnamed', 60)} · ${c.type || '?'} · ${shortAddress(c.address)}`)
          .join('\n'),
      });
    }
    if (tokenMetadata.length > 0) {
      fields.push({
        name: `Tokens (${tokenMetadata.length})`,
        value: tokenMetadata
          .slice(0, MAX_RESULTS)
          .map((t) => `${truncate(t.name || 'unnamed', 60)} · #${truncate(t.tokenId, 20)}`)
          .join('\n'),
      });
    }
    reply.fields = fields;
    reply.buttons = contractInfo.slice(0, 5).map((c) => [
      {
        label: `Floor of ${truncate(c.name || shortAddress(c.address), 60)}`,
        action: `/floor collection=${ctx.network}:${c.address.toLowerCase()}`,
      },
    ]);
    reply.lines = [
      ['Use a name or an address in other commands, e.g. ', code(`/floor ${contractInfo[0]?.address ?? '0x…'}`)],
    ];
    return reply;
  },
});
