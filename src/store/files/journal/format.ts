/**
 * The journal's file format: JSON Lines, append-only, one operation per line, the first line a header
 * (see journal.ts for the lines). Turning operations into lines, and the file back into records:
 * anything that cannot be read (invalid JSON before the last line, an unknown operation, a malformed
 * record, an operation on an unknown delivery, a newer format) throws {@link StoreFileError} naming
 * the file and the line; a torn last line is left out of `validBytes`.
 */
import { isUtf8 } from 'node:buffer';
import { type FileHandle, open } from 'node:fs/promises';
import { type DeliveryRecord, deliveryId, type NewDelivery } from '../../../core/deliveries.ts';
import { StoreFileError } from '../../../core/store-errors.ts';
import { ALERT_KINDS, type Destination } from '../../../core/types.ts';
import { readFate, readFateBody, readListing } from '../../schema.ts';
import { apply, freeze, type Op, Overlay, Records } from './records.ts';

/** 2: an event's deliveries that share their payload may be one `adds` line (version 1 files still read). */
const FORMAT_VERSION = 2;
export const HEADER_LINE = JSON.stringify({ op: 'journal', v: FORMAT_VERSION });
const PLATFORMS: ReadonlySet<string> = new Set(['console', 'discord', 'telegram']);
const DELIVERY_KINDS: ReadonlySet<string> = new Set([...ALERT_KINDS, 'digest']);
const STATES: ReadonlySet<string> = new Set(['pending', 'sending', 'sent', 'failed', 'dropped']);

/**
 * The file's lines of operations, in order. Consecutive `add`s that share their payload text (an
 * event's alert to N chats) are one line, `{"op":"adds","r":[…N records…],"payload":…}`: the payload
 * is written once, not N times, and the N deliveries stand or fall together on replay.
 */
export function opLines(ops: readonly Op[]): string[] {
  const lines: string[] = [];
  for (let i = 0; i < ops.length; ) {
    const op = ops[i] as Op;
    if (op.op !== 'add') {
      lines.push(JSON.stringify(op));
      i++;
      continue;
    }
    let end = i + 1;
    for (let next = ops[end]; next?.op === 'add' && next.r.payloadJson === op.r.payloadJson; next = ops[++end]);
    lines.push(end - i === 1 ? addLine(op.r) : addsLine(ops.slice(i, end) as Array<Extract<Op, { op: 'add' }>>));
    i = end;
  }
  return lines;
}

/**
 * `{"op":"adds","c":{…},"r":[…],"payload":…}`: records that share one payload text, spliced in once.
 * `c` holds the fields every record has alike (the event, the time, the state), each of `r` the rest:
 * its destination, and its id and send key only when they are not the ones its event and
 * destination give (`"keyed":true` for a send key that is its id).
 */
function addsLine(adds: ReadonlyArray<Extract<Op, { op: 'add' }>>): string {
  const rests = adds.map(({ r }): Record<string, unknown> => {
    const { payloadJson: _payloadJson, ...rest } = r;
    return rest;
  });
  const first = rests[0] as Record<string, unknown>;
  const common: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(first)) {
    if (key === 'id' || key === 'destination' || key === 'sendKey') continue;
    if (rests.every((rest) => rest[key] === value)) common[key] = value;
  }
  const own = rests.map((rest) => {
    const mine: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(rest)) {
      if (key in common) continue;
      if (key === 'id' && value === deliveryId(rest.eventId as string, rest.destination as Destination)) continue;
      if (key === 'sendKey' && value === rest.id) mine.keyed = true;
      else mine[key] = value;
    }
    return mine;
  });
  const head = JSON.stringify({ op: 'adds', c: common, r: own });
  return `${head.slice(0, -1)},"payload":${(adds[0] as Extract<Op, { op: 'add' }>).r.payloadJson}}`;
}

/** `{"op":"add","r":{…,"payload":…}}`: the payload text is spliced in as it is, not serialised again. */
export function addLine(record: DeliveryRecord): string {
  const { payloadJson, ...rest } = record;
  const head = JSON.stringify({ op: 'add', r: rest });
  return `${head.slice(0, -2)},"payload":${payloadJson}}}`;
}

export function newRecord(id: string, d: NewDelivery, payloadJson: string, t: string): DeliveryRecord {
  return freeze({
    id,
    eventId: d.eventId,
    destination: { platform: d.destination.platform, chatId: d.destination.chatId },
    network: d.network,
    txnHash: d.txnHash,
    blockNumber: d.blockNumber,
    ...(d.kind === undefined ? {} : { kind: d.kind }),
    ...(d.usd === undefined ? {} : { usd: d.usd }),
    ...(d.listing === undefined ? {} : { listing: d.listing }),
    state: 'pending',
    attempts: 0,
    reorged: false,
    final: false,
    createdAt: t,
    updatedAt: t,
    payloadJson,
  });
}

