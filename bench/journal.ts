// Delivery journal throughput with fsync on: 20,000 deliveries recorded in batches of 10, each marked
// sending then sent (3 durable writes per batch), then compaction and replay times, and the longest
// the event loop was held during each compaction (what an alert waiting on it would wait at most).
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { NewDelivery } from '../src/core/deliveries.ts';
import { DeliveryJournal } from '../src/store/files/journal/journal.ts';

const TOTAL = 20_000;
const BATCH = 10;
const dir = await mkdtemp(join(tmpdir(), 'floorwatch-bench-journal-'));
const file = join(dir, 'deliveries.jsonl');
let clock = Date.now();
const now = () => new Date(clock);

const delivery = (n: number): NewDelivery => ({
  eventId: `mainnet:0x${n.toString(16).padStart(64, '0')}:0x${'c0'.repeat(20)}:sale`,
  destination: { platform: n % 2 === 0 ? 'discord' : 'telegram', chatId: String(1_000_000 + (n % 7)) },
  network: 'mainnet',
  txnHash: `0x${n.toString(16).padStart(64, '0')}`,
  blockNumber: 20_000_000 + Math.floor(n / 10),
  payload: { title: `Sale #${n}`, price: '1.25 ETH', usd: '4,210.50', image: `https://img.example/${n}.png` },
});

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(2)} MiB`;
const ms = (start: number) => performance.now() - start;
/** Runs `work` and says the longest the event loop was held meanwhile. */
async function held(work: () => Promise<void>): Promise<string> {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  await work();
  delay.disable();
  return `event loop held at most ${(delay.max / 1e6).toFixed(1)} ms`;
}

try {
  let compactionFailures = 0;
  const journal = await DeliveryJournal.open(file, { now, onCompactionError: () => compactionFailures++ });
  let start = performance.now();
  for (let n = 0; n < TOTAL; n += BATCH) {
    const fresh = await journal.record(Array.from({ length: BATCH }, (_, k) => delivery(n + k)));
    await Promise.all(fresh.map((r) => journal.markSending(r.id)));
    await Promise.all(fresh.map((r) => journal.markSent(r.id, String(9_000_000_000 + n))));
  }
  let elapsed = ms(start);
  console.log(`sequential: ${TOTAL} deliveries in batches of ${BATCH}, record + sending + sent, fsync on`);
  console.log(
    `  ${elapsed.toFixed(0)} ms, ${Math.round(TOTAL / (elapsed / 1000))} deliveries/s, ${Math.round((3 * TOTAL) / BATCH / (elapsed / 1000))} durable writes/s`,
  );
  console.log(
    `  on disk: ${mib((await stat(file)).size)} (compacts itself past 4 MiB; failed compactions: ${compactionFailures})`,
  );

  start = performance.now();
  const producers = 8;
  await Promise.all(
    Array.from({ length: producers }, async (_, p) => {
      for (let n = TOTAL + p * BATCH; n < 2 * TOTAL; n += producers * BATCH) {
        const fresh = await journal.record(Array.from({ length: BATCH }, (_, k) => delivery(n + k)));
        await Promise.all(fresh.map((r) => journal.markSending(r.id)));
        await Promise.all(fresh.map((r) => journal.markSent(r.id, String(9_000_000_000 + n))));
      }
    }),
  );
  elapsed = ms(start);
  console.log(`concurrent: ${TOTAL} more by ${producers} producers (group commit)`);
  console.log(`  ${elapsed.toFixed(0)} ms, ${Math.round(TOTAL / (elapsed / 1000))} deliveries/s`);
  console.log(`  on disk: ${mib((await stat(file)).size)}, ${journal.stats().records} records`);

  start = performance.now();
  let stall = await held(() => journal.compact());
  console.log(
    `compaction, all ${journal.stats().records} records open: ${ms(start).toFixed(0)} ms -> ${mib(journal.stats().bytes)}, ${stall}`,
  );

  for (let n = 0; n < 2 * TOTAL; n += 100) {
    await Promise.all(Array.from({ length: 100 }, (_, k) => journal.markFinal('mainnet', delivery(n + k).txnHash)));
  }
  clock += 25 * 60 * 60 * 1000;
  const before = (await stat(file)).size;
  const forgotten = journal.stats().records;
  start = performance.now();
  stall = await held(() => journal.compact());
  console.log(
    `compaction, all ${forgotten} closed and past retention: ${ms(start).toFixed(0)} ms, ${mib(before)} -> ${mib(journal.stats().bytes)}, ${stall}`,
  );
  await journal.close();

  const again = await DeliveryJournal.open(file, { now });
  await again.close();
  const replayFile = join(dir, 'replay.jsonl');
  const big = await DeliveryJournal.open(replayFile, { now, fsync: false, compactAfterBytes: 1024 ** 3 });
  for (let n = 0; n < TOTAL; n += BATCH) {
    const fresh = await big.record(Array.from({ length: BATCH }, (_, k) => delivery(n + k)));
    await Promise.all(fresh.map((r) => big.markSent(r.id, String(n))));
  }
  await big.close();
  start = performance.now();
  const replayed = await DeliveryJournal.open(replayFile, { now, compactAfterBytes: 1024 ** 3 });
  console.log(
    `replay on open: ${replayed.stats().records} records, ${mib(replayed.stats().bytes)} in ${ms(start).toFixed(0)} ms`,
  );
  await replayed.close();
} finally {
  await rm(dir, { recursive: true, force: true });
}
