/**
 * The failure of a chat platform's first contact at start-up, as one line for the operator. Kept
 * free of imports: the entry point loads it eagerly, while the adapters load only when configured.
 */

export type ChatPlatformName = 'discord' | 'telegram';

/**
 * `unreachable`: the API could not be reached or did not answer (network error, time-out, a 5xx).
 * Often temporary, so the process exits with 69 (EX_UNAVAILABLE) for its supervisor to restart it.
 * `refused`: the API answered that the token is not valid. Restarting does not help, so the exit
 * code is 78 (EX_CONFIG), as for any other configuration error.
 * `rejected`: the API refused a setting other than the token (a webhook address it cannot resolve, say):
 * a configuration error too, exit code 78.
 */
export type ChatStartFailure = 'unreachable' | 'refused' | 'rejected';

/** Exit codes of the CLI (sysexits.h). */
export const EXIT_UNAVAILABLE = 69;
export const EXIT_CONFIG = 78;

/**
 * A chat adapter could not start. The message names the platform and the API address, and never
 * carries the token (Telegram's request URLs do: they are never quoted).
 *
 * @example
 * } catch (error) {
 *   if (error instanceof ChatStartError) {
 *     process.stderr.write(`floorwatch: ${error.message}\n`);
 *     process.exit(error.exitCode);
 *   }
 * }
 */
export class ChatStartError extends Error {
  override name = 'ChatStartError';
  readonly platform: ChatPlatformName;
  readonly failure: ChatStartFailure;
  /** The API root that was contacted (no token in it). */
  readonly address: string;

  constructor(
    platform: ChatPlatformName,
    failure: ChatStartFailure,
    address: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.platform = platform;
    this.failure = failure;
    this.address = address;
  }

  /** 69 when the API could not be reached, 78 when it refused the token or a setting. */
  get exitCode(): number {
    return this.failure === 'unreachable' ? EXIT_UNAVAILABLE : EXIT_CONFIG;
  }
}

/** Error codes of Node's sockets, DNS and undici that mean the far side could not be reached. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EPIPE',
  'EPROTO',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
]);

/**
 * What made a request fail before any answer, as a short word (`ECONNREFUSED`, `timed out`), or
 * undefined when the failure is not a network one. Looks through `cause` and grammy's `error`.
 */
export function networkFailureOf(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 6 && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return code;
    if (current.name === 'AbortError' || current.name === 'TimeoutError') return 'timed out';
    const next: unknown = current.cause ?? (current as { error?: unknown }).error;
    current = next;
  }
  return undefined;
}

/** An API root as it may be shown: without credentials, query or fragment. */
export function shownAddress(root: string): string {
  try {
    const url = new URL(root);
    return `${url.protocol}//${url.host}${url.pathname}`.replace(/\/+$/, '');
  } catch {
    return '(an invalid address)';
  }
}
