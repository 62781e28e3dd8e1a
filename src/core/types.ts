/**
 * The vocabulary every layer shares: what a chat wants to hear about (watch rules, alert kinds) and
 * where it goes (destinations, keyed as chats are). It depends on nothing else in the bot.
 */

export const ALERT_KINDS = ['sale', 'listing', 'offer', 'mint', 'transfer', 'burn', 'cancel'] as const;
export type AlertKind = (typeof ALERT_KINDS)[number];

/** Where alerts go: a chat on a chat platform. */
export interface Destination {
  platform: 'console' | 'discord' | 'telegram';
  chatId: string;
}

/** `platform:chatId`, the same key as the chat's settings. */
export function destinationKey(destination: Destination): string {
  return `${destination.platform}:${destination.chatId}`;
}

/** Items by the key of their destination, each chat's in the order given. */
export function byDestination<T extends { destination: Destination }>(items: Iterable<T>): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const key = destinationKey(item.destination);
    const list = out.get(key);
    if (list) list.push(item);
    else out.set(key, [item]);
  }
  return out;
}

export interface TraitCondition {
  /** Trait name as the collection spells it (case-insensitive match). */
  name: string;
  value: string;
}

/** The address that stands for a network's native coin in orders (ETH, POL, DEV, ...). */
export const NATIVE_COIN_ADDRESS = '0x0000000000000000000000000000000000000000';

/**
 * What a market-move rule follows: the collection's floor (its cheapest listing) or its best offer
 * (the highest offer on any of its tokens). Named `offer-top` in commands: "offer" alone is already
 * the kind of one new offer, and "top" says it is the best of them all.
 */
export const MOVE_SUBJECTS = ['floor', 'offer-top'] as const;
export type MoveSubject = (typeof MOVE_SUBJECTS)[number];

/** A level of the floor or best offer as looked up: its order's price per token. */
export interface MoveLevel {
  /** Per token, in the order's currency (decimal string). */
  amount: string;
  /** The order's currency contract, lower-case. */
  currency: string;
  /** US dollars per token, when the platform priced it. */
  usd?: number;
  orderId: string;
  tokenId?: string;
  /** When it was looked up, ISO 8601. */
  at: string;
}

/**
 * A rule on the collection's floor or best offer rather than on events: it alerts when the level
 * moved `changePercent` from its reference, or crossed `below` / `above`, at most once per `everyMs`.
 */
export interface MoveRule {
  subject: MoveSubject;
  /** Alert when the level moved at least this share (1 to 100 %) from the reference, up or down. */
  changePercent?: number;
  /** Alert when the level falls under this line (from at or above it). */
  below?: MinimumPrice;
  /** Alert when the level rises over this line (from at or below it). */
  above?: MinimumPrice;
  /** At most one alert in this time (ms). */
  everyMs: number;
  /** The level when last alerted, or when the rule was added (absent: there was none). */
  reference?: MoveLevel;
  /** When the rule last alerted, ISO 8601. */
  lastAlertAt?: string;
}

export interface MinimumPrice {
  /** Decimal amount, e.g. `1.5`. */
  value: string;
  /** In US dollars (`$500`): compared with an order's USD value. */
  usd: boolean;
  /**
   * Without `usd`: the currency the amount is in (lower-case address, {@link NATIVE_COIN_ADDRESS} for the
   * native coin). An order in this currency compares its amount; an order in another one compares through
   * US dollars when both have a price. Rules stored before units existed are read as the native coin.
   */
  currency?: string;
  /** The currency's symbol as it was resolved when the rule was made (`DUSD`), for showing the rule. */
  symbol?: string;
}

/** A chat's standing request for alerts about one collection. */
export interface WatchRule {
  /** Short, unique, stable (shown to users: `/watch remove r12`). */
  id: string;
  destination: Destination;
  network: string;
  /** Collection contract, lower-case. */
  collection: string;
  collectionName: string;
  kinds: AlertKind[];
  /** Only these token ids (decimal strings). */
  tokenIds?: string[];
  /** Only events where one of these wallets (lower-case) is a party: seller, buyer, from, to, maker. */
  wallets?: string[];
  /** Never events where one of these wallets (lower-case) is a party (a blocklist: bots, wash traders). */
  ignoreWallets?: string[];
  minPrice?: MinimumPrice;
  /**
   * Only sales and listings priced, per token in US dollars, at or below this percentage of the
   * collection's floor (the cheapest other listing): under-floor sales and snipes. 1 to 100.
   */
  floorPercent?: number;
  /** All conditions must hold. */
  traits?: TraitCondition[];
  /** Role (Discord) to ping on a match. */
  mentionRole?: string;
  /**
   * Alert identical relists too (the same token listed again by the same seller at the same price
   * within a day). By default they are left out: they are the noise people complain about.
   */
  showRelists?: boolean;
  /** A floor or best-offer rule (its `kinds` are then empty: it follows levels, not events). */
  move?: MoveRule;
  paused: boolean;
  createdBy: string;
  createdAt: string;
}
