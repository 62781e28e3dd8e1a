import type { CollectionBlueprint, Standard } from './catalog.ts';

/** Per-token replacements of generated metadata (the hostile collection). */
export interface TokenOverride {
  name?: string;
  description?: string;
  image?: string;
  imageData?: string;
  externalUrl?: string;
  animationUrl?: string;
}

type Undo = () => void;

function grown<T extends Uint8Array | Int32Array | Float32Array>(array: T, size: number, make: (n: number) => T): T {
  if (size <= array.length) return array;
  const next = make(size);
  next.set(array);
  return next;
}

/**
 * One collection's tokens: ids, traits (as small integers per trait, for fast filtering), owners
 * (ERC-721) or balances (ERC-1155). Every change bumps `version`, which invalidates cached views.
 */
export class CollectionState {
  readonly id: number;
  readonly network: string;
  readonly chainId: number;
  readonly address: string;
  readonly blueprint: CollectionBlueprint;
  readonly standard: Standard;
  readonly createdAt: number;
  readonly tokenIds: string[] = [];
  readonly #indexById = new Map<string, number>();
  /** Value index of each STRING trait, per token. */
  traitValues: Uint8Array[];
  /** Value of each INT trait, per token. */
  numericValues: Uint8Array[];
  /** ERC-721 owner (account index) per token; -1 when burned. */
  owners: Int32Array = new Int32Array(0);
  /** ERC-1155 balances per token: account index -> amount. */
  readonly balances: Array<Map<number, bigint>> = [];
  /** Price multiplier from trait rarity, per token. */
  rarity: Float32Array = new Float32Array(0);
  readonly itemNames: string[] = [];
  readonly overrides = new Map<number, TokenOverride>();
  version = 0;

  constructor(fields: {
    id: number;
    network: string;
    chainId: number;
    address: string;
    blueprint: CollectionBlueprint;
    createdAt: number;
  }) {
    this.id = fields.id;
    this.network = fields.network;
    this.chainId = fields.chainId;
    this.address = fields.address;
    this.blueprint = fields.blueprint;
    this.standard = fields.blueprint.standard;
    this.createdAt = fields.createdAt;
    this.traitValues = fields.blueprint.traits.map(() => new Uint8Array(0));
    this.numericValues = (fields.blueprint.numeric ?? []).map(() => new Uint8Array(0));
  }

  get name(): string {
    return this.blueprint.name;
  }

  get size(): number {
    return this.tokenIds.length;
  }

  indexOf(tokenId: string): number | undefined {
    return this.#indexById.get(tokenId);
  }

  tokenId(index: number): string {
    const id = this.tokenIds[index];
    if (id === undefined) throw new RangeError(`no token at ${index}`);
    return id;
  }

  /** Next free numeric token id. */
  nextTokenId(): string {
    let max = 0n;
    for (let i = this.tokenIds.length - 1; i >= Math.max(0, this.tokenIds.length - 4); i--) {
      const id = BigInt(this.tokenIds[i] ?? '0');
      if (id > max && id < 1_000_000_000n) max = id;
    }
    let next = max + 1n;
    while (this.#indexById.has(next.toString())) next++;
    return next.toString();
  }

  addToken(tokenId: string, traits: readonly number[], numeric: readonly number[], rarity: number, name = ''): number {
    const index = this.tokenIds.length;
    if (index >= this.rarity.length) this.#grow(Math.max(16, this.rarity.length * 2));
    this.tokenIds.push(tokenId);
    this.#indexById.set(tokenId, index);
    for (let t = 0; t < this.traitValues.length; t++) (this.traitValues[t] as Uint8Array)[index] = traits[t] ?? 0;
    for (let t = 0; t < this.numericValues.length; t++) (this.numericValues[t] as Uint8Array)[index] = numeric[t] ?? 0;
    this.rarity[index] = rarity;
    if (this.standard === 'ERC721') {
      this.owners[index] = -1;
    } else {
      this.balances.push(new Map());
      this.itemNames.push(name);
    }
    this.version++;
    return index;
  }

  /** Makes room for `capacity` tokens without reallocating on every mint. */
  reserve(capacity: number): void {
    if (capacity > this.rarity.length) this.#grow(capacity);
  }

  #grow(capacity: number): void {
    this.traitValues = this.traitValues.map((array) => grown(array, capacity, (n) => new Uint8Array(n)));
    this.numericValues = this.numericValues.map((array) => grown(array, capacity, (n) => new Uint8Array(n)));
    this.rarity = grown(this.rarity, capacity, (n) => new Float32Array(n));
    if (this.standard === 'ERC721') this.owners = grown(this.owners, capacity, (n) => new Int32Array(n).fill(-1));
  }

