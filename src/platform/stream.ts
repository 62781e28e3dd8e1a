import type { Readable } from 'node:stream';
import {
  isTransient,
  PlatformAbortedError,
  PlatformApiError,
  PlatformBadResponseError,
  PlatformError,
  PlatformNetworkError,
  PlatformTimeoutError,
} from './errors.ts';
import { LineSplitter, type LineVisitor } from './ndjson.ts';
import type { RecordDrops } from './records/read.ts';
import { SampledReporter } from './sampled-report.ts';
import type { RpcRequest, Transport } from './transport.ts';

/** Reconnect policy of a subscription. */
export interface ReconnectPolicy {
  /** First delay after a lost connection. Default 500 ms. */
  initialDelayMs: number;
  /** Cap of the delay. Default 30 s. */
  maxDelayMs: number;
  /** Growth per consecutive failure. Default 2. */
  factor: number;
  /** Consecutive failed connections before giving up (the iterator then throws). Default: never give up. */
  maxAttempts: number;
}

export const DEFAULT_RECONNECT: ReconnectPolicy = {
  initialDelayMs: 500,
  maxDelayMs: 30_000,
  factor: 2,
  maxAttempts: Number.POSITIVE_INFINITY,
};

/** Default silence after which a stream counts as lost: the server sends a blank line every 10 s. */
export const DEFAULT_HEARTBEAT_TIMEOUT_MS = 15_000;

/** Default cap of one stream line, finished or still waiting for its newline. */
export const DEFAULT_MAX_LINE_BYTES = 1024 * 1024;

/** Default interval of bad-line reports: a server sending garbage costs one report a minute. */
export const DEFAULT_BAD_LINE_REPORT_MS = 60_000;

/**
 * A subscription's state. `connected` comes with the first complete line of a connection (the
 * server's heartbeat at open, or a record), never with the answer's headers alone: a peer that
 * accepts the request and then sends nothing is `connecting` until the heartbeat timeout drops it.
 */
export type StreamState =
  | { kind: 'connecting'; attempt: number }
  | { kind: 'connected'; attempt: number }
  | { kind: 'disconnected'; reason: PlatformError; willReconnect: boolean }
  | { kind: 'reconnecting'; delayMs: number; attempt: number };

export interface StreamOptions {
  /** Ends the subscription; the iterator then finishes without an error. */
  signal?: AbortSignal;
  /**
   * Silence after which the connection counts as lost. Only a complete line (a record, or the blank
   * heartbeat line) is a sign of life: bytes of an unfinished line are not, so a peer that trickles
   * bytes without ever finishing a line cannot keep a dead stream "connected". Default 15 s.
   */
  heartbeatTimeoutMs?: number;
  /** `false`: the first lost connection ends the iterator with its error. */
  reconnect?: Partial<ReconnectPolicy> | false;
  onState?: (state: StreamState) => void;
  /**
   * Lines that could not be used (not JSON, wrong shape) are skipped and the stream goes on. They are
   * reported at most once per {@link badLineReportMs}, so that a server sending garbage costs one log
   * line per interval rather than one per line: the first bad line at once (`skipped` 1), then, at
   * the end of each interval that saw more, how many were skipped with the first of them as the
   * sample. What is still pending is reported when the subscription ends. A sample's message quotes
   * at most 80 characters of its line, with secrets scrubbed.
   */
  onBadLine?: (sample: PlatformBadResponseError, skipped: number) => void;
  /** Interval of {@link onBadLine} reports. Default 60 s; 0 reports every bad line. */
  badLineReportMs?: number;
  /**
   * Largest line, counting an unfinished one still waiting for its newline; past it the connection
   * is dropped as a bad response (and reopened, as other transient failures). Default 1 MiB.
   */
  maxLineBytes?: number;
}

