// Alert matching throughput: classify a transaction's logs, find the candidate rules of each event,
// then run the phase-2 checks (price, traits) against synthetic enrichment (no I/O).
//
// Then the same path with rendering (issue 5), with the pipeline's own functions: the matching rules
// of an event are grouped by destination (matchDestinations: a chat with several matching rules gets
// one message), and alertsFor renders the event once and gives each chat its message (a copy with
// the roles for chats that ping some). The chat converters (renderDiscord, renderTelegram) run when an
// adapter sends, one message at a time at the chat's pace: their cost per message is printed apart.
// Those figures are medians of several runs. Memory is printed
// after the index is built, and again after 5,000 transactions were rendered with it (made and dropped
// as a stream delivers them, so the bench's own data does not count).
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
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { CANONICAL_SIGNATURES, classifyTransaction, type EventName, TOPICS } from '../src/alerts/classify.ts';
import { type AlertDetails, alertsFor, renderAlert, type TokenDetails } from '../src/alerts/render.ts';
import {
  matchDestinations,
  type PriceInfo,
  passesPrice,
  passesTraitsAny,
  type TokenTrait,
} from '../src/alerts/rule-filters.ts';
import { type MatchingRule, RuleIndex } from '../src/alerts/rule-index.ts';
import type { ChainEvent } from '../src/alerts/types.ts';
import { renderDiscord } from '../src/chat/discord/render.ts';
import { renderTelegram } from '../src/chat/telegram/render.ts';
import { type AlertKind, type Destination, destinationKey, type WatchRule } from '../src/core/types.ts';
import type { EventLog } from '../src/platform/types.ts';
import { prng } from './_prng.ts';

// ---------------------------------------------------------------------------------------------
// Deterministic data

// Swappable so that the memory warm-up draws from its own sequence and leaves the bench's data as it was.
let source = prng(20261121);
const rand = (): number => source();
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

/** The rules as the store holds them: the rules of one chat share one destination object. */
function withSharedDestinations(rules: WatchRule[]): WatchRule[] {
  const shared = new Map<string, Destination>();
  for (const rule of rules) {
    const key = destinationKey(rule.destination);
    const destination = shared.get(key);
    if (destination) rule.destination = destination;
    else shared.set(key, rule.destination);
  }
  return rules;
}

