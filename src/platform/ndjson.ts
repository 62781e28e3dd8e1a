import { isAscii } from 'node:buffer';

const NEWLINE = 0x0a;

/**
 * Buffer's own decoders, which `toString(encoding, start, end)` calls after checking its arguments:
 * called directly, as Node's own modules do, they save that work once a line. Latin-1 is a copy of
 * the bytes, while UTF-8 decoding looks at each byte again (a thirtieth of a record's parse); the two
 * give the same text for ASCII bytes.
 */
interface Slicing {
  utf8Slice(start: number, end: number): string;
  latin1Slice(start: number, end: number): string;
}

/**
 * What {@link LineSplitter.each} hands each line to. An object with a method rather than a function:
 * the call is then to one function however many connections made their own visitor, so a hot loop
 * optimised for one connection stays optimised for the next.
 */
export interface LineVisitor {
  /** One line, without its newline; false stops the chunk there. */
  line(text: string): boolean;
}

/**
 * Splits a byte stream into lines. Each chunk is scanned once, and bytes of an unfinished line are
 * kept aside until its newline arrives, so the work is linear in the bytes received however the
 * lines are cut into chunks. Splitting happens on bytes, so a multi-byte character cut between two
 * chunks is decoded whole. Empty lines (the server's heartbeats) are returned as `''`.
 */
export class LineSplitter {
  #pending: Buffer[] = [];
  #pendingBytes = 0;

  /** Feeds one chunk; returns the lines it completed, without their newline. */
  push(chunk: Buffer): string[] {
    const lines: string[] = [];
    this.each(chunk, { line: (line) => lines.push(line) > 0 });
    return lines;
  }

  /**
   * Feeds one chunk and hands each line it completes to the visitor as soon as it is found, decoded
   * only then, so that a chunk's lines are never all alive at once. The visitor returning false stops
   * at that line (the rest of the chunk is dropped: the caller is ending the stream). Returns how many
   * lines were completed (blank ones included).
   */
  each(chunk: Buffer, visitor: LineVisitor): number {
    const bytes = chunk as unknown as Slicing;
    // Most chunks are all ASCII (hex, numbers, names without accents): one vectorised pass says so.
    const ascii = isAscii(chunk);
    let count = 0;
    let start = 0;
    let index = chunk.indexOf(NEWLINE, start);
    while (index !== -1) {
      let line: string;
      if (this.#pendingBytes > 0) {
        this.#pending.push(chunk.subarray(start, index));
        line = Buffer.concat(this.#pending, this.#pendingBytes + index - start).toString('utf8');
        this.#pending = [];
        this.#pendingBytes = 0;
      } else {
        line = ascii ? bytes.latin1Slice(start, index) : bytes.utf8Slice(start, index);
      }
      count++;
      start = index + 1;
      if (!visitor.line(line)) return count;
      index = chunk.indexOf(NEWLINE, start);
    }
    if (start < chunk.length) {
      this.#pending.push(chunk.subarray(start));
      this.#pendingBytes += chunk.length - start;
    }
    return count;
  }

  /** Bytes of an unfinished line waiting for its newline. */
  get pendingBytes(): number {
    return this.#pendingBytes;
  }

  /** The unfinished last line, if any, and resets the splitter. */
  flush(): string | undefined {
    if (this.#pendingBytes === 0) return undefined;
    const rest = Buffer.concat(this.#pending, this.#pendingBytes).toString('utf8');
    this.#pending = [];
    this.#pendingBytes = 0;
    return rest;
  }
}
