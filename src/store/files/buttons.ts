/**
 * Long button actions, stored by hash in a file of their own beside the state file, so that storing
 * one (every answer with such a button: a /search, an ambiguous name, a page of listings) appends a
 * line instead of rewriting the state file with every rule in it.
 *
 * ## File format
 *
 * JSON Lines, append-only, the first line a header; a later line for a hash replaces the earlier
 * one (a button shown again becomes the most recent):
 *
 * ```
 * {"op":"buttons","v":1}
 * {"h":"Xc2pQ…","a":"/floor collection=devnet:0xab… count=5","t":"2026-03-01T12:00:00.000Z"}
 * ```
 *
 * Saves made while a write runs share the next one: one `write` and one `fdatasync` for all of them,
 * each resolving once it is durable. When the file holds more lines of dropped buttons (expired,
 * beyond the cap, saved again) than of kept ones, the next write instead rewrites the kept buttons
 * and the new ones to a temporary file, syncs it and renames it over the file, so that the file stays
 * within about twice the kept buttons and the bytes written per button stay a few lines' worth.
 *
 * ## Recovery on open
 *
 * A last line without its newline, or a last line that is not valid JSON, is a write torn by a crash
 * (its save never resolved): it is ignored and cut off. Anything else that cannot be read throws
 * {@link StoreFileError} naming the file and the line, and leaves the file untouched.
 */

