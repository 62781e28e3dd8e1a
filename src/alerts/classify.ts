/**
 * The classifier: turns the decoded logs of one transaction into alert events (mint, burn, transfer,
 * listing, offer, sale, cancel), one per (transaction, collection, kind). Pure and synchronous.
 * See shared/reference/chain-events.md.
 */

import type { AlertKind } from '../core/types.ts';
import type { EventLog } from '../platform/types.ts';
import type { ChainEvent, EventToken } from './types.ts';

/** keccak256 of the canonical signatures (asserted against viem in the tests). */
export const TOPICS = {
  Transfer: '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef',
  TransferSingle: '0xc3d58168c5ae7397731d063d5bbf3d657854427343f4c083240f7aacaa2d0f62',
  TransferBatch: '0x4a39dc06d4c0dbc64b70af90fd698a233a518aa5d07e595d983b8c0526c8f7fb',
  RequestCreated: '0xb67ee55b059861d68b3b5640ee51bde6a5d9d849c6ecdb610663cbd4290bdfd5',
  RequestAccepted: '0x146c7c3a67244cf406ca437a82b2bf587bc02b628b63659c73b4295b8b00e76f',
  RequestCancelled: '0xe0d7665e06e7db1fc500d66d4e3898d1d4a5533d7efe54b352fcdaa177c22783',
} as const;

export type EventName = keyof typeof TOPICS;

/** Canonical signatures (types only) that the topic hashes are computed from. */
export const CANONICAL_SIGNATURES: Readonly<Record<EventName, string>> = {
  Transfer: 'Transfer(address,address,uint256)',
  TransferSingle: 'TransferSingle(address,address,address,uint256,uint256)',
  TransferBatch: 'TransferBatch(address,address,address,uint256[],uint256[])',
  RequestCreated: 'RequestCreated(uint256,address,address,uint256,bool,uint256,address,uint256,uint256)',
  RequestAccepted: 'RequestAccepted(uint256,address,address,address,uint256,uint256)',
  RequestCancelled: 'RequestCancelled(uint256,address)',
};

export const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000';

/** The latest date a JavaScript Date holds: an expiry beyond it (uint256 max) means never. */
const MAX_DATE_MS = 8.64e15;

/** What the classifier needs to know beyond the logs. */
export interface ClassifyContext {
  /** Network name, part of every event id. */
  network: string;
  /** Whether a contract (lower-case) is a watched collection: token Transfer logs of other contracts are ignored. */
  isCollection: (address: string) => boolean;
  /** When given, marketplace request events are taken only from contracts for which it returns true. */
  isMarketplace?: (address: string) => boolean;
}

/** A log that could not be read (no decoded event, wrong number of values, a value of the wrong shape). */
export interface SkippedLog {
  uid: string;
  /** Human-readable, for the log: `TransferBatch: 2 ids but 1 values`. */
  reason: string;
}

/**
 * `events` in the order of their first log; `skipped` lists malformed logs only, in log order. Logs that are well
 * formed but irrelevant (unknown topic, ERC-20 transfers, transfers of unwatched contracts, request
 * events of a contract that is not a marketplace) are ignored silently.
 */
export interface ClassifyResult {
  events: ChainEvent[];
  skipped: SkippedLog[];
}

// ---------------------------------------------------------------------------------------------
// Argument layout: accepted names (normalised: leading underscores stripped, lower-case) by position.

interface EventSpec {
  name: EventName;
  // Canonical argument names, in signature order.
  names: readonly string[];
  // Accepted normalised names per position.
  aliases: ReadonlyArray<readonly string[]>;
}

function spec(name: EventName, args: ReadonlyArray<readonly [string, ...string[]]>): EventSpec {
  return { name, names: args.map((a) => a[0]), aliases: args.map((a) => a.map((n) => n.toLowerCase())) };
}

