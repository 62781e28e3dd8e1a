/**
 * Nothing missed while down: the events of the blocks the streams did not show (the bot was stopped,
 * or an events stream was reconnecting) are read from the chain's JSON-RPC (`eth_getLogs` in bounded
 * ranges, decoded with the known event ABIs) and fed, as stream logs, through the pipeline's one
 * entry point. A per-network cursor (the last block whose alerts are all recorded) says where to
 * start.
 */
import type { Logger } from 'pino';
import {
  type AbiEvent,
  createPublicClient,
  formatLog,
  type Hash,
  http,
  type Log,
  numberToHex,
  type PublicClient,
  parseAbi,
  parseEventLogs,
  toEventSelector,
} from 'viem';
import type { CursorStore } from '../core/ports.ts';
import type { ReadBack } from '../core/reply.ts';
import type { EventLog } from '../platform/types.ts';

/** The events the classifier reads (see classify.ts and shared/reference/chain-events.md). */
export const BACKFILL_EVENTS = parseAbi([
  'event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)',
  // ERC-20: the same topic hash with three topics; decoded so that it can be told apart and ignored.
  'event Transfer(address indexed from, address indexed to, uint256 value)',
  'event TransferSingle(address indexed operator, address indexed from, address indexed to, uint256 id, uint256 value)',
  'event TransferBatch(address indexed operator, address indexed from, address indexed to, uint256[] ids, uint256[] values)',
  'event RequestCreated(uint256 indexed requestId, address indexed creator, address indexed tokenContract, uint256 tokenId, bool isListing, uint256 quantity, address currency, uint256 pricePerToken, uint256 expiry)',
  'event RequestAccepted(uint256 indexed requestId, address indexed buyer, address indexed tokenContract, address receiver, uint256 quantity, uint256 quantityRemaining)',
  'event RequestCancelled(uint256 indexed requestId, address indexed tokenContract)',
]) as readonly AbiEvent[];

/** The first topics of {@link BACKFILL_EVENTS}, each once (both Transfers share one). */
const BACKFILL_TOPICS = [...new Set(BACKFILL_EVENTS.map((event) => toEventSelector(event)))];

/** Blocks per `eth_getLogs` (providers commonly allow 2,000 to 10,000); halved when a node refuses. */
export const DEFAULT_RANGE_BLOCKS = 2_000;
/** Contracts per `eth_getLogs`, so that a request stays small whatever the number of watched collections. */
export const DEFAULT_ADDRESSES_PER_REQUEST = 500;
/**
 * Past this many watched contracts a range is read by the events' signatures alone, and the logs of
 * other contracts are dropped here: a million watched collections would otherwise take 2,000 requests
 * per range, and their addresses all at once in memory.
 */
export const DEFAULT_ADDRESS_FILTER_MAX = 2_000;

/** The contracts whose logs a backfill reads. */
export interface WatchedContracts {
  readonly size: number;
  /** Whether a lower-case address is one of them. */
  has(address: string): boolean;
  /** Their lower-case addresses in lists of at most `size`, each made when it is reached. */
  lists(size: number): Iterable<string[]>;
}
/** Default of FLOORWATCH_BACKFILL_MAX_BLOCKS. */
export const DEFAULT_BACKFILL_MAX_BLOCKS = 5_000;

/** Settings of the backfill (config: FLOORWATCH_RPC_URL, FLOORWATCH_BACKFILL_MAX_BLOCKS). */
export interface BackfillSettings {
  /** JSON-RPC address; `{network}` stands for the network's name. */
  rpcUrl: string;
  /** Most blocks read back at once; older missed blocks are reported as a gap. */
  maxBlocks: number;
  /**
   * Streams that open later than the start also resume from the cursor: with a shared database, the
   * process that takes over a network's ingestion goes on from where the last one stopped.
   */
  resumeOnActivate?: boolean;
  rangeBlocks?: number;
  addressesPerRequest?: number;
  /** See {@link DEFAULT_ADDRESS_FILTER_MAX}. */
  addressFilterMax?: number;
  /**
   * A receipt of block N shows the chain got there; once the events stream has stayed connected this
   * long after it, the events of block N have arrived too and the cursor may pass it. Default 2 s.
   */
  settleMs?: number;
  /** First delay before a failed backfill is tried again; doubles up to 60 s. Default 1 s. */
  retryDelayMs?: number;
}