/**
 * Runs a streaming RPC (NDJSON answer) as an async iterable of the records under `outputKey`.
 * Lines that are no record are skipped, reported through `onBadLine` and counted in `drops`.
 *
 * Blank lines are heartbeats; a time longer than the heartbeat timeout without a complete line counts
 * as a lost stream (from the open on: a connection is `connected` only once its first line came),
 * and so does a line longer than `maxLineBytes`.
 * A `{"webrpcError": ...}` line or a non-2xx answer becomes a typed error. Transient failures
 * (network, 5xx, 429, lost or finished stream, heartbeat timeout) reconnect with capped exponential
 * back-off and jitter (each delay between half its ceiling and the ceiling), at least a 429's
 * `Retry-After` up to the cap; the back-off restarts once a record arrives. Final failures
 * (authentication, bad arguments) end the iterator with the error. Breaking out of the loop or
 * aborting the signal closes the connection. A consumer slower than the stream is not a lost stream:
 * the heartbeat timeout runs only while it waits for records, and at most {@link QUEUE_HIGH_BYTES} are
 * read ahead of it before the socket is paused.
 */
export function streamRpc<T>(
  transport: Transport,
  request: RpcRequest,
  outputKey: string,
  normalize: (value: unknown) => T,
  options: StreamOptions = {},
  drops?: RecordDrops,
): AsyncGenerator<T, void, undefined> {
  const signal = options.signal ?? new AbortController().signal;
  return new RecordIterator(streamBatches(transport, request, outputKey, normalize, options, signal, drops), signal);
}

/**
 * {@link streamRpc} a chunk at a time: each batch holds the records the connection delivered together
 * (never none), in order. For busy streams: it saves the consumer an await per record.
 */
export function streamRpcBatches<T>(
  transport: Transport,
  request: RpcRequest,
  outputKey: string,
  normalize: (value: unknown) => T,
  options: StreamOptions = {},
  drops?: RecordDrops,
): AsyncGenerator<T[], void, undefined> {
  return streamBatches(
    transport,
    request,
    outputKey,
    normalize,
    options,
    options.signal ?? new AbortController().signal,
    drops,
  );
}

/** {@link streamRpc} one chunk at a time: each batch holds the records of one chunk, never none. */
async function* streamBatches<T>(
  transport: Transport,
  request: RpcRequest,
  outputKey: string,
  normalize: (value: unknown) => T,
  options: StreamOptions,
  signal: AbortSignal,
  drops: RecordDrops | undefined,
): AsyncGenerator<T[], void, undefined> {
  const heartbeatMs = options.heartbeatTimeoutMs ?? DEFAULT_HEARTBEAT_TIMEOUT_MS;
  const policy = options.reconnect === false ? undefined : { ...DEFAULT_RECONNECT, ...options.reconnect };
  const maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  const operation = `${request.service}/${request.method}`;
  const host = new URL(request.baseUrl).host;
  const emit = options.onState ?? (() => undefined);
  const badLines = new SampledReporter(options.onBadLine, options.badLineReportMs ?? DEFAULT_BAD_LINE_REPORT_MS);
  const records = new RecordReader(outputKey, operation, host, transport, normalize, badLines, drops);
  let failures = 0;
  let attempt = 0;

  try {
    while (!signal.aborted) {
      attempt++;
      emit({ kind: 'connecting', attempt });
      let reason: PlatformError | undefined;
      let abortConnection: (() => void) | undefined;
      let chunks: ChunkQueue | undefined;
      let heartbeatMissed = false;
      const watchdog = new Watchdog(heartbeatMs, () => {
        heartbeatMissed = true;
        abortConnection?.();
      });
      try {
        const stream = await transport.openStream(request, signal);
        abortConnection = stream.abort;
        let live = false;
        chunks = new ChunkQueue(stream.body);
        const splitter = new LineSplitter();
        records.reset();
        watchdog.arm();
        for (;;) {
          const chunk = chunks.take();
          if (chunk === undefined) {
            if (chunks.failed) throw chunks.failure;
            if (chunks.ended) break;
            await chunks.more();
            continue;
          }
          // Each line is decoded and parsed as it is found: a chunk's lines are never all alive at once.
          const completed = splitter.each(chunk, records);
          if (splitter.pendingBytes > maxLineBytes) {
            throw new PlatformBadResponseError(operation, host, `stream line longer than ${maxLineBytes} bytes`);
          }
          if (completed === 0) continue;
          watchdog.disarm();
          if (!live && records.streamError === undefined) {
            // Headers prove little (a proxy sends them for a dead backend): a complete line proves the stream.
            live = true;
            emit({ kind: 'connected', attempt });
          }
          if (records.batch.length > 0) {
            // Only a delivered record counts as recovery: real servers send a heartbeat at open even when
            // they fail right after, and the back-off must still grow then.
            failures = 0;
            const batch = records.batch;
            records.batch = [];
            yield batch;
            if (signal.aborted) return;
          }
          if (records.streamError) throw records.streamError;
          watchdog.arm();
        }
        reason = new PlatformApiError(operation, host, {
          errorName: 'WebrpcStreamFinished',
          code: -10,
          status: 200,
          detail: 'the server closed the stream',
        });
      } catch (raw) {
        if (signal.aborted) return;
        if (heartbeatMissed) {
          reason = new PlatformTimeoutError(operation, host, heartbeatMs, 'waiting for a heartbeat or a line', {
            cause: raw,
          });
        } else if (raw instanceof PlatformError) {
          reason = raw;
        } else {
          reason = new PlatformNetworkError(operation, host, `stream failed: ${(raw as Error)?.message ?? raw}`, {
            cause: raw,
          });
        }
      } finally {
        watchdog.stop();
        chunks?.close();
        abortConnection?.();
      }

      if (reason instanceof PlatformAbortedError) return;
      const transient = isTransient(reason);
      failures++;
      const willReconnect = policy !== undefined && transient && failures <= policy.maxAttempts;
      emit({ kind: 'disconnected', reason, willReconnect });
      if (!willReconnect) {
        if (policy === undefined && reason instanceof PlatformApiError && reason.code === -10) return;
        throw reason;
      }
      const ceiling = Math.min(policy.maxDelayMs, policy.initialDelayMs * policy.factor ** (failures - 1));
      const backoffMs = Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
      const retryAfterMs = reason instanceof PlatformApiError ? reason.retryAfterMs : undefined;
      const delayMs =
        retryAfterMs === undefined ? backoffMs : Math.max(backoffMs, Math.min(retryAfterMs, policy.maxDelayMs));
      emit({ kind: 'reconnecting', delayMs, attempt: attempt + 1 });
      try {
        await sleep(delayMs, signal);
      } catch {
        return;
      }
    }
  } finally {
    badLines.close();
  }
}

