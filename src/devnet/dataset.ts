import { type CollectionBlueprint, MARKETPLACE_WEIGHTS, NETWORK_BLUEPRINTS, OWN_MARKETPLACE } from './catalog.ts';
import { CollectionState } from './collection.ts';
import { deriveAddress, ZERO_ADDRESS } from './hex.ts';
import { hostileOverrides, MAX_UINT256_ID } from './hostile.ts';
import { Accounts, type Currency, type OrderRecord, type Side } from './model.ts';
import { OrderBook } from './orderbook.ts';
import { Prng } from './prng.ts';
import { generateProject, type ProjectData } from './project.ts';

export type Scale = 'full' | 'small';

/** The dataset's fixed clock: records are dated between these two instants. */
export const GENESIS_MS = Date.UTC(2025, 0, 1);
export const DATASET_HEAD_MS = GENESIS_MS + 300 * 86_400_000;
const DAY_MS = 86_400_000;
const BLOCK_TIME_MS = 2_000;

export const NATIVE_USD = 2_450;

export interface NetworkData {
  name: string;
  chainId: number;
  currencies: Currency[];
  /** The platform's own marketplace contract (emits the Request* events). */
  marketplaceAddress: string;
  /** Contracts of third-party marketplaces, by position in MARKETPLACE_KINDS. */
  externalMarketplaces: Map<number, string>;
  collections: CollectionState[];
  byAddress: Map<string, CollectionState>;
  book: OrderBook;
  headBlock: number;
}

export interface Dataset {
  seed: number;
  scale: Scale;
  accounts: Accounts;
  networks: NetworkData[];
  project: ProjectData;
  /** Default credentials derived from the seed. */
  accessKey: string;
  secretToken: string;
}

export interface DatasetOptions {
  seed: number;
  scale: Scale;
  projectId: number;
}

/** Generates the whole dataset. The same options always give the same data. */
export function generateDataset(options: DatasetOptions): Dataset {
  const root = new Prng(`floorwatch-devnet:${options.seed}`);
  const accounts = new Accounts();
  const accountPrng = root.fork('accounts');
  const accountCount = options.scale === 'full' ? 3_000 : 400;
  for (let i = 0; i < accountCount; i++) accounts.add(`0x${accountPrng.hex(20)}`);

  let collectionId = 1;
  const networks = NETWORK_BLUEPRINTS.map((blueprint) => {
    const prng = root.fork(`network:${blueprint.name}`);
    const label = (what: string) => `floorwatch-devnet:${options.seed}:${blueprint.chainId}:${what}`;
    const currencies: Currency[] = [
      {
        address: ZERO_ADDRESS,
        symbol: blueprint.nativeSymbol,
        name: 'Devnet Ether',
        decimals: 18,
        usd: NATIVE_USD,
        native: true,
      },
      {
        address: deriveAddress(label('currency:wrapped')),
        symbol: `W${blueprint.nativeSymbol}`,
        name: 'Wrapped Devnet Ether',
        decimals: 18,
        usd: NATIVE_USD,
        native: false,
      },
      {
        address: deriveAddress(label('currency:dusd')),
        symbol: 'DUSD',
        name: 'Devnet Dollar',
        decimals: 6,
        usd: 1,
        native: false,
      },
    ];
    const collections = blueprint.collections.map((cb, i) => {
      const collection = new CollectionState({
        id: collectionId++,
        network: blueprint.name,
        chainId: blueprint.chainId,
        address: deriveAddress(label(`collection:${cb.slug}`)),
        blueprint: scaled(cb, options.scale),
        createdAt: GENESIS_MS + i * 17 * DAY_MS,
      });
      fillTokens(collection, prng.fork(`tokens:${cb.slug}`), accounts);
      return collection;
    });
    const byAddress = new Map(collections.map((c) => [c.address, c]));
    const book = new OrderBook((address) => {
      const collection = byAddress.get(address);
      if (collection) collection.version++;
    });
    const network: NetworkData = {
      name: blueprint.name,
      chainId: blueprint.chainId,
      currencies,
      marketplaceAddress: deriveAddress(label('marketplace')),
      externalMarketplaces: new Map(
        MARKETPLACE_WEIGHTS.map(([kind]) => [kind, deriveAddress(label(`market:${kind}`))]),
      ),
      collections,
      byAddress,
      book,
      headBlock: blueprint.headBlock,
    };
    for (const collection of collections)
      fillOrders(network, collection, prng.fork(`orders:${collection.address}`), accounts);
    return network;
  });

  const keyPrng = root.fork('credentials');
  const keyBytes = new Uint8Array(26);
  keyBytes[0] = 1;
  new DataView(keyBytes.buffer).setBigUint64(1, BigInt(options.projectId));
  keyBytes.set(keyPrng.bytes(17), 9);
  return {
    seed: options.seed,
    scale: options.scale,
    accounts,
    networks,
    project: generateProject(root.fork('project'), options.projectId, networks, accounts),
    accessKey: Buffer.from(keyBytes).toString('base64url'),
    secretToken: `fwdev_${keyPrng.hex(24)}`,
  };
}

