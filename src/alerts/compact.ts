/**
 * Compact containers for the rule index of a process that holds a million watch rules: bytes in
 * typed arrays instead of a JS string or object per item (a 42-character address costs 64 bytes as a
 * string, plus about 40 in a Map; here 21, plus 8).
 */

type NumberArray = Int32Array | Uint32Array | Uint16Array | Uint8Array;

const CHUNK_BITS = 16;
const CHUNK_ITEMS = 1 << CHUNK_BITS;
const CHUNK_MASK = CHUNK_ITEMS - 1;

/**
 * A growable array of numbers in typed-array chunks of 65,536: past the first chunk (which starts
 * small and doubles), growing copies and frees nothing, so that filling it with a million items
 * leaves no garbage behind. Unset items read as `empty`.
 */
export class Column {
  readonly #make: (length: number) => NumberArray;
  readonly #empty: number;
  readonly #chunks: NumberArray[] = [];

  constructor(make: (length: number) => NumberArray, empty = 0) {
    this.#make = make;
    this.#empty = empty;
  }

  get(index: number): number {
    return this.#chunks[index >>> CHUNK_BITS]?.[index & CHUNK_MASK] ?? this.#empty;
  }

  set(index: number, value: number): void {
    const at = index >>> CHUNK_BITS;
    let chunk = this.#chunks[at];
    if (!chunk || (index & CHUNK_MASK) >= chunk.length) chunk = this.#reach(at, index & CHUNK_MASK);
    chunk[index & CHUNK_MASK] = value;
  }

  #reach(at: number, offset: number): NumberArray {
    while (this.#chunks.length < at) this.#chunks.push(this.#chunk(CHUNK_ITEMS));
    const first = this.#chunks[at];
    if (at === 0 && first && first.length < CHUNK_ITEMS) {
      let length = first.length;
      while (length <= offset) length *= 2;
      const bigger = this.#chunk(Math.min(CHUNK_ITEMS, length));
      bigger.set(first);
      this.#chunks[0] = bigger;
      return bigger;
    }
    const chunk = this.#chunk(at === 0 ? Math.max(1024, 2 ** Math.ceil(Math.log2(offset + 1))) : CHUNK_ITEMS);
    this.#chunks[at] = chunk;
    return chunk;
  }

  #chunk(length: number): NumberArray {
    const chunk = this.#make(length);
    if (this.#empty !== 0) chunk.fill(this.#empty);
    return chunk;
  }
}

/**
 * Slots by number (0 to 2^32 - 1), for numbers handed out in sequence such as rule numbers: a
 * directly indexed table in chunks of 65,536 numbers, made when a number in its range is set and
 * dropped when its last one is deleted. 4 bytes a number where numbers are dense.
 */
export class NumberSlots {
  /** Slot + 1 by number; 0: none. */
  readonly #chunks = new Map<number, Int32Array>();
  readonly #counts = new Map<number, number>();
  #size = 0;

  get size(): number {
    return this.#size;
  }

  get(key: number): number | undefined {
    const value = this.#chunks.get(key >>> CHUNK_BITS)?.[key & CHUNK_MASK] ?? 0;
    return value === 0 ? undefined : value - 1;
  }

  set(key: number, slot: number): void {
    const at = key >>> CHUNK_BITS;
    let chunk = this.#chunks.get(at);
    if (!chunk) {
      chunk = new Int32Array(CHUNK_ITEMS);
      this.#chunks.set(at, chunk);
    }
    if (chunk[key & CHUNK_MASK] === 0) {
      this.#size++;
      this.#counts.set(at, (this.#counts.get(at) ?? 0) + 1);
    }
    chunk[key & CHUNK_MASK] = slot + 1;
  }

