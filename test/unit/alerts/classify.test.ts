import fc from 'fast-check';
import { keccak256, toBytes, toEventSelector } from 'viem';
import { describe, expect, it } from 'vitest';
import { TransactionAssembler } from '../../../src/alerts/assembly.ts';
import {
  CANONICAL_SIGNATURES,
  type ClassifyContext,
  classifyTransaction,
  type EventName,
  TOPICS,
} from '../../../src/alerts/classify.ts';
import type { ChainEvent } from '../../../src/alerts/types.ts';
import type { EventLog } from '../../../src/platform/types.ts';
import {
  ALICE,
  addr,
  BOB,
  CAROL,
  COLLECTION,
  CURRENCY,
  ERC1155,
  MARKET,
  OPERATOR,
  OTHER_COLLECTION,
  Tx,
  ZERO,
} from './fixtures.ts';

const WATCHED = new Set([COLLECTION, OTHER_COLLECTION, ERC1155]);
const ctx: ClassifyContext = { network: 'polygon', isCollection: (a) => WATCHED.has(a) };

function classify(tx: Tx | EventLog[], context: ClassifyContext = ctx) {
  return classifyTransaction(Array.isArray(tx) ? tx : tx.logs, context);
}

function only(tx: Tx): ChainEvent {
  const { events, skipped } = classify(tx);
  expect(skipped).toEqual([]);
  expect(events).toHaveLength(1);
  return events[0] as ChainEvent;
}

describe('topic hashes', () => {
  it('are keccak256 of the canonical signatures', () => {
    for (const name of Object.keys(TOPICS) as EventName[]) {
      expect(keccak256(toBytes(CANONICAL_SIGNATURES[name]))).toBe(TOPICS[name]);
      expect(toEventSelector(CANONICAL_SIGNATURES[name])).toBe(TOPICS[name]);
    }
  });
});

