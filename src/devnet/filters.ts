import type { LogRecord, TxnRecord } from './chain.ts';
import { errors } from './errors.ts';
import { topicOf } from './events.ts';
import type { In } from './validate.ts';

/** A SubscribeEvents filter, normalised: lower-case addresses, decimal token ids, topic hashes. */
export interface EventFilterSpec {
  contracts: ReadonlySet<string>;
  accounts: ReadonlySet<string>;
  tokenIds: ReadonlySet<string>;
  topics: ReadonlySet<string>;
  /** Events named without a signature (`Transfer`): every event of that name. */
  names: ReadonlySet<string>;
}

/** A SubscribeReceipts filter, normalised. */
export interface ReceiptFilterSpec {
  txnHash?: string;
  from?: string;
  to?: string;
  contract?: string;
  topic?: string;
}

function eventTopic(text: string, path: string): string {
  const topic = topicOf(text);
  if (!topic) {
    throw errors.invalidArgument(
      `${path}: expected an event signature like "Transfer(address indexed from, address indexed to, uint256 indexed tokenId)" or a topic hash, got ${JSON.stringify(text)}`,
    );
  }
  return topic;
}

/**
 * Reads the `filter` of SubscribeEvents. Like the real platform, a filter that names neither
 * contracts nor accounts (a subscription to everything) is refused.
 */
export function parseEventFilter(filter: In | undefined): EventFilterSpec {
  const contracts = filter?.optAddressList('contractAddresses') ?? [];
  const accounts = filter?.optAddressList('accounts') ?? [];
  if (contracts.length === 0 && accounts.length === 0) {
    throw errors.invalidArgument(
      'filter: name at least one of filter.contractAddresses or filter.accounts; a subscription to every event is refused',
    );
  }
  const tokenIds = filter?.optUintList('tokenIDs') ?? filter?.optUintList('tokenIds') ?? [];
  const topics: string[] = [];
  const names: string[] = [];
  for (const item of filter?.optList('events') ?? []) {
    if (typeof item.value !== 'string') {
      throw errors.invalidArgument(`${item.path}: expected a string, got ${typeof item.value}`);
    }
    const text = item.value.trim();
    if (/^[A-Za-z_$][\w$]*$/.test(text)) names.push(text);
    else topics.push(eventTopic(text, item.path));
  }
  for (const item of filter?.optList('topicHashes') ?? []) {
    if (typeof item.value !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(item.value)) {
      throw errors.invalidArgument(
        `${item.path}: expected a topic hash (0x and 64 hex digits), got ${JSON.stringify(item.value)}`,
      );
    }
    topics.push(item.value.toLowerCase());
  }
  return {
    contracts: new Set(contracts),
    accounts: new Set(accounts),
    tokenIds: new Set(tokenIds),
    topics: new Set(topics),
    names: new Set(names),
  };
}

/**
 * Whether a log passes the filter. Each part that is present must match (they combine with AND):
 * contracts match the emitting contract, or the collection a marketplace request is about; accounts
 * match any address argument or the transaction's sender or recipient; token ids match the token(s)
 * of the log, including the token of a marketplace request; events match on the topic hash (a
 * signature in any spelling, a `topicHashes` entry) or on the bare event name.
 */
export function matchLog(filter: EventFilterSpec, log: LogRecord, txn: TxnRecord): boolean {
  if (
    filter.contracts.size > 0 &&
    !filter.contracts.has(log.contractAddress) &&
    !(log.tokenContract !== undefined && filter.contracts.has(log.tokenContract))
  ) {
    return false;
  }
  if (
    filter.accounts.size > 0 &&
    !filter.accounts.has(txn.from) &&
    !filter.accounts.has(txn.to) &&
    !log.addresses.some((a) => filter.accounts.has(a))
  ) {
    return false;
  }
  if (filter.tokenIds.size > 0 && !log.tokenIds.some((id) => filter.tokenIds.has(id))) return false;
  if (
    (filter.topics.size > 0 || filter.names.size > 0) &&
    !filter.topics.has(log.def.topicHash) &&
    !filter.names.has(log.def.name)
  ) {
    return false;
  }
  return true;
}

/** Reads the `filter` of SubscribeReceipts; every part is optional. */
export function parseReceiptFilter(filter: In | undefined): ReceiptFilterSpec {
  const out: ReceiptFilterSpec = {};
  if (!filter) return out;
  const txnHash = filter.optHash('txnHash');
  if (txnHash) out.txnHash = txnHash;
  const from = filter.optAddress('from');
  if (from) out.from = from;
  const to = filter.optAddress('to');
  if (to) out.to = to;
  const contract = filter.optAddress('contractAddress');
  if (contract) out.contract = contract;
  const event = filter.optString('event');
  if (event) out.topic = eventTopic(event, filter.at('event'));
  return out;
}

export function matchReceipt(filter: ReceiptFilterSpec, txn: TxnRecord): boolean {
  if (filter.txnHash !== undefined && filter.txnHash !== txn.hash) return false;
  if (filter.from !== undefined && filter.from !== txn.from) return false;
  if (filter.to !== undefined && filter.to !== txn.to) return false;
  const contract = filter.contract;
  if (
    contract !== undefined &&
    txn.to !== contract &&
    !txn.logs.some((log) => log.contractAddress === contract || log.tokenContract === contract)
  ) {
    return false;
  }
  const topic = filter.topic;
  if (topic !== undefined && !txn.logs.some((log) => log.def.topicHash === topic)) return false;
  return true;
}
