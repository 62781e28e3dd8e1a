import * as n from '../normalize.ts';
import * as r from '../records/read.ts';
import type { CallOptions } from '../transport.ts';
import type { Audience, AudienceContact, Contract, ContractSource, ContractsFilter, Page } from '../types.ts';
import { requireProjectId, rpc, type ServiceContext } from './context.ts';

export interface AudienceResult {
  audience: Audience;
  /** Empty from servers that no longer send contacts (wire-protocol.md §5.3). */
  contacts: AudienceContact[];
  contracts: Contract[];
}

/** Builder service: the project's contract sources, contracts and audiences. */
export class BuilderService {
  constructor(private readonly ctx: ServiceContext) {}

  /** ListContractSources: contract templates available to the project. */
  async listContractSources(
    args: { projectId?: number; page?: Page } = {},
    options?: CallOptions,
  ): Promise<{ contractSources: ContractSource[]; page: Page }> {
    return rpc(
      this.ctx,
      {
        baseUrl: this.ctx.endpoints.apiUrl,
        service: 'Builder',
        method: 'ListContractSources',
        credential: 'accessKey',
        body: { projectId: args.projectId ?? this.ctx.projectId, page: args.page },
        decode: (out, read) => ({
          contractSources: read.list(out.contractSources, 'contractSources', r.contractSource),
          page: n.page(out.page),
        }),
      },
      options,
    );
  }

  /** ListContracts: the project's contracts, optionally for one chain or type. */
  async listContracts(
    args: { projectId?: number; filter?: ContractsFilter; page?: Page } = {},
    options?: CallOptions,
  ): Promise<{ contracts: Contract[]; page: Page }> {
    const filter = args.filter
      ? {
          chainId: args.filter.chainId,
          contractType: args.filter.contractType,
          // Newer servers read a list of types.
          contractTypes: args.filter.contractType ? [args.filter.contractType] : undefined,
        }
      : undefined;
    return rpc(
      this.ctx,
      {
        baseUrl: this.ctx.endpoints.apiUrl,
        service: 'Builder',
        method: 'ListContracts',
        credential: 'accessKey',
        body: { projectId: requireProjectId(this.ctx, args.projectId, 'ListContracts'), filter, page: args.page },
        decode: (out, read) => ({
          contracts: read.list(out.contracts, 'contracts', r.contract),
          page: n.page(out.page),
        }),
      },
      options,
    );
  }

  /** GetAudience: an audience (allowlist) with its contacts and contracts. */
  async getAudience(args: { projectId?: number; audienceId: number }, options?: CallOptions): Promise<AudienceResult> {
    return rpc(
      this.ctx,
      {
        baseUrl: this.ctx.endpoints.apiUrl,
        service: 'Builder',
        method: 'GetAudience',
        credential: 'accessKey',
        body: { projectId: requireProjectId(this.ctx, args.projectId, 'GetAudience'), audienceId: args.audienceId },
        decode: (out, read) => ({
          audience: read.one(out.audience, 'audience', r.audience),
          contacts: read.list(out.contacts, 'contacts', r.audienceContact),
          contracts: read.list(out.contracts, 'contracts', r.contract),
        }),
      },
      options,
    );
  }
}
