import type { IncomingMessage, ServerResponse } from 'node:http';
import { hexToBytes, keccak256 } from 'viem/utils';
import type { BlockRecord, LogRecord, TxnRecord } from './chain.ts';
import { hashText, ZERO_ADDRESS } from './hex.ts';
import { readBody, sendText } from './http.ts';
import type { DevnetState, NetworkState } from './state.ts';
import { codeAt, isByteHex, simulateCall, UnsupportedCallError } from './wallets.ts';

/**
 * The devnet's Ethereum JSON-RPC 2.0 endpoint, one per network at `POST /chain/<network>` (name or
 * chain id), over the same simulated chain the SubscribeEvents streams serve: `eth_chainId`,
 * `eth_blockNumber`, `eth_getBlockByNumber`, `eth_getBlockByHash`, `eth_getLogs`, `net_version`,
 * `web3_clientVersion`, and `eth_call` / `eth_getCode` for the test wallets and ERC-6492's deployless
 * signature validator (devnet/wallets.ts). Batches are answered in one array. Like a node that does not keep all
 * history, it serves the blocks mined since the devnet started, minus those pruned past its limits
 * (ranges below them are refused, never answered with an empty list) and those removed by a reorg.
 *
 * @example
 * const client = createPublicClient({ transport: http(`${devnet.url}/chain/devnet`) });
 * const logs = await client.getLogs({ fromBlock: 100n, toBlock: 200n, address: collection });
 */
export const CHAIN_RPC_PREFIX = '/chain/';

/** Most blocks one `eth_getLogs` may span, as common providers limit it. */
export const MAX_LOG_RANGE_BLOCKS = 10_000;
/** Most logs one `eth_getLogs` may answer. */
export const MAX_LOG_RESULTS = 10_000;
/** Most calls in one batch (geth's default). */
export const MAX_BATCH = 1_000;

const CLIENT_VERSION = 'floorwatch-devnet/v0.1.0';
const EMPTY_UNCLES_HASH = '0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347';
const GAS_LIMIT = 30_000_000;

const CODES = {
  parse: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  server: -32000,
  limitExceeded: -32005,
  /** A call that reverted (geth's code), with the revert data. */
  executionReverted: 3,
} as const;

class JsonRpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: string,
  ) {
    super(message);
  }
}

type Id = string | number | null;

interface Call {
  id: Id;
  notification: boolean;
  method: string;
  params: unknown[];
}

/** Answers a request to `/chain/<network>`; every failure is a JSON-RPC error object. */
export async function serveChainRpc(
  state: DevnetState,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
): Promise<void> {
  const ref = safeDecode(path.slice(CHAIN_RPC_PREFIX.length).replace(/\/+$/, ''));
  const network = ref === undefined || ref.includes('/') ? undefined : state.network(ref);
  if (!network) {
    req.resume();
    reply(
      res,
      404,
      failure(
        null,
        CODES.invalidRequest,
        `unknown network ${JSON.stringify(ref ?? path)}; this devnet serves ${state.describeNetworks()} at ${CHAIN_RPC_PREFIX}<network>`,
      ),
    );
    return;
  }
  if (req.method !== 'POST') {
    req.resume();
    reply(
      res,
      405,
      failure(null, CODES.invalidRequest, `method ${req.method ?? ''} not allowed: JSON-RPC requests are POSTed`),
      { allow: 'POST' },
    );
    return;
  }
  const contentType = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (contentType !== 'application/json') {
    req.resume();
    reply(res, 415, failure(null, CODES.invalidRequest, 'invalid content type, only application/json is supported'));
    return;
  }
  let text: string;
  try {
    text = await readBody(req);
  } catch (error) {
    reply(
      res,
      413,
      failure(
        null,
        CODES.invalidRequest,
        error instanceof Error ? ((error as { causeText?: string }).causeText ?? error.message) : String(error),
      ),
    );
    return;
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    reply(res, 200, failure(null, CODES.parse, `parse error: ${(error as Error).message}`));
    return;
  }
  const rpc = new ChainRpc(state, network);
  if (!Array.isArray(body)) {
    const answer = await rpc.answer(body);
    if (answer === undefined) sendText(res, 200, 'application/json', '');
    else reply(res, 200, answer);
    return;
  }
  if (body.length === 0) {
    reply(res, 200, failure(null, CODES.invalidRequest, 'empty batch'));
    return;
  }
  if (body.length > MAX_BATCH) {
    reply(res, 200, failure(null, CODES.invalidRequest, `batch too large: ${body.length} calls, at most ${MAX_BATCH}`));
    return;
  }
  const answers = (await Promise.all(body.map((item) => rpc.answer(item)))).filter((a) => a !== undefined);
  if (answers.length === 0) sendText(res, 200, 'application/json', '');
  else reply(res, 200, answers);
}

