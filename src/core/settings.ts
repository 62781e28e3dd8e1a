/** What chats set with commands: defaults, aliases, digests; and the long button actions stored for them. */
import type { Dict } from '../records.ts';

/** A collection pinned to a network. */
export interface CollectionKey {
  network: string;
  address: string;
  /** Display name, remembered when it was set. */
  name?: string;
}

/** Market figures of a collection at the last digest, to show the change since. */
export interface MarketSnapshot {
  floorUsd?: number;
  bestOfferUsd?: number;
  listings?: number;
}

/** A chat's daily digest (`/digest set`). */
export interface DigestSettings {
  hour: number;
  minute: number;
  /** IANA name, validated when set. */
  timeZone: string;
  collections: CollectionKey[];
  /** Days the analytics cover. */
  days: number;
  /** When the schedule was set: a digest due before that is not "missed". */
  setAt: string;
  /** Due time of the last digest posted (never posted twice for the same due time). */
  lastPostedFor?: string;
  lastMarket?: Dict<MarketSnapshot>;
}

/** What a chat has set with commands. */
export interface ChatSettings {
  /** Default network for commands in this chat. */
  network?: string;
  /** Default collection for commands that take one. */
  collection?: CollectionKey;
  /** Short names for collections (`/alias`), keyed by the lower-cased alias. */
  aliases: Dict<CollectionKey & { alias: string }>;
  digest?: DigestSettings;
  /** Discord announcement channels: publish each alert and digest to the servers that follow it. */
  crosspost?: boolean;
}

export interface StoredButton {
  action: string;
  createdAt: string;
}
