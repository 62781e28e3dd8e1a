// Builds and posts digests for 1,000 chats with 5 collections each, through the real DigestService,
// platform client, journal and dispatcher, on the local platform. Prints the time and the platform
// calls made: each distinct analytics filter must be fetched once per run.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { type AlertSink, Dispatcher } from '../src/alerts/delivery.ts';
import { CurrencyDirectory } from '../src/bot/currencies.ts';
import { startDevnet } from '../src/devnet/index.ts';
import { DigestService } from '../src/digests/digest-service.ts';
import { PlatformClient } from '../src/platform/client.ts';
import { DeliveryJournal } from '../src/store/journal.ts';
import { StateStore } from '../src/store/state.ts';

const CHATS = 1_000;
const PER_CHAT = 5;

const devnet = await startDevnet({ seed: 1 });
const calls = new Map<string, number>();
const platform = new PlatformClient({
  endpoints: devnet.endpoints,
  networks: devnet.networks,
  accessKey: devnet.accessKey,
  secretToken: devnet.secretToken,
  projectId: devnet.projectId,
  onCall: (report) => calls.set(report.operation, (calls.get(report.operation) ?? 0) + 1),
});
const dir = await mkdtemp(join(tmpdir(), 'floorwatch-bench-digests-'));
const store = await StateStore.open(join(dir, 'state.json'));
const journal = await DeliveryJournal.open(join(dir, 'deliveries.jsonl'));
let posted = 0;
const sink: AlertSink = {
  platform: 'telegram',
  maxBatch: 1,
  minIntervalMs: 0,
  send: async () => String(++posted),
  edit: async () => undefined,
};
const logger = pino({ level: 'silent' });
const dispatcher = new Dispatcher({ journal, sinks: new Map([['telegram', sink]]), logger });
const collections = Object.entries(devnet.collections).flatMap(([network, list]) =>
  list.filter((c) => !c.hostile).map((c) => ({ network, address: c.address, name: c.name })),
);
const chatKeys: string[] = [];
for (let i = 0; i < CHATS; i++) {
  const chatKey = `telegram:-${100_000 + i}`;
  chatKeys.push(chatKey);
  const picked = Array.from({ length: PER_CHAT }, (_, j) => collections[(i + j * 3) % collections.length]).filter(
    (c): c is NonNullable<typeof c> => c !== undefined,
  );
  await store.updateChat(chatKey, (s) => {
    s.digest = { hour: 9, minute: 0, timeZone: 'UTC', days: 7, collections: picked, setAt: '2026-01-01T00:00:00.000Z' };
  });
}
const distinctFilters = new Set(
  chatKeys.map((k) =>
    JSON.stringify(
      store
        .chat(k)
        .digest?.collections.map((c) => c.address)
        .sort(),
    ),
  ),
);
const service = new DigestService({
  platform,
  store,
  journal,
  dispatcher,
  currencies: new CurrencyDirectory(platform),
  logger,
  projectId: devnet.projectId,
});
calls.clear();
const started = performance.now();
await service.run(chatKeys, new Date());
const built = performance.now() - started;
await dispatcher.drained();
const total = performance.now() - started;
console.log(
  `digests: ${CHATS} chats x ${PER_CHAT} collections built and journaled in ${(built / 1000).toFixed(1)} s, all ${posted} posted in ${(total / 1000).toFixed(1)} s (target < 30 s: ${total < 30_000 ? 'met' : 'NOT met'})`,
);
console.log(
  `platform calls: WalletsTxnSentTotal ${calls.get('Analytics/WalletsTxnSentTotal') ?? 0}, DailyWalletTxnConversionRate ${calls.get('Analytics/DailyWalletTxnConversionRate') ?? 0} for ${distinctFilters.size} distinct filters; ListCollectibles ${calls.get('Marketplace/ListCollectibles') ?? 0} for ${collections.length} collections`,
);
await dispatcher.stop();
await journal.close();
await platform.close();
await devnet.close();
await rm(dir, { recursive: true, force: true });
