import { OWN_MARKETPLACE } from './catalog.ts';
import { PendingTxn } from './chain.ts';
import type { CollectionState } from './collection.ts';
import { unitsToUsd, usdToUnits } from './dataset.ts';
import { errors } from './errors.ts';
import { EVENTS } from './events.ts';
import { parseUnits, ZERO_ADDRESS } from './hex.ts';
import type { Accounts, Currency, OrderRecord, Side } from './model.ts';
import type { NetworkState } from './state.ts';
import { checkEnum, In } from './validate.ts';

export const ACTIVITY_KINDS = ['sale', 'listing', 'offer', 'mint', 'transfer', 'burn', 'cancel'] as const;
export type ActivityKind = (typeof ACTIVITY_KINDS)[number];

/**
 * One transaction to mine. Every field but `kind` is optional: the devnet picks sensible values
 * (an owned token for a listing, the cheapest listing for a sale, a random account, ...).
 */
export interface ActivitySpec {
  kind: ActivityKind;
  /** Collection address. */
  collection?: string;
  tokenId?: string;
  /** Several tokens in one transaction: a sweep (sale), a batch mint or transfer. */
  tokenIds?: string[];
  /** Listing or offer: price per token in whole currency units, e.g. "1.5". */
  price?: string;
  /** Listing or offer: currency address or symbol (DEV, WDEV, DUSD); default DEV for listings, WDEV for offers. */
  currency?: string;
  quantity?: string;
  from?: string;
  to?: string;
  /** The order to fill (sale) or cancel. */
  orderId?: string;
  /** Sale: buy the `count` cheapest listings of the collection in one transaction. Mint: that many new tokens. */
  count?: number;
  /** Listing or offer: seconds from its block until it expires (default 30 days). */
  expiresIn?: number;
}

/** What one mined transaction did. */
export interface MinedTransaction {
  txnHash: string;
  kind: ActivityKind;
  collection: string;
  tokenIds: string[];
  /** Orders created, filled or cancelled. */
  orderIds: string[];
  from: string;
  to: string;
}

export type PendingSummary = Omit<MinedTransaction, 'txnHash'>;

/** Reads one activity item of a mine request; errors name the field (`activity[0].price`). */
export function parseActivity(value: unknown, path: string): ActivitySpec {
  const input = new In(value, path);
  const kindValue = input.raw('kind');
  const kind = ACTIVITY_KINDS[checkEnum(kindValue, input.at('kind'), ACTIVITY_KINDS)] as ActivityKind;
  const spec: ActivitySpec = { kind };
  const collection = input.optAddress('collection');
  if (collection !== undefined) spec.collection = collection;
  const tokenId = input.optUint('tokenId');
  if (tokenId !== undefined) spec.tokenId = tokenId;
  const tokenIds = input.optUintList('tokenIds');
  if (tokenIds !== undefined && tokenIds.length > 0) spec.tokenIds = tokenIds;
  const priceRaw = input.raw('price');
  if (priceRaw !== undefined) {
    const price = typeof priceRaw === 'number' ? String(priceRaw) : priceRaw;
    if (typeof price !== 'string' || !/^\d+(\.\d+)?$/.test(price) || Number(price) <= 0) {
      throw errors.invalidArgument(
        `${input.at('price')}: expected a positive decimal like "1.5", got ${JSON.stringify(priceRaw)}`,
      );
    }
    spec.price = price;
  }
  const currency = input.optString('currency');
  if (currency) spec.currency = currency;
  const quantity = input.optUint('quantity');
  if (quantity !== undefined) {
    if (BigInt(quantity) < 1n)
      throw errors.invalidArgument(`${input.at('quantity')}: expected at least 1, got ${quantity}`);
    spec.quantity = quantity;
  }
  const from = input.optAddress('from');
  if (from !== undefined) spec.from = from;
  const to = input.optAddress('to');
  if (to !== undefined) spec.to = to;
  const orderId = input.optString('orderId');
  if (orderId) spec.orderId = orderId;
  const count = input.optInt('count', { min: 1, max: 100 });
  if (count !== undefined) spec.count = count;
  const expiresIn = input.optInt('expiresIn', { min: 1, max: 365 * 86_400 });
  if (expiresIn !== undefined) spec.expiresIn = expiresIn;
  return spec;
}

