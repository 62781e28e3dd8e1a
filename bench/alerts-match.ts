// Alert matching throughput: classify a transaction's logs, find the candidate rules of each event,
// then run the phase-2 checks (price, traits) against synthetic enrichment (no rendering, no I/O).
//
// Two comparisons of 100,000 rules (10,000 chats) with 100 rules:
// - realistic: chats follow 1-3 collections each, chosen with a heavy popularity skew over 6,000
//   collections on 3 networks; half of the activity is on popular collections. Popular collections have
//   hundreds of watching rules, so an event matches many more rules with 100,000 rules than with 100:
//   that output (one delivery each) is real work, not index overhead.
// - isolation: the same transactions and the same 100 matching rules, plus 99,900 rules that cannot
//   match them (other collections; same collections with other token ids or wallets): the cost of
//   the rules that do not match.
// Throughput is counted per CPU-second of this process (robust to other load on the machine).
//
//   npm run bench -- alerts-match
import { CANONICAL_SIGNATURES, classifyTransaction, type EventName, TOPICS } from '../src/alerts/classify.ts';
import { type PriceInfo, passesPrice, passesTraitsAny, RuleIndex, type TokenTrait } from '../src/alerts/rule-index.ts';
import type { AlertKind, ChainEvent, WatchRule } from '../src/alerts/types.ts';
import type { EventLog } from '../src/platform/types.ts';

// ---------------------------------------------------------------------------------------------
// Deterministic data

function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const rand = prng(20261121);
const int = (n: number): number => Math.floor(rand() * n);
const pick = <T>(items: readonly T[]): T => items[int(items.length)] as T;
/** Skewed towards the start: a few popular items, a long tail. */
const skewed = <T>(items: readonly T[]): T => items[Math.floor(items.length * rand() ** 2.5)] as T;

const hex = (n: number, width: number): string => n.toString(16).padStart(width, '0');
const address = (kind: number, n: number): string => `0x${hex(kind, 8)}${hex(n, 32)}`;
const ZERO = `0x${'0'.repeat(40)}`;

const NETWORKS = ['polygon', 'base', 'arbitrum'];
const COLLECTIONS_PER_NETWORK = 2_000;
const collections = NETWORKS.map((network) =>
  Array.from({ length: COLLECTIONS_PER_NETWORK }, (_, i) => ({
    network,
    address: address(0xc0 + NETWORKS.indexOf(network), i),
    erc1155: i % 7 === 0,
  })),
);
const allCollections = collections.flat();
const wallets = Array.from({ length: 50_000 }, (_, i) => address(0xa0, i));
const MARKET = address(0x3a, 1);
const CURRENCY = address(0xe2, 1);
const TRAITS = [
  ['Background', ['Blue', 'Red', 'Green', 'Gold', 'Black']],
  ['Eyes', ['Laser', 'Sleepy', 'Wide', 'Closed']],
  ['Hat', ['None', 'Crown', 'Cap', 'Halo']],
] as const;

const KIND_MIXES: ReadonlyArray<readonly [number, AlertKind[]]> = [
  [0.45, ['sale']],
  [0.65, ['sale', 'listing']],
  [0.75, ['listing', 'offer']],
  [0.85, ['sale', 'listing', 'offer', 'mint', 'transfer', 'burn', 'cancel']],
  [0.95, ['mint', 'transfer', 'burn']],
  [1, ['offer', 'cancel']],
];

let ruleCounter = 0;
let chatCounter = 0;

function makeRules(chats: number, perChat: number): WatchRule[] {
  const rules: WatchRule[] = [];
  for (let n = 0; n < chats; n++) {
    const c = chatCounter++;
    // A chat follows a community: one to three collections.
    const followed = Array.from({ length: 1 + int(3) }, () => skewed(allCollections));
    for (let r = 0; r < perChat; r++) {
      const collection = pick(followed);
      const mixAt = rand();
      const kinds = (KIND_MIXES.find(([p]) => mixAt < p) ?? [1, ['sale']])[1];
      const rule: WatchRule = {
        id: `r${++ruleCounter}`,
        destination: { platform: c % 3 === 0 ? 'telegram' : 'discord', chatId: `chat-${c}` },
        network: collection.network,
        collection: collection.address,
        collectionName: `Collection ${collection.address.slice(-4)}`,
        kinds,
        paused: rand() < 0.03,
        createdBy: `discord:${c}`,
        createdAt: '2026-11-01T00:00:00Z',
      };
      const filter = rand();
      if (filter < 0.08) rule.tokenIds = Array.from({ length: 1 + int(5) }, () => String(int(10_000)));
      else if (filter < 0.13) rule.wallets = Array.from({ length: 1 + int(3) }, () => pick(wallets));
      else if (filter < 0.16) {
        rule.tokenIds = [String(int(10_000))];
        rule.wallets = [pick(wallets)];
      }
      if (rand() < 0.15) {
        rule.minPrice =
          rand() < 0.5 ? { value: String(1 + int(2000)), usd: true } : { value: `0.${1 + int(99)}`, usd: false };
      }
      if (rand() < 0.08) {
        const [name, values] = pick(TRAITS);
        rule.traits = [{ name, value: pick(values) }];
      }
      rules.push(rule);
    }
  }
  return rules;
}