function scaled(blueprint: CollectionBlueprint, scale: Scale): CollectionBlueprint {
  if (scale === 'full' || blueprint.standard === 'ERC1155' || blueprint.size <= 50) return blueprint;
  const size = Math.max(20, Math.round(blueprint.size / 20));
  return { ...blueprint, size, maxSupply: Math.max(size, Math.round((blueprint.maxSupply ?? size) / 20)) };
}

/** Draws one value per trait with the blueprint's weights (cumulative tables for speed). */
export class TraitDrawer {
  readonly #tables: Array<{ cumulative: Float64Array; total: number; share: Float64Array; top: number }>;
  readonly #blueprint: CollectionBlueprint;

  constructor(blueprint: CollectionBlueprint) {
    this.#blueprint = blueprint;
    this.#tables = blueprint.traits.map((trait) => {
      const cumulative = new Float64Array(trait.values.length);
      let total = 0;
      trait.values.forEach(([, weight], i) => {
        total += weight;
        cumulative[i] = total;
      });
      const share = new Float64Array(trait.values.map(([, w]) => w / total));
      return { cumulative, total, share, top: Math.max(...share) };
    });
  }

  draw(prng: Prng): { traits: number[]; numeric: number[]; rarity: number } {
    let rarity = 1;
    const traits = this.#tables.map((table) => {
      const r = prng.next() * table.total;
      let i = 0;
      while (i < table.cumulative.length - 1 && (table.cumulative[i] ?? 0) <= r) i++;
      rarity *= (table.top / (table.share[i] ?? 1)) ** 0.35;
      return i;
    });
    const numeric = (this.#blueprint.numeric ?? []).map((n) => prng.int(n.min, n.max));
    return { traits, numeric, rarity: Math.min(rarity, 50) };
  }
}

/** An account index skewed towards the first accounts, so that a few wallets hold a lot. */
function holder(prng: Prng, accounts: Accounts): number {
  const r = prng.next();
  return Math.floor(accounts.size * r * r * r);
}

function fillTokens(collection: CollectionState, prng: Prng, accounts: Accounts): void {
  const blueprint = collection.blueprint;
  const drawer = new TraitDrawer(blueprint);
  collection.reserve(Math.max(blueprint.size, blueprint.maxSupply ?? 0) + 64);
  if (blueprint.standard === 'ERC721') {
    for (let i = 0; i < blueprint.size; i++) {
      const id = blueprint.hostile && i === blueprint.size - 1 ? MAX_UINT256_ID : String(i + 1);
      const { traits, numeric, rarity } = drawer.draw(prng);
      const index = collection.addToken(id, traits, numeric, rarity);
      collection.owners[index] = holder(prng, accounts);
    }
    if (blueprint.hostile) {
      hostileOverrides('/assets/broken').forEach((override, i) => {
        collection.overrides.set(i, override);
      });
    }
    collection.version = 0;
    return;
  }
  const items =
    blueprint.items ?? Array.from({ length: blueprint.size }, () => ({ name: '', supply: prng.int(5, 200) }));
  const maxSupply = Math.max(...items.map((item) => item.supply));
  items.forEach((item, i) => {
    const { traits, numeric } = drawer.draw(prng);
    const index = collection.addToken(String(i + 1), traits, numeric, Math.sqrt(maxSupply / item.supply), item.name);
    let remaining = item.supply;
    const chunk = Math.max(1, Math.ceil(item.supply / 12));
    while (remaining > 0) {
      const amount = Math.min(remaining, prng.int(1, chunk));
      collection.move(index, -1, holder(prng, accounts), BigInt(amount));
      remaining -= amount;
    }
  });
  collection.version = 0;
}

/** A USD value as an amount of the currency, rounded to four significant digits. */
export function usdToUnits(usd: number, currency: Currency): bigint {
  const amount = usd / currency.usd;
  if (!(amount > 0)) return 1n;
  const exponent = Math.floor(Math.log10(amount));
  const digits = Math.max(0, Math.min(currency.decimals, 3 - exponent));
  const text = amount.toFixed(digits);
  const [whole = '0', fraction = ''] = text.split('.');
  const units =
    BigInt(whole) * 10n ** BigInt(currency.decimals) + BigInt(fraction.padEnd(currency.decimals, '0') || '0');
  return units > 0n ? units : 1n;
}

