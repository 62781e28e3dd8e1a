/**
 * The platform client's error taxonomy. Every failure of a call is one of:
 *
 * - {@link PlatformApiError}: the platform answered and said no (webrpc error body: name, code, status, message);
 * - {@link PlatformNetworkError}: the request never got an answer (refused, reset, DNS);
 * - {@link PlatformTimeoutError}: no answer within the time allowed;
 * - {@link PlatformBadResponseError}: an answer that is not what the protocol promises (not JSON, wrong shape),
 *   and its {@link PlatformBadRecordError} when the answer's one record has values the client refuses;
 * - {@link PlatformAbortedError}: the caller aborted.
 *
 * All extend {@link PlatformError}, which names the operation and the host. Messages never carry
 * credentials: the transport scrubs known secrets from any text it puts into an error.
 */
export class PlatformError extends Error {
  override name = 'PlatformError';
  /** `Service/Operation`, e.g. `Marketplace/ListCollectibles`. */
  readonly operation: string;
  /** Host (and port) the call went to; never the full URL with a query. */
  readonly host: string;

  constructor(operation: string, host: string, message: string, options?: { cause?: unknown }) {
    super(`${operation} on ${host}: ${message}`, options);
    this.operation = operation;
    this.host = host;
  }
}

/** The platform answered with an error body. */
export class PlatformApiError extends PlatformError {
  override name = 'PlatformApiError';
  /** The platform's error name, e.g. `AccessKeyNotFound`. */
  readonly errorName: string;
  /** The platform's numeric error code, e.g. 1101. */
  readonly code: number;
  /** HTTP status of the answer. */
  readonly status: number;
  /** The platform's own message (`msg` or `message`). */
  readonly detail: string;
  readonly causeText: string | undefined;
  /** From a `Retry-After` header, when the platform sent one. */
  readonly retryAfterMs: number | undefined;

  constructor(
    operation: string,
    host: string,
    fields: {
      errorName: string;
      code: number;
      status: number;
      detail: string;
      causeText?: string | undefined;
      retryAfterMs?: number | undefined;
    },
  ) {
    const cause = fields.causeText ? ` (${fields.causeText})` : '';
    super(
      operation,
      host,
      `${fields.errorName} (code ${fields.code}, HTTP ${fields.status}): ${fields.detail}${cause}`,
    );
    this.errorName = fields.errorName;
    this.code = fields.code;
    this.status = fields.status;
    this.detail = fields.detail;
    this.causeText = fields.causeText;
    this.retryAfterMs = fields.retryAfterMs;
  }

  get isRateLimited(): boolean {
    return this.status === 429 || this.code === 1007 || this.code === 1200 || this.code === 1201 || this.code === 2005;
  }

  get isUnauthorized(): boolean {
    return this.status === 401 || this.code === 1000 || this.code === 1101;
  }

  get isPermissionDenied(): boolean {
    return this.status === 403;
  }
}

export class PlatformNetworkError extends PlatformError {
  override name = 'PlatformNetworkError';
}

export class PlatformTimeoutError extends PlatformError {
  override name = 'PlatformTimeoutError';
  readonly timeoutMs: number;
  constructor(operation: string, host: string, timeoutMs: number, what: string, options?: { cause?: unknown }) {
    super(operation, host, `timed out after ${timeoutMs} ms ${what}`, options);
    this.timeoutMs = timeoutMs;
  }
}

export class PlatformBadResponseError extends PlatformError {
  override name = 'PlatformBadResponseError';
  readonly status: number | undefined;
  constructor(operation: string, host: string, message: string, status?: number, options?: { cause?: unknown }) {
    super(operation, host, status === undefined ? message : `${message} (HTTP ${status})`, options);
    this.status = status;
  }
}

/**
 * The one record of an answer (a token's details, the best listing, a collection) breaks the
 * client's checks: an address with a space, a negative price, a balance past 2^256. Never retried:
 * the platform would send the same record again.
 */
export class PlatformBadRecordError extends PlatformBadResponseError {
  override name = 'PlatformBadRecordError';
  /** What the record is, for people: `an order`, `token details`. */
  readonly record: string;
  /** Paths of the fields at fault (`priceUSD`, `metadata.tokenId`): the client's names, never platform text. */
  readonly fields: readonly string[];

  constructor(
    operation: string,
    host: string,
    message: string,
    record: { record: string; fields: readonly string[] },
    options?: { cause?: unknown },
  ) {
    super(operation, host, message, 200, options);
    this.record = record.record;
    this.fields = record.fields;
  }
}

export class PlatformAbortedError extends PlatformError {
  override name = 'PlatformAbortedError';
}

/** A network name that the client was not configured with. */
export class UnknownNetworkError extends Error {
  override name = 'UnknownNetworkError';
  readonly network: string;
  readonly known: readonly string[];
  constructor(network: string, known: readonly string[]) {
    super(`unknown network "${network}"; configured networks: ${known.join(', ') || '(none)'}`);
    this.network = network;
    this.known = known;
  }
}

/**
 * Whether repeating the same request may succeed: the network failed, the platform was overloaded
 * or rate-limited, or a stream was lost. Authentication and argument errors are final.
 */
export function isTransient(error: unknown): boolean {
  if (error instanceof PlatformAbortedError) return false;
  if (error instanceof PlatformNetworkError || error instanceof PlatformTimeoutError) return true;
  if (error instanceof PlatformBadResponseError) return error.status === undefined || error.status >= 500;
  if (error instanceof PlatformApiError) {
    return (
      error.status >= 500 ||
      error.status === 408 ||
      error.isRateLimited ||
      error.code === -9 /* WebrpcStreamLost */ ||
      error.code === -10 /* WebrpcStreamFinished */
    );
  }
  return false;
}