describe('classifyTransaction: token transfers', () => {
  it('classifies a Transfer from the zero address as a mint', () => {
    const tx = new Tx(1).transfer(COLLECTION, ZERO, ALICE, '7');
    expect(only(tx)).toEqual({
      id: `polygon:${tx.hash}:${COLLECTION}:mint`,
      kind: 'mint',
      network: 'polygon',
      collection: COLLECTION,
      txnHash: tx.hash,
      blockNumber: tx.blockNumber,
      blockHash: tx.blockHash,
      ts: '2026-11-21T15:00:00Z',
      tokens: [{ tokenId: '7', amount: '1' }],
      to: ALICE,
      accounts: [ALICE],
      orderIds: [],
      logUids: [tx.logs[0]?.uid],
    });
  });

  it('makes several mints of one transaction one event, tokens in log order', () => {
    const tx = new Tx(2).transfer(COLLECTION, ZERO, ALICE, '3').transfer(COLLECTION, ZERO, ALICE, '1');
    tx.transfer(COLLECTION, ZERO, BOB, '2');
    const event = only(tx);
    expect(event.kind).toBe('mint');
    expect(event.tokens.map((t) => t.tokenId)).toEqual(['3', '1', '2']);
    expect(event.accounts).toEqual([ALICE, BOB]);
    expect(event.to).toBeUndefined();
    expect(event.logUids).toEqual(tx.logs.map((l) => l.uid));
  });

  it('classifies a Transfer to the zero address as a burn', () => {
    const event = only(new Tx(3).transfer(COLLECTION, ALICE, ZERO, '9'));
    expect(event).toMatchObject({
      kind: 'burn',
      from: ALICE,
      accounts: [ALICE],
      tokens: [{ tokenId: '9', amount: '1' }],
    });
    expect(event.to).toBeUndefined();
  });

  it('classifies a plain Transfer, lower-casing addresses and the hash', () => {
    const tx = new Tx(4).transfer(
      COLLECTION.toUpperCase().replace('0X', '0x'),
      ALICE.toUpperCase().replace('0X', '0x'),
      BOB,
      '12',
    );
    const upper = tx.logs[0] as EventLog;
    upper.txnHash = upper.txnHash.toUpperCase().replace('0X', '0x');
    const event = only(tx);
    expect(event).toMatchObject({
      kind: 'transfer',
      collection: COLLECTION,
      from: ALICE,
      to: BOB,
      accounts: [ALICE, BOB],
    });
    expect(event.id).toBe(`polygon:${tx.hash}:${COLLECTION}:transfer`);
    expect(event.txnHash).toBe(tx.hash);
  });

  it('emits a mint and a transfer of one collection in one transaction as two events', () => {
    const tx = new Tx(5).transfer(COLLECTION, ALICE, BOB, '1').transfer(COLLECTION, ZERO, ALICE, '2');
    const { events } = classify(tx);
    expect(events.map((e) => e.kind)).toEqual(['transfer', 'mint']);
  });

  it('reads an ERC-1155 TransferSingle, without the operator among the accounts', () => {
    const event = only(new Tx(6).single(ERC1155, ALICE, BOB, '5', '3'));
    expect(event).toMatchObject({ kind: 'transfer', from: ALICE, to: BOB, tokens: [{ tokenId: '5', amount: '3' }] });
    expect(event.accounts).not.toContain(OPERATOR);
  });

  it('makes an ERC-1155 TransferBatch one event listing ids and amounts (JSON arrays)', () => {
    const event = only(new Tx(7).batch(ERC1155, ALICE, BOB, '["1","2","30"]', '["4","5","6"]'));
    expect(event.kind).toBe('transfer');
    expect(event.tokens).toEqual([
      { tokenId: '1', amount: '4' },
      { tokenId: '2', amount: '5' },
      { tokenId: '30', amount: '6' },
    ]);
  });

  it('reads TransferBatch lists that are comma-separated or unquoted JSON, big ids exactly', () => {
    const big = '115792089237316195423570985008687907853269984665640564039457584007913129639935';
    const event = only(new Tx(8).batch(ERC1155, ZERO, ALICE, `1, ${big}`, '[1,2]'));
    expect(event.kind).toBe('mint');
    expect(event.tokens).toEqual([
      { tokenId: '1', amount: '1' },
      { tokenId: big, amount: '2' },
    ]);
  });

  it('ignores ERC-20 transfers and transfers of unwatched contracts', () => {
    const tx = new Tx(9)
      .erc20(CURRENCY, ALICE, BOB, '1000000', { contractType: 'ERC20' })
      .erc20(COLLECTION, ALICE, BOB, '5', { contractType: 'erc-20' })
      .transfer(addr(0xdead), ALICE, BOB, '1');
    expect(classify(tx)).toEqual({ events: [], skipped: [] });
  });

  it('treats a Transfer of a watched contract with an unknown contract type as an NFT transfer', () => {
    const tx = new Tx(10).transfer(COLLECTION, ALICE, BOB, '1', { contractType: 'UNKNOWN' });
    tx.transfer(OTHER_COLLECTION, ALICE, BOB, '2', { names: ['from', 'to', 'tokenId'] });
    delete (tx.logs[1] as EventLog).contractType;
    expect(classify(tx).events.map((e) => e.collection)).toEqual([COLLECTION, OTHER_COLLECTION]);
  });
});

describe('classifyTransaction: argument names', () => {
  it('reads underscored names, in any order', () => {
    const tx = new Tx(11).raw('Transfer', COLLECTION, ['0042', ALICE, BOB], { names: ['_tokenId', '_from', '_to'] });
    expect(only(tx)).toMatchObject({
      kind: 'transfer',
      from: ALICE,
      to: BOB,
      tokens: [{ tokenId: '42', amount: '1' }],
    });
  });

  it('reads names in another case and aliases (id for tokenId)', () => {
    const tx = new Tx(12).raw('Transfer', COLLECTION, [ALICE, BOB, '8'], { names: ['FROM', 'To', '_id'] });
    expect(only(tx)).toMatchObject({ from: ALICE, to: BOB, tokens: [{ tokenId: '8' }] });
    const single = new Tx(13).raw('TransferSingle', ERC1155, ['2', OPERATOR, ALICE, BOB, '0x10'], {
      names: ['_value', '_operator', '_from', '_to', '_id'],
    });
    expect(only(single)).toMatchObject({ from: ALICE, to: BOB, tokens: [{ tokenId: '16', amount: '2' }] });
  });

  it('falls back to positions when names are absent or unknown', () => {
    const none = new Tx(14).transfer(COLLECTION, ALICE, BOB, '3', { names: null });
    expect(only(none)).toMatchObject({ from: ALICE, to: BOB, tokens: [{ tokenId: '3' }] });
    const odd = new Tx(15).raw('Transfer', COLLECTION, [ALICE, BOB, '4'], { names: ['src', 'dst', 'wad'] });
    expect(only(odd)).toMatchObject({ from: ALICE, to: BOB, tokens: [{ tokenId: '4' }] });
    const created = new Tx(16).created(
      { requestId: '9', creator: ALICE, collection: COLLECTION, tokenId: '1', isListing: '1', price: '5' },
      { names: null },
    );
    expect(only(created)).toMatchObject({ kind: 'listing', from: ALICE, orderIds: ['9'] });
  });

  it('matches the topic hash case-insensitively and ignores the eventSig spelling', () => {
    const tx = new Tx(17).transfer(COLLECTION, ALICE, BOB, '3', {
      topicHash: TOPICS.Transfer.toUpperCase().replace('0X', '0x'),
    });
    (tx.logs[0]?.event ?? { eventSig: '' }).eventSig = 'Whatever(address,address,uint256)';
    expect(only(tx).kind).toBe('transfer');
  });
});

