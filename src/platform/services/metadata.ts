import { contractTypeToWire } from '../enums.ts';
import { expandTemplate } from '../networks.ts';
import * as r from '../records/read.ts';
import type { CallOptions } from '../transport.ts';
import type { ContractInfo, ContractType, PropertyFilter, TokenMetadata } from '../types.ts';
import { rpc, type ServiceContext } from './context.ts';

export interface SearchMetadataArgs {
  /** Free text: a collection or token name. */
  filter: string;
  /** Restricts results to one network (name or chain id). */
  network?: string | number;
  types?: Array<ContractType | number>;
  excludeTokenMetadata?: boolean;
}

export interface SearchMetadataResult {
  tokenMetadata: TokenMetadata[];
  contractInfo: ContractInfo[];
}

/** Metadata service: collection attribute filters and text search. */
export class MetadataService {
  constructor(private readonly ctx: ServiceContext) {}

  /** TokenCollectionFilters: the traits of a collection and their values. */
  async tokenCollectionFilters(
    args: { network: string | number; contractAddress: string },
    options?: CallOptions,
  ): Promise<PropertyFilter[]> {
    const network = this.ctx.networks.resolve(args.network);
    const chain = String(network.chainId);
    return rpc(
      this.ctx,
      {
        baseUrl: expandTemplate(this.ctx.endpoints.metadataUrl, network),
        service: 'Metadata',
        method: 'TokenCollectionFilters',
        credential: 'accessKey',
        // Real servers read `chainID`; the spec says `chainId`. Both are sent.
        body: { chainID: chain, chainId: chain, contractAddress: args.contractAddress },
        decode: (out, read) => read.list(out.filters, 'filters', r.propertyFilter),
      },
      options,
    );
  }

  /** SearchMetadata: contracts and tokens whose name matches a text. */
  async searchMetadata(args: SearchMetadataArgs, options?: CallOptions): Promise<SearchMetadataResult> {
    const network = args.network === undefined ? undefined : this.ctx.networks.resolve(args.network);
    return rpc(
      this.ctx,
      {
        baseUrl: network ? expandTemplate(this.ctx.endpoints.metadataUrl, network) : this.ctx.endpoints.metadataUrl,
        service: 'Metadata',
        method: 'SearchMetadata',
        credential: 'accessKey',
        body: {
          filter: args.filter,
          chainID: network ? String(network.chainId) : undefined,
          types: args.types?.map(contractTypeToWire),
          excludeTokenMetadata: args.excludeTokenMetadata,
        },
        decode: (out, read) => ({
          tokenMetadata: read.list(out.tokenMetadata, 'tokenMetadata', r.tokenMetadata),
          contractInfo: read.list(out.contractInfo, 'contractInfo', r.contractInfo),
        }),
      },
      options,
    );
  }
}
