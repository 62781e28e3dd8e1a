import { readFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { CursorStore } from '../../core/ports.ts';
import { LazyWrite } from '../lazy-write.ts';
import { StoreFileError, StoreWriteError } from './state.ts';
import { replaceFile } from './sync-directory.ts';

/** Options of {@link FileCursorStore}. */
export interface FileCursorStoreOptions {
  /** Writes are gathered this long: at most one a second by default. */
  writeDelayMs?: number;
  /** Receives a failed lazy write (the next advance or flush tries again). */
  onWriteError?: (error: unknown) => void;
}

const FORMAT_VERSION = 1;

/**
 * The per-network cursors in a small JSON file of the data directory (`{"v":1,"networks":{"devnet":123}}`),
 * written whole to a temporary file, synced and renamed over it. Advances are gathered and written at
 * most once per `writeDelayMs`; {@link FileCursorStore.flush} writes at once (shutdown). A file that
 * cannot be read is never overwritten: opening it fails with a {@link StoreFileError}.
 */
export class FileCursorStore implements CursorStore {
  readonly #file: string;
  readonly #temp: string;
  readonly #cursors: Map<string, number>;
  readonly #lazy: LazyWrite;
  #dirty = false;

  private constructor(file: string, cursors: Map<string, number>, options: FileCursorStoreOptions) {
    this.#file = file;
    this.#temp = join(dirname(file), `.${basename(file)}.tmp`);
    this.#cursors = cursors;
    this.#lazy = new LazyWrite(options.writeDelayMs ?? 1_000, () => this.#write(), options.onWriteError);
  }

  static async open(file: string, options: FileCursorStoreOptions = {}): Promise<FileCursorStore> {
    return new FileCursorStore(file, await FileCursorStore.read(file), options);
  }

  /**
   * The cursors the file holds, read only (for `npm run migrate-data`); none when it is missing.
   * Throws a {@link StoreFileError} when it cannot be read, as {@link FileCursorStore.open} does.
   */
  static async read(file: string): Promise<Map<string, number>> {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
      throw new StoreFileError(file, `cannot be read (${(error as Error).message})`, { cause: error });
    }
    return parse(file, text);
  }

  async get(network: string): Promise<number | undefined> {
    return this.#cursors.get(network);
  }

  async advance(network: string, block: number): Promise<void> {
    if (!Number.isSafeInteger(block) || block < 0)
      throw new RangeError(`cursor block must be a whole number, got ${block}`);
    const current = this.#cursors.get(network);
    if (current !== undefined && block <= current) return;
    this.#cursors.set(network, block);
    this.#dirty = true;
    this.#lazy.schedule();
  }

  async flush(): Promise<void> {
    await this.#lazy.flush();
  }

  async #write(): Promise<void> {
    if (!this.#dirty) return;
    this.#dirty = false;
    const text = JSON.stringify({ v: FORMAT_VERSION, networks: Object.fromEntries(this.#cursors) });
    try {
      await replaceFile(this.#file, this.#temp, text);
    } catch (error) {
      this.#dirty = true;
      throw new StoreWriteError(this.#file, error);
    }
  }
}

function parse(file: string, text: string): Map<string, number> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new StoreFileError(file, `is not valid JSON (${(error as Error).message})`, { cause: error });
  }
  const record = value as { v?: unknown; networks?: unknown };
  if (typeof value !== 'object' || value === null || Array.isArray(value) || record.v !== FORMAT_VERSION)
    throw new StoreFileError(file, `is not a cursor file of version ${FORMAT_VERSION}`);
  const networks = record.networks;
  if (typeof networks !== 'object' || networks === null || Array.isArray(networks))
    throw new StoreFileError(file, 'has no "networks" object');
  const out = new Map<string, number>();
  for (const [network, block] of Object.entries(networks)) {
    if (typeof block !== 'number' || !Number.isSafeInteger(block) || block < 0)
      throw new StoreFileError(file, `has an invalid cursor for ${JSON.stringify(network)}: ${JSON.stringify(block)}`);
    out.set(network, block);
  }
  return out;
}
