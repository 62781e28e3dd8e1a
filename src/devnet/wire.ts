import { MARKETPLACE_KINDS } from '../platform/types.ts';
import type { BlockRecord, LogRecord, TxnRecord } from './chain.ts';
import type { CollectionState } from './collection.ts';
import type { NetworkData } from './dataset.ts';
import type { EventDef } from './events.ts';
import { formatUnits, keccakText } from './hex.ts';
import type { OrderRecord } from './model.ts';
import type { Json } from './validate.ts';

/**
 * Renders the devnet's records as real servers put them on the wire (wire-protocol.md): enum
 * names, decimal strings for amounts, snake_case metadata keys, `null` where Go sends null.
 */
const iso = (ms: number) => new Date(ms).toISOString();

const ORIGIN_NAMES: Readonly<Record<number, string>> = {
  1: 'sequence',
  2: 'sequence',
  3: 'blur',
  5: 'opensea',
  6: 'looks_rare',
  11: 'magic_eden',
};

export function orderJson(order: OrderRecord, network: NetworkData, collection: CollectionState | undefined): Json {
  const decimals = order.currency.decimals;
  const net = (order.price * BigInt(10_000 - order.feeBps - order.royaltyBps)) / 10_000n;
  const available = order.status === 'active' ? order.quantityRemaining : 0n;
  const usd = Math.round(order.priceUsd * 100) / 100;
  const marketplaceFee = order.marketplace === 2 || order.marketplace === 1 ? network.marketplaceAddress : undefined;
  return {
    orderId: order.orderId,
    marketplace: MARKETPLACE_KINDS[order.marketplace] ?? 'unknown',
    side: order.side,
    status: order.status,
    chainId: network.chainId,
    originName: ORIGIN_NAMES[order.marketplace] ?? 'unknown',
    slug: collection?.blueprint.slug ?? '',
    collectionContractAddress: order.collectionAddress,
    tokenId: order.tokenId,
    createdBy: order.maker,
    priceAmount: order.price.toString(),
    priceAmountFormatted: formatUnits(order.price, decimals),
    priceAmountNet: net.toString(),
    priceAmountNetFormatted: formatUnits(net, decimals),
    priceCurrencyAddress: order.currency.address,
    priceDecimals: decimals,
    priceUSD: usd,
    priceUSDFormatted: usd.toFixed(2),
    quantityInitial: order.quantityInitial.toString(),
    quantityInitialFormatted: order.quantityInitial.toString(),
    quantityRemaining: order.quantityRemaining.toString(),
    quantityRemainingFormatted: order.quantityRemaining.toString(),
    quantityAvailable: available.toString(),
    quantityAvailableFormatted: available.toString(),
    quantityDecimals: 0,
    feeBps: order.feeBps,
    feeBreakdown: [
      {
        kind: 'marketplace',
        recipientAddress: marketplaceFee ?? network.externalMarketplaces.get(order.marketplace) ?? '',
        bps: order.feeBps,
      },
      { kind: 'royalty', recipientAddress: order.collectionAddress, bps: order.royaltyBps },
    ],
    validFrom: iso(order.validFrom),
    validUntil: iso(order.validUntil),
    blockNumber: order.blockNumber,
    orderCreatedAt: iso(order.createdAt),
    orderUpdatedAt: iso(order.updatedAt),
    createdAt: iso(order.createdAt),
    updatedAt: iso(order.updatedAt),
  };
}

export type MetadataFlavor = 'marketplace' | 'metadata' | 'indexer';

export function tokenImagePath(collection: CollectionState, index: number): string {
  return `/assets/${collection.network}/${collection.address}/${collection.tokenId(index)}.svg`;
}

function absolute(url: string, baseUrl: string): string {
  return url.startsWith('/') ? `${baseUrl}${url}` : url;
}

