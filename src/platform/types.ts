/**
 * Records of the platform's RPC API (shared/spec/platform-api.md), with the extra fields that real
 * deployments send (shared/reference/wire-protocol.md) typed as optional.
 *
 * Field names are the spec's. Where the wire spells a key differently (`image_data` for `imageData`,
 * `bytecode_hash` for `bytecodeHash`, ...) the client normalises responses to these names, so code
 * above the client never sees two spellings. Values that real servers send as `null` when absent are
 * typed `| null` only where that null carries meaning; elsewhere the client drops them.
 */

/** Amounts, quantities and token ids travel as decimal strings. */
export type BigIntString = string;
/** ISO 8601 / RFC 3339 timestamp. */
export type Timestamp = string;

// ---------------------------------------------------------------------------------------------
// Enumerations

/** The twelve marketplace kinds, in wire order, by their real names (wire-protocol.md §8 #19). */
export const MARKETPLACE_KINDS = [
  'unknown',
  'sequence_marketplace_v1',
  'sequence_marketplace_v2',
  'blur',
  'zerox',
  'opensea',
  'looks_rare',
  'x2y2',
  'alienswap',
  'payment_processor',
  'mintify',
  'magic_eden',
] as const;
export type MarketplaceKind = (typeof MARKETPLACE_KINDS)[number];

/** The spec's stand-in names for the same twelve positions. */
export const SPEC_MARKETPLACE_KINDS = [
  'unknown',
  'service_marketplace_v1',
  'service_marketplace_v2',
  'external_marketplace_1',
  'external_marketplace_2',
  'external_marketplace_3',
  'external_marketplace_4',
  'external_marketplace_5',
  'external_marketplace_6',
  'external_marketplace_7',
  'external_marketplace_8',
  'external_marketplace_9',
] as const;
export type SpecMarketplaceKind = (typeof SPEC_MARKETPLACE_KINDS)[number];

/** What callers may pass: a real name, a spec stand-in name, or the position. */
export type MarketplaceKindInput = MarketplaceKind | SpecMarketplaceKind | number;

export const ORDER_SIDES = ['unknown', 'listing', 'offer'] as const;
export type OrderSide = (typeof ORDER_SIDES)[number];

export const ORDER_STATUSES = [
  'unknown',
  'active',
  'inactive',
  'expired',
  'cancelled',
  'filled',
  'decimals_missing',
] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

/** Wallet kinds on the wire; the spec's stand-in `service` is sent as `sequence`. */
export const WALLET_KINDS = ['unknown', 'sequence'] as const;
export type WalletKind = (typeof WALLET_KINDS)[number];
export type WalletKindInput = WalletKind | 'service' | number;

/** Contract types of SearchMetadata (metadata schema). */
export const CONTRACT_TYPES = ['UNKNOWN', 'ERC20', 'ERC721', 'ERC1155', 'ERC6909', 'MISC'] as const;
export type ContractType = (typeof CONTRACT_TYPES)[number];

export const PROPERTY_TYPES = ['INT', 'STRING', 'ARRAY', 'GENERIC'] as const;
export type PropertyType = (typeof PROPERTY_TYPES)[number];

export type SortOrder = 'ASC' | 'DESC';

export const STEP_TYPES = [
  'unknown',
  'tokenApproval',
  'buy',
  'sell',
  'createListing',
  'createOffer',
  'signEIP712',
  'signEIP191',
  'cancel',
] as const;
export type StepType = (typeof STEP_TYPES)[number];

// ---------------------------------------------------------------------------------------------
// Paging

export interface SortBy {
  column: string;
  order?: SortOrder;
}

/** Page object of requests and responses. Marketplace pages carry only page, pageSize, more, sort. */
export interface Page {
  page?: number;
  pageSize?: number;
  more?: boolean;
  sort?: SortBy[];
  /** Indexer, builder and relayer pages. */
  column?: string;
  before?: unknown;
  after?: unknown;
  /** Older relayer pages only. */
  totalRecords?: number;
}

// ---------------------------------------------------------------------------------------------
// Marketplace

export interface FeeEntry {
  kind: string;
  recipientAddress: string;
  bps: number;
}

/** One record for listings, offers and orders. */
export interface Order {
  orderId: string;
  chainId: number;
  collectionContractAddress: string;
  createdBy: string;
  priceAmount: BigIntString;
  priceAmountFormatted: string;
  priceAmountNet: BigIntString;
  priceAmountNetFormatted: string;
  priceCurrencyAddress: string;
  priceDecimals: number;
  priceUSD: number;
  priceUSDFormatted: string;
  quantityInitial: BigIntString;
  quantityInitialFormatted: string;
  quantityRemaining: BigIntString;
  quantityRemainingFormatted: string;
  quantityAvailable: BigIntString;
  quantityAvailableFormatted: string;
  quantityDecimals: number;
  feeBps: number;
  feeBreakdown: FeeEntry[];
  validFrom: Timestamp;
  validUntil: Timestamp;
  blockNumber: number;
  createdAt: Timestamp;
  updatedAt: Timestamp;
  originName?: string;
  /** Absent for collection-wide offers. */
  tokenId?: string;
  orderCreatedAt?: Timestamp;
  orderUpdatedAt?: Timestamp;
  deletedAt?: Timestamp;
  /** In the spec; never sent by real servers. */
  id?: number;
  collectionId?: number;
  collectibleId?: number;
  /** Real servers only. */
  marketplace?: MarketplaceKind;
  side?: OrderSide;
  status?: OrderStatus;
  slug?: string;
}

