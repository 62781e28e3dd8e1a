import { errors } from './errors.ts';
import { canonicalUint, isAddress, isHash } from './hex.ts';

export type Json = Record<string, unknown>;

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${String(value)}`;
}

/** Throws InvalidArgument naming the field, what was expected and what came. */
export function invalid(path: string, expected: string, value: unknown): never {
  throw errors.invalidArgument(`${path}: expected ${expected}, got ${describe(value)}`);
}

export interface IntRange {
  min?: number;
  max?: number;
}

/**
 * Reads one JSON object of a request, field by field. Every reader names the full path of the
 * field in its InvalidArgument message (`filter.properties[0].name: expected a string, got 7`).
 * `null` reads as absent, as Go servers read it.
 */
export class In {
  readonly value: Json;
  readonly path: string;

  constructor(value: unknown, path = '') {
    if (value === null || typeof value !== 'object' || Array.isArray(value))
      invalid(path || 'body', 'an object', value);
    this.value = value as Json;
    this.path = path;
  }

  at(key: string | number): string {
    if (typeof key === 'number') return `${this.path}[${key}]`;
    return this.path ? `${this.path}.${key}` : key;
  }

  has(key: string): boolean {
    const v = this.value[key];
    return v !== undefined && v !== null;
  }

  raw(key: string): unknown {
    const v = this.value[key];
    return v === null ? undefined : v;
  }

  optObject(key: string): In | undefined {
    const v = this.raw(key);
    return v === undefined ? undefined : new In(v, this.at(key));
  }

  object(key: string): In {
    return this.optObject(key) ?? invalid(this.at(key), 'an object', this.value[key]);
  }

  optString(key: string): string | undefined {
    const v = this.raw(key);
    if (v === undefined) return undefined;
    if (typeof v !== 'string') invalid(this.at(key), 'a string', v);
    return v;
  }

  string(key: string): string {
    const v = this.optString(key);
    if (v === undefined || v === '') invalid(this.at(key), 'a non-empty string', this.value[key]);
    return v;
  }

  optBool(key: string): boolean | undefined {
    const v = this.raw(key);
    if (v === undefined) return undefined;
    if (typeof v !== 'boolean') invalid(this.at(key), 'true or false', v);
    return v;
  }

  optInt(key: string, range: IntRange = {}): number | undefined {
    const v = this.raw(key);
    if (v === undefined) return undefined;
    return checkInt(v, this.at(key), range);
  }

  int(key: string, range: IntRange = {}): number {
    const v = this.optInt(key, range);
    if (v === undefined) invalid(this.at(key), 'an integer', this.value[key]);
    return v;
  }

  optNumber(key: string): number | undefined {
    const v = this.raw(key);
    if (v === undefined) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v)) invalid(this.at(key), 'a number', v);
    return v;
  }

  /** A lower-cased `0x` address. */
  optAddress(key: string): string | undefined {
    const v = this.optString(key);
    if (v === undefined || v === '') return undefined;
    return checkAddress(v, this.at(key));
  }

  address(key: string): string {
    return this.optAddress(key) ?? invalid(this.at(key), 'an address (0x and 40 hex digits)', this.value[key]);
  }

  optHash(key: string): string | undefined {
    const v = this.optString(key);
    if (v === undefined || v === '') return undefined;
    if (!isHash(v)) invalid(this.at(key), 'a hash (0x and 64 hex digits)', v);
    return v.toLowerCase();
  }

  /** An unsigned integer given as a decimal string (or a JSON number), as a canonical decimal string. */
  optUint(key: string): string | undefined {
    const v = this.raw(key);
    if (v === undefined || v === '') return undefined;
    return checkUint(v, this.at(key));
  }

  uint(key: string): string {
    return this.optUint(key) ?? invalid(this.at(key), 'an unsigned integer as a decimal string', this.value[key]);
  }

  optList(key: string): Array<{ value: unknown; path: string }> | undefined {
    const v = this.raw(key);
    if (v === undefined) return undefined;
    if (!Array.isArray(v)) invalid(this.at(key), 'a list', v);
    const path = this.at(key);
    return v.map((value, i) => ({ value, path: `${path}[${i}]` }));
  }

  optAddressList(key: string): string[] | undefined {
    return this.optList(key)?.map((item) => {
      if (typeof item.value !== 'string') invalid(item.path, 'an address', item.value);
      return checkAddress(item.value, item.path);
    });
  }

  optStringList(key: string): string[] | undefined {
    return this.optList(key)?.map((item) => {
      if (typeof item.value !== 'string') invalid(item.path, 'a string', item.value);
      return item.value;
    });
  }

  optUintList(key: string): string[] | undefined {
    return this.optList(key)?.map((item) => checkUint(item.value, item.path));
  }
}

export function checkInt(v: unknown, path: string, range: IntRange = {}): number {
  if (typeof v !== 'number' || !Number.isInteger(v)) invalid(path, 'an integer', v);
  const min = range.min ?? Number.MIN_SAFE_INTEGER;
  const max = range.max ?? Number.MAX_SAFE_INTEGER;
  if (v < min || v > max) {
    const expected = range.max === undefined ? `an integer ≥ ${min}` : `an integer from ${min} to ${max}`;
    invalid(path, expected, v);
  }
  return v;
}

export function checkAddress(v: string, path: string): string {
  if (!isAddress(v)) invalid(path, 'an address (0x and 40 hex digits)', v);
  return v.toLowerCase();
}

export function checkUint(v: unknown, path: string): string {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return String(v);
  if (typeof v === 'string') {
    const canonical = canonicalUint(v);
    if (canonical !== undefined) return canonical;
  }
  return invalid(path, 'an unsigned integer as a decimal string', v);
}

/**
 * An enumeration value given by name or by position (wire-protocol.md §1.5); `aliases` maps other
 * accepted names (the spec's stand-ins) to positions. Returns the position.
 */
export function checkEnum(
  v: unknown,
  path: string,
  names: readonly string[],
  aliases: Readonly<Record<string, number>> = {},
): number {
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0 && v < names.length) return v;
  if (typeof v === 'string') {
    const index = names.indexOf(v);
    if (index >= 0) return index;
    const alias = aliases[v];
    if (alias !== undefined) return alias;
  }
  return invalid(path, `one of ${names.join(', ')} (by name or position)`, v);
}
