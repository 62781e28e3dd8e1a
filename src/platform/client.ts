import { type Network, NetworkDirectory } from './networks.ts';
import { AnalyticsService } from './services/analytics.ts';
import { BuilderService } from './services/builder.ts';
import { CollectionsService } from './services/collections.ts';
import type { PlatformEndpoints, ServiceContext } from './services/context.ts';
import { IndexerService } from './services/indexer.ts';
import { MarketplaceService } from './services/marketplace.ts';
import { MetadataService } from './services/metadata.ts';
import { RelayerService } from './services/relayer.ts';
import { Transport, type TransportOptions } from './transport.ts';

export interface PlatformClientOptions extends TransportOptions {
  endpoints: PlatformEndpoints;
  networks: readonly Network[];
  /** Project for Builder, Relayer, Collections and Analytics calls that do not name one. */
  projectId?: number | undefined;
}

/**
 * Typed client for the platform's whole RPC API: one property per service, one method per
 * operation. Network-specific services take the network (name or chain id) per call.
 *
 * @example
 * const platform = new PlatformClient({ endpoints, networks: [{ name: 'polygon', chainId: 137 }], accessKey });
 * const { collectibles } = await platform.marketplace.listCollectibles({
 *   network: 'polygon', side: 'listing', contractAddress: '0x…', filter: { includeEmpty: false },
 * });
 * await platform.close();
 */
export class PlatformClient {
  readonly transport: Transport;
  readonly networks: NetworkDirectory;
  readonly endpoints: PlatformEndpoints;
  readonly metadata: MetadataService;
  readonly collections: CollectionsService;
  readonly marketplace: MarketplaceService;
  readonly indexer: IndexerService;
  readonly builder: BuilderService;
  readonly relayer: RelayerService;
  readonly analytics: AnalyticsService;

  constructor(options: PlatformClientOptions) {
    this.transport = new Transport(options);
    this.networks = new NetworkDirectory(options.networks);
    this.endpoints = options.endpoints;
    const ctx: ServiceContext = {
      transport: this.transport,
      endpoints: options.endpoints,
      networks: this.networks,
      projectId: options.projectId,
    };
    this.metadata = new MetadataService(ctx);
    this.collections = new CollectionsService(ctx);
    this.marketplace = new MarketplaceService(ctx);
    this.indexer = new IndexerService(ctx);
    this.builder = new BuilderService(ctx);
    this.relayer = new RelayerService(ctx);
    this.analytics = new AnalyticsService(ctx);
  }

  /** Closes the keep-alive connections. */
  close(): Promise<void> {
    return this.transport.close();
  }
}
