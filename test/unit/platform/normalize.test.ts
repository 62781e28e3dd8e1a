/**
 * Stream records: a log or receipt that already has the typed shape is returned as it is (a busy
 * stream copies nothing per record); any other goes through the copy rules. Both paths must give the
 * same record, which the properties check by sending each record a second time with a `null` where
 * the first has nothing (the copy drops it, and it is enough to leave the fast path). For logs, the
 * fields of the type must agree; keys outside it are passed on as they came by the fast path.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { eventLog, receipt } from '../../../src/platform/normalize.ts';
import { wireEventLog, wireReceipt } from '../../helpers/platform-fixtures.ts';

/** A log as real servers send it: nothing `null`, every required field of the right type. */
function typedWireLog(index: number): Record<string, unknown> {
  const { rawLog: _, ...log } = wireEventLog(index);
  return { ...log, rawLog: { topics: ['0xddf252ad'], data: '0x' } };
}

interface WireSpec {
  index: number;
  uid: 'keep' | 'drop' | 'null';
  txnHash: 'text' | 'number';
  parentBlockHash: 'keep' | 'drop' | 'null';
  rawLog: 'object' | 'null' | 'drop';
  event: 'keep' | 'drop' | 'extra key' | 'numbers in values' | 'no values' | 'null topicHash';
  extra: string | number | null | undefined;
}

const wireSpecs: fc.Arbitrary<WireSpec> = fc.record({
  index: fc.nat({ max: 1_000 }),
  uid: fc.constantFrom('keep', 'drop', 'null'),
  txnHash: fc.constantFrom('text', 'number'),
  parentBlockHash: fc.constantFrom('keep', 'drop', 'null'),
  rawLog: fc.constantFrom('object', 'null', 'drop'),
  event: fc.constantFrom('keep', 'drop', 'extra key', 'numbers in values', 'no values', 'null topicHash'),
  extra: fc.option(fc.oneof(fc.string(), fc.integer(), fc.constant(null)), { nil: undefined }),
});

function buildLog(spec: WireSpec): Record<string, unknown> {
  const log = typedWireLog(spec.index);
  if (spec.uid === 'drop') delete log.uid;
  if (spec.uid === 'null') log.uid = null;
  if (spec.txnHash === 'number') log.txnHash = spec.index * 7 + 1;
  if (spec.parentBlockHash === 'drop') delete log.parentBlockHash;
  if (spec.parentBlockHash === 'null') log.parentBlockHash = null;
  if (spec.rawLog === 'null') log.rawLog = null;
  if (spec.rawLog === 'drop') delete log.rawLog;
  const event = { ...(log.event as Record<string, unknown>) };
  if (spec.event === 'drop') delete log.event;
  else {
    if (spec.event === 'extra key') event.indexed = [true, true, true];
    if (spec.event === 'numbers in values') event.values = ['0xabc', 42, { nested: true }];
    if (spec.event === 'no values') delete event.values;
    if (spec.event === 'null topicHash') event.topicHash = null;
    log.event = event;
  }
  if (spec.extra !== undefined) log.futureField = spec.extra;
  return log;
}

const LOG_FIELDS = [
  'id',
  'uid',
  'blockNumber',
  'blockHash',
  'parentBlockHash',
  'contractAddress',
  'txnHash',
  'txnIndex',
  'txnLogIndex',
  'ts',
  'txnInfo',
  'rawLog',
  'type',
  'contractType',
  'logDataType',
];

/** What {@link EventLog} promises of a normalised log (its fields, its event's five), or the error. */
function typedFields(record: unknown): unknown {
  if (record instanceof Error) return record;
  const log = record as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const key of LOG_FIELDS) if (Object.hasOwn(log, key)) out[key] = log[key];
  const event = log.event as Record<string, unknown> | undefined;
  if (event !== undefined) {
    const { topicHash, eventSig, types, names, values } = event;
    out.event = { topicHash, eventSig, types, names, values };
  }
  return out;
}

/** The normalised record, or the error it throws. */
function outcome<T>(normalize: (value: unknown) => T, value: unknown): unknown {
  try {
    return normalize(value);
  } catch (error) {
    return error;
  }
}

