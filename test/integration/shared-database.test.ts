// The PostgreSQL stores, as several processes use them: each "process" here is its own pool,
// listening connection and lock connection on one real server (see test/helpers/postgres.ts).
import pg from 'pg';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { deliveryId, type NewDelivery } from '../../src/core/deliveries.ts';
import type { RulesChange } from '../../src/core/ports.ts';
import type { ChatSettings } from '../../src/core/settings.ts';
import type { Destination, WatchRule } from '../../src/core/types.ts';
import { ChatClaims } from '../../src/delivery/claims.ts';
import { Dispatcher } from '../../src/delivery/dispatcher.ts';
import {
  chatsOf,
  DELIVERIES_CHANNEL,
  Leadership,
  openSharedDatabase,
  PgCursorStore,
  type SharedDatabase,
} from '../../src/store/pg/index.ts';
import { PgRulesRepository } from '../../src/store/pg/rules.ts';
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.ts';
import { RecordingSink } from '../helpers/recording-sink.ts';

const silent = pino({ level: 'silent' });
const CHAT: Destination = { platform: 'discord', chatId: '4242' };
const OTHER: Destination = { platform: 'discord', chatId: '4343' };
let postgres: TestPostgres;
const opened: SharedDatabase[] = [];

beforeAll(async () => {
  postgres = await startTestPostgres();
}, 120_000);
// Each test's processes end with it: the server takes a hundred connections at most.
afterEach(async () => {
  for (const shared of opened.splice(0)) await shared.close().catch(() => {});
});
afterAll(async () => {
  await postgres?.stop();
});

async function processOn(url: string, onLost: (error: Error) => void = () => {}): Promise<SharedDatabase> {
  const shared = await openSharedDatabase({ url, poolSize: 4 }, silent, onLost);
  opened.push(shared);
  return shared;
}

/** Takes a lease for a process (the ingest of `devnet`, under which it records, by default). */
async function lead(shared: SharedDatabase, space: 'ingest' | 'chat' = 'ingest', key = 'devnet'): Promise<void> {
  expect(await shared.leases.tryLock(space, key)).toBe(true);
}

async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * A process that sends deliveries: its own stores, a dispatcher to `sink` and chat claims that hear
 * the delivery notifications (all of them: the tests record directly, as another process would).
 */
async function deliveringProcess(
  url: string,
  sink: RecordingSink,
  claimOptions: { sweepMs: number; releaseAfterIdleMs?: number },
  dispatcherOptions: { retryDelayMs?: number } = {},
  /** As main.ts does: this process's own notices are not work (it hands its deliveries over itself). */
  ignoreOwnNotices = false,
) {
  const shared = await processOn(url);
  const dispatcher = new Dispatcher({
    journal: shared.deliveries,
    sinks: new Map([['discord', sink]]),
    logger: silent,
    ...dispatcherOptions,
  });
  const claims = new ChatClaims({
    leases: shared.leases,
    log: shared.deliveries,
    dispatcher,
    logger: silent,
    ...claimOptions,
  });
  await shared.db.listen(DELIVERIES_CHANNEL, (payload) =>
    claims.noticed(chatsOf(payload, ignoreOwnNotices ? shared.deliveries.origin : undefined)),
  );
  return { shared, dispatcher, claims };
}

function rule(chat: Destination, collection: string): Omit<WatchRule, 'id'> {
  return {
    destination: chat,
    network: 'devnet',
    collection,
    collectionName: 'Moon Cats',
    kinds: ['sale'],
    paused: false,
    createdBy: 'discord:1',
    createdAt: '2026-11-25T00:00:00.000Z',
  };
}

/** Every rule, page by page, and the size of each page. */
async function everyRule(rules: PgRulesRepository): Promise<{ rules: WatchRule[]; pages: number[] }> {
  const all: WatchRule[] = [];
  const pages: number[] = [];
  for await (const page of rules.allRules()) {
    all.push(...page);
    pages.push(page.length);
  }
  return { rules: all, pages };
}

/** What a rules listener heard: each changed rule's id and whether it is paused (`gone`: removed). */
function told(change: RulesChange): string | Array<[string, boolean | 'gone']> {
  if (change.all) return 'all';
  return change.rules.map(({ id, rule }) => [id, rule ? rule.paused : 'gone']);
}

