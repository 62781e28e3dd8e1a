import {
  code,
  type Inline,
  oneLine,
  type Reply,
  type ReplyField,
  type ReplyTone,
  safeUrl,
  truncate,
} from '../core/reply.ts';
import type { AlertKind, Destination } from '../core/types.ts';
import { formatUsd, groupThousands, shortAddress } from '../market/format.ts';
import type { MatchedDestination } from './rule-filters.ts';
import type { ChainEvent } from './types.ts';

/** What enrichment found out about an event's tokens. */
export interface TokenDetails {
  tokenId: string;
  amount: string;
  name?: string;
  image?: string;
  traits?: Array<{ name: string; value: string }>;
}

/** An event with everything its message shows. Built once per event, whatever the number of chats. */
export interface AlertDetails {
  event: ChainEvent;
  collectionName: string;
  tokens: TokenDetails[];
  /**
   * Total price (all tokens) in the order currency, formatted, with its symbol and USD value (of
   * every currency). A sweep paid in several currencies lists the others' totals in `more`.
   */
  price?: { amount: string; symbol: string; usd?: number; more?: Array<{ amount: string; symbol: string }> };
  marketplace?: string;
  /**
   * The collection's floor in USD per token (its cheapest listing other than this event's own), for
   * sales and listings: the alert says how its price per token compares.
   */
  floorUsd?: number;
  /** The token's previous sale as the bot recorded it (sales of one token), with its USD per unit when known. */
  lastSale?: { at: string; usd?: number };
  /** Sale context (alerts/sale-context.ts): how long the seller held the token (ms), from their recorded purchase. */
  heldForMs?: number;
  /** The seller's profit (signed, formatted) in the sale's currency, and relative to what they paid. */
  profit?: { amount: string; percent?: number };
  /** What the buyer holds of the collection after the sale (units): `isNew` when this sale is their first. */
  buyerHolds?: { units: string; isNew: boolean };
  /** The sale is worth at least the whale size (FLOORWATCH_WHALE_USD). */
  whale?: boolean;
  /** A cancel: whether the cancelled order was a listing or an offer, when its order says. */
  cancelled?: 'listing' | 'offer';
  /** The token's page (one token), the transaction's page, and where a listing can be bought. */
  links?: { token?: string; transaction?: string; buy?: { label: string; url: string } };
}

const VERBS: Record<AlertKind, string> = {
  sale: 'Sold',
  listing: 'Listed',
  offer: 'Offer',
  mint: 'Minted',
  transfer: 'Transferred',
  burn: 'Burned',
  cancel: 'Cancelled',
};

const TONES: Record<AlertKind, ReplyTone> = {
  sale: 'sale',
  listing: 'listing',
  offer: 'offer',
  mint: 'mint',
  transfer: 'transfer',
  burn: 'warning',
  cancel: 'info',
};

const MAX_TOKENS_LISTED = 10;

function tokenLabel(token: TokenDetails): string {
  const name = oneLine(token.name ?? '', 60) || `#${truncate(token.tokenId, 20)}`;
  return token.amount !== '1' ? `${name} ×${token.amount}` : name;
}

