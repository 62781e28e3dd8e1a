import { defineCommand } from '../src/bot/command.ts';
import { footerOf, holdersSummary, listedSummary, onCollection } from '../src/bot/market-commands.ts';
import type { MarketHistoryView, WindowActivity } from '../src/core/market.ts';
import { bold, type Reply, type ReplyField, type Rich, safeUrl } from '../src/core/reply.ts';
import { countText, formatPrice, formatUsd, momentText, tokenName } from '../src/market/format.ts';

const DAY_MS = 24 * 60 * 60 * 1000;
const WINDOWS: ReadonlyArray<[string, number]> = [
  ['Last 24 hours', DAY_MS],
  ['Last 7 days', 7 * DAY_MS],
];

/** `12 sales · $34,120.50 volume · floor +4.2%` */
function activityText(activity: WindowActivity, floorNow: number | undefined): string {
  const parts = [`${activity.sales.toLocaleString('en-US')} ${activity.sales === 1 ? 'sale' : 'sales'}`];
  if (activity.priced > 0) {
    const volume = formatUsd(activity.volumeUsd) ?? '$0';
    parts.push(
      activity.priced < activity.sales
        ? `${volume} volume (${activity.priced.toLocaleString('en-US')} of them priced)`
        : `${volume} volume`,
    );
  }
  const then = activity.floorThen;
  if (then && floorNow !== undefined) {
    const change = ((floorNow - then.usd) / then.usd) * 100;
    const rounded = Math.round(change * 10) / 10;
    parts.push(`floor ${rounded > 0 ? '+' : ''}${rounded === 0 ? '0' : rounded}%`);
  }
  return parts.join(' · ');
}

async function historyFields(
  history: MarketHistoryView,
  network: string,
  address: string,
  now: number,
  floorNow?: number,
) {
  const fields: ReplyField[] = [];
  const notes: string[] = [];
  let partial = false;
  let compared = false;
  for (const [label, windowMs] of WINDOWS) {
    const activity = await history.activity(network, address, windowMs, now);
    let name = label;
    if (!activity.complete) {
      // A window the record does not cover is named by what it covers: a count since start-up is not
      // a day's or a week's. Longer windows begin at the same moment, so one field says them all.
      if (partial) continue;
      partial = true;
      name = `Since ${momentText(activity.from, now)}`;
      notes.push(`recording began at ${momentText(activity.from, now)}: sales before then are not counted`);
    }
    fields.push({ name, value: activityText(activity, floorNow) });
    const then = activity.floorThen;
    if (then && floorNow !== undefined) compared = true;
    if (then && floorNow !== undefined && then.at > now - windowMs) {
      notes.push(
        `${activity.complete ? label.toLowerCase() : 'since then'}: floor change from the first floor recorded, at ${momentText(then.at, now)}`,
      );
    }
  }
  // The floor looked up now is recorded after this answer: the next one has a floor to compare with.
  if (floorNow !== undefined && !compared) notes.push('floor change: not enough history yet');
  return { fields, notes };
}

export default defineCommand({
  name: 'collection',
  description: 'A collection at a glance: floor, listed, holders, supply, and sales over 24 h and 7 days',
  example: '/collection moon cats',
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
    const [listed, holders] = await onCollection(collection, () =>
      Promise.all([listedSummary(ctx, collection), holdersSummary(ctx, collection)]),
    );
    const now = ctx.now().getTime();
    const floorOrder = listed.cheapest?.order;
    const floorUsd = floorOrder && floorOrder.priceUSD > 0 ? floorOrder.priceUSD : undefined;
    const history = ctx.market?.history;

    const fields: ReplyField[] = [];
    if (floorOrder && listed.cheapest) {
      const symbol = await ctx.currencies.symbol(collection.network, floorOrder.priceCurrencyAddress);
      fields.push({
        name: 'Floor',
        value: `${formatPrice(floorOrder, symbol)} · ${tokenName(listed.cheapest.metadata, listed.cheapest.metadata.tokenId)}`,
        inline: true,
      });
    } else {
      fields.push({ name: 'Floor', value: 'nothing listed', inline: true });
    }
    fields.push({ name: 'Listed', value: countText(listed.count, listed.capped), inline: true });
    fields.push({ name: 'Holders', value: countText(holders.holders, holders.capped), inline: true });
    fields.push({ name: 'Supply', value: countText(holders.supply, holders.capped), inline: true });

    const lines: Rich[] = [];
    if (history) {
      const recorded = await historyFields(history, collection.network, collection.address, now, floorUsd);
      fields.push(...recorded.fields);
      const notes = recorded.notes.length ? ` (${recorded.notes.join('; ')})` : '';
      lines.push([bold('Sales and floor changes'), ` are what the bot recorded${notes}.`]);
      // After reading the history: this floor is the next one's "then", not this one's.
      if (floorUsd !== undefined) await history.floor(collection.network, collection.address, floorUsd, now, true);
    } else {
      lines.push('Sales over 24 h and 7 days: not recorded (the bot runs without its alert pipeline).');
    }
    const reply: Reply = {
      title: collection.name,
      tone: 'info',
      lines,
      fields,
      footer: footerOf(collection),
      buttons: [
        [
          { label: 'Refresh', action: ctx.typed.rerun(), replaces: true },
          { label: 'Floor', action: `/floor collection=${collection.network}:${collection.address}` },
          { label: 'Holders', action: `/holders collection=${collection.network}:${collection.address}` },
        ],
      ],
    };
    const image = safeUrl(collection.image) ?? safeUrl(listed.cheapest?.metadata.image);
    if (image) reply.thumbnail = image;
    return reply;
  },
});