function backgroundHex(collection: CollectionState, index: number): string {
  const hue = (collection.blueprint.hue + (collection.traitValues[0]?.[index] ?? 0) * 37) % 360;
  const [r, g, b] = hslToRgb(hue, 0.45, 0.82);
  return [r, g, b].map((v) => v.toString(16).padStart(2, '0')).join('');
}

export function hslToRgb(h: number, s: number, l: number): [number, number, number] {
  const k = (n: number) => (n + h / 30) % 12;
  const a = s * Math.min(l, 1 - l);
  const f = (n: number) => l - a * Math.max(-1, Math.min(k(n) - 3, Math.min(9 - k(n), 1)));
  return [Math.round(f(0) * 255), Math.round(f(8) * 255), Math.round(f(4) * 255)];
}

export function tokenAttributes(collection: CollectionState, index: number): Json[] {
  const out: Json[] = collection.blueprint.traits.map((trait, t) => ({
    trait_type: trait.name,
    value: collection.traitValue(t, index),
  }));
  (collection.blueprint.numeric ?? []).forEach((trait, t) => {
    out.push({ trait_type: trait.name, value: collection.numericValue(t, index), display_type: 'number' });
  });
  return out;
}

export function tokenMetadataJson(
  collection: CollectionState,
  index: number,
  baseUrl: string,
  flavor: MetadataFlavor,
): Json {
  const tokenId = collection.tokenId(index);
  const override = collection.overrides.get(index) ?? {};
  const blueprint = collection.blueprint;
  const image = absolute(override.image ?? tokenImagePath(collection, index), baseUrl);
  const updatedAt = iso(collection.createdAt + 86_400_000);
  const out: Json = {};
  if (flavor !== 'marketplace') {
    out.chainId = collection.chainId;
    out.contractAddress = collection.address;
  }
  out.tokenId = tokenId;
  if (flavor !== 'marketplace') out.source = 'devnet';
  out.name = collection.tokenName(index);
  out.description =
    override.description ??
    (collection.standard === 'ERC1155'
      ? `${collection.tokenName(index)}: one of the ${collection.name}. ${blueprint.description}`
      : `${blueprint.description} This one is number ${tokenId}.`);
  out.image = image;
  out.properties = collection.standard === 'ERC1155' ? { collection: collection.name } : {};
  out.attributes = tokenAttributes(collection, index);
  if (override.imageData !== undefined) out.image_data = override.imageData;
  out.external_url = override.externalUrl ?? `https://example.invalid/${blueprint.slug}/${tokenId}`;
  if (collection.standard === 'ERC721') out.background_color = backgroundHex(collection, index);
  if (override.animationUrl !== undefined) out.animation_url = override.animationUrl;
  if (collection.standard === 'ERC1155') out.decimals = 0;
  out.updatedAt = updatedAt;
  if (override.image === undefined) {
    out.assets = [
      {
        id: collection.id * 1_000_000 + index + 1,
        collectionId: collection.id,
        tokenId,
        metadataField: 'image',
        url: image,
        filename: `${tokenId}.svg`,
        filesize: 1_400,
        mimeType: 'image/svg+xml',
        width: 512,
        height: 512,
        updatedAt,
      },
    ];
  }
  out.status = 'AVAILABLE';
  if (flavor === 'metadata') {
    out.queuedAt = null;
    out.lastFetched = updatedAt;
  }
  return out;
}

