import { Chain } from './chain.ts';
import type { CollectionState } from './collection.ts';
import { type Dataset, type NetworkData, TraitDrawer } from './dataset.ts';
import { ChainHistory, type HistoryLimits } from './history.ts';
import type { Accounts, Currency } from './model.ts';
import { Prng } from './prng.ts';
import type { ProjectData } from './project.ts';

/** A network of the devnet: its dataset part, its chain and its own random source for activity. */
export interface NetworkState extends NetworkData {
  chain: Chain;
  /** The canonical blocks since the start, for the JSON-RPC endpoint. */
  history: ChainHistory;
  prng: Prng;
  drawers: Map<string, TraitDrawer>;
}

export interface StateOptions {
  finalityDepth: number;
  accessKey: string;
  secretToken: string;
  projectId: number;
  clock: () => number;
  history?: HistoryLimits;
}

/** Everything the handlers read and the miner changes. */
export class DevnetState {
  readonly dataset: Dataset;
  readonly accounts: Accounts;
  readonly networks: NetworkState[];
  readonly project: ProjectData;
  readonly accessKey: string;
  readonly secretToken: string;
  readonly projectId: number;
  readonly finalityDepth: number;
  readonly #byRef = new Map<string, NetworkState>();

  constructor(dataset: Dataset, options: StateOptions) {
    this.dataset = dataset;
    this.accounts = dataset.accounts;
    this.project = dataset.project;
    this.accessKey = options.accessKey;
    this.secretToken = options.secretToken;
    this.projectId = options.projectId;
    this.finalityDepth = options.finalityDepth;
    this.networks = dataset.networks.map((data) => {
      const chain = new Chain({
        chainId: data.chainId,
        headNumber: data.headBlock,
        seed: dataset.seed,
        finalityDepth: options.finalityDepth,
        clock: options.clock,
      });
      // Listens first: a log a stream delivers is already served by the JSON-RPC endpoint.
      const history = new ChainHistory(chain, options.history);
      return {
        ...data,
        chain,
        history,
        prng: new Prng(`floorwatch-devnet:${dataset.seed}:activity:${data.chainId}`),
        drawers: new Map(data.collections.map((c) => [c.address, new TraitDrawer(c.blueprint)])),
      };
    });
    for (const network of this.networks) {
      this.#byRef.set(network.name.toLowerCase(), network);
      this.#byRef.set(String(network.chainId), network);
    }
  }

  /** A network by name (case-insensitive) or chain id. */
  network(ref: string | number): NetworkState | undefined {
    return this.#byRef.get(String(ref).trim().toLowerCase());
  }

  collection(network: NetworkState, address: string): CollectionState | undefined {
    return network.byAddress.get(address.toLowerCase());
  }

  /** A currency by address or symbol (case-insensitive). */
  currency(network: NetworkState, ref: string): Currency | undefined {
    const lower = ref.toLowerCase();
    return network.currencies.find((c) => c.address === lower || c.symbol.toLowerCase() === lower);
  }

  describeNetworks(): string {
    return this.networks.map((n) => `${n.name} (${n.chainId})`).join(', ');
  }
}
