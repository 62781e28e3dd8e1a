import type { CollectionState } from '../collection.ts';
import { errors } from '../errors.ts';
import { parseEventFilter, parseReceiptFilter } from '../filters.ts';
import { type PageRules, pageJson, readPage } from '../paging.ts';
import type { Json } from '../validate.ts';
import { contractInfoJson, tokenMetadataJson } from '../wire.ts';
import { type RequestContext, requestNetwork, type StreamOperation, type UnaryOperation } from './context.ts';

const BALANCE_PAGE: PageRules = {
  defaultSize: 100,
  maxSize: 1_000,
  columns: { tokenId: 'tokenId', tokenID: 'tokenId', token_id: 'tokenId' },
  defaultSort: [{ column: 'tokenId', order: 'ASC' }],
};

const STATUSES = ['VERIFIED', 'UNVERIFIED', 'ALL'] as const;

const getTokenBalancesByContract: UnaryOperation = {
  kind: 'unary',
  service: 'Indexer',
  method: 'GetTokenBalancesByContract',
  base: 'indexer',
  credential: 'accessKey',
  handle(ctx: RequestContext, body) {
    const network = requestNetwork(ctx, body, 'Indexer');
    const filter = body.optObject('filter');
    const contracts = filter?.optAddressList('contractAddresses') ?? [];
    if (contracts.length === 0) {
      throw errors.invalidArgument('filter.contractAddresses: expected at least one contract address');
    }
    const accountList = filter?.optAddressList('accountAddresses') ?? [];
    const tokenIds = new Set(filter?.optUintList('tokenIDs') ?? filter?.optUintList('tokenIds') ?? []);
    const statusText = filter?.optString('contractStatus') || 'VERIFIED';
    if (!(STATUSES as readonly string[]).includes(statusText)) {
      throw errors.invalidArgument(
        `filter.contractStatus: expected one of ${STATUSES.join(', ')}, got ${JSON.stringify(statusText)}`,
      );
    }
    const omitMetadata = body.optBool('omitMetadata') ?? false;
    const page = readPage(body, BALANCE_PAGE);
    const accounts = new Set<number>();
    for (const address of accountList) {
      const index = ctx.state.accounts.indexOf(address);
      if (index !== undefined) accounts.add(index);
    }
    const start = (page.page - 1) * page.pageSize;
    const end = start + page.pageSize;
    const rows: Array<{ collection: CollectionState; index: number; account: number; balance: bigint }> = [];
    let seen = 0;
    for (const address of new Set(contracts)) {
      const collection = network.byAddress.get(address);
      if (!collection) continue;
      const verified = collection.blueprint.verified;
      if ((statusText === 'VERIFIED' && !verified) || (statusText === 'UNVERIFIED' && verified)) continue;
      const indexes =
        tokenIds.size > 0
          ? [...tokenIds]
              .map((id) => collection.indexOf(id))
              .filter((i): i is number => i !== undefined)
              .sort((a, b) => a - b)
          : undefined;
      const count = indexes ? indexes.length : collection.size;
      for (let k = 0; k < count && seen <= end; k++) {
        const index = indexes ? (indexes[k] ?? 0) : k;
        if (collection.standard === 'ERC721') {
          const owner = collection.ownerOf(index);
          if (owner < 0 || (accountList.length > 0 && !accounts.has(owner))) continue;
          if (seen >= start && seen < end) rows.push({ collection, index, account: owner, balance: 1n });
          seen++;
        } else {
          const holders = [...(collection.balances[index] ?? new Map<number, bigint>()).entries()]
            .filter(([account]) => accountList.length === 0 || accounts.has(account))
            .sort(([a], [b]) => ctx.state.accounts.at(a).localeCompare(ctx.state.accounts.at(b)));
          for (const [account, balance] of holders) {
            if (seen >= start && seen < end) rows.push({ collection, index, account, balance });
            seen++;
          }
        }
      }
    }
    const head = network.chain.head;
    const balances: Json[] = rows.map(({ collection, index, account, balance }) => {
      const row: Json = {
        contractType: collection.standard,
        contractAddress: collection.address,
        accountAddress: ctx.state.accounts.at(account),
        tokenID: collection.tokenId(index),
        balance: balance.toString(),
        blockHash: head.hash,
        blockNumber: head.number,
        chainId: network.chainId,
      };
      if (!omitMetadata) {
        row.contractInfo = contractInfoJson(collection, ctx.baseUrl, 'indexer');
        row.tokenMetadata = tokenMetadataJson(collection, index, ctx.baseUrl, 'indexer');
      }
      return row;
    });
    return { page: pageJson(page, seen > end, 'indexer'), balances };
  },
};

const subscribeEvents: StreamOperation = {
  kind: 'stream',
  service: 'Indexer',
  method: 'SubscribeEvents',
  base: 'indexer',
  credential: 'accessKey',
  open(ctx, body, res, drop) {
    const network = requestNetwork(ctx, body, 'Indexer');
    const filter = parseEventFilter(body.optObject('filter'));
    ctx.hub.open(network, res, { kind: 'events', filter }, drop);
  },
};

const subscribeReceipts: StreamOperation = {
  kind: 'stream',
  service: 'Indexer',
  method: 'SubscribeReceipts',
  base: 'indexer',
  credential: 'accessKey',
  open(ctx, body, res, drop) {
    const network = requestNetwork(ctx, body, 'Indexer');
    const filter = parseReceiptFilter(body.optObject('filter'));
    ctx.hub.open(network, res, { kind: 'receipts', filter }, drop);
  },
};

export const indexerOperations = [getTokenBalancesByContract, subscribeEvents, subscribeReceipts];