function errorCode(error: unknown): string | undefined {
  if (error instanceof Error && 'code' in error && typeof error.code === 'string') return error.code;
  return undefined;
}

/** Writes the lines (each followed by a newline) at the handle's position; returns the bytes written. */
export async function writeAll(handle: FileHandle, lines: readonly string[]): Promise<number> {
  if (lines.length === 0) return 0;
  const data = Buffer.from(`${lines.join('\n')}\n`, 'utf8');
  let written = 0;
  while (written < data.length) {
    const { bytesWritten } = await handle.write(data, written, data.length - written);
    if (bytesWritten === 0) throw new Error('the file accepted no bytes');
    written += bytesWritten;
  }
  return data.length;
}

export function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** The file's bytes, or undefined when it does not exist. Reads `size` bytes, so a device reads as empty. */
export async function readJournalFile(file: string): Promise<Buffer | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(file, 'r');
  } catch (cause) {
    if (errorCode(cause) === 'ENOENT') return undefined;
    throw new StoreFileError(file, `cannot be read (${message(cause)})`, { cause });
  }
  try {
    const info = await handle.stat();
    if (info.isDirectory()) throw new StoreFileError(file, 'is a directory');
    const data = Buffer.alloc(info.size);
    let read = 0;
    while (read < data.length) {
      const { bytesRead } = await handle.read(data, read, data.length - read, read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    return data.subarray(0, read);
  } catch (cause) {
    if (cause instanceof StoreFileError) throw cause;
    throw new StoreFileError(file, `cannot be read (${message(cause)})`, { cause });
  } finally {
    await handle.close();
  }
}

/** Replays the file's operations; `validBytes` excludes a torn last line. */
export function replay(file: string, data: Buffer): { records: Records; validBytes: number } {
  const records = new Records();
  const overlay = new Overlay(records);
  let start = 0;
  let lineNumber = 0;
  let validBytes = 0;
  while (start < data.length) {
    lineNumber += 1;
    const newline = data.indexOf(0x0a, start);
    if (newline === -1) break; // a torn last line
    const bytes = data.subarray(start, newline);
    const isLast = newline + 1 === data.length;
    let value: unknown;
    try {
      if (!isUtf8(bytes)) throw new Error('not UTF-8');
      value = JSON.parse(bytes.toString('utf8'));
    } catch (cause) {
      if (isLast) break; // a torn last line that happens to end in a newline
      throw new StoreFileError(file, `line ${lineNumber} is not valid JSON (${message(cause)})`, { cause });
    }
    if (lineNumber === 1) {
      checkHeader(file, value);
    } else {
      const ops = parseOps(value);
      if (typeof ops === 'string') throw new StoreFileError(file, `line ${lineNumber} ${ops}`);
      for (const op of ops) {
        const problem = apply(overlay, op);
        if (problem) throw new StoreFileError(file, `line ${lineNumber} ${problem}`);
      }
    }
    start = newline + 1;
    validBytes = start;
  }
  overlay.commit();
  return { records, validBytes };
}

function checkHeader(file: string, value: unknown): void {
  if (!isObject(value) || value.op !== 'journal') {
    throw new StoreFileError(file, 'line 1 is not a delivery journal header (is this the right file?)');
  }
  const version = value.v;
  if (typeof version !== 'number' || !Number.isInteger(version) || version < 1) {
    throw new StoreFileError(file, `line 1 has no valid journal version (found ${JSON.stringify(version)})`);
  }
  if (version > FORMAT_VERSION) {
    throw new StoreFileError(
      file,
      `was written by a newer Floorwatch (journal version ${version}; this one reads up to ${FORMAT_VERSION})`,
    );
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

const isString = (value: unknown): value is string => typeof value === 'string';
const isRevision = (value: unknown): value is number =>
  typeof value === 'number' && Number.isInteger(value) && value >= 0;

/** The operations of a line (several for `adds`), or what is wrong with it. */
function parseOps(value: unknown): Op[] | string {
  if (isObject(value) && value.op === 'adds') {
    const { c: common, r: own, payload } = value;
    if (!isObject(common) || !Array.isArray(own) || own.length === 0 || payload === undefined) {
      return 'has an invalid "adds"';
    }
    // One text for all: the records share it in memory, as they did when written.
    const payloadJson = JSON.stringify(payload);
    const ops: Op[] = [];
    for (const [i, r] of own.entries()) {
      const record = isObject(r) ? parseRecord(ownRecord(common, r, payload), payloadJson) : 'not an object';
      if (typeof record === 'string') return `has an invalid record ${i + 1}: ${record}`;
      ops.push({ op: 'add', r: record });
    }
    return ops;
  }
  const op = parseOp(value);
  return typeof op === 'string' ? op : [op];
}

/** A record of an `adds` line as a whole (see addsLine); parseRecord checks what it holds. */
function ownRecord(common: Record<string, unknown>, own: Record<string, unknown>, payload: unknown) {
  const { keyed, ...rest } = own;
  const record: Record<string, unknown> = { ...common, ...rest, payload };
  const { eventId, destination } = record;
  if (record.id === undefined && isString(eventId) && isObject(destination) && isString(destination.chatId)) {
    record.id = deliveryId(eventId, destination as unknown as Destination);
  }
  if (keyed === true) record.sendKey = record.id;
  return record;
}

/** The operation, or what is wrong with it. */
function parseOp(value: unknown): Op | string {
  if (!isObject(value)) return 'is not a JSON object';
  const { op } = value;
  switch (op) {
    case 'add': {
      const record = parseRecord(value.r);
      return typeof record === 'string' ? `has an invalid record: ${record}` : { op, r: record };
    }
    case 'sending':
      if (!isString(value.id) || !isString(value.t) || (value.k !== undefined && !isString(value.k))) {
        return 'has an invalid "sending"';
      }
      return isString(value.k) ? { op, id: value.id, k: value.k, t: value.t } : { op, id: value.id, t: value.t };
    case 'edited':
      if (!isString(value.id) || !isString(value.t)) return 'has an invalid "edited"';
      if (value.r === undefined) return { op, id: value.id, t: value.t };
      return isRevision(value.r) ? { op, id: value.id, t: value.t, r: value.r } : 'has an invalid "edited"';
    case 'fate': {
      const fate = readFateBody(value.f);
      return Array.isArray(value.ids) && value.ids.every(isString) && fate && isString(value.t)
        ? { op, ids: value.ids, f: fate, t: value.t }
        : 'has an invalid "fate"';
    }
    case 'sent':
      return isString(value.id) && isString(value.m) && isString(value.t)
        ? { op, id: value.id, m: value.m, t: value.t }
        : 'has an invalid "sent"';
    case 'failed':
      return isString(value.id) && isString(value.e) && typeof value.p === 'boolean' && isString(value.t)
        ? { op, id: value.id, e: value.e, p: value.p, t: value.t }
        : 'has an invalid "failed"';
    case 'reorged':
    case 'final':
      return isString(value.n) && isString(value.h) && isString(value.t)
        ? { op, n: value.n, h: value.h, t: value.t }
        : `has an invalid "${op}"`;
    default:
      return `has an unknown operation ${JSON.stringify(op)}`;
  }
}

/** A record as the file holds it (`payload` as JSON), or what is wrong with it. */
function parseRecord(value: unknown, payloadText?: string): DeliveryRecord | string {
  if (!isObject(value)) return 'not an object';
  const problem = recordProblem(value);
  if (problem) return problem;
  if (value.payload === undefined) return 'payload';
  const { payload, destination: dest, ...rest } = value as Record<string, unknown> & { destination: Destination };
  const record = {
    ...rest,
    destination: { platform: dest.platform, chatId: dest.chatId },
    payloadJson: payloadText ?? JSON.stringify(payload),
  } as unknown as DeliveryRecord;
  return freeze(record);
}

/** What is wrong with a record's fields other than its payload, if anything. */
export function recordProblem(value: Record<string, unknown>): string | undefined {
  const { destination: dest } = value;
  if (!isObject(dest) || !isString(dest.platform) || !PLATFORMS.has(dest.platform) || !isString(dest.chatId)) {
    return 'destination';
  }
  for (const key of ['id', 'eventId', 'network', 'txnHash', 'createdAt', 'updatedAt'] as const) {
    if (!isString(value[key])) return key;
  }
  for (const key of ['messageId', 'lastError', 'editedAt', 'sendKey'] as const) {
    if (value[key] !== undefined && !isString(value[key])) return key;
  }
  if (typeof value.blockNumber !== 'number' || !Number.isFinite(value.blockNumber)) return 'blockNumber';
  if (value.kind !== undefined && !(isString(value.kind) && DELIVERY_KINDS.has(value.kind))) return 'kind';
  if (value.usd !== undefined && !(typeof value.usd === 'number' && Number.isFinite(value.usd))) return 'usd';
  if (!isString(value.state) || !STATES.has(value.state)) return 'state';
  if (typeof value.attempts !== 'number' || !Number.isInteger(value.attempts) || value.attempts < 0) return 'attempts';
  if (typeof value.reorged !== 'boolean') return 'reorged';
  if (typeof value.final !== 'boolean') return 'final';
  if (value.listing !== undefined && !readListing(value.listing)) return 'listing';
  if (value.fate !== undefined && !readFate(value.fate)) return 'fate';
  if (value.fateShown !== undefined && !isRevision(value.fateShown)) return 'fateShown';
  return undefined;
}