describe('classifyTransaction: marketplace requests', () => {
  it('classifies RequestCreated with isListing true as a listing with its price', () => {
    const event = only(
      new Tx(20).created({
        requestId: '77',
        creator: ALICE,
        collection: COLLECTION,
        tokenId: '5',
        isListing: 'true',
        quantity: '1',
        price: '1500000000000000000',
      }),
    );
    expect(event).toMatchObject({
      id: expect.stringMatching(/:listing$/),
      kind: 'listing',
      collection: COLLECTION,
      from: ALICE,
      accounts: [ALICE],
      orderIds: ['77'],
      tokens: [{ tokenId: '5', amount: '1' }],
      price: { perToken: '1500000000000000000', currency: CURRENCY },
    });
  });

  it('classifies RequestCreated with isListing false (or 0) as an offer', () => {
    for (const isListing of ['false', '0', 'FALSE']) {
      const event = only(
        new Tx(21).created({
          requestId: '3',
          creator: BOB,
          collection: COLLECTION,
          tokenId: '1',
          isListing,
          price: '10',
        }),
      );
      expect(event.kind).toBe('offer');
    }
  });

  it('makes a batch of listings one event; the price only when they all agree', () => {
    const same = new Tx(22)
      .created({ requestId: '1', creator: ALICE, collection: COLLECTION, tokenId: '1', isListing: 'true', price: '5' })
      .created({ requestId: '2', creator: ALICE, collection: COLLECTION, tokenId: '2', isListing: 'true', price: '5' });
    expect(only(same)).toMatchObject({ orderIds: ['1', '2'], price: { perToken: '5', currency: CURRENCY } });
    const mixed = new Tx(23)
      .created({ requestId: '1', creator: ALICE, collection: COLLECTION, tokenId: '1', isListing: 'true', price: '5' })
      .created({ requestId: '2', creator: ALICE, collection: COLLECTION, tokenId: '2', isListing: 'true', price: '6' });
    const event = only(mixed);
    expect(event.tokens).toHaveLength(2);
    expect(event.price).toBeUndefined();
  });

  it('classifies RequestCancelled as a cancel of the tokenContract, by the sender', () => {
    const tx = new Tx(24, 5, undefined, ALICE).cancelled('55', COLLECTION);
    expect(only(tx)).toMatchObject({
      kind: 'cancel',
      collection: COLLECTION,
      orderIds: ['55'],
      from: ALICE,
      accounts: [ALICE],
      tokens: [],
    });
  });

  it('takes request events only from marketplaces when told which they are', () => {
    const tx = new Tx(25).cancelled('1', COLLECTION).cancelled('2', COLLECTION, { market: addr(0xbad) });
    const { events } = classify(tx, { ...ctx, isMarketplace: (a) => a === MARKET });
    expect(events[0]?.orderIds).toEqual(['1']);
  });
});