/** Rules that the transactions made for `collections` cannot match. */
function makeFiller(count: number, collections: ReadonlyArray<(typeof allCollections)[number]>): WatchRule[] {
  const taken = new Set(collections.map((c) => c.address));
  const others = allCollections.filter((c) => !taken.has(c.address));
  const rules = makeRules(Math.ceil(count / 10), 10).slice(0, count);
  return rules.map((rule, i) => {
    const { tokenIds: _t, wallets: _w, ...plain } = rule;
    if (i % 3 === 0) {
      const other = skewed(others);
      return { ...plain, network: other.network, collection: other.address };
    }
    const same = pick(collections);
    const base = { ...plain, network: same.network, collection: same.address };
    if (i % 3 === 1) return { ...base, tokenIds: [String(1_000_000 + int(1_000_000))] };
    return { ...base, wallets: [address(0xf1, int(1_000_000))] };
  });
}

// ---------------------------------------------------------------------------------------------
// Transactions as the indexer stream delivers them

const NAMES: Record<EventName, string[]> = {
  Transfer: ['from', 'to', 'tokenId'],
  TransferSingle: ['operator', 'from', 'to', 'id', 'value'],
  TransferBatch: ['_operator', '_from', '_to', '_ids', '_values'],
  RequestCreated: [
    'requestId',
    'creator',
    'tokenContract',
    'tokenId',
    'isListing',
    'quantity',
    'currency',
    'pricePerToken',
    'expiry',
  ],
  RequestAccepted: ['requestId', 'buyer', 'tokenContract', 'receiver', 'quantity', 'quantityRemaining'],
  RequestCancelled: ['requestId', 'tokenContract'],
};
const TYPES = Object.fromEntries(
  (Object.keys(CANONICAL_SIGNATURES) as EventName[]).map((e) => [
    e,
    CANONICAL_SIGNATURES[e].slice(e.length + 1, -1).split(','),
  ]),
) as Record<EventName, string[]>;

let txCounter = 0;
let requestCounter = 0;

interface Transaction {
  network: string;
  logs: EventLog[];
}

function makeTransaction(watched: ReadonlyArray<(typeof allCollections)[number]>): Transaction {
  txCounter++;
  const collection = rand() < 0.5 ? skewed(watched) : pick(watched);
  const txnHash = `0x${hex(txCounter, 64)}`;
  const blockNumber = 5_000_000 + Math.floor(txCounter / 40);
  const blockHash = `0x${hex(blockNumber, 64)}`;
  const sender = pick(wallets);
  const logs: EventLog[] = [];
  const log = (event: EventName, contract: string, values: string[], contractType?: string): void => {
    const entry: EventLog = {
      uid: `${blockHash}:${txnHash}:${logs.length}`,
      blockNumber,
      blockHash,
      contractAddress: contract,
      txnHash,
      txnIndex: txCounter % 40,
      txnLogIndex: logs.length,
      ts: '2026-11-21T15:00:00Z',
      txnInfo: { from: sender, to: MARKET, value: '0' },
      event: { topicHash: TOPICS[event], eventSig: event, types: TYPES[event], names: NAMES[event], values },
    };
    if (contractType) entry.contractType = contractType;
    logs.push(entry);
  };
  const moveToken = (from: string, to: string, tokenId: string): void => {
    if (collection.erc1155) log('TransferSingle', collection.address, [MARKET, from, to, tokenId, String(1 + int(3))]);
    else log('Transfer', collection.address, [from, to, tokenId], 'ERC721');
  };
  const token = (): string => String(int(10_000));
  const price = (): string => `${1 + int(5000)}${'0'.repeat(15)}`;
  const roll = rand();
  if (roll < 0.35) {
    // Sale: payments in an ERC-20, the token(s) moving, the accepted request(s). 15% are sweeps.
    const buyer = sender;
    const count = rand() < 0.15 ? 2 + int(9) : 1;
    for (let i = 0; i < count; i++) {
      const seller = pick(wallets);
      log('Transfer', CURRENCY, [buyer, seller, price()], 'ERC20');
      log('Transfer', CURRENCY, [buyer, MARKET, '25000000000000000'], 'ERC20');
      moveToken(seller, buyer, token());
      log('RequestAccepted', MARKET, [String(++requestCounter), buyer, collection.address, buyer, '1', '0']);
    }
  } else if (roll < 0.7) {
    const isListing = roll < 0.6;
    const count = rand() < 0.1 ? 2 + int(4) : 1;
    for (let i = 0; i < count; i++) {
      log('RequestCreated', MARKET, [
        String(++requestCounter),
        sender,
        collection.address,
        token(),
        isListing ? 'true' : 'false',
        '1',
        CURRENCY,
        price(),
        '1900000000',
      ]);
    }
  } else if (roll < 0.8) {
    const count = 1 + int(3);
    for (let i = 0; i < count; i++) moveToken(sender, pick(wallets), token());
  } else if (roll < 0.88) {
    const count = 1 + int(5);
    if (collection.erc1155) {
      const ids = Array.from({ length: count }, token);
      log('TransferBatch', collection.address, [
        MARKET,
        ZERO,
        sender,
        JSON.stringify(ids),
        JSON.stringify(ids.map(() => '1')),
      ]);
    } else for (let i = 0; i < count; i++) moveToken(ZERO, sender, token());
  } else if (roll < 0.92) {
    moveToken(sender, ZERO, token());
  } else {
    log('RequestCancelled', MARKET, [String(1 + int(requestCounter + 1)), collection.address]);
  }
  return { network: collection.network, logs };
}

