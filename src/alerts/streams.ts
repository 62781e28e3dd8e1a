import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { StreamHealth } from '../core/status.ts';
import type { PlatformClient } from '../platform/client.ts';
import type { ReconnectPolicy, StreamState } from '../platform/stream.ts';
import type { EventFilter, EventLog, TransactionReceipt } from '../platform/types.ts';
import type { NetworkBackfill } from './backfill.ts';
import { hashPackedAddress, PackedAddresses, type PackedList } from './compact.ts';

export interface StreamOptionsForAlerts {
  heartbeatTimeoutMs?: number;
  reconnect?: Partial<ReconnectPolicy>;
  /** How long a new events stream may take to connect before the old one is closed anyway. */
  switchTimeoutMs?: number;
  /** Contracts per events stream (default {@link MAX_CONTRACTS_PER_STREAM}). */
  maxContractsPerStream?: number;
}

/**
 * Contracts in one SubscribeEvents filter. Servers read a request of a bounded size (the local
 * platform 1 MiB, about 23,000 addresses): past this many watched contracts a network's events come
 * through several streams, each with a share of the contracts.
 */
export const MAX_CONTRACTS_PER_STREAM = 5_000;

interface Running {
  key: string;
  /** The share of the filter this stream subscribes with. */
  filter: EventFilter;
  controller: AbortController;
  connected: Promise<void>;
  state: StreamHealth['events'];
}

const MAX_GAPS_KEPT = 20;

/**
 * The live streams of one network: SubscribeEvents with a filter planned from the watch rules,
 * and SubscribeReceipts for finality and reorgs. A new plan opens the new events stream before
 * closing the old one, so no event falls between them; the overlap's duplicates are dropped
 * downstream by log uid. With a backfill (see backfill.ts), the blocks not seen while a stream was
 * down are read back from the chain instead of being reported as a gap.
 */
export class NetworkStreams {
  readonly network: string;
  readonly #platform: PlatformClient;
  readonly #logger: Logger;
  readonly #onLog: (log: EventLog) => void;
  readonly #onReceipt: (receipt: TransactionReceipt) => void;
  readonly #onGap: ((fromBlock: number, toBlock: number) => void) | undefined;
  readonly #options: StreamOptionsForAlerts;
  /** The events streams, by the key of their filter: one, or one per share of the contracts. */
  #events = new Map<string, Running>();
  #receipts: AbortController | undefined;
  #stopped = false;
  readonly #health: StreamHealth;
  /** Block of the last event before a disconnect, to measure the gap when the stream is back. */
  #lostAfterBlock: number | undefined;
  #head: number | undefined;
  #backfill: NetworkBackfill | undefined;

