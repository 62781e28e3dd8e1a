import { toEventSelector } from 'viem/utils';
import { addressWord, boolWord, uintWord } from './hex.ts';

/** An event of the token standards or of the platform's marketplace contract. */
export interface EventDef {
  name: string;
  /** `Name(type,type,...)`: what the topic hash is computed from. */
  canonical: string;
  /** Solidity spelling with `indexed` and argument names, as sent in `event.eventSig`. */
  eventSig: string;
  topicHash: string;
  types: readonly string[];
  names: readonly string[];
  indexed: readonly boolean[];
}

function define(name: string, args: ReadonlyArray<readonly [type: string, name: string, indexed: boolean]>): EventDef {
  const canonical = `${name}(${args.map(([type]) => type).join(',')})`;
  const eventSig = `${name}(${args.map(([type, argName, indexed]) => `${type}${indexed ? ' indexed' : ''} ${argName}`).join(', ')})`;
  return {
    name,
    canonical,
    eventSig,
    topicHash: toEventSelector(canonical),
    types: args.map(([type]) => type),
    names: args.map(([, argName]) => argName),
    indexed: args.map(([, , indexed]) => indexed),
  };
}

export const EVENTS = {
  Transfer: define('Transfer', [
    ['address', 'from', true],
    ['address', 'to', true],
    ['uint256', 'tokenId', true],
  ]),
  /** ERC-20 payments: same topic hash as the ERC-721 Transfer, three topics instead of four. */
  TransferERC20: define('Transfer', [
    ['address', 'from', true],
    ['address', 'to', true],
    ['uint256', 'value', false],
  ]),
  TransferSingle: define('TransferSingle', [
    ['address', 'operator', true],
    ['address', 'from', true],
    ['address', 'to', true],
    ['uint256', 'id', false],
    ['uint256', 'value', false],
  ]),
  TransferBatch: define('TransferBatch', [
    ['address', 'operator', true],
    ['address', 'from', true],
    ['address', 'to', true],
    ['uint256[]', 'ids', false],
    ['uint256[]', 'values', false],
  ]),
  RequestCreated: define('RequestCreated', [
    ['uint256', 'requestId', true],
    ['address', 'creator', true],
    ['address', 'tokenContract', true],
    ['uint256', 'tokenId', false],
    ['bool', 'isListing', false],
    ['uint256', 'quantity', false],
    ['address', 'currency', false],
    ['uint256', 'pricePerToken', false],
    ['uint256', 'expiry', false],
  ]),
  RequestAccepted: define('RequestAccepted', [
    ['uint256', 'requestId', true],
    ['address', 'buyer', true],
    ['address', 'tokenContract', true],
    ['address', 'receiver', false],
    ['uint256', 'quantity', false],
    ['uint256', 'quantityRemaining', false],
  ]),
  RequestCancelled: define('RequestCancelled', [
    ['uint256', 'requestId', true],
    ['address', 'tokenContract', true],
  ]),
} as const;

export type EventName = keyof typeof EVENTS;

export const EVENT_LIST: readonly EventDef[] = Object.values(EVENTS);

/** An argument value: addresses as lower-case hex, integers as bigint, lists of integers. */
export type EventValue = string | bigint | boolean | readonly bigint[];

export interface EncodedLog {
  topics: string[];
  data: string;
  /** Decoded values as strings (lists as JSON arrays of decimal strings). */
  values: string[];
}

function word(type: string, value: EventValue): string {
  if (type === 'address') return addressWord(value as string);
  if (type === 'bool') return boolWord(value as boolean);
  return uintWord(value as bigint);
}

function show(value: EventValue): string {
  if (Array.isArray(value)) return JSON.stringify(value.map((v) => v.toString()));
  return String(value);
}

/** ABI-encodes one log of `def` (topics and data) and renders its decoded values. */
export function encodeLog(def: EventDef, values: readonly EventValue[]): EncodedLog {
  const topics = [def.topicHash];
  const head: string[] = [];
  const tails: string[] = [];
  const dynamic: Array<{ at: number; list: readonly bigint[] }> = [];
  def.types.forEach((type, i) => {
    const value = values[i] as EventValue;
    if (def.indexed[i]) {
      topics.push(`0x${word(type, value)}`);
    } else if (type.endsWith('[]')) {
      dynamic.push({ at: head.length, list: value as readonly bigint[] });
      head.push('');
    } else {
      head.push(word(type, value));
    }
  });
  let offset = head.length * 32;
  for (const { at, list } of dynamic) {
    head[at] = uintWord(offset);
    const encoded = uintWord(list.length) + list.map((v) => uintWord(v)).join('');
    tails.push(encoded);
    offset += encoded.length / 2;
  }
  return { topics, data: `0x${head.join('')}${tails.join('')}`, values: values.map(show) };
}

const CANONICAL_TYPES: Readonly<Record<string, string>> = { uint: 'uint256', int: 'int256', byte: 'bytes1' };

/**
 * The canonical signature of a Solidity event declaration: argument names, `indexed` and spaces
 * dropped (`Transfer(address indexed from, ...)` -> `Transfer(address,...)`). Undefined when the
 * text is not an event declaration.
 */
export function canonicalSignature(text: string): string | undefined {
  const match = /^\s*(?:event\s+)?([A-Za-z_$][\w$]*)\s*\((.*)\)\s*;?\s*$/s.exec(text);
  if (!match) return undefined;
  const name = match[1] as string;
  const body = (match[2] as string).trim();
  if (body === '') return `${name}()`;
  const types: string[] = [];
  for (const part of body.split(',')) {
    const words = part.trim().split(/\s+/);
    const type = words[0];
    if (!type || !/^[a-z][a-z0-9]*(\[\d*\])*$/.test(type)) return undefined;
    if (words.length > 3 || (words.length === 3 && words[1] !== 'indexed')) return undefined;
    const base = type.replace(/(\[\d*\])+$/, '');
    types.push((CANONICAL_TYPES[base] ?? base) + type.slice(base.length));
  }
  return `${name}(${types.join(',')})`;
}

/** Topic hash of an event given as a declaration or as a `0x` topic hash; undefined when neither. */
export function topicOf(text: string): string | undefined {
  const trimmed = text.trim();
  if (/^0x[0-9a-fA-F]{64}$/.test(trimmed)) return trimmed.toLowerCase();
  const canonical = canonicalSignature(trimmed);
  return canonical ? toEventSelector(canonical) : undefined;
}