function delivery(n: number, destination: Destination = CHAT): NewDelivery {
  const txn = `0x${n.toString(16).padStart(64, '0')}`;
  return {
    eventId: `devnet:${txn}:0xc0:sale@0xb${n}`,
    destination,
    network: 'devnet',
    txnHash: txn,
    blockNumber: n,
    kind: 'sale',
    usd: n,
    payload: { title: `sale ${n}` },
  };
}

describe('rules and settings shared by several processes', () => {
  it('GIVEN two processes on one database WHEN one changes rules, a chat and a button THEN the other sees each change and hears of it; a restart reads them all back', async () => {
    const url = await postgres.freshDatabase();
    const a = await processOn(url);
    const b = await processOn(url);
    const heard: string[] = [];
    b.rules.onRulesChanged(() => heard.push('rules'));
    b.rules.onChatsChanged((chatKey) => heard.push(`chat ${chatKey}`));

    const first = await a.rules.addRule(rule(CHAT, '0x00000000000000000000000000000000000000c1'), 50);
    const second = await a.rules.addRule(rule(CHAT, '0x00000000000000000000000000000000000000c2'), 50);
    expect([first?.id, second?.id]).toEqual(['r1', 'r2']);
    const ofChat = await b.rules.rulesOf('discord:4242');
    expect(ofChat.map((r) => r.id)).toEqual(['r1', 'r2']);
    // The rules of one chat share one destination object (matching groups by it).
    expect(ofChat[0]?.destination).toBe(ofChat[1]?.destination);

    await a.rules.updateRule('r1', (r) => ({ ...r, paused: true }));
    await a.rules.updateRule('r2', () => null);
    expect((await b.rules.rulesOf('discord:4242')).map((r) => [r.id, r.paused])).toEqual([['r1', true]]);

    await a.rules.updateChat('discord:4242', (settings) => {
      settings.network = 'devnet';
      settings.aliases.mc = { alias: 'mc', network: 'devnet', address: '0x00000000000000000000000000000000000000c1' };
    });
    await eventually(() => b.rules.chat('discord:4242').aliases.mc !== undefined);
    expect(b.rules.chat('discord:4242').network).toBe('devnet');
    // Keys from outside stay plain keys.
    expect(b.rules.chat('discord:4242').aliases.constructor).toBeUndefined();

    await a.rules.saveButton('h1', 'watch add moon cats sales', new Date());
    await eventually(() => b.rules.button('h1')?.action === 'watch add moon cats sales');
    expect(heard).toContain('rules');
    expect(heard).toContain('chat discord:4242');

    // A rule added by the other process gets the next number: ids are never reused.
    const third = await b.rules.addRule(rule(OTHER, '0x00000000000000000000000000000000000000c3'), 50);
    expect(third?.id).toBe('r3');
    const restarted = await processOn(url);
    expect((await everyRule(restarted.rules)).rules.map((r) => [r.id, r.paused])).toEqual([
      ['r1', true],
      ['r3', false],
    ]);
    expect(restarted.rules.chat('discord:4242').aliases.mc?.address).toBe('0x00000000000000000000000000000000000000c1');
  });

  it('GIVEN more rules than one page of reading THEN allRules reads them all, page by page, in creation order, each chat sharing one destination within a page', async () => {
    const url = await postgres.freshDatabase();
    const seed = await processOn(url);
    // 4,500 rules in 900 chats, written as /watch add would store them.
    await seed.db.pool.query(
      `INSERT INTO rules (id, chat_key, rule)
       SELECT 'r' || n, 'discord:' || (n % 900),
              jsonb_build_object('id', 'r' || n, 'destination', jsonb_build_object('platform', 'discord', 'chatId', (n % 900)::text),
                'network', 'devnet', 'collection', '0x00000000000000000000000000000000000000c1', 'collectionName', 'Moon Cats',
                'kinds', jsonb_build_array('sale'), 'paused', false, 'createdBy', 'discord:1',
                'createdAt', '2026-11-25T00:00:00.000Z')
       FROM generate_series(1, 4500) AS n`,
    );
    const reader = await processOn(url);
    const { rules, pages } = await everyRule(reader.rules);
    expect(pages).toEqual([2_000, 2_000, 500]);
    expect(rules.slice(0, 3).map((r) => r.id)).toEqual(['r1', 'r2', 'r3']);
    expect(rules.at(-1)?.id).toBe('r4500');
    // Chat 7's rules (r7, r907, r1807 | r2707, r3607) are on two pages: equal destinations, one object a page.
    const ofChat = rules.filter((r) => r.destination.chatId === '7');
    expect(ofChat).toHaveLength(5);
    expect(new Set(ofChat.map((r) => r.destination)).size).toBe(2);
    expect(ofChat[0]?.destination).toBe(ofChat[1]?.destination);
    expect(await reader.rules.rulesOf('discord:7')).toEqual(ofChat);
  });

  it('GIVEN rules of two chats added in turn THEN rulesOf gives one chat its own, in creation order, sharing one destination', async () => {
    const url = await postgres.freshDatabase();
    const a = await processOn(url);
    for (const [n, chat] of [CHAT, OTHER, CHAT, OTHER, CHAT].entries()) {
      await a.rules.addRule(rule(chat, `0x00000000000000000000000000000000000000c${n}`), 50);
    }
    const ofChat = await a.rules.rulesOf('discord:4242');
    expect(ofChat.map((r) => [r.id, r.collection.at(-1)])).toEqual([
      ['r1', '0'],
      ['r3', '2'],
      ['r5', '4'],
    ]);
    expect(new Set(ofChat.map((r) => r.destination)).size).toBe(1);
    expect(ofChat[0]?.destination).toEqual(CHAT);
    expect((await a.rules.rulesOf('discord:4343')).map((r) => r.id)).toEqual(['r2', 'r4']);
    expect(await a.rules.rulesOf('telegram:4242')).toEqual([]);
  });

  it('GIVEN a page size THEN allRules ends with the last full page, a chat sharing one destination within a page', async () => {
    const url = await postgres.freshDatabase();
    const a = await processOn(url);
    for (const [n, chat] of [CHAT, OTHER, CHAT, OTHER].entries()) {
      await a.rules.addRule(rule(chat, `0x00000000000000000000000000000000000000c${n}`), 50);
    }
    const paged = await PgRulesRepository.open(a.db, { logger: silent, rulesPerPage: 2 });
    const { rules, pages } = await everyRule(paged);
    expect(pages).toEqual([2, 2]);
    expect(rules.map((r) => r.id)).toEqual(['r1', 'r2', 'r3', 'r4']);
    expect(rules[0]?.destination).toEqual(rules[2]?.destination);
    expect(rules[1]?.destination).toEqual(rules[3]?.destination);
    expect(rules[0]?.destination).not.toEqual(rules[1]?.destination);
    const onePage = await everyRule(await PgRulesRepository.open(a.db, { logger: silent, rulesPerPage: 4 }));
    expect(onePage.pages).toEqual([4]);
    expect(onePage.rules[0]?.destination).toBe(onePage.rules[2]?.destination);
    await a.rules.addRule(rule(CHAT, '0x00000000000000000000000000000000000000c4'), 50);
    expect((await everyRule(paged)).pages).toEqual([2, 2, 1]);
  });

  it('GIVEN a rule changed by one process THEN the other hears it with the rule as it is now, and a removal without it', async () => {
    const url = await postgres.freshDatabase();
    const a = await processOn(url);
    const b = await processOn(url);
    const ownChanges: RulesChange[] = [];
    const changes: RulesChange[] = [];
    a.rules.onRulesChanged((change) => ownChanges.push(change));
    b.rules.onRulesChanged((change) => changes.push(change));

    const added = await a.rules.addRule(rule(CHAT, '0x00000000000000000000000000000000000000c1'), 50);
    // This process's listeners hear of its change, with the stored rule, before the change resolves.
    expect(ownChanges).toEqual([{ rules: [{ id: 'r1', rule: added }] }]);
    await eventually(() => changes.length === 1);
    expect(changes[0]).toEqual({ rules: [{ id: 'r1', rule: added }] });

    let calls = 0;
    const changed = await a.rules.updateRule('r1', (r) => {
      calls++;
      return { ...r, paused: true, mentionRole: 'traders' };
    });
    expect([changed, calls]).toEqual([true, 1]);
    await eventually(() => changes.length === 2);
    const paused = changes[1] as { rules: ReadonlyArray<{ id: string; rule: WatchRule | undefined }> };
    expect(paused.rules[0]?.rule).toMatchObject({ id: 'r1', paused: true, mentionRole: 'traders', destination: CHAT });

    await a.rules.updateRule('r1', () => null);
    await eventually(() => changes.length === 3);
    expect(changes.map(told)).toEqual([[['r1', false]], [['r1', true]], [['r1', 'gone']]]);
    expect(ownChanges.map(told)).toEqual(changes.map(told));

    // Settings changes, even of too many chats to name in one notification, are not rule changes.
    const chatKeys = Array.from({ length: 150 }, (_, n) => `discord:${n}`);
    const heardChats = new Set<string>();
    b.rules.onChatsChanged((chatKey) => heardChats.add(chatKey));
    const toDevnet = (settings: ChatSettings) => {
      settings.network = 'devnet';
    };
    await a.rules.updateChats(chatKeys.map((chatKey) => [chatKey, toDevnet] as const));
    await eventually(() => heardChats.size === 150);
    expect(b.rules.chat('discord:149').network).toBe('devnet');
    expect(changes).toHaveLength(3);
    expect(ownChanges).toHaveLength(3);
  });

  it('GIVEN two processes adding to one chat at once THEN its limit holds exactly', async () => {
    const url = await postgres.freshDatabase();
    const a = await processOn(url);
    const b = await processOn(url);
    const tries = Array.from({ length: 16 }, (_, n) =>
      (n % 2 ? a : b).rules.addRule(rule(CHAT, `0x${n.toString(16).padStart(40, '0')}`), 5),
    );
    const added = (await Promise.all(tries)).filter((r) => r !== undefined);
    expect(added).toHaveLength(5);
    const stored = await b.rules.rulesOf('discord:4242');
    expect(stored.map((r) => r.id).sort()).toEqual(added.map((r) => r.id).sort());
    // Refused tries take no number.
    expect(stored.map((r) => r.id).sort()).toEqual(['r1', 'r2', 'r3', 'r4', 'r5']);
    // Another chat has a limit of its own.
    expect(await a.rules.addRule(rule(OTHER, '0x00000000000000000000000000000000000000c1'), 5)).toMatchObject({
      id: 'r6',
    });
  });

  it('GIVEN an unknown rule id THEN updateRule is false, without calling the change or telling anyone', async () => {
    const url = await postgres.freshDatabase();
    const a = await processOn(url);
    const heard: RulesChange[] = [];
    a.rules.onRulesChanged((change) => heard.push(change));
    let calls = 0;
    const changed = await a.rules.updateRule('r404', (r) => {
      calls++;
      return r;
    });
    expect([changed, calls, heard, a.rules.writeStats.writes]).toEqual([false, 0, [], 0]);
  });

  it('GIVEN an invalid rule row THEN reading skips it and names the rule id and the field once, and changing it fails with them', async () => {
    const url = await postgres.freshDatabase();
    const warnings: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => warnings.push(line) });
    const a = await openSharedDatabase({ url, poolSize: 4 }, logger, () => {});
    opened.push(a);
    await a.rules.addRule(rule(CHAT, '0x00000000000000000000000000000000000000c1'), 50);
    await a.rules.addRule(rule(CHAT, '0x00000000000000000000000000000000000000c2'), 50);
    await a.db.pool.query(`UPDATE rules SET rule = jsonb_set(rule, '{kinds}', '["sales"]') WHERE id = 'r1'`);
    expect((await a.rules.rulesOf('discord:4242')).map((r) => r.id)).toEqual(['r2']);
    expect((await everyRule(a.rules)).rules.map((r) => r.id)).toEqual(['r2']);
    expect(warnings).toHaveLength(1);
    expect(JSON.parse(warnings[0] ?? '{}')).toMatchObject({
      table: 'rules',
      key: 'r1',
      problems: expect.stringMatching(/^kinds\[0\]: expected one of/),
    });
    await expect(a.rules.updateRule('r1', (r) => r)).rejects.toMatchObject({
      name: 'StoreFileError',
      message: expect.stringMatching(/holds an invalid rule r1 \(kinds\[0\]: expected one of/),
    });
  });

  it('GIVEN a rule or chat settings with an address that is not canonical WHEN stored THEN nothing is written and the change names the field', async () => {
    const url = await postgres.freshDatabase();
    const a = await processOn(url);
    await expect(a.rules.addRule(rule(CHAT, `0x${'11'.repeat(20)} `), 50)).rejects.toMatchObject({
      name: 'InvalidChangeError',
      message: expect.stringContaining('collection: expected an address'),
    });
    await expect(
      a.rules.updateChat('discord:4242', (s) => {
        s.collection = { network: 'devnet', address: `0x${'AB'.repeat(20)}` };
      }),
    ).rejects.toMatchObject({ name: 'InvalidChangeError' });
    const rows = await a.db.pool.query(
      'SELECT (SELECT count(*) FROM rules) AS rules, (SELECT count(*) FROM chats) AS chats',
    );
    expect(rows.rows[0]).toEqual({ rules: '0', chats: '0' });
    expect(a.rules.chat('discord:4242').collection).toBeUndefined();
  });

  it('GIVEN a chat settings row that does not read WHEN a process opens THEN it starts with the other chats and names the bad one', async () => {
    const url = await postgres.freshDatabase();
    const a = await processOn(url);
    await a.rules.updateChat('discord:4242', (s) => {
      s.network = 'devnet';
    });
    await a.rules.updateChat('discord:4343', (s) => {
      s.network = 'devnet';
    });
    await a.db.pool.query(`UPDATE chats SET settings = '{"aliases": 5}' WHERE chat_key = 'discord:4343'`);
    const warnings: string[] = [];
    const b = await openSharedDatabase(
      { url, poolSize: 2 },
      pino({ level: 'warn' }, { write: (line: string) => warnings.push(line) }),
      () => {},
    );
    opened.push(b);
    expect(b.rules.chat('discord:4242').network).toBe('devnet');
    expect(b.rules.chat('discord:4343').network).toBeUndefined();
    expect(warnings.map((w) => JSON.parse(w))).toEqual([
      expect.objectContaining({ table: 'chats', key: 'discord:4343', problems: expect.stringContaining('aliases') }),
    ]);
  });

  it('GIVEN the database goes away WHEN a rule is added THEN the change is refused with a clear error and nothing is stored', async () => {
    const url = await postgres.freshDatabase();
    const a = await processOn(url);
    await a.db.pool.query('ALTER TABLE rules RENAME TO rules_gone');
    await expect(a.rules.addRule(rule(CHAT, '0x00000000000000000000000000000000000000c1'), 50)).rejects.toThrow(
      /could not be saved/,
    );
    await a.db.pool.query('ALTER TABLE rules_gone RENAME TO rules');
    expect(await a.rules.rulesOf('discord:4242')).toEqual([]);
    expect(a.rules.writeStats).toEqual({ writes: 0, pending: 0 });
    expect(`${a.db.where}`).not.toMatch(/test-/);
  });
});

