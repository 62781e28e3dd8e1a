import { randomBytes } from 'node:crypto';
import * as http from 'node:http';
import type * as https from 'node:https';
import type { Readable } from 'node:stream';
import type { Pool } from 'undici';
import { type BodyRead, type ReadableBody, readBody } from './body.ts';
import {
  isTransient,
  PlatformAbortedError,
  PlatformApiError,
  PlatformBadResponseError,
  PlatformError,
  PlatformNetworkError,
  PlatformTimeoutError,
} from './errors.ts';

/** Which credential an operation carries (spec, "Authentication"). */
export type Credential = 'accessKey' | 'bearer' | 'both';

export interface RetryPolicy {
  /** Retries after the first attempt. Default 3. */
  retries: number;
  /** First back-off, doubled each retry, with full jitter. Default 250 ms. */
  baseDelayMs: number;
  /** Cap of one back-off, and of a honoured Retry-After. Default 8 s. */
  maxDelayMs: number;
}

export interface TimeoutPolicy {
  /** TCP/TLS connect. Default 5 s. */
  connectMs: number;
  /** Until the response headers arrive. Default 15 s. */
  headersMs: number;
  /** Between body chunks. Default 15 s. */
  bodyMs: number;
  /** Whole call including retries, unless the caller gives its own. Default 30 s. */
  totalMs: number;
  /**
   * Reading a whole error answer (non-2xx), of a unary call or of a stream's open. A stream has no
   * body timeout of its own, so without this an endless error body would hold it forever. Default 10 s.
   */
  errorBodyMs: number;
}

/**
 * Sizes of answer bodies the client accepts. A body past its limit is not read further: the
 * connection is closed and the call fails with a {@link PlatformBadResponseError} naming the limit.
 */
export interface BodyLimits {
  /** A unary call's 2xx answer. Default 16 MiB. */
  bodyBytes: number;
  /** An error answer (non-2xx), of a unary call or of a stream's open. Default 64 KiB. */
  errorBodyBytes: number;
}

export const DEFAULT_RETRY: RetryPolicy = { retries: 3, baseDelayMs: 250, maxDelayMs: 8_000 };
export const DEFAULT_TIMEOUTS: TimeoutPolicy = {
  connectMs: 5_000,
  headersMs: 15_000,
  bodyMs: 15_000,
  totalMs: 30_000,
  errorBodyMs: 10_000,
};
export const DEFAULT_LIMITS: BodyLimits = { bodyBytes: 16 * 1024 * 1024, errorBodyBytes: 64 * 1024 };

/** What the transport reports after every attempt (for metrics and debug logs). */
export interface CallReport {
  operation: string;
  host: string;
  attempt: number;
  /** HTTP status, or the error class name when there was no answer. */
  outcome: number | string;
  durationMs: number;
  /** Sent as `x-request-id`; the same for every attempt of one call, so the platform's logs can be matched. */
  requestId: string;
}

export interface TransportOptions {
  accessKey?: string | undefined;
  secretToken?: string | undefined;
  retry?: Partial<RetryPolicy>;
  timeouts?: Partial<TimeoutPolicy>;
  limits?: Partial<BodyLimits>;
  /** Keep-alive connections per origin. Default 16. */
  connectionsPerOrigin?: number;
  userAgent?: string;
  onCall?: (report: CallReport) => void;
  /** Injected for tests that need a controllable sleep; defaults to a timer. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export interface CallOptions {
  signal?: AbortSignal | undefined;
  /** Overrides the whole-call timeout. */
  timeoutMs?: number | undefined;
}

export interface RpcRequest {
  /** Base address (scheme, host, optional path prefix), without `/rpc`. */
  baseUrl: string;
  service: string;
  method: string;
  credential: Credential;
  body: unknown;
  /** False for operations that must never be repeated (UnpublishCollection, GenerateBuyTransaction). */
  retryable: boolean;
}

export interface OpenStream {
  /** Read in flowing mode ('data' events): chunks come as the socket delivers them, never concatenated. */
  body: Readable;
  /** Aborts the underlying request. */
  abort: () => void;
}

/**
 * undici (unary calls) is loaded on the first unary call: it costs about 100 ms of CPU to load, which
 * a process that only reads streams (over node:http, see {@link Transport.openStream}) never needs.
 */
