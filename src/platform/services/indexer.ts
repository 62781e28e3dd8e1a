import { expandTemplate } from '../networks.ts';
import * as n from '../normalize.ts';
import * as r from '../records/read.ts';
import { type StreamOptions, streamRpc, streamRpcBatches } from '../stream.ts';
import type { CallOptions, RpcRequest } from '../transport.ts';
import type {
  EventFilter,
  EventLog,
  Page,
  ReceiptFilter,
  TokenBalance,
  TokenBalancesFilter,
  TransactionReceipt,
} from '../types.ts';
import { rpc, type ServiceContext, withoutUndefined } from './context.ts';

/** Indexer service: balances and the live event and receipt streams of one network. */
export class IndexerService {
  constructor(private readonly ctx: ServiceContext) {}

  /** GetTokenBalancesByContract: who holds what in the given contracts, one page. */
  async getTokenBalancesByContract(
    args: { network: string | number; filter: TokenBalancesFilter; omitMetadata?: boolean; page?: Page },
    options?: CallOptions,
  ): Promise<{ balances: TokenBalance[]; page: Page }> {
    const network = this.ctx.networks.resolve(args.network);
    return rpc(
      this.ctx,
      {
        baseUrl: expandTemplate(this.ctx.endpoints.indexerUrl, network),
        service: 'Indexer',
        method: 'GetTokenBalancesByContract',
        credential: 'accessKey',
        body: { filter: args.filter, omitMetadata: args.omitMetadata, page: args.page },
        decode: (out, read) => ({
          balances: read.list(out.balances, 'balances', r.tokenBalance),
          page: n.page(out.page),
        }),
      },
      options,
    );
  }

  /**
   * SubscribeEvents: decoded logs as they are indexed. The platform refuses a filter without
   * contracts or accounts. See {@link streamRpc} for heartbeats, reconnects and errors.
   */
  subscribeEvents(
    args: { network: string | number; filter: EventFilter },
    options?: StreamOptions,
  ): AsyncGenerator<EventLog, void, undefined> {
    return streamRpc(
      this.ctx.transport,
      this.#streamRequest(args.network, 'SubscribeEvents', args.filter),
      'log',
      r.eventLog,
      options,
      this.ctx.drops,
    );
  }

  /**
   * {@link IndexerService.subscribeEvents} a batch at a time: the logs that arrived together, in order
   * (what the alert pipeline reads: no await per log).
   */
  subscribeEventBatches(
    args: { network: string | number; filter: EventFilter },
    options?: StreamOptions,
  ): AsyncGenerator<EventLog[], void, undefined> {
    return streamRpcBatches(
      this.ctx.transport,
      this.#streamRequest(args.network, 'SubscribeEvents', args.filter),
      'log',
      r.eventLog,
      options,
      this.ctx.drops,
    );
  }

  /** SubscribeReceipts: transaction receipts with their finality (`final`) and reorg (`reorged`) state. */
  subscribeReceipts(
    args: { network: string | number; filter: ReceiptFilter },
    options?: StreamOptions,
  ): AsyncGenerator<TransactionReceipt, void, undefined> {
    return streamRpc(
      this.ctx.transport,
      this.#streamRequest(args.network, 'SubscribeReceipts', args.filter),
      'receipt',
      r.receipt,
      options,
      this.ctx.drops,
    );
  }

  #streamRequest(networkRef: string | number, method: string, filter: object): RpcRequest {
    const network = this.ctx.networks.resolve(networkRef);
    return {
      baseUrl: expandTemplate(this.ctx.endpoints.indexerUrl, network),
      service: 'Indexer',
      method,
      credential: 'accessKey',
      body: { filter: withoutUndefined(filter as Record<string, unknown>) },
      retryable: true,
    };
  }
}