const SPECS: ReadonlyMap<string, EventSpec> = new Map([
  [TOPICS.Transfer, spec('Transfer', [['from'], ['to'], ['tokenId', 'id']])],
  [
    TOPICS.TransferSingle,
    spec('TransferSingle', [['operator'], ['from'], ['to'], ['id', 'tokenId'], ['value', 'amount', 'quantity']]),
  ],
  [
    TOPICS.TransferBatch,
    spec('TransferBatch', [['operator'], ['from'], ['to'], ['ids', 'tokenIds'], ['values', 'amounts', 'quantities']]),
  ],
  [
    TOPICS.RequestCreated,
    spec('RequestCreated', [
      ['requestId', 'orderId'],
      ['creator', 'maker'],
      ['tokenContract', 'collection'],
      ['tokenId', 'id'],
      ['isListing'],
      ['quantity', 'amount'],
      ['currency'],
      ['pricePerToken', 'price'],
      ['expiry', 'expiration'],
    ]),
  ],
  [
    TOPICS.RequestAccepted,
    spec('RequestAccepted', [
      ['requestId', 'orderId'],
      ['buyer'],
      ['tokenContract', 'collection'],
      ['receiver', 'recipient'],
      ['quantity', 'amount'],
      ['quantityRemaining'],
    ]),
  ],
  [
    TOPICS.RequestCancelled,
    spec('RequestCancelled', [
      ['requestId', 'orderId'],
      ['tokenContract', 'collection'],
    ]),
  ],
]);

function normaliseName(name: string): string {
  if (typeof name !== 'string') return '';
  let start = 0;
  while (name.charCodeAt(start) === 95 /* _ */) start++;
  return (start === 0 ? name : name.slice(start)).toLowerCase();
}

