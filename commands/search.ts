import { defineCommand } from '../src/bot/command.ts';
import { networkPrefix } from '../src/bot/options.ts';
import { code, oneLine, type Reply, type ReplyField, truncate } from '../src/core/reply.ts';
import { shortAddress } from '../src/market/format.ts';
import type { ContractInfo, TokenMetadata } from '../src/platform/types.ts';

const MAX_RESULTS = 8;

/** `8 of 100` when only the first are listed: the platform's count is of what it returned, not all there is. */
function counted(found: number): string {
  return found > MAX_RESULTS ? `first ${MAX_RESULTS} of ${found} found` : String(found);
}
const MAX_BUTTONS = 5;

interface Found {
  network: string;
  collections: ContractInfo[];
  tokens: TokenMetadata[];
}

export default defineCommand({
  name: 'search',
  description: 'Find collections and tokens by name, on every network',
  example: '/search moon',
  options: [
    { name: 'text', type: 'text', description: 'Words to look for', required: true, rest: true },
    { name: 'network', type: 'network', description: 'Only this network', namedOnly: true },
  ],
  async run(ctx, { text, network }) {
    const networks = ctx.platform.networks.all.map((n) => n.name);
    const prefixed = networkPrefix(text, { networks });
    const words = prefixed?.rest || text;
    const only = network ?? prefixed?.network;
    // The chat's network first; the others are looked at too unless one was named.
    const searched = only ? [only] : [ctx.network, ...networks.filter((n) => n !== ctx.network)];
    const settled = await Promise.allSettled(
      searched.map(async (name): Promise<Found> => {
        const chainId = ctx.platform.networks.resolve(name).chainId;
        const { contractInfo, tokenMetadata } = await ctx.platform.metadata.searchMetadata({
          filter: words,
          network: name,
          types: ['ERC721', 'ERC1155'],
        });
        const collections = contractInfo.filter((c) => c.chainId === undefined || c.chainId === chainId);
        return { network: name, collections, tokens: tokenMetadata };
      }),
    );
    // Another network's failure only hides its matches; the chat's own network's failure is the answer.
    const first = settled[0];
    if (first?.status === 'rejected') throw first.reason;
    const found = settled.flatMap((r) =>
      r.status === 'fulfilled' && (r.value.collections.length > 0 || r.value.tokens.length > 0) ? [r.value] : [],
    );
    const where = only ?? (searched.length > 1 ? 'any network' : ctx.network);
    const reply: Reply = { title: `Search: ${truncate(words, 60)}`, tone: 'info', footer: searched.join(', ') };
    if (found.length === 0) {
      reply.lines = [`Nothing on ${where} matches. Try fewer or other words.`];
      return reply;
    }
    const label = (f: Found) => (searched.length > 1 ? ` on ${f.network}` : '');
    const fields: ReplyField[] = [];
    for (const f of found) {
      if (f.collections.length > 0) {
        fields.push({
          name: `Collections${label(f)} (${counted(f.collections.length)})`,
          value: f.collections
            .slice(0, MAX_RESULTS)
            .map((c) => `${oneLine(c.name, 60) || 'unnamed'} · ${c.type || '?'} · ${shortAddress(c.address)}`)
            .join('\n'),
        });
      }
      if (f.tokens.length > 0) {
        // Real servers and the local platform say which contract a found token is of (wire-protocol.md).
        const names = new Map(f.collections.map((c) => [c.address.toLowerCase(), oneLine(c.name, 40)]));
        const of = (t: TokenMetadata) => {
          const address = t.contractAddress?.toLowerCase();
          return address ? ` · ${names.get(address) || shortAddress(address)}` : '';
        };
        fields.push({
          name: `Tokens${label(f)} (${counted(f.tokens.length)})`,
          value: f.tokens
            .slice(0, MAX_RESULTS)
            .map((t) => `${oneLine(t.name, 60) || 'unnamed'} · #${truncate(t.tokenId, 20)}${of(t)}`)
            .join('\n'),
        });
      }
    }
    reply.fields = fields;
    const collections = found.flatMap((f) => f.collections.map((c) => ({ network: f.network, info: c })));
    reply.buttons = collections.slice(0, MAX_BUTTONS).map(({ network: on, info }) => [
      {
        label: `Floor of ${oneLine(info.name, 60) || shortAddress(info.address)}${searched.length > 1 ? ` (${on})` : ''}`,
        action: `/floor collection=${on}:${info.address.toLowerCase()}`,
      },
    ]);
    const example = collections[0];
    const elsewhere = found.every((f) => f.network !== ctx.network);
    reply.lines = [
      ...(elsewhere && !only ? [`Nothing on ${ctx.network} matches; these are on other networks.`] : []),
      [
        'Use a name or an address in other commands, e.g. ',
        code(example ? `/floor ${example.network}:${example.info.address}` : '/floor 0x…'),
      ],
    ];
    return reply;
  },
});
