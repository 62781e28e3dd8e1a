/**
 * Turns what a server sent into the records of types.ts: reads both spellings of renamed keys,
 * drops `null` where it only means "absent", fills empty lists that Go servers send as `null`,
 * and throws {@link ShapeError} when a required part has the wrong type. Unknown keys pass through.
 */

import { isCanonicalAddress } from './records/fields.ts';
import {
  type Audience,
  type AudienceContact,
  type ChartPoint,
  type CollectibleOrder,
  type Collection,
  type Contract,
  type ContractInfo,
  type ContractSource,
  type EventLog,
  type GasSponsor,
  MARKETPLACE_KINDS,
  type Order,
  type Page,
  type PropertyFilter,
  type Step,
  type TokenBalance,
  type TokenMetadata,
  type TransactionReceipt,
} from './types.ts';

export class ShapeError extends Error {
  override name = 'ShapeError';
}

type Json = Record<string, unknown>;

export function object(value: unknown, what: string): Json {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ShapeError(`${what} is ${describe(value)}, expected an object`);
  }
  return value as Json;
}

/** A list; `null` or absent (Go's nil slice) reads as empty. */
export function list<T>(value: unknown, what: string, item: (v: unknown, what: string) => T): T[] {
  if (value === null || value === undefined) return [];
  if (!Array.isArray(value)) throw new ShapeError(`${what} is ${describe(value)}, expected a list`);
  return value.map((v, i) => item(v, `${what}[${i}]`));
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  return `a ${typeof value}`;
}

/**
 * Shallow copy without `null` values, so optional fields are simply absent. A `__proto__` key (an own
 * property after JSON.parse) is dropped: assigning it would replace the copy's prototype.
 */
function compact(source: Json, keepNull: readonly string[] = []): Json {
  const out: Json = {};
  for (const key in source) {
    if (key === '__proto__') continue;
    const value = source[key];
    if (value !== null || keepNull.includes(key)) out[key] = value;
  }
  return out;
}

function renamed(out: Json, wire: string, name: string): void {
  if (out[wire] !== undefined) {
    if (out[name] === undefined) out[name] = out[wire];
    delete out[wire];
  }
}

function requireString(out: Json, key: string, what: string): void {
  const v = out[key];
  if (typeof v === 'number') out[key] = String(v);
  else if (typeof v !== 'string') throw new ShapeError(`${what}.${key} is ${describe(v)}, expected a string`);
}

export function page(value: unknown): Page {
  if (value === null || value === undefined) return {};
  return compact(object(value, 'page')) as Page;
}

export function tokenMetadata(value: unknown, what = 'metadata'): TokenMetadata {
  const out = compact(object(value, what));
  renamed(out, 'image_data', 'imageData');
  renamed(out, 'external_url', 'externalUrl');
  renamed(out, 'background_color', 'backgroundColor');
  renamed(out, 'animation_url', 'animationUrl');
  requireString(out, 'tokenId', what);
  if (typeof out.name !== 'string') out.name = out.name === undefined ? '' : String(out.name);
  out.attributes = list(out.attributes, `${what}.attributes`, (v, w) => object(v, w));
  if (out.assets !== undefined) out.assets = list(out.assets, `${what}.assets`, (v, w) => compact(object(v, w)));
  return out as unknown as TokenMetadata;
}

export function order(value: unknown, what = 'order'): Order {
  const out = compact(object(value, what));
  requireString(out, 'orderId', what);
  requireString(out, 'priceAmount', what);
  if (typeof out.priceDecimals !== 'number') {
    throw new ShapeError(`${what}.priceDecimals is ${describe(out.priceDecimals)}, expected a number`);
  }
  out.feeBreakdown = list(out.feeBreakdown, `${what}.feeBreakdown`, (v, w) => object(v, w));
  if (typeof out.marketplace === 'number') out.marketplace = MARKETPLACE_KINDS[out.marketplace] ?? 'unknown';
  return out as unknown as Order;
}

export function optionalOrder(value: unknown, what: string): Order | undefined {
  return value === null || value === undefined ? undefined : order(value, what);
}

export function collectibleOrder(value: unknown, what: string): CollectibleOrder {
  const src = object(value, what);
  const out: CollectibleOrder = { metadata: tokenMetadata(src.metadata, `${what}.metadata`) };
  const best = optionalOrder(src.order, `${what}.order`);
  const listing = optionalOrder(src.listing, `${what}.listing`);
  const offer = optionalOrder(src.offer, `${what}.offer`);
  if (best) out.order = best;
  if (listing) out.listing = listing;
  if (offer) out.offer = offer;
  return out;
}