describe('classifyTransaction: sales', () => {
  it('makes a sale from RequestAccepted and consumes its Transfer; ERC-20 payments are ignored', () => {
    const tx = new Tx(30, 10, undefined, BOB)
      .erc20(CURRENCY, BOB, ALICE, '1450000000000000000', { contractType: 'ERC20' })
      .erc20(CURRENCY, BOB, CAROL, '50000000000000000')
      .transfer(COLLECTION, ALICE, BOB, '7')
      .accepted({ requestId: '101', buyer: BOB, collection: COLLECTION });
    const event = only(tx);
    expect(event).toMatchObject({
      id: `polygon:${tx.hash}:${COLLECTION}:sale`,
      kind: 'sale',
      collection: COLLECTION,
      from: ALICE,
      to: BOB,
      tokens: [{ tokenId: '7', amount: '1' }],
      orderIds: ['101'],
    });
    expect(event.accounts.sort()).toEqual([ALICE, BOB].sort());
    expect(event.logUids).toEqual([tx.logs[2]?.uid, tx.logs[3]?.uid]);
    expect(event.price).toBeUndefined();
  });

  it('makes a sweep of 10 tokens from several sellers one sale with 10 tokens and 10 orders', () => {
    const tx = new Tx(31);
    for (let i = 0; i < 10; i++) {
      const seller = i % 2 === 0 ? ALICE : CAROL;
      tx.transfer(COLLECTION, seller, BOB, String(100 + i));
      tx.accepted({ requestId: String(500 + i), buyer: BOB, collection: COLLECTION });
    }
    const event = only(tx);
    expect(event.kind).toBe('sale');
    expect(event.tokens.map((t) => t.tokenId)).toEqual(Array.from({ length: 10 }, (_, i) => String(100 + i)));
    expect(event.orderIds).toEqual(Array.from({ length: 10 }, (_, i) => String(500 + i)));
    expect(event.from).toBeUndefined();
    expect(event.to).toBe(BOB);
    expect(new Set(event.accounts)).toEqual(new Set([ALICE, BOB, CAROL]));
    expect(event.logUids).toHaveLength(20);
  });

  it('sells ERC-1155 tokens with the amounts of the TransferSingle', () => {
    const tx = new Tx(32)
      .single(ERC1155, ALICE, CAROL, '3', '4')
      .accepted({ requestId: '9', buyer: CAROL, collection: ERC1155, quantity: '4' });
    expect(only(tx)).toMatchObject({ kind: 'sale', from: ALICE, to: CAROL, tokens: [{ tokenId: '3', amount: '4' }] });
  });

  it('says which requests an ERC-1155 sale filled only in part, and that its tokens moved as units', () => {
    const tx = new Tx(34)
      .single(ERC1155, ALICE, CAROL, '3', '1')
      .accepted({ requestId: '9', buyer: CAROL, collection: ERC1155, remaining: '2' })
      .single(ERC1155, ALICE, CAROL, '5', '2')
      .accepted({ requestId: '10', buyer: CAROL, collection: ERC1155, quantity: '2', remaining: '0x0' });
    expect(only(tx)).toMatchObject({
      kind: 'sale',
      orderIds: ['9', '10'],
      partlyFilledOrderIds: ['9'],
      multiUnit: true,
    });
    // Filled in part, then in full, in one transaction: filled.
    const twice = new Tx(35)
      .single(ERC1155, ALICE, CAROL, '3', '1')
      .accepted({ requestId: '9', buyer: CAROL, collection: ERC1155, remaining: '1' })
      .single(ERC1155, ALICE, CAROL, '3', '1')
      .accepted({ requestId: '9', buyer: CAROL, collection: ERC1155, remaining: '0' });
    expect(only(twice).partlyFilledOrderIds).toBeUndefined();
    // ERC-721 sales carry neither.
    const whole = only(
      new Tx(36).transfer(COLLECTION, ALICE, BOB, '7').accepted({ requestId: '1', buyer: BOB, collection: COLLECTION }),
    );
    expect(whole.partlyFilledOrderIds).toBeUndefined();
    expect(whole.multiUnit).toBeUndefined();
  });

  it('skips a RequestAccepted whose quantityRemaining is not an unsigned integer', () => {
    const tx = new Tx(37)
      .single(ERC1155, ALICE, CAROL, '3', '1')
      .accepted({ requestId: '9', buyer: CAROL, collection: ERC1155, remaining: '-1' });
    const { skipped } = classify(tx);
    expect(skipped.map((s) => s.reason)).toEqual([
      'RequestAccepted: quantityRemaining is not an unsigned integer: "-1"',
    ]);
  });

  it('uses the Transfer of a sold collection even when it is not watched', () => {
    const unwatched = addr(0x5e11, 'dd');
    const tx = new Tx(33)
      .transfer(unwatched, ALICE, BOB, '1')
      .accepted({ requestId: '1', buyer: BOB, collection: unwatched });
    expect(only(tx)).toMatchObject({ kind: 'sale', collection: unwatched, tokens: [{ tokenId: '1' }] });
  });

  it('falls back to the receiver when the transaction has no NFT transfer', () => {
    const tx = new Tx(34).accepted({ requestId: '1', buyer: BOB, receiver: CAROL, collection: COLLECTION });
    expect(only(tx)).toMatchObject({ kind: 'sale', to: CAROL, tokens: [], accounts: [BOB, CAROL] });
  });

  it('keeps transfers of another collection in the same transaction', () => {
    const tx = new Tx(35)
      .transfer(COLLECTION, ALICE, BOB, '1')
      .accepted({ requestId: '1', buyer: BOB, collection: COLLECTION })
      .transfer(OTHER_COLLECTION, BOB, CAROL, '2');
    expect(classify(tx).events.map((e) => `${e.collection}:${e.kind}`)).toEqual([
      `${COLLECTION}:sale`,
      `${OTHER_COLLECTION}:transfer`,
    ]);
  });
});

