import { defineCommand } from '../src/bot/command.ts';
import { UserError } from '../src/bot/errors.ts';
import { explainNotFound, fetchToken, footerOf } from '../src/bot/market-commands.ts';
import { bold, code, type ReplyField, type Rich, truncate } from '../src/core/reply.ts';
import { byPriceAscending, formatPrice, shortAddress, tokenName } from '../src/market/format.ts';
import { firstItems } from '../src/market/paging.ts';
import type { Step } from '../src/platform/types.ts';

/** What each step asks of the buyer, in words. */
function explain(step: Step): string {
  switch (step.id) {
    case 'tokenApproval':
      return 'Approve the marketplace to spend the payment token (one-time allowance).';
    case 'buy':
      return 'Send the purchase transaction.';
    case 'signEIP712':
      return 'Sign a typed-data message in your wallet (no gas).';
    case 'signEIP191':
      return 'Sign a message in your wallet (no gas).';
    default:
      if (step.signature) return 'Sign a typed-data message in your wallet (no gas).';
      if (step.data) return 'Send a transaction.';
      return 'Follow-up request.';
  }
}

export default defineCommand({
  name: 'buy',
  description: 'Checkout steps to buy a token at its cheapest listing',
  example: '/buy moon cats 42 0xYourWallet',
  options: [
    {
      name: 'collection',
      type: 'collection',
      description: 'Collection name, alias or address',
      required: true,
      autocomplete: true,
    },
    { name: 'token', type: 'tokenId', description: 'Token id', required: true },
    { name: 'wallet', type: 'address', description: 'The buyer wallet', required: true },
  ],
  async run(ctx, { collection, token, wallet }) {
    const target = { network: collection.network, contractAddress: collection.address, tokenId: token };
    const [metadata, { listings }] = await Promise.all([
      fetchToken(ctx, collection, token),
      ctx.platform.marketplace.listListingsForCollectible({
        ...target,
        page: firstItems(20),
      }),
    ]).catch((error: unknown) => explainNotFound(ctx, collection, token, error));
    const cheapest = [...listings].sort(byPriceAscending)[0];
    if (!cheapest) {
      throw new UserError('not_found', {
        what: `${tokenName(metadata, token)} is not listed, so it cannot be bought now.`,
      });
    }
    // The book may have moved since the listing page was cached: check the order is still open.
    const { orders } = await ctx.platform.marketplace.getOrders({
      network: collection.network,
      input: [
        {
          contractAddress: collection.address,
          orderId: cheapest.orderId,
          ...(cheapest.marketplace ? { marketplace: cheapest.marketplace } : {}),
        },
      ],
    });
    const order = orders.find((o) => o.orderId === cheapest.orderId) ?? cheapest;
    if (order.status && order.status !== 'active') {
      throw new UserError('not_found', { what: `The cheapest listing was just ${order.status}. Run /buy again.` });
    }
    const steps = await ctx.platform.marketplace.generateBuyTransaction({
      network: collection.network,
      collectionAddress: collection.address,
      buyer: wallet,
      marketplace: order.marketplace ?? 'sequence_marketplace_v2',
      ordersData: [{ orderId: order.orderId, quantity: '1', tokenId: token }],
      walletType: 'unknown',
    });
    const symbol = await ctx.currencies.symbol(collection.network, order.priceCurrencyAddress);
    const fields: ReplyField[] = steps.map((step, i) => {
      const lines: Rich[] = [explain(step)];
      if (step.to) lines.push(['To: ', code(step.to)]);
      if (step.value && step.value !== '0') lines.push(['Value: ', code(step.value)]);
      if (step.data) lines.push(['Data: ', code(truncate(step.data, 300))]);
      if (step.signature) lines.push(['Sign: ', code(truncate(step.signature.primaryType || 'typed data', 80))]);
      return {
        name: `Step ${i + 1}${step.id ? ` · ${step.id}` : ''}`,
        value: lines.flatMap((line, j) =>
          j === 0
            ? typeof line === 'string'
              ? [line]
              : [...line]
            : ['\n', ...(typeof line === 'string' ? [line] : line)],
        ),
      };
    });
    return {
      title: `Buy ${tokenName(metadata, token)}`,
      tone: 'sale',
      lines: [
        [bold('Price: '), formatPrice(order, symbol)],
        [
          'Buyer: ',
          code(shortAddress(wallet)),
          ` · ${steps.length} step${steps.length === 1 ? '' : 's'}, in this order:`,
        ],
        'Run them from the buyer wallet. Nothing is sent by the bot.',
      ],
      fields,
      ...(metadata.image ? { thumbnail: metadata.image } : {}),
      footer: footerOf(collection),
      attachments: [
        {
          name: 'checkout-steps.json',
          contentType: 'application/json',
          data: new TextEncoder().encode(JSON.stringify({ order: order.orderId, buyer: wallet, steps }, null, 2)),
        },
      ],
    };
  },
});