import { isUtf8 } from 'node:buffer';
import { type FileHandle, open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import * as v from 'valibot';
import type { WriteFence } from '../../core/lease.ts';
import type { StoredButton } from '../../core/settings.ts';
import { StoreFileError, StoreWriteError } from '../../core/store-errors.ts';
import { BUTTON_TTL_MS, MAX_STORED_BUTTONS, storedButtonSchema } from '../schema.ts';
import { appendDurably, truncateTo } from './jsonl-file.ts';
import { syncDirectory } from './sync-directory.ts';

/** A button saved again within this time of its last save needs no write: it stays valid for days. */
const RESAVE_AFTER_MS = 60 * 60 * 1000;
/** Lines of dropped buttons tolerated whatever the number kept, so that a small file is not rewritten often. */
const MIN_DEAD_LINES = 1_000;

const FORMAT_VERSION = 1;
const HEADER_LINE = `${JSON.stringify({ op: 'buttons', v: FORMAT_VERSION })}\n`;

const lineSchema = v.object({
  h: v.pipe(v.string(), v.minLength(1, 'expected a non-empty hash')),
  a: storedButtonSchema.entries.action,
  t: storedButtonSchema.entries.createdAt,
});

export interface ButtonFileOptions {
  /** How long stored button actions work (default {@link BUTTON_TTL_MS}). */
  ttlMs?: number;
  /** Most stored button actions (default {@link MAX_STORED_BUTTONS}). */
  max?: number;
  now?: () => Date;
  /**
   * Asked right before each write of the file (an append, the rename of a rewrite, cutting off a torn
   * line on open); the write waits while it takes a late lease again. When it fails (LeaseLostError:
   * this process no longer holds the data directory) the write is not made and fails as any does.
   */
  fence?: WriteFence;
}

interface Resolved {
  ttlMs: number;
  max: number;
  now: () => Date;
  fence: WriteFence;
}

/** A save waiting for the write that makes it durable. */
interface PendingSave {
  hash: string;
  button: StoredButton;
  resolve: () => void;
  reject: (error: unknown) => void;
}

const lineOf = (hash: string, button: StoredButton): string =>
  `${JSON.stringify({ h: hash, a: button.action, t: button.createdAt })}\n`;

/**
 * The stored button actions of one bot (see the module comment for the file format). Reads are
 * synchronous and served from memory; {@link ButtonFile.save} resolves once the button is on disk,
 * or rejects with {@link StoreWriteError} (the file keeps its previous content, and the button is
 * not stored). One process at a time may use a buttons file.
 */
export class ButtonFile {
  readonly file: string;
  readonly #options: Resolved;
  /** Kept buttons in the order they were saved, the least recent first. */
  #buttons: Map<string, StoredButton>;
  /** Lines in the file after the header, kept or not. */
  #lines: number;
  #waiting: PendingSave[] = [];
  #writing: Promise<void> | undefined;
  #writes = 0;
  #bytesWritten = 0;

  private constructor(file: string, buttons: Map<string, StoredButton>, lines: number, options: Resolved) {
    this.file = file;
    this.#buttons = buttons;
    this.#lines = lines;
    this.#options = options;
  }

  /**
   * Opens (or creates) the file. `carried` are buttons from a state file of an older version: older
   * than any in this file, they are written into it before this resolves, so that the state file may
   * then drop them.
   */
  static async open(
    file: string,
    options: ButtonFileOptions = {},
    carried?: Iterable<[string, StoredButton]>,
  ): Promise<ButtonFile> {
    const resolved = resolve(options);
    const read = await readButtons(file, resolved, carried);
    const store = new ButtonFile(file, read.buttons, read.lines, resolved);
    try {
      if (!read.exists || carried || store.#wasteful()) await store.#rewrite(store.#buttons);
      else if (read.validBytes < read.size) {
        await fenced(resolved.fence);
        await truncateTo(file, read.validBytes);
      }
    } catch (cause) {
      throw new StoreFileError(file, `cannot be written (${message(cause)})`, { cause });
    }
    return store;
  }

  /** The buttons a file holds, merged after `carried` as {@link ButtonFile.open} would; writes nothing. */
  static async read(
    file: string,
    options: ButtonFileOptions = {},
    carried?: Iterable<[string, StoredButton]>,
  ): Promise<Array<[string, StoredButton]>> {
    return [...(await readButtons(file, resolve(options), carried)).buttons];
  }

  /** A stored button action, unless it is unknown or has expired. */
  button(hash: string): StoredButton | undefined {
    const stored = this.#buttons.get(hash);
    if (!stored || this.#expired(stored, this.#options.now().getTime())) return undefined;
    return stored;
  }

  /** The buttons that still work, the least recently saved first. */
  entries(): Array<[string, StoredButton]> {
    const nowMs = this.#options.now().getTime();
    return [...this.#buttons].filter(([, button]) => !this.#expired(button, nowMs));
  }

  /**
   * Stores a long button action under its hash. Saving it again makes it the most recent (buttons
   * are dropped oldest first, beyond the cap or after their time to live).
   */
  save(hash: string, action: string, now: Date): Promise<void> {
    const existing = this.#buttons.get(hash);
    if (existing?.action === action && now.getTime() - Date.parse(existing.createdAt) < RESAVE_AFTER_MS) {
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      this.#waiting.push({ hash, button: { action, createdAt: now.toISOString() }, resolve, reject });
      this.#writing ??= this.#drain();
    });
  }

  /** Resolves once every save made so far is written (or has failed). */
  async flush(): Promise<void> {
    while (this.#writing) await this.#writing;
  }

  /** Writes of the file since it was opened and the bytes they wrote (for tests, benchmarks and metrics). */
  get writeStats(): { writes: number; bytes: number } {
    return { writes: this.#writes, bytes: this.#bytesWritten };
  }

  async #drain(): Promise<void> {
    while (this.#waiting.length > 0) {
      const batch = this.#waiting;
      this.#waiting = [];
      try {
        await this.#write(batch);
      } catch (cause) {
        const error = new StoreWriteError(this.file, cause);
        for (const save of batch) save.reject(error);
        continue;
      }
      for (const save of batch) save.resolve();
    }
    this.#writing = undefined;
  }

  /** Appends the batch, or rewrites the file when it holds more dropped buttons than kept ones. */
  async #write(batch: readonly PendingSave[]): Promise<void> {
    if (this.#wasteful(batch.length)) {
      const next = new Map(this.#buttons);
      for (const { hash, button } of batch) {
        next.delete(hash);
        next.set(hash, button);
      }
      this.#prune(next);
      await this.#rewrite(next);
      this.#buttons = next;
      return;
    }
    const text = batch.map(({ hash, button }) => lineOf(hash, button)).join('');
    await fenced(this.#options.fence);
    await appendDurably(this.file, text);
    this.#writes += 1;
    this.#bytesWritten += Buffer.byteLength(text);
    this.#lines += batch.length;
    for (const { hash, button } of batch) {
      this.#buttons.delete(hash);
      this.#buttons.set(hash, button);
    }
    this.#prune(this.#buttons);
  }

  /** Whether the file (with `adding` more lines) would hold more lines of dropped buttons than it may. */
  #wasteful(adding = 0): boolean {
    const dead = this.#lines + adding - this.#buttons.size;
    return dead > Math.max(this.#buttons.size, MIN_DEAD_LINES);
  }

  /** Writes `buttons` as the whole file: a temporary file, synced, renamed over it, the directory synced. */
  async #rewrite(buttons: ReadonlyMap<string, StoredButton>): Promise<void> {
    let text = HEADER_LINE;
    for (const [hash, button] of buttons) text += lineOf(hash, button);
    const temp = join(dirname(this.file), `.${basename(this.file)}.tmp`);
    let handle: FileHandle | undefined;
    try {
      handle = await open(temp, 'w');
      await handle.writeFile(text, 'utf8');
      await handle.sync();
      await handle.close();
      handle = undefined;
      await fenced(this.#options.fence);
      await rename(temp, this.file);
    } catch (error) {
      await handle?.close().catch(() => undefined);
      await rm(temp, { force: true }).catch(() => undefined);
      throw error;
    }
    await syncDirectory(dirname(this.file));
    this.#writes += 1;
    this.#bytesWritten += Buffer.byteLength(text);
    this.#lines = buttons.size;
  }

  #expired(button: StoredButton, nowMs: number): boolean {
    return nowMs - Date.parse(button.createdAt) > this.#options.ttlMs;
  }

  /** Drops expired buttons and the least recently saved beyond the cap. */
  #prune(buttons: Map<string, StoredButton>): void {
    prune(buttons, this.#options);
  }
}

function resolve(options: ButtonFileOptions): Resolved {
  return {
    ttlMs: options.ttlMs ?? BUTTON_TTL_MS,
    max: options.max ?? MAX_STORED_BUTTONS,
    now: options.now ?? (() => new Date()),
    fence: options.fence ?? (() => undefined),
  };
}

/** Settles once `fence` allows a write (see {@link ButtonFileOptions.fence}). */
async function fenced(fence: WriteFence): Promise<void> {
  const retaking = fence();
  if (retaking) await retaking;
}

/** Drops expired buttons and the least recently saved beyond the cap; `buttons` is in save order. */
function prune(buttons: Map<string, StoredButton>, options: Resolved): void {
  const nowMs = options.now().getTime();
  let excess = buttons.size - options.max;
  for (const [hash, button] of buttons) {
    if (excess <= 0 && nowMs - Date.parse(button.createdAt) <= options.ttlMs) break;
    buttons.delete(hash);
    excess--;
  }
}

interface ReadButtons {
  exists: boolean;
  buttons: Map<string, StoredButton>;
  /** Lines read after the header. */
  lines: number;
  /** The file's size, and the bytes of it before a torn last line. */
  size: number;
  validBytes: number;
}

async function readButtons(
  file: string,
  options: Resolved,
  carried: Iterable<[string, StoredButton]> | undefined,
): Promise<ReadButtons> {
  const buttons = new Map<string, StoredButton>(carried);
  const data = await readWhole(file);
  if (!data) {
    prune(buttons, options);
    return { exists: false, buttons, lines: 0, size: 0, validBytes: 0 };
  }
  let start = 0;
  let lineNumber = 0;
  let validBytes = 0;
  let validLines = 0;
  while (start < data.length) {
    lineNumber += 1;
    const newline = data.indexOf(0x0a, start);
    if (newline === -1) break; // a torn last line
    const bytes = data.subarray(start, newline);
    let value: unknown;
    try {
      if (!isUtf8(bytes)) throw new Error('not UTF-8');
      value = JSON.parse(bytes.toString('utf8'));
    } catch (cause) {
      if (newline + 1 === data.length) break; // a torn last line that happens to end in a newline
      throw new StoreFileError(file, `line ${lineNumber} is not valid JSON (${message(cause)})`, { cause });
    }
    if (lineNumber === 1) checkHeader(file, value);
    else {
      const line = v.safeParse(lineSchema, value);
      if (!line.success) {
        const issue = line.issues[0];
        const key = issue?.path?.map((item) => String(item.key)).join('.') ?? 'the line';
        throw new StoreFileError(file, `line ${lineNumber} is not a stored button (${key}: ${issue?.message})`);
      }
      buttons.delete(line.output.h);
      buttons.set(line.output.h, { action: line.output.a, createdAt: line.output.t });
    }
    start = newline + 1;
    validBytes = start;
    validLines = lineNumber;
  }
  prune(buttons, options);
  // Empty, or only a header torn by a crash while the file was made: as good as no file.
  if (validBytes === 0) return { exists: false, buttons, lines: 0, size: data.length, validBytes };
  return { exists: true, buttons, lines: validLines - 1, size: data.length, validBytes };
}

function checkHeader(file: string, value: unknown): void {
  const header = value as { op?: unknown; v?: unknown } | null;
  if (typeof header !== 'object' || header === null || Array.isArray(header) || header.op !== 'buttons') {
    throw new StoreFileError(file, 'line 1 is not a buttons file header (is this the right file?)');
  }
  const version = header.v;
  if (typeof version !== 'number' || !Number.isInteger(version) || version < 1) {
    throw new StoreFileError(file, `line 1 has no valid version (found ${JSON.stringify(version)})`);
  }
  if (version > FORMAT_VERSION) {
    throw new StoreFileError(
      file,
      `was written by a newer Floorwatch (buttons version ${version}; this one reads up to ${FORMAT_VERSION})`,
    );
  }
}

async function readWhole(file: string): Promise<Buffer | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(file, 'r');
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new StoreFileError(file, `cannot be read (${message(cause)})`, { cause });
  }
  try {
    if ((await handle.stat()).isDirectory()) throw new StoreFileError(file, 'is a directory');
    return await handle.readFile();
  } catch (cause) {
    if (cause instanceof StoreFileError) throw cause;
    throw new StoreFileError(file, `cannot be read (${message(cause)})`, { cause });
  } finally {
    await handle.close();
  }
}

const message = (error: unknown): string => (error instanceof Error ? error.message : String(error));