export function propertyFilter(value: unknown, what: string): PropertyFilter {
  const src = object(value, what);
  if (typeof src.name !== 'string') throw new ShapeError(`${what}.name is ${describe(src.name)}, expected a string`);
  return {
    ...src,
    name: src.name,
    type: typeof src.type === 'string' ? src.type : 'STRING',
    min: typeof src.min === 'number' ? src.min : null,
    max: typeof src.max === 'number' ? src.max : null,
    values: Array.isArray(src.values) ? src.values : [],
  };
}

export function contractInfo(value: unknown, what: string): ContractInfo {
  const out = compact(object(value, what));
  requireString(out, 'address', what);
  if (out.name === undefined) out.name = '';
  if (out.extensions !== undefined) out.extensions = compact(object(out.extensions, `${what}.extensions`));
  return out as unknown as ContractInfo;
}

export function collection(value: unknown, what = 'collection'): Collection {
  const out = compact(object(value, what));
  const metadata = compact(object(out.metadata ?? {}, `${what}.metadata`));
  renamed(metadata, 'external_link', 'externalLink');
  if (typeof metadata.name !== 'string') metadata.name = '';
  out.metadata = metadata;
  if (typeof out.private !== 'boolean') out.private = false;
  return out as unknown as Collection;
}

export function tokenBalance(value: unknown, what: string): TokenBalance {
  const out = compact(object(value, what));
  requireString(out, 'contractAddress', what);
  requireString(out, 'balance', what);
  if (out.contractInfo !== undefined) out.contractInfo = contractInfo(out.contractInfo, `${what}.contractInfo`);
  if (out.tokenMetadata !== undefined) out.tokenMetadata = tokenMetadata(out.tokenMetadata, `${what}.tokenMetadata`);
  return out as unknown as TokenBalance;
}

export function contractSource(value: unknown, what: string): ContractSource {
  const out = compact(object(value, what), ['projectId']);
  if (out.projectId === undefined) out.projectId = null;
  return out as unknown as ContractSource;
}

export function contract(value: unknown, what: string): Contract {
  const out = compact(object(value, what), ['audienceId']);
  renamed(out, 'bytecode_hash', 'bytecodeHash');
  const extensions = out.contractExtensions;
  if (extensions && typeof extensions === 'object' && out.itemsContractAddress === undefined) {
    const items = (extensions as Json).itemsContractAddress;
    if (typeof items === 'string') out.itemsContractAddress = items;
  }
  if (out.audienceId === undefined) out.audienceId = null;
  requireString(out, 'contractAddress', what);
  return out as unknown as Contract;
}

export function audience(value: unknown, what = 'audience'): Audience {
  const out = compact(object(value, what), ['deletedAt']);
  if (out.deletedAt === undefined) out.deletedAt = null;
  return out as unknown as Audience;
}

export function audienceContact(value: unknown, what: string): AudienceContact {
  const out = compact(object(value, what));
  requireString(out, 'address', what);
  return out as unknown as AudienceContact;
}

export function gasSponsor(value: unknown, what: string): GasSponsor {
  const out = compact(object(value, what));
  if (typeof out.active !== 'boolean') out.active = false;
  return out as unknown as GasSponsor;
}

export function chartPoint(value: unknown, what: string): ChartPoint {
  const src = object(value, what);
  const v = typeof src.value === 'number' ? src.value : Number(src.value);
  if (!Number.isFinite(v)) throw new ShapeError(`${what}.value is not a number`);
  return { value: v, label: String(src.label ?? '') };
}

export function step(value: unknown, what: string): Step {
  const out = compact(object(value, what));
  for (const key of ['data', 'to', 'value', 'price']) {
    if (out[key] === undefined) out[key] = '';
    else requireString(out, key, what);
  }
  return out as unknown as Step;
}

/**
 * A stream log. Real servers send logs that already have the typed shape; those are returned as they
 * are (see {@link isTypedLog}), so that a busy stream costs no copy per log, which is why the value
 * must be one nobody else holds (a freshly parsed line). Others are copied with `null` dropped,
 * numbers in text fields turned to text, a missing `uid` filled and `event` reduced to its five fields.
 */
