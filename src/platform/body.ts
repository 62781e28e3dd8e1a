/** The outcome of reading an answer body under limits. */
export type BodyRead =
  | { kind: 'complete'; text: string }
  | { kind: 'too_large'; bytes: number }
  | { kind: 'too_slow'; bytes: number };

/** What {@link readBody} needs of a response body (undici's is one). */
export interface ReadableBody extends AsyncIterable<Buffer> {
  destroy(error?: Error): unknown;
}

/**
 * Reads a whole answer body as UTF-8, but never more than `maxBytes` and, when `timeoutMs` is
 * given, never for longer than that. Past either limit the body is destroyed, which closes the
 * connection instead of draining it: a broken or hostile server that sends without end must
 * neither grow the process's memory nor hold a request open forever. At most one chunk beyond
 * `maxBytes` is read. Errors of the body itself (reset, abort, undici's body timeout) are thrown.
 */
export async function readBody(
  body: ReadableBody,
  limits: { maxBytes: number; timeoutMs?: number | undefined },
): Promise<BodyRead> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  let timedOut = false;
  const timer =
    limits.timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          body.destroy();
        }, limits.timeoutMs);
  try {
    for await (const chunk of body) {
      bytes += chunk.length;
      if (bytes > limits.maxBytes) {
        body.destroy();
        return { kind: 'too_large', bytes };
      }
      chunks.push(chunk);
    }
  } catch (error) {
    if (timedOut) return { kind: 'too_slow', bytes };
    throw error;
  } finally {
    clearTimeout(timer);
  }
  if (timedOut) return { kind: 'too_slow', bytes };
  return { kind: 'complete', text: Buffer.concat(chunks, bytes).toString('utf8') };
}