describe('classifyTransaction: malformed logs', () => {
  it('skips malformed logs with a reason and classifies the rest', () => {
    const tx = new Tx(40)
      .transfer(COLLECTION, ALICE, BOB, 'seven')
      .transfer(COLLECTION, ALICE, 'bob', '1')
      .raw('Transfer', COLLECTION, [ALICE, BOB])
      .batch(ERC1155, ALICE, BOB, '["1","2"]', '["1"]')
      .batch(ERC1155, ALICE, BOB, '["1","x"]', '["1","1"]')
      .created({ requestId: '1', creator: ALICE, collection: COLLECTION, tokenId: '1', isListing: 'maybe', price: '1' })
      .accepted({ requestId: '-1', buyer: BOB, collection: COLLECTION })
      .transfer(COLLECTION, ALICE, BOB, '8');
    const noEvent = { ...(tx.logs[0] as EventLog), uid: 'no-event', txnLogIndex: 50 };
    delete noEvent.event;
    const { events, skipped } = classify([...tx.logs, noEvent]);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ kind: 'transfer', tokens: [{ tokenId: '8' }] });
    expect(skipped.map((s) => s.uid)).toEqual([...tx.logs.slice(0, 7).map((l) => l.uid), 'no-event']);
    expect(skipped.map((s) => s.reason)).toEqual([
      'Transfer: tokenId is not an unsigned integer: "seven"',
      'Transfer: to is not an address: "bob"',
      'Transfer: expected 3 values, got 2',
      'TransferBatch: 2 ids but 1 values',
      'TransferBatch: ids is not a list of unsigned integers: "[\\"1\\",\\"x\\"]"',
      'RequestCreated: isListing is not a boolean: "maybe"',
      'RequestAccepted: requestId is not an unsigned integer: "-1"',
      'no decoded event',
    ]);
  });

  it('ignores unknown topics and skips logs of another transaction', () => {
    const tx = new Tx(41).transfer(COLLECTION, ALICE, BOB, '1');
    const other = new Tx(42).transfer(COLLECTION, ALICE, BOB, '2');
    const unknown = { ...(tx.logs[0] as EventLog), uid: 'u' };
    unknown.event = { topicHash: `0x${'ab'.repeat(32)}`, eventSig: 'Approval()', types: [], names: [], values: [] };
    const { events, skipped } = classify([...tx.logs, unknown, ...other.logs]);
    expect(events).toHaveLength(1);
    expect(skipped).toEqual([{ uid: other.logs[0]?.uid, reason: expect.stringContaining('belongs to transaction') }]);
  });

  it('returns nothing for no logs and puts logs back in log order', () => {
    expect(classify([])).toEqual({ events: [], skipped: [] });
    const tx = new Tx(43).transfer(COLLECTION, ZERO, ALICE, '1').transfer(COLLECTION, ZERO, ALICE, '2');
    const event = classify([...tx.logs].reverse()).events[0];
    expect(event?.tokens.map((t) => t.tokenId)).toEqual(['1', '2']);
  });
});

