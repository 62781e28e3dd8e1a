// Realistic EventLog fixtures for the alert pipeline: decoded logs as the indexer stream sends them.
import { CANONICAL_SIGNATURES, type EventName, TOPICS, ZERO_ADDRESS } from '../../../src/alerts/classify.ts';
import type { ChainEvent } from '../../../src/alerts/types.ts';
import type { AlertKind, WatchRule } from '../../../src/core/types.ts';
import type { EventLog } from '../../../src/platform/types.ts';

export const ZERO = ZERO_ADDRESS;

/** A deterministic address: `addr(1)` = 0x00…01. */
export function addr(n: number, prefix = ''): string {
  return `0x${prefix}${n.toString(16).padStart(40 - prefix.length, '0')}`;
}

export function hash(n: number): string {
  return `0x${n.toString(16).padStart(64, '0')}`;
}

export const COLLECTION = addr(0xc0, 'c0');
export const OTHER_COLLECTION = addr(0xc1, 'c0');
export const ERC1155 = addr(0x1155, 'c0');
export const MARKET = addr(0x3a, 'aa');
export const CURRENCY = addr(0x20, 'e2');
export const ALICE = addr(0xa1, 'a1');
export const BOB = addr(0xb0, 'b0');
export const CAROL = addr(0xca, 'ca');
export const OPERATOR = addr(0x0f, 'f0');

const ARG_NAMES: Record<EventName, string[]> = {
  Transfer: ['from', 'to', 'tokenId'],
  TransferSingle: ['operator', 'from', 'to', 'id', 'value'],
  TransferBatch: ['operator', 'from', 'to', 'ids', 'values'],
  RequestCreated: [
    'requestId',
    'creator',
    'tokenContract',
    'tokenId',
    'isListing',
    'quantity',
    'currency',
    'pricePerToken',
    'expiry',
  ],
  RequestAccepted: ['requestId', 'buyer', 'tokenContract', 'receiver', 'quantity', 'quantityRemaining'],
  RequestCancelled: ['requestId', 'tokenContract'],
};

function eventSig(event: EventName, names: readonly string[]): string {
  const types = CANONICAL_SIGNATURES[event].slice(event.length + 1, -1).split(',');
  return `${event}(${types.map((t, i) => `${t} ${names[i] ?? ''}`.trim()).join(', ')})`;
}

export interface LogOptions {
  /** Argument names as sent; `null` sends none (positional). Default: the canonical names. */
  names?: string[] | null;
  contractType?: string;
  topicHash?: string;
}

/** Builds the logs of one transaction, in log order. */
export class Tx {
  readonly logs: EventLog[] = [];
  readonly hash: string;
  constructor(
    n: number,
    readonly blockNumber = 1000 + n,
    readonly blockHash = hash(0xb10c0000 + n),
    readonly sender: string = BOB,
  ) {
    this.hash = hash(n);
  }

  raw(event: EventName, contract: string, values: string[], options: LogOptions = {}): this {
    const names = options.names === null ? [] : (options.names ?? ARG_NAMES[event]);
    const index = this.logs.length;
    const log: EventLog = {
      uid: `${this.blockHash}-${this.hash}-${index}`,
      blockNumber: this.blockNumber,
      blockHash: this.blockHash,
      contractAddress: contract,
      txnHash: this.hash,
      txnIndex: 3,
      txnLogIndex: index,
      ts: '2026-11-21T15:00:00Z',
      txnInfo: { from: this.sender, to: MARKET, value: '0' },
      event: {
        topicHash: options.topicHash ?? TOPICS[event],
        eventSig: eventSig(event, names),
        types: CANONICAL_SIGNATURES[event].slice(event.length + 1, -1).split(','),
        names,
        values,
      },
    };
    if (options.contractType !== undefined) log.contractType = options.contractType;
    this.logs.push(log);
    return this;
  }

  transfer(contract: string, from: string, to: string, tokenId: string, options?: LogOptions): this {
    return this.raw('Transfer', contract, [from, to, tokenId], { contractType: 'ERC721', ...options });
  }

  erc20(contract: string, from: string, to: string, amount: string, options?: LogOptions): this {
    return this.raw('Transfer', contract, [from, to, amount], { names: ['from', 'to', 'value'], ...options });
  }

  single(contract: string, from: string, to: string, id: string, value: string, options?: LogOptions): this {
    return this.raw('TransferSingle', contract, [OPERATOR, from, to, id, value], options);
  }

  batch(contract: string, from: string, to: string, ids: string, values: string, options?: LogOptions): this {
    return this.raw('TransferBatch', contract, [OPERATOR, from, to, ids, values], options);
  }

  created(
    r: {
      requestId: string;
      creator: string;
      collection: string;
      tokenId: string;
      isListing: string;
      quantity?: string;
      currency?: string;
      price: string;
    },
    options?: LogOptions & { market?: string },
  ): this {
    return this.raw(
      'RequestCreated',
      options?.market ?? MARKET,
      [
        r.requestId,
        r.creator,
        r.collection,
        r.tokenId,
        r.isListing,
        r.quantity ?? '1',
        r.currency ?? CURRENCY,
        r.price,
        '1900000000',
      ],
      options,
    );
  }

  accepted(
    r: {
      requestId: string;
      buyer: string;
      collection: string;
      receiver?: string;
      quantity?: string;
      remaining?: string;
    },
    options?: LogOptions & { market?: string },
  ): this {
    return this.raw(
      'RequestAccepted',
      options?.market ?? MARKET,
      [r.requestId, r.buyer, r.collection, r.receiver ?? r.buyer, r.quantity ?? '1', r.remaining ?? '0'],
      options,
    );
  }

  cancelled(requestId: string, collection: string, options?: LogOptions & { market?: string }): this {
    return this.raw('RequestCancelled', options?.market ?? MARKET, [requestId, collection], options);
  }
}

let ruleCounter = 0;

/** A watch rule with sensible defaults. */
export function rule(overrides: Partial<WatchRule> & { kinds?: AlertKind[] } = {}): WatchRule {
  ruleCounter++;
  return {
    id: `r${ruleCounter}`,
    destination: { platform: 'discord', chatId: 'chat-1' },
    network: 'polygon',
    collection: COLLECTION,
    collectionName: 'Moon Cats',
    kinds: ['sale'],
    paused: false,
    createdBy: 'discord:42',
    createdAt: '2026-11-21T00:00:00Z',
    ...overrides,
  };
}

/** A chain event with sensible defaults (a sale of token 1 from ALICE to BOB on polygon). */
export function chainEvent(overrides: Partial<ChainEvent> & { kind?: AlertKind } = {}): ChainEvent {
  const kind = overrides.kind ?? 'sale';
  return {
    id: `polygon:0xabc:${COLLECTION}:${kind}`,
    kind,
    network: 'polygon',
    collection: COLLECTION,
    txnHash: '0xabc',
    blockNumber: 1,
    blockHash: '0xb1',
    ts: '2026-11-21T15:00:00Z',
    tokens: [{ tokenId: '1', amount: '1' }],
    from: ALICE,
    to: BOB,
    accounts: [ALICE, BOB],
    orderIds: ['9'],
    logUids: ['u1'],
    ...overrides,
  };
}