export function eventLog(value: unknown): EventLog {
  const src = object(value, 'log');
  if (isTypedLog(src)) return src as unknown as EventLog;
  const out = compact(src);
  requireString(out, 'txnHash', 'log');
  requireString(out, 'contractAddress', 'log');
  if (typeof out.blockNumber !== 'number') throw new ShapeError('log.blockNumber is not a number');
  if (typeof out.uid !== 'string') out.uid = `${out.blockHash}:${out.txnHash}:${out.txnLogIndex}`;
  if (out.event !== undefined) {
    const event = object(out.event, 'log.event');
    out.event = {
      topicHash: String(event.topicHash ?? ''),
      eventSig: String(event.eventSig ?? ''),
      types: Array.isArray(event.types) ? event.types : [],
      names: Array.isArray(event.names) ? event.names : [],
      values: Array.isArray(event.values)
        ? event.values.map((v) => (typeof v === 'string' ? v : JSON.stringify(v)))
        : [],
    };
  }
  return out as unknown as EventLog;
}

/**
 * A stream receipt. One that already has the typed shape is returned as it is (see
 * {@link isTypedReceipt}), so, as for {@link eventLog}, the value must be a freshly parsed one.
 */
export function receipt(value: unknown): TransactionReceipt {
  const src = object(value, 'receipt');
  if (isTypedReceipt(src)) return src as unknown as TransactionReceipt;
  const out = compact(src);
  requireString(out, 'txnHash', 'receipt');
  if (typeof out.blockNumber !== 'number') throw new ShapeError('receipt.blockNumber is not a number');
  out.logs = list(out.logs, 'receipt.logs', (v, w) => object(v, w));
  out.final = out.final === true;
  out.reorged = out.reorged === true;
  return out as unknown as TransactionReceipt;
}

function isBlockNumber(value: unknown): boolean {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/** No `null` value (which the copy would drop) and no `__proto__` key (which it would skip) at the top. */
function isCompact(src: Json): boolean {
  for (const key in src) {
    if (src[key] === null || key === '__proto__') return false;
  }
  return true;
}

/**
 * Whether {@link eventLog} may return a parsed log unchanged: its {@link EventLog} fields are what the
 * copy would make of them, and what records/schemas.ts checks of a log holds already (a canonical
 * lower-case `contractAddress`, a whole non-negative `blockNumber`). Required text fields are text, no other field of
 * the type is `null`, no own `__proto__` key, and `event` (when present) has text where text belongs,
 * lists where lists belong and text values only. Keys outside the type are passed on as they came.
 * The fields are named one by one: a loop over a log's keys (for…in, Object.values) cost a tenth of
 * the line's JSON.parse again.
 */
export function isTypedLog(src: Json): boolean {
  if (
    typeof src.uid !== 'string' ||
    typeof src.txnHash !== 'string' ||
    !isCanonicalAddress(src.contractAddress) ||
    !isBlockNumber(src.blockNumber) ||
    src.id === null ||
    src.blockHash === null ||
    src.parentBlockHash === null ||
    src.txnIndex === null ||
    src.txnLogIndex === null ||
    src.ts === null ||
    src.txnInfo === null ||
    src.rawLog === null ||
    src.type === null ||
    src.contractType === null ||
    src.logDataType === null ||
    Object.hasOwn(src, '__proto__')
  ) {
    return false;
  }
  const event = src.event;
  if (event === undefined) return true;
  if (event === null || typeof event !== 'object' || Array.isArray(event)) return false;
  const e = event as Json;
  if (
    typeof e.topicHash !== 'string' ||
    typeof e.eventSig !== 'string' ||
    !Array.isArray(e.types) ||
    !Array.isArray(e.names) ||
    !Array.isArray(e.values)
  ) {
    return false;
  }
  const values = e.values as unknown[];
  for (let i = 0; i < values.length; i++) if (typeof values[i] !== 'string') return false;
  return true;
}

/**
 * Whether {@link receipt} may return a parsed receipt unchanged: the copy would equal it, and its
 * block is one records/schemas.ts accepts.
 */
export function isTypedReceipt(src: Json): boolean {
  if (
    typeof src.txnHash !== 'string' ||
    !isBlockNumber(src.blockNumber) ||
    typeof src.final !== 'boolean' ||
    typeof src.reorged !== 'boolean' ||
    !Array.isArray(src.logs) ||
    !isCompact(src)
  ) {
    return false;
  }
  for (const log of src.logs) if (log === null || typeof log !== 'object' || Array.isArray(log)) return false;
  return true;
}
