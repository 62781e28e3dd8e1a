/**
 * Assembly: one network's logs, in chain order, grouped into transactions and classified into chain
 * events. A transaction is complete once a log of the next one arrives, or after a short quiet time.
 */
import type { Logger } from 'pino';
import type { EventLog } from '../platform/types.ts';
import { classifyTransaction } from './classify.ts';
import type { ChainEvent } from './types.ts';

/** Options of {@link TransactionAssembler}. */
export interface AssemblerOptions {
  /** How many recent log uids are remembered to drop duplicates (FIFO). Default 100,000. */
  recentUids?: number;
}

/**
 * Groups a chain-ordered stream of logs into transactions keyed by (blockHash, txnHash). `push`
 * returns the previous transaction's logs when a log of another transaction arrives; `flush` returns
 * the transaction in progress ({@link NetworkAssembly} calls it after a short quiet period). Logs whose uid was
 * seen among the last `recentUids` are dropped. No timers, no I/O.
 */
export class TransactionAssembler {
  private current: EventLog[] = [];
  private key = '';
  private readonly seen = new Set<string>();
  private readonly ring: Array<string | undefined>;
  private next = 0;
  private dropped = 0;

  constructor(options: AssemblerOptions = {}) {
    this.ring = new Array<string | undefined>(Math.max(1, options.recentUids ?? 100_000));
  }

  /** Adds one log; returns a completed transaction's logs, if this log completed one. */
  push(log: EventLog): EventLog[] | undefined {
    if (this.seen.has(log.uid)) {
      this.dropped++;
      return undefined;
    }
    this.remember(log.uid);
    const key = `${String(log.blockHash).toLowerCase()}|${String(log.txnHash).toLowerCase()}`;
    if (this.current.length > 0 && key !== this.key) {
      const done = this.current;
      this.current = [log];
      this.key = key;
      return done;
    }
    this.key = key;
    this.current.push(log);
    return undefined;
  }

  /** The transaction in progress, if any, now considered complete. */
  flush(): EventLog[] | undefined {
    if (this.current.length === 0) return undefined;
    const done = this.current;
    this.current = [];
    this.key = '';
    return done;
  }

  /** Logs held for the transaction in progress. */
  pending(): number {
    return this.current.length;
  }

  /** Duplicate logs dropped so far. */
  get duplicates(): number {
    return this.dropped;
  }

  private remember(uid: string): void {
    const old = this.ring[this.next];
    if (old !== undefined) this.seen.delete(old);
    this.ring[this.next] = uid;
    this.seen.add(uid);
    this.next = (this.next + 1) % this.ring.length;
  }
}

export interface NetworkAssemblyOptions {
  network: string;
  /** Whether a contract (lower case) is a watched collection, for the classifier. */
  isCollection: (address: string) => boolean;
  /** The marketplace contracts (lower case) of the network, when known: request events of others are ignored. */
  marketplaces: ReadonlySet<string> | undefined;
  /** A transaction's logs are complete once the next transaction starts, or after this quiet time. Default 2 ms. */
  flushDelayMs?: number | undefined;
  /** Receives each complete transaction's events, in chain order. */
  onEvents: (events: ChainEvent[]) => void;
  logger: Logger;
}

/** {@link TransactionAssembler} with its quiet-time timer, and the classifier behind it. */
export class NetworkAssembly {
  readonly #o: NetworkAssemblyOptions;
  readonly #assembler = new TransactionAssembler();
  #timer: NodeJS.Timeout | undefined;
  /** Block of the transaction the assembler holds, if it holds one. */
  #assembling: number | undefined;

  constructor(options: NetworkAssemblyOptions) {
    this.#o = options;
  }

  push(log: EventLog): void {
    this.#assembling = log.blockNumber;
    const complete = this.#assembler.push(log);
    if (complete) this.#transaction(complete);
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.flush(), this.#o.flushDelayMs ?? 2);
  }

  /** The transaction in progress is complete (its logs came together, or the stream went quiet). */
  flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#assembling = undefined;
    const rest = this.#assembler.flush();
    if (rest) this.#transaction(rest);
  }

  /** Flushes a transaction of a block up to `block`: every log of those blocks has been pushed. */
  flushThrough(block: number): void {
    if (this.#assembling !== undefined && this.#assembling <= block) this.flush();
  }

  stop(): void {
    clearTimeout(this.#timer);
  }

  #transaction(logs: EventLog[]): void {
    const { network, marketplaces } = this.#o;
    const { events, skipped } = classifyTransaction(logs, {
      network,
      isCollection: this.#o.isCollection,
      ...(marketplaces ? { isMarketplace: (address: string) => marketplaces.has(address) } : {}),
    });
    for (const bad of skipped) this.#o.logger.warn({ network, ...bad }, 'skipped a log');
    this.#o.onEvents(events);
  }
}
