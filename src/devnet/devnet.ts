import type { Network } from '../platform/networks.ts';
import type { PlatformEndpoints } from '../platform/services/context.ts';
import { type ActivitySpec, parseActivity } from './activity.ts';
import { CollectiblesIndex } from './collectibles.ts';
import { controlRoutes } from './control.ts';
import { type Dataset, generateDataset } from './dataset.ts';
import { errors } from './errors.ts';
import { type FaultSpec, Faults, parseFaultSpec } from './faults.ts';
import { HOSTILE_IMAGE_TOKENS } from './hostile.ts';
import { type MineResult, Miner, type ReorgResult } from './miner.ts';
import { RpcServer } from './server.ts';
import { DevnetState } from './state.ts';
import { StreamHub } from './streams.ts';
import type { ActivityState, Devnet, DevnetCollectionInfo, DevnetInfo, DevnetOptions } from './types.ts';
import { TEST_WALLETS } from './wallets.ts';

export const DEFAULT_PROJECT_ID = 16815;

/** The running devnet: dataset, chain, streams, faults and the HTTP server, wired together. */
export class DevnetInstance implements Devnet {
  readonly url: string;
  readonly endpoints: PlatformEndpoints;
  readonly chainRpcUrl: string;
  readonly networks: Network[];
  readonly accessKey: string;
  readonly secretToken: string;
  readonly projectId: number;
  readonly #state: DevnetState;
  readonly #server: RpcServer;
  readonly #hub: StreamHub;
  readonly #miner: Miner;
  readonly #faults: Faults;
  readonly #options: Required<Pick<DevnetOptions, 'blockIntervalMs' | 'heartbeatIntervalMs' | 'finalityDepth'>>;
  #closing: Promise<void> | undefined;
  /** The background blocks' interval now (`resume` may change it) and whether they are paused. */
  #activity: ActivityState;

  private constructor(fields: {
    url: string;
    state: DevnetState;
    server: RpcServer;
    hub: StreamHub;
    miner: Miner;
    faults: Faults;
    options: Required<Pick<DevnetOptions, 'blockIntervalMs' | 'heartbeatIntervalMs' | 'finalityDepth'>>;
  }) {
    this.url = fields.url;
    this.#state = fields.state;
    this.#server = fields.server;
    this.#hub = fields.hub;
    this.#miner = fields.miner;
    this.#faults = fields.faults;
    this.#options = fields.options;
    this.#activity = { blockIntervalMs: fields.options.blockIntervalMs, paused: fields.options.blockIntervalMs <= 0 };
    this.accessKey = fields.state.accessKey;
    this.secretToken = fields.state.secretToken;
    this.projectId = fields.state.projectId;
    this.networks = fields.state.networks.map((n) => ({ name: n.name, chainId: n.chainId }));
    this.endpoints = {
      metadataUrl: `${this.url}/metadata`,
      marketplaceUrl: `${this.url}/marketplace/{network}`,
      indexerUrl: `${this.url}/indexer/{network}`,
      relayerUrl: `${this.url}/relayer/{network}`,
      apiUrl: `${this.url}/api`,
    };
    this.chainRpcUrl = `${this.url}/chain/{network}`;
  }

  static async start(options: DevnetOptions = {}): Promise<DevnetInstance> {
    const seed = options.seed ?? 1;
    const projectId = options.projectId ?? DEFAULT_PROJECT_ID;
    const resolved = {
      blockIntervalMs: options.blockIntervalMs ?? 0,
      heartbeatIntervalMs: options.heartbeatIntervalMs ?? 10_000,
      finalityDepth: options.finalityDepth ?? 3,
    };
    const dataset = generateDataset({ seed, scale: options.scale ?? 'full', projectId });
    if (options.hostileImages) showHostileImages(dataset);
    const state = new DevnetState(dataset, {
      finalityDepth: resolved.finalityDepth,
      accessKey: options.accessKey ?? dataset.accessKey,
      secretToken: options.secretToken ?? dataset.secretToken,
      projectId,
      clock: options.clock ?? Date.now,
      history: {
        ...(options.historyBlocks !== undefined ? { blocks: options.historyBlocks } : {}),
        ...(options.historyLogs !== undefined ? { logs: options.historyLogs } : {}),
      },
    });
    const hub = new StreamHub(resolved.heartbeatIntervalMs);
    for (const network of state.networks) hub.attach(network);
    const miner = new Miner(state, options.logger);
    const faults = new Faults(seed);
    let instance: DevnetInstance | undefined;
    const server = new RpcServer({
      state,
      hub,
      faults,
      collectibles: new CollectiblesIndex(),
      control: controlRoutes({
        info: () => (instance as DevnetInstance).info(),
        mine: (network, activity) => miner.mine(miner.network(network), activity),
        reorg: (network, depth) => miner.reorg(miner.network(network), depth),
        setFaults: (rules) => faults.set(rules),
        clearFaults: () => faults.clear(),
        faults: () => faults.list(),
        pause: () => (instance as DevnetInstance).pause(),
        resume: (blockIntervalMs) => (instance as DevnetInstance).resume(blockIntervalMs),
      }),
      onError: (error, path) => options.logger?.warn({ err: error, path }, 'devnet request failed'),
      onAsset: (path) => options.logger?.debug?.({ path }, 'devnet asset served'),
    });
    const url = await server.listen(options.port ?? 0, options.host ?? '127.0.0.1');
    instance = new DevnetInstance({ url, state, server, hub, miner, faults, options: resolved });
    miner.start(resolved.blockIntervalMs);
    options.logger?.info(
      {
        url,
        networks: instance.networks,
        accessKey: instance.accessKey,
        blockIntervalMs: resolved.blockIntervalMs,
        seed,
      },
      'devnet started',
    );
    return instance;
  }