function reply(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  sendText(res, status, 'application/json', JSON.stringify(body), headers);
}

function failure(id: Id, code: number, message: string, data?: string): object {
  return { jsonrpc: '2.0', id, error: { code, message, ...(data === undefined ? {} : { data }) } };
}

function safeDecode(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

/** The calls of one request against one network. */
class ChainRpc {
  constructor(
    readonly state: DevnetState,
    readonly network: NetworkState,
  ) {}

  /** The response object of one call, or undefined for a notification. */
  async answer(item: unknown): Promise<object | undefined> {
    let call: Call;
    try {
      call = parseCall(item);
    } catch (error) {
      const id = isObject(item) && isId(item.id) ? item.id : null;
      return failure(id, (error as JsonRpcError).code ?? CODES.invalidRequest, (error as Error).message);
    }
    try {
      const result = await this.#call(call.method, call.params);
      return call.notification ? undefined : { jsonrpc: '2.0', id: call.id, result };
    } catch (error) {
      if (call.notification) return undefined;
      if (error instanceof JsonRpcError) return failure(call.id, error.code, error.message, error.data);
      return failure(call.id, CODES.server, error instanceof Error ? error.message : String(error));
    }
  }

  async #call(method: string, params: unknown[]): Promise<unknown> {
    const { chain, history } = this.network;
    switch (method) {
      case 'eth_chainId':
        return quantity(chain.chainId);
      case 'net_version':
        return String(chain.chainId);
      case 'web3_clientVersion':
        return CLIENT_VERSION;
      case 'eth_blockNumber':
        return quantity(history.head);
      case 'eth_getBlockByNumber': {
        const number = this.#blockNumber(params[0], 'block number');
        return this.#blockJson(number, fullFlag(params[1]));
      }
      case 'eth_getBlockByHash': {
        const hash = hashParam(params[0], 'block hash');
        const block = history.byHash(hash);
        if (block) return this.#recordJson(block, fullFlag(params[1]));
        return hash === history.genesis.hash ? this.#blockJson(history.genesis.number, false) : null;
      }
      case 'eth_getLogs':
        return this.#logs(params[0]);
      case 'eth_getCode': {
        this.#blockNumber(params[1], 'block');
        return codeAt(addressParam(params[0], 'address'));
      }
      case 'eth_call':
        return this.#ethCall(params[0], params[1]);
      default:
        throw new JsonRpcError(CODES.methodNotFound, `the method ${method} does not exist/is not available`);
    }
  }

  /** A call to a test wallet or the factory, or ERC-6492's deployless validator; a revert is error 3 with its data. */
  async #ethCall(param: unknown, block: unknown): Promise<string> {
    if (!isObject(param))
      throw new JsonRpcError(CODES.invalidParams, `invalid call: expected an object, got ${show(param)}`);
    this.#blockNumber(block, 'block');
    const to = param.to === undefined || param.to === null ? undefined : addressParam(param.to, 'to');
    const data = param.input ?? param.data ?? '0x';
    if (!isByteHex(data)) throw new JsonRpcError(CODES.invalidParams, `invalid call data: ${show(data)}`);
    try {
      const outcome = await simulateCall(this.network.chainId, to, data);
      if (outcome.ok) return outcome.data;
      throw new JsonRpcError(CODES.executionReverted, outcome.reason, outcome.data);
    } catch (error) {
      if (error instanceof UnsupportedCallError) throw new JsonRpcError(CODES.server, error.message);
      throw error;
    }
  }

  /** A block number or tag; beyond the head stays beyond (callers answer null). */
  #blockNumber(value: unknown, what: string): number {
    const head = this.network.history.head;
    if (value === undefined || value === 'latest' || value === 'pending') return head;
    if (value === 'earliest') return 0;
    if (value === 'safe' || value === 'finalized') return Math.max(0, head - this.network.chain.finalityDepth);
    if (typeof value === 'string' && /^0x[0-9a-fA-F]{1,16}$/.test(value)) {
      const number = Number.parseInt(value, 16);
      if (Number.isSafeInteger(number)) return number;
    }
    throw new JsonRpcError(
      CODES.invalidParams,
      `invalid ${what}: expected a hex quantity or latest/earliest/pending/safe/finalized, got ${show(value)}`,
    );
  }

  #blockJson(number: number, full: boolean): object | null {
    const history = this.network.history;
    const record = history.block(number);
    if (record) return this.#recordJson(record, full);
    if (number > history.genesis.number) return null;
    // Blocks up to the start hold no activity of this devnet: empty blocks with stable hashes.
    const hashOf = (n: number) =>
      n === history.genesis.number ? history.genesis.hash : hashText(`${this.network.chainId}:before-start:${n}`);
    const timestamp = Math.max(0, history.genesis.timestamp - (history.genesis.number - number) * 2);
    return blockJson({
      number,
      hash: hashOf(number),
      parentHash: number === 0 ? `0x${'0'.repeat(64)}` : hashOf(number - 1),
      timestamp,
      txns: [],
      bloom: `0x${'0'.repeat(512)}`,
      full,
      chainId: this.network.chainId,
    });
  }

  #recordJson(block: BlockRecord, full: boolean): object {
    return blockJson({
      number: block.number,
      hash: block.hash,
      parentHash: block.parentHash,
      timestamp: block.timestamp,
      txns: block.txns,
      bloom: bloomOf(block),
      full,
      chainId: this.network.chainId,
    });
  }

  #logs(param: unknown): object[] {
    if (!isObject(param))
      throw new JsonRpcError(CODES.invalidParams, `invalid filter: expected an object, got ${show(param)}`);
    const history = this.network.history;
    const addresses = addressFilter(param.address);
    const topics = topicFilter(param.topics);
    let blocks: BlockRecord[];
    if (param.blockHash !== undefined && param.blockHash !== null) {
      if (param.fromBlock != null || param.toBlock != null)
        throw new JsonRpcError(
          CODES.invalidParams,
          'invalid filter: blockHash cannot be combined with fromBlock/toBlock',
        );
      const hash = hashParam(param.blockHash, 'blockHash');
      const block = history.byHash(hash);
      if (!block && hash !== history.genesis.hash) throw new JsonRpcError(CODES.server, `unknown block ${hash}`);
      blocks = block ? [block] : [];
    } else {
      const from = this.#blockNumber(param.fromBlock ?? 'latest', 'fromBlock');
      const to = Math.min(this.#blockNumber(param.toBlock ?? 'latest', 'toBlock'), history.head);
      if (from > to) {
        if (from > history.head) return [];
        throw new JsonRpcError(CODES.invalidParams, `invalid block range: fromBlock ${from} is after toBlock ${to}`);
      }
      const span = to - from + 1;
      if (span > MAX_LOG_RANGE_BLOCKS) {
        throw new JsonRpcError(
          CODES.limitExceeded,
          `block range too large: ${span} blocks (${quantity(from)} to ${quantity(to)}); eth_getLogs spans at most ${MAX_LOG_RANGE_BLOCKS} blocks`,
        );
      }
      const pruned = history.oldest > history.genesis.number + 1;
      if (pruned && from < history.oldest && to > history.genesis.number) {
        throw new JsonRpcError(
          CODES.server,
          `history pruned: logs before block ${history.oldest} (${quantity(history.oldest)}) are no longer kept by this node`,
        );
      }
      blocks = history.range(from, to);
    }
    const out: object[] = [];
    for (const block of blocks) {
      for (const txn of block.txns) {
        for (const log of txn.logs) {
          if (addresses && !addresses.has(log.contractAddress.toLowerCase())) continue;
          if (!topicsMatch(topics, log.encoded.topics)) continue;
          if (out.length === MAX_LOG_RESULTS) {
            const first = blocks[0] as BlockRecord;
            throw new JsonRpcError(
              CODES.limitExceeded,
              `query returned more than ${MAX_LOG_RESULTS} results. Try with this block range [${quantity(first.number)}, ${quantity(block.number - 1)}].`,
            );
          }
          out.push(logJson(log, txn, block));
        }
      }
    }
    return out;
  }
}

