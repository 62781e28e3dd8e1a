import type { GasSponsor } from '../../platform/types.ts';
import { pageJson, paginate, readPage, sorter } from '../paging.ts';
import { checkProject, requestNetwork, type UnaryOperation } from './context.ts';

const listGasSponsors: UnaryOperation = {
  kind: 'unary',
  service: 'Relayer',
  method: 'ListGasSponsors',
  base: 'relayer',
  credential: 'accessKey',
  handle(ctx, body) {
    const network = requestNetwork(ctx, body, 'Relayer');
    checkProject(ctx, body, 'Relayer', true);
    const page = readPage(body, {
      defaultSize: 50,
      maxSize: 500,
      columns: { id: 'id', name: 'name', createdAt: 'createdAt', created_at: 'createdAt' },
      defaultSort: [{ column: 'id', order: 'ASC' }],
    });
    const sponsors = ctx.state.project.gasSponsors
      .filter((s) => s.chainId === network.chainId)
      .sort(
        sorter(page.sort, (s: GasSponsor, column) =>
          column === 'name' ? s.name : column === 'createdAt' ? (s.createdAt ?? '') : s.id,
        ),
      );
    const { items, more } = paginate(sponsors, page);
    return {
      page: pageJson(page, more, 'relayer', sponsors.length),
      gasSponsors: items.map((s) => ({ ...s, ecosystemId: 1 })),
    };
  },
};

export const relayerOperations = [listGasSponsors];
