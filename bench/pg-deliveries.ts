// pg-deliveries (issue 14): deliveries per second through the shared PostgreSQL database, drained by 1
// worker process and by 3.
//
// Each round records N deliveries (default 10,000) spread over C chats (default 500) with the real
// PgDeliveryLog (100 a call, each call to 100 different chats, so that a chat's recording order is the
// order of the deliveries' numbers), then starts the workers: separate processes, each with its own
// connection pool (FLOORWATCH_DATABASE_POOL's default, 10), its own lease connection (Leases), a
// ChatClaims and a Dispatcher as src/main.ts wires them (claims hear the delivery notifications), and an
// in-memory sink that answers at once. The clock starts when the workers are told to go (they are
// connected and listening by then) and stops when the last `markSent` of the last delivery resolved:
// every delivery goes through the database three times (recorded before; `markSending` and `markSent`
// during the drain), so the figure is what the database and the processes sustain, not a chat's limits.
//
// Checked every round: each delivery was handed to a sink exactly once over all the workers, each
// chat's deliveries reached the sinks in recording order (by the machine's monotonic clock, across
// processes), and the database holds every delivery as sent after exactly one attempt.
//
// Two sink shapes: one alert per message (Telegram, `maxBatch` 1: markSending, send, markSent per
// delivery) and ten per message (Discord, `maxBatch` 10: bursts to one chat are merged).
// The machine has 2 cores, shared by the PostgreSQL server, the workers and this process (idle while
// they drain): 3 workers cannot run at once, and the figures say what the database costs per delivery
// rather than how it would scale on more cores. The workers' CPU per delivery is printed.
//
//   npm run bench -- pg-deliveries
//   PG_DELIVERIES=20000 PG_DELIVERIES_CHATS=1000 PG_DELIVERIES_ROUNDS=3 npm run bench -- pg-deliveries
import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import type { NewDelivery } from '../src/core/deliveries.ts';
import type { Reply } from '../src/core/reply.ts';
import { ChatClaims } from '../src/delivery/claims.ts';
import { Dispatcher } from '../src/delivery/dispatcher.ts';
import type { AlertSink } from '../src/delivery/sink.ts';
import { Database } from '../src/store/pg/database.ts';
import { PgDeliveryLog } from '../src/store/pg/deliveries.ts';
import { chatsOf, DELIVERIES_CHANNEL } from '../src/store/pg/index.ts';
import { Leases } from '../src/store/pg/leases.ts';
import { startTestPostgres } from '../test/helpers/postgres.ts';

const N = Number(process.env.PG_DELIVERIES ?? 10_000);
const CHATS = Number(process.env.PG_DELIVERIES_CHATS ?? 500);
const ROUNDS = Number(process.env.PG_DELIVERIES_ROUNDS ?? 3);
const PER_CALL = Math.min(100, CHATS);
const POOL = 10;

/** Milliseconds on the machine's monotonic clock: the same in every process. */
const now = (): number => Number(process.hrtime.bigint()) / 1e6;
const chatOf = (n: number) => `${800_000_000 + (n % CHATS)}`;

/** A typical alert's size (~0.9 KB of JSON); its title carries the delivery's number. */
function payloadOf(n: number): Reply {
  return {
    title: `n=${n} Sale: Moon Cat #${n % 5_000}`,
    url: `https://market.example/polygon/0x${'ab'.repeat(20)}/${n % 5_000}`,
    lines: [`Sold for **1.25 ETH** ($${(3_100 + (n % 100)).toFixed(2)})`, `Block ${1_000_000 + n}`],
    fields: [
      { name: 'Seller', value: `0x${'12'.repeat(20)}`, inline: true },
      { name: 'Buyer', value: `0x${'34'.repeat(20)}`, inline: true },
      { name: 'Floor', value: '1.10 ETH', inline: true },
      { name: 'Transaction', value: `0x${n.toString(16).padStart(64, '0')}` },
    ],
    image: `https://images.example/${n % 5_000}.png`,
  };
}

