/** Errors of the stores behind core's ports: both adapters throw them, and the engine answers people with them. */

/** The data file cannot be used; the bot must not start (and must not overwrite it). */
export class StoreFileError extends Error {
  override name = 'StoreFileError';
  readonly file: string;
  constructor(file: string, problem: string, options?: { cause?: unknown }) {
    super(`${file}: ${problem}. The file was left untouched; fix or move it, then start again.`, options);
    this.file = file;
  }
}

/**
 * A change could not be written (disk full, file size limit, read-only disk). The change was undone
 * in memory, and the file keeps its previous content (writes go to a temporary file, then rename).
 */
export class StoreWriteError extends Error {
  override name = 'StoreWriteError';
  readonly file: string;
  /** The system error code (ENOSPC, EFBIG, EACCES, ...), when there is one. */
  readonly code: string | undefined;
  constructor(file: string, cause: unknown) {
    const code = (cause as { code?: unknown } | null)?.code;
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(`${file}: a change could not be saved (${reason}); the file keeps its previous content`, { cause });
    this.file = file;
    this.code = typeof code === 'string' ? code : undefined;
  }
}
