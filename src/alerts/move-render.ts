/**
 * The message of a market-move alert: the floor or best offer, old → new, the change, the order
 * that sets the new level and, for a floor, where to buy it (as listing alerts link it).
 */
import { code, type Inline, oneLine, type Reply, type ReplyField, safeUrl } from '../core/reply.ts';
import type { MoveLevel, MoveSubject, WatchRule } from '../core/types.ts';
import { displayAmount, formatUsd } from '../market/format.ts';

/** A level as the message shows it, with its currency's symbol. */
export type ShownLevel = MoveLevel & { symbol: string };

export interface MoveAlert {
  rule: Pick<WatchRule, 'collectionName' | 'network' | 'mentionRole'>;
  subject: MoveSubject;
  from: ShownLevel;
  to: ShownLevel;
  /** What crossed: `fell 12%`, `fell below 100`. */
  why: string;
  /** Where the new floor's listing is bought. */
  buy?: { label: string; url: string };
  /** The page of the token that sets the new level. */
  token?: string;
  sample?: boolean;
}

const NAMES: Record<MoveSubject, string> = { floor: 'Floor', 'offer-top': 'Best offer' };

/** `95 DUSD ($95.00)` */
function shown(level: ShownLevel): string {
  const amount = `${displayAmount(level.amount)} ${oneLine(level.symbol, 12)}`;
  const usd = formatUsd(level.usd);
  return usd ? `${amount} (${usd})` : amount;
}

/** The change from one level to the other (`-12.5%`), in the currency when both share it, else in dollars. */
function changeText(from: MoveLevel, to: MoveLevel): string | undefined {
  const same = from.currency === to.currency;
  const a = same ? Number(from.amount) : from.usd;
  const b = same ? Number(to.amount) : to.usd;
  if (a === undefined || b === undefined || !(a > 0)) return undefined;
  const change = ((b - a) / a) * 100;
  const size = Math.abs(change);
  const text = size < 10 ? Number(size.toFixed(1)).toString() : Math.round(size).toString();
  return `${change < 0 ? '-' : '+'}${text}%${same ? '' : ' in USD'}`;
}

/** The alert of a floor or best offer that moved. `rule.mentionRole` is the only ping it may carry. */
export function renderMove(alert: MoveAlert): Reply {
  const name = NAMES[alert.subject];
  const collection = oneLine(alert.rule.collectionName, 60);
  const change = changeText(alert.from, alert.to);
  const fields: ReplyField[] = [
    { name: 'Was', value: shown(alert.from), inline: true },
    { name: 'Now', value: shown(alert.to), inline: true },
  ];
  if (change) fields.push({ name: 'Change', value: change, inline: true });
  if (alert.to.tokenId !== undefined)
    fields.push({
      name: alert.subject === 'floor' ? 'Cheapest listing' : 'Best offer on',
      value: [code(`#${alert.to.tokenId.slice(0, 40)}`)],
      inline: true,
    });
  const links: Inline[] = [];
  if (alert.buy) links.push({ link: `Buy on ${alert.buy.label}`, href: alert.buy.url });
  if (links.length) fields.push({ name: 'Links', value: links, inline: true });
  const reply: Reply = {
    title: `${alert.sample ? '[Sample] ' : ''}${name} of ${collection} ${alert.why}: ${displayAmount(alert.from.amount)} → ${displayAmount(alert.to.amount)} ${oneLine(alert.to.symbol, 12)}`,
    tone: alert.subject === 'floor' ? 'listing' : 'offer',
    fields,
    footer: `${collection} · ${alert.rule.network} · ${alert.sample ? 'sample' : `${name.toLowerCase()} looked up`}`,
    timestamp: alert.to.at,
  };
  const page = safeUrl(alert.token);
  if (page) reply.url = page;
  if (alert.rule.mentionRole) reply.mentionRoles = [alert.rule.mentionRole];
  return reply;
}
