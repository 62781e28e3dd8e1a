/**
 * Errors as the real servers put them on the wire: `{error, code, msg, cause?, status}` with the
 * codes and HTTP statuses of shared/reference/wire-protocol.md (§1.7 built-ins, §2.4, §3.10, §4.4,
 * §5.4, §6.2 per service).
 */
export type ServiceName = 'Metadata' | 'Collections' | 'Marketplace' | 'Indexer' | 'Builder' | 'Analytics' | 'Relayer';

export interface ErrorBody {
  error: string;
  code: number;
  msg: string;
  cause?: string;
  status: number;
}

export class RpcError extends Error {
  override name = 'RpcError';
  readonly errorName: string;
  readonly code: number;
  readonly status: number;
  readonly causeText: string | undefined;
  /** Extra response headers, e.g. `Retry-After`. */
  readonly headers: Record<string, string>;

  constructor(
    errorName: string,
    code: number,
    status: number,
    msg: string,
    causeText?: string,
    headers: Record<string, string> = {},
  ) {
    super(msg);
    this.errorName = errorName;
    this.code = code;
    this.status = status;
    this.causeText = causeText;
    this.headers = headers;
  }

  toBody(): ErrorBody {
    const body: ErrorBody = { error: this.errorName, code: this.code, msg: this.message, status: this.status };
    if (this.causeText) body.cause = this.causeText;
    return body;
  }
}

export const errors = {
  badRoute: (path: string) => new RpcError('WebrpcBadRoute', -2, 404, 'bad route', `no handler for path "${path}"`),
  badMethod: (method: string, allow = 'POST') =>
    new RpcError(
      'WebrpcBadMethod',
      -3,
      405,
      'bad method',
      `unsupported method "${method}" (only ${allow} is allowed)`,
      {
        allow,
      },
    ),
  badRequest: (cause: string) => new RpcError('WebrpcBadRequest', -4, 400, 'bad request', cause),
  internal: (cause: string) => new RpcError('WebrpcInternalError', -7, 500, 'internal error', cause),
  streamLost: (cause: string) => new RpcError('WebrpcStreamLost', -9, 400, 'stream lost', cause),

  unauthorized: (cause: string) => new RpcError('Unauthorized', 1000, 401, 'Unauthorized access', cause),
  permissionDenied: (cause: string) => new RpcError('PermissionDenied', 1001, 403, 'Permission denied', cause),
  accessKeyNotFound: (cause: string) => new RpcError('AccessKeyNotFound', 1101, 401, 'Access key not found', cause),
  accessKeyMismatch: (service: ServiceName, cause: string) =>
    new RpcError('AccessKeyMismatch', 1102, service === 'Indexer' ? 409 : 403, 'Access key mismatch', cause),

  rateLimited: (service: ServiceName, retryAfterSeconds: number) => {
    const headers = { 'retry-after': String(retryAfterSeconds) };
    return service === 'Metadata' || service === 'Collections'
      ? new RpcError('RateLimited', 2005, 429, 'Rate limited', undefined, headers)
      : new RpcError('RateLimited', 1007, 429, 'Rate-limited. Please slow down.', undefined, headers);
  },

  invalidArgument: (msg: string) => new RpcError('InvalidArgument', 2001, 400, msg),

  notFound: (service: ServiceName, msg: string) => {
    if (service === 'Marketplace') return new RpcError('NotFound', 2000, 400, msg);
    if (service === 'Builder' || service === 'Analytics') return new RpcError('NotFound', 3000, 422, msg);
    return new RpcError('NotFound', 3000, 400, msg);
  },

  projectNotFound: (service: ServiceName, cause: string) => {
    switch (service) {
      case 'Marketplace':
      case 'Relayer':
        return new RpcError('ProjectNotFound', 1008, 401, 'Project not found', cause);
      case 'Indexer':
        return new RpcError('ProjectNotFound', 1100, 401, 'Project not found', cause);
      case 'Builder':
      case 'Analytics':
        return new RpcError('ProjectNotFound', 3002, 422, 'Project not found', cause);
      default:
        return new RpcError('ProjectNotFound', 3002, 400, 'Project not found', cause);
    }
  },
};
