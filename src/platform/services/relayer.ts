import { expandTemplate } from '../networks.ts';
import * as n from '../normalize.ts';
import * as r from '../records/read.ts';
import type { CallOptions } from '../transport.ts';
import type { GasSponsor, Page } from '../types.ts';
import { requireProjectId, rpc, type ServiceContext } from './context.ts';

/** Relayer service of one network. */
export class RelayerService {
  constructor(private readonly ctx: ServiceContext) {}

  /** ListGasSponsors: addresses whose gas the project pays on this network. */
  async listGasSponsors(
    args: { network: string | number; projectId?: number; page?: Page },
    options?: CallOptions,
  ): Promise<{ gasSponsors: GasSponsor[]; page: Page }> {
    const network = this.ctx.networks.resolve(args.network);
    return rpc(
      this.ctx,
      {
        baseUrl: expandTemplate(this.ctx.endpoints.relayerUrl, network),
        service: 'Relayer',
        method: 'ListGasSponsors',
        credential: 'accessKey',
        body: { projectId: requireProjectId(this.ctx, args.projectId, 'ListGasSponsors'), page: args.page },
        decode: (out, read) => ({
          gasSponsors: read.list(out.gasSponsors, 'gasSponsors', r.gasSponsor),
          page: n.page(out.page),
        }),
      },
      options,
    );
  }
}