let undiciModule: Promise<typeof import('undici')> | undefined;
const loadUndici = () => {
  undiciModule ??= import('undici');
  return undiciModule;
};

/** node:https, loaded for the first stream to an https origin (TLS is not loaded for plain http). */
let httpsModule: Promise<typeof https> | undefined;
const loadHttps = () => {
  httpsModule ??= import('node:https');
  return httpsModule;
};

/** A stream's connection or answer headers took longer than the transport's {@link TimeoutPolicy}. */
class StreamOpenTimeout extends Error {
  constructor(readonly phase: 'connect' | 'headers') {
    super(phase === 'connect' ? 'connect timeout' : 'headers timeout');
  }
}

const sleepTimer = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/**
 * HTTP transport for webrpc-style calls: unary calls over a keep-alive undici pool per origin,
 * streams over Node's built-in node:http client (see {@link Transport.openStream}), credentials per
 * operation, timeouts, retries with capped exponential back-off and full jitter for transient
 * failures only (network, 5xx, 408, 429 with its Retry-After), and error bodies turned into typed
 * errors. Known secrets are scrubbed from every message it produces.
 */
export class Transport {
  readonly retry: RetryPolicy;
  readonly timeouts: TimeoutPolicy;
  readonly limits: BodyLimits;
  readonly #pools = new Map<string, Pool>();
  /** Keep-alive agents of the streams (node:http), made on the first stream of each scheme. */
  #httpAgent: http.Agent | undefined;
  #httpsAgent: https.Agent | undefined;
  readonly #accessKey: string | undefined;
  readonly #secretToken: string | undefined;
  readonly #connections: number;
  readonly #userAgent: string;
  readonly #onCall: ((report: CallReport) => void) | undefined;
  readonly #sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Open streams, aborted by {@link close} (a pool waits for in-flight requests, and a stream never ends). */
  readonly #streams = new Map<AbortController, () => PlatformAbortedError>();
  #closed = false;

