/**
 * The client's door for records: every record of every answer is read by normalize.ts (spellings)
 * and then checked by its schema (schemas.ts) before a service returns it. A record that fails is
 * never handed out: in a list it is dropped and counted ({@link RecordDrops}) and the others are
 * kept; as the one record of an answer it makes the call fail with a bad response naming it.
 */
import * as v from 'valibot';
import * as n from '../normalize.ts';
import { SampledReporter } from '../sampled-report.ts';
import type {
  Audience,
  AudienceContact,
  CollectibleOrder,
  Collection,
  Contract,
  ContractInfo,
  ContractSource,
  EventLog,
  GasSponsor,
  Order,
  PropertyFilter,
  Step,
  TokenBalance,
  TokenMetadata,
  TransactionReceipt,
} from '../types.ts';
import * as s from './schemas.ts';

/** Default interval of dropped-record reports: a platform sending bad records costs one report a minute. */
export const DEFAULT_DROP_REPORT_MS = 60_000;

/** A record whose values break its schema: named with the fields at fault. */
export class BadRecordError extends n.ShapeError {
  override name = 'BadRecordError';
  /** What the record is, for people: `an order`, `a token balance`. */
  readonly record: string;
  /** Paths of the fields at fault, e.g. `priceUSD`, `metadata.tokenId`. */
  readonly fields: readonly string[];

  constructor(what: string, record: string, problems: ReadonlyArray<{ path: string; text: string }>) {
    super(`${what} is not a valid record: ${problems.map((p) => `${p.path || 'record'}: ${p.text}`).join('; ')}`);
    this.record = record;
    this.fields = problems.map((p) => p.path).filter(Boolean);
  }
}

/** Reads one record of the wire into its type, or throws {@link n.ShapeError} (a {@link BadRecordError} for values). */
export type RecordDecoder<T> = (value: unknown, what: string) => T;

/** Most characters of a wrong value quoted in a problem: enough to recognise it, never a whole page. */
const MAX_QUOTED = 60;

function problemsOf(issues: readonly v.BaseIssue<unknown>[]): Array<{ path: string; text: string }> {
  return issues.slice(0, 3).map((issue) => {
    const path = (issue.path ?? [])
      .map((item) => (typeof item.key === 'number' ? `[${item.key}]` : `.${String(item.key)}`))
      .join('')
      .replace(/^\./, '');
    const received = issue.received.length > MAX_QUOTED ? `${issue.received.slice(0, MAX_QUOTED)}…` : issue.received;
    return { path, text: `${issue.message}, found ${received}` };
  });
}

/** A decoder: the record normalised, then checked by `schema`; `record` names it for people. */
function checked<T>(
  record: string,
  normalize: (value: unknown, what: string) => unknown,
  schema: v.GenericSchema,
): RecordDecoder<T> {
  return (value, what) => {
    const result = v.safeParse(schema, normalize(value, what));
    if (!result.success) throw new BadRecordError(what, record, problemsOf(result.issues));
    return result.output as T;
  };
}

export const tokenMetadata = checked<TokenMetadata>('token details', n.tokenMetadata, s.tokenMetadataSchema);
export const order = checked<Order>('an order', n.order, s.orderSchema);
export const collectibleOrder = checked<CollectibleOrder>(
  'a token with its order',
  n.collectibleOrder,
  s.collectibleOrderSchema,
);
export const propertyFilter = checked<PropertyFilter>('a trait filter', n.propertyFilter, s.propertyFilterSchema);
export const contractInfo = checked<ContractInfo>('collection details', n.contractInfo, s.contractInfoSchema);
export const collection = checked<Collection>('a collection', n.collection, s.collectionSchema);
export const tokenBalance = checked<TokenBalance>('a token balance', n.tokenBalance, s.tokenBalanceSchema);
export const contractSource = checked<ContractSource>('a contract source', n.contractSource, s.contractSourceSchema);
export const contract = checked<Contract>('a contract', n.contract, s.contractSchema);
export const audience = checked<Audience>('an audience', n.audience, s.audienceSchema);
export const audienceContact = checked<AudienceContact>('a contact', n.audienceContact, s.audienceContactSchema);
export const gasSponsor = checked<GasSponsor>('a gas sponsor', n.gasSponsor, s.gasSponsorSchema);
export const step = checked<Step>('a checkout step', n.step, s.stepSchema);
export const chartPoint = n.chartPoint;