describe('classifyTransaction: robustness', () => {
  it('never throws, whatever the fields hold (property)', () => {
    const base = new Tx(60)
      .erc20(CURRENCY, BOB, ALICE, '100')
      .transfer(COLLECTION, ALICE, BOB, '1')
      .batch(ERC1155, ZERO, BOB, '["1","2"]', '["1","1"]')
      .accepted({ requestId: '1', buyer: BOB, collection: COLLECTION })
      .created({ requestId: '2', creator: ALICE, collection: COLLECTION, tokenId: '3', isListing: 'true', price: '9' })
      .cancelled('3', COLLECTION).logs;
    const field = fc.constantFrom(
      'uid',
      'txnHash',
      'contractAddress',
      'txnLogIndex',
      'contractType',
      'event',
      'txnInfo',
    );
    const eventField = fc.constantFrom('topicHash', 'names', 'values');
    const mutation = fc.record({
      log: fc.nat(base.length - 1),
      field: fc.option(field),
      eventField: fc.option(eventField),
      valueAt: fc.nat(9),
      value: fc.anything(),
    });
    fc.assert(
      fc.property(fc.array(mutation, { maxLength: 6 }), (mutations) => {
        const logs = base.map(
          (log): EventLog =>
            log.event ? { ...log, event: { ...log.event, values: [...log.event.values] } } : { ...log },
        );
        for (const m of mutations) {
          const target = logs[m.log] as unknown as Record<string, unknown>;
          if (m.field) target[m.field] = m.value;
          const event = target.event as Record<string, unknown> | undefined;
          if (m.eventField && event && typeof event === 'object') event[m.eventField] = m.value;
          if (event && typeof event === 'object' && Array.isArray(event.values)) event.values[m.valueAt] = m.value;
        }
        const { events, skipped } = classifyTransaction(logs, ctx);
        for (const e of events) expect(e.id.startsWith('polygon:')).toBe(true);
        for (const s of skipped) expect(typeof s.reason).toBe('string');
      }),
      { numRuns: 300 },
    );
  });
});

describe('TransactionAssembler', () => {
  it('groups logs by transaction and emits one when the next begins', () => {
    const a = new Tx(50).transfer(COLLECTION, ALICE, BOB, '1').transfer(COLLECTION, ALICE, BOB, '2');
    const b = new Tx(51).transfer(COLLECTION, BOB, CAROL, '3');
    const assembler = new TransactionAssembler();
    expect(assembler.push(a.logs[0] as EventLog)).toBeUndefined();
    expect(assembler.push(a.logs[1] as EventLog)).toBeUndefined();
    expect(assembler.pending()).toBe(2);
    expect(assembler.push(b.logs[0] as EventLog)).toEqual(a.logs);
    expect(assembler.pending()).toBe(1);
    expect(assembler.flush()).toEqual(b.logs);
    expect(assembler.pending()).toBe(0);
    expect(assembler.flush()).toBeUndefined();
  });

  it('separates the same transaction hash in two blocks (a reorg)', () => {
    const a = new Tx(52, 1, '0x01').transfer(COLLECTION, ALICE, BOB, '1');
    const b = new Tx(52, 1, '0x02').transfer(COLLECTION, ALICE, BOB, '1');
    const assembler = new TransactionAssembler();
    assembler.push(a.logs[0] as EventLog);
    expect(assembler.push(b.logs[0] as EventLog)).toEqual(a.logs);
  });

  it('drops duplicate logs (a reconnect overlap), remembering a bounded number of uids', () => {
    const tx = new Tx(53).transfer(COLLECTION, ZERO, ALICE, '1').transfer(COLLECTION, ZERO, ALICE, '2');
    tx.transfer(COLLECTION, ZERO, ALICE, '3');
    const [l0, l1, l2] = tx.logs as [EventLog, EventLog, EventLog];
    const assembler = new TransactionAssembler({ recentUids: 2 });
    assembler.push(l0);
    assembler.push(l1);
    assembler.push(l1);
    expect(assembler.pending()).toBe(2);
    expect(assembler.duplicates).toBe(1);
    assembler.push(l2);
    assembler.push(l0);
    expect(assembler.flush()).toEqual([l0, l1, l2, l0]);
    const done = new TransactionAssembler();
    for (const log of [l0, l1, l0, l2, l1]) done.push(log);
    const logs = done.flush() ?? [];
    expect(logs).toEqual([l0, l1, l2]);
    expect(classifyTransaction(logs, ctx).events[0]?.tokens).toHaveLength(3);
  });
});
