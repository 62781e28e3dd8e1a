import type { Logger } from 'pino';
import type { PlatformClient } from '../platform/client.ts';
import type { ReconnectPolicy, StreamState } from '../platform/stream.ts';
import type { EventFilter, EventLog, TransactionReceipt } from '../platform/types.ts';

/** Blocks that went by while a stream was down: their events were not seen. */
export interface StreamGap {
  network: string;
  /** First and last block not seen (inclusive). */
  fromBlock: number;
  toBlock: number;
  at: string;
}

/** What /status and /readyz show of one network's streams. */
export interface StreamHealth {
  network: string;
  events: 'idle' | 'connecting' | 'connected' | 'reconnecting' | 'failed';
  receipts: 'idle' | 'connecting' | 'connected' | 'reconnecting' | 'failed';
  contracts: number;
  reconnects: number;
  lastEventAt: string | undefined;
  lastBlock: number | undefined;
  lastError: string | undefined;
  gaps: StreamGap[];
}

export interface StreamOptionsForAlerts {
  heartbeatTimeoutMs?: number;
  reconnect?: Partial<ReconnectPolicy>;
  /** How long a new events stream may take to connect before the old one is closed anyway. */
  switchTimeoutMs?: number;
}

interface Running {
  key: string;
  controller: AbortController;
  connected: Promise<void>;
}

const MAX_GAPS_KEPT = 20;

/**
 * The live streams of one network: SubscribeEvents with a filter planned from the watch rules,
 * and SubscribeReceipts for finality and reorgs. A new plan opens the new events stream before
 * closing the old one, so no event falls between them; the overlap's duplicates are dropped
 * downstream by log uid.
 */
export class NetworkStreams {
  readonly network: string;
  readonly #platform: PlatformClient;
  readonly #logger: Logger;
  readonly #onLog: (log: EventLog) => void;
  readonly #onReceipt: (receipt: TransactionReceipt) => void;
  readonly #options: StreamOptionsForAlerts;
  #events: Running | undefined;
  #receipts: AbortController | undefined;
  #stopped = false;
  readonly #health: StreamHealth;
  /** Block of the last event before a disconnect, to measure the gap when the stream is back. */
  #lostAfterBlock: number | undefined;
  #head: number | undefined;

  constructor(
    platform: PlatformClient,
    network: string,
    handlers: { onLog: (log: EventLog) => void; onReceipt: (receipt: TransactionReceipt) => void },
    logger: Logger,
    options: StreamOptionsForAlerts = {},
  ) {
    this.network = network;
    this.#platform = platform;
    this.#logger = logger;
    this.#onLog = handlers.onLog;
    this.#onReceipt = handlers.onReceipt;
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

  health(): StreamHealth {
    return { ...this.#health, gaps: [...this.#health.gaps] };
  }

  /** Subscribes with this filter (no contracts: closes the streams). Resolves once the new stream is connected. */
  async plan(filter: EventFilter): Promise<void> {
    if (this.#stopped) return;
    const contracts = filter.contractAddresses?.length ?? 0;
    const key = JSON.stringify(filter);
    if (contracts === 0) {
      this.#events?.controller.abort();
      this.#events = undefined;
      this.#receipts?.abort();
      this.#receipts = undefined;
      this.#health.events = 'idle';
      this.#health.receipts = 'idle';
      this.#health.contracts = 0;
      return;
    }
    if (this.#events?.key === key) return;
    const previous = this.#events;
    const next = this.#openEvents(filter, key);
    this.#events = next;
    this.#health.contracts = contracts;
    if (!this.#receipts) this.#openReceipts();
    if (previous) {
      const timeout = new Promise<void>((resolve) =>
        setTimeout(resolve, this.#options.switchTimeoutMs ?? 10_000).unref(),
      );
      await Promise.race([next.connected, timeout]);
      previous.controller.abort();
    } else {
      await next.connected;
    }
  }

  stop(): void {
    this.#stopped = true;
    this.#events?.controller.abort();
    this.#receipts?.abort();
    this.#events = undefined;
    this.#receipts = undefined;
  }

  #openEvents(filter: EventFilter, key: string): Running {
    const controller = new AbortController();
    let markConnected: () => void = () => undefined;
    const connected = new Promise<void>((resolve) => {
      markConnected = resolve;
    });
    const stream = this.#platform.indexer.subscribeEvents(
      { network: this.network, filter },
      {
        signal: controller.signal,
        ...(this.#options.heartbeatTimeoutMs ? { heartbeatTimeoutMs: this.#options.heartbeatTimeoutMs } : {}),
        ...(this.#options.reconnect ? { reconnect: this.#options.reconnect } : {}),
        onState: (state) => {
          if (this.#events?.controller === controller) this.#eventsState(state);
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
        for await (const log of stream) {
          if (this.#events?.controller === controller) this.#seen(log.blockNumber);
          this.#onLog(log);
        }
      } catch (error) {
        if (this.#events?.controller === controller) {
          this.#health.events = 'failed';
          this.#health.lastError = error instanceof Error ? error.message : String(error);
          this.#logger.error({ network: this.network, err: error }, 'event stream failed for good');
        }
      } finally {
        markConnected();
      }
    })();
    return { key, controller, connected };
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
          this.#onReceipt(receipt);
        }
      } catch (error) {
        this.#health.receipts = 'failed';
        this.#logger.error({ network: this.network, err: error }, 'receipt stream failed for good');
      }
    })();
  }

  #eventsState(state: StreamState): void {
    this.#health.events = stateName(state);
    if (state.kind === 'disconnected') {
      this.#health.lastError = state.reason.message;
      this.#lostAfterBlock ??= this.#head;
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
    const gap = { network: this.network, fromBlock: lost + 1, toBlock: until, at: new Date().toISOString() };
    this.#health.gaps = [...this.#health.gaps, gap].slice(-MAX_GAPS_KEPT);
    this.#logger.warn(gap, 'blocks missed while the event stream was down');
  }
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
