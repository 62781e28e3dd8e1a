import * as r from '../records/read.ts';
import type { CallOptions } from '../transport.ts';
import type { AnalyticsFilter, ChartPoint } from '../types.ts';
import { rpc, type ServiceContext, withoutUndefined } from './context.ts';

/**
 * Analytics service. Both operations are "secret" with no header named by the spec, so the client
 * sends the bearer token and the access key.
 */
export class AnalyticsService {
  constructor(private readonly ctx: ServiceContext) {}

  /** WalletsTxnSentTotal: wallets that sent transactions, per day. */
  async walletsTxnSentTotal(filter: AnalyticsFilter, options?: CallOptions): Promise<ChartPoint[]> {
    return this.#series('WalletsTxnSentTotal', 'walletStats', filter, options);
  }

  /** DailyWalletTxnConversionRate: share of wallets that transacted, per day. */
  async dailyWalletTxnConversionRate(filter: AnalyticsFilter, options?: CallOptions): Promise<ChartPoint[]> {
    return this.#series('DailyWalletTxnConversionRate', 'marketStats', filter, options);
  }

  #series(method: string, key: string, filter: AnalyticsFilter, options?: CallOptions): Promise<ChartPoint[]> {
    return rpc(
      this.ctx,
      {
        baseUrl: this.ctx.endpoints.apiUrl,
        service: 'Analytics',
        method,
        credential: 'both',
        body: { filter: withoutUndefined({ ...filter, projectId: filter.projectId ?? this.ctx.projectId }) },
        decode: (out, read) => read.list(out[key], key, r.chartPoint),
      },
      options,
    );
  }
}
