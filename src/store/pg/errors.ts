/** The database could not be reached or used; the message names the server, never the password. */
export class DatabaseError extends Error {
  override name = 'DatabaseError';
  /** The server's SQLSTATE or the system error code, when known. */
  readonly code: string | undefined;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    const cause = options?.cause as { code?: unknown } | undefined;
    this.code = typeof cause?.code === 'string' ? cause.code : undefined;
  }
}
