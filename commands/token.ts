import { defineCommand } from '../src/bot/command.ts';
import { describeOrder, explainNotFound, fetchToken, footerOf, rarityPending } from '../src/bot/market-commands.ts';
import { inertCommands, oneLine, type Reply, type ReplyField, safeUrl, truncate } from '../src/core/reply.ts';
import { byPriceAscending, byPriceDescending, formatShare, tokenName, traitsOf } from '../src/market/format.ts';
import { firstItems } from '../src/market/paging.ts';

const MAX_TRAIT_FIELDS = 12;
/**
 * The bot's own rarity line. Not "Rarity": collections have traits of that name (Pixel Potions'
 * "Rarity: Common"), shown beside it.
 */
const RARITY_FIELD = 'Rarity rank';
/** Orders read to find the best of each side. */
const BOOK_SAMPLE = 20;

export default defineCommand({
  name: 'token',
  description: 'A token: image, traits, description, best listing and best offer',
  example: '/token moon cats 42',
  options: [
    {
      name: 'collection',
      type: 'collection',
      description: 'Collection name, alias or address',
      required: true,
      autocomplete: true,
    },
    { name: 'token', type: 'tokenId', description: 'Token id', required: true },
  ],
  async run(ctx, { collection, token }) {
    const target = { network: collection.network, contractAddress: collection.address, tokenId: token };
    const [metadata, listings, offers] = await Promise.all([
      fetchToken(ctx, collection, token),
      ctx.platform.marketplace.listListingsForCollectible({
        ...target,
        page: firstItems(BOOK_SAMPLE),
      }),
      ctx.platform.marketplace.listOffersForCollectible({
        ...target,
        page: firstItems(BOOK_SAMPLE),
      }),
    ]).catch((error: unknown) => explainNotFound(ctx, collection, token, error));
    const traits = traitsOf(metadata);
    // Never waits: the first ask starts counting the collection, a later one shows the result.
    const rarity = ctx.market?.rarity?.lookup(collection.network, collection.address);
    const table = rarity?.status === 'ready' ? rarity.table : undefined;
    const fields: ReplyField[] = [];
    if (rarity?.status === 'ready') {
      const ranked = rarity.table.rank(metadata.tokenId || token);
      fields.push({
        name: RARITY_FIELD,
        value: ranked
          ? `${ranked.rank.toLocaleString('en-US')} of ${ranked.of.toLocaleString('en-US')}`
          : 'not ranked: the token is newer than the count',
        inline: true,
      });
    } else if (rarity) {
      fields.push({ name: RARITY_FIELD, value: rarityPending(rarity), inline: true });
    }
    for (const t of traits.slice(0, MAX_TRAIT_FIELDS)) {
      const share = table?.share(t.name, t.value);
      const value = oneLine(t.value, 90);
      fields.push({
        name: oneLine(t.name, 60),
        value: share === undefined ? value : `${value} · ${formatShare(share)}`,
        inline: true,
      });
    }
    if (traits.length > MAX_TRAIT_FIELDS) {
      fields.push({ name: 'More traits', value: `${traits.length - MAX_TRAIT_FIELDS} more`, inline: true });
    }
    const bestListing = [...listings.listings].sort(byPriceAscending)[0];
    const bestOffer = [...offers.offers].sort(byPriceDescending)[0];
    fields.push({
      name: 'Best listing',
      value: bestListing ? await describeOrder(ctx, collection.network, bestListing) : 'not listed',
    });
    fields.push({
      name: 'Best offer',
      value: bestOffer ? await describeOrder(ctx, collection.network, bestOffer) : 'no offers',
    });
    const buy = bestListing && ctx.links?.order(collection.network, collection.address, token, bestListing);
    const reply: Reply = {
      title: tokenName(metadata, token),
      tone: 'info',
      fields,
      footer: `${footerOf(collection)} · token ${truncate(token, 30)}`,
      buttons: [
        [
          ...(buy ? [{ label: `Buy on ${buy.label}`, url: buy.url, style: 'success' as const }] : []),
          {
            label: 'Listings',
            action: `/listings collection=${collection.network}:${collection.address} token=${token}`,
          },
          { label: 'Offers', action: `/offers collection=${collection.network}:${collection.address} token=${token}` },
        ],
      ],
    };
    const description = metadata.description?.trim();
    if (description) reply.lines = [truncate(inertCommands(description), 600)];
    const image = safeUrl(metadata.image);
    if (image) reply.image = image;
    else if (metadata.image) reply.lines = [...(reply.lines ?? []), '(The token image link is not usable.)'];
    // The title opens the token on its marketplace; without one, the project's own page for it.
    const page = safeUrl(ctx.links?.token(collection.network, collection.address, token) ?? metadata.externalUrl);
    if (page) reply.url = page;
    return reply;
  },
});