/** One Discord rule in ten pings a role (decided by rule number: the random sequence is not touched). */
function withMentions(rules: WatchRule[]): WatchRule[] {
  for (const rule of rules) {
    const n = Number(rule.id.slice(1));
    if (rule.destination.platform === 'discord' && n % 10 === 0) rule.mentionRole = String(100_000_000_000 + n);
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

/** Traits of each token of an event, from the synthetic trait table. */
function traitsOfEvent(event: ChainEvent): TokenTrait[][] {
  return event.tokens.map((t) => traitTable[Number(t.tokenId) % 1000] as TokenTrait[]);
}

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
  return allCollections.filter((c) => index.watches(c.network, c.address));
}

/** A run over `transactions` of the collections `watchedBy` watches (default: the index's own). */
function bench(label: string, index: RuleIndex, transactions?: Transaction[], watchedBy = index): Bench {
  const contexts = new Map(
    watchedBy
      .networks()
      .map((network) => [network, { network, isCollection: (a: string) => watchedBy.watches(network, a) }]),
  );
  const txns = transactions ?? Array.from({ length: TRANSACTIONS }, () => makeTransaction(watchedCollections(index)));
  return { label, index, transactions: txns, contexts };
}

function contextOf(b: Bench, network: string): { network: string; isCollection: (a: string) => boolean } {
  return b.contexts.get(network) ?? { network, isCollection: () => false };
}

/** Phase 2 for one event: synthetic enrichment, then price and traits per candidate. Returns matches. */
function phase2(event: ChainEvent, candidates: readonly MatchingRule[]): number {
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
  const events: Array<{ event: ChainEvent; candidates: MatchingRule[] }> = [];
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

// ---------------------------------------------------------------------------------------------
// Rendering: one alert per matching destination, through the chat converters

/** What the Enricher would have fetched for an event (token metadata of at most 10 tokens, the order price). */
function detailsOf(event: ChainEvent, collectionName: string, price: PriceInfo): AlertDetails {
  const tokens = event.tokens.map((token, i): TokenDetails => {
    const details: TokenDetails = { tokenId: token.tokenId, amount: token.amount };
    if (i < 10) {
      details.name = `${collectionName} #${token.tokenId}`;
      details.image = `https://img.example/${event.network}/${event.collection}/${token.tokenId}.png`;
      details.traits = (traitTable[Number(token.tokenId) % 1000] as TokenTrait[]).map((t) => ({
        name: t.name,
        value: String(t.value),
      }));
    }
    return details;
  });
  const details: AlertDetails = { event, collectionName, tokens };
  if (event.orderIds.length > 0) {
    details.price = { amount: price.amount, symbol: 'WETH', ...(price.usd === undefined ? {} : { usd: price.usd }) };
    details.marketplace = 'Floorwatch Market';
  }
  return details;
}

interface Output {
  destinations: number;
  discord: number;
  telegram: number;
  /** Characters produced (keeps the converters' work observable). */
  chars: number;
}

/**
 * What the alert path does once an event is enriched (EventMatch.destinations, then alertsFor): phase
 * 2 grouped by destination (matchDestinations), then one message per chat from alertsFor (the event
 * rendered once; chats that ping roles get a copy with them). The chat converters (renderDiscord / renderTelegram) run later, per message, when the
 * adapters send, paced by the chat platforms' rate limits: their cost per message is printed apart.
 */
function renderEvent(event: ChainEvent, candidates: readonly MatchingRule[], out: Output): void {
  if (candidates.length === 0) return;
  const price = priceOf(event);
  const matched = matchDestinations(candidates, price, traitsOfEvent(event));
  if (matched.length === 0) return;
  const details = detailsOf(event, candidates[0]?.collectionName ?? event.collection, price);
  // What the pipeline builds per chat: the journal's NewDelivery (here, what the bench counts).
  alertsFor(details, matched, (destination, reply) => {
    out.destinations++;
    if (destination.platform === 'telegram') out.telegram++;
    else out.discord++;
    out.chars += (reply.title?.length ?? 0) + (reply.mentionRoles?.length ?? 0);
  });
}

interface RenderResult extends Stage, Output {}

/** classify, candidates, phase 2 and rendering of every transaction, for at least `seconds` of CPU. */
function fullRender(b: Bench, seconds: number): RenderResult {
  const out: Output = { destinations: 0, discord: 0, telegram: 0, chars: 0 };
  const stage = measure(seconds, () => {
    let events = 0;
    for (const { network, logs } of b.transactions) {
      for (const event of classifyTransaction(logs, contextOf(b, network)).events) {
        events++;
        renderEvent(event, b.index.candidates(event), out);
      }
    }
    return events;
  });
  return { ...stage, ...out };
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};

const RENDER_RUNS = 5;

/** Median events/s (CPU and wall-clock) of `runs`, with the messages per event. */
function describe(label: string, runs: readonly RenderResult[]): { rate: number; line: string } {
  const cpuRates = runs.map((r) => r.units / r.cpu);
  const units = runs.reduce((n, r) => n + r.units, 0);
  const perEvent = (f: (r: RenderResult) => number) => runs.reduce((n, r) => n + f(r), 0) / units;
  const rate = median(cpuRates);
  return {
    rate,
    line: `${label}: ${fmt(rate)} events/s (runs ${fmt(Math.min(...cpuRates))}-${fmt(Math.max(...cpuRates))}; wall-clock ${fmt(median(runs.map((r) => r.units / r.wall)))}/s; ${perEvent((r) => r.destinations).toFixed(2)} messages/event: ${perEvent((r) => r.discord).toFixed(2)} Discord + ${perEvent((r) => r.telegram).toFixed(2)} Telegram, ${fmt(rate * perEvent((r) => r.destinations))} messages rendered/s)`,
  };
}

/**
 * Medians over RENDER_RUNS runs, the two configurations interleaved so that machine noise hits them
 * alike. `after` runs once the timed runs are done (the memory figure), before the per-stage costs.
 */
function compareRender(title: string, big: Bench, small: Bench, options: { after?: () => void } = {}) {
  console.log(
    `${title} with rendering as the pipeline does (${RENDER_RUNS} runs each, medians; per CPU-second, wall-clock also shown):`,
  );
  const configs = [big, small];
  for (const b of configs) fullRender(b, 0.3);
  const runs = configs.map((): RenderResult[] => []);
  for (let i = 0; i < RENDER_RUNS; i++) {
    for (const [k, b] of configs.entries()) runs[k]?.push(fullRender(b, 0.6));
  }
  const described = configs.map((b, k) =>
    describe(`classify+match+render with ${b.label} rules`, runs[k] as RenderResult[]),
  );
  for (const d of described) console.log(d.line);
  const [bigRate, smallRate] = described.map((d) => d.rate) as [number, number];
  const perEvent = (k: number) => {
    const r = runs[k] as RenderResult[];
    return r.reduce((n, x) => n + x.destinations, 0) / r.reduce((n, x) => n + x.units, 0);
  };
  console.log(
    `ratio 100 rules / 100000 rules: ${(smallRate / bigRate).toFixed(2)}x with ${(perEvent(0) / Math.max(perEvent(1), 1e-9)).toFixed(1)}x the messages per event (targets: >= 20,000 events/s: ${bigRate >= 20_000 ? 'met' : 'NOT met'}; within 2x: ${smallRate / bigRate <= 2 ? 'met' : 'NOT met'})`,
  );
  options.after?.();
  console.log(`  per message, when the adapter sends it: ${renderStages(big)}`);
}

/** Cost of each rendering step per message, over the first 20,000 messages of the transactions (one per destination). */
function renderStages(b: Bench): string {
  const messages: Array<{ details: AlertDetails; platform: Destination['platform'] }> = [];
  for (const { network, logs } of b.transactions) {
    if (messages.length >= 20_000) break;
    for (const event of classifyTransaction(logs, contextOf(b, network)).events) {
      const candidates = b.index.candidates(event);
      if (candidates.length === 0) continue;
      const details = detailsOf(event, candidates[0]?.collectionName ?? event.collection, priceOf(event));
      const seen = new Set<string>();
      for (const rule of candidates) {
        const key = destinationKey(rule.destination);
        if (seen.has(key)) continue;
        seen.add(key);
        messages.push({ details, platform: rule.destination.platform });
      }
    }
  }
  if (messages.length === 0) return 'no messages';
  const replies = messages.map((m) => renderAlert(m.details));
  const discord = replies.filter((_, i) => messages[i]?.platform !== 'telegram');
  const telegram = replies.filter((_, i) => messages[i]?.platform === 'telegram');
  const alert = measure(0.4, () => {
    for (const m of messages) renderAlert(m.details);
    return messages.length;
  });
  const toDiscord = measure(0.4, () => {
    for (const reply of discord) renderDiscord([reply]);
    return discord.length;
  });
  const toTelegram = measure(0.4, () => {
    for (const reply of telegram) renderTelegram(reply);
    return telegram.length;
  });
  const us = (s: Stage) => ((s.cpu / s.units) * 1e6).toFixed(2);
  return `renderAlert ${us(alert)} µs/message, renderDiscord ${us(toDiscord)} µs/message, renderTelegram ${us(toTelegram)} µs/message`;
}

const TRANSACTIONS = 20_000;

const rssBefore = process.memoryUsage().rss;
const bigRules = withSharedDestinations(withMentions(makeRules(10_000, 10)));
const rssRules = process.memoryUsage().rss;
const t0 = process.hrtime.bigint();
const bigIndex = new RuleIndex(bigRules);
const buildMs = Number(process.hrtime.bigint() - t0) / 1e6;
const memory = process.memoryUsage();
const collectionCount = bigIndex.networks().reduce((n, network) => n + bigIndex.collectionCount(network), 0);
console.log(
  `rules: ${fmt(bigIndex.size)} across 10,000 chats and ${fmt(collectionCount)} collections on ${NETWORKS.length} networks, index built in ${buildMs.toFixed(0)} ms`,
);
console.log(
  `memory after building the index: rss ${mb(memory.rss)} (target < 250 MB; process before the rules ${mb(rssBefore)}, rules +${mb(rssRules - rssBefore)}, index +${mb(memory.rss - rssRules)}); heap used ${mb(memory.heapUsed)}`,
);

// Resident memory of a process that holds the 100,000 rules and their index and has rendered alerts:
// transactions are made and dropped in batches, as a stream delivers them, so none stay in memory.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const WARM_UP_TRANSACTIONS = 5_000;
{
  const saved = { source, txCounter, requestCounter };
  source = prng(7);
  const warm = bench('warm-up', bigIndex, []);
  const watched = watchedCollections(bigIndex);
  const out: Output = { destinations: 0, discord: 0, telegram: 0, chars: 0 };
  let events = 0;
  for (let done = 0; done < WARM_UP_TRANSACTIONS; done += 500) {
    for (const { network, logs } of Array.from({ length: 500 }, () => makeTransaction(watched))) {
      for (const event of classifyTransaction(logs, contextOf(warm, network)).events) {
        events++;
        renderEvent(event, bigIndex.candidates(event), out);
      }
    }
  }
  ({ source, txCounter, requestCounter } = saved);
  const warmed = process.memoryUsage();
  gc();
  const live = process.memoryUsage().heapUsed;
  console.log(
    `memory after building the index and rendering ${fmt(WARM_UP_TRANSACTIONS)} transactions (${fmt(events)} events, ${fmt(out.destinations)} messages) made and dropped as a stream delivers them: rss ${mb(warmed.rss)} (target < 250 MB: ${warmed.rss < 250 * 1024 * 1024 ? 'met' : 'NOT met'}); heap used ${mb(warmed.heapUsed)}, live heap after a full GC ${mb(live)}; the bench keeps its rule objects too (the index holds a compact copy of its own, as in the pipeline)`,
  );
}
console.log('events/s are per CPU-second of this process; wall-clock also shown');

const smallRules = withSharedDestinations(withMentions(makeRules(10, 10)));
const smallIndex = new RuleIndex(smallRules);
const realisticBig = bench('100000', bigIndex);
const realisticSmall = bench('100', smallIndex);
compare('realistic popularity:', realisticBig, realisticSmall);
compareRender('realistic popularity', realisticBig, realisticSmall, {
  after: () => {
    const rendered = process.memoryUsage();
    gc();
    console.log(
      `memory at the end of the timed rendering runs: rss ${mb(rendered.rss)}, heap used ${mb(rendered.heapUsed)}, live heap after a full GC ${mb(process.memoryUsage().heapUsed)} (this includes the bench's ${fmt(2 * TRANSACTIONS)} pre-made transactions and the 100-rule index; rss keeps the heap's high-water mark)`,
    );
  },
});

const smallBench = bench('100', smallIndex);
const isolated = new RuleIndex(
  withSharedDestinations([...smallRules, ...makeFiller(99_900, watchedCollections(smallIndex))]),
);
const isolatedBig = bench('100000', isolated, smallBench.transactions, smallIndex);
compare(
  'isolation (same transactions, same matching rules, 99,900 rules that cannot match added):',
  isolatedBig,
  smallBench,
);
compareRender('isolation', isolatedBig, smallBench);
