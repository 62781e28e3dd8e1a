/**
 * Chain events: what happened, one per transaction and collection and kind, as alerts describe it.
 * See shared/reference/chain-events.md. Watch rules and destinations are in core/types.ts.
 */

import type { ReadBack } from '../core/reply.ts';
import type { AlertKind } from '../core/types.ts';

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
  /** A listing of one request: when it expires (ISO 8601), from RequestCreated's `expiry`; absent when it never does. */
  expiresAt?: string;
  /** A sale: its requests that still offer units after it (RequestAccepted's `quantityRemaining`): their listings stand. */
  partlyFilledOrderIds?: string[];
  /** Its tokens moved as ERC-1155 units (TransferSingle, TransferBatch): a wallet may hold more of each. */
  multiUnit?: true;
  /** Uids of the logs the event was built from. */
  logUids: string[];
  /** Read back from the chain's JSON-RPC (after a restart, or a broken stream), not live from the streams. */
  readBack?: ReadBack;
}

/**
 * Another service that follows collections through the alert streams (holder roles): its
 * collections join the streams' plan, and every mint, burn, transfer and sale of one of them is
 * handed to it with the wallets involved. It never sees a rule; the alert path never sees its work.
 */
export interface CollectionFollower {
  /** The collections (lower-case) it follows on a network. */
  collections(network: string): readonly string[];
  networks(): readonly string[];
  watches(network: string, collection: string): boolean;
  /** Called when its collections change: the streams are planned again. */
  onCollectionsChanged(listener: () => void): void;
  /** Tokens of a followed collection moved (`accounts`: every wallet involved, lower-case). */
  tokensMoved(moved: { network: string; collection: string; accounts: readonly string[] }): void;
}