// ---------------------------------------------------------------------------------------------
// Worker process

interface WorkerStart {
  kind: 'start';
  url: string;
  platform: 'telegram' | 'discord';
  maxBatch: number;
}
interface WorkerGo {
  kind: 'go';
}
interface WorkerFinish {
  kind: 'finish';
}
interface WorkerReport {
  kind: 'report';
  /** Per send: when, the chat, the delivery numbers it carried. */
  sends: Array<[number, string, number[]]>;
  lastMarkedSent: number;
  cpuMs: number;
  chatsHeld: number;
}

async function worker(): Promise<void> {
  const logger = pino({ level: 'warn' });
  let sends: WorkerReport['sends'] = [];
  let count = 0;
  let lastMarkedSent = 0;
  let claims: ChatClaims | undefined;
  let dispatcher: Dispatcher | undefined;
  let db: Database | undefined;
  let leases: Leases | undefined;
  let cpu0 = process.cpuUsage();
  process.on('message', (message: WorkerStart | WorkerGo | WorkerFinish) => {
    void (async () => {
      if (message.kind === 'start') {
        db = await Database.open(message.url, { logger, poolSize: POOL, applicationName: 'bench-worker' });
        leases = await Leases.open(db, logger, (error) => {
          console.error(`worker ${process.pid}: lost a lease`, error);
          process.exit(1);
        });
        const log = new PgDeliveryLog(db, { logger, cleanupEveryMs: 0, fences: leases });
        const markSent = log.markSent.bind(log);
        log.markSent = async (id, messageId) => {
          const record = await markSent(id, messageId);
          lastMarkedSent = now();
          return record;
        };
        let next = 1;
        const sink: AlertSink = {
          platform: message.platform,
          maxBatch: message.maxBatch,
          minIntervalMs: 0,
          async send(chatId, replies) {
            const numbers = replies.map((r) => Number(/^n=(\d+) /.exec(r.title ?? '')?.[1] ?? -1));
            sends.push([now(), chatId, numbers]);
            count += numbers.length;
            return String(next++);
          },
          async edit() {},
        };
        dispatcher = new Dispatcher({
          journal: log,
          sinks: new Map([[message.platform, sink]]),
          logger,
          fence: leases,
        });
        claims = new ChatClaims({ leases, log, dispatcher, logger });
        const chatClaims = claims;
        await db.listen(DELIVERIES_CHANNEL, (payload) => chatClaims.noticed(chatsOf(payload)));
        process.send?.({ kind: 'ready' });
      } else if (message.kind === 'go') {
        cpu0 = process.cpuUsage();
        await claims?.start();
      } else {
        await dispatcher?.drained();
        const cpu = process.cpuUsage(cpu0);
        const report: WorkerReport = {
          kind: 'report',
          sends,
          lastMarkedSent,
          cpuMs: (cpu.user + cpu.system) / 1000,
          chatsHeld: claims?.held().length ?? 0,
        };
        sends = [];
        process.send?.(report);
        claims?.stop();
        await dispatcher?.stop();
        await leases?.close();
        await db?.close();
        process.disconnect();
      }
    })().catch((error: unknown) => {
      console.error(`worker ${process.pid} failed`, error);
      process.exit(1);
    });
  });
  // Progress, for the parent to know when every delivery reached a sink.
  setInterval(() => process.send?.({ kind: 'progress', count }), 20).unref();
  process.on('disconnect', () => process.exit(0));
}

// ---------------------------------------------------------------------------------------------
// The bench

interface Shape {
  platform: 'telegram' | 'discord';
  maxBatch: number;
}