describe('eventLog', () => {
  it('GIVEN a log in the typed shape WHEN normalised THEN it is returned as it is', () => {
    const log = typedWireLog(3);
    expect(eventLog(log)).toBe(log);
  });

  it('GIVEN a log with null fields, a numeric txnHash, no uid and an event with an extra key WHEN normalised THEN the copy rules apply', () => {
    const wire = wireEventLog(4, {
      txnHash: 12345,
      event: {
        topicHash: '0x1',
        eventSig: 'E(uint256 a)',
        types: ['uint256'],
        names: ['a'],
        values: [7],
        indexed: [false],
      },
    });
    delete wire.uid;
    const log = eventLog(wire);

    expect(log).not.toBe(wire);
    expect(log.txnHash).toBe('12345');
    expect(log.uid).toBe(`${wire.blockHash}:12345:${wire.txnLogIndex}`);
    expect('rawLog' in log).toBe(false);
    expect(log.event).toEqual({
      topicHash: '0x1',
      eventSig: 'E(uint256 a)',
      types: ['uint256'],
      names: ['a'],
      values: ['7'],
    });
  });

  it('GIVEN a log with an own "__proto__" key WHEN normalised THEN the key is dropped and the prototype kept', () => {
    const wire = JSON.parse(JSON.stringify(typedWireLog(5)).replace('{', '{"__proto__":{"polluted":true},'));
    const log = eventLog(wire) as unknown as Record<string, unknown>;
    expect(Object.hasOwn(log, '__proto__')).toBe(false);
    expect(Object.getPrototypeOf(log)).toBe(Object.prototype);
    expect(log.polluted).toBeUndefined();
  });

  it('GIVEN a typed log with keys outside the type, null ones and extra event keys included, WHEN normalised THEN it is returned as it is', () => {
    const log: Record<string, unknown> = { ...typedWireLog(6), futureField: null, removed: false };
    log.event = { ...(log.event as Record<string, unknown>), indexed: [true, true, false] };
    expect(eventLog(log)).toBe(log);
  });

  it('GIVEN a log with a null field of the type WHEN normalised THEN it leaves the fast path and the field is dropped', () => {
    for (const key of ['id', 'blockHash', 'txnIndex', 'ts', 'txnInfo', 'rawLog', 'event', 'type', 'logDataType']) {
      const wire = { ...typedWireLog(7), [key]: null };
      const log = eventLog(wire);
      expect(log, key).not.toBe(wire);
      expect(Object.hasOwn(log, key), key).toBe(false);
    }
  });

  it('GIVEN any log WHEN normalised without a type and with a null type THEN both give the same fields', () => {
    fc.assert(
      fc.property(wireSpecs, (spec) => {
        const wire = buildLog(spec);
        delete wire.type;
        const asItCame = structuredClone(wire);
        const first = outcome(eventLog, asItCame);
        const second = outcome(eventLog, { ...structuredClone(wire), type: null });
        expect(typedFields(first)).toEqual(typedFields(second));
        const typed =
          spec.uid === 'keep' &&
          spec.txnHash === 'text' &&
          spec.parentBlockHash !== 'null' &&
          spec.rawLog !== 'null' &&
          (spec.event === 'keep' || spec.event === 'drop' || spec.event === 'extra key');
        expect(first === asItCame).toBe(typed);
      }),
      { numRuns: 300 },
    );
  });
});

describe('receipt', () => {
  it('GIVEN a receipt in the typed shape WHEN normalised THEN it is returned as it is', () => {
    const wire = wireReceipt();
    expect(receipt(wire)).toBe(wire);
  });

  it('GIVEN receipts with null, missing or odd fields WHEN normalised as they are and with an extra null key THEN both give the same record', () => {
    fc.assert(
      fc.property(
        fc.record({
          final: fc.constantFrom(true, false, null, undefined, 'yes'),
          reorged: fc.constantFrom(true, false, null, undefined),
          logs: fc.constantFrom('keep', 'null', 'drop', 'null entry'),
          txnStatus: fc.constantFrom('SUCCESSFUL', null, undefined),
        }),
        (spec) => {
          const wire: Record<string, unknown> = wireReceipt();
          for (const key of ['final', 'reorged', 'txnStatus'] as const) {
            if (spec[key] === undefined) delete wire[key];
            else wire[key] = spec[key];
          }
          if (spec.logs === 'null') wire.logs = null;
          if (spec.logs === 'drop') delete wire.logs;
          if (spec.logs === 'null entry') wire.logs = [null];
          expect(outcome(receipt, structuredClone(wire))).toEqual(
            outcome(receipt, { ...structuredClone(wire), droppedByTheCopy: null }),
          );
        },
      ),
      { numRuns: 200 },
    );
  });
});