function parseCall(item: unknown): Call {
  if (!isObject(item))
    throw new JsonRpcError(CODES.invalidRequest, `invalid request: expected an object, got ${show(item)}`);
  if (item.jsonrpc !== '2.0') throw new JsonRpcError(CODES.invalidRequest, 'invalid request: jsonrpc must be "2.0"');
  if (typeof item.method !== 'string' || item.method === '')
    throw new JsonRpcError(CODES.invalidRequest, 'invalid request: method must be a non-empty string');
  if ('id' in item && !isId(item.id))
    throw new JsonRpcError(CODES.invalidRequest, 'invalid request: id must be a string, a number or null');
  const params = item.params;
  if (params !== undefined && !Array.isArray(params))
    throw new JsonRpcError(CODES.invalidParams, 'invalid params: expected a list (positional parameters)');
  return {
    id: 'id' in item ? (item.id as Id) : null,
    notification: !('id' in item),
    method: item.method,
    params: (params as unknown[] | undefined) ?? [],
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isId(value: unknown): value is Id {
  return value === null || typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));
}

function show(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}

function quantity(value: number | bigint): string {
  return `0x${value.toString(16)}`;
}

function fullFlag(value: unknown): boolean {
  if (value === undefined || typeof value === 'boolean') return value === true;
  throw new JsonRpcError(
    CODES.invalidParams,
    `invalid params: the second parameter must be a boolean, got ${show(value)}`,
  );
}