describe('the delivery log shared by several processes', () => {
  it('GIVEN one event recorded by two processes THEN it is one delivery, and the protocol, kinds and order hold', async () => {
    const url = await postgres.freshDatabase();
    const a = await processOn(url);
    const b = await processOn(url);
    const notices: string[][] = [];
    await b.db.listen(DELIVERIES_CHANNEL, (payload) => notices.push(chatsOf(payload)));

    // Two ingest leaders in turn record the same event.
    await lead(a);
    const [fresh] = await a.deliveries.record([delivery(1)]);
    await a.leases.unlock('ingest', 'devnet');
    await lead(b);
    const again = await b.deliveries.record([delivery(1), delivery(2)]);
    expect(fresh?.id).toBe(deliveryId(delivery(1).eventId, CHAT));
    expect(again.map((r) => r.blockNumber)).toEqual([2]);
    await eventually(() => notices.length >= 2);
    expect(notices.flat()).toEqual(['discord:4242', 'discord:4242']);

    const open = await b.deliveries.openFor('discord:4242');
    expect(open.map((o) => o.record.blockNumber)).toEqual([1, 2]);
    const id = fresh?.id as string;
    await lead(b, 'chat', 'discord:4242');
    await b.deliveries.markSending(id, id);
    await b.deliveries.markSent(id, 'm1');
    await expect(b.deliveries.markSent(id, 'm2')).rejects.toThrow(/is not being sent/);
    await b.leases.unlock('ingest', 'devnet');
    await lead(a);
    const { edits } = await a.deliveries.markReorged('devnet', delivery(1).txnHash);
    expect(edits.map((r) => [r.id, r.state, r.reorged])).toEqual([[id, 'sent', true]]);
    // The unsent one of a reorganised transaction is dropped, never sent.
    const dropped = await a.deliveries.markReorged('devnet', delivery(2).txnHash);
    expect(dropped.edits).toEqual([]);
    expect((await b.deliveries.openFor('discord:4242')).map((o) => [o.record.blockNumber, o.record.reorged])).toEqual([
      [1, true],
    ]);
    await b.deliveries.markEdited(id);
    expect(await b.deliveries.openFor('discord:4242')).toEqual([]);

    const since = new Date(Date.now() - 60_000);
    const summary = await a.deliveries.deliveredTo(CHAT, since);
    expect(summary.map((r) => [r.kind, r.usd, r.state])).toEqual([
      ['sale', 1, 'sent'],
      ['sale', 2, 'dropped'],
    ]);
    expect((await a.deliveries.sentTogether(CHAT, 'm1')).map((r) => r.id)).toEqual([id]);
  });

  it('GIVEN the log cannot be written THEN record rejects with a journal write error the pipeline keeps alerts for', async () => {
    const url = await postgres.freshDatabase();
    const a = await processOn(url);
    await lead(a);
    await a.db.pool.query('ALTER TABLE deliveries RENAME TO deliveries_gone');
    await expect(a.deliveries.record([delivery(7)])).rejects.toMatchObject({ name: 'JournalWriteError' });
    expect(a.deliveries.writeFailure()?.failures).toBe(1);
    await a.db.pool.query('ALTER TABLE deliveries_gone RENAME TO deliveries');
    expect(await a.deliveries.record([delivery(7)])).toHaveLength(1);
    expect(a.deliveries.writeFailure()).toBeUndefined();
  });
});

