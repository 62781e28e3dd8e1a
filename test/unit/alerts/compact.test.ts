import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  AddressSlots,
  ByteArena,
  Column,
  hashAddress,
  hashPackedAddress,
  NumberSlots,
  PackedAddresses,
  packAddress,
  TextSlots,
  unpackAddress,
} from '../../../src/alerts/compact.ts';

// Addresses of a few lengths over few digits, so that sets and deletions collide and repeat.
const address = fc
  .tuple(fc.constantFrom(1, 2, 3, 39, 40, 64), fc.nat(40))
  .map(([length, n]) => `0x${(n * 2654435761).toString(16).padStart(length, 'a').slice(0, length)}`);

describe("the rule index's compact containers (property)", () => {
  it('GIVEN any sets and deletions THEN NumberSlots holds what a Map holds', () => {
    const key = fc.oneof(fc.integer({ min: 0, max: 3000 }), fc.constantFrom(65_535, 65_536, 200_000, 4_294_967_295));
    const op = fc.oneof(fc.record({ set: key, slot: fc.nat(1_000_000) }), fc.record({ remove: key }));
    fc.assert(
      fc.property(fc.array(op, { maxLength: 3000 }), (ops) => {
        const slots = new NumberSlots();
        const reference = new Map<number, number>();
        for (const o of ops) {
          if ('set' in o) {
            slots.set(o.set, o.slot);
            reference.set(o.set, o.slot);
          } else {
            expect(slots.delete(o.remove)).toBe(reference.delete(o.remove));
          }
        }
        expect(slots.size).toBe(reference.size);
        for (const k of [...Array(3001).keys(), 65_535, 65_536, 200_000, 4_294_967_295]) {
          expect(slots.get(k)).toBe(reference.get(k));
        }
        expect([...slots.slots()].sort((a, b) => a - b)).toEqual([...reference.values()].sort((a, b) => a - b));
      }),
      { numRuns: 50 },
    );
  });

  it('GIVEN any byte strings set and deleted THEN ByteArena gives each back as set', () => {
    const op = fc.oneof(
      fc.record({ set: fc.nat(200), bytes: fc.uint8Array({ maxLength: 300 }) }),
      fc.record({ remove: fc.nat(200) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 1000 }), (ops) => {
        const arena = new ByteArena();
        const reference = new Map<number, Uint8Array>();
        for (const o of ops) {
          if ('set' in o) {
            arena.set(o.set, o.bytes);
            reference.set(o.set, o.bytes);
          } else {
            arena.delete(o.remove);
            reference.delete(o.remove);
          }
        }
        for (let slot = 0; slot <= 200; slot++) expect(arena.get(slot)).toEqual(reference.get(slot));
      }),
      { numRuns: 50 },
    );
  });

  it('GIVEN items set across chunks THEN a Column reads them back, unset ones as empty', () => {
    const column = new Column((n) => new Int32Array(n), -1);
    expect(column.get(5)).toBe(-1);
    const at = [0, 1, 1023, 1024, 5_000, 65_535, 65_536, 200_000, 131_071];
    for (const [n, i] of at.entries()) column.set(i, n);
    for (const [n, i] of at.entries()) expect(column.get(i)).toBe(n);
    expect(column.get(70_000)).toBe(-1);
    expect(column.get(10_000_000)).toBe(-1);
  });

  it('GIVEN megabytes of byte strings, most of them deleted THEN the arena compacts and gives the rest back, one longer than a chunk too', () => {
    const arena = new ByteArena();
    const bytesOf = (slot: number, size: number) => new Uint8Array(size).fill(slot % 251);
    for (let slot = 0; slot < 3_000; slot++) arena.set(slot, bytesOf(slot, 1_000 + (slot % 7)));
    arena.set(5_000, bytesOf(5_000, 3 * 1024 * 1024));
    for (let slot = 0; slot < 3_000; slot++) if (slot % 3 !== 0) arena.delete(slot);
    for (let slot = 3_000; slot < 3_100; slot++) arena.set(slot, bytesOf(slot, 500));
    for (let slot = 0; slot < 3_100; slot++) {
      const expected =
        slot >= 3_000 ? bytesOf(slot, 500) : slot % 3 === 0 ? bytesOf(slot, 1_000 + (slot % 7)) : undefined;
      expect(arena.get(slot)).toEqual(expected);
    }
    expect(arena.get(5_000)?.length).toBe(3 * 1024 * 1024);
    arena.delete(5_000);
    expect(arena.get(5_000)).toBeUndefined();
  });

  it('GIVEN any adds and deletions of addresses THEN AddressSlots finds each held one, in either case, and no other', () => {
    const op = fc.oneof(fc.record({ add: address }), fc.record({ remove: address }));
    fc.assert(
      fc.property(fc.array(op, { maxLength: 2000 }), (ops) => {
        const slots = new AddressSlots();
        const reference = new Map<string, number>();
        for (const o of ops) {
          if ('add' in o) {
            const slot = slots.add(o.add);
            expect(slot).toBeDefined();
            if (reference.has(o.add)) expect(slot).toBe(reference.get(o.add));
            reference.set(o.add, slot as number);
          } else {
            const slot = reference.get(o.remove);
            if (slot !== undefined) slots.delete(slot);
            reference.delete(o.remove);
          }
        }
        expect(slots.size).toBe(reference.size);
        for (const [held, slot] of reference) {
          expect(slots.get(held)).toBe(slot);
          expect(slots.get(held.toUpperCase().replace('0X', '0x'))).toBe(slot);
          expect(slots.address(slot)).toBe(held);
        }
        expect([...slots.slots()].sort((a, b) => a - b)).toEqual([...reference.values()].sort((a, b) => a - b));
        for (let n = 0; n < 50; n++) {
          const other = `0x${n.toString(16)}ff`;
          if (!reference.has(other)) expect(slots.get(other)).toBeUndefined();
        }
      }),
      { numRuns: 50 },
    );
  });

  it('GIVEN thousands of addresses added and half of them deleted THEN the table grows and still finds each', () => {
    const slots = new AddressSlots();
    const all = Array.from({ length: 5_000 }, (_, n) => `0x${n.toString(16).padStart(40, '0')}`);
    const given = all.map((a) => slots.add(a) as number);
    expect(new Set(given).size).toBe(5_000);
    for (let n = 0; n < all.length; n += 2) slots.delete(given[n] as number);
    expect(slots.size).toBe(2_500);
    for (const [n, a] of all.entries()) expect(slots.get(a)).toBe(n % 2 ? given[n] : undefined);
    // Freed slots are given again.
    const again = slots.add(`0x${'f'.repeat(40)}`) as number;
    expect(given.filter((_, n) => n % 2 === 0)).toContain(again);
  });

  it('GIVEN any texts added and deleted THEN TextSlots finds each held one and no other', () => {
    const text = fc.oneof(
      fc.constantFrom('discord:1', 'telegram:-100', 'console:a:b', ''),
      fc.string({ maxLength: 40 }),
    );
    const op = fc.oneof(fc.record({ add: text }), fc.record({ remove: text }));
    fc.assert(
      fc.property(fc.array(op, { maxLength: 1500 }), (ops) => {
        const slots = new TextSlots();
        const reference = new Map<string, number>();
        for (const o of ops) {
          if ('add' in o) {
            const slot = slots.add(o.add);
            if (reference.has(o.add)) expect(slot).toBe(reference.get(o.add));
            reference.set(o.add, slot);
          } else {
            const slot = reference.get(o.remove);
            if (slot !== undefined) slots.delete(slot);
            reference.delete(o.remove);
          }
        }
        expect(slots.size).toBe(reference.size);
        for (const [held, slot] of reference) {
          expect(slots.get(held)).toBe(slot);
          // Lone surrogates do not survive UTF-8; chat keys have none.
          expect(slots.text(slot)).toBe(new TextDecoder().decode(new TextEncoder().encode(held)));
        }
        if (!reference.has('never added')) expect(slots.get('never added')).toBeUndefined();
      }),
      { numRuns: 50 },
    );
  });

  it('refuses what is not a hex address', () => {
    const slots = new AddressSlots();
    for (const text of ['', '0x', 'abc', '0xg1', `0x${'a'.repeat(256)}`, '0X12']) {
      expect(slots.add(text)).toBeUndefined();
      expect(slots.get(text)).toBeUndefined();
      expect(packAddress(text)).toBeUndefined();
    }
    expect(() => PackedAddresses.of(['0x12', 'not an address'])).toThrow(/not a hex address: not an address/);
  });

  it('GIVEN any addresses THEN PackedAddresses gives them back lower-case, in order, as JSON too', () => {
    fc.assert(
      fc.property(fc.array(address, { maxLength: 300 }), (addresses) => {
        const packed = PackedAddresses.of(addresses.map((a, i) => (i % 2 ? a.toUpperCase().replace('0X', '0x') : a)));
        expect(packed.length).toBe(addresses.length);
        expect([...packed]).toEqual(addresses);
        expect(JSON.parse(JSON.stringify({ contractAddresses: packed }))).toEqual({ contractAddresses: addresses });
        for (const a of addresses) expect(unpackAddress(packAddress(a) as Uint8Array)).toBe(a);
      }),
      { numRuns: 100 },
    );
  });

  it('GIVEN any addresses split by any rule THEN each share holds its addresses sorted, and all are kept', () => {
    fc.assert(
      fc.property(fc.array(address, { maxLength: 300 }), fc.integer({ min: 1, max: 7 }), (addresses, count) => {
        const shareOf = (a: string) => a.length % count;
        const shares = PackedAddresses.of(addresses).split(count, (bytes, at) => shareOf(unpackAddress(bytes, at)));
        for (const share of shares) {
          const list = [...share];
          expect(list.length).toBe(share.length);
          expect(list).toEqual([...list].sort());
          expect(new Set(list.map(shareOf)).size).toBe(1);
        }
        expect(shares.flatMap((share) => [...share]).sort()).toEqual([...addresses].sort());
      }),
      { numRuns: 100 },
    );
  });

  it('GIVEN any address, in any case THEN its hash is the same from its text and from its packed bytes', () => {
    fc.assert(
      fc.property(address, fc.boolean(), (a, upper) => {
        const text = upper ? `0x${a.slice(2).toUpperCase()}` : a;
        const packed = packAddress(text) as Uint8Array;
        expect(hashPackedAddress(packed, 0)).toBe(hashAddress(a.toLowerCase()));
        expect(hashAddress(text)).toBe(hashAddress(a.toLowerCase()));
      }),
      { numRuns: 300 },
    );
    // FNV-1a of "0x00", computed by hand.
    let expected = 0x811c9dc5;
    for (const c of '0x00') expected = Math.imul(expected ^ c.charCodeAt(0), 0x01000193) >>> 0;
    expect(hashAddress('0x00')).toBe(expected);
  });

  it('lists the addresses held and more, packed', () => {
    const slots = new AddressSlots();
    const held = ['0x01', '0xab', '0xabc'];
    for (const a of held) slots.add(a);
    slots.delete(slots.get('0xab') as number);
    expect([...slots.list(['0xff'])].sort()).toEqual(['0x01', '0xabc', '0xff']);
    expect(slots.list().length).toBe(2);
    const shares = slots.list(['0xff', '0x02']).split(2, (bytes, at) => unpackAddress(bytes, at).length % 2);
    expect(shares.map((share) => [...share])).toEqual([['0x01', '0x02', '0xff'], ['0xabc']]);
  });
});