async function round(url: string, workers: number, shape: Shape): Promise<{ perSecond: number; text: string }> {
  const logger = pino({ level: 'warn' });
  const db = await Database.open(url, { logger, poolSize: 4 });
  // The recorder leads the network's ingest, under whose lease deliveries are recorded.
  const leases = await Leases.open(db, logger, (error) => {
    throw error;
  });
  const log = new PgDeliveryLog(db, { logger, cleanupEveryMs: 0, fences: leases });
  try {
    if (!(await leases.tryLock('ingest', 'polygon'))) throw new Error('could not lead the ingest of polygon');
    await db.pool.query('TRUNCATE deliveries');
    const recordStart = now();
    for (let from = 0; from < N; from += PER_CALL) {
      const batch: NewDelivery[] = [];
      for (let n = from; n < Math.min(N, from + PER_CALL); n++) {
        batch.push({
          eventId: `polygon:0x${n.toString(16).padStart(64, '0')}:0xabc:sale`,
          destination: { platform: shape.platform, chatId: chatOf(n) },
          network: 'polygon',
          txnHash: `0x${n.toString(16).padStart(64, '0')}`,
          blockNumber: 1_000_000 + n,
          kind: 'sale',
          usd: 3_100,
          payload: payloadOf(n),
        });
      }
      await log.record(batch);
    }
    const recordMs = now() - recordStart;

    const children: ChildProcess[] = [];
    const progress = new Map<ChildProcess, number>();
    for (let w = 0; w < workers; w++) {
      // --no-deprecation: pg warns, once per worker, that Leases sends queries on its lease connection
      // while another is in flight (the claims' sweep tries many chats at once); pg 8 queues them.
      const child = fork(fileURLToPath(import.meta.url), ['--worker'], {
        stdio: 'inherit',
        execArgv: [...process.execArgv, '--no-deprecation'],
      });
      children.push(child);
      progress.set(child, 0);
      child.on('message', (m: { kind: string; count?: number }) => {
        if (m.kind === 'progress') progress.set(child, m.count ?? 0);
      });
    }
    try {
      // One after another: each opens the database, which runs the migrations, and node-pg-migrate
      // refuses a second run while another holds its lock ("Another migration is already running").
      for (const child of children) {
        const ready = new Promise<void>((resolve, reject) => {
          child.on('message', (m: { kind: string }) => m.kind === 'ready' && resolve());
          child.once('exit', (code) => reject(new Error(`a worker exited (${code})`)));
        });
        child.send({ kind: 'start', url, ...shape } satisfies WorkerStart);
        await ready;
      }
      const go = now();
      for (const child of children) child.send({ kind: 'go' } satisfies WorkerGo);
      const deadline = Date.now() + 600_000;
      while ([...progress.values()].reduce((a, b) => a + b, 0) < N) {
        if (Date.now() > deadline) throw new Error('the workers did not send every delivery within 10 minutes');
        if (children.some((c) => c.exitCode !== null)) throw new Error('a worker exited');
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const reports = await Promise.all(
        children.map(async (child) => {
          const answer = new Promise<WorkerReport>((resolve) =>
            child.on('message', (m: WorkerReport) => m.kind === 'report' && resolve(m)),
          );
          const gone = once(child, 'exit');
          child.send({ kind: 'finish' } satisfies WorkerFinish);
          const report = await answer;
          await gone;
          return report;
        }),
      );
      const end = Math.max(...reports.map((r) => r.lastMarkedSent));
      const seconds = (end - go) / 1000;

      // Exactly once, and in each chat's recording order.
      const times = new Map<number, number>();
      const twice: number[] = [];
      const byChat = new Map<string, Array<[number, number]>>();
      const chatWorkers = new Map<string, Set<number>>();
      let messages = 0;
      reports.forEach((report, w) => {
        messages += report.sends.length;
        for (const [at, chatId, numbers] of report.sends) {
          const list = byChat.get(chatId) ?? [];
          byChat.set(chatId, list);
          const ws = chatWorkers.get(chatId) ?? new Set<number>();
          chatWorkers.set(chatId, ws);
          ws.add(w);
          for (const n of numbers) {
            if (times.has(n)) twice.push(n);
            times.set(n, at);
            list.push([at, n]);
          }
        }
      });
      let missing = 0;
      for (let n = 0; n < N; n++) if (!times.has(n)) missing++;
      let outOfOrder = 0;
      for (const [chatId, list] of byChat) {
        list.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
        for (let i = 1; i < list.length; i++) {
          if ((list[i] as [number, number])[1] <= (list[i - 1] as [number, number])[1]) outOfOrder++;
          if (chatOf((list[i] as [number, number])[1]) !== chatId) outOfOrder++;
        }
      }
      const split = [...chatWorkers.values()].filter((s) => s.size > 1).length;
      const { rows } = await db.pool.query<{ state: string; attempts: number; count: string }>(
        'SELECT state, attempts, count(*) AS count FROM deliveries GROUP BY state, attempts ORDER BY state, attempts',
      );
      const states = rows.map((r) => `${r.state}/${r.attempts} attempt(s): ${r.count}`).join(', ');
      const allSentOnce = rows.length === 1 && rows[0]?.state === 'sent' && rows[0]?.attempts === 1;
      const ok = missing === 0 && twice.length === 0 && outOfOrder === 0 && allSentOnce;
      const cpuMs = reports.reduce((a, r) => a + r.cpuMs, 0);
      const perSecond = N / seconds;
      const text = `${workers} worker${workers === 1 ? '' : 's'}: ${Math.round(perSecond).toLocaleString('en-US')} deliveries/s (${N.toLocaleString('en-US')} in ${seconds.toFixed(2)} s, ${messages.toLocaleString('en-US')} messages; recorded beforehand in ${(recordMs / 1000).toFixed(1)} s, ${Math.round(N / (recordMs / 1000)).toLocaleString('en-US')}/s); chats per worker ${reports.map((r) => r.chatsHeld).join('/')}; workers' CPU ${(cpuMs / N).toFixed(2)} ms/delivery; check: ${ok ? 'each sent exactly once, in order' : `FAILED (missing ${missing}, twice ${twice.length}, out of order ${outOfOrder})`}${split ? `, ${split} chats sent to by two workers` : ''}; database: ${states}`;
      return { perSecond, text };
    } finally {
      for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  } finally {
    await log.close();
    await leases.close();
    await db.close();
  }
}

async function main(): Promise<void> {
  const postgres = await startTestPostgres();
  try {
    const url = await postgres.freshDatabase();
    console.log(
      `${N.toLocaleString('en-US')} deliveries over ${CHATS.toLocaleString('en-US')} chats, recorded then drained by worker processes (pool ${POOL}, own locks, ChatClaims, Dispatcher, an in-memory sink); ${ROUNDS} round(s) per case; load average ${loadavg()[0]?.toFixed(1)} on ${cpus().length} CPUs`,
    );
    const shapes: Array<Shape & { label: string }> = [
      { label: 'one alert per message (Telegram, maxBatch 1)', platform: 'telegram', maxBatch: 1 },
      { label: 'up to ten alerts per message (Discord, maxBatch 10)', platform: 'discord', maxBatch: 10 },
    ];
    const summary: string[] = [];
    for (const shape of shapes) {
      console.log(`${shape.label}:`);
      for (const workers of [1, 3]) {
        const figures: number[] = [];
        for (let r = 0; r < ROUNDS; r++) {
          const result = await round(url, workers, shape);
          figures.push(result.perSecond);
          console.log(`  round ${r + 1}, ${result.text}`);
        }
        const range = `${Math.round(Math.min(...figures)).toLocaleString('en-US')}-${Math.round(Math.max(...figures)).toLocaleString('en-US')}`;
        summary.push(`  ${shape.label}, ${workers} worker${workers === 1 ? '' : 's'}: ${range} deliveries/s`);
      }
    }
    console.log(
      `deliveries/s through the database (range over the rounds), load average now ${loadavg()[0]?.toFixed(1)}:`,
    );
    for (const line of summary) console.log(line);
  } finally {
    await postgres.stop();
  }
}

if (process.argv.includes('--worker')) await worker();
else await main();