// ---------------------------------------------------------------------------------------------
// Synthetic enrichment (what the pipeline fetches and caches): price of the event, traits per token

const traitTable: TokenTrait[][] = Array.from({ length: 1000 }, (_, i) =>
  TRAITS.map(([name, values]) => ({ name, value: values[i % values.length] as string })),
);

function priceOf(event: ChainEvent): PriceInfo {
  const seed = event.orderIds.length > 0 ? Number(event.orderIds[0]) : event.tokens.length;
  const amount = `${seed % 50}.${String(seed % 1000).padStart(3, '0')}`;
  return { amount, usd: (seed % 50) * 3120.5 + (seed % 1000) * 3.1205 };
}

interface Stage {
  units: number;
  /** Process CPU seconds (user + system): robust to other processes sharing the machine. */
  cpu: number;
  wall: number;
}

/** Repeats `body` (which returns how many units it processed) for at least `minSeconds` of CPU. */
function measure(minSeconds: number, body: () => number): Stage {
  const cpu0 = process.cpuUsage();
  const wall0 = process.hrtime.bigint();
  let units = 0;
  let cpu = 0;
  while (cpu < minSeconds) {
    units += body();
    const used = process.cpuUsage(cpu0);
    cpu = (used.user + used.system) / 1e6;
  }
  return { units, cpu, wall: Number(process.hrtime.bigint() - wall0) / 1e9 };
}

interface Bench {
  label: string;
  index: RuleIndex;
  transactions: Transaction[];
  contexts: Map<string, { network: string; isCollection: (a: string) => boolean }>;
}

function watchedCollections(index: RuleIndex): Array<(typeof allCollections)[number]> {
  const watched = index.collectionsByNetwork();
  return allCollections.filter((c) => watched.get(c.network)?.has(c.address));
}

/** A run over `transactions` of the collections `watchedBy` watches (default: the index's own). */
function bench(label: string, index: RuleIndex, transactions?: Transaction[], watchedBy = index): Bench {
  const watched = watchedBy.collectionsByNetwork();
  const contexts = new Map(
    [...watched].map(([network, set]) => [network, { network, isCollection: (a: string) => set.has(a) }]),
  );
  const txns = transactions ?? Array.from({ length: TRANSACTIONS }, () => makeTransaction(watchedCollections(index)));
  return { label, index, transactions: txns, contexts };
}

function contextOf(b: Bench, network: string): { network: string; isCollection: (a: string) => boolean } {
  return b.contexts.get(network) ?? { network, isCollection: () => false };
}