/**
 * A stream log. One that already has the typed shape with a canonical contract address and block
 * (normalize.ts, `isTypedLog`) is returned as it is: a busy stream copies and checks nothing more
 * per log. Any other is copied by normalize.ts and checked by its schema, which lowercases a
 * checksummed address. The value must be one nobody else holds (a freshly parsed line).
 */
export function eventLog(value: unknown): EventLog {
  const src = n.object(value, 'log');
  if (n.isTypedLog(src)) return src as unknown as EventLog;
  return checkedLog(src, 'log');
}
const checkedLog = checked<EventLog>('a stream log', n.eventLog, s.eventLogSchema);

/** A stream receipt; as {@link eventLog}, one of the typed shape is returned as it is. */
export function receipt(value: unknown): TransactionReceipt {
  const src = n.object(value, 'receipt');
  if (n.isTypedReceipt(src)) return src as unknown as TransactionReceipt;
  return checkedReceipt(src, 'receipt');
}
const checkedReceipt = checked<TransactionReceipt>('a stream receipt', n.receipt, s.receiptSchema);

/** One dropped record, as a report samples it. */
export interface DroppedRecord {
  /** `Service/Operation` that answered with it. */
  operation: string;
  /** Why, with the path of the field at fault; platform text quoted at most 60 characters, secrets scrubbed. */
  reason: string;
}

/** What {@link RecordDrops} knows, for /status and metrics. */
export interface DroppedRecordsSnapshot {
  total: number;
  /** Dropped records by `Service/Operation`. */
  byOperation: ReadonlyMap<string, number>;
}

/**
 * Counts the records the client did not hand out (bad records of lists, bad stream lines) by
 * operation, and reports them rate-limited: the first at once, then one summary per interval with
 * how many there were and a sample. Counting costs a map update; nothing is kept of the records.
 */
export class RecordDrops {
  readonly #byOperation = new Map<string, number>();
  readonly #reporter: SampledReporter<DroppedRecord>;
  #total = 0;

  constructor(report?: (sample: DroppedRecord, dropped: number) => void, intervalMs = DEFAULT_DROP_REPORT_MS) {
    this.#reporter = new SampledReporter(report, intervalMs);
  }

  /** A record dropped here: counted and reported. */
  drop(record: DroppedRecord): void {
    this.count(record.operation, 1);
    this.#reporter.add(record);
  }

  /** Records dropped and reported elsewhere (a stream reports its own bad lines): counted only. */
  count(operation: string, dropped: number): void {
    this.#byOperation.set(operation, (this.#byOperation.get(operation) ?? 0) + dropped);
    this.#total += dropped;
  }

  snapshot(): DroppedRecordsSnapshot {
    return { total: this.#total, byOperation: new Map(this.#byOperation) };
  }

  /** Reports what is still pending. */
  close(): void {
    this.#reporter.close();
  }
}

/**
 * Reads the records of one answer of `operation`. Lists keep their good records and drop the bad
 * ones into `drops`; a lone record that is bad fails the answer (the caller turns the error into a
 * bad response naming the operation).
 */
export class AnswerReader {
  readonly #operation: string;
  readonly #drops: RecordDrops;
  readonly #scrub: (text: string) => string;

  constructor(operation: string, drops: RecordDrops, scrub: (text: string) => string) {
    this.#operation = operation;
    this.#drops = drops;
    this.#scrub = scrub;
  }

  /** A list of records; `null` or absent (Go's nil slice) reads as empty, anything but a list fails the answer. */
  list<T>(value: unknown, what: string, decode: RecordDecoder<T>): T[] {
    if (value === null || value === undefined) return [];
    if (!Array.isArray(value)) return n.list(value, what, decode);
    const out: T[] = [];
    for (let i = 0; i < value.length; i++) {
      try {
        out.push(decode(value[i], `${what}[${i}]`));
      } catch (error) {
        if (!(error instanceof n.ShapeError)) throw error;
        this.#drops.drop({ operation: this.#operation, reason: this.#scrub(error.message) });
      }
    }
    return out;
  }

  /** The one record of an answer. */
  one<T>(value: unknown, what: string, decode: RecordDecoder<T>): T {
    return decode(value, what);
  }

  /** The one record of an answer, or undefined when it has none (`null` or absent). */
  optional<T>(value: unknown, what: string, decode: RecordDecoder<T>): T | undefined {
    return value === null || value === undefined ? undefined : decode(value, what);
  }
}
