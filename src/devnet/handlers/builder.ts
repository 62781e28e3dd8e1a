import type { Contract, ContractSource } from '../../platform/types.ts';
import { errors } from '../errors.ts';
import { type PageRules, pageJson, paginate, readPage, sorter } from '../paging.ts';
import type { Json } from '../validate.ts';
import { checkProject, type RequestContext, type UnaryOperation } from './context.ts';

const PAGE: PageRules = {
  defaultSize: 50,
  maxSize: 500,
  columns: { id: 'id', name: 'name', contractName: 'name', createdAt: 'createdAt', created_at: 'createdAt' },
  defaultSort: [{ column: 'id', order: 'ASC' }],
};

/** A Builder contract as real servers send it: `bytecode_hash`, `contractExtensions`. */
export function contractJson(contract: Contract): Json {
  const { bytecodeHash, itemsContractAddress, ...rest } = contract;
  const out: Json = { ...rest, bytecode_hash: bytecodeHash };
  if (itemsContractAddress) out.contractExtensions = { itemsContractAddress };
  return out;
}

function sourceJson(source: ContractSource): Json {
  const { bytecodeHash: _, ...rest } = source;
  return rest;
}

const listContractSources: UnaryOperation = {
  kind: 'unary',
  service: 'Builder',
  method: 'ListContractSources',
  base: 'api',
  credential: 'accessKey',
  handle(ctx, body) {
    const projectId = checkProject(ctx, body, 'Builder', false);
    const page = readPage(body, PAGE);
    const sources = ctx.state.project.contractSources
      .filter((s) => s.projectId === null || s.projectId === projectId)
      .sort(
        sorter(page.sort, (s: ContractSource, column) =>
          column === 'name' ? s.name : column === 'createdAt' ? s.createdAt : s.id,
        ),
      );
    const { items, more } = paginate(sources, page);
    return { page: pageJson(page, more, 'indexer'), contractSources: items.map(sourceJson) };
  },
};

const listContracts: UnaryOperation = {
  kind: 'unary',
  service: 'Builder',
  method: 'ListContracts',
  base: 'api',
  credential: 'accessKey',
  handle(ctx, body) {
    checkProject(ctx, body, 'Builder', true);
    const filter = body.optObject('filter');
    const chainId = filter?.optInt('chainId', { min: 0 });
    const types = new Set([...(filter?.optStringList('contractTypes') ?? [])]);
    const single = filter?.optString('contractType');
    if (single) types.add(single);
    const sourceType = filter?.raw('contractSourceType');
    let source: string | undefined;
    if (sourceType !== undefined) {
      const names = ['LINKED', 'DEPLOYED', 'SALE'];
      if (typeof sourceType === 'number' && names[sourceType]) source = names[sourceType];
      else if (typeof sourceType === 'string' && names.includes(sourceType)) source = sourceType;
      else
        throw errors.invalidArgument(
          `filter.contractSourceType: expected LINKED or DEPLOYED, got ${JSON.stringify(sourceType)}`,
        );
    }
    const page = readPage(body, PAGE);
    const wanted = [...types].map((t) => t.toUpperCase());
    const contracts = ctx.state.project.contracts
      .filter(
        (c) =>
          (chainId === undefined || chainId === 0 || c.chainId === chainId) &&
          (wanted.length === 0 || wanted.includes(c.contractType.toUpperCase())) &&
          (source === undefined || c.source === source),
      )
      .sort(
        sorter(page.sort, (c: Contract, column) =>
          column === 'name' ? c.contractName : column === 'createdAt' ? c.createdAt : c.id,
        ),
      );
    const { items, more } = paginate(contracts, page);
    return { page: pageJson(page, more, 'indexer'), contracts: items.map(contractJson) };
  },
};

const getAudience: UnaryOperation = {
  kind: 'unary',
  service: 'Builder',
  method: 'GetAudience',
  base: 'api',
  credential: 'accessKey',
  handle(ctx: RequestContext, body) {
    checkProject(ctx, body, 'Builder', true);
    const audienceId = body.int('audienceId', { min: 1 });
    const audience = ctx.state.project.audiences.find((a) => a.id === audienceId);
    if (!audience)
      throw errors.notFound('Builder', `audienceId: no audience ${audienceId} in project ${ctx.state.projectId}`);
    return {
      audience,
      contacts: ctx.state.project.contacts.filter((c) => c.audienceId === audienceId),
      contracts: ctx.state.project.contracts.filter((c) => c.audienceId === audienceId).map(contractJson),
    };
  },
};

export const builderOperations = [listContractSources, listContracts, getAudience];