export interface OrderFilter {
  createdBy?: string[];
  marketplace?: MarketplaceKindInput[];
  currencies?: string[];
}

export interface Asset {
  id: number;
  collectionId: number;
  tokenId?: string;
  metadataField?: string;
  url?: string;
  filename?: string;
  filesize?: number;
  mimeType?: string;
  width?: number;
  height?: number;
  updatedAt?: Timestamp;
}

/** Trait as found in `attributes`: free-form objects, usually `{trait_type, value}`. */
export type TokenAttribute = Record<string, unknown>;

export interface TokenMetadata {
  tokenId: string;
  name: string;
  attributes: TokenAttribute[];
  description?: string;
  image?: string;
  video?: string;
  audio?: string;
  properties?: Record<string, unknown>;
  /** Wire key `image_data`. */
  imageData?: string;
  /** Wire key `external_url`. */
  externalUrl?: string;
  /** Wire key `background_color`. */
  backgroundColor?: string;
  /** Wire key `animation_url`. */
  animationUrl?: string;
  decimals?: number;
  updatedAt?: Timestamp;
  assets?: Asset[];
  /** SearchMetadata (and real indexer) results only. */
  queuedAt?: Timestamp;
  lastFetched?: Timestamp;
  /** Real servers only. */
  chainId?: number;
  contractAddress?: string;
  source?: string;
  status?: string;
}

export interface PropertyFilter {
  name: string;
  type: PropertyType | string;
  min: number | null;
  max: number | null;
  values: unknown[];
}

export interface PriceFilter {
  contractAddress: string;
  min?: BigIntString;
  max?: BigIntString;
}

/** Filter of ListCollectibles (wire-protocol.md §3.8). */
export interface CollectiblesFilter {
  includeEmpty?: boolean;
  searchText?: string;
  properties?: Array<Pick<PropertyFilter, 'name'> & Partial<Omit<PropertyFilter, 'name'>>>;
  marketplaces?: MarketplaceKindInput[];
  inAccounts?: string[];
  notInAccounts?: string[];
  ordersCreatedBy?: string[];
  ordersNotCreatedBy?: string[];
  inCurrencyAddresses?: string[];
  notInCurrencyAddresses?: string[];
  prices?: PriceFilter[];
}

export interface CollectibleOrder {
  metadata: TokenMetadata;
  order?: Order;
  listing?: Order;
  offer?: Order;
}

export interface OrderData {
  orderId: string;
  quantity: BigIntString;
  tokenId?: string;
}

export interface AdditionalFee {
  amount: BigIntString;
  receiver: string;
}

export interface GetOrdersInput {
  contractAddress: string;
  orderId: string;
  /** Required by real servers; defaults to the platform's own marketplace. */
  marketplace?: MarketplaceKindInput;
}

export interface StepSignature {
  domain: { name: string; version: string; chainId: number; verifyingContract: string };
  types: Record<string, unknown>;
  primaryType: string;
  value: Record<string, unknown>;
}

export interface StepPost {
  endpoint: string;
  method: string;
  body: unknown;
}

export interface Step {
  data: string;
  to: string;
  value: string;
  price: string;
  signature?: StepSignature;
  post?: StepPost;
  /** Real servers only. */
  id?: StepType | string;
  executeType?: string;
}

// ---------------------------------------------------------------------------------------------
// Metadata and Collections

export interface ContractInfoExtensions {
  link?: string;
  description?: string;
  ogImage?: string;
  originChainId?: number;
  originAddress?: string;
  blacklist?: boolean;
  verified?: boolean;
  verifiedBy?: string;
  featured?: boolean;
  categories?: string[];
  ogName?: string;
  featureIndex?: number;
}

export interface ContractInfo {
  chainId: number;
  address: string;
  name: string;
  type: string;
  symbol: string;
  logoURI?: string;
  deployed?: boolean;
  bytecodeHash?: string;
  extensions?: ContractInfoExtensions;
  contentHash?: number;
  updatedAt?: Timestamp;
  decimals?: number;
  notFound?: boolean;
  queuedAt?: Timestamp;
  source?: string;
  status?: string;
}

export interface CollectionMetadata {
  name: string;
  description?: string;
  properties?: Record<string, unknown>;
  image?: string;
  /** Wire key `external_link`. */
  externalLink?: string;
  attributes?: Record<string, unknown>[];
}