  get collections(): Record<string, DevnetCollectionInfo[]> {
    const out: Record<string, DevnetCollectionInfo[]> = {};
    for (const network of this.#state.networks) {
      out[network.name] = network.collections.map((c) => ({
        id: c.id,
        address: c.address,
        name: c.name,
        symbol: c.blueprint.symbol,
        slug: c.blueprint.slug,
        standard: c.standard,
        tokenCount: c.size,
        verified: c.blueprint.verified,
        hostile: c.blueprint.hostile === true,
      }));
    }
    return out;
  }

  info(): DevnetInfo {
    return {
      url: this.url,
      endpoints: this.endpoints,
      chainRpcUrl: this.chainRpcUrl,
      pages: {
        token: `${this.url}/market/{network}/{collection}/{tokenId}`,
        transaction: `${this.url}/explorer/{network}/tx/{txnHash}`,
      },
      networks: this.#state.networks.map((n) => ({
        name: n.name,
        chainId: n.chainId,
        head: { number: n.chain.head.number, hash: n.chain.head.hash },
        marketplaceContract: n.marketplaceAddress,
        currencies: n.currencies.map((c) => ({
          address: c.address,
          symbol: c.symbol,
          decimals: c.decimals,
          usd: c.usd,
        })),
      })),
      collections: this.collections,
      accessKey: this.accessKey,
      secretToken: this.secretToken,
      projectId: this.projectId,
      seed: this.#state.dataset.seed,
      scale: this.#state.dataset.scale,
      blockIntervalMs: this.#activity.blockIntervalMs,
      paused: this.#activity.paused,
      heartbeatIntervalMs: this.#options.heartbeatIntervalMs,
      finalityDepth: this.#options.finalityDepth,
      sampleAccounts: this.#state.accounts.addresses.slice(0, 5),
      testWallets: TEST_WALLETS.map(({ index, kind, address }) => ({ index, kind, address })),
    };
  }

  async mine(network: string, activity: readonly ActivitySpec[] = []): Promise<MineResult> {
    const specs = activity.map((spec, i) => parseActivity(spec, `activity[${i}]`));
    return this.#miner.mine(this.#miner.network(network), specs);
  }

  async reorg(network: string, depth: number): Promise<ReorgResult> {
    return this.#miner.reorg(this.#miner.network(network), depth);
  }

  pause(): ActivityState {
    this.#miner.stop();
    this.#activity = { ...this.#activity, paused: true };
    return { ...this.#activity };
  }

  resume(blockIntervalMs?: number): ActivityState {
    const interval = blockIntervalMs ?? this.#activity.blockIntervalMs;
    if (interval <= 0) {
      throw errors.invalidArgument(
        'blockIntervalMs: this devnet mines only on request (started with a block interval of 0); give the interval to resume with, e.g. {"blockIntervalMs":3000}',
      );
    }
    this.#activity = { blockIntervalMs: interval, paused: false };
    this.#miner.start(interval);
    return { ...this.#activity };
  }

  setFaults(spec: FaultSpec): void {
    this.#faults.set(parseFaultSpec(spec));
  }

  clearFaults(): void {
    this.#faults.clear();
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#miner.stop();
      this.#hub.closeAll();
      await this.#server.close();
    })();
    return this.#closing;
  }
}

/** Gives tokens of the hostile collections the images built to break drawing (hostile.ts). */
function showHostileImages(dataset: Dataset): void {
  for (const collection of dataset.networks.flatMap((network) => network.collections)) {
    if (!collection.blueprint.hostile) continue;
    for (const [index, image] of HOSTILE_IMAGE_TOKENS) {
      collection.overrides.set(index, {
        ...collection.overrides.get(index),
        image: `/assets/hostile/${image}.svg?token=${index + 1}`,
      });
    }
  }
}