/** A JSON-RPC error a node answers when a range or a result is too large for one request. */
function isTooLarge(error: unknown): boolean {
  for (
    let e = error as { code?: unknown; cause?: unknown; message?: unknown } | undefined;
    e;
    e = e.cause as typeof e
  ) {
    if (e.code === -32005) return true;
    if (typeof e.message === 'string' && /range|too (large|many)|more than \d+ results|limit exceeded/i.test(e.message))
      return e.code === -32602 || e.code === -32000 || e.code === -32600;
  }
  return false;
}

/**
 * Reads one network's logs over JSON-RPC and turns them into the records the events stream sends
 * (`EventLog` with the indexer's `uid`, decoded `event`, `rawLog`, `ts` and `txnInfo`).
 */
export class ChainLogReader {
  readonly network: string;
  readonly chainId: number;
  readonly #client: PublicClient;
  readonly #rangeBlocks: number;
  readonly #addressesPerRequest: number;
  readonly #addressFilterMax: number;
  #checked = false;

  constructor(fields: {
    network: string;
    chainId: number;
    url: string;
    rangeBlocks?: number;
    addressesPerRequest?: number;
    addressFilterMax?: number;
  }) {
    this.network = fields.network;
    this.chainId = fields.chainId;
    this.#client = createPublicClient({
      transport: http(fields.url, { batch: { batchSize: 100 }, retryCount: 2 }),
      cacheTime: 0,
    });
    this.#rangeBlocks = Math.max(1, fields.rangeBlocks ?? DEFAULT_RANGE_BLOCKS);
    this.#addressesPerRequest = Math.max(1, fields.addressesPerRequest ?? DEFAULT_ADDRESSES_PER_REQUEST);
    this.#addressFilterMax = Math.max(0, fields.addressFilterMax ?? DEFAULT_ADDRESS_FILTER_MAX);
  }

  /** The chain's head; the first call also checks that the endpoint serves this network's chain. */
  async head(): Promise<number> {
    if (!this.#checked) {
      const chainId = await this.#client.getChainId();
      if (chainId !== this.chainId)
        throw new Error(`the JSON-RPC endpoint of ${this.network} serves chain ${chainId}, not ${this.chainId}`);
      this.#checked = true;
    }
    return Number(await this.#client.getBlockNumber());
  }

  /**
   * The logs of the watched contracts in blocks `from`..`to`, in chain order, as stream records.
   * Reads in ranges of at most `rangeBlocks` blocks (halved while the node says a range is too
   * large), naming at most `addressesPerRequest` contracts a request; past `addressFilterMax`
   * contracts, naming none (the events' signatures only) and keeping the watched ones' logs.
   */
  async logs(
    from: number,
    to: number,
    contracts: WatchedContracts,
    onRange?: (to: number) => void,
  ): Promise<EventLog[]> {
    const out: EventLog[] = [];
    let size = this.#rangeBlocks;
    for (let start = from; start <= to; ) {
      const end = Math.min(to, start + size - 1);
      let raw: Log[];
      try {
        raw = await this.#range(start, end, contracts);
      } catch (error) {
        if (!isTooLarge(error) || end === start) throw error;
        size = Math.max(1, Math.floor((end - start + 1) / 2));
        continue;
      }
      out.push(...(await this.#records(raw)));
      onRange?.(end);
      start = end + 1;
    }
    return out;
  }

  async #range(from: number, to: number, contracts: WatchedContracts): Promise<Log[]> {
    const range = { events: BACKFILL_EVENTS, fromBlock: BigInt(from), toBlock: BigInt(to), strict: true } as const;
    if (contracts.size > this.#addressFilterMax) {
      // Read raw and kept by address before anything is decoded: on a busy chain the events' signatures
      // alone match every token transfer of the range, ERC-20 ones included.
      const raw = await this.#client.request({
        method: 'eth_getLogs',
        params: [{ fromBlock: numberToHex(from), toBlock: numberToHex(to), topics: [BACKFILL_TOPICS] }],
      });
      const watched = raw.filter((log) => contracts.has(log.address.toLowerCase())).map((log) => formatLog(log));
      return parseEventLogs({ abi: BACKFILL_EVENTS, logs: watched, strict: true }) as unknown as Log[];
    }
    const all: Log[] = [];
    let requests = 0;
    for (const chunk of contracts.lists(this.#addressesPerRequest)) {
      if (chunk.length === 0) continue;
      requests++;
      const logs = await this.#client.getLogs({ ...range, address: chunk as `0x${string}`[] });
      all.push(...(logs as unknown as Log[]));
    }
    if (requests > 1)
      all.sort(
        (a, b) => Number((a.blockNumber ?? 0n) - (b.blockNumber ?? 0n)) || (a.logIndex ?? 0) - (b.logIndex ?? 0),
      );
    return all;
  }

  /** Stream records of decoded logs; each block with logs is read once for its time, parent and senders. */
  async #records(logs: Log[]): Promise<EventLog[]> {
    const blocks = new Map<Hash, Promise<BlockInfo>>();
    for (const log of logs) {
      const hash = log.blockHash as Hash;
      if (!blocks.has(hash)) blocks.set(hash, this.#block(hash));
    }
    const infos = new Map<Hash, BlockInfo>();
    for (const [hash, info] of blocks) infos.set(hash, await info);
    const out: EventLog[] = [];
    for (const log of logs) {
      const record = toEventLog(log, this.chainId, infos.get(log.blockHash as Hash));
      if (record) out.push(record);
    }
    return out;
  }

  async #block(hash: Hash): Promise<BlockInfo> {
    const block = await this.#client.getBlock({ blockHash: hash, includeTransactions: true });
    const txns = new Map<string, { from: string; to: string; value: string }>();
    for (const txn of block.transactions) {
      txns.set(txn.hash.toLowerCase(), {
        from: txn.from.toLowerCase(),
        to: (txn.to ?? '').toLowerCase(),
        value: txn.value.toString(),
      });
    }
    return { parentHash: block.parentHash, timestamp: Number(block.timestamp), txns };
  }
}

