// Sale context (issue 26.4): what the buyer line costs a sale alert. The alert path asks
// BuyerHoldings for each matched sale as it arrives; the answer is awaited beside enrichment (within a
// 2 s budget). Here the same calls are made against the local platform, in this process (its HTTP
// answers share the event loop: the figures are an upper bound of a real platform's local cost), with
// the real client over local HTTP:
//
// - sequential: one sale a block, asked when mined: the latency of one look-up, one call each;
// - burst: blocks of BURST_SIZE sales mined back to back (a turn of the event loop apart), each sale
//   asked at once as the pipeline does: look-ups gathered per collection (one call in flight, the next
//   gathering the rest). A sale whose token its buyer no longer holds by the time of the answer (sold
//   on in the burst: the devnet lists random holders' tokens when the book runs low) is not answered;
// - the pure work per sale (held-for, profit, render with the lines) in µs.
//
// The machine is shared: its load average is printed with the figures.
//
//   npm run bench -- sale-context
import { loadavg } from 'node:os';
import pino from 'pino';
import { renderAlert } from '../src/alerts/render.ts';
import { BuyerHoldings, heldFor, saleProfit } from '../src/alerts/sale-context.ts';
import type { ChainEvent } from '../src/alerts/types.ts';
import { startDevnet } from '../src/devnet/index.ts';
import { PlatformClient } from '../src/platform/client.ts';

const SEQUENTIAL = 100;
const BURST_BLOCKS = 20;
const BURST_SIZE = 10;
const PURE_ROUNDS = 100_000;

const load = () => `machine load average (1 min) ${loadavg()[0]?.toFixed(1)} on 2 CPUs`;
const quantile = (sorted: readonly number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
const figures = (samples: number[]) => {
  const sorted = [...samples].sort((a, b) => a - b);
  return `p50 ${quantile(sorted, 0.5).toFixed(2)} ms, p99 ${quantile(sorted, 0.99).toFixed(2)} ms, max ${(sorted.at(-1) ?? Number.NaN).toFixed(2)} ms over ${sorted.length} sales`;
};

console.log(load());
const devnet = await startDevnet({ scale: 'small', heartbeatIntervalMs: 10_000, blockIntervalMs: 0 });
const client = new PlatformClient({
  endpoints: devnet.endpoints,
  networks: devnet.networks,
  accessKey: devnet.accessKey,
});
const collection = devnet.collections.devnet?.find((c) => c.name === 'Moon Cats');
if (!collection) throw new Error('no Moon Cats');
const address = collection.address;
const wallet = (n: number) => `0x${n.toString(16).padStart(6, '0')}${'c'.repeat(34)}`;

function saleEvent(tokenIds: readonly string[], to: string, txnHash: string): ChainEvent {
  return {
    id: `devnet:${txnHash}:${address}:sale`,
    kind: 'sale',
    network: 'devnet',
    collection: address,
    txnHash,
    blockNumber: 1,
    blockHash: '0x01',
    ts: new Date().toISOString(),
    tokens: tokenIds.map((tokenId) => ({ tokenId, amount: '1' })),
    from: wallet(0xffffff),
    to,
    accounts: [to],
    orderIds: [],
    logUids: [],
  };
}

/** Mines blocks of sales (each to its wallet), listing tokens again when the book runs low. */
async function mineSales(buyers: readonly string[]): Promise<ChainEvent[]> {
  const activity = buyers.map((to) => ({ kind: 'sale' as const, collection: address, to }));
  let mined: Awaited<ReturnType<typeof devnet.mine>>;
  try {
    mined = await devnet.mine('devnet', activity);
  } catch {
    await devnet.mine(
      'devnet',
      Array.from({ length: 30 }, () => ({ kind: 'listing' as const, collection: address })),
    );
    mined = await devnet.mine('devnet', activity);
  }
  return mined.transactions.map((t, i) => saleEvent(t.tokenIds, buyers[i] ?? '', t.txnHash));
}

// Sequential: one sale a block.
{
  const holdings = new BuyerHoldings(client, { logger: pino({ level: 'silent' }) });
  const samples: number[] = [];
  let answered = 0;
  for (let i = 0; i < SEQUENTIAL; i++) {
    const [event] = await mineSales([wallet(1_000 + (i % 40))]);
    if (!event) continue;
    const start = performance.now();
    if (await holdings.buyerOf(event)) answered++;
    samples.push(performance.now() - start);
  }
  console.log(
    `sequential, 1 sale a block: ${figures(samples)}; ${holdings.calls} calls for ${SEQUENTIAL} sales, ${answered} answered`,
  );
}

// Burst: blocks of BURST_SIZE sales back to back, every sale asked as soon as its block is mined.
{
  const holdings = new BuyerHoldings(client, { logger: pino({ level: 'silent' }) });
  const samples: number[] = [];
  const asks: Promise<unknown>[] = [];
  let answered = 0;
  for (let b = 0; b < BURST_BLOCKS; b++) {
    const buyers = Array.from({ length: BURST_SIZE }, (_, i) => wallet(2_000 + ((b * BURST_SIZE + i) % 60)));
    const events = await mineSales(buyers);
    for (const event of events) {
      const start = performance.now();
      asks.push(
        holdings.buyerOf(event).then((found) => {
          if (found) answered++;
          samples.push(performance.now() - start);
        }),
      );
    }
    // The next block comes a turn of the event loop later: calls go out while the burst goes on.
    await new Promise((resolve) => setImmediate(resolve));
  }
  await Promise.all(asks);
  const sales = BURST_BLOCKS * BURST_SIZE;
  console.log(
    `burst, ${BURST_BLOCKS} blocks of ${BURST_SIZE} sales back to back: ${figures(samples)}; ${holdings.calls} calls for ${sales} sales, ${answered} answered`,
  );
}

// Pure work per sale: held-for, profit and the rendered alert with its lines.
{
  const event = saleEvent(['7'], wallet(3), '0xab');
  const previous = {
    at: Date.parse(event.ts) - 86_400_000,
    usd: 2_000,
    units: '1',
    buyer: event.from ?? '',
    paid: { amount: '1000000000000000000', currency: '0x0000000000000000000000000000000000000000', decimals: 18 },
  };
  const price = { amount: '1.25', usd: 3_000, currency: '0x0000000000000000000000000000000000000000' };
  const start = performance.now();
  let size = 0;
  for (let i = 0; i < PURE_ROUNDS; i++) {
    const held = heldFor(event, previous);
    const profit = saleProfit(event, previous, price);
    const reply = renderAlert({
      event,
      collectionName: 'Moon Cats',
      tokens: [{ tokenId: '7', amount: '1' }],
      price: { amount: '1.25', symbol: 'ETH', usd: 3_000 },
      ...(held === undefined ? {} : { heldForMs: held }),
      ...(profit ? { profit } : {}),
      buyerHolds: { units: '2', isNew: false },
      whale: false,
    });
    size += reply.fields?.length ?? 0;
  }
  const perSale = ((performance.now() - start) * 1_000) / PURE_ROUNDS;
  console.log(
    `pure work per sale (held-for, profit, render with the lines): ${perSale.toFixed(2)} µs (${size} fields)`,
  );
}

console.log(load());
await client.close();
await devnet.close();
