import { execFile, execFileSync } from 'node:child_process';
import { mkdtemp, open, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { NewDelivery } from '../../src/core/deliveries.ts';
import type { Destination } from '../../src/core/types.ts';
import { Dispatcher } from '../../src/delivery/dispatcher.ts';
import type { DevnetCollectionInfo } from '../../src/devnet/index.ts';
import { type HealthServer, startHealthServer } from '../../src/health/http.ts';
import { BotMetrics } from '../../src/health/metrics.ts';
import { checkReadiness, type ReadinessReport } from '../../src/health/readiness.ts';
import { DeliveryJournal } from '../../src/store/files/journal/journal.ts';
import { type AlertHarness, startAlertHarness } from '../helpers/alert-harness.ts';
import { RecordingSink } from '../helpers/recording-sink.ts';

/*
 * Issue 13 (4): a full disk under the delivery journal. Alerts whose journal write fails wait in
 * memory, in order, and go out once the disk takes writes again, each once; beyond the limit they are
 * dropped and counted; /readyz, /metrics and /status say so meanwhile, and the logs say it once.
 *
 * The disk fills up for real. Where this process may mount (root), the journal lives on a tiny
 * tmpfs that a filler file fills up (ENOSPC, for the readiness probe too). Elsewhere, the file size
 * limit of this process (RLIMIT_FSIZE, set with prlimit, no privilege needed) is lowered to the
 * journal's size (EFBIG). The dispatcher tests use the size limit everywhere: unlike a full tmpfs,
 * whose last page takes a few more bytes, it refuses every byte.
 */

const run = promisify(execFile);
const CHAT: Destination = { platform: 'console', chatId: 'terminal' };
const LIMIT = 5;

/** The soft file size limit of this process: lowered to refuse growth, restored to what it was. */
class FileSizeLimit {
  readonly #original: string;
  #lowered = false;

  private constructor(original: string) {
    this.#original = original;
  }

  static read(): FileSizeLimit {
    const soft = execFileSync('prlimit', [`--pid=${process.pid}`, '--fsize', '--output=SOFT', '--noheadings', '--raw'])
      .toString()
      .trim();
    return new FileSizeLimit(soft);
  }

  /** No file of this process may grow past `bytes` any more (EFBIG). */
  lower(bytes: number): void {
    execFileSync('prlimit', [`--pid=${process.pid}`, `--fsize=${bytes}:`]);
    this.#lowered = true;
  }

  restore(): void {
    if (!this.#lowered) return;
    execFileSync('prlimit', [`--pid=${process.pid}`, `--fsize=${this.#original}:`]);
    this.#lowered = false;
  }
}

/** A directory whose disk can be filled up and freed again. */
interface Disk {
  dir: string;
  /** The error the journal gets while it is full. */
  code: 'ENOSPC' | 'EFBIG';
  /** Fills it up; `journalFile` is the file that must not grow. */
  fill(journalFile: string): Promise<void>;
  free(): Promise<void>;
  dispose(): Promise<void>;
}

async function tmpfsDisk(dir: string): Promise<Disk | undefined> {
  try {
    await run('mount', ['-t', 'tmpfs', '-o', 'size=1m,mode=0700', 'tmpfs', dir]);
  } catch {
    return undefined;
  }
  const filler = join(dir, 'filler');
  return {
    dir,
    code: 'ENOSPC',
    async fill() {
      const handle = await open(filler, 'a');
      try {
        const chunk = Buffer.alloc(4096, 0x78);
        for (;;) await handle.write(chunk);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
      } finally {
        await handle.close();
      }
    },
    async free() {
      await rm(filler, { force: true });
    },
    async dispose() {
      await run('umount', [dir]).catch(() => run('umount', ['-l', dir]));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

function sizeLimitDisk(dir: string): Disk {
  const limit = FileSizeLimit.read();
  return {
    dir,
    code: 'EFBIG',
    async fill(journalFile) {
      limit.lower((await stat(journalFile)).size);
    },
    async free() {
      limit.restore();
    },
    async dispose() {
      limit.restore();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function fillableDisk(): Promise<Disk> {
  const dir = await mkdtemp(join(tmpdir(), 'floorwatch-full-disk-'));
  return (await tmpfsDisk(dir)) ?? sizeLimitDisk(dir);
}

async function until<T>(probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('GIVEN alerts while the disk under the delivery journal is full', () => {
  let disk: Disk;
  let h: AlertHarness;
  let http: HealthServer;
  let base: string;
  let moonCats: DevnetCollectionInfo;
  const logs: Array<{ level: number; msg: string; [key: string]: unknown }> = [];
  const journalFile = () => join(disk.dir, 'deliveries.jsonl');

  beforeAll(async () => {
    disk = await fillableDisk();
    const logger = pino(
      { level: 'info' },
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          logs.push(JSON.parse(chunk.toString()));
          done();
        },
      }),
    );
    h = await startAlertHarness(
      { blockIntervalMs: 0 },
      { journalDir: disk.dir, logger, journalRetry: { maxDeliveries: LIMIT, minDelayMs: 50, maxDelayMs: 200 } },
    );
    const found = h.devnet.collections.devnet?.find((c) => c.name === 'Moon Cats');
    if (!found) throw new Error('no Moon Cats');
    moonCats = found;
    // Wired as the bot wires them (src/main.ts).
    const metrics = new BotMetrics();
    metrics.watch({
      streams: () => h.alerts.status().streams,
      counters: () => h.alerts.status().counters,
      queueDepth: () => h.dispatcher.depth(),
      journal: () => h.journal.counts(),
      backlog: () => h.alerts.status().backlog,
      isCommand: () => true,
    });
    http = await startHealthServer({
      host: '127.0.0.1',
      port: 0,
      registry: metrics.registry,
      logger: pino({ level: 'silent' }),
      readiness: () =>
        checkReadiness({
          watchedNetworks: () => h.store.rules.filter((r) => !r.paused).map((r) => r.network),
          streams: () => h.alerts.status().streams,
          chats: () => [{ platform: 'console', ready: () => true }],
          dataDir: disk.dir,
          journal: () => h.alerts.status().backlog,
        }),
    });
    base = `http://${http.address.host}:${http.address.port}`;
    expect((await h.run(`/watch add ${moonCats.address} sale`)).title).toBe('Watching');
    await h.planned();
  }, 60_000);

  afterAll(async () => {
    await disk?.free();
    await http?.close();
    await h?.close();
    await disk?.dispose();
  });

  afterEach(async () => {
    await disk.free();
  });

  async function readyz(): Promise<{ status: number; report: ReadinessReport }> {
    const response = await fetch(`${base}/readyz`);
    return { status: response.status, report: (await response.json()) as ReadinessReport };
  }

  async function metric(series: string): Promise<number | undefined> {
    const text = await (await fetch(`${base}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(`${series} `));
    return line === undefined ? undefined : Number(line.slice(series.length + 1));
  }

  /** Mines a block with one sale of Moon Cats; resolves once the pipeline recorded or kept its alert. */
  async function mineSale(): Promise<string> {
    const matched = h.alerts.status().counters.matched;
    const mined = await h.devnet.mine('devnet', [{ kind: 'sale', collection: moonCats.address }]);
    const hash = mined.txnHashes[0];
    if (!hash) throw new Error('no sale mined');
    await until(() => (h.alerts.status().counters.matched > matched ? true : undefined));
    await h.alerts.settled();
    return hash;
  }

  /** Fills the disk, then mines sales until the journal refuses one (a full tmpfs takes a few more bytes). */
  async function fillUntilRefused(): Promise<string[]> {
    await h.dispatcher.drained();
    await disk.fill(journalFile());
    const mined: string[] = [];
    while (h.alerts.status().backlog.queued === 0) {
      if (mined.length === 12) throw new Error('the journal took every alert on a full disk');
      mined.push(await mineSale());
    }
    return mined;
  }

  /** The transactions of the alerts the chat got, in the order it got them (merged messages in order). */
  function delivered(): string[] {
    return h.console.sent.flatMap((m) => h.journal.byMessage(CHAT, m.messageId).map((r) => r.txnHash));
  }

  const logged = (msg: string) => logs.filter((l) => l.msg === msg);
  const OUTAGE = 'cannot write the delivery journal: new alerts are kept in memory and written again with back-off';
  const RECOVERED = 'the delivery journal accepts writes again: the alerts kept in memory are recorded';

  it('WHEN sales are mined THEN they wait in memory, /readyz, /metrics and /status say so, and once the disk has room each alert arrives once, in order', async () => {
    const before = await mineSale();
    await h.console.until(() => delivered().includes(before));
    await h.dispatcher.drained();
    expect(await readyz()).toMatchObject({ status: 200, report: { ready: true, journal: { writable: true } } });

    const outage = await fillUntilRefused();
    const kept = [outage.at(-1) as string];
    for (let n = 0; n < 3; n++) kept.push(await mineSale());
    outage.push(...kept.slice(1));
    const backlog = h.alerts.status().backlog;
    expect(backlog).toMatchObject({ queued: 4, reorgs: 0, failure: { code: disk.code } });
    // Written again every 50-200 ms, refused every time: none of them is recorded or sent.
    await pause(400);
    for (const hash of kept) expect(h.journal.byTransaction('devnet', hash)).toEqual([]);
    expect(delivered().filter((hash) => kept.includes(hash))).toEqual([]);
    expect(h.alerts.status().counters.dropped).toBe(0);

    const failing = await readyz();
    expect(failing.status).toBe(503);
    expect(failing.report.ready).toBe(false);
    expect(failing.report.journal).toMatchObject({ writable: false, queued: 4, code: disk.code });
    expect(failing.report.reasons).toContainEqual(
      expect.stringMatching(
        new RegExp(`^delivery journal cannot be written since \\S+ \\(${disk.code}\\); 4 alerts wait in memory$`),
      ),
    );
    if (disk.code === 'ENOSPC') {
      // The readiness probe writes to the same full disk.
      expect(failing.report.store).toEqual({ writable: false, code: 'ENOSPC' });
      expect(failing.report.reasons).toContain('data directory is not writable');
    }
    expect(await metric('floorwatch_journal_writable')).toBe(0);
    expect(await metric('floorwatch_journal_retry_queue_depth')).toBe(4);
    expect(await metric('floorwatch_pipeline_dropped_total')).toBe(0);
    const status = h.text(await h.run('/status'));
    expect(status).toMatch(
      new RegExp(
        `Delivery journal: failing to write since [\\d-]+T[\\d:]+Z \\(${disk.code}\\): 4 alerts kept in memory, 0 dropped`,
      ),
    );
    expect(logged(OUTAGE)).toHaveLength(1);
    expect(logged(OUTAGE)[0]).toMatchObject({ level: 50, code: disk.code, queued: 1 });

    await disk.free();
    await until(() =>
      h.alerts.status().backlog.queued === 0 && !h.alerts.status().backlog.failure ? true : undefined,
    );
    await h.console.until(() => outage.every((hash) => delivered().includes(hash)));
    await h.dispatcher.drained();
    expect(delivered().filter((hash) => outage.includes(hash))).toEqual(outage);
    for (const hash of outage) {
      expect(h.journal.byTransaction('devnet', hash).map((r) => r.state)).toEqual(['sent']);
    }
    const sold = h.console.alerts(CHAT.chatId).filter((r) => r.title?.startsWith('Sold: '));
    expect(sold).toHaveLength(1 + outage.length);

    const ready = await until(async () => {
      const answer = await readyz();
      return answer.status === 200 ? answer.report : undefined;
    });
    expect(ready).toMatchObject({ ready: true, store: { writable: true }, journal: { writable: true, queued: 0 } });
    expect(await metric('floorwatch_journal_writable')).toBe(1);
    expect(await metric('floorwatch_journal_retry_queue_depth')).toBe(0);
    expect(h.text(await h.run('/status'))).not.toContain('Delivery journal');
    expect(logged(OUTAGE)).toHaveLength(1);
    expect(logged(RECOVERED)).toHaveLength(1);
    expect(logged(RECOVERED)[0]).toMatchObject({ level: 30, recorded: 4, dropped: 0 });
  }, 60_000);

  it('WHEN more alerts arrive than the limit THEN the newest are dropped and counted in counters, /metrics and /status, and the kept ones still arrive once', async () => {
    const outage = await fillUntilRefused();
    const kept = [outage.at(-1) as string];
    const dropped: string[] = [];
    for (let n = 0; n < LIMIT + 2; n++) {
      const hash = await mineSale();
      if (kept.length < LIMIT) kept.push(hash);
      else dropped.push(hash);
    }
    expect(h.alerts.status().backlog.queued).toBe(LIMIT);
    expect(h.alerts.status().counters.dropped).toBe(3);
    expect(await metric('floorwatch_pipeline_dropped_total')).toBe(3);
    expect(await metric('floorwatch_journal_retry_queue_depth')).toBe(LIMIT);
    const status = h.text(await h.run('/status'));
    expect(status).toContain(`${LIMIT} alerts kept in memory, 3 dropped`);
    expect(status).toMatch(/Alerts: .*, 3 dropped/);
    const full = logs.filter(
      (l) => typeof l.msg === 'string' && l.msg.startsWith('the alerts kept for the journal reached'),
    );
    expect(full).toHaveLength(1);
    expect(full[0]).toMatchObject({ level: 40, queued: LIMIT, dropped: 1, limit: LIMIT });

    await disk.free();
    await h.console.until(() => kept.every((hash) => delivered().includes(hash)));
    await until(() => (h.alerts.status().backlog.queued === 0 ? true : undefined));
    await h.dispatcher.drained();
    const all = outage.slice(0, -1).concat(kept);
    expect(delivered().filter((hash) => all.includes(hash))).toEqual(all);
    for (const hash of dropped) expect(h.journal.byTransaction('devnet', hash)).toEqual([]);
    expect(delivered().filter((hash) => dropped.includes(hash))).toEqual([]);
    expect(h.alerts.status().counters.dropped).toBe(3);
    expect(logged(OUTAGE)).toHaveLength(2);
    expect(logged(RECOVERED).at(-1)).toMatchObject({ recorded: LIMIT, dropped: 3 });
  }, 60_000);

  it('WHEN a kept sale is reorganised away THEN the reorg waits behind it: once written, its alert is never left standing', async () => {
    await fillUntilRefused();
    const sale = await mineSale();
    const reorgs = h.alerts.status().counters.reorged;
    await h.devnet.reorg('devnet', 1);
    await until(() => (h.alerts.status().backlog.reorgs === 1 ? true : undefined));
    expect(h.journal.byTransaction('devnet', sale)).toEqual([]);

    await disk.free();
    await until(() =>
      h.alerts.status().backlog.queued === 0 && h.alerts.status().backlog.reorgs === 0 ? true : undefined,
    );
    await h.dispatcher.drained();
    expect(h.alerts.status().counters.reorged).toBe(reorgs + 1);
    const [record] = h.journal.byTransaction('devnet', sale);
    expect(record?.reorged).toBe(true);
    // Either it was dropped before a send, or the message that went out was edited to say so.
    if (record?.state === 'sent') expect(record.editedAt).toBeDefined();
    else expect(record?.state).toBe('dropped');
  }, 60_000);
});

describe('GIVEN the dispatcher while the journal refuses every write (file size limit)', () => {
  let dir: string;
  let journal: DeliveryJournal;
  let limit: FileSizeLimit;
  let sink: RecordingSink;
  let dispatcher: Dispatcher;

  const delivery = (chatId: string, n: number, sendingAlone = false): NewDelivery => ({
    eventId: `devnet:0x${n}:0xc0:sale`,
    destination: { platform: 'telegram', chatId },
    network: 'devnet',
    txnHash: `0x${n}`,
    blockNumber: n,
    payload: { title: `Sold: #${n}` },
    ...(sendingAlone ? { sendingAlone } : {}),
  });

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'floorwatch-dispatch-full-'));
    journal = await DeliveryJournal.open(join(dir, 'deliveries.jsonl'), { fsync: false });
    limit = FileSizeLimit.read();
    sink = new RecordingSink('telegram', 1);
    dispatcher = new Dispatcher({
      journal,
      sinks: new Map([['telegram' as const, sink]]),
      logger: pino({ level: 'silent' }),
      retryDelayMs: 10,
      maxRetryDelayMs: 30_000,
    });
  });
  afterEach(async () => {
    limit.restore();
    await dispatcher.stop();
    await journal.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('WHEN a send cannot be marked started, or a sent message cannot be recorded THEN the chat waits without a crash, and once the journal takes writes each is sent once and recorded sent', async () => {
    const records = await journal.record([delivery('-1', 1), delivery('-2', 2, true)]);
    expect(records.map((r) => r.state)).toEqual(['pending', 'sending']);
    limit.lower((await stat(journal.file)).size);
    dispatcher.enqueue(records);
    // The one recorded as sending goes out, its outcome waits for the disk; the pending one waits to start.
    await sink.until(() => sink.sent.length === 1);
    await pause(300);
    expect(sink.sent.map((m) => m.chatId)).toEqual(['-2']);
    expect(journal.writeFailure()).toMatchObject({ code: 'EFBIG', broken: false });
    expect(records.map((r) => journal.get(r.id)?.state)).toEqual(['pending', 'sending']);
    expect(journal.get(records[0]?.id ?? '')?.attempts).toBe(0);

    limit.restore();
    await sink.until(() => sink.sent.length === 2, 10_000);
    await dispatcher.drained();
    expect(sink.sent.map((m) => m.chatId).sort()).toEqual(['-1', '-2']);
    expect(records.map((r) => journal.get(r.id)?.state)).toEqual(['sent', 'sent']);
    expect(journal.writeFailure()).toBeUndefined();
  });

  it('WHEN it stops while they wait for the journal THEN it stops at once, and the next start sends each once (the one already out again under its key)', async () => {
    const records = await journal.record([delivery('-1', 1), delivery('-2', 2, true)]);
    limit.lower((await stat(journal.file)).size);
    dispatcher.enqueue(records);
    await sink.until(() => sink.sent.length === 1);
    await pause(100);
    const started = Date.now();
    await dispatcher.stop();
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(records.map((r) => journal.get(r.id)?.state)).toEqual(['pending', 'sending']);

    limit.restore();
    dispatcher = new Dispatcher({
      journal,
      sinks: new Map([['telegram' as const, sink]]),
      logger: pino({ level: 'silent' }),
      retryDelayMs: 10,
    });
    dispatcher.enqueue(journal.unfinished());
    await dispatcher.drained();
    expect(sink.sent.map((m) => m.chatId).sort()).toEqual(['-1', '-2']);
    expect(records.map((r) => journal.get(r.id)?.state)).toEqual(['sent', 'sent']);
    expect(journal.get(records[1]?.id ?? '')?.messageId).toBe(sink.sent.find((m) => m.chatId === '-2')?.messageId);
  });
});
