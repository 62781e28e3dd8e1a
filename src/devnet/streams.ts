import type { ServerResponse } from 'node:http';
import type { BlockRecord, LogRecord, TxnRecord } from './chain.ts';
import { errors } from './errors.ts';
import type { StreamDrop } from './faults.ts';
import { type EventFilterSpec, matchLog, matchReceipt, type ReceiptFilterSpec } from './filters.ts';
import type { NetworkState } from './state.ts';
import { eventLogLine, receiptLine } from './wire.ts';

/** Buffered bytes after which a subscriber that does not read counts as lost. */
const MAX_BUFFERED_BYTES = 64 * 1024 * 1024;

export const WEBRPC_HEADER = 'webrpc@v0.31.2;floorwatch-devnet@v0.1.0';

type Subscription = { kind: 'events'; filter: EventFilterSpec } | { kind: 'receipts'; filter: ReceiptFilterSpec };

interface Subscriber {
  id: number;
  network: NetworkState;
  res: ServerResponse;
  subscription: Subscription;
  sent: number;
  drop: StreamDrop | undefined;
  timers: NodeJS.Timeout[];
  closed: boolean;
}

/**
 * The open SubscribeEvents and SubscribeReceipts streams. Each mined block is matched against
 * every subscriber's filter and written as NDJSON (one `{"log":…}` or `{"receipt":…}` per line),
 * each log or receipt rendered once however many subscribers get it. A reorganisation sends the
 * removed blocks' logs again with `type: BLOCK_REMOVED` and their receipts with `reorged: true`.
 * A blank line is sent at open and then every heartbeat interval.
 */
export class StreamHub {
  readonly #subscribers = new Map<NetworkState, Set<Subscriber>>();
  readonly #heartbeatMs: number;
  #nextId = 1;

  constructor(heartbeatMs: number) {
    this.#heartbeatMs = heartbeatMs;
  }

  /** Starts delivering the blocks of `network`. */
  attach(network: NetworkState): void {
    this.#subscribers.set(network, new Set());
    network.chain.listen({
      onBlock: (block, finalized) => this.#onBlock(network, block, finalized),
      onReorg: (removed) => this.#onReorg(network, removed),
    });
  }

