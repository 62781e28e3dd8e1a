import { CONTRACT_TYPES } from '../../platform/types.ts';
import { errors } from '../errors.ts';
import { checkEnum, type Json } from '../validate.ts';
import { contractInfoJson, tokenMetadataJson } from '../wire.ts';
import { requestNetwork, requireCollection, type UnaryOperation } from './context.ts';

const MAX_TOKEN_RESULTS = 100;

const tokenCollectionFilters: UnaryOperation = {
  kind: 'unary',
  service: 'Metadata',
  method: 'TokenCollectionFilters',
  base: 'metadata',
  credential: 'accessKey',
  handle(ctx, body) {
    const network = requestNetwork(ctx, body, 'Metadata');
    const collection = requireCollection(network, body.address('contractAddress'), 'Metadata');
    const blueprint = collection.blueprint;
    const filters: Json[] = blueprint.traits.map((trait, t) => {
      const present = new Uint8Array(trait.values.length);
      const values = collection.traitValues[t];
      for (let i = 0; i < collection.size; i++) present[values?.[i] ?? 0] = 1;
      return {
        name: trait.name,
        type: 'STRING',
        min: null,
        max: null,
        values: trait.values
          .map(([value]) => value)
          .filter((_, v) => present[v] === 1)
          .sort((a, b) => a.localeCompare(b)),
      };
    });
    for (const numeric of blueprint.numeric ?? []) {
      filters.push({ name: numeric.name, type: 'INT', min: numeric.min, max: numeric.max, values: null });
    }
    return { filters };
  },
};

const searchMetadata: UnaryOperation = {
  kind: 'unary',
  service: 'Metadata',
  method: 'SearchMetadata',
  base: 'metadata',
  credential: 'accessKey',
  handle(ctx, body) {
    const text = body.string('filter').trim().toLowerCase();
    if (text === '') throw errors.invalidArgument('filter: expected a non-empty search text');
    const hasChain = body.has('chainID') || body.has('chainId');
    const networks = hasChain ? [requestNetwork(ctx, body, 'Metadata')] : ctx.state.networks;
    const types = body
      .optList('types')
      ?.map((item) => CONTRACT_TYPES[checkEnum(item.value, item.path, CONTRACT_TYPES)]);
    const excludeTokens = body.optBool('excludeTokenMetadata') ?? false;
    const hidden = new Set(ctx.state.project.collections.filter((c) => c.private).map((c) => c.id));
    const contractInfo: Json[] = [];
    const tokenMetadata: Json[] = [];
    for (const network of networks) {
      // Payment tokens are ERC-20 contracts: found by address, symbol or name, like on the platform.
      if (!types || types.length === 0 || types.includes('ERC20')) {
        for (const currency of network.currencies) {
          if (currency.native) continue;
          const lowerName = currency.name.toLowerCase();
          if (currency.address === text || currency.symbol.toLowerCase() === text || lowerName.includes(text)) {
            contractInfo.push({
              chainId: network.chainId,
              address: currency.address,
              source: 'devnet',
              name: currency.name,
              type: 'ERC20',
              symbol: currency.symbol,
              decimals: currency.decimals,
              deployed: true,
              extensions: { verified: true, verifiedBy: 'devnet' },
              status: 'AVAILABLE',
              queuedAt: null,
            });
          }
        }
      }
      for (const collection of network.collections) {
        if (hidden.has(collection.id)) continue;
        if (types && types.length > 0 && !types.includes(collection.standard)) continue;
        const matches =
          collection.name.toLowerCase().includes(text) ||
          collection.blueprint.symbol.toLowerCase() === text ||
          collection.address === text;
        if (matches) contractInfo.push(contractInfoJson(collection, ctx.baseUrl, 'search'));
        if (excludeTokens) continue;
        for (let i = 0; i < collection.size && tokenMetadata.length < MAX_TOKEN_RESULTS; i++) {
          if (collection.tokenName(i).toLowerCase().includes(text)) {
            tokenMetadata.push(tokenMetadataJson(collection, i, ctx.baseUrl, 'metadata'));
          }
        }
      }
    }
    return { tokenMetadata, contractInfo };
  },
};

export const metadataOperations = [tokenCollectionFilters, searchMetadata];