/** The alert message of an event. `mentionRole` is the only ping it may carry. */
export function renderAlert(details: AlertDetails, options: { mentionRole?: string; sample?: boolean } = {}): Reply {
  const { event } = details;
  const first = details.tokens[0];
  const count = details.tokens.reduce((sum, t) => sum + (Number(t.amount) || 1), 0);
  const many = details.tokens.length > 1;
  const subject = many
    ? `${count} × ${oneLine(details.collectionName, 60)}`
    : first
      ? tokenLabel(first)
      : oneLine(details.collectionName, 60);
  const verb =
    event.kind === 'sale' && many
      ? 'Sweep'
      : details.cancelled
        ? `${VERBS[event.kind]} ${details.cancelled}`
        : VERBS[event.kind];
  const price = details.price
    ? [details.price, ...(details.price.more ?? [])].map((p) => `${p.amount} ${p.symbol}`).join(' + ')
    : undefined;
  const title = `${options.sample ? '[Sample] ' : ''}${details.whale && event.kind === 'sale' ? '🐋 Whale · ' : ''}${verb}: ${subject}${price ? ` for ${price}` : ''}`;

  const fields: ReplyField[] = [];
  if (details.price) {
    const usd = formatUsd(details.price.usd);
    fields.push({ name: many ? 'Total' : 'Price', value: usd ? `${price} (${usd})` : (price ?? ''), inline: true });
    const floor = floorContext(details, count);
    if (floor) fields.push({ name: 'Floor', value: floor, inline: true });
  }
  if (event.kind === 'sale' && details.lastSale) fields.push(lastSaleField(details.lastSale, event.ts));
  if (event.kind === 'sale') fields.push(...saleContextFields(details));
  const party = (label: string, address: string | undefined) => {
    if (address) fields.push({ name: label, value: [code(shortAddress(address))], inline: true });
  };
  switch (event.kind) {
    case 'sale':
      party('Seller', event.from);
      if (event.to && details.buyerHolds) {
        const holds = buyerHoldsText(details.buyerHolds);
        fields.push({ name: 'Buyer', value: [code(shortAddress(event.to)), ` · ${holds}`], inline: true });
      } else party('Buyer', event.to);
      break;
    case 'listing':
    case 'offer':
    case 'cancel':
      party(event.kind === 'offer' || details.cancelled === 'offer' ? 'Bidder' : 'Maker', event.from);
      break;
    case 'mint':
      party('To', event.to);
      break;
    case 'burn':
      party('From', event.from);
      break;
    case 'transfer':
      party('From', event.from);
      party('To', event.to);
      break;
  }
  if (details.marketplace) fields.push({ name: 'Market', value: details.marketplace, inline: true });
  const links: Inline[] = [];
  if (details.links?.buy) links.push({ link: `Buy on ${details.links.buy.label}`, href: details.links.buy.url });
  if (details.links?.transaction) {
    if (links.length) links.push(' · ');
    links.push({ link: 'Transaction', href: details.links.transaction });
  }
  if (many) {
    const listed = details.tokens.slice(0, MAX_TOKENS_LISTED).map(tokenLabel).join(', ');
    const rest = details.tokens.length - MAX_TOKENS_LISTED;
    fields.push({ name: `Tokens (${details.tokens.length})`, value: rest > 0 ? `${listed} and ${rest} more` : listed });
  }
  if (links.length) fields.push({ name: 'Links', value: links, inline: true });
  const reply: Reply = {
    title,
    tone: TONES[event.kind],
    fields,
    // A sample happened in no block or transaction: its footer names none.
    footer: options.sample
      ? `${oneLine(details.collectionName, 60)} · ${event.network} · sample`
      : `${oneLine(details.collectionName, 60)} · ${event.network} · block ${event.blockNumber} · tx ${shortAddress(event.txnHash)}`,
    timestamp: event.ts,
  };
  const image = safeUrl(first?.image);
  if (image) reply.image = image;
  const page = safeUrl(details.links?.token);
  if (page) reply.url = page;
  if (options.mentionRole) reply.mentionRoles = [options.mentionRole];
  // When it happened and how it was read: a late send says so (delivery/lateness.ts). A sample never happened.
  if (!options.sample) reply.happened = event.readBack ? { at: event.ts, readBack: event.readBack } : { at: event.ts };
  return reply;
}

/**
 * How a price per token compares with the floor: `63% below floor`, `at floor`, `12% above floor`,
 * `2.1× floor`. Prices within half a percent of the floor are at it.
 */
export function floorRelation(perTokenUsd: number, floorUsd: number): string {
  const ratio = perTokenUsd / floorUsd;
  if (ratio < 0.995) return `${Math.min(99, Math.max(1, Math.round((1 - ratio) * 100)))}% below floor`;
  if (ratio <= 1.005) return 'at floor';
  if (ratio < 2) return `${Math.max(1, Math.round((ratio - 1) * 100))}% above floor`;
  return `${ratio < 100 ? ratio.toFixed(1) : Math.round(ratio).toLocaleString('en-US')}× floor`;
}