  /** Removes the last token (undo of a mint that created it). */
  removeLastToken(): void {
    const index = this.tokenIds.length - 1;
    const id = this.tokenIds.pop();
    if (id === undefined) return;
    this.#indexById.delete(id);
    if (this.standard === 'ERC1155') {
      this.balances.pop();
      this.itemNames.pop();
    } else {
      this.owners[index] = -1;
    }
    this.version++;
  }

  ownerOf(index: number): number {
    return this.owners[index] ?? -1;
  }

  balanceOf(index: number, account: number): bigint {
    if (this.standard === 'ERC721') return this.ownerOf(index) === account ? 1n : 0n;
    return this.balances[index]?.get(account) ?? 0n;
  }

  supplyOf(index: number): bigint {
    if (this.standard === 'ERC721') return this.ownerOf(index) >= 0 ? 1n : 0n;
    let total = 0n;
    for (const amount of this.balances[index]?.values() ?? []) total += amount;
    return total;
  }

  /** Whether any of `accounts` holds the token. */
  heldByAny(index: number, accounts: ReadonlySet<number>): boolean {
    if (this.standard === 'ERC721') return accounts.has(this.ownerOf(index));
    const balances = this.balances[index];
    if (!balances) return false;
    for (const account of accounts) if ((balances.get(account) ?? 0n) > 0n) return true;
    return false;
  }

  exists(index: number): boolean {
    if (index < 0 || index >= this.tokenIds.length) return false;
    return this.standard === 'ERC1155' || this.ownerOf(index) >= 0;
  }

  /**
   * Moves `amount` of a token from one account to another (-1 = the zero address: mint or burn).
   * Returns the undo.
   */
  move(index: number, from: number, to: number, amount: bigint): Undo {
    if (this.standard === 'ERC721') {
      const before = this.ownerOf(index);
      this.owners[index] = to;
      this.version++;
      return () => {
        this.owners[index] = before;
        this.version++;
      };
    }
    const balances = this.balances[index];
    if (!balances) throw new RangeError(`no token at ${index}`);
    const fromBefore = from >= 0 ? (balances.get(from) ?? 0n) : 0n;
    const toBefore = to >= 0 ? (balances.get(to) ?? 0n) : 0n;
    if (from >= 0) setOrDelete(balances, from, fromBefore - amount);
    if (to >= 0) setOrDelete(balances, to, (from === to ? fromBefore - amount : toBefore) + amount);
    this.version++;
    return () => {
      if (from >= 0) setOrDelete(balances, from, fromBefore);
      if (to >= 0 && to !== from) setOrDelete(balances, to, toBefore);
      this.version++;
    };
  }

  traitValue(trait: number, index: number): string {
    const blueprint = this.blueprint.traits[trait];
    const value = blueprint?.values[this.traitValues[trait]?.[index] ?? 0];
    return value?.[0] ?? '';
  }

  numericValue(trait: number, index: number): number {
    return this.numericValues[trait]?.[index] ?? 0;
  }

  tokenName(index: number): string {
    const override = this.overrides.get(index)?.name;
    if (override !== undefined) return override;
    if (this.standard === 'ERC1155')
      return this.itemNames[index] || `${this.blueprint.tokenName} #${this.tokenId(index)}`;
    return `${this.blueprint.tokenName} #${this.tokenId(index)}`;
  }
}

function setOrDelete(map: Map<number, bigint>, key: number, value: bigint): void {
  if (value === 0n) map.delete(key);
  else map.set(key, value);
}
