import type { Network } from '../platform/networks.ts';
import type { PlatformEndpoints } from '../platform/services/context.ts';
import type { ActivitySpec } from './activity.ts';
import type { FaultSpec } from './faults.ts';
import type { MineResult, ReorgResult } from './miner.ts';
import type { Standard } from './model.ts';

/** Pino-compatible logger; the devnet logs its start, failures and (at debug) each block. */
export interface DevnetLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  debug?(obj: object, msg?: string): void;
}

/** Options of {@link startDevnet}; every one is optional. */
export interface DevnetOptions {
  /** Default 0: any free port. */
  port?: number;
  /** Default `127.0.0.1`. */
  host?: string;
  /** Seed of the dataset and of the random activity. Default 1. */
  seed?: number;
  /** Random blocks on a timer; 0 (the default) mines only on request. */
  blockIntervalMs?: number;
  /** Blank-line heartbeat of the streams. Default 10,000. */
  heartbeatIntervalMs?: number;
  /** Blocks on top of a block before its receipts are final (and it cannot be reorganised). Default 3. */
  finalityDepth?: number;
  /** Default: a v1 key (base64url of 0x01, the project id, 17 seeded bytes). */
  accessKey?: string;
  /** Default: an opaque string derived from the seed. */
  secretToken?: string;
  /** Default 16815. */
  projectId?: number;
  logger?: DevnetLogger;
  /** Blocks the JSON-RPC endpoint (`/chain/<network>`) keeps for eth_getLogs; older ones are pruned. Default 20,000. */
  historyBlocks?: number;
  /** Logs it keeps in those blocks at most; a busy chain keeps fewer blocks. Default 200,000. */
  historyLogs?: number;
  /** `small` shrinks the large collections twentyfold (but for the ERC-1155 ones). Default `full`. */
  scale?: 'full' | 'small';
  /**
   * Gives three tokens of the hostile collection images built to break drawing (devnet/hostile.ts:
   * one that takes minutes to draw, one that takes gigabytes, one that reads /dev/zero). Default false.
   */
  hostileImages?: boolean;
  /**
   * The chain's clock (ms since the epoch) that block times are taken from; never goes back (a block
   * is at least a second after its parent). Default `Date.now`: a test moves it to make blocks old.
   */
  clock?: () => number;
}

export interface DevnetCollectionInfo {
  /** Id of the collection in the Collections service (UnpublishCollection). */
  id: number;
  address: string;
  name: string;
  symbol: string;
  slug: string;
  standard: Standard;
  tokenCount: number;
  /** Unverified collections are left out of balances unless `contractStatus` is ALL or UNVERIFIED. */
  verified: boolean;
  /** Metadata built to break renderers. */
  hostile: boolean;
}

export interface DevnetCurrencyInfo {
  address: string;
  symbol: string;
  decimals: number;
  usd: number;
}

export interface DevnetNetworkInfo extends Network {
  head: { number: number; hash: string };
  /** The platform's own marketplace contract: it emits RequestCreated/Accepted/Cancelled. */
  marketplaceContract: string;
  currencies: DevnetCurrencyInfo[];
}

/** The background blocks of random activity (`POST /devnet/pause`, `POST /devnet/resume`). */
export interface ActivityState {
  /** Interval of the background blocks; 0 when the devnet mines only on request. */
  blockIntervalMs: number;
  /** True while paused, or when there are no background blocks (interval 0). */
  paused: boolean;
}

/** Addresses of the devnet's own web pages, `{network}`, `{collection}`, `{tokenId}`, `{txnHash}` standing for their parts. */
export interface DevnetPages {
  /** A token's page on the devnet's marketplace (FLOORWATCH_TOKEN_URL's form). */
  token: string;
  /** A transaction on the devnet's explorer. */
  transaction: string;
}

/** What `GET /devnet/info` answers. */
export interface DevnetInfo {
  url: string;
  endpoints: PlatformEndpoints;
  /** Ethereum JSON-RPC of each network, `{network}` standing for its name. */
  chainRpcUrl: string;
  pages: DevnetPages;
  networks: DevnetNetworkInfo[];
  /** Per network name. */
  collections: Record<string, DevnetCollectionInfo[]>;
  accessKey: string;
  secretToken: string;
  projectId: number;
  seed: number;
  scale: 'full' | 'small';
  blockIntervalMs: number;
  /** Whether the background blocks are paused (or off: interval 0). */
  paused: boolean;
  heartbeatIntervalMs: number;
  finalityDepth: number;
  /** A few holders of the dataset, the first ones holding the most. */
  sampleAccounts: string[];
  /**
   * The test wallets (devnet/wallets.ts), TEST ONLY: their keys are public. Sign with
   * `npm run devnet -- sign --wallet <index> '<message>'`.
   */
  testWallets: Array<{ index: number; kind: 'eoa' | 'contract' | 'counterfactual'; address: string }>;
}

/** A running devnet. `close()` ends every stream and connection. */
export interface Devnet {
  /** `http://127.0.0.1:PORT`. */
  readonly url: string;
  /** Base addresses to give a PlatformClient. */
  readonly endpoints: PlatformEndpoints;
  /** Ethereum JSON-RPC of each network (eth_getLogs and friends), `{network}` standing for its name. */
  readonly chainRpcUrl: string;
  readonly networks: Network[];
  readonly accessKey: string;
  readonly secretToken: string;
  readonly projectId: number;
  /** Per network name; token counts are live. */
  readonly collections: Record<string, DevnetCollectionInfo[]>;
  info(): DevnetInfo;
  /** Mines one block on `network` with exactly this activity (an empty list: an empty block). */
  mine(network: string, activity?: readonly ActivitySpec[]): Promise<MineResult>;
  /** Reorganises the last `depth` blocks of `network` (at most the blocks not yet final). */
  reorg(network: string, depth: number): Promise<ReorgResult>;
  /** Stops the background blocks of random activity (those mined on request go on), e.g. before a demo's own sale. */
  pause(): ActivityState;
  /** Starts the background blocks again, every `blockIntervalMs` (default: the interval it started with). */
  resume(blockIntervalMs?: number): ActivityState;
  /** Replaces the injected faults. */
  setFaults(spec: FaultSpec): void;
  clearFaults(): void;
  close(): Promise<void>;
}

export type { ActivityKind, ActivitySpec, MinedTransaction } from './activity.ts';
export type { FaultRule, FaultSpec } from './faults.ts';
export type { MineResult, ReorgResult } from './miner.ts';