function hashParam(value: unknown, what: string): string {
  if (typeof value === 'string' && /^0x[0-9a-fA-F]{64}$/.test(value)) return value.toLowerCase();
  throw new JsonRpcError(CODES.invalidParams, `invalid ${what}: expected a 32-byte hex hash, got ${show(value)}`);
}

function addressParam(value: unknown, what: string): `0x${string}` {
  if (typeof value === 'string' && /^0x[0-9a-fA-F]{40}$/.test(value)) return value.toLowerCase() as `0x${string}`;
  throw new JsonRpcError(CODES.invalidParams, `invalid ${what}: expected a 20-byte address, got ${show(value)}`);
}

function addressFilter(value: unknown): Set<string> | undefined {
  if (value === undefined || value === null) return undefined;
  const list = Array.isArray(value) ? value : [value];
  const out = new Set<string>();
  for (const item of list) {
    if (typeof item !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(item))
      throw new JsonRpcError(CODES.invalidParams, `invalid address in filter: ${show(item)}`);
    out.add(item.toLowerCase());
  }
  return Array.isArray(value) && value.length === 0 ? undefined : out;
}

/** Per position: undefined matches anything, else the set of accepted topics. */
function topicFilter(value: unknown): Array<Set<string> | undefined> {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value))
    throw new JsonRpcError(CODES.invalidParams, `invalid topics: expected a list, got ${show(value)}`);
  if (value.length > 4)
    throw new JsonRpcError(CODES.invalidParams, `invalid topics: ${value.length} positions, at most 4`);
  return value.map((position, i) => {
    if (position === null) return undefined;
    const options = Array.isArray(position) ? position : [position];
    if (options.some((o) => o === null) || options.length === 0) return undefined;
    const set = new Set<string>();
    for (const option of options) {
      if (typeof option !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(option))
        throw new JsonRpcError(CODES.invalidParams, `invalid topic at position ${i}: ${show(option)}`);
      set.add(option.toLowerCase());
    }
    return set;
  });
}