export function contractInfoJson(collection: CollectionState, baseUrl: string, flavor: 'search' | 'indexer'): Json {
  const blueprint = collection.blueprint;
  const out: Json = {
    chainId: collection.chainId,
    address: collection.address,
    source: 'devnet',
    name: collection.name,
    type: collection.standard,
    symbol: blueprint.symbol,
    logoURI: `${baseUrl}/assets/${collection.network}/${collection.address}/logo.svg`,
    deployed: true,
    bytecodeHash: keccakText(`bytecode:${collection.address}`),
    extensions: {
      link: `https://example.invalid/${blueprint.slug}`,
      description: blueprint.description,
      categories: flavor === 'search' ? [collection.standard === 'ERC1155' ? 'Gaming' : 'Art'] : undefined,
      ogImage: `${baseUrl}/assets/${collection.network}/${collection.address}/logo.svg`,
      ogName: flavor === 'search' ? collection.name : undefined,
      originChainId: collection.chainId,
      originAddress: collection.address,
      blacklist: false,
      verified: blueprint.verified,
      verifiedBy: blueprint.verified ? 'devnet' : '',
      featured: blueprint.size >= 10_000,
    },
    updatedAt: iso(collection.createdAt + 86_400_000),
    queuedAt: null,
    status: 'AVAILABLE',
  };
  if (flavor === 'search') out.notFound = false;
  return out;
}

const eventJsonParts = new WeakMap<EventDef, string>();

function eventJsonPart(def: EventDef): string {
  let part = eventJsonParts.get(def);
  if (part === undefined) {
    part = `"topicHash":"${def.topicHash}","eventSig":${JSON.stringify(def.eventSig)},"types":${JSON.stringify(def.types)},"names":${JSON.stringify(def.names)}`;
    eventJsonParts.set(def, part);
  }
  return part;
}

/** The indexer's id of a log: chain id, the first 8 bytes of the transaction hash, the log's index in its block. */
export function logUid(chainId: number, txn: TxnRecord, log: LogRecord): string {
  return `${chainId}-${txn.hash.slice(2, 18)}-${log.logIndex}`;
}

/**
 * One `{"log": EventLog}` line. Written as a template because it is the streams' hot path: every
 * field but the decoded values and the signature is a number or hex text, which needs no escaping.
 * `rawLog` carries the topics and data only (the topic count tells an ERC-20 from an ERC-721
 * Transfer); the rest of a raw log is in the record already.
 */
export function eventLogLine(
  log: LogRecord,
  txn: TxnRecord,
  block: BlockRecord,
  chainId: number,
  type: 'BLOCK_ADDED' | 'BLOCK_REMOVED' = 'BLOCK_ADDED',
): string {
  const dataType = log.def.name.startsWith('Transfer') ? 'TOKEN_TRANSFER' : 'EVENT';
  const topics = `["${log.encoded.topics.join('","')}"]`;
  return (
    `{"log":{"id":${log.id},"uid":"${logUid(chainId, txn, log)}","type":"${type}",` +
    `"blockNumber":${block.number},"blockHash":"${block.hash}","parentBlockHash":"${block.parentHash}",` +
    `"contractAddress":"${log.contractAddress}","contractType":"${log.contractType}","txnHash":"${txn.hash}",` +
    `"txnIndex":${txn.index},"txnLogIndex":${log.logIndex},"logDataType":"${dataType}","ts":"${block.iso}",` +
    `"txnInfo":{"from":"${txn.from}","to":"${txn.to}","value":"${txn.value}"},` +
    `"rawLog":{"topics":${topics},"data":"${log.encoded.data}"},` +
    `"event":{${eventJsonPart(log.def)},"values":${JSON.stringify(log.encoded.values)}}}}\n`
  );
}

export function receiptLine(txn: TxnRecord, state: { final: boolean; reorged: boolean }): string {
  const block = txn.block;
  const receipt = {
    txnHash: txn.hash,
    txnStatus: 'SUCCESSFUL',
    txnIndex: txn.index,
    txnType: 'DynamicFeeTxnType',
    blockHash: block.hash,
    blockNumber: block.number,
    gasUsed: txn.gasUsed,
    effectiveGasPrice: txn.effectiveGasPrice.toString(),
    from: txn.from,
    to: txn.to,
    logs: txn.logs.map((log) => ({
      contractAddress: log.contractAddress,
      topics: log.encoded.topics,
      data: log.encoded.data,
      index: log.logIndex,
    })),
    final: state.final,
    reorged: state.reorged,
  };
  return `${JSON.stringify({ receipt })}\n`;
}