interface BlockInfo {
  parentHash: string;
  timestamp: number;
  txns: Map<string, { from: string; to: string; value: string }>;
}

const SIGNATURES = new Map<AbiEvent, { topicHash: string; eventSig: string; types: string[]; names: string[] }>(
  BACKFILL_EVENTS.map((event) => [
    event,
    {
      topicHash: toEventSelector(event),
      eventSig: `${event.name}(${event.inputs.map((i) => `${i.type}${i.indexed ? ' indexed' : ''} ${i.name}`).join(', ')})`,
      types: event.inputs.map((i) => i.type),
      names: event.inputs.map((i) => i.name ?? ''),
    },
  ]),
);

function abiOf(log: Log & { eventName?: string | undefined }): AbiEvent | undefined {
  const indexed = log.topics.length - 1;
  return BACKFILL_EVENTS.find(
    (event) => event.name === log.eventName && event.inputs.filter((i) => i.indexed).length === indexed,
  );
}

/** What the indexer calls the contract, as far as the event tells it (the classifier skips ERC-20 transfers). */
function contractTypeOf(event: AbiEvent, topics: number): string {
  if (event.name === 'Transfer') return topics === 4 ? 'ERC721' : 'ERC20';
  if (event.name.startsWith('Transfer')) return 'ERC1155';
  return 'SEQ_MARKETPLACE';
}

function show(value: unknown): string {
  if (Array.isArray(value)) return JSON.stringify(value.map((v) => String(v)));
  if (typeof value === 'string') return value.toLowerCase();
  return String(value);
}