/** Phase 2 for one event: synthetic enrichment, then price and traits per candidate. Returns matches. */
function phase2(event: ChainEvent, candidates: readonly WatchRule[]): number {
  if (candidates.length === 0) return 0;
  const price = priceOf(event);
  let traits: TokenTrait[][] | undefined;
  let matches = 0;
  for (const rule of candidates) {
    if (!passesPrice(rule, price)) continue;
    if (rule.traits) {
      traits ??= event.tokens.map((t) => traitTable[Number(t.tokenId) % 1000] as TokenTrait[]);
      if (!passesTraitsAny(rule, traits)) continue;
    }
    matches++;
  }
  return matches;
}

interface Result extends Stage {
  candidates: number;
  matches: number;
}

/** The whole path of each transaction: classify, candidates, phase 2. */
function full(b: Bench, seconds: number): Result {
  let candidates = 0;
  let matches = 0;
  const stage = measure(seconds, () => {
    let events = 0;
    for (const { network, logs } of b.transactions) {
      for (const event of classifyTransaction(logs, contextOf(b, network)).events) {
        events++;
        const found = b.index.candidates(event);
        candidates += found.length;
        matches += phase2(event, found);
      }
    }
    return events;
  });
  return { ...stage, candidates, matches };
}

/** Each stage apart, over the events of the transactions classified once. */
function stages(b: Bench): string {
  const events: Array<{ event: ChainEvent; candidates: WatchRule[] }> = [];
  for (const { network, logs } of b.transactions) {
    for (const event of classifyTransaction(logs, contextOf(b, network)).events) {
      events.push({ event, candidates: b.index.candidates(event) });
    }
  }
  const classify = measure(0.5, () => {
    let n = 0;
    for (const { network, logs } of b.transactions) n += classifyTransaction(logs, contextOf(b, network)).events.length;
    return n;
  });
  const lookup = measure(0.5, () => {
    for (const { event } of events) b.index.candidates(event);
    return events.length;
  });
  const checks = measure(0.5, () => {
    for (const { event, candidates } of events) phase2(event, candidates);
    return events.length;
  });
  return `classify ${rate(classify)}/s, candidates ${rate(lookup)}/s, phase 2 ${rate(checks)}/s`;
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
const mb = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
const rate = (s: Stage): string => fmt(s.units / s.cpu);

function compare(title: string, big: Bench, small: Bench): void {
  console.log(title);
  for (const b of [big, small]) full(b, 0.3);
  const results: Result[] = [];
  for (const b of [big, small]) {
    const r = full(b, 2);
    results.push(r);
    console.log(
      `classify+match with ${b.label} rules: ${rate(r)} events/s (wall-clock ${fmt(r.units / r.wall)}/s; ${(r.candidates / r.units).toFixed(2)} candidates/event, ${(r.matches / r.units).toFixed(2)} matches/event)`,
    );
  }
  const [b, s] = results as [Result, Result];
  console.log(
    `ratio 100 rules / 100000 rules: ${(s.units / s.cpu / (b.units / b.cpu)).toFixed(2)}x (targets: >= 20,000 events/s, within 2x)`,
  );
  for (const x of [big, small]) console.log(`  stages with ${x.label} rules: ${stages(x)}`);
}

const TRANSACTIONS = 20_000;

const rssBefore = process.memoryUsage().rss;
const bigRules = makeRules(10_000, 10);
const rssRules = process.memoryUsage().rss;
const t0 = process.hrtime.bigint();
const bigIndex = new RuleIndex(bigRules);
const buildMs = Number(process.hrtime.bigint() - t0) / 1e6;
const memory = process.memoryUsage();
const collectionCount = [...bigIndex.collectionsByNetwork().values()].reduce((n, set) => n + set.size, 0);
console.log(
  `rules: ${fmt(bigIndex.size)} across 10,000 chats and ${fmt(collectionCount)} collections on ${NETWORKS.length} networks, index built in ${buildMs.toFixed(0)} ms`,
);
console.log(
  `memory after building the index: rss ${mb(memory.rss)} (target < 250 MB; process before the rules ${mb(rssBefore)}, rules +${mb(rssRules - rssBefore)}, index +${mb(memory.rss - rssRules)}); heap used ${mb(memory.heapUsed)}`,
);
console.log('events/s are per CPU-second of this process; wall-clock also shown');

const smallRules = makeRules(10, 10);
const smallIndex = new RuleIndex(smallRules);
compare('realistic popularity:', bench('100000', bigIndex), bench('100', smallIndex));

const smallBench = bench('100', smallIndex);
const isolated = new RuleIndex([...smallRules, ...makeFiller(99_900, watchedCollections(smallIndex))]);
compare(
  'isolation (same transactions, same matching rules, 99,900 rules that cannot match added):',
  bench('100000', isolated, smallBench.transactions, smallIndex),
  smallBench,
);