  delete(key: number): boolean {
    const at = key >>> CHUNK_BITS;
    const chunk = this.#chunks.get(at);
    if (!chunk || chunk[key & CHUNK_MASK] === 0) return false;
    chunk[key & CHUNK_MASK] = 0;
    this.#size--;
    const left = (this.#counts.get(at) ?? 1) - 1;
    if (left > 0) this.#counts.set(at, left);
    else {
      this.#counts.delete(at);
      this.#chunks.delete(at);
    }
    return true;
  }

  /** The slots held, in no particular order. */
  *slots(): IterableIterator<number> {
    for (const chunk of this.#chunks.values()) for (const value of chunk) if (value !== 0) yield value - 1;
  }

  clear(): void {
    this.#chunks.clear();
    this.#counts.clear();
    this.#size = 0;
  }
}

/** Bytes in one chunk of a {@link ByteArena} at most; longer byte strings are kept apart. */
const CHUNK_BYTES = 1 << 20;

/**
 * Byte strings by slot, in chunks of up to 1 MiB that are never copied to grow (so that growing
 * leaves no garbage behind: a million names would otherwise be copied over and over as the buffer
 * grows). Space freed by deletions is reclaimed by copying the live bytes to new chunks once more
 * than half of what the chunks hold is freed.
 */
export class ByteArena {
  #chunks: Uint8Array[] = [];
  /** Bytes used in the last chunk. */
  #used = 0;
  /** Bytes of the live byte strings in chunks, and of the deleted ones still there. */
  #live = 0;
  #freed = 0;
  /** Chunk index << 20 | offset in the chunk. */
  readonly #start = new Column((n) => new Uint32Array(n));
  /** Length + 1; 0 means "nothing in this slot". */
  readonly #length = new Column((n) => new Uint32Array(n));
  #slots = 0;
  /** Byte strings longer than a chunk. */
  readonly #large = new Map<number, Uint8Array>();

  set(slot: number, bytes: Uint8Array): void {
    this.delete(slot);
    this.#slots = Math.max(this.#slots, slot + 1);
    if (bytes.length > CHUNK_BYTES) this.#large.set(slot, bytes.slice());
    else {
      this.#place(slot, bytes);
      this.#live += bytes.length;
    }
    this.#length.set(slot, bytes.length + 1);
  }

  /**
   * Whether the bytes of a slot start with `key`, a key as long as `keyLength` says the one stored
   * there is (compared in place: lookups make no view).
   */
  startsWith(
    slot: number,
    key: Uint8Array,
    keyLength: (bytes: Uint8Array, at: number) => number,
    size = key.length,
  ): boolean {
    const length = this.#length.get(slot);
    if (length === 0 || size > length - 1) return false;
    let bytes: Uint8Array | undefined;
    let at = 0;
    if (length - 1 > CHUNK_BYTES) bytes = this.#large.get(slot);
    else {
      const start = this.#start.get(slot);
      at = start & (CHUNK_BYTES - 1);
      bytes = this.#chunks[start >>> 20];
    }
    if (!bytes || keyLength(bytes, at) !== size) return false;
    for (let i = 0; i < size; i++) if (bytes[at + i] !== key[i]) return false;
    return true;
  }

  /**
   * Calls `visit` with the buffer that holds a slot's bytes and where they start in it: no view is
   * made (for walks over every slot). False when the slot holds nothing.
   */
  visit(slot: number, visit: (bytes: Uint8Array, at: number) => void): boolean {
    const length = this.#length.get(slot);
    if (length === 0) return false;
    if (length - 1 > CHUNK_BYTES) {
      const large = this.#large.get(slot);
      if (large) visit(large, 0);
      return large !== undefined;
    }
    const start = this.#start.get(slot);
    const chunk = this.#chunks[start >>> 20];
    if (chunk) visit(chunk, start & (CHUNK_BYTES - 1));
    return chunk !== undefined;
  }

  /** The bytes of a slot, as a view (valid until the next `set` or `delete`). */
  get(slot: number): Uint8Array | undefined {
    const length = this.#length.get(slot);
    if (length === 0) return undefined;
    if (length - 1 > CHUNK_BYTES) return this.#large.get(slot);
    const start = this.#start.get(slot);
    const offset = start & (CHUNK_BYTES - 1);
    return this.#chunks[start >>> 20]?.subarray(offset, offset + length - 1);
  }

  delete(slot: number): void {
    const length = this.#length.get(slot);
    if (length === 0) return;
    this.#length.set(slot, 0);
    if (length - 1 > CHUNK_BYTES) {
      this.#large.delete(slot);
      return;
    }
    this.#live -= length - 1;
    this.#freed += length - 1;
    if (this.#freed > CHUNK_BYTES && this.#freed > this.#live) this.#compact();
  }

  #place(slot: number, bytes: Uint8Array): void {
    let chunk = this.#chunks.at(-1);
    if (!chunk || this.#used + bytes.length > chunk.length) {
      // Small arenas start small: chunks double up to the full size.
      const size = Math.min(CHUNK_BYTES, Math.max(4096, (chunk?.length ?? 0) * 2, bytes.length));
      chunk = new Uint8Array(size);
      this.#chunks.push(chunk);
      this.#used = 0;
    }
    chunk.set(bytes, this.#used);
    this.#start.set(slot, (((this.#chunks.length - 1) << 20) | this.#used) >>> 0);
    this.#used += bytes.length;
  }

  /** Copies the live byte strings to new chunks. */
  #compact(): void {
    const old = this.#chunks;
    this.#chunks = [];
    this.#used = 0;
    this.#freed = 0;
    for (let slot = 0; slot < this.#slots; slot++) {
      const length = this.#length.get(slot);
      if (length === 0 || length - 1 > CHUNK_BYTES) continue;
      // Read before #place writes the slot's new start.
      const start = this.#start.get(slot);
      const offset = start & (CHUNK_BYTES - 1);
      const bytes = old[start >>> 20]?.subarray(offset, offset + length - 1);
      if (bytes) this.#place(slot, bytes);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Addresses

/** The value of a hex digit (either case), or -1. */
function nibble(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  if (code >= 97 && code <= 102) return code - 87;
  if (code >= 65 && code <= 70) return code - 55;
  return -1;
}

const HEX = '0123456789abcdef';

/**
 * `0x` and 1 to 255 hex digits (how rules and events spell collections) as bytes: the number of
 * digits, then the digits two to a byte. Undefined for anything else. Unpacked, it is lower-case.
 */
export function packAddress(address: string): Uint8Array | undefined {
  const bytes = new Uint8Array(1 + Math.ceil(Math.max(0, address.length - 2) / 2));
  return packInto(address, bytes) < 0 ? undefined : bytes;
}

/** The address that {@link packAddress} packed into `bytes` (from `offset`). */
export function unpackAddress(bytes: Uint8Array, offset = 0): string {
  const digits = bytes[offset] ?? 0;
  let out = '0x';
  for (let i = 0; i < digits; i++) {
    const byte = bytes[offset + 1 + (i >> 1)] ?? 0;
    out += HEX[i & 1 ? byte & 15 : byte >> 4];
  }
  return out;
}

/** Packs `address` into `target` (as {@link packAddress}); its length, or -1 when it is not a hex address. */
function packInto(address: string, target: Uint8Array): number {
  const digits = address.length - 2;
  if (digits < 1 || digits > 255 || address.charCodeAt(0) !== 48 || address.charCodeAt(1) !== 120) return -1;
  const length = 1 + Math.ceil(digits / 2);
  if (target.length < length) return -1;
  target.fill(0, 0, length);
  target[0] = digits;
  for (let i = 0; i < digits; i++) {
    const value = nibble(address.charCodeAt(2 + i));
    if (value < 0) return -1;
    target[1 + (i >> 1)] = (target[1 + (i >> 1)] ?? 0) | (i & 1 ? value : value << 4);
  }
  return length;
}

/** FNV-1a over the first `length` bytes. */
function hashBytes(bytes: Uint8Array, length = bytes.length): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < length; i++) hash = Math.imul(hash ^ (bytes[i] ?? 0), 0x01000193);
  return hash >>> 0;
}

/**
 * A set of byte strings (keys), each given a slot and stored with some bytes of its own after it (a
 * payload): in a {@link ByteArena}, found through an open-addressing table of slots (at most half
 * full, 8 bytes a key). `keyLength` tells where the key of a stored entry ends.
 */
class ByteKeySlots {
  readonly #entries = new ByteArena();
  readonly #keyLength: (bytes: Uint8Array, at: number) => number;
  /** Slot + 1; 0 is an empty place. */
  #table = new Int32Array(1024);
  #size = 0;
  #slots = 0;
  readonly #free: number[] = [];

  constructor(keyLength: (bytes: Uint8Array, at: number) => number) {
    this.#keyLength = keyLength;
  }

  get size(): number {
    return this.#size;
  }

  /** The slot of the key in the first `size` bytes of `key`, if held. */
  get(key: Uint8Array, size = key.length): number | undefined {
    const mask = this.#table.length - 1;
    for (let at = hashBytes(key, size) & mask; ; at = (at + 1) & mask) {
      const value = this.#table[at] ?? 0;
      if (value === 0) return undefined;
      if (this.#entries.startsWith(value - 1, key, this.#keyLength, size)) return value - 1;
    }
  }

  /** The slot of a key, given one (stored with `payload`) if it had none. */
  add(key: Uint8Array, payload?: Uint8Array): number {
    const held = this.get(key);
    if (held !== undefined) return held;
    if ((this.#size + 1) * 2 > this.#table.length) this.#rehash(this.#table.length * 2);
    const slot = this.#free.pop() ?? this.#slots++;
    const entry = new Uint8Array(key.length + (payload?.length ?? 0));
    entry.set(key);
    if (payload) entry.set(payload, key.length);
    this.#entries.set(slot, entry);
    this.#place(hashBytes(key), slot);
    this.#size++;
    return slot;
  }

  /** The key and payload of a slot (a view, valid until the next change). */
  entry(slot: number): Uint8Array | undefined {
    return this.#entries.get(slot);
  }

  /** Calls `visit` with where each entry starts, in no particular order (no view, no iterator result). */
  forEachEntry(visit: (bytes: Uint8Array, at: number) => void): void {
    for (const value of this.#table) if (value !== 0) this.#entries.visit(value - 1, visit);
  }

  delete(slot: number): void {
    const entry = this.#entries.get(slot);
    if (!entry) return;
    const table = this.#table;
    const mask = table.length - 1;
    let at = this.#hashOf(slot) & mask;
    while ((table[at] ?? 0) !== slot + 1) at = (at + 1) & mask;
    table[at] = 0;
    this.#shiftBack(at);
    this.#entries.delete(slot);
    this.#free.push(slot);
    this.#size--;
  }

  /** Every slot held, in no particular order. */
  *slots(): IterableIterator<number> {
    for (const value of this.#table) if (value !== 0) yield value - 1;
  }

  /**
   * After the place `hole` was emptied, moves back the slots after it that could no longer be found
   * (their home place is not strictly between the hole and them): deletion without tombstones.
   */
  #shiftBack(hole: number): void {
    const table = this.#table;
    const mask = table.length - 1;
    for (let next = (hole + 1) & mask; (table[next] ?? 0) !== 0; next = (next + 1) & mask) {
      const home = this.#hashOf((table[next] ?? 1) - 1) & mask;
      const stays = hole <= next ? hole < home && home <= next : hole < home || home <= next;
      if (stays) continue;
      table[hole] = table[next] ?? 0;
      table[next] = 0;
      hole = next;
    }
  }

  #hashOf(slot: number): number {
    const entry = this.#entries.get(slot);
    return entry ? hashBytes(entry.subarray(0, this.#keyLength(entry, 0))) : 0;
  }

  #place(hash: number, slot: number): void {
    const mask = this.#table.length - 1;
    let at = hash & mask;
    while ((this.#table[at] ?? 0) !== 0) at = (at + 1) & mask;
    this.#table[at] = slot + 1;
  }

  #rehash(capacity: number): void {
    const old = this.#table;
    this.#table = new Int32Array(capacity);
    for (const value of old) if (value !== 0) this.#place(this.#hashOf(value - 1), value - 1);
  }
}

/** Room for a packed address or an encoded key: reused, so that lookups allocate nothing. */
let scratch = new Uint8Array(256);

/**
 * A set of addresses (`0x` and hex digits, compared case-insensitively), each given a slot and
 * maybe some bytes of its own (the rule index keeps a collection's name there): packed two digits to
 * a byte (see {@link packAddress}). No string is kept.
 */
export class AddressSlots {
  readonly #keys = new ByteKeySlots(packedLength);

  get size(): number {
    return this.#keys.size;
  }

  /** The slot of an address, if held (anything that is not a hex address is not). */
  get(address: string): number | undefined {
    const length = packInto(address, scratch);
    return length < 0 ? undefined : this.#keys.get(scratch, length);
  }

  /**
   * The slot of an address, given one (with `payload`) if it had none; undefined when it is not a
   * hex address.
   */
  add(address: string, payload?: Uint8Array): number | undefined {
    const packed = packAddress(address);
    return packed ? this.#keys.add(packed, payload) : undefined;
  }

  /** The address of a slot. */
  address(slot: number): string | undefined {
    const entry = this.#keys.entry(slot);
    return entry === undefined ? undefined : unpackAddress(entry);
  }

  /** The bytes given with the address of a slot (a view: copy it to keep it). */
  payload(slot: number): Uint8Array | undefined {
    const entry = this.#keys.entry(slot);
    return entry?.subarray(packedLength(entry, 0));
  }

  delete(slot: number): void {
    this.#keys.delete(slot);
  }

  /** Every slot held, in no particular order. */
  slots(): IterableIterator<number> {
    return this.#keys.slots();
  }

  /**
   * Every address held (in no particular order), then `more`, as a list read from this set when it
   * is iterated or split: valid until the set changes (split it at once). Splitting it copies each
   * address once, into its share; the whole list is never copied.
   */
  list(more: readonly string[] = []): PackedList {
    const extra = PackedAddresses.of(more);
    const forEach = (visit: (bytes: Uint8Array, at: number) => void): void => {
      this.#keys.forEachEntry(visit);
      extra.forEachPacked(visit);
    };
    const keys = this.#keys;
    const slots = () => this.slots();
    return {
      length: this.size + extra.length,
      *[Symbol.iterator]() {
        for (const slot of slots()) {
          const entry = keys.entry(slot);
          if (entry) yield unpackAddress(entry);
        }
        yield* extra;
      },
      toJSON() {
        return [...this];
      },
      split: (count, shareOf) => splitPacked(forEach, count, shareOf),
    };
  }
}

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

/**
 * A text's UTF-8, after `skip` bytes left for the caller, in a buffer this module reuses: valid until
 * the next call into it (lookups and payloads allocate nothing).
 */
export function utf8Bytes(text: string, skip = 0): Uint8Array {
  // At most 3 bytes per UTF-16 unit.
  if (skip + text.length * 3 > scratch.length) scratch = new Uint8Array(skip + text.length * 3);
  const { written } = utf8.encodeInto(text, scratch.subarray(skip));
  return scratch.subarray(0, skip + written);
}

/** The text of UTF-8 bytes (short ASCII ones, most names and chat keys, without a decoder call). */
export function utf8Text(bytes: Uint8Array): string {
  if (bytes.length <= 64) {
    let ascii = true;
    for (let i = 0; i < bytes.length; i++) {
      if ((bytes[i] ?? 0) > 127) {
        ascii = false;
        break;
      }
    }
    if (ascii) return String.fromCharCode.apply(null, bytes as unknown as number[]);
  }
  return fromUtf8.decode(bytes);
}

/**
 * A set of texts (chat keys), each given a slot, kept as UTF-8 after its length (3 bytes): a hundred
 * thousand chats are no hundred thousand strings and map entries.
 */
export class TextSlots {
  readonly #keys = new ByteKeySlots(
    (bytes, at) => 3 + ((bytes[at] ?? 0) | ((bytes[at + 1] ?? 0) << 8) | ((bytes[at + 2] ?? 0) << 16)),
  );

  get size(): number {
    return this.#keys.size;
  }

  get(text: string): number | undefined {
    return this.#keys.get(this.#key(text));
  }

  /** The slot of a text, given one if it had none. */
  add(text: string): number {
    return this.#keys.add(this.#key(text));
  }

  text(slot: number): string | undefined {
    const entry = this.#keys.entry(slot);
    return entry === undefined ? undefined : utf8Text(entry.subarray(3));
  }

  delete(slot: number): void {
    this.#keys.delete(slot);
  }

  /** The text's key: its UTF-8 length in 3 bytes, then its UTF-8 (in the scratch buffer). */
  #key(text: string): Uint8Array {
    const key = utf8Bytes(text, 3);
    const written = key.length - 3;
    if (written > 0xffffff) throw new RangeError('text too long for a key');
    key[0] = written & 0xff;
    key[1] = (written >> 8) & 0xff;
    key[2] = written >> 16;
    return key;
  }
}

/** The bytes of the packed address at `at`: its digit count and its digits, two to a byte. */
function packedLength(bytes: Uint8Array, at: number): number {
  return 1 + Math.ceil((bytes[at] ?? 0) / 2);
}

/**
 * FNV-1a of an address in lower case (`0x` included): spread evenly, the same in every process. With
 * {@link hashPackedAddress}, the same number from the text or from its packed bytes.
 */
export function hashAddress(address: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < address.length; i++) {
    let code = address.charCodeAt(i);
    if (code >= 65 && code <= 90) code += 32;
    hash = Math.imul(hash ^ code, 0x01000193) >>> 0;
  }
  return hash;
}

/** {@link hashAddress} of the address packed at `at`, read from its bytes (no string is made). */
export function hashPackedAddress(bytes: Uint8Array, at: number): number {
  let hash = Math.imul(Math.imul(0x811c9dc5 ^ 48, 0x01000193) ^ 120, 0x01000193) >>> 0;
  const digits = bytes[at] ?? 0;
  for (let i = 0; i < digits; i++) {
    const byte = bytes[at + 1 + (i >> 1)] ?? 0;
    const value = i & 1 ? byte & 15 : byte >> 4;
    hash = Math.imul(hash ^ (value < 10 ? 48 + value : 87 + value), 0x01000193) >>> 0;
  }
  return hash;
}

/** Addresses kept packed, that can be split into shares (see {@link shareFilter} in streams.ts). */
export interface PackedList extends Iterable<string> {
  readonly length: number;
  toJSON(): string[];
  /**
   * The addresses in `count` sorted lists by `shareOf` (of an address packed at `at` in `bytes`, as
   * {@link hashPackedAddress} reads it), empty ones left out.
   */
  split(count: number, shareOf: PackedShareOf): PackedAddresses[];
}

/**
 * A list of addresses kept packed (see {@link packAddress}): about 21 bytes each instead of a
 * 64-byte string and a pointer. It turns into a JSON array of strings when sent, and iterates as
 * strings made one at a time, so that the filter of a stream watching a million contracts holds no
 * million strings while it runs.
 */
export class PackedAddresses implements PackedList {
  readonly #bytes: Uint8Array;
  readonly length: number;

  /** `bytes`: `length` addresses as {@link packAddress} packs them, one after another. */
  constructor(bytes: Uint8Array, length: number) {
    this.#bytes = bytes;
    this.length = length;
  }

  /** Packs hex addresses, in their order; throws a TypeError on anything else. */
  static of(addresses: Iterable<string>): PackedAddresses {
    const packed: Uint8Array[] = [];
    let size = 0;
    for (const address of addresses) {
      const bytes = packAddress(address);
      if (!bytes) throw new TypeError(`not a hex address: ${address.slice(0, 80)}`);
      packed.push(bytes);
      size += bytes.length;
    }
    const bytes = new Uint8Array(size);
    let at = 0;
    for (const one of packed) {
      bytes.set(one, at);
      at += one.length;
    }
    return new PackedAddresses(bytes, packed.length);
  }

  *[Symbol.iterator](): IterableIterator<string> {
    const bytes = this.#bytes;
    for (let at = 0; at < bytes.length; at += packedLength(bytes, at)) yield unpackAddress(bytes, at);
  }

  toJSON(): string[] {
    return [...this];
  }

  /** The packed bytes, one address after another (the caller must not change them). */
  bytes(): Uint8Array {
    return this.#bytes;
  }

  /** Calls `visit` with each packed address: the buffer and where it starts. */
  forEachPacked(visit: (bytes: Uint8Array, at: number) => void): void {
    const bytes = this.#bytes;
    for (let at = 0; at < bytes.length; at += packedLength(bytes, at)) visit(bytes, at);
  }

  split(count: number, shareOf: PackedShareOf): PackedAddresses[] {
    return splitPacked((visit) => this.forEachPacked(visit), count, shareOf);
  }
}

/**
 * The addresses that `forEach` gives (packed) in `count` lists, by `shareOf(address)` (0 to count -
 * 1), each sorted as strings and in a buffer of its exact size (no list is built by growing one).
 * Empty lists are left out. `forEach` is called twice and must give the same addresses each time.
 */
function splitPacked(
  forEach: (visit: (bytes: Uint8Array, at: number) => void) => void,
  count: number,
  shareOf: PackedShareOf,
): PackedAddresses[] {
  if (count < 1 || count > 0xffff) throw new RangeError(`cannot split into ${count} lists`);
  // Read straight from the packed bytes: a million addresses split make no string and no view.
  const sizes = new Uint32Array(count);
  const counts = new Uint32Array(count);
  // Each address's share, in the order forEach gives them, for the second pass.
  let shares = new Uint16Array(1024);
  let visited = 0;
  forEach((bytes, at) => {
    const share = shareOf(bytes, at);
    if (visited === shares.length) {
      const grown = new Uint16Array(shares.length * 2);
      grown.set(shares);
      shares = grown;
    }
    shares[visited++] = share;
    sizes[share] = (sizes[share] ?? 0) + packedLength(bytes, at);
    counts[share] = (counts[share] ?? 0) + 1;
  });
  const lists = Array.from(sizes, (size) => new Uint8Array(size));
  const filled = new Uint32Array(count);
  let next = 0;
  forEach((bytes, at) => {
    const share = shares[next++] ?? 0;
    const length = packedLength(bytes, at);
    const list = lists[share] as Uint8Array;
    const to = filled[share] ?? 0;
    for (let i = 0; i < length; i++) list[to + i] = bytes[at + i] ?? 0;
    filled[share] = to + length;
  });
  const out: PackedAddresses[] = [];
  lists.forEach((list, share) => {
    const n = counts[share] ?? 0;
    if (n > 0) out.push(new PackedAddresses(sortPacked(list, n), n));
  });
  return out;
}

/** Which share (0 to count - 1) the address packed at `at` in `bytes` goes to. */
export type PackedShareOf = (bytes: Uint8Array, at: number) => number;

/**
 * `n` packed addresses sorted as their texts would sort, in place. Each is given a number made
 * of its first 9 digits and its place, and the numbers are sorted natively (a comparator called a
 * million times is what made this slow); runs that share those digits are then put in order by
 * comparing their packed digits: hex digits order as their values do, and a shorter text that is a
 * prefix sorts first.
 */
function sortPacked(bytes: Uint8Array, n: number): Uint8Array {
  const offsets = new Uint32Array(n);
  for (let i = 0, at = 0; i < n; i++, at += packedLength(bytes, at)) offsets[i] = at;
  if (n <= PLACES) {
    // Prefix and place in one exact double: 36 + 16 bits.
    const keys = new Float64Array(n);
    for (let i = 0; i < n; i++) keys[i] = prefixKey(bytes, offsets[i] ?? 0) * PLACES + i;
    keys.sort();
    const placed = new Uint32Array(n);
    for (let i = 0; i < n; i++) placed[i] = offsets[(keys[i] ?? 0) % PLACES] ?? 0;
    for (let start = 0; start < n; ) {
      let end = start + 1;
      const prefix = Math.floor((keys[start] ?? 0) / PLACES);
      while (end < n && Math.floor((keys[end] ?? 0) / PLACES) === prefix) end++;
      if (end - start > 1) placed.subarray(start, end).sort((a, b) => comparePacked(bytes, a, b));
      start = end;
    }
    offsets.set(placed);
  } else {
    offsets.sort((a, b) => comparePacked(bytes, a, b));
  }
  // Sorted into a scratch buffer, then back in place: a million contracts split leave no second copy.
  if (sortScratch.length < bytes.length) sortScratch = new Uint8Array(bytes.length);
  const sorted = sortScratch;
  let to = 0;
  for (const at of offsets) {
    const length = packedLength(bytes, at);
    for (let i = 0; i < length; i++) sorted[to + i] = bytes[at + i] ?? 0;
    to += length;
  }
  bytes.set(sorted.subarray(0, bytes.length));
  return bytes;
}

let sortScratch = new Uint8Array(0);

/** Addresses a share sorts by number (more are sorted by comparing them, slower). */
const PLACES = 0x10000;

/**
 * The first 9 digits of a packed address as a number (missing digits as 0): equal for two
 * addresses only when {@link comparePacked} must decide, and ordered as it orders them otherwise.
 */
function prefixKey(bytes: Uint8Array, at: number): number {
  const digits = bytes[at] ?? 0;
  let key = 0;
  for (let i = 0; i < 9; i++) {
    const byte = i < digits ? (bytes[at + 1 + (i >> 1)] ?? 0) : 0;
    key = key * 16 + (i & 1 ? byte & 15 : byte >> 4);
  }
  return key;
}

function comparePacked(bytes: Uint8Array, a: number, b: number): number {
  const digitsA = bytes[a] ?? 0;
  const digitsB = bytes[b] ?? 0;
  const common = Math.min(digitsA, digitsB);
  for (let i = 0; i < common; i++) {
    const byteA = bytes[a + 1 + (i >> 1)] ?? 0;
    const byteB = bytes[b + 1 + (i >> 1)] ?? 0;
    const diff = i & 1 ? (byteA & 15) - (byteB & 15) : (byteA >> 4) - (byteB >> 4);
    if (diff !== 0) return diff;
  }
  return digitsA - digitsB;
}