export function unitsToUsd(units: bigint, currency: Currency): number {
  return (Number(units) / 10 ** currency.decimals) * currency.usd;
}

interface OrderDraft {
  side: Side;
  marketplace: number;
  maker: string;
  tokenIndex: number;
  currency: Currency;
  usd: number;
  quantity: bigint;
  createdAt: number;
}

function fillOrders(network: NetworkData, collection: CollectionState, prng: Prng, accounts: Accounts): void {
  const blueprint = collection.blueprint;
  const [native, wrapped, dollar] = network.currencies as [Currency, Currency, Currency];
  const marketplaceWeights = MARKETPLACE_WEIGHTS.map(([, w]) => w);
  const pickMarketplace = (own: number) =>
    prng.chance(own)
      ? OWN_MARKETPLACE
      : (MARKETPLACE_WEIGHTS[prng.weighted(marketplaceWeights)]?.[0] ?? OWN_MARKETPLACE);
  const createdAt = () => prng.int(collection.createdAt + DAY_MS, DATASET_HEAD_MS - DAY_MS);
  const drafts: OrderDraft[] = [];

  for (let index = 0; index < collection.size; index++) {
    const makers: Array<[number, bigint]> =
      collection.standard === 'ERC721'
        ? [[collection.ownerOf(index), 1n]]
        : [...(collection.balances[index] ?? new Map<number, bigint>()).entries()];
    for (const [account, balance] of makers) {
      const share = collection.standard === 'ERC721' ? blueprint.listed : blueprint.listed / 4;
      if (account < 0 || !prng.chance(share)) continue;
      const copies = prng.chance(0.12) ? 2 : 1;
      for (let c = 0; c < copies; c++) {
        drafts.push({
          side: 'listing',
          marketplace: c === 0 ? pickMarketplace(0.5) : pickMarketplace(0),
          maker: accounts.at(account),
          tokenIndex: index,
          currency: prng.chance(0.75) ? native : dollar,
          usd: blueprint.floorUsd * (collection.rarity[index] ?? 1) * prng.lognormal(0.25) * 1.15,
          quantity: collection.standard === 'ERC721' ? 1n : BigInt(prng.int(1, Number(balance < 10n ? balance : 10n))),
          createdAt: createdAt(),
        });
      }
    }
    if (prng.chance(blueprint.offered)) {
      const count = collection.standard === 'ERC721' ? prng.int(1, 3) : prng.int(1, 4);
      for (let c = 0; c < count; c++) {
        let offerer = holder(prng, accounts);
        if (collection.balanceOf(index, offerer) > 0n) offerer = (offerer + 1) % accounts.size;
        drafts.push({
          side: 'offer',
          marketplace: pickMarketplace(0.7),
          maker: accounts.at(offerer),
          tokenIndex: index,
          currency: prng.chance(0.6) ? wrapped : dollar,
          usd: blueprint.floorUsd * (collection.rarity[index] ?? 1) * (0.45 + prng.next() * 0.5),
          quantity: collection.standard === 'ERC721' ? 1n : BigInt(prng.int(1, 5)),
          createdAt: createdAt(),
        });
      }
    }
  }

  drafts.sort((a, b) => a.createdAt - b.createdAt);
  for (const draft of drafts) {
    const orderId = draft.marketplace === OWN_MARKETPLACE ? network.book.nextRequestId() : `0x${prng.hex(32)}`;
    const price = usdToUnits(draft.usd, draft.currency);
    const roll = prng.next();
    const status = roll < 0.9 ? 'active' : roll < 0.94 ? 'cancelled' : roll < 0.97 ? 'expired' : 'filled';
    const order: OrderRecord = {
      orderId,
      marketplace: draft.marketplace,
      side: draft.side,
      status,
      collectionAddress: collection.address,
      tokenIndex: draft.tokenIndex,
      tokenId: collection.tokenId(draft.tokenIndex),
      maker: draft.maker,
      currency: draft.currency,
      price,
      priceUsd: unitsToUsd(price, draft.currency),
      quantityInitial: draft.quantity,
      quantityRemaining: status === 'filled' ? 0n : draft.quantity,
      feeBps: draft.marketplace === OWN_MARKETPLACE ? 200 : 250,
      royaltyBps: 500,
      validFrom: draft.createdAt,
      validUntil: draft.createdAt + (status === 'expired' ? 7 : 3_650) * DAY_MS,
      blockNumber: network.headBlock - Math.floor((DATASET_HEAD_MS - draft.createdAt) / BLOCK_TIME_MS),
      createdAt: draft.createdAt,
      updatedAt: status === 'active' ? draft.createdAt : Math.min(DATASET_HEAD_MS, draft.createdAt + 3 * DAY_MS),
    };
    network.book.add(order);
  }
  collection.version = 0;
}