  get size(): number {
    let total = 0;
    for (const set of this.#subscribers.values()) total += set.size;
    return total;
  }

  open(network: NetworkState, res: ServerResponse, subscription: Subscription, drop: StreamDrop | undefined): void {
    const sub: Subscriber = {
      id: this.#nextId++,
      network,
      res,
      subscription,
      sent: 0,
      drop,
      timers: [],
      closed: false,
    };
    res.writeHead(200, {
      'content-type': 'application/x-ndjson',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-content-type-options': 'nosniff',
      webrpc: WEBRPC_HEADER,
    });
    res.socket?.setNoDelay(true);
    res.write('\n');
    this.#subscribers.get(network)?.add(sub);
    res.on('close', () => this.#forget(sub));
    if (this.#heartbeatMs > 0) {
      const heartbeat = setInterval(() => {
        if (!sub.closed) res.write('\n');
      }, this.#heartbeatMs);
      heartbeat.unref();
      sub.timers.push(heartbeat);
    }
    if (drop?.afterMs !== undefined) {
      const timer = setTimeout(() => this.#drop(sub), drop.afterMs);
      timer.unref();
      sub.timers.push(timer);
    }
    if (drop?.afterMessages === 0) this.#drop(sub);
  }

  /** Ends every stream (the server is closing). */
  closeAll(): void {
    for (const set of this.#subscribers.values()) {
      for (const sub of [...set]) {
        this.#forget(sub);
        sub.res.end();
      }
    }
  }

  #onBlock(network: NetworkState, block: BlockRecord, finalized: readonly BlockRecord[]): void {
    const subscribers = this.#subscribers.get(network);
    if (!subscribers || subscribers.size === 0) return;
    const receipts = new Map<TxnRecord, string>();
    const finalReceipts = new Map<TxnRecord, string>();
    for (const sub of [...subscribers]) {
      const lines: string[] = [];
      if (sub.subscription.kind === 'events') {
        const filter = sub.subscription.filter;
        for (const txn of block.txns) {
          for (const log of txn.logs) {
            if (!matchLog(filter, log, txn)) continue;
            log.line ??= eventLogLine(log, txn, block, network.chainId);
            lines.push(log.line);
          }
        }
      } else {
        const filter = sub.subscription.filter;
        for (const txn of block.txns) {
          if (!matchReceipt(filter, txn)) continue;
          let line = receipts.get(txn);
          if (line === undefined) {
            line = receiptLine(txn, { final: block.final, reorged: false });
            receipts.set(txn, line);
          }
          lines.push(line);
        }
        for (const done of finalized) {
          if (done === block) continue;
          for (const txn of done.txns) {
            if (!matchReceipt(filter, txn)) continue;
            let line = finalReceipts.get(txn);
            if (line === undefined) {
              line = receiptLine(txn, { final: true, reorged: false });
              finalReceipts.set(txn, line);
            }
            lines.push(line);
          }
        }
      }
      if (lines.length > 0) this.#write(sub, lines);
    }
    // Rendered lines are for this block's subscribers only; old blocks must not hold them.
    for (const txn of block.txns) for (const log of txn.logs) log.line = undefined;
  }

  #onReorg(network: NetworkState, removed: readonly BlockRecord[]): void {
    const subscribers = this.#subscribers.get(network);
    if (!subscribers) return;
    const lines = new Map<TxnRecord, string>();
    const removedLogs = new Map<LogRecord, string>();
    for (const sub of [...subscribers]) {
      if (sub.subscription.kind === 'events') {
        // The logs of the removed blocks again, newest block first, as BLOCK_REMOVED.
        const out: string[] = [];
        for (const block of removed) {
          for (const txn of block.txns) {
            for (const log of txn.logs) {
              if (!matchLog(sub.subscription.filter, log, txn)) continue;
              let line = removedLogs.get(log);
              if (line === undefined) {
                line = eventLogLine(log, txn, block, network.chainId, 'BLOCK_REMOVED');
                removedLogs.set(log, line);
              }
              out.push(line);
            }
          }
        }
        if (out.length > 0) this.#write(sub, out);
        continue;
      }
      const out: string[] = [];
      for (const block of removed) {
        for (const txn of block.txns) {
          if (!matchReceipt(sub.subscription.filter, txn)) continue;
          let line = lines.get(txn);
          if (line === undefined) {
            line = receiptLine(txn, { final: false, reorged: true });
            lines.set(txn, line);
          }
          out.push(line);
        }
      }
      if (out.length > 0) this.#write(sub, out);
    }
  }

  #write(sub: Subscriber, lines: string[]): void {
    if (sub.closed) return;
    const limit = sub.drop?.afterMessages;
    if (limit !== undefined && sub.sent + lines.length >= limit) {
      const allowed = limit - sub.sent;
      sub.sent = limit;
      if (allowed <= 0) {
        this.#drop(sub);
        return;
      }
      // The drop waits until the allowed records are handed to the socket, or they would be lost with it.
      this.#forget(sub);
      sub.res.write(lines.slice(0, allowed).join(''), () => this.#terminate(sub));
      return;
    }
    sub.sent += lines.length;
    sub.res.write(lines.length === 1 ? (lines[0] as string) : lines.join(''));
    if (sub.res.writableLength > MAX_BUFFERED_BYTES) {
      this.#fail(sub, 'the subscriber does not read fast enough');
    }
  }

  #drop(sub: Subscriber): void {
    if (sub.closed) return;
    this.#forget(sub);
    this.#terminate(sub);
  }

  #terminate(sub: Subscriber): void {
    if (sub.drop?.mode === 'error') {
      sub.res.end(`${JSON.stringify({ webrpcError: errors.streamLost('injected fault: stream dropped').toBody() })}\n`);
    } else {
      sub.res.destroy();
    }
  }

  #fail(sub: Subscriber, cause: string): void {
    this.#forget(sub);
    sub.res.end(`${JSON.stringify({ webrpcError: errors.streamLost(cause).toBody() })}\n`);
  }

  #forget(sub: Subscriber): void {
    if (sub.closed) return;
    sub.closed = true;
    for (const timer of sub.timers) clearTimeout(timer);
    this.#subscribers.get(sub.network)?.delete(sub);
  }
}
