import {
  isTransient,
  PlatformAbortedError,
  PlatformApiError,
  PlatformBadResponseError,
  PlatformError,
  PlatformNetworkError,
  PlatformTimeoutError,
} from './errors.ts';
import { LineSplitter } from './ndjson.ts';
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
 *
 * Blank lines are heartbeats; a time longer than the heartbeat timeout without a complete line counts
 * as a lost stream, and so does a line longer than `maxLineBytes`.
 * A `{"webrpcError": ...}` line or a non-2xx answer becomes a typed error. Transient failures
 * (network, 5xx, 429, lost or finished stream, heartbeat timeout) reconnect with capped exponential
 * back-off and jitter (each delay between half its ceiling and the ceiling), at least a 429's
 * `Retry-After` up to the cap; the back-off restarts once a record arrives. Final failures
 * (authentication, bad arguments) end the iterator with the error. Breaking out of the loop or
 * aborting the signal closes the connection.
 */
export async function* streamRpc<T>(
  transport: Transport,
  request: RpcRequest,
  outputKey: string,
  normalize: (value: unknown) => T,
  options: StreamOptions = {},
): AsyncGenerator<T, void, undefined> {
  const signal = options.signal ?? new AbortController().signal;
  const heartbeatMs = options.heartbeatTimeoutMs ?? DEFAULT_HEARTBEAT_TIMEOUT_MS;
  const policy = options.reconnect === false ? undefined : { ...DEFAULT_RECONNECT, ...options.reconnect };
  const maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  const operation = `${request.service}/${request.method}`;
  const host = new URL(request.baseUrl).host;
  const emit = options.onState ?? (() => undefined);
  const badLines = new BadLineReporter(options.onBadLine, options.badLineReportMs ?? DEFAULT_BAD_LINE_REPORT_MS);
  let failures = 0;
  let attempt = 0;

  try {
    while (!signal.aborted) {
      attempt++;
      emit({ kind: 'connecting', attempt });
      let reason: PlatformError | undefined;
      let abortConnection: (() => void) | undefined;
      let timer: NodeJS.Timeout | undefined;
      let heartbeatMissed = false;
      const armHeartbeat = () => {
        clearTimeout(timer);
        timer = setTimeout(() => {
          heartbeatMissed = true;
          abortConnection?.();
        }, heartbeatMs);
      };
      try {
        const stream = await transport.openStream(request, signal);
        abortConnection = stream.abort;
        emit({ kind: 'connected', attempt });
        const splitter = new LineSplitter();
        armHeartbeat();
        for await (const chunk of stream.body) {
          const lines = splitter.push(chunk);
          if (splitter.pendingBytes > maxLineBytes) {
            throw new PlatformBadResponseError(operation, host, `stream line longer than ${maxLineBytes} bytes`);
          }
          if (lines.length === 0) continue;
          clearTimeout(timer);
          for (const line of lines) {
            if (line.length === 0 || line === '\r') continue;
            const item = parseLine(line, outputKey, operation, host, transport);
            if (item instanceof PlatformApiError) throw item;
            if (item instanceof PlatformBadResponseError) {
              badLines.add(item);
              continue;
            }
            let value: T;
            try {
              value = normalize(item);
            } catch (cause) {
              badLines.add(
                new PlatformBadResponseError(
                  operation,
                  host,
                  `stream record has the wrong shape: ${cause instanceof Error ? cause.message : String(cause)}`,
                  undefined,
                  { cause },
                ),
              );
              continue;
            }
            // Only a delivered record counts as recovery: real servers send a heartbeat at open even when
            // they fail right after, and the back-off must still grow then.
            failures = 0;
            yield value;
            if (signal.aborted) return;
          }
          armHeartbeat();
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
        clearTimeout(timer);
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

/** Rate-limits {@link StreamOptions.onBadLine}: the first bad line at once, then one summary per interval. */
class BadLineReporter {
  readonly #report: ((sample: PlatformBadResponseError, skipped: number) => void) | undefined;
  readonly #intervalMs: number;
  #window: NodeJS.Timeout | undefined;
  #skipped = 0;
  #sample: PlatformBadResponseError | undefined;

  constructor(report: ((sample: PlatformBadResponseError, skipped: number) => void) | undefined, intervalMs: number) {
    this.#report = report;
    this.#intervalMs = intervalMs;
  }

  add(error: PlatformBadResponseError): void {
    if (!this.#report) return;
    if (this.#window === undefined) {
      this.#report(error, 1);
      if (this.#intervalMs > 0) this.#window = this.#openWindow();
      return;
    }
    this.#skipped++;
    this.#sample ??= error;
  }

  close(): void {
    clearTimeout(this.#window);
    this.#window = undefined;
    this.#flush();
  }

  #openWindow(): NodeJS.Timeout {
    const timer = setTimeout(() => {
      this.#window = undefined;
      // A window that saw bad lines opens the next one, so a steady flow is summed per interval.
      if (this.#flush()) this.#window = this.#openWindow();
    }, this.#intervalMs);
    timer.unref();
    return timer;
  }

  #flush(): boolean {
    const sample = this.#sample;
    if (sample === undefined) return false;
    const skipped = this.#skipped;
    this.#sample = undefined;
    this.#skipped = 0;
    this.#report?.(sample, skipped);
    return true;
  }
}

function parseLine(
  line: string,
  outputKey: string,
  operation: string,
  host: string,
  transport: Transport,
): unknown | PlatformApiError | PlatformBadResponseError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch (cause) {
    const scrubbed = transport.scrub(line);
    const preview = scrubbed.length > 80 ? `${scrubbed.slice(0, 80)}…` : scrubbed;
    return new PlatformBadResponseError(
      operation,
      host,
      `stream line is not JSON: ${JSON.stringify(preview)}`,
      undefined,
      { cause },
    );
  }
  if (parsed === null || typeof parsed !== 'object') {
    return new PlatformBadResponseError(operation, host, 'stream line is not a JSON object');
  }
  const record = parsed as Record<string, unknown>;
  if (Object.hasOwn(record, 'webrpcError')) {
    const e = (record.webrpcError ?? {}) as Record<string, unknown>;
    const detail = typeof e.msg === 'string' && e.msg ? e.msg : typeof e.message === 'string' ? e.message : '';
    return new PlatformApiError(operation, host, {
      errorName: typeof e.error === 'string' ? transport.scrub(e.error) : 'WebrpcStreamLost',
      code: typeof e.code === 'number' ? e.code : -9,
      status: typeof e.status === 'number' ? e.status : 400,
      detail: transport.scrub(detail || 'stream error'),
      causeText: typeof e.cause === 'string' && e.cause ? transport.scrub(e.cause) : undefined,
    });
  }
  const item = record[outputKey];
  if (item === undefined || item === null) {
    return new PlatformBadResponseError(operation, host, `stream line has no "${outputKey}"`);
  }
  return item;
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