describe('claims and leadership', () => {
  it('GIVEN a process sending a chat dies THEN another takes the chat and sends the rest, in order, each once', async () => {
    const url = await postgres.freshDatabase();
    const sink = new RecordingSink('discord', 1);
    const first = await deliveringProcess(url, sink, { sweepMs: 100 }, { retryDelayMs: 10 });
    const second = await deliveringProcess(url, sink, { sweepMs: 100 }, { retryDelayMs: 10 });
    // The ingest leader records; the holder of the chat's claim sends.
    const ingest = await processOn(url);
    await lead(ingest);
    await first.claims.start();
    await second.claims.start();
    await ingest.deliveries.record([delivery(1), delivery(2)]);
    await sink.until(() => sink.sent.length === 2);
    // Exactly one of them holds the chat.
    const [holder, other] = first.claims.held().length ? [first, second] : [second, first];
    expect(holder.claims.held()).toEqual(['discord:4242']);
    expect(other.claims.held()).toEqual([]);

    await ingest.deliveries.record([delivery(3)]);
    await sink.until(() => sink.sent.length === 3);
    // The holder "dies" mid-send: a delivery is marked sending (maybe posted), and its connections end.
    holder.claims.stop();
    await holder.dispatcher.stop();
    await holder.shared.close();
    opened.splice(opened.indexOf(holder.shared), 1);
    // As the holder does for a chat it holds and is idle for: recorded as sending, before the send.
    await ingest.deliveries.record([{ ...delivery(4), sendingAlone: true }]);
    await ingest.deliveries.record([delivery(5)]);

    await sink.until(() => sink.sent.length === 5, 10_000);
    expect(other.claims.held()).toEqual(['discord:4242']);
    expect(sink.sent.map((m) => m.replies[0]?.title)).toEqual(['sale 1', 'sale 2', 'sale 3', 'sale 4', 'sale 5']);
    expect(new Set(sink.sent.map((m) => m.key)).size).toBe(5);
    await eventually(async () => (await other.shared.deliveries.openFor('discord:4242')).length === 0);
    other.claims.stop();
    await other.dispatcher.stop();
  });

  it('GIVEN a chat this process holds and is idle for WHEN it records a lone alert THEN it is recorded as sending and sent with no read back and no second write before the send', async () => {
    const url = await postgres.freshDatabase();
    const sink = new RecordingSink('discord', 1);
    const { shared, dispatcher, claims } = await deliveringProcess(url, sink, { sweepMs: 60_000 }, {}, true);
    await lead(shared);
    await claims.start();
    // The first delivery takes the claim (read from the database, as any chat's first work is).
    claims.enqueue(await shared.deliveries.record([delivery(1)]));
    await sink.until(() => sink.sent.length === 1);
    await dispatcher.drained();
    expect(claims.held()).toEqual(['discord:4242']);

    // The pipeline's way: ask, record as it says, hand over what was recorded.
    const alone = claims.sendsAlone(CHAT, 1);
    expect(alone).toBe(true);
    // Reads of the chat's deliveries are counted on their way to the database (and made as ever).
    let reads = 0;
    const openFor = shared.deliveries.openFor.bind(shared.deliveries);
    shared.deliveries.openFor = (...args) => {
      reads++;
      return openFor(...args);
    };
    const [second] = await shared.deliveries.record([{ ...delivery(2), sendingAlone: alone }]);
    expect(second).toMatchObject({ state: 'sending', attempts: 1, sendKey: second?.id });
    claims.enqueue(second ? [second] : []);
    await sink.until(() => sink.sent.length === 2);
    await dispatcher.drained();
    expect(sink.sent.map((m) => [m.replies[0]?.title, m.key])).toEqual([
      ['sale 1', expect.any(String)],
      ['sale 2', second?.id],
    ]);
    // No read of the chat before the send, and no "sending" write: a second would have made it attempt 2.
    expect(reads).toBe(0);
    const { rows } = await shared.db.pool.query<{ state: string; attempts: number }>(
      'SELECT state, attempts FROM deliveries WHERE id = $1',
      [second?.id],
    );
    expect(rows).toEqual([{ state: 'sent', attempts: 1 }]);

    // Two at once would be merged on a platform that merges: they are recorded as pending.
    const merging = new RecordingSink('discord', 10);
    const other = await deliveringProcess(await postgres.freshDatabase(), merging, { sweepMs: 60_000 }, {}, true);
    await lead(other.shared);
    await other.claims.start();
    other.claims.enqueue(await other.shared.deliveries.record([delivery(3)]));
    await merging.until(() => merging.sent.length === 1);
    await other.dispatcher.drained();
    expect(other.claims.sendsAlone(CHAT, 2)).toBe(false);
    expect(other.claims.sendsAlone({ platform: 'discord', chatId: 'not-held' }, 1)).toBe(false);
    claims.stop();
    other.claims.stop();
    await dispatcher.stop();
    await other.dispatcher.stop();
  });

  it('GIVEN a delivery that commits after a later one was sent THEN the claim still sends it, within a sweep, once', async () => {
    const url = await postgres.freshDatabase();
    const sink = new RecordingSink('discord', 1);
    const { shared, dispatcher, claims } = await deliveringProcess(url, sink, { sweepMs: 100 });
    await lead(shared);
    await claims.start();
    // Another process's recording takes its sequence number first but commits last.
    const slow = new pg.Client({ connectionString: url });
    await slow.connect();
    try {
      await slow.query('BEGIN');
      await slow.query(
        `INSERT INTO deliveries (id, event_id, chat_key, network, txn_hash, block_number, state, created_at, updated_at, payload)
         VALUES ('slow>discord:4242', 'slow', 'discord:4242', 'devnet', '0xslow', 1, 'pending', now(), now(), '{"title":"slow"}')`,
      );
      await shared.deliveries.record([delivery(2)]);
      await sink.until(() => sink.sent.length === 1);
      await slow.query(`SELECT pg_notify('floorwatch_deliveries', '{"chats":["discord:4242"],"origin":"other"}')`);
      await slow.query('COMMIT');
    } finally {
      await slow.end();
    }
    await sink.until(() => sink.sent.length === 2, 5_000);
    await shared.deliveries.record([delivery(3)]);
    await sink.until(() => sink.sent.length === 3, 5_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(sink.sent.map((m) => m.replies[0]?.title)).toEqual(['sale 2', 'slow', 'sale 3']);
    claims.stop();
    await dispatcher.stop();
  });

  it('GIVEN a chat gone quiet THEN its claim is given back, and another process can take the chat', async () => {
    const url = await postgres.freshDatabase();
    const sink = new RecordingSink('discord', 1);
    const start = async () => {
      const started = await deliveringProcess(url, sink, { sweepMs: 50, releaseAfterIdleMs: 200 });
      await started.claims.start();
      return started;
    };
    const a = await start();
    await lead(a.shared);
    await a.shared.deliveries.record([delivery(1)]);
    await sink.until(() => sink.sent.length === 1);
    expect(a.claims.held()).toEqual(['discord:4242']);
    // Quiet: the sweep gives the claim back.
    const deadline = Date.now() + 5_000;
    while (a.claims.held().length > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(a.claims.held()).toEqual([]);
    a.claims.stop();
    const b = await start();
    await a.shared.deliveries.record([delivery(2)]);
    await sink.until(() => sink.sent.length === 2);
    expect(b.claims.held()).toEqual(['discord:4242']);
    expect(sink.sent.map((m) => m.replies[0]?.title)).toEqual(['sale 1', 'sale 2']);
    b.claims.stop();
    await Promise.all([a.dispatcher.stop(), b.dispatcher.stop()]);
  });

  it('GIVEN the ingest leader dies THEN another process leads the network within seconds', async () => {
    const url = await postgres.freshDatabase();
    const acquired: string[] = [];
    const lead = async (name: string) => {
      const shared = await processOn(url);
      const leadership = new Leadership({
        leases: shared.leases,
        space: 'ingest',
        keys: () => ['devnet'],
        onAcquired: (key) => acquired.push(`${name}:${key}`),
        logger: silent,
        everyMs: 200,
      });
      await leadership.start();
      return { shared, leadership };
    };
    const a = await lead('a');
    const b = await lead('b');
    const c = await lead('c');
    expect(acquired).toEqual(['a:devnet']);
    expect([a.leadership.leads('devnet'), b.leadership.leads('devnet'), c.leadership.leads('devnet')]).toEqual([
      true,
      false,
      false,
    ]);
    const died = Date.now();
    a.leadership.stop();
    await a.shared.leases.close();
    await eventually(() => acquired.length === 2, 10_000);
    expect(Date.now() - died).toBeLessThan(10_000);
    expect(acquired[1]).toMatch(/^(b|c):devnet$/);
    expect(b.leadership.leads('devnet') !== c.leadership.leads('devnet')).toBe(true);
    for (const p of [b, c]) p.leadership.stop();
  });

  it('GIVEN cursors written by two leaders in turn THEN they only move forward', async () => {
    const url = await postgres.freshDatabase();
    const a = await processOn(url);
    const b = await processOn(url);
    const first = new PgCursorStore(a.db, { writeDelayMs: 10 });
    const second = new PgCursorStore(b.db, { writeDelayMs: 10 });
    expect(await first.get('devnet')).toBeUndefined();
    await first.advance('devnet', 120);
    await first.flush();
    await second.advance('devnet', 100);
    await second.flush();
    expect(await second.get('devnet')).toBe(120);
    await second.advance('devnet', 130);
    await second.flush();
    expect(await first.get('devnet')).toBe(130);
  });
});

describe('configuration', () => {
  it('GIVEN a database address that is not PostgreSQL THEN the bot refuses it, without echoing its password', () => {
    let error: unknown;
    try {
      loadConfig({ FLOORWATCH_DATABASE_URL: 'mysql://bot:hunter2secret@db/floorwatch' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect(String((error as Error).message)).toMatch(/FLOORWATCH_DATABASE_URL must be a PostgreSQL address/);
    expect(String((error as Error).message)).not.toContain('hunter2secret');
  });
});