  constructor(options: TransportOptions = {}) {
    this.retry = { ...DEFAULT_RETRY, ...options.retry };
    this.timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts };
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.#accessKey = options.accessKey || undefined;
    this.#secretToken = options.secretToken || undefined;
    this.#connections = options.connectionsPerOrigin ?? 16;
    this.#userAgent = options.userAgent ?? 'floorwatch';
    this.#onCall = options.onCall;
    this.#sleep = options.sleep ?? sleepTimer;
  }

  /** Replaces every configured secret in `text` with `[redacted]`. */
  scrub(text: string): string {
    let out = text;
    // Longest first: a secret that contains the other must be replaced whole.
    const secrets = [this.#accessKey, this.#secretToken].sort((a, b) => (b?.length ?? 0) - (a?.length ?? 0));
    for (const secret of secrets) {
      if (secret && secret.length >= 4) out = out.split(secret).join('[redacted]');
    }
    return out;
  }

  /** One unary call; resolves with the parsed JSON object of a 2xx answer. */
  async call(request: RpcRequest, options: CallOptions = {}): Promise<Record<string, unknown>> {
    const operation = `${request.service}/${request.method}`;
    const url = new URL(request.baseUrl);
    const host = url.host;
    const totalMs = options.timeoutMs ?? this.timeouts.totalMs;
    const deadline = AbortSignal.timeout(totalMs);
    const signal = options.signal ? AbortSignal.any([options.signal, deadline]) : deadline;
    const body = JSON.stringify(request.body ?? {});
    const maxAttempts = request.retryable ? this.retry.retries + 1 : 1;
    const requestId = newRequestId();

    for (let attempt = 1; ; attempt++) {
      const started = performance.now();
      try {
        if (this.#closed) throw closedError(operation, host);
        const result = await this.#attempt(request, operation, url, body, signal, requestId);
        this.#report(operation, host, attempt, 200, started, requestId);
        return result;
      } catch (raw) {
        const error = this.#classify(raw, operation, host, signal, options.signal, totalMs);
        this.#report(
          operation,
          host,
          attempt,
          error instanceof PlatformApiError ? error.status : error.name,
          started,
          requestId,
        );
        // Once the deadline passed (or the caller aborted) another attempt could only fail the same way.
        if (attempt >= maxAttempts || !isTransient(error) || signal.aborted) throw error;
        const retryAfter = error instanceof PlatformApiError ? error.retryAfterMs : undefined;
        if (retryAfter !== undefined && retryAfter > this.retry.maxDelayMs) throw error;
        const backoff = Math.random() * Math.min(this.retry.maxDelayMs, this.retry.baseDelayMs * 2 ** (attempt - 1));
        try {
          await this.#sleep(retryAfter ?? backoff, signal);
        } catch {
          throw this.#classify(signal.reason, operation, host, signal, options.signal, totalMs);
        }
      }
    }
  }

  /**
   * Opens a streaming call (NDJSON answer). Resolves once a 2xx answer's headers arrived; a non-2xx
   * answer is read as an error body (within the error body's size and time limits) and thrown as a
   * typed error. No retries here: the stream layer owns reconnects.
   *
   * Streams go over node:http (a keep-alive agent per scheme), not undici: Node's own client parses
   * HTTP natively and hands the body's chunks over as slices of what the socket read, which cost
   * a busy stream about 1.5 µs of CPU a log less than undici's body stream (bench/stream-fresh), and a
   * process that only reads streams does not load undici at all. Connect and header timeouts are the
   * same {@link TimeoutPolicy} as unary calls'; the body has none (the stream layer polices heartbeats).
   */
  async openStream(request: RpcRequest, signal: AbortSignal): Promise<OpenStream> {
    const operation = `${request.service}/${request.method}`;
    const url = new URL(request.baseUrl);
    const controller = new AbortController();
    const combined = AbortSignal.any([signal, controller.signal]);
    const started = performance.now();
    const requestId = newRequestId();
    const forget = () => this.#streams.delete(controller);
    try {
      if (this.#closed) throw closedError(operation, url.host);
      this.#streams.set(controller, () => closedError(operation, url.host));
      const target = new URL(`${url.pathname.replace(/\/$/, '')}/rpc/${request.service}/${request.method}`, url.origin);
      const response = await this.#streamRequest(
        target,
        this.#headers(request.credential, requestId),
        JSON.stringify(request.body ?? {}),
        combined,
      );
      const status = response.statusCode ?? 0;
      this.#report(operation, url.host, 1, status, started, requestId);
      if (status < 200 || status >= 300) {
        const read = await this.#readErrorBody(response);
        throw this.#errorFromBody(operation, url.host, status, read, response.headers['retry-after']);
      }
      response.once('close', forget);
      return {
        body: response,
        abort: () => {
          forget();
          controller.abort();
        },
      };
    } catch (raw) {
      forget();
      throw this.#classify(raw, operation, url.host, combined, signal, this.timeouts.headersMs);
    }
  }

  /**
   * One POST over node:http(s), resolved with the answer once its headers arrived. The socket must
   * connect within `connectMs` and the headers come within `headersMs` of the request, or the
   * request is destroyed with a {@link StreamOpenTimeout}; aborting `signal` destroys it too.
   */
  async #streamRequest(
    target: URL,
    headers: Record<string, string>,
    body: string,
    signal: AbortSignal,
  ): Promise<http.IncomingMessage> {
    const secure = target.protocol === 'https:';
    if (!secure && target.protocol !== 'http:') throw new Error(`unsupported protocol ${target.protocol}`);
    const client = secure ? await loadHttps() : http;
    if (secure) this.#httpsAgent ??= new (client as typeof https).Agent({ keepAlive: true });
    else this.#httpAgent ??= new http.Agent({ keepAlive: true });
    const agent = secure ? this.#httpsAgent : this.#httpAgent;
    return new Promise((resolve, reject) => {
      const outgoing = client.request(
        target,
        {
          method: 'POST',
          agent,
          signal,
          headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        },
        (response) => {
          clearTimeout(connectTimer);
          clearTimeout(headersTimer);
          resolve(response);
        },
      );
      const connectTimer = setTimeout(
        () => outgoing.destroy(new StreamOpenTimeout('connect')),
        this.timeouts.connectMs,
      );
      const headersTimer = setTimeout(
        () => outgoing.destroy(new StreamOpenTimeout('headers')),
        this.timeouts.headersMs,
      );
      outgoing.once('socket', (socket) => {
        if (!socket.connecting) clearTimeout(connectTimer);
        else socket.once('connect', () => clearTimeout(connectTimer));
      });
      outgoing.on('error', (error) => {
        clearTimeout(connectTimer);
        clearTimeout(headersTimer);
        reject(error);
      });
      outgoing.end(body);
    });
  }

  /** Ends open streams (their iterators finish without an error) and closes the keep-alive connections. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const [controller, reason] of this.#streams) controller.abort(reason());
    this.#streams.clear();
    this.#httpAgent?.destroy();
    this.#httpsAgent?.destroy();
    const pools = [...this.#pools.values()];
    this.#pools.clear();
    await Promise.all(pools.map((pool) => pool.close().catch(() => undefined)));
  }

  async #attempt(
    request: RpcRequest,
    operation: string,
    url: URL,
    body: string,
    signal: AbortSignal,
    requestId: string,
  ): Promise<Record<string, unknown>> {
    const pool = await this.#pool(url.origin);
    const response = await pool.request({
      path: `${url.pathname.replace(/\/$/, '')}/rpc/${request.service}/${request.method}`,
      method: 'POST',
      headers: this.#headers(request.credential, requestId),
      body,
      signal,
      headersTimeout: this.timeouts.headersMs,
      bodyTimeout: this.timeouts.bodyMs,
    });
    if (response.statusCode < 200 || response.statusCode >= 300) {
      const read = await this.#readErrorBody(response.body);
      throw this.#errorFromBody(operation, url.host, response.statusCode, read, response.headers['retry-after']);
    }
    const read = await readBody(response.body, { maxBytes: this.limits.bodyBytes });
    if (read.kind !== 'complete') {
      throw new PlatformBadResponseError(
        operation,
        url.host,
        `answer body is larger than the limit of ${this.limits.bodyBytes} bytes; the connection was closed`,
        response.statusCode,
      );
    }
    const text = read.text;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (cause) {
      throw new PlatformBadResponseError(
        operation,
        url.host,
        `answer is not JSON: ${this.#preview(text)}`,
        response.statusCode,
        { cause },
      );
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw new PlatformBadResponseError(operation, url.host, 'answer is not a JSON object', response.statusCode);
    }
    return parsed as Record<string, unknown>;
  }

  #headers(credential: Credential, requestId: string): Record<string, string> {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json',
      'user-agent': this.#userAgent,
      'x-request-id': requestId,
    };
    if ((credential === 'accessKey' || credential === 'both') && this.#accessKey) {
      headers['x-access-key'] = this.#accessKey;
    }
    if ((credential === 'bearer' || credential === 'both') && this.#secretToken) {
      headers.authorization = `Bearer ${this.#secretToken}`;
    }
    return headers;
  }

  async #pool(origin: string): Promise<Pool> {
    const { Pool } = await loadUndici();
    if (this.#closed) throw new Error('platform transport is closed');
    let pool = this.#pools.get(origin);
    if (!pool) {
      pool = new Pool(origin, {
        connections: this.#connections,
        connectTimeout: this.timeouts.connectMs,
        keepAliveTimeout: 30_000,
        pipelining: 1,
      });
      this.#pools.set(origin, pool);
    }
    return pool;
  }

  #readErrorBody(body: ReadableBody): Promise<BodyRead> {
    return readBody(body, { maxBytes: this.limits.errorBodyBytes, timeoutMs: this.timeouts.errorBodyMs });
  }

  /**
   * Builds the typed error for a non-2xx answer, reading `msg` (Go servers) or `message`. An error
   * body cut short by its limits still yields an error of the right status, so that a 5xx stays
   * transient and a 429 stays a rate limit.
   */
  #errorFromBody(
    operation: string,
    host: string,
    status: number,
    read: BodyRead,
    retryAfterHeader: string | string[] | undefined,
  ): PlatformError {
    const retryAfterMs = parseRetryAfter(Array.isArray(retryAfterHeader) ? retryAfterHeader[0] : retryAfterHeader);
    let payload: unknown;
    try {
      payload = read.kind === 'complete' ? JSON.parse(read.text) : undefined;
    } catch {
      payload = undefined;
    }
    if (payload && typeof payload === 'object' && !Array.isArray(payload)) {
      const p = payload as Record<string, unknown>;
      if (typeof p.error === 'string' || typeof p.code === 'number') {
        const detail = typeof p.msg === 'string' && p.msg ? p.msg : typeof p.message === 'string' ? p.message : '';
        return new PlatformApiError(operation, host, {
          errorName: this.scrub(typeof p.error === 'string' ? p.error : 'UnknownError'),
          code: typeof p.code === 'number' ? p.code : 0,
          status,
          detail: this.scrub(detail || 'no message'),
          causeText: typeof p.cause === 'string' && p.cause ? this.scrub(p.cause) : undefined,
          retryAfterMs,
        });
      }
    }
    if (status === 429) {
      return new PlatformApiError(operation, host, {
        errorName: 'RateLimited',
        code: 1007,
        status,
        detail: 'rate limited',
        retryAfterMs,
      });
    }
    if (read.kind === 'too_large') {
      return new PlatformBadResponseError(
        operation,
        host,
        `error answer body is larger than the limit of ${this.limits.errorBodyBytes} bytes; the connection was closed`,
        status,
      );
    }
    if (read.kind === 'too_slow') {
      return new PlatformBadResponseError(
        operation,
        host,
        `error answer body did not end within ${this.timeouts.errorBodyMs} ms; the connection was closed`,
        status,
      );
    }
    return new PlatformBadResponseError(
      operation,
      host,
      `error answer is not a platform error body: ${this.#preview(read.text)}`,
      status,
    );
  }

  #preview(text: string): string {
    // Scrubbed before cutting, so that a cut cannot leave part of a secret unmatched.
    const trimmed = this.scrub(text.replace(/\s+/g, ' ').trim());
    if (!trimmed) return '(empty body)';
    return JSON.stringify(trimmed.length > 120 ? `${trimmed.slice(0, 120)}…` : trimmed);
  }

  #classify(
    raw: unknown,
    operation: string,
    host: string,
    signal: AbortSignal,
    callerSignal: AbortSignal | undefined,
    totalMs: number,
  ): PlatformError {
    if (raw instanceof PlatformError) return raw;
    if (this.#closed) return closedError(operation, host, raw);
    if (callerSignal?.aborted) {
      return new PlatformAbortedError(operation, host, 'aborted by the caller', { cause: raw });
    }
    if (signal.aborted) {
      return new PlatformTimeoutError(operation, host, totalMs, 'for the whole call', { cause: raw });
    }
    if (raw instanceof StreamOpenTimeout) {
      return raw.phase === 'connect'
        ? new PlatformTimeoutError(operation, host, this.timeouts.connectMs, 'connecting', { cause: raw })
        : new PlatformTimeoutError(operation, host, this.timeouts.headersMs, 'waiting for response headers', {
            cause: raw,
          });
    }
    // undici's errors by their documented codes: its module is loaded only once a unary call is made.
    const code = (raw as { code?: unknown } | null)?.code;
    if (code === 'UND_ERR_HEADERS_TIMEOUT') {
      return new PlatformTimeoutError(operation, host, this.timeouts.headersMs, 'waiting for response headers', {
        cause: raw,
      });
    }
    if (code === 'UND_ERR_BODY_TIMEOUT') {
      return new PlatformTimeoutError(operation, host, this.timeouts.bodyMs, 'waiting for the response body', {
        cause: raw,
      });
    }
    if (code === 'UND_ERR_CONNECT_TIMEOUT') {
      return new PlatformTimeoutError(operation, host, this.timeouts.connectMs, 'connecting', { cause: raw });
    }
    const message = raw instanceof Error ? raw.message : String(raw);
    return new PlatformNetworkError(
      operation,
      host,
      this.scrub(`request failed: ${typeof code === 'string' ? `${code} ` : ''}${message}`),
      { cause: raw },
    );
  }

  #report(
    operation: string,
    host: string,
    attempt: number,
    outcome: number | string,
    started: number,
    requestId: string,
  ): void {
    this.#onCall?.({ operation, host, attempt, outcome, durationMs: performance.now() - started, requestId });
  }
}

/** 12 hex characters: short enough to read in a log line, unique enough to find one call. */
function newRequestId(): string {
  return randomBytes(6).toString('hex');
}

function closedError(operation: string, host: string, cause?: unknown): PlatformAbortedError {
  return new PlatformAbortedError(operation, host, 'the client is closed', cause === undefined ? undefined : { cause });
}

/** `Retry-After` as seconds or an HTTP date, in milliseconds; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}
