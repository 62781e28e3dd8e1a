/**
 * The alert pipeline's model: watch rules (what a chat wants to hear about) and chain events (what
 * happened, one per transaction and collection and kind). See shared/reference/chain-events.md.
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

export interface TraitCondition {
  /** Trait name as the collection spells it (case-insensitive match). */
  name: string;
  value: string;
}

export interface MinimumPrice {
  /** Decimal amount, e.g. `1.5`. */
  value: string;
  /** In US dollars rather than in the order's currency. */
  usd: boolean;
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
  paused: boolean;
  createdBy: string;
  createdAt: string;
}

/** One token moved or traded in an event. */
export interface EventToken {
  tokenId: string;
  /** Units (1 for ERC-721). */
  amount: string;
}

/**
 * What happened on chain, as alerts describe it. A sweep (several tokens bought in one
 * transaction) or a batch transfer is ONE event listing all its tokens.
 */
export interface ChainEvent {
  /** Unique and stable: `${network}:${txnHash}:${collection}:${kind}`. */
  id: string;
  kind: AlertKind;
  network: string;
  /** Token contract, lower-case. */
  collection: string;
  txnHash: string;
  blockNumber: number;
  blockHash: string;
  /** Block time, ISO 8601. */
  ts: string;
  tokens: EventToken[];
  /** Seller / sender / maker, lower-case, when known. */
  from?: string;
  /** Buyer / receiver, lower-case, when known. */
  to?: string;
  /** Every wallet involved, lower-case (for wallet filters). */
  accounts: string[];
  /** Marketplace request ids (listings, offers, sales, cancels). */
  orderIds: string[];
  /**
   * Price as the chain states it (listings and offers: price per token and currency from
   * RequestCreated). Sales get theirs from the orders during enrichment.
   */
  price?: { perToken: string; currency: string };
  /** Uids of the logs the event was built from. */
  logUids: string[];
}