/**
 * The events stream's record of a decoded log: `uid` as the indexer writes it (chain id, the first
 * 8 bytes of the transaction hash, the log's index in the block), values as decimal or lower-case
 * text. Undefined for a log that is not one of {@link BACKFILL_EVENTS} or is still pending.
 */
export function toEventLog(
  log: Log & { eventName?: string | undefined; args?: unknown },
  chainId: number,
  block: BlockInfo | undefined,
): EventLog | undefined {
  const event = abiOf(log);
  const signature = event && SIGNATURES.get(event);
  if (!event || !signature || log.blockNumber === null || log.blockHash === null || log.transactionHash === null)
    return undefined;
  if (log.logIndex === null || log.transactionIndex === null) return undefined;
  const args = (log.args ?? {}) as Record<string, unknown>;
  const txnHash = log.transactionHash.toLowerCase();
  const seconds = block?.timestamp ?? Number(log.blockTimestamp ?? 0n);
  const record: EventLog = {
    uid: `${chainId}-${txnHash.slice(2, 18)}-${log.logIndex}`,
    type: 'BLOCK_ADDED',
    blockNumber: Number(log.blockNumber),
    blockHash: log.blockHash.toLowerCase(),
    contractAddress: log.address.toLowerCase(),
    contractType: contractTypeOf(event, log.topics.length),
    txnHash,
    txnIndex: log.transactionIndex,
    txnLogIndex: log.logIndex,
    logDataType: event.name.startsWith('Transfer') ? 'TOKEN_TRANSFER' : 'EVENT',
    ts: new Date(seconds * 1000).toISOString(),
    rawLog: { topics: [...log.topics], data: log.data },
    event: { ...signature, values: event.inputs.map((input) => show(args[input.name ?? ''])) },
  };
  if (block) record.parentBlockHash = block.parentHash.toLowerCase();
  const txn = block?.txns.get(txnHash);
  if (txn) record.txnInfo = txn;
  return record;
}

/** What a network's backfill acts on: the pipeline's entry point and its cursor checkpoints. */
export interface BackfillHooks {
  /** The one entry point of stream logs (deduplicated by uid there). */
  deliver(log: EventLog): void;
  /** Ends the transaction being assembled: every log of the backfilled blocks has been delivered. */
  flush(): void;
  /** Calls `reached` once every event delivered before now is recorded (never during a journal outage). */
  checkpoint(block: number, reached: () => void): void;
  /** The contracts watched now. */
  contracts(): WatchedContracts;
  /** Blocks that will never be read back (beyond the limit): reported like a stream gap. */
  gap(fromBlock: number, toBlock: number): void;
  /**
   * Blocks `fromBlock`..`toBlock` were read back, and their logs are about to be delivered: `restart`
   * when the run resumed from the saved cursor (a start, or a take-over), `reconnect` otherwise.
   */
  readBack(fromBlock: number, toBlock: number, why: ReadBack): void;
}

/**
 * Backfill for all networks: one {@link ChainLogReader} and one {@link NetworkBackfill} per network
 * with a JSON-RPC address, the cursors behind a {@link CursorStore}.
 */
export class Backfill {
  readonly settings: BackfillSettings;
  readonly #cursors: CursorStore;
  readonly #logger: Logger;
  readonly #chainIds: (network: string) => number | undefined;
  #starting = true;

  constructor(fields: {
    settings: BackfillSettings;
    cursors: CursorStore;
    logger: Logger;
    chainId: (network: string) => number | undefined;
  }) {
    this.settings = fields.settings;
    this.#cursors = fields.cursors;
    this.#logger = fields.logger;
    this.#chainIds = fields.chainId;
  }

  /** Networks whose streams open after this (a rule added at run time) start at the head, without backfill. */
  started(): void {
    this.#starting = false;
  }

  get starting(): boolean {
    return this.#starting;
  }

