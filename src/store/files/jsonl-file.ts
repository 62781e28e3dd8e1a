/**
 * Files of JSON Lines records in the data directory (wallets.jsonl, roles.jsonl): a header line
 * naming the file's kind and version, then one record a line, each checked by a schema when read.
 * Appends are made durable (`fdatasync`) before they count; rewrites go through a temporary file,
 * a sync, a rename and a directory sync. A last line torn by a crash (no newline, or not JSON) is
 * cut off on open; anything else that cannot be read throws {@link StoreFileError} naming the file
 * and the line, and leaves the file untouched.
 */
import { isUtf8 } from 'node:buffer';
import { type FileHandle, open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import * as v from 'valibot';
import { StoreFileError } from '../../core/store-errors.ts';
import { syncDirectory } from './sync-directory.ts';

/** What a file holds: its header's `op` and newest version, and the schema of its lines. */
export interface JsonlFormat<Line> {
  op: string;
  version: number;
  schema: v.GenericSchema<unknown, Line>;
  /** What a line is, for messages: `a wallet record`. */
  record: string;
}

export interface JsonlRead<Line> {
  exists: boolean;
  lines: Line[];
  size: number;
  /** Bytes up to the end of the last whole line (a torn last line is cut off there). */
  validBytes: number;
}

/** The header line of a format. */
export function headerLine(format: JsonlFormat<unknown>): string {
  return `${JSON.stringify({ op: format.op, v: format.version })}\n`;
}

/** Reads and checks a file's lines; a missing or empty file reads as not existing. */
export async function readJsonl<Line>(file: string, format: JsonlFormat<Line>): Promise<JsonlRead<Line>> {
  let handle: FileHandle;
  try {
    handle = await open(file, 'r');
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return { exists: false, lines: [], size: 0, validBytes: 0 };
    throw new StoreFileError(file, `cannot be read (${message(cause)})`, { cause });
  }
  let data: Buffer;
  try {
    if ((await handle.stat()).isDirectory()) throw new StoreFileError(file, 'is a directory');
    data = await handle.readFile();
  } catch (cause) {
    if (cause instanceof StoreFileError) throw cause;
    throw new StoreFileError(file, `cannot be read (${message(cause)})`, { cause });
  } finally {
    await handle.close();
  }
  const lines: Line[] = [];
  let start = 0;
  let lineNumber = 0;
  let validBytes = 0;
  while (start < data.length) {
    lineNumber += 1;
    const newline = data.indexOf(0x0a, start);
    if (newline === -1) break;
    const bytes = data.subarray(start, newline);
    let value: unknown;
    try {
      if (!isUtf8(bytes)) throw new Error('not UTF-8');
      value = JSON.parse(bytes.toString('utf8'));
    } catch (cause) {
      if (newline + 1 === data.length) break;
      throw new StoreFileError(file, `line ${lineNumber} is not valid JSON (${message(cause)})`, { cause });
    }
    if (lineNumber === 1) checkHeader(file, value, format);
    else {
      const parsed = v.safeParse(format.schema, value);
      if (!parsed.success) {
        const issue = parsed.issues[0];
        const path = issue?.path?.map((item) => String(item.key)).join('.') ?? 'the line';
        throw new StoreFileError(file, `line ${lineNumber} is not ${format.record} (${path}: ${issue?.message})`);
      }
      lines.push(parsed.output);
    }
    start = newline + 1;
    validBytes = start;
  }
  if (validBytes === 0) return { exists: false, lines: [], size: data.length, validBytes };
  return { exists: true, lines, size: data.length, validBytes };
}

function checkHeader(file: string, value: unknown, format: JsonlFormat<unknown>): void {
  const header = value as { op?: unknown; v?: unknown } | null;
  if (typeof header !== 'object' || header === null || Array.isArray(header) || header.op !== format.op) {
    throw new StoreFileError(file, `line 1 is not a ${format.op} file header (is this the right file?)`);
  }
  const version = header.v;
  if (typeof version !== 'number' || !Number.isInteger(version) || version < 1) {
    throw new StoreFileError(file, `line 1 has no valid version (found ${JSON.stringify(version)})`);
  }
  if (version > format.version) {
    throw new StoreFileError(
      file,
      `was written by a newer Floorwatch (${format.op} version ${version}; this one reads up to ${format.version})`,
    );
  }
}

/** Appends `body` and makes it durable; on failure the file is cut back to where it was. */
export async function appendDurably(file: string, body: string): Promise<void> {
  const handle = await open(file, 'a');
  let fileSize: number | undefined;
  try {
    fileSize = (await handle.stat()).size;
    await handle.writeFile(body, 'utf8');
    await handle.datasync();
  } catch (error) {
    if (fileSize !== undefined) await handle.truncate(fileSize).catch(() => undefined);
    throw error;
  } finally {
    await handle.close();
  }
}

/** Cuts a file to `length` bytes, durably (a torn last line). */
export async function truncateTo(file: string, length: number): Promise<void> {
  const handle = await open(file, 'r+');
  try {
    await handle.truncate(length);
    await handle.datasync();
  } finally {
    await handle.close();
  }
}

/**
 * Makes a file just read ready to append to: written whole by `rewrite` when it did not exist or
 * `wasteful` says so, else cut after its last whole line. Throws {@link StoreFileError} when it cannot be.
 */
export async function settleJsonl(
  file: string,
  read: Pick<JsonlRead<unknown>, 'exists' | 'size' | 'validBytes'>,
  wasteful: boolean,
  rewrite: () => Promise<void>,
): Promise<void> {
  try {
    if (!read.exists || wasteful) await rewrite();
    else if (read.validBytes < read.size) await truncateTo(file, read.validBytes);
  } catch (cause) {
    throw new StoreFileError(file, `cannot be written (${message(cause)})`, { cause });
  }
}

/** Replaces a file's content: temporary file, sync, rename, directory sync. */
export async function rewriteAtomically(file: string, body: string): Promise<void> {
  const temp = join(dirname(file), `.${basename(file)}.tmp`);
  let handle: FileHandle | undefined;
  try {
    handle = await open(temp, 'w');
    await handle.writeFile(body, 'utf8');
    await handle.sync();
    await handle.close();
    handle = undefined;
    await rename(temp, file);
  } catch (error) {
    await handle?.close().catch(() => undefined);
    await rm(temp, { force: true }).catch(() => undefined);
    throw error;
  }
  await syncDirectory(dirname(file));
}

export const message = (error: unknown): string => (error instanceof Error ? error.message : String(error));