/**
 * The iterator {@link streamRpc} returns. It hands out the records of a chunk one by one, each with an
 * already settled promise, and steps the generator underneath once per chunk: a generator step per
 * record (a resumption and a chain of promises) was, after JSON.parse, one of the larger costs of
 * reading a busy stream. Calls are served in order, as a generator serves them; aborting the signal
 * ends it at the next record, and `return()` closes the connection.
 */
class RecordIterator<T> implements AsyncGenerator<T, void, undefined> {
  readonly #batches: AsyncGenerator<T[], void, undefined>;
  readonly #signal: AbortSignal;
  #batch: T[] = [];
  #index = 0;
  #finished = false;
  #pending: Promise<IteratorResult<T, void>> | undefined;

  constructor(batches: AsyncGenerator<T[], void, undefined>, signal: AbortSignal) {
    this.#batches = batches;
    this.#signal = signal;
  }

  next(): Promise<IteratorResult<T, void>> {
    if (this.#pending !== undefined) {
      const after = () => this.next();
      return this.#pending.then(after, after);
    }
    if (this.#finished) return Promise.resolve({ value: undefined, done: true });
    if (this.#index < this.#batch.length) {
      if (this.#signal.aborted) return this.return();
      return Promise.resolve({ value: this.#batch[this.#index++] as T, done: false });
    }
    this.#pending = this.#step(this.#batches.next());
    return this.#pending;
  }

  async return(): Promise<IteratorResult<T, void>> {
    this.#finish();
    await this.#batches.return(undefined);
    return { value: undefined, done: true };
  }

  throw(error: unknown): Promise<IteratorResult<T, void>> {
    this.#batch = [];
    this.#index = 0;
    this.#pending = this.#step(this.#batches.throw(error));
    return this.#pending;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async #step(step: Promise<IteratorResult<T[], void>>): Promise<IteratorResult<T, void>> {
    try {
      const result = await step;
      if (result.done) {
        this.#finish();
        return { value: undefined, done: true };
      }
      // A return() during the step ends the iterator after this record, as it would a generator.
      if (!this.#finished) this.#batch = result.value;
      this.#index = 1;
      return { value: result.value[0] as T, done: false };
    } catch (error) {
      this.#finish();
      throw error;
    } finally {
      this.#pending = undefined;
    }
  }

  #finish(): void {
    this.#finished = true;
    this.#batch = [];
    this.#index = 0;
  }
}

/**
 * A subscription's lines into records, one {@link LineSplitter.each} visit a line: records gather in
 * {@link batch}, lines that are no record are reported through a {@link SampledReporter} and skipped,
 * and a `{"webrpcError": ...}` line is kept as {@link streamError}, which ends the connection. One
 * per subscription, reset for each connection: its `line` stays one function for every connection
 * (see {@link LineVisitor}), and a record's parse is most of a busy stream's cost.
 */
class RecordReader<T> implements LineVisitor {
  batch: T[] = [];
  streamError: PlatformApiError | undefined;
  readonly #outputKey: string;
  readonly #operation: string;
  readonly #host: string;
  readonly #transport: Transport;
  readonly #normalize: (value: unknown) => T;
  readonly #badLines: SampledReporter<PlatformBadResponseError>;
  readonly #drops: RecordDrops | undefined;

  constructor(
    outputKey: string,
    operation: string,
    host: string,
    transport: Transport,
    normalize: (value: unknown) => T,
    badLines: SampledReporter<PlatformBadResponseError>,
    drops: RecordDrops | undefined,
  ) {
    this.#outputKey = outputKey;
    this.#operation = operation;
    this.#host = host;
    this.#transport = transport;
    this.#normalize = normalize;
    this.#badLines = badLines;
    this.#drops = drops;
  }

  /** A new connection: nothing gathered, no error. */
  reset(): void {
    this.batch = [];
    this.streamError = undefined;
  }

  line(line: string): boolean {
    if (line.length === 0 || line === '\r') return true;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch (cause) {
      const scrubbed = this.#transport.scrub(line);
      const preview = scrubbed.length > 80 ? `${scrubbed.slice(0, 80)}…` : scrubbed;
      return this.#skip(`stream line is not JSON: ${JSON.stringify(preview)}`, cause);
    }
    if (parsed === null || typeof parsed !== 'object') return this.#skip('stream line is not a JSON object');
    const record = parsed as Record<string, unknown>;
    if (record.webrpcError !== undefined) {
      this.streamError = streamErrorOf(record.webrpcError, this.#operation, this.#host, this.#transport);
      return false;
    }
    const item = record[this.#outputKey];
    if (item === undefined || item === null) return this.#skip(`stream line has no "${this.#outputKey}"`);
    let value: T;
    try {
      value = this.#normalize(item);
    } catch (cause) {
      const reason = cause instanceof Error ? cause.message : String(cause);
      return this.#skip(`stream record has the wrong shape: ${reason}`, cause);
    }
    this.batch.push(value);
    return true;
  }

  /** Counts and reports a line that is no record; the stream goes on. */
  #skip(message: string, cause?: unknown): true {
    this.#drops?.count(this.#operation, 1);
    this.#badLines.add(
      new PlatformBadResponseError(
        this.#operation,
        this.#host,
        message,
        undefined,
        cause === undefined ? undefined : { cause },
      ),
    );
    return true;
  }
}

/** The `webrpcError` of a `{"webrpcError": ...}` line as the typed error it stands for. */
function streamErrorOf(webrpcError: unknown, operation: string, host: string, transport: Transport): PlatformApiError {
  const e: Record<string, unknown> = webrpcError !== null && typeof webrpcError === 'object' ? { ...webrpcError } : {};
  const detail = typeof e.msg === 'string' && e.msg ? e.msg : typeof e.message === 'string' ? e.message : '';
  return new PlatformApiError(operation, host, {
    errorName: typeof e.error === 'string' ? transport.scrub(e.error) : 'WebrpcStreamLost',
    code: typeof e.code === 'number' ? e.code : -9,
    status: typeof e.status === 'number' ? e.status : 400,
    detail: transport.scrub(detail || 'stream error'),
    causeText: typeof e.cause === 'string' && e.cause ? transport.scrub(e.cause) : undefined,
  });
}

/**
 * The heartbeat timeout of one connection. It is armed and disarmed once per chunk, so arming only
 * moves a deadline: the timer is set when none is pending and set again when it fires before the
 * deadline, which keeps timer operations off a busy stream's path.
 */
class Watchdog {
  readonly #ms: number;
  readonly #expired: () => void;
  #deadline = Number.POSITIVE_INFINITY;
  #timer: NodeJS.Timeout | undefined;

  constructor(ms: number, expired: () => void) {
    this.#ms = ms;
    this.#expired = expired;
  }

  arm(): void {
    this.#deadline = performance.now() + this.#ms;
    this.#timer ??= setTimeout(this.#check, this.#ms);
  }

  disarm(): void {
    this.#deadline = Number.POSITIVE_INFINITY;
  }

  stop(): void {
    this.disarm();
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  readonly #check = (): void => {
    this.#timer = undefined;
    if (this.#deadline === Number.POSITIVE_INFINITY) return;
    const left = this.#deadline - performance.now();
    if (left > 0) this.#timer = setTimeout(this.#check, left);
    else this.#expired();
  };
}

/** Bytes received ahead of the consumer before the connection is paused, and the level that resumes it. */
const QUEUE_HIGH_BYTES = 256 * 1024;
const QUEUE_LOW_BYTES = 64 * 1024;

/**
 * One connection's body in flowing mode: chunks are queued as the socket delivers them, each as it
 * came (a Readable's async iterator concatenates whatever is buffered into one new Buffer per read,
 * a copy of every byte). Past {@link QUEUE_HIGH_BYTES} waiting the body is paused, which pauses the
 * socket (TCP back-pressure), until the consumer is down to {@link QUEUE_LOW_BYTES}.
 */
class ChunkQueue {
  failed = false;
  failure: unknown;
  ended = false;
  readonly #body: Readable;
  #chunks: Buffer[] = [];
  #head = 0;
  #bytes = 0;
  #paused = false;
  #closed = false;
  #wake: (() => void) | undefined;

  constructor(body: Readable) {
    this.#body = body;
    body.on('data', (chunk: Buffer) => {
      if (this.#closed) return;
      this.#chunks.push(chunk);
      this.#bytes += chunk.length;
      if (!this.#paused && this.#bytes > QUEUE_HIGH_BYTES) {
        this.#paused = true;
        body.pause();
      }
      this.#notify();
    });
    body.on('end', () => {
      this.ended = true;
      this.#notify();
    });
    body.on('error', (error: unknown) => this.#fail(error));
    body.on('close', () => this.#fail(new Error('the stream closed before its end')));
  }

  /** The oldest chunk not taken yet, if any. */
  take(): Buffer | undefined {
    if (this.#head === this.#chunks.length) return undefined;
    const chunk = this.#chunks[this.#head] as Buffer;
    this.#head++;
    if (this.#head === this.#chunks.length) {
      this.#chunks.length = 0;
      this.#head = 0;
    } else if (this.#head >= 1024) {
      // A consumer that never quite catches up never empties the list: drop the taken ones now and then.
      this.#chunks.splice(0, this.#head);
      this.#head = 0;
    }
    this.#bytes -= chunk.length;
    if (this.#paused && this.#bytes <= QUEUE_LOW_BYTES) {
      this.#paused = false;
      this.#body.resume();
    }
    return chunk;
  }

  /** Resolves when a chunk arrives or the body ends or fails. */
  more(): Promise<void> {
    return new Promise((resolve) => {
      this.#wake = resolve;
    });
  }

  /** Drops what is queued and ignores what still comes until the connection is aborted. */
  close(): void {
    this.#closed = true;
    this.#chunks.length = 0;
    this.#head = 0;
    this.#wake = undefined;
  }

  #fail(error: unknown): void {
    if (this.failed || this.ended) return;
    this.failed = true;
    this.failure = error;
    this.#notify();
  }

  #notify(): void {
    const wake = this.#wake;
    if (wake === undefined) return;
    this.#wake = undefined;
    wake();
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