  network(network: string, hooks: BackfillHooks): NetworkBackfill | undefined {
    const chainId = this.#chainIds(network);
    if (chainId === undefined) return undefined;
    const reader = new ChainLogReader({
      network,
      chainId,
      url: this.settings.rpcUrl.replaceAll('{network}', encodeURIComponent(network)),
      ...(this.settings.rangeBlocks ? { rangeBlocks: this.settings.rangeBlocks } : {}),
      ...(this.settings.addressesPerRequest ? { addressesPerRequest: this.settings.addressesPerRequest } : {}),
      ...(this.settings.addressFilterMax === undefined ? {} : { addressFilterMax: this.settings.addressFilterMax }),
    });
    return new NetworkBackfill(this, reader, this.#cursors, hooks, this.#logger.child({ network }));
  }

  flush(): Promise<void> {
    return this.#cursors.flush();
  }
}

/**
 * One network's cursor and backfill runs. Blocks are "received" up to {@link NetworkBackfill.received}:
 * every log of them was delivered to the pipeline. That mark moves when a backfill run ends, and,
 * while the events streams stay connected, with the receipts (after `settleMs`); it stops at a hole
 * (a stream drop, a failed run) until a run fills it. Each move places a checkpoint behind the
 * delivered logs; when the pipeline reaches it, the cursor store advances.
 */
export class NetworkBackfill {
  readonly #owner: Backfill;
  readonly #reader: ChainLogReader;
  readonly #cursors: CursorStore;
  readonly #hooks: BackfillHooks;
  readonly #logger: Logger;
  #received: number | undefined;
  /** Blocks after `received` may be missing: a run must read them before the mark moves on. */
  #hole = true;
  #active = false;
  /** Stream records held while a run delivers older blocks, so that alerts keep the chain's order. */
  #held: Array<() => void> | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #retryTimer: NodeJS.Timeout | undefined;
  #retryDelayMs: number;
  #settleTimer: NodeJS.Timeout | undefined;
  /** Incremented whenever an events stream drops: receipts seen before cannot vouch for the events. */
  #epoch = 0;
  #latestReceipt: number | undefined;
  #candidate: { block: number; epoch: number } | undefined;
  #stopped = false;
  /** The mark was taken from the saved cursor and no run has read past it yet: runs are after a restart. */
  #fromCursor = false;
  /** Logs read back so far (tests, status). */
  backfilled = 0;

  constructor(owner: Backfill, reader: ChainLogReader, cursors: CursorStore, hooks: BackfillHooks, logger: Logger) {
    this.#owner = owner;
    this.#reader = reader;
    this.#cursors = cursors;
    this.#hooks = hooks;
    this.#logger = logger;
    this.#retryDelayMs = owner.settings.retryDelayMs ?? 1_000;
  }

  /** The last block all of whose logs were delivered, when known. */
  get received(): number | undefined {
    return this.#received;
  }

  /** Whether a run is under way (stream logs are held meanwhile). */
  get running(): boolean {
    return this.#running !== undefined;
  }

  /**
   * The events streams open (from none). At the process's start they resume from the cursor;
   * later (a network watched anew) they start at the head: events from before the rules are not news.
   */
  activate(): void {
    this.#active = true;
    this.#hole = true;
    this.#resume = this.#owner.starting || this.#owner.settings.resumeOnActivate === true;
    this.#received = undefined;
  }

  #resume = false;

  /** The events streams closed (no rule watches the network any more). */
  deactivate(): void {
    this.#active = false;
    this.#candidate = undefined;
  }

