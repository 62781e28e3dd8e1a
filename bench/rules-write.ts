// 200 people in 200 group chats each add 50 watch rules with /watch add, all at once: 10,000 rules
// through the real command engine, state store and alert pipeline (which re-indexes the rules on
// every saved change). Goal (issue 13): all 10,000 confirmed within 2 minutes, i.e. the store keeps
// up with people however large the file grows. Prints figures; asserts nothing.
import { stat } from 'node:fs/promises';
import type { ChatRef } from '../src/bot/command.ts';
import { startAlertHarness } from '../test/helpers/alert-harness.ts';

const PEOPLE = 200;
const RULES_EACH = 50;
const GOAL_MS = 120_000;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

const h = await startAlertHarness({ scale: 'full', blockIntervalMs: 0 });
const collections = [...(h.devnet.collections.devnet ?? []), ...(h.devnet.collections['devnet-l2'] ?? [])];
const kinds = ['sale', 'listing', 'offer', 'mint', 'transfer', 'sale,listing'];
const latencies: number[] = [];
let refused = 0;
let sizeSamples = 0;
let sizeTotal = 0;

const sampler = setInterval(() => {
  stat(h.store.file)
    .then((s) => {
      sizeTotal += s.size;
      sizeSamples++;
    })
    .catch(() => undefined);
}, 250);

const started = performance.now();
await Promise.all(
  Array.from({ length: PEOPLE }, async (_, person) => {
    const chat: ChatRef = { platform: 'telegram', id: `-100${person}`, kind: 'group' };
    const actor = { id: String(1_000 + person), name: `p${person}`, canManage: true };
    for (let i = 0; i < RULES_EACH; i++) {
      const collection = collections[(person + i) % collections.length];
      if (!collection) throw new Error('no collections on the local platform');
      const network = h.devnet.collections.devnet?.includes(collection) ? 'devnet' : 'devnet-l2';
      const line = `/watch add ${network}:${collection.address} ${kinds[i % kinds.length]} min=${(i % 7) + 1}`;
      const t0 = performance.now();
      const reply = await h.engine.runLine(line, chat, actor);
      latencies.push(performance.now() - t0);
      if (reply?.tone === 'error') refused++;
    }
  }),
);
const elapsed = performance.now() - started;
clearInterval(sampler);

const { writes } = h.store.writeStats;
const finalSize = (await stat(h.store.file)).size;
const meanSize = sizeSamples ? sizeTotal / sizeSamples : finalSize;
console.log(
  `${PEOPLE} people x ${RULES_EACH} rules: ${h.store.rules.length.toLocaleString('en-US')} rules saved, ${refused} refused, in ${(elapsed / 1000).toFixed(1)} s (${Math.round((PEOPLE * RULES_EACH) / (elapsed / 1000))} commands/s; goal: within ${GOAL_MS / 1000} s: ${elapsed < GOAL_MS ? 'met' : 'NOT met'})`,
);
console.log(
  `/watch add latency: p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms, max ${Math.max(...latencies).toFixed(0)} ms`,
);
console.log(
  `state file: ${writes} writes for ${PEOPLE * RULES_EACH} changes (${((PEOPLE * RULES_EACH) / Math.max(1, writes)).toFixed(1)} changes per write), final size ${(finalSize / 1e6).toFixed(2)} MB, about ${((writes * meanSize) / 1e9).toFixed(2)} GB written in all; RSS ${(process.memoryUsage().rss / 1e6).toFixed(0)} MB`,
);
await h.close();