  constructor(
    platform: PlatformClient,
    network: string,
    handlers: {
      onLog: (log: EventLog) => void;
      onReceipt: (receipt: TransactionReceipt) => void;
      /** Blocks whose events were not seen and will not be (the record's completeness counts them). */
      onGap?: (fromBlock: number, toBlock: number) => void;
    },
    logger: Logger,
    options: StreamOptionsForAlerts = {},
  ) {
    this.network = network;
    this.#platform = platform;
    this.#logger = logger;
    this.#onLog = handlers.onLog;
    this.#onReceipt = handlers.onReceipt;
    this.#onGap = handlers.onGap;
    this.#options = options;
    this.#health = {
      network,
      events: 'idle',
      receipts: 'idle',
      contracts: 0,
      reconnects: 0,
      lastEventAt: undefined,
      lastBlock: undefined,
      lastError: undefined,
      gaps: [],
    };
  }

  /** Reads back, from the chain, the blocks these streams did not show (start, reconnects). */
  useBackfill(backfill: NetworkBackfill | undefined): void {
    this.#backfill = backfill;
  }

  /** How many contracts the events streams watch now. */
  contractCount(): number {
    let count = 0;
    for (const running of this.#events.values()) count += running.filter.contractAddresses?.length ?? 0;
    return count;
  }

  /**
   * The contracts the events streams watch now, lower case, in lists of at most `size`: each list
   * made when it is reached (a million watched contracts are never a million strings at once).
   */
  *contractLists(size: number): IterableIterator<string[]> {
    let list: string[] = [];
    for (const running of [...this.#events.values()]) {
      for (const contract of running.filter.contractAddresses ?? []) {
        list.push(contract.toLowerCase());
        if (list.length >= size) {
          yield list;
          list = [];
        }
      }
    }
    if (list.length > 0) yield list;
  }

  health(): StreamHealth {
    return { ...this.#health, gaps: [...this.#health.gaps] };
  }

  /**
   * Subscribes with this filter (no contracts: closes the streams), split into several streams when
   * it names more than {@link MAX_CONTRACTS_PER_STREAM} contracts. Only the streams whose share
   * changed are replaced. Resolves once the new streams are connected.
   */
  plan(filter: EventFilter): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    const contracts = filter.contractAddresses?.length ?? 0;
    // Split now, so that the whole list (a million contracts on a busy network) is not kept while
    // the streams connect: only the shares are.
    const shares =
      contracts === 0 ? [] : shareFilter(filter, this.#options.maxContractsPerStream ?? MAX_CONTRACTS_PER_STREAM);
    return this.#planShares(shares, contracts);
  }

  async #planShares(shares: EventFilter[], contracts: number): Promise<void> {
    if (contracts === 0) {
      if (this.#events.size > 0) this.#backfill?.deactivate();
      for (const running of this.#events.values()) running.controller.abort();
      this.#events = new Map();
      this.#receipts?.abort();
      this.#receipts = undefined;
      this.#health.events = 'idle';
      this.#health.receipts = 'idle';
      this.#health.contracts = 0;
      return;
    }
    if (this.#events.size === 0) this.#backfill?.activate();
    const next = new Map<string, Running>();
    const opened: Running[] = [];
    // New streams open one after another: 20 subscriptions of 5,000 contracts at once would hold
    // all their request bodies and first answers in memory together.
    let turn: Promise<void> = Promise.resolve();
    for (const share of shares) {
      const key = shareKey(share);
      let running = this.#events.get(key);
      if (!running) {
        running = this.#openEvents(share, key, turn);
        opened.push(running);
        turn = running.connected;
      }
      next.set(key, running);
    }
    if (opened.length === 0 && next.size === this.#events.size) return;
    const previous = [...this.#events.values()].filter((running) => !next.has(running.key));
    this.#events = next;
    this.#health.contracts = contracts;
    this.#refreshEventsHealth();
    if (!this.#receipts) this.#openReceipts();
    const connected = Promise.all(opened.map((running) => running.connected));
    if (previous.length > 0) {
      const timeout = new Promise<void>((resolve) =>
        setTimeout(resolve, this.#options.switchTimeoutMs ?? 10_000).unref(),
      );
      await Promise.race([connected, timeout]);
      for (const running of previous) running.controller.abort();
    } else {
      await connected;
    }
  }

  stop(): void {
    this.#stopped = true;
    this.#backfill?.stop();
    for (const running of this.#events.values()) running.controller.abort();
    this.#receipts?.abort();
    this.#events = new Map();
    this.#receipts = undefined;
  }

  #current(running: Running): boolean {
    return this.#events.get(running.key) === running;
  }

  /** The events streams as one: connected when all are, else the state of the one furthest from it. */
  #refreshEventsHealth(): void {
    let worst: StreamHealth['events'] = 'connected';
    for (const running of this.#events.values()) {
      if (EVENTS_STATE_ORDER.indexOf(running.state) > EVENTS_STATE_ORDER.indexOf(worst)) worst = running.state;
    }
    this.#health.events = this.#events.size === 0 ? 'idle' : worst;
  }

  #openEvents(filter: EventFilter, key: string, after: Promise<void>): Running {
    const controller = new AbortController();
    const running: Running = { key, filter, controller, connected: Promise.resolve(), state: 'connecting' };
    let markConnected: () => void = () => undefined;
    const connected = new Promise<void>((resolve) => {
      markConnected = resolve;
    });
    const stream = this.#platform.indexer.subscribeEventBatches(
      { network: this.network, filter },
      {
        signal: controller.signal,
        ...(this.#options.heartbeatTimeoutMs ? { heartbeatTimeoutMs: this.#options.heartbeatTimeoutMs } : {}),
        ...(this.#options.reconnect ? { reconnect: this.#options.reconnect } : {}),
        onState: (state) => {
          running.state = stateName(state);
          if (this.#current(running)) {
            this.#eventsState(state);
            if (state.kind === 'connected') this.#backfill?.connected(state.attempt > 1);
            else if (state.kind === 'disconnected') this.#backfill?.disconnected();
          }
          if (state.kind === 'connected') markConnected();
        },
        onBadLine: (sample, skipped) =>
          this.#logger.warn(
            { network: this.network, stream: 'events', skipped, err: sample },
            'skipped bad stream lines',
          ),
      },
    );
    void (async () => {
      try {
        await after;
        if (controller.signal.aborted) return;
        for await (const logs of stream) {
          for (const log of logs) {
            // Stopped or replaced while this batch was handed out: the rest is not this stream's any more.
            if (controller.signal.aborted) return;
            if (this.#current(running)) this.#seen(log.blockNumber);
            if (this.#backfill?.hold(() => this.#onLog(log))) continue;
            this.#onLog(log);
          }
        }
      } catch (error) {
        running.state = 'failed';
        if (this.#current(running)) {
          this.#refreshEventsHealth();
          this.#health.lastError = error instanceof Error ? error.message : String(error);
          this.#logger.error({ network: this.network, err: error }, 'event stream failed for good');
        }
      } finally {
        markConnected();
      }
    })();
    running.connected = connected;
    return running;
  }

  #openReceipts(): void {
    const controller = new AbortController();
    this.#receipts = controller;
    const stream = this.#platform.indexer.subscribeReceipts(
      { network: this.network, filter: {} },
      {
        signal: controller.signal,
        ...(this.#options.heartbeatTimeoutMs ? { heartbeatTimeoutMs: this.#options.heartbeatTimeoutMs } : {}),
        ...(this.#options.reconnect ? { reconnect: this.#options.reconnect } : {}),
        onState: (state) => {
          this.#health.receipts = stateName(state);
        },
        onBadLine: (sample, skipped) =>
          this.#logger.warn(
            { network: this.network, stream: 'receipts', skipped, err: sample },
            'skipped bad stream lines',
          ),
      },
    );
    void (async () => {
      try {
        for await (const receipt of stream) {
          this.#advance(receipt.blockNumber);
          this.#backfill?.receipt(receipt.blockNumber);
          // Held too: a reorg must not overtake the held events it reverses.
          if (this.#backfill?.hold(() => this.#onReceipt(receipt))) continue;
          this.#onReceipt(receipt);
        }
      } catch (error) {
        this.#health.receipts = 'failed';
        this.#logger.error({ network: this.network, err: error }, 'receipt stream failed for good');
      }
    })();
  }

  #eventsState(state: StreamState): void {
    this.#refreshEventsHealth();
    if (state.kind === 'disconnected') {
      this.#health.lastError = state.reason.message;
      // With a backfill the blocks missed meanwhile are read back: no gap to measure.
      if (!this.#backfill) this.#lostAfterBlock ??= this.#head;
      this.#logger.warn({ network: this.network, reason: state.reason.message }, 'event stream lost');
    } else if (state.kind === 'reconnecting') {
      this.#health.reconnects++;
    } else if (state.kind === 'connected' && state.attempt > 1) {
      this.#logger.info({ network: this.network, attempt: state.attempt }, 'event stream back');
      // The receipts kept the head moving while events were down: that span was not seen.
      if (this.#lostAfterBlock !== undefined && this.#head !== undefined && this.#head > this.#lostAfterBlock) {
        this.#closeGap(this.#head);
      }
    }
  }

  /** The newest block seen on either stream. */
  #advance(block: number): void {
    this.#head = Math.max(this.#head ?? 0, block);
  }

  #seen(block: number): void {
    this.#advance(block);
    // Receipts were down too: the first event after the reconnect bounds the gap.
    if (this.#lostAfterBlock !== undefined && this.#health.events === 'connected') this.#closeGap(block - 1);
    this.#health.lastBlock = Math.max(this.#health.lastBlock ?? 0, block);
    this.#health.lastEventAt = new Date().toISOString();
  }

  /** Records the blocks between the drop and `until` (inclusive) as not seen. */
  #closeGap(until: number): void {
    const lost = this.#lostAfterBlock;
    this.#lostAfterBlock = undefined;
    if (lost === undefined || until <= lost) return;
    this.reportGap(lost + 1, until);
  }

  /** Records blocks whose events were not seen and will not be (shown by /status). */
  reportGap(fromBlock: number, toBlock: number): void {
    const gap = { network: this.network, fromBlock, toBlock, at: new Date().toISOString() };
    this.#health.gaps = [...this.#health.gaps, gap].slice(-MAX_GAPS_KEPT);
    this.#logger.warn(gap, 'blocks missed while the event stream was down');
    this.#onGap?.(fromBlock, toBlock);
  }
}

/** Events stream states from best to worst, for the state of several streams together. */
const EVENTS_STATE_ORDER: ReadonlyArray<StreamHealth['events']> = [
  'idle',
  'connected',
  'connecting',
  'reconnecting',
  'failed',
];

/**
 * A short key for a share of the filter (its JSON is 200 KB at 5,000 contracts): a packed share is
 * hashed as it is packed, without making its JSON (a million contracts' worth of large strings).
 */
function shareKey(share: EventFilter): string {
  const hash = createHash('sha256');
  const contracts = share.contractAddresses;
  if (contracts instanceof PackedAddresses) {
    hash.update(JSON.stringify({ ...share, contractAddresses: undefined })).update(contracts.bytes());
  } else {
    hash.update(JSON.stringify(share));
  }
  return hash.digest('base64');
}

/**
 * The filter in shares of at most `max` contracts. A contract's share follows from its address, so
 * that watching one more collection changes one share (one stream reopened), not all of them. A
 * packed list of contracts (see {@link PackedAddresses}) gives packed shares, each sorted, so that a
 * share's key does not depend on the order the contracts came in; a list of strings within `max` is
 * kept as it is.
 */
export function shareFilter(filter: EventFilter, max: number): EventFilter[] {
  const contracts = filter.contractAddresses ?? [];
  const packed = !Array.isArray(contracts);
  if (contracts.length <= max && !packed) return [filter];
  const count = contracts.length <= max ? 1 : Math.ceil(contracts.length / max) + 1;
  const list = isPackedList(contracts) ? contracts : PackedAddresses.of(contracts);
  return list
    .split(count, (bytes, at) => (count === 1 ? 0 : hashPackedAddress(bytes, at) % count))
    .map((share) => ({ ...filter, contractAddresses: packed ? share : share.toJSON() }));
}

function isPackedList(list: EventFilter['contractAddresses']): list is PackedList {
  return typeof (list as Partial<PackedList> | undefined)?.split === 'function';
}

function stateName(state: StreamState): StreamHealth['events'] {
  switch (state.kind) {
    case 'connecting':
      return 'connecting';
    case 'connected':
      return 'connected';
    case 'disconnected':
    case 'reconnecting':
      return 'reconnecting';
  }
}
