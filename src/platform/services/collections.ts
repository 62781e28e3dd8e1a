import * as r from '../records/read.ts';
import type { CallOptions } from '../transport.ts';
import type { Collection } from '../types.ts';
import { rpc, type ServiceContext } from './context.ts';

/** Collections service (served from the metadata host). */
export class CollectionsService {
  constructor(private readonly ctx: ServiceContext) {}

  /**
   * UnpublishCollection: takes a collection of the project off the platform. Needs the secret token
   * (`Authorization: Bearer`). Never retried: a repeated request after a lost answer is for the
   * caller to decide.
   */
  async unpublishCollection(
    args: { collectionId: number; projectId?: number },
    options?: CallOptions,
  ): Promise<Collection> {
    return rpc(
      this.ctx,
      {
        baseUrl: this.ctx.endpoints.metadataUrl,
        service: 'Collections',
        method: 'UnpublishCollection',
        credential: 'bearer',
        retryable: false,
        body: { projectId: args.projectId ?? this.ctx.projectId, collectionId: args.collectionId },
        decode: (out, read) => read.one(out.collection, 'collection', r.collection),
      },
      options,
    );
  }
}