/** `$9,931.00 · 63% below floor` */
function floorContext(details: AlertDetails, units: number): string | undefined {
  const { event, price, floorUsd } = details;
  const floor = formatUsd(floorUsd);
  if ((event.kind !== 'sale' && event.kind !== 'listing') || !floor || !floorUsd || !price?.usd || units <= 0) {
    return undefined;
  }
  const relation = floorRelation(price.usd / units, floorUsd);
  return `${floor} · ${units > 1 ? `${relation} per token` : relation}`;
}

const SPANS: ReadonlyArray<[string, number]> = [
  ['day', 86_400_000],
  ['hour', 3_600_000],
  ['minute', 60_000],
];

/** `Last sale: $2,940.00, 3 days earlier` (than this sale). */
function lastSaleField(last: NonNullable<AlertDetails['lastSale']>, ts: string): ReplyField {
  const gap = Date.parse(ts) - Date.parse(last.at);
  let when = Number.isFinite(gap) ? 'moments earlier' : `on ${last.at.slice(0, 10)}`;
  for (const [unit, size] of SPANS) {
    if (!Number.isFinite(gap) || gap < size) continue;
    const n = Math.floor(gap / size);
    when = `${n} ${unit}${n === 1 ? '' : 's'} earlier`;
    break;
  }
  const usd = formatUsd(last.usd);
  return { name: 'Last sale', value: usd ? `${usd}, ${when}` : `${when} (price unknown)`, inline: true };
}

/** `Held for: 3 days`, `Profit: +0.5 DEV (+25%)` / `Loss: -0.2 DEV (-10%)`, when known. */
function saleContextFields(details: AlertDetails): ReplyField[] {
  const fields: ReplyField[] = [];
  if (details.heldForMs !== undefined) {
    fields.push({ name: 'Held for', value: spanText(details.heldForMs), inline: true });
  }
  const { profit, price } = details;
  if (profit && price && !price.more) {
    const percent =
      profit.percent === undefined || !Number.isFinite(profit.percent)
        ? ''
        : ` (${profit.percent >= 0 ? '+' : '-'}${Math.abs(profit.percent).toFixed(Math.abs(profit.percent) < 10 ? 1 : 0)}%)`;
    fields.push({
      name: profit.amount.startsWith('-') ? 'Loss' : 'Profit',
      value: `${profit.amount} ${price.symbol}${percent}`,
      inline: true,
    });
  }
  return fields;
}

/** `3 days`, `1 hour`, `12 minutes`, `under a minute`. */
function spanText(ms: number): string {
  for (const [unit, size] of SPANS) {
    if (ms < size) continue;
    const n = Math.floor(ms / size);
    return `${n.toLocaleString('en-US')} ${unit}${n === 1 ? '' : 's'}`;
  }
  return 'under a minute';
}

/** `new to the collection`, `now holds 4` */
function buyerHoldsText(holds: NonNullable<AlertDetails['buyerHolds']>): string {
  return holds.isNew ? 'new to the collection' : `now holds ${groupThousands(holds.units)}`;
}

/**
 * The message of an event for each chat it reaches, handed to `each` (which builds what the caller
 * keeps per chat): rendered once, shared by every chat that pings no role; chats that ping roles get
 * a copy that carries them (the only difference). Whatever the number of chats, the event is
 * rendered once.
 */
export function alertsFor<T>(
  details: AlertDetails,
  matched: readonly MatchedDestination[],
  each: (destination: Destination, reply: Reply) => T,
): T[] {
  if (matched.length === 0) return [];
  const base = renderAlert(details);
  let withRoles: Map<string, Reply> | undefined;
  return matched.map(({ destination, roles }) => {
    if (roles.length === 0) return each(destination, base);
    const key = roles.join(',');
    withRoles ??= new Map();
    let reply = withRoles.get(key);
    if (!reply) {
      reply = { ...base, mentionRoles: roles };
      withRoles.set(key, reply);
    }
    return each(destination, reply);
  });
}