const DAY_MS = 86_400_000;

/** The transaction an activity builds, once it has begun. */
interface Built {
  txn: PendingTxn | undefined;
}

/**
 * Applies activity to a network's state inside a transaction being built: changes the book and
 * the balances (recording the undo of each change) and emits the logs a real chain would.
 */
export class ActivityRunner {
  readonly #net: NetworkState;
  readonly #accounts: Accounts;
  #path = '';
  #now = 0;
  #blockNumber = 0;

  constructor(network: NetworkState, accounts: Accounts) {
    this.#net = network;
    this.#accounts = accounts;
  }

  /** Builds the transaction for `spec`; on an error nothing of it stays applied. */
  apply(
    spec: ActivitySpec,
    path: string,
    block: { number: number; timestampMs: number },
  ): {
    txn: PendingTxn;
    summary: PendingSummary;
  } {
    this.#path = path;
    this.#now = block.timestampMs;
    this.#blockNumber = block.number;
    const built: Built = { txn: undefined };
    try {
      const summary = this.#dispatch(spec, built);
      if (!built.txn) throw new Error(`activity ${spec.kind} built no transaction`);
      return { txn: built.txn, summary };
    } catch (error) {
      built.txn?.rollback();
      throw error;
    }
  }

  #dispatch(spec: ActivitySpec, built: Built): PendingSummary {
    switch (spec.kind) {
      case 'listing':
      case 'offer':
        return this.#createOrder(spec, spec.kind, built);
      case 'sale':
        return this.#sale(spec, built);
      case 'mint':
        return this.#mint(spec, built);
      case 'transfer':
      case 'burn':
        return this.#transfer(spec, built);
      case 'cancel':
        return this.#cancel(spec, built);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Orders

  #createOrder(spec: ActivitySpec, side: Side, built: Built): PendingSummary {
    const net = this.#net;
    const collection = this.#collection(spec, (c) => c.size > 0);
    let index: number;
    let maker: number;
    if (spec.tokenId !== undefined) {
      index = this.#token(collection, spec.tokenId, 'tokenId');
      maker = spec.from !== undefined ? this.#accounts.add(spec.from) : -1;
    } else if (side === 'listing' && spec.from !== undefined) {
      maker = this.#accounts.add(spec.from);
      const held = this.#tokensHeldBy(collection, maker);
      if (held.length === 0) this.#fail('from', `${spec.from} holds no token of ${collection.address}`);
      index = net.prng.pick(held);
    } else {
      index = this.#randomToken(collection);
      maker = spec.from !== undefined ? this.#accounts.add(spec.from) : -1;
    }
    const quantity = spec.quantity !== undefined ? BigInt(spec.quantity) : 1n;
    if (collection.standard === 'ERC721' && quantity !== 1n)
      this.#fail('quantity', 'an ERC-721 order is for quantity 1');
    if (side === 'listing') {
      if (maker < 0) maker = this.#randomHolder(collection, index);
      const balance = collection.balanceOf(index, maker);
      if (balance < quantity) {
        this.#fail(
          'from',
          `${this.#accounts.at(maker)} holds ${balance} of token ${collection.tokenId(index)}, cannot list ${quantity}`,
        );
      }
    } else if (maker < 0) {
      maker = this.#randomAccount((a) => collection.balanceOf(index, a) === 0n);
    }
    const currency = this.#currency(spec, side === 'listing' ? 0 : 1);
    let price: bigint;
    if (spec.price !== undefined) {
      const parsed = parseUnits(spec.price, currency.decimals);
      if (parsed === undefined || parsed === 0n)
        this.#fail(
          'price',
          `${spec.price} is not a positive amount of ${currency.symbol} (${currency.decimals} decimals)`,
        );
      price = parsed;
    } else {
      const level = collection.blueprint.floorUsd * (collection.rarity[index] ?? 1);
      const usd = side === 'listing' ? level * net.prng.lognormal(0.2) * 1.1 : level * (0.5 + net.prng.next() * 0.4);
      price = usdToUnits(usd, currency);
    }
    const makerAddress = this.#accounts.at(maker);
    const order: OrderRecord = {
      orderId: net.book.nextRequestId(),
      marketplace: OWN_MARKETPLACE,
      side,
      status: 'active',
      collectionAddress: collection.address,
      tokenIndex: index,
      tokenId: collection.tokenId(index),
      maker: makerAddress,
      currency,
      price,
      priceUsd: unitsToUsd(price, currency),
      quantityInitial: quantity,
      quantityRemaining: quantity,
      feeBps: 200,
      royaltyBps: 500,
      validFrom: this.#now,
      validUntil: this.#now + (spec.expiresIn === undefined ? 30 * DAY_MS : spec.expiresIn * 1000),
      blockNumber: this.#blockNumber,
      createdAt: this.#now,
      updatedAt: this.#now,
    };
    const txn = this.#begin(built, makerAddress, net.marketplaceAddress);
    txn.onUndo(net.book.add(order));
    txn.log(
      EVENTS.RequestCreated,
      net.marketplaceAddress,
      'SEQ_MARKETPLACE',
      [
        BigInt(order.orderId),
        makerAddress,
        collection.address,
        BigInt(order.tokenId),
        side === 'listing',
        quantity,
        currency.address,
        price,
        BigInt(Math.floor(order.validUntil / 1000)),
      ],
      { tokenIds: [order.tokenId], tokenContract: collection.address },
    );
    return this.#summary(side, collection, [order.tokenId], [order.orderId], txn);
  }

  #sale(spec: ActivitySpec, built: Built): PendingSummary {
    const net = this.#net;
    const fills: OrderRecord[] = [];
    let collection: CollectionState;
    if (spec.orderId !== undefined) {
      const order = net.book.get(spec.orderId);
      if (!order) this.#fail('orderId', `no order ${spec.orderId} on ${net.name}`);
      if (order.status !== 'active') this.#fail('orderId', `order ${spec.orderId} is ${order.status}`);
      collection = this.#collectionByAddress(order.collectionAddress, 'orderId');
      fills.push(order);
    } else if (spec.tokenIds !== undefined || spec.count !== undefined) {
      collection = this.#collection(spec, (c) => this.#fillableListings(c).length >= (spec.count ?? 1));
      if (spec.tokenIds !== undefined) {
        spec.tokenIds.forEach((tokenId, i) => {
          const index = this.#token(collection, tokenId, `tokenIds[${i}]`);
          const best = this.#bestFillable(collection, index, 'listing');
          if (!best)
            this.#fail(`tokenIds[${i}]`, `token ${tokenId} has no active listing on the platform's marketplace`);
          if (fills.includes(best)) this.#fail(`tokenIds[${i}]`, `token ${tokenId} is named twice`);
          fills.push(best);
        });
      } else {
        const listings = this.#fillableListings(collection);
        const count = spec.count ?? 1;
        if (listings.length < count)
          this.#fail('count', `${collection.address} has only ${listings.length} listed tokens`);
        fills.push(...listings.slice(0, count));
      }
    } else {
      collection = this.#collection(spec, (c) => this.#fillableListings(c).length > 0);
      let index: number;
      if (spec.tokenId !== undefined) {
        index = this.#token(collection, spec.tokenId, 'tokenId');
      } else {
        const listed = this.#fillableListings(collection);
        if (listed.length === 0) this.#fail('collection', `${collection.address} has no active listing to buy`);
        index = net.prng.pick(listed).tokenIndex;
      }
      const order = this.#bestFillable(collection, index, 'listing') ?? this.#bestFillable(collection, index, 'offer');
      if (!order) this.#fail('tokenId', `token ${collection.tokenId(index)} has no active listing or offer to fill`);
      fills.push(order);
    }

    const first = fills[0] as OrderRecord;
    const takerAddress =
      first.side === 'listing'
        ? (spec.to ?? this.#accounts.at(this.#randomAccount((a) => this.#accounts.at(a) !== first.maker)))
        : (spec.from ?? this.#accounts.at(this.#randomHolder(collection, first.tokenIndex)));
    const to =
      first.marketplace === OWN_MARKETPLACE
        ? net.marketplaceAddress
        : (net.externalMarketplaces.get(first.marketplace) ?? net.marketplaceAddress);
    const txn = this.#begin(built, takerAddress, to);
    const quantity = spec.quantity !== undefined ? BigInt(spec.quantity) : 1n;
    fills.forEach((order) => {
      this.#fill(
        txn,
        collection,
        order,
        takerAddress,
        takerAddress,
        quantity < order.quantityRemaining ? quantity : order.quantityRemaining,
      );
    });
    return this.#summary(
      'sale',
      collection,
      fills.map((o) => o.tokenId),
      fills.map((o) => o.orderId),
      txn,
    );
  }

  /** One order filled inside `txn`: the marketplace's RequestAccepted, the token transfer, the payment. */
  #fill(
    txn: PendingTxn,
    collection: CollectionState,
    order: OrderRecord,
    taker: string,
    receiver: string,
    quantity: bigint,
  ) {
    const net = this.#net;
    const makerIndex = this.#accounts.add(order.maker);
    const takerIndex = this.#accounts.add(taker);
    const seller = order.side === 'listing' ? makerIndex : takerIndex;
    const tokenRecipient = order.side === 'listing' ? this.#accounts.add(receiver) : makerIndex;
    const payer = order.side === 'listing' ? takerIndex : makerIndex;
    if (seller === tokenRecipient) this.#fail('to', `${this.#accounts.at(seller)} cannot trade with itself`);
    const held = collection.balanceOf(order.tokenIndex, seller);
    if (held < quantity) {
      this.#fail(
        order.side === 'listing' ? 'orderId' : 'from',
        `${this.#accounts.at(seller)} holds ${held} of token ${order.tokenId}, needs ${quantity}`,
      );
    }
    txn.onUndo(net.book.fill(order, quantity, this.#now));
    if (order.marketplace === OWN_MARKETPLACE) {
      txn.log(
        EVENTS.RequestAccepted,
        net.marketplaceAddress,
        'SEQ_MARKETPLACE',
        [BigInt(order.orderId), taker, collection.address, receiver, quantity, order.quantityRemaining],
        { tokenIds: [order.tokenId], tokenContract: collection.address },
      );
    }
    this.#move(txn, collection, order.tokenIndex, seller, tokenRecipient, quantity, txn.to);
    const total = order.price * quantity;
    if (order.currency.native) {
      txn.value += total;
    } else {
      txn.log(
        EVENTS.TransferERC20,
        order.currency.address,
        'ERC20',
        [this.#accounts.at(payer), this.#accounts.at(seller), total],
        {
          tokenIds: [],
        },
      );
    }
  }

  #cancel(spec: ActivitySpec, built: Built): PendingSummary {
    const net = this.#net;
    let order: OrderRecord;
    if (spec.orderId !== undefined) {
      const found = net.book.get(spec.orderId);
      if (!found) this.#fail('orderId', `no order ${spec.orderId} on ${net.name}`);
      if (found.status !== 'active') this.#fail('orderId', `order ${spec.orderId} is ${found.status}`);
      if (spec.from !== undefined && spec.from !== found.maker)
        this.#fail('from', `order ${found.orderId} was made by ${found.maker}`);
      order = found;
    } else {
      const wanted = (o: OrderRecord) =>
        o.marketplace === OWN_MARKETPLACE &&
        (spec.from === undefined || o.maker === spec.from) &&
        (spec.tokenId === undefined || o.tokenId === spec.tokenId);
      const collection = this.#collection(spec, (c) => this.#activeOrders(c).some(wanted));
      const candidates = this.#activeOrders(collection).filter(wanted);
      if (candidates.length === 0) this.#fail('collection', `no active order to cancel in ${collection.address}`);
      order = net.prng.pick(candidates);
    }
    const collection = this.#collectionByAddress(order.collectionAddress, 'orderId');
    const own = order.marketplace === OWN_MARKETPLACE;
    const txn = this.#begin(
      built,
      order.maker,
      own ? net.marketplaceAddress : (net.externalMarketplaces.get(order.marketplace) ?? net.marketplaceAddress),
    );
    txn.onUndo(net.book.setStatus(order, 'cancelled', this.#now));
    if (own) {
      txn.log(
        EVENTS.RequestCancelled,
        net.marketplaceAddress,
        'SEQ_MARKETPLACE',
        [BigInt(order.orderId), collection.address],
        {
          tokenIds: [order.tokenId],
          tokenContract: collection.address,
        },
      );
    }
    return this.#summary('cancel', collection, [order.tokenId], [order.orderId], txn);
  }

  // ---------------------------------------------------------------------------------------------
  // Tokens

  #mint(spec: ActivitySpec, built: Built): PendingSummary {
    const net = this.#net;
    const collection = this.#collection(
      spec,
      (c) => !c.blueprint.hostile && c.size < (c.blueprint.maxSupply ?? Number.POSITIVE_INFINITY),
    );
    const toAddress = spec.to ?? this.#accounts.at(this.#randomAccount(() => true));
    const to = this.#accounts.add(toAddress);
    const txn = this.#begin(built, toAddress, collection.address);
    const drawer = net.drawers.get(collection.address);
    const create = (tokenId: string): number => {
      const { traits, numeric, rarity } = drawer ? drawer.draw(net.prng) : { traits: [], numeric: [], rarity: 1 };
      const index = collection.addToken(tokenId, traits, numeric, rarity);
      txn.onUndo(() => collection.removeLastToken());
      return index;
    };
    let ids = spec.tokenIds ?? (spec.tokenId !== undefined ? [spec.tokenId] : undefined);
    if (collection.standard === 'ERC721') {
      if (!ids) {
        ids = [];
        for (let i = 0; i < (spec.count ?? 1); i++) {
          const id = collection.nextTokenId();
          ids.push(id);
          create(id);
          this.#move(txn, collection, collection.size - 1, -1, to, 1n, toAddress);
        }
      } else {
        ids.forEach((id, i) => {
          if (collection.indexOf(id) !== undefined)
            this.#fail(spec.tokenIds ? `tokenIds[${i}]` : 'tokenId', `token ${id} already exists`);
          const index = create(id);
          this.#move(txn, collection, index, -1, to, 1n, toAddress);
        });
      }
      return this.#summary('mint', collection, ids, [], txn);
    }
    const chosen = ids ?? [collection.tokenId(net.prng.int(0, collection.size - 1))];
    const indexes = chosen.map((id) => collection.indexOf(id) ?? create(id));
    const amounts = indexes.map(() =>
      spec.quantity !== undefined ? BigInt(spec.quantity) : BigInt(net.prng.int(1, 5)),
    );
    this.#moveMany(txn, collection, indexes, -1, to, amounts, toAddress);
    return this.#summary('mint', collection, chosen, [], txn);
  }

  #transfer(spec: ActivitySpec, built: Built): PendingSummary {
    const net = this.#net;
    const burn = spec.kind === 'burn';
    const collection = this.#collection(spec, (c) => c.size > 0 && !c.blueprint.hostile);
    let indexes: number[];
    let from: number;
    const ids = spec.tokenIds ?? (spec.tokenId !== undefined ? [spec.tokenId] : undefined);
    if (ids) {
      indexes = ids.map((id, i) => this.#token(collection, id, spec.tokenIds ? `tokenIds[${i}]` : 'tokenId'));
      from =
        spec.from !== undefined ? this.#accounts.add(spec.from) : this.#randomHolder(collection, indexes[0] as number);
    } else if (spec.from !== undefined) {
      from = this.#accounts.add(spec.from);
      const held = this.#tokensHeldBy(collection, from);
      if (held.length === 0) this.#fail('from', `${spec.from} holds no token of ${collection.address}`);
      indexes = [net.prng.pick(held)];
    } else {
      indexes = [this.#randomToken(collection)];
      from = this.#randomHolder(collection, indexes[0] as number);
    }
    const fromAddress = this.#accounts.at(from);
    const amounts = indexes.map((index, i) => {
      const amount = spec.quantity !== undefined ? BigInt(spec.quantity) : 1n;
      const held = collection.balanceOf(index, from);
      if (held < amount) {
        this.#fail(
          ids && spec.tokenIds ? `tokenIds[${i}]` : 'from',
          `${fromAddress} holds ${held} of token ${collection.tokenId(index)}, needs ${amount}`,
        );
      }
      return amount;
    });
    let to = -1;
    if (!burn) {
      to = spec.to !== undefined ? this.#accounts.add(spec.to) : this.#randomAccount((a) => a !== from);
      if (to === from) this.#fail('to', 'sender and recipient are the same account');
    }
    const txn = this.#begin(built, fromAddress, collection.address);
    this.#moveMany(txn, collection, indexes, from, to, amounts, fromAddress);
    return this.#summary(
      spec.kind,
      collection,
      indexes.map((i) => collection.tokenId(i)),
      [],
      txn,
    );
  }

  /** Moves tokens and emits Transfer (ERC-721) or TransferSingle/TransferBatch (ERC-1155). */
  #moveMany(
    txn: PendingTxn,
    collection: CollectionState,
    indexes: number[],
    from: number,
    to: number,
    amounts: bigint[],
    operator: string,
  ) {
    if (collection.standard === 'ERC721' || indexes.length === 1) {
      indexes.forEach((index, i) => {
        this.#move(txn, collection, index, from, to, amounts[i] ?? 1n, operator);
      });
      return;
    }
    indexes.forEach((index, i) => {
      txn.onUndo(collection.move(index, from, to, amounts[i] ?? 1n));
    });
    const ids = indexes.map((i) => BigInt(collection.tokenId(i)));
    txn.log(
      EVENTS.TransferBatch,
      collection.address,
      'ERC1155',
      [operator, this.#address(from), this.#address(to), ids, amounts],
      {
        tokenIds: ids.map(String),
      },
    );
    for (const index of indexes) this.#invalidateListings(txn, collection, index, from);
  }

  #move(
    txn: PendingTxn,
    collection: CollectionState,
    index: number,
    from: number,
    to: number,
    amount: bigint,
    operator: string,
  ) {
    txn.onUndo(collection.move(index, from, to, amount));
    const tokenId = collection.tokenId(index);
    if (collection.standard === 'ERC721') {
      txn.log(
        EVENTS.Transfer,
        collection.address,
        'ERC721',
        [this.#address(from), this.#address(to), BigInt(tokenId)],
        {
          tokenIds: [tokenId],
        },
      );
    } else {
      txn.log(
        EVENTS.TransferSingle,
        collection.address,
        'ERC1155',
        [operator, this.#address(from), this.#address(to), BigInt(tokenId), amount],
        { tokenIds: [tokenId] },
      );
    }
    this.#invalidateListings(txn, collection, index, from);
  }

  /** Listings of `from` that its remaining balance no longer covers become inactive. */
  #invalidateListings(txn: PendingTxn, collection: CollectionState, index: number, from: number) {
    if (from < 0) return;
    const listings = this.#net.book.side(collection.address, index, 'listing');
    if (listings.length === 0) return;
    const fromAddress = this.#accounts.at(from);
    const balance = collection.balanceOf(index, from);
    for (const order of [...listings]) {
      if (order.maker === fromAddress && order.quantityRemaining > balance) {
        txn.onUndo(this.#net.book.setStatus(order, 'inactive', this.#now));
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Choices and checks

  #begin(built: Built, from: string, to: string): PendingTxn {
    const txn = new PendingTxn(from, to);
    built.txn = txn;
    return txn;
  }

  #summary(
    kind: ActivityKind,
    collection: CollectionState,
    tokenIds: string[],
    orderIds: string[],
    txn: PendingTxn,
  ): PendingSummary {
    return { kind, collection: collection.address, tokenIds, orderIds, from: txn.from, to: txn.to };
  }

  #fail(field: string, message: string): never {
    throw errors.invalidArgument(`${this.#path}.${field}: ${message}`);
  }

  #address(account: number): string {
    return account < 0 ? ZERO_ADDRESS : this.#accounts.at(account);
  }

  #collectionByAddress(address: string, field: string): CollectionState {
    const collection = this.#net.byAddress.get(address);
    if (!collection) this.#fail(field, `no collection ${address} on ${this.#net.name}`);
    return collection;
  }

  #collection(spec: ActivitySpec, usable: (c: CollectionState) => boolean): CollectionState {
    if (spec.collection !== undefined) return this.#collectionByAddress(spec.collection, 'collection');
    const candidates = this.#net.collections.filter(usable);
    if (candidates.length === 0) this.#fail('collection', `no collection of ${this.#net.name} suits a ${spec.kind}`);
    return this.#net.prng.pick(candidates);
  }

  #token(collection: CollectionState, tokenId: string, field: string): number {
    const index = collection.indexOf(tokenId);
    if (index === undefined || !collection.exists(index))
      this.#fail(field, `token ${tokenId} does not exist in ${collection.address}`);
    return index;
  }

  #randomToken(collection: CollectionState): number {
    for (let attempt = 0; attempt < 50; attempt++) {
      const index = this.#net.prng.int(0, collection.size - 1);
      if (collection.supplyOf(index) > 0n) return index;
    }
    this.#fail('tokenId', `no token of ${collection.address} has a holder`);
  }

  #randomHolder(collection: CollectionState, index: number): number {
    if (collection.standard === 'ERC721') {
      const owner = collection.ownerOf(index);
      if (owner < 0) this.#fail('tokenId', `token ${collection.tokenId(index)} was burned`);
      return owner;
    }
    const holders = [...(collection.balances[index]?.keys() ?? [])];
    if (holders.length === 0) this.#fail('tokenId', `nobody holds token ${collection.tokenId(index)}`);
    return this.#net.prng.pick(holders);
  }

  #randomAccount(accept: (account: number) => boolean): number {
    for (let attempt = 0; attempt < 50; attempt++) {
      const account = this.#net.prng.int(0, this.#accounts.size - 1);
      if (accept(account)) return account;
    }
    return this.#accounts.add(`0x${this.#net.prng.hex(20)}`);
  }

  #tokensHeldBy(collection: CollectionState, account: number): number[] {
    const held: number[] = [];
    for (let i = 0; i < collection.size; i++) if (collection.balanceOf(i, account) > 0n) held.push(i);
    return held;
  }

  #currency(spec: ActivitySpec, fallback: number): Currency {
    if (spec.currency !== undefined) {
      const lower = spec.currency.toLowerCase();
      const found = this.#net.currencies.find((c) => c.address === lower || c.symbol.toLowerCase() === lower);
      if (!found) {
        this.#fail(
          'currency',
          `unknown currency ${spec.currency}; known: ${this.#net.currencies.map((c) => `${c.symbol} (${c.address})`).join(', ')}`,
        );
      }
      return found;
    }
    return this.#net.currencies[fallback] as Currency;
  }

  #activeOrders(collection: CollectionState): OrderRecord[] {
    const out: OrderRecord[] = [];
    for (const orders of this.#net.book.activeTokens(collection.address).values())
      out.push(...orders.listings, ...orders.offers);
    return out;
  }

  /** The best order of the platform's marketplace on one side of a token that can be filled now. */
  #bestFillable(collection: CollectionState, index: number, side: Side): OrderRecord | undefined {
    for (const order of this.#net.book.side(collection.address, index, side)) {
      if (order.marketplace !== OWN_MARKETPLACE) continue;
      if (side === 'offer' || collection.balanceOf(index, this.#accounts.indexOf(order.maker) ?? -1) >= 1n)
        return order;
    }
    return undefined;
  }

  /** For each listed token, its cheapest fillable listing of the platform's marketplace; cheapest first. */
  #fillableListings(collection: CollectionState): OrderRecord[] {
    const out: OrderRecord[] = [];
    for (const index of this.#net.book.activeTokens(collection.address).keys()) {
      const best = this.#bestFillable(collection, index, 'listing');
      if (best) out.push(best);
    }
    return out.sort((a, b) => a.priceUsd - b.priceUsd || a.orderId.localeCompare(b.orderId));
  }
}