export interface Collection {
  id: number;
  projectId: number;
  metadata: CollectionMetadata;
  private: boolean;
  createdAt?: Timestamp;
  updatedAt?: Timestamp;
  deletedAt?: Timestamp;
  tokenCount?: number;
}

// ---------------------------------------------------------------------------------------------
// Indexer

export interface TokenBalance {
  contractAddress: string;
  accountAddress: string;
  balance: BigIntString;
  blockHash?: string;
  blockNumber?: number;
  chainId: number;
  uniqueCollectibles?: BigIntString;
  isSummary?: boolean;
  tokenID?: string;
  contractInfo?: ContractInfo;
  tokenMetadata?: TokenMetadata;
  /** Real servers only. */
  contractType?: string;
  balanceUSD?: string;
  priceUSD?: string;
}

export interface TokenBalancesFilter {
  contractAddresses: string[];
  accountAddresses?: string[];
  contractStatus?: 'VERIFIED' | 'UNVERIFIED' | 'ALL';
  tokenIDs?: string[];
}

/**
 * A list of addresses that is sent as a JSON array of strings but kept in another form until then
 * (the alert streams keep a million watched contracts packed, not as a million strings).
 */
export interface AddressList extends Iterable<string> {
  readonly length: number;
  toJSON(): string[];
}

export interface EventFilter {
  /** Solidity signatures, e.g. `Transfer(address indexed from, address indexed to, uint256 indexed tokenId)`. */
  events?: string[];
  contractAddresses?: string[] | AddressList;
  accounts?: string[];
  tokenIDs?: string[];
}

export interface EventDecoded {
  topicHash: string;
  eventSig: string;
  types: string[];
  names: string[];
  values: string[];
}

export interface EventLog {
  id?: number;
  uid: string;
  blockNumber: number;
  blockHash: string;
  parentBlockHash?: string;
  contractAddress: string;
  txnHash: string;
  txnIndex: number;
  txnLogIndex: number;
  ts: Timestamp;
  txnInfo?: { from: string; to: string; value: string };
  rawLog?: Record<string, unknown>;
  event?: EventDecoded;
  /** Real servers only. */
  type?: string;
  contractType?: string;
  logDataType?: string;
}

export interface ReceiptFilter {
  txnHash?: string;
  from?: string;
  to?: string;
  contractAddress?: string;
  event?: string;
}

export interface TransactionLog {
  contractAddress: string;
  topics: string[];
  data: string;
  index: number;
}

export interface TransactionReceipt {
  txnHash: string;
  txnIndex: number;
  blockHash: string;
  blockNumber: number;
  gasUsed: number;
  effectiveGasPrice: string;
  from: string;
  to: string;
  logs: TransactionLog[];
  final: boolean;
  reorged: boolean;
  /** Real servers only. */
  txnStatus?: string;
  txnType?: string;
}

// ---------------------------------------------------------------------------------------------
// Builder, Relayer, Analytics

export interface ContractSource {
  id: number;
  uid: string;
  contractType: string;
  name: string;
  description: string;
  author: string;
  license: string;
  audited: boolean;
  moreInfoUrl: string;
  disabled: boolean;
  factorySourceUid: string;
  abi: string;
  bytecode: string;
  bytecodeHash?: string;
  createdAt: Timestamp;
  updatedAt: Timestamp;
  projectId: number | null;
}

export interface Contract {
  id: number;
  projectId: number;
  contractName: string;
  contractAddress: string;
  contractType: string;
  chainId: number;
  createdAt: Timestamp;
  updatedAt: Timestamp;
  /** Real servers nest it under `contractExtensions`. */
  itemsContractAddress?: string;
  abi?: string;
  bytecode?: string;
  /** Wire key `bytecode_hash` on real servers. */
  bytecodeHash?: string;
  audienceId: number | null;
  source?: string;
  decimals?: number;
  symbol?: string;
  tags?: string[];
}

export interface ContractsFilter {
  chainId?: number;
  contractType?: string;
}

export interface Audience {
  id: number;
  projectId: number;
  name: string;
  contactCount: number;
  createdAt: Timestamp;
  updatedAt: Timestamp;
  deletedAt: Timestamp | null;
}

export interface AudienceContact {
  id: number;
  audienceId: number;
  address: string;
  name: string;
  email: string;
  createdAt?: Timestamp;
  updatedAt?: Timestamp;
}

export interface GasSponsor {
  id: number;
  gasTankId: number;
  projectId: number;
  chainId: number;
  address: string;
  name: string;
  active: boolean;
  createdAt?: Timestamp;
  updatedAt?: Timestamp;
  deletedAt?: Timestamp;
  ecosystemId?: number;
}

export interface AnalyticsFilter {
  projectId?: number;
  ecosystemId?: number;
  /** `YYYY-MM-DD`. */
  startDate: string;
  /** `YYYY-MM-DD`. */
  endDate: string;
  collections?: string[];
  tokenId?: string;
  dateInterval?: 'DAY' | 'WEEK' | 'MONTH';
}

export interface ChartPoint {
  value: number;
  label: string;
}
