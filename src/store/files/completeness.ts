import { readFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import * as v from 'valibot';
import type { CompletenessCounts, CompletenessDay, CompletenessStore } from '../../core/ports.ts';
import { StoreFileError, StoreWriteError } from '../../core/store-errors.ts';
import { CompletenessTally } from '../completeness-tally.ts';
import { LazyWrite } from '../lazy-write.ts';
import { replaceFile } from './sync-directory.ts';

const FORMAT_VERSION = 1;
/** Days kept: digests cover up to a month; a year of days is a few hundred small records. */
const KEEP_DAYS = 400;

const count = v.pipe(v.number(), v.safeInteger(), v.minValue(0));
const FileSchema = v.object({
  v: v.literal(FORMAT_VERSION),
  days: v.array(
    v.object({
      network: v.pipe(v.string(), v.minLength(1), v.maxLength(100)),
      day: v.pipe(v.string(), v.isoDate()),
      events: count,
      blocksReadBack: count,
      blocksMissed: count,
    }),
  ),
});

/**
 * The record's completeness in a small JSON file of the data directory
 * (`{"v":1,"days":[{"network":"devnet","day":"2026-11-28","events":12,...}]}`), held in memory (one
 * process owns the directory), written whole to a temporary file, synced and renamed over it, at
 * most once per `writeDelayMs`. A file that cannot be read is never overwritten: opening it fails
 * with a {@link StoreFileError}.
 */
export class FileCompletenessStore implements CompletenessStore {
  readonly #file: string;
  readonly #temp: string;
  readonly #tally: CompletenessTally;
  readonly #lazy: LazyWrite;
  #dirty = false;

  private constructor(
    file: string,
    tally: CompletenessTally,
    options: { writeDelayMs?: number; onWriteError?: (error: unknown) => void },
  ) {
    this.#file = file;
    this.#temp = join(dirname(file), `.${basename(file)}.tmp`);
    this.#tally = tally;
    this.#lazy = new LazyWrite(options.writeDelayMs ?? 2_000, () => this.#write(), options.onWriteError);
  }

  static async open(
    file: string,
    options: { writeDelayMs?: number; onWriteError?: (error: unknown) => void } = {},
  ): Promise<FileCompletenessStore> {
    const tally = new CompletenessTally();
    tally.merge(await FileCompletenessStore.read(file));
    return new FileCompletenessStore(file, tally, options);
  }

  /**
   * The days the file holds, read only (for `npm run migrate-data`); none when it is missing. Throws
   * a {@link StoreFileError} when it cannot be read, as {@link FileCompletenessStore.open} does.
   */
  static async read(file: string): Promise<CompletenessDay[]> {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw new StoreFileError(file, `cannot be read (${(error as Error).message})`, { cause: error });
    }
    return parse(file, text);
  }

  add(network: string, counts: Partial<CompletenessCounts>, at: Date = new Date()): void {
    if (!this.#tally.add(network, counts, at.getTime())) return;
    this.#dirty = true;
    this.#lazy.schedule();
  }

  async days(fromDay: string, toDay: string): Promise<CompletenessDay[]> {
    return this.#tally.within(fromDay, toDay);
  }

  async flush(): Promise<void> {
    await this.#lazy.flush();
  }

  async #write(): Promise<void> {
    if (!this.#dirty) return;
    this.#dirty = false;
    this.#tally.dropBefore(new Date(Date.now() - KEEP_DAYS * 86_400_000).toISOString().slice(0, 10));
    const text = JSON.stringify({ v: FORMAT_VERSION, days: this.#tally.all() });
    try {
      await replaceFile(this.#file, this.#temp, text);
    } catch (error) {
      this.#dirty = true;
      throw new StoreWriteError(this.#file, error);
    }
  }
}

function parse(file: string, text: string): CompletenessDay[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new StoreFileError(file, `is not valid JSON (${(error as Error).message})`, { cause: error });
  }
  const parsed = v.safeParse(FileSchema, value);
  if (!parsed.success) {
    const issue = parsed.issues[0];
    const path = issue.path?.map((p) => String(p.key)).join('.') ?? '';
    throw new StoreFileError(
      file,
      `is not a completeness file of version ${FORMAT_VERSION} (${path ? `${path}: ` : ''}${issue.message})`,
    );
  }
  return parsed.output.days;
}
