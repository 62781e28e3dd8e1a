const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/**
 * A small seeded pseudo-random generator (sfc32, seeded through splitmix32) with the helpers the
 * devnet needs. The same seed always gives the same sequence.
 */
export class Prng {
  #a: number;
  #b: number;
  #c: number;
  #d: number;

  /** A generator seeded with the first 128 bits of a hex text (such as a hash). */
  static fromHex(hex: string): Prng {
    const prng = new Prng(0);
    const digits = hex.replace(/^0x/, '').padEnd(32, '0');
    const word = (i: number) => Number.parseInt(digits.slice(i * 8, i * 8 + 8), 16) | 0;
    prng.#a = word(0);
    prng.#b = word(1);
    prng.#c = word(2);
    prng.#d = word(3) | 1;
    for (let i = 0; i < 12; i++) prng.uint32();
    return prng;
  }

  constructor(seed: number | string) {
    let h = typeof seed === 'number' ? seed >>> 0 : hashString(seed);
    const next = () => {
      h = (h + 0x9e3779b9) | 0;
      let z = h;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.#a = next();
    this.#b = next();
    this.#c = next();
    this.#d = next();
    for (let i = 0; i < 12; i++) this.uint32();
  }

  /** A derived generator: independent of how much this one has been used since. */
  fork(label: string): Prng {
    return new Prng(`${this.#a}:${this.#b}:${this.#c}:${this.#d}:${label}`);
  }

  uint32(): number {
    const t = (((this.#a + this.#b) | 0) + this.#d) | 0;
    this.#d = (this.#d + 1) | 0;
    this.#a = this.#b ^ (this.#b >>> 9);
    this.#b = (this.#c + (this.#c << 3)) | 0;
    this.#c = (this.#c << 21) | (this.#c >>> 11);
    this.#c = (this.#c + t) | 0;
    return t >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.uint32() / 4294967296;
  }

  /** Uniform integer in [min, max] (both inclusive). */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(probability: number): boolean {
    return this.next() < probability;
  }

  pick<T>(items: readonly T[]): T {
    const item = items[Math.floor(this.next() * items.length)];
    if (item === undefined) throw new RangeError('pick from an empty list');
    return item;
  }

  /** Index drawn with the given (non-negative) weights. */
  weighted(weights: readonly number[]): number {
    let total = 0;
    for (const w of weights) total += w;
    let r = this.next() * total;
    for (let i = 0; i < weights.length; i++) {
      r -= weights[i] ?? 0;
      if (r < 0) return i;
    }
    return weights.length - 1;
  }

  /** Log-normal factor around 1 with the given spread. */
  lognormal(sigma: number): number {
    const u = 1 - this.next();
    const v = this.next();
    const gauss = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
    return Math.exp(sigma * gauss);
  }

  /** `count` random bytes as lower-case hex, without `0x`. */
  hex(count: number): string {
    let out = '';
    for (let i = 0; i < count; i += 4) {
      const w = this.uint32();
      out += `${HEX[w >>> 24]}${HEX[(w >>> 16) & 255]}${HEX[(w >>> 8) & 255]}${HEX[w & 255]}`;
    }
    return count % 4 === 0 ? out : out.slice(0, count * 2);
  }

  bytes(count: number): Uint8Array {
    const out = new Uint8Array(count);
    for (let i = 0; i < count; i++) out[i] = this.uint32() & 0xff;
    return out;
  }

  /** Fisher-Yates shuffle of a copy. */
  shuffled<T>(items: readonly T[]): T[] {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      const a = out[i] as T;
      out[i] = out[j] as T;
      out[j] = a;
    }
    return out;
  }
}

/** FNV-1a 32-bit hash of a string. */
export function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
