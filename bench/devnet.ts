// Devnet benchmark: stream throughput to one subscriber, and ListCollectibles latency on the
// 10,000-token collection with a property filter. Prints figures; asserts nothing.
//
// The stream subscriber is the project's PlatformClient in a worker thread (this same file), so
// that the figure is what the devnet delivers, not what one thread can both mine and parse.
import { setImmediate as yieldToIo } from 'node:timers/promises';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { generateDataset } from '../src/devnet/dataset.ts';
import { type ActivitySpec, startDevnet } from '../src/devnet/index.ts';
import { type EventLog, type Network, PlatformClient, type PlatformEndpoints } from '../src/platform/index.ts';

interface SubscriberJob {
  endpoints: PlatformEndpoints;
  networks: Network[];
  accessKey: string;
  collection: string;
  expected: number;
}

const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

/** Counts logs until `expected` arrived; reports `connected` and `done` to the main thread. */
async function runSubscriber(job: SubscriberJob, report: (message: string) => void): Promise<void> {
  const client = new PlatformClient({ endpoints: job.endpoints, networks: job.networks, accessKey: job.accessKey });
  const controller = new AbortController();
  let received = 0;
  const stream = client.indexer.subscribeEvents(
    { network: 'devnet', filter: { contractAddresses: [job.collection] } },
    { signal: controller.signal, onState: (s) => s.kind === 'connected' && report('connected') },
  );
  const seen: EventLog[] = [];
  for await (const log of stream) {
    if (received === 0) seen.push(log);
    received++;
    if (received === job.expected) {
      report('done');
      controller.abort();
    }
  }
  await client.close();
}

async function streamFigure(label: string, job: SubscriberJob, inWorker: boolean, mine: () => Promise<number>) {
  let onMessage: (message: string) => void = () => undefined;
  const messages = (message: string) => onMessage(message);
  const connected = new Promise<void>((resolve) => {
    onMessage = (m) => m === 'connected' && resolve();
  });
  let worker: Worker | undefined;
  let local: Promise<void> | undefined;
  if (inWorker) {
    // A worker does not inherit tsx's loader: register it, then load this file.
    const api = import.meta.resolve('tsx/esm/api');
    const boot = `import { register } from ${JSON.stringify(api)}; register(); await import(${JSON.stringify(import.meta.url)});`;
    worker = new Worker(new URL(`data:text/javascript,${encodeURIComponent(boot)}`), { workerData: job });
    worker.on('message', messages);
  } else {
    local = runSubscriber(job, messages);
  }
  await connected;
  const done = new Promise<void>((resolve) => {
    onMessage = (m) => m === 'done' && resolve();
  });
  const started = performance.now();
  const miningMs = await mine();
  await done;
  const elapsed = performance.now() - started;
  await worker?.terminate();
  await local;
  if (label === 'warm-up') return;
  console.log(
    `${label}: ${fmt(job.expected / (elapsed / 1000))} logs/s to one subscriber ` +
      `(${fmt(job.expected)} logs in ${fmt(elapsed)} ms, of which mining ${fmt(miningMs)} ms)`,
  );
}

async function main(): Promise<void> {
  let started = performance.now();
  generateDataset({ seed: 1, scale: 'full', projectId: 16815 });
  console.log(`dataset (full, seed 1): generated in ${fmt(performance.now() - started, 1)} ms`);

  started = performance.now();
  const devnet = await startDevnet({ seed: 1 });
  console.log(`devnet: started in ${fmt(performance.now() - started, 1)} ms`);
  const client = new PlatformClient({
    endpoints: devnet.endpoints,
    networks: devnet.networks,
    accessKey: devnet.accessKey,
  });
  const cats = devnet.collections.devnet?.find((c) => c.name === 'Moon Cats');
  if (!cats) throw new Error('the dataset has no Moon Cats');

  // 1. One stream, one subscriber: blocks of transfers on the 10k collection, one Transfer log each,
  // after a warm-up without subscribers.
  const BLOCKS = 100;
  const PER_BLOCK = 250;
  const transfers: ActivitySpec[] = Array.from({ length: PER_BLOCK }, () => ({
    kind: 'transfer',
    collection: cats.address,
  }));
  const job: SubscriberJob = {
    endpoints: devnet.endpoints,
    networks: devnet.networks,
    accessKey: devnet.accessKey,
    collection: cats.address,
    expected: BLOCKS * PER_BLOCK,
  };
  const mine = async () => {
    let miningMs = 0;
    for (let block = 0; block < BLOCKS; block++) {
      const t0 = performance.now();
      await devnet.mine('devnet', transfers);
      miningMs += performance.now() - t0;
      await yieldToIo();
    }
    return miningMs;
  };
  const warmUp = async () => {
    for (let block = 0; block < 20; block++) {
      await devnet.mine('devnet', transfers);
      await yieldToIo();
    }
    return 0;
  };
  await streamFigure('warm-up', { ...job, expected: 20 * PER_BLOCK }, false, warmUp);
  await streamFigure('stream', job, true, mine);
  await streamFigure('stream (subscriber in the devnet thread)', job, false, mine);

  // 2. ListCollectibles on the 10k collection with a property filter, over HTTP through the client.
  const furs = [
    'Tabby',
    'Calico',
    'Tuxedo',
    'Ginger',
    'Silver',
    'Midnight Black',
    'Cream',
    'Cosmic Static',
    'Moonlit Glow',
  ];
  const query = (i: number) =>
    client.marketplace.listCollectibles({
      network: 'devnet',
      side: i % 4 === 3 ? 'offer' : 'listing',
      contractAddress: cats.address,
      filter: {
        properties: [{ name: 'Fur', type: 'STRING', values: [furs[i % furs.length] ?? 'Tabby'] }],
        includeEmpty: i % 5 === 4,
      },
      page: { page: 1 + (i % 3), pageSize: 30 },
    });
  for (let i = 0; i < 30; i++) await query(i);
  const samples: number[] = [];
  for (let i = 0; i < 400; i++) {
    const t0 = performance.now();
    await query(i);
    samples.push(performance.now() - t0);
  }
  samples.sort((a, b) => a - b);
  console.log(
    `ListCollectibles (10k, property filter): p50 ${fmt(percentile(samples, 50), 2)} ms p99 ${fmt(percentile(samples, 99), 2)} ms ` +
      `(${samples.length} calls over HTTP through the client)`,
  );
  console.log('targets: stream 20,000 logs/s; ListCollectibles p50 under 20 ms');

  await client.close();
  await devnet.close();
}

if (isMainThread) {
  await main();
} else {
  await runSubscriber(workerData as SubscriberJob, (message) => parentPort?.postMessage(message));
}
