import { type Network, NetworkDirectory } from './networks.ts';
import { type DroppedRecord, RecordDrops } from './records/read.ts';
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
  /**
   * Hears of records the client dropped (a bad record of a list; stream lines have `onBadLine`): the
   * first at once, then at most one summary per `droppedRecordReportMs` with how many there were.
   */
  onDroppedRecords?: (sample: DroppedRecord, dropped: number) => void;
  /** Interval of {@link onDroppedRecords} summaries. Default 60 s; 0 reports every record. */
  droppedRecordReportMs?: number;
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
  /**
   * Records not handed out because they failed their checks (records/schemas.ts), by operation:
   * bad records of lists and bad stream lines. For /status and metrics.
   */
  readonly droppedRecords: RecordDrops;

  constructor(options: PlatformClientOptions) {
    this.transport = new Transport(options);
    this.droppedRecords = new RecordDrops(options.onDroppedRecords, options.droppedRecordReportMs);
    this.networks = new NetworkDirectory(options.networks);
    this.endpoints = options.endpoints;
    const ctx: ServiceContext = {
      transport: this.transport,
      endpoints: options.endpoints,
      networks: this.networks,
      projectId: options.projectId,
      drops: this.droppedRecords,
    };
    this.metadata = new MetadataService(ctx);
    this.collections = new CollectionsService(ctx);
    this.marketplace = new MarketplaceService(ctx);
    this.indexer = new IndexerService(ctx);
    this.builder = new BuilderService(ctx);
    this.relayer = new RelayerService(ctx);
    this.analytics = new AnalyticsService(ctx);
  }

  /** Closes the keep-alive connections; dropped records not yet reported are reported. */
  close(): Promise<void> {
    this.droppedRecords.close();
    return this.transport.close();
  }
}