  /** An events stream connected (`reconnect`: again after a drop). */
  connected(reconnect: boolean): void {
    if (!this.#active) return;
    if (reconnect || this.#hole) this.#trigger();
  }

  /** An events stream dropped: blocks from now on may be missed until a run reads them. */
  disconnected(): void {
    this.#epoch++;
    this.#hole = true;
    this.#candidate = undefined;
  }

  /** A receipt of `block` arrived: the chain got there. */
  receipt(block: number): void {
    if (!this.#active || this.#stopped) return;
    this.#latestReceipt = Math.max(this.#latestReceipt ?? 0, block);
    this.#settleTimer ??= setTimeout(() => this.#settle(), this.#owner.settings.settleMs ?? 2_000);
    this.#settleTimer.unref();
  }

  /** Holds a stream record (its delivery) while a run is under way; false when it should go on now. */
  hold(deliver: () => void): boolean {
    if (!this.#held) return false;
    this.#held.push(deliver);
    return true;
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#retryTimer);
    clearTimeout(this.#settleTimer);
  }

  /** Resolves when no run is under way (tests). */
  async idle(): Promise<void> {
    while (this.#running) await this.#running;
  }

  #settle(): void {
    this.#settleTimer = undefined;
    if (this.#stopped || !this.#active) return;
    const candidate = this.#candidate;
    if (candidate && candidate.epoch === this.#epoch && !this.#hole && !this.running) this.#mark(candidate.block);
    this.#candidate =
      this.#latestReceipt === undefined ? undefined : { block: this.#latestReceipt, epoch: this.#epoch };
    if (this.#candidate && this.#candidate.block > (this.#received ?? -1)) this.receipt(this.#candidate.block);
  }

  #mark(block: number): void {
    if (this.#received !== undefined && block <= this.#received) return;
    this.#received = block;
    this.#hooks.checkpoint(block, () => {
      this.#cursors
        .advance(this.#reader.network, block)
        .catch((error: unknown) => this.#logger.warn({ err: error, block }, 'could not save the cursor'));
    });
  }

  #trigger(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    this.#held = [];
    this.#running = this.#run()
      .then(
        () => {
          this.#retryDelayMs = this.#owner.settings.retryDelayMs ?? 1_000;
        },
        (error: unknown) => {
          const delayMs = this.#retryDelayMs;
          this.#retryDelayMs = Math.min(60_000, delayMs * 2);
          // viem's full message carries the endpoint's address, which may hold a key: the short one does not.
          const reason = (error as { shortMessage?: string }).shortMessage ?? (error as Error).message;
          this.#logger.warn(
            { reason, retryInMs: delayMs },
            'could not read missed blocks from the chain; trying again',
          );
          this.#retryTimer = setTimeout(() => this.#trigger(), delayMs);
          this.#retryTimer.unref();
        },
      )
      .finally(() => {
        const held = this.#held ?? [];
        this.#held = undefined;
        this.#running = undefined;
        for (const deliver of held) deliver();
        if (this.#again) {
          this.#again = false;
          this.#trigger();
        }
      });
  }

  async #run(): Promise<void> {
    const network = this.#reader.network;
    const head = await this.#reader.head();
    if (this.#received === undefined) {
      const cursor = this.#resume ? await this.#cursors.get(network) : undefined;
      this.#resume = false;
      if (cursor === undefined || cursor >= head) {
        // A first start, or a network watched anew: alerts start with the next block. What the
        // stream brought meanwhile goes before the checkpoint.
        const held = this.#held ?? [];
        this.#held = [];
        for (const deliver of held) deliver();
        this.#hole = false;
        this.#mark(head);
        this.#logger.info(
          { head },
          cursor === undefined ? 'no cursor yet: alerts start at the head' : 'cursor at the head',
        );
        return;
      }
      this.#received = cursor;
      this.#fromCursor = true;
    }
    let from = this.#received + 1;
    if (from > head) {
      this.#hole = false;
      this.#fromCursor = false;
      return;
    }
    const maxBlocks = this.#owner.settings.maxBlocks;
    if (head - from + 1 > maxBlocks) {
      const skippedTo = head - maxBlocks;
      this.#hooks.gap(from, skippedTo);
      from = skippedTo + 1;
    }
    const started = Date.now();
    const logs = await this.#reader.logs(from, head, this.#hooks.contracts());
    this.#hooks.readBack(from, head, this.#fromCursor ? 'restart' : 'reconnect');
    this.#fromCursor = false;
    for (const log of logs) this.#hooks.deliver(log);
    this.#hooks.flush();
    this.backfilled += logs.length;
    this.#hole = false;
    this.#mark(head);
    this.#logger.info(
      { fromBlock: from, toBlock: head, logs: logs.length, ms: Date.now() - started },
      'read back the blocks the streams did not show',
    );
  }
}