function topicsMatch(filter: ReadonlyArray<Set<string> | undefined>, topics: readonly string[]): boolean {
  if (filter.length > topics.length) {
    for (let i = topics.length; i < filter.length; i++) if (filter[i] !== undefined) return false;
  }
  for (let i = 0; i < filter.length && i < topics.length; i++) {
    const accepted = filter[i];
    if (accepted && !accepted.has((topics[i] as string).toLowerCase())) return false;
  }
  return true;
}

/** A log exactly as the block holds it (what the events stream's `rawLog` carries, with its place). */
function logJson(log: LogRecord, txn: TxnRecord, block: BlockRecord): object {
  return {
    address: log.contractAddress,
    topics: log.encoded.topics,
    data: log.encoded.data,
    blockNumber: quantity(block.number),
    blockHash: block.hash,
    blockTimestamp: quantity(block.timestamp),
    transactionHash: txn.hash,
    transactionIndex: quantity(txn.index),
    logIndex: quantity(log.logIndex),
    removed: false,
  };
}

function blockJson(fields: {
  number: number;
  hash: string;
  parentHash: string;
  timestamp: number;
  txns: readonly TxnRecord[];
  bloom: string;
  full: boolean;
  chainId: number;
}): object {
  const { number, hash, txns } = fields;
  let gasUsed = 0;
  for (const txn of txns) gasUsed += txn.gasUsed;
  const baseFee = 1_000_000_000n;
  return {
    number: quantity(number),
    hash,
    parentHash: fields.parentHash,
    nonce: '0x0000000000000000',
    mixHash: hashText(`mix:${hash}`),
    sha3Uncles: EMPTY_UNCLES_HASH,
    logsBloom: fields.bloom,
    transactionsRoot: hashText(`txns:${hash}`),
    stateRoot: hashText(`state:${hash}`),
    receiptsRoot: hashText(`receipts:${hash}`),
    miner: ZERO_ADDRESS,
    difficulty: '0x0',
    totalDifficulty: '0x0',
    extraData: '0x',
    size: quantity(600 + txns.length * 120),
    gasLimit: quantity(GAS_LIMIT),
    gasUsed: quantity(gasUsed),
    timestamp: quantity(fields.timestamp),
    baseFeePerGas: quantity(baseFee),
    uncles: [],
    transactions: fields.full
      ? txns.map((txn) => ({
          hash: txn.hash,
          blockHash: hash,
          blockNumber: quantity(number),
          transactionIndex: quantity(txn.index),
          from: txn.from,
          to: txn.to,
          value: quantity(txn.value),
          gas: quantity(txn.gasUsed),
          gasPrice: quantity(txn.effectiveGasPrice),
          maxFeePerGas: quantity(txn.effectiveGasPrice),
          maxPriorityFeePerGas: quantity(txn.effectiveGasPrice - baseFee),
          input: '0x',
          nonce: quantity(txn.index),
          type: '0x2',
          chainId: quantity(fields.chainId),
          accessList: [],
          v: '0x0',
          yParity: '0x0',
          r: hashText(`r:${txn.hash}`),
          s: hashText(`s:${txn.hash}`),
        }))
      : txns.map((txn) => txn.hash),
  };
}

const blooms = new WeakMap<BlockRecord, string>();

/** The block's 2048-bit logs bloom (yellow paper, M3:2048) over its logs' addresses and topics. */
function bloomOf(block: BlockRecord): string {
  let bloom = blooms.get(block);
  if (bloom !== undefined) return bloom;
  const bits = new Uint8Array(256);
  const add = (hex: string) => {
    const hash = keccak256(hexToBytes(hex as `0x${string}`), 'bytes');
    for (let i = 0; i < 6; i += 2) {
      const bit = (((hash[i] as number) << 8) | (hash[i + 1] as number)) & 2047;
      const index = 255 - (bit >> 3);
      bits[index] = (bits[index] as number) | (1 << (bit & 7));
    }
  };
  for (const txn of block.txns) {
    for (const log of txn.logs) {
      add(log.contractAddress);
      for (const topic of log.encoded.topics) add(topic);
    }
  }
  bloom = `0x${Buffer.from(bits).toString('hex')}`;
  blooms.set(block, bloom);
  return bloom;
}