// Values reordered into canonical positions: by name where names are given, else by position.
function canonicalValues(def: EventSpec, names: readonly string[] | undefined, values: readonly string[]): string[] {
  const arity = def.names.length;
  if (!names || names.length !== values.length) return values as string[];
  let identity = true;
  for (let i = 0; i < arity; i++) {
    if (names[i] !== def.names[i]) {
      identity = false;
      break;
    }
  }
  if (identity) return values as string[];
  const normalised = names.map(normaliseName);
  const out = new Array<string>(arity);
  for (let p = 0; p < arity; p++) {
    const aliases = def.aliases[p] as readonly string[];
    let at = -1;
    for (let i = 0; i < normalised.length; i++) {
      if (aliases.includes(normalised[i] as string)) {
        at = i;
        break;
      }
    }
    out[p] = values[at < 0 ? p : at] as string;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Value parsers: undefined when the text has the wrong shape.

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const DECIMAL = /^[0-9]+$/;
const HEX = /^0x[0-9a-fA-F]+$/;

// The parsers take `unknown`: the wire promises strings, a broken server may send anything else.

function parseAddress(text: unknown): string | undefined {
  if (typeof text !== 'string') return undefined;
  const t = text.trim();
  return ADDRESS.test(t) ? t.toLowerCase() : undefined;
}

// Canonical decimal string of an unsigned integer given in decimal or `0x` hex.
function parseUint(text: unknown): string | undefined {
  if (typeof text === 'number') return Number.isSafeInteger(text) && text >= 0 ? String(text) : undefined;
  if (typeof text !== 'string') return undefined;
  const t = text.trim();
  if (DECIMAL.test(t)) return t.length > 1 && t.charCodeAt(0) === 48 ? BigInt(t).toString() : t;
  if (HEX.test(t)) return BigInt(t).toString();
  return undefined;
}

function parseBool(text: unknown): boolean | undefined {
  if (typeof text === 'boolean') return text;
  if (typeof text !== 'string') return undefined;
  const t = text.trim().toLowerCase();
  if (t === 'true' || t === '1') return true;
  if (t === 'false' || t === '0') return false;
  return undefined;
}

// A list of unsigned integers: `["1","2"]`, `[1, 2]` or `1,2`.
function parseUintList(text: unknown): string[] | undefined {
  if (Array.isArray(text)) {
    const out: string[] = [];
    for (const item of text) {
      const value = parseUint(item);
      if (value === undefined) return undefined;
      out.push(value);
    }
    return out;
  }
  if (typeof text !== 'string') return undefined;
  let t = text.trim();
  if (t.startsWith('[')) {
    if (!t.endsWith(']')) return undefined;
    t = t.slice(1, -1).trim();
  }
  if (t === '') return [];
  const out: string[] = [];
  for (const part of t.split(',')) {
    let item = part.trim();
    if (item.length >= 2 && item.startsWith('"') && item.endsWith('"')) item = item.slice(1, -1);
    const value = parseUint(item);
    if (value === undefined) return undefined;
    out.push(value);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Parsed logs

interface TokenMove {
  at: number;
  uid: string;
  collection: string;
  from: string;
  to: string;
  tokens: EventToken[];
  /** TransferSingle or TransferBatch: units of a token, of which a wallet may hold several. */
  multiUnit: boolean;
}

interface RequestLog {
  at: number;
  uid: string;
  requestId: string;
  collection: string;
}

interface CreatedLog extends RequestLog {
  creator: string;
  token: EventToken;
  isListing: boolean;
  currency: string;
  pricePerToken: string;
  /** Seconds since the epoch; absent when unreadable or beyond any date (never expires). */
  expiry?: number;
}

interface AcceptedLog extends RequestLog {
  buyer: string;
  receiver: string;
  /** Units the request still offers after this fill: more than 0 when it was filled in part. */
  quantityRemaining: string;
}

function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  return typeof value === 'object' && value !== null ? 'an object' : String(value);
}

// Collects the parsing problems of one log.
class Reader {
  problem: string | undefined;
  constructor(
    private readonly event: EventName,
    private readonly def: EventSpec,
    private readonly values: readonly string[],
  ) {}
  private fail(p: number, what: string): undefined {
    this.problem ??= `${this.event}: ${this.def.names[p]} is not ${what}: ${show(this.values[p])}`;
    return undefined;
  }
  address(p: number): string {
    return parseAddress(this.values[p] ?? '') ?? this.fail(p, 'an address') ?? '';
  }
  uint(p: number): string {
    return parseUint(this.values[p] ?? '') ?? this.fail(p, 'an unsigned integer') ?? '';
  }
  bool(p: number): boolean {
    return parseBool(this.values[p] ?? '') ?? this.fail(p, 'a boolean') ?? false;
  }
  uintList(p: number): string[] {
    return parseUintList(this.values[p] ?? '') ?? this.fail(p, 'a list of unsigned integers') ?? [];
  }
}

const NON_NFT_TYPES = new Set(['ERC20', 'ERC6909', 'MISC']);

// ERC-721, ERC-1155 or unknown: a Transfer of such a contract may be an NFT transfer.
function mayBeNft(contractType: string | undefined): boolean {
  if (typeof contractType !== 'string' || contractType === '') return true;
  return !NON_NFT_TYPES.has(contractType.toUpperCase().replace(/[-_\s]/g, ''));
}

function lower(text: string): string {
  return text.toLowerCase();
}

// ---------------------------------------------------------------------------------------------
// Grouping into events

interface Group {
  kind: AlertKind;
  collection: string;
  first: number;
  positions: number[];
  tokens: EventToken[];
  froms: string[];
  tos: string[];
  accounts: string[];
  orderIds: string[];
  price?: { perToken: string; currency: string } | null;
  /** Expiries (seconds) of its requests, one per request. */
  expiries?: Array<number | undefined>;
  /** A sale's requests filled in part. */
  partlyFilled?: string[];
  multiUnit?: boolean;
}

function groupOf(groups: Group[], collection: string, kind: AlertKind, at: number): Group {
  for (const g of groups) {
    if (g.collection === collection && g.kind === kind) {
      if (at < g.first) g.first = at;
      return g;
    }
  }
  const g: Group = {
    kind,
    collection,
    first: at,
    positions: [],
    tokens: [],
    froms: [],
    tos: [],
    accounts: [],
    orderIds: [],
  };
  groups.push(g);
  return g;
}

function pushUnique(list: string[], value: string): void {
  if (value !== ZERO_ADDRESS && value !== '' && !list.includes(value)) list.push(value);
}

function only(list: readonly string[]): string | undefined {
  return list.length === 1 ? list[0] : undefined;
}

/**
 * Classifies ALL the logs of ONE transaction. Logs of another transaction than the first log's are
 * skipped. Never throws.
 *
 * - Transfer / TransferSingle / TransferBatch of a watched collection (or of the collection of a sale in
 *   the same transaction) -> mint (from zero), burn (to zero) or transfer; a `Transfer` whose
 *   `contractType` says ERC-20 (or another non-NFT type) is ignored.
 * - RequestCreated -> listing (`isListing`) or offer; `price` is set when all requests of the event agree
 *   on price and currency (else the pipeline prices them from `orderIds`); `from` = creator.
 * - RequestAccepted -> sale of `tokenContract`. Its tokens are those of the NFT transfers of that
 *   collection in the transaction (which are consumed: not emitted as transfer, mint or burn); `from`
 *   and `to` are the transfers' sender and receiver when they are unique, else absent (a sweep from
 *   several sellers); without transfers `to` falls back to the receiver, then the buyer.
 * - RequestCancelled -> cancel of `tokenContract`, `from` = the transaction's sender when known.
 *
 * Request events are emitted whatever the collection (rules decide); `from`/`to` never hold the zero
 * address; `accounts` lists every party (not the ERC-1155 operator).
 */
export function classifyTransaction(logs: readonly EventLog[], context: ClassifyContext): ClassifyResult {
  const skipped: Array<SkippedLog & { at: number }> = [];
  const ordered = inLogOrder(logs);
  const first = ordered.find(isLog);
  if (!first) {
    return { events: [], skipped: ordered.map((log) => ({ uid: uidOf(log), reason: 'not a log record' })) };
  }
  const txnHash = lower(first.txnHash);

  const moves: Array<{ log: EventLog; at: number; def: EventSpec; values: string[] }> = [];
  const created: CreatedLog[] = [];
  const accepted: AcceptedLog[] = [];
  const cancelled: RequestLog[] = [];
  const saleCollections = new Set<string>();

  for (let at = 0; at < ordered.length; at++) {
    const log = ordered[at] as EventLog;
    if (log !== first && !isLog(log)) {
      skipped.push({ at, uid: uidOf(log), reason: 'not a log record' });
      continue;
    }
    if (log !== first && log.txnHash !== first.txnHash && lower(log.txnHash) !== txnHash) {
      skipped.push({ at, uid: log.uid, reason: `belongs to transaction ${log.txnHash}, not ${first.txnHash}` });
      continue;
    }
    const event = log.event;
    if (!event || typeof event.topicHash !== 'string' || !Array.isArray(event.values)) {
      skipped.push({ at, uid: log.uid, reason: 'no decoded event' });
      continue;
    }
    const def = SPECS.get(event.topicHash) ?? SPECS.get(lower(event.topicHash));
    if (!def) continue;
    if (event.values.length !== def.names.length) {
      skipped.push({
        at,
        uid: log.uid,
        reason: `${def.name}: expected ${def.names.length} values, got ${event.values.length}`,
      });
      continue;
    }
    const values = canonicalValues(def, Array.isArray(event.names) ? event.names : undefined, event.values);
    if (def.name === 'Transfer' || def.name === 'TransferSingle' || def.name === 'TransferBatch') {
      if (def.name !== 'Transfer' || mayBeNft(log.contractType)) moves.push({ log, at, def, values });
      continue;
    }
    if (context.isMarketplace && !context.isMarketplace(lower(log.contractAddress))) continue;
    const r = new Reader(def.name, def, values);
    const requestId = r.uint(0);
    if (def.name === 'RequestCreated') {
      const item: CreatedLog = {
        at,
        uid: log.uid,
        requestId,
        creator: r.address(1),
        collection: r.address(2),
        token: { tokenId: r.uint(3), amount: r.uint(5) },
        isListing: r.bool(4),
        currency: r.address(6),
        pricePerToken: r.uint(7),
      };
      // Optional to the alert: a listing whose expiry does not read is still a listing.
      const expiry = Number(parseUint(values[8]) ?? Number.NaN);
      if (expiry > 0 && expiry * 1000 <= MAX_DATE_MS) item.expiry = expiry;
      if (r.problem) skipped.push({ at, uid: log.uid, reason: r.problem });
      else created.push(item);
    } else if (def.name === 'RequestAccepted') {
      const item: AcceptedLog = {
        at,
        uid: log.uid,
        requestId,
        buyer: r.address(1),
        collection: r.address(2),
        receiver: r.address(3),
        quantityRemaining: '0',
      };
      r.uint(4);
      item.quantityRemaining = r.uint(5);
      if (r.problem) skipped.push({ at, uid: log.uid, reason: r.problem });
      else {
        accepted.push(item);
        saleCollections.add(item.collection);
      }
    } else {
      const item: RequestLog = { at, uid: log.uid, requestId, collection: r.address(1) };
      if (r.problem) skipped.push({ at, uid: log.uid, reason: r.problem });
      else cancelled.push(item);
    }
  }

  // Token moves: only NFT contracts that are watched or sold in this transaction.
  const transfers: TokenMove[] = [];
  for (const { log, at, def, values } of moves) {
    const collection = lower(log.contractAddress);
    if (!saleCollections.has(collection) && !context.isCollection(collection)) continue;
    const move = readMove(def, values, log, at, collection);
    if (typeof move === 'string') skipped.push({ at, uid: log.uid, reason: move });
    else transfers.push(move);
  }

  const groups: Group[] = [];

  for (const a of accepted) {
    const g = groupOf(groups, a.collection, 'sale', a.at);
    g.positions.push(a.at);
    if (!g.orderIds.includes(a.requestId)) g.orderIds.push(a.requestId);
    if (a.quantityRemaining !== '0') {
      g.partlyFilled ??= [];
      pushUnique(g.partlyFilled, a.requestId);
    }
    pushUnique(g.accounts, a.buyer);
    pushUnique(g.accounts, a.receiver);
  }
  for (const m of transfers) {
    const sale = saleCollections.has(m.collection);
    const kind: AlertKind = sale
      ? 'sale'
      : m.from === ZERO_ADDRESS
        ? 'mint'
        : m.to === ZERO_ADDRESS
          ? 'burn'
          : 'transfer';
    const g = groupOf(groups, m.collection, kind, m.at);
    g.positions.push(m.at);
    for (const t of m.tokens) g.tokens.push(t);
    if (m.multiUnit) g.multiUnit = true;
    pushUnique(g.froms, m.from);
    pushUnique(g.tos, m.to);
    pushUnique(g.accounts, m.from);
    pushUnique(g.accounts, m.to);
  }
  for (const c of created) {
    const g = groupOf(groups, c.collection, c.isListing ? 'listing' : 'offer', c.at);
    g.positions.push(c.at);
    g.tokens.push(c.token);
    if (!g.orderIds.includes(c.requestId)) g.orderIds.push(c.requestId);
    pushUnique(g.froms, c.creator);
    pushUnique(g.accounts, c.creator);
    if (g.expiries) g.expiries.push(c.expiry);
    else g.expiries = [c.expiry];
    if (g.price === undefined) g.price = { perToken: c.pricePerToken, currency: c.currency };
    else if (g.price && (g.price.perToken !== c.pricePerToken || g.price.currency !== c.currency)) g.price = null;
  }
  const sender = first.txnInfo?.from ? parseAddress(first.txnInfo.from) : undefined;
  for (const c of cancelled) {
    const g = groupOf(groups, c.collection, 'cancel', c.at);
    g.positions.push(c.at);
    if (!g.orderIds.includes(c.requestId)) g.orderIds.push(c.requestId);
    if (sender) {
      pushUnique(g.froms, sender);
      pushUnique(g.accounts, sender);
    }
  }

  const sorted = groups.length > 1 ? groups.sort((x, y) => x.first - y.first) : groups;
  const events: ChainEvent[] = [];
  for (const g of sorted) {
    if (g.kind === 'sale' && g.tos.length === 0) {
      // No NFT transfer seen: the receiver of the request (listings), else the buyer.
      for (const a of accepted) {
        if (a.collection === g.collection) pushUnique(g.tos, a.receiver !== ZERO_ADDRESS ? a.receiver : a.buyer);
      }
    }
    if (g.positions.length > 1) g.positions.sort((x, y) => x - y);
    const event: ChainEvent = {
      id: `${context.network}:${txnHash}:${g.collection}:${g.kind}`,
      kind: g.kind,
      network: context.network,
      collection: g.collection,
      txnHash,
      blockNumber: first.blockNumber,
      blockHash: first.blockHash,
      ts: first.ts,
      tokens: g.tokens,
      accounts: g.accounts,
      orderIds: g.orderIds,
      logUids: g.positions.map((p) => (ordered[p] as EventLog).uid),
    };
    const from = only(g.froms);
    const to = only(g.tos);
    if (from) event.from = from;
    if (to) event.to = to;
    if (g.price) event.price = g.price;
    if (g.kind === 'sale' && g.partlyFilled) {
      // A request filled in part and then in full in one transaction is filled.
      const filled = accepted.filter((a) => a.collection === g.collection && a.quantityRemaining === '0');
      const open = g.partlyFilled.filter((id) => !filled.some((a) => a.requestId === id));
      if (open.length > 0) event.partlyFilledOrderIds = open;
    }
    if (g.multiUnit) event.multiUnit = true;
    const expiry = g.expiries?.length === 1 ? g.expiries[0] : undefined;
    if (expiry !== undefined) event.expiresAt = new Date(expiry * 1000).toISOString();
    events.push(event);
  }
  if (skipped.length > 1) skipped.sort((x, y) => x.at - y.at);
  return { events, skipped: skipped.map(({ uid, reason }) => ({ uid, reason })) };
}

// The fields the classifier relies on, present and of the right type.
function isLog(log: EventLog): boolean {
  return (
    typeof log === 'object' &&
    log !== null &&
    typeof log.uid === 'string' &&
    typeof log.txnHash === 'string' &&
    typeof log.contractAddress === 'string'
  );
}

function uidOf(log: EventLog): string {
  return typeof log === 'object' && log !== null && typeof log.uid === 'string' ? log.uid : '';
}

function logIndex(log: EventLog | undefined): number {
  return typeof log === 'object' && log !== null && typeof log.txnLogIndex === 'number' ? log.txnLogIndex : 0;
}

function inLogOrder(logs: readonly EventLog[]): readonly EventLog[] {
  for (let i = 1; i < logs.length; i++) {
    if (logIndex(logs[i]) < logIndex(logs[i - 1])) {
      return [...logs].sort((a, b) => logIndex(a) - logIndex(b));
    }
  }
  return logs;
}

function readMove(def: EventSpec, values: string[], log: EventLog, at: number, collection: string): TokenMove | string {
  const r = new Reader(def.name, def, values);
  let from: string;
  let to: string;
  let tokens: EventToken[];
  if (def.name === 'Transfer') {
    from = r.address(0);
    to = r.address(1);
    tokens = [{ tokenId: r.uint(2), amount: '1' }];
  } else if (def.name === 'TransferSingle') {
    from = r.address(1);
    to = r.address(2);
    tokens = [{ tokenId: r.uint(3), amount: r.uint(4) }];
  } else {
    from = r.address(1);
    to = r.address(2);
    const ids = r.uintList(3);
    const amounts = r.uintList(4);
    if (r.problem) return r.problem;
    if (ids.length !== amounts.length) return `TransferBatch: ${ids.length} ids but ${amounts.length} values`;
    if (ids.length === 0) return 'TransferBatch: no ids';
    tokens = ids.map((tokenId, i) => ({ tokenId, amount: amounts[i] as string }));
  }
  if (r.problem) return r.problem;
  return { at, uid: log.uid, collection, from, to, tokens, multiUnit: def.name !== 'Transfer' };
}

// ---------------------------------------------------------------------------------------------
// Assembling transactions from a stream of logs
