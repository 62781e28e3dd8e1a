import { errors } from '../errors.ts';
import type { Json } from '../validate.ts';
import type { RequestContext, UnaryOperation } from './context.ts';

const iso = (ms: number) => new Date(ms).toISOString();

const unpublishCollection: UnaryOperation = {
  kind: 'unary',
  service: 'Collections',
  method: 'UnpublishCollection',
  base: 'metadata',
  credential: 'bearer',
  handle(ctx, body) {
    const projectId = body.optInt('projectId', { min: 0 });
    if (projectId !== undefined && projectId !== 0 && projectId !== ctx.state.projectId) {
      throw errors.permissionDenied(`the token is not valid for project ${projectId}`);
    }
    const collectionId = body.int('collectionId', { min: 1 });
    const collection = ctx.state.project.collections.find((c) => c.id === collectionId);
    if (!collection)
      throw errors.notFound(
        'Collections',
        `collectionId: no collection ${collectionId} in project ${ctx.state.projectId}`,
      );
    if (!collection.private) {
      collection.private = true;
      collection.updatedAt = iso(ctx.now);
    }
    return { collection: collectionJson(ctx, collection.id) };
  },
};

/** A Collections service record as real servers send it (`external_link`, absolute image URL, live token count). */
export function collectionJson(ctx: RequestContext, id: number): Json {
  const collection = ctx.state.project.collections.find((c) => c.id === id);
  if (!collection) return {};
  const live = ctx.state.networks.flatMap((n) => n.collections).find((c) => c.id === id);
  const { externalLink, image, ...metadata } = collection.metadata;
  return {
    id: collection.id,
    projectId: collection.projectId,
    metadata: {
      ...metadata,
      image: image?.startsWith('/') ? `${ctx.baseUrl}${image}` : image,
      external_link: externalLink,
    },
    private: collection.private,
    tokenCount: live?.size ?? collection.tokenCount,
    createdAt: collection.createdAt,
    updatedAt: collection.updatedAt,
  };
}

export const collectionsOperations = [unpublishCollection];
