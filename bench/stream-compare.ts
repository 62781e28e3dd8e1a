// stream-compare: our SubscribeEvents reader against the official one (@0xsequence/indexer), on the same bytes.
//
// One local HTTP server on 127.0.0.1 (a child process, so that its CPU is not counted as the readers')
// serves SubscribeEvents as NDJSON: a heartbeat at open, then LOGS `{"log":{...}}` lines of 1.2-2 KB shaped
// like wire-protocol.md §4.2 and devnet/wire.ts (decoded ERC-721 Transfer, ERC-1155 TransferSingle and URI,
// marketplace RequestCreated / RequestAccepted / RequestCancelled, with raw topics and data; some carry
// multi-byte names), a blank heartbeat line now and then, written in chunks of random size that cut lines,
// keys and characters anywhere. Every request gets the same bytes (seeded PRNG).
//
// Each round runs each reader once, one after the other (A B C, then C B A in the next round, so ours and
// the official one take turns going first), after a warm-up round that is not counted. For each run: logs/s
// (wall) and CPU per log (process.cpuUsage, user + system, so GC threads count; the kernel's part is shown
// too). Prints each reader's medians and ranges, the ratios of ours and the official one's runs of each
// round (median and range), and whether our reader takes at most 1/GOAL of the official one's CPU per log.
// A run is aborted after RUN_TIMEOUT_MS and no round starts after DEADLINE_MS.
//
// Each round also runs, on the same bytes, a bare reader: the floor of any reader that hands out every line
// parsed whole over this HTTP client (undici, as under both readers; lines found by a byte search, each
// decoded and JSON.parse'd, nothing else). The official reader's CPU over the bare one's, per round, is
// about the most any such reader can reach against it on this machine; how much ours costs above the bare
// one is printed too, and JSON.parse alone (each line decoded and parsed in this process, no socket).
//
//   npx tsx bench/stream-compare.ts [--logs 40000] [--rounds 5] [--ascii] [--only ours|official|bare]
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { SequenceIndexer } from '@0xsequence/indexer';
import { Pool } from 'undici';
import { PlatformClient } from '../src/platform/index.ts';
import { prng } from './_prng.ts';

const GOAL = 2;
/** A run that takes longer than this is aborted, and the benchmark fails. */
const RUN_TIMEOUT_MS = 60_000;
/** No round starts after this; the figures are of the rounds run until then. */
const DEADLINE_MS = 300_000;
const MIN_LINE = 1_200;
const MAX_LINE = 2_000;
const MIN_CHUNK = 1_024;
const MAX_CHUNK = 96 * 1024;
const HEARTBEAT_EVERY = 5_000;
const SEED = 20250615;

function argument(name: string, fallback: number, max: number): number {
  const at = process.argv.indexOf(`--${name}`);
  const value = at === -1 ? fallback : Number(process.argv[at + 1]);
  if (!Number.isInteger(value) || value < 1 || value > max) {
    console.error(`--${name} takes a whole number from 1 to ${max}`);
    process.exit(2);
  }
  return value;
}

const LOGS = argument('logs', 40_000, 1_000_000);
const ROUNDS = argument('rounds', 5, 50);
const ASCII = process.argv.includes('--ascii');
/** `--only ours|official|bare` runs one reader (for profiling with --cpu-prof); no comparison then. */
const ONLY = ((): 'ours' | 'official' | 'bare' | undefined => {
  const at = process.argv.indexOf('--only');
  if (at === -1) return undefined;
  const name = process.argv[at + 1];
  if (name === 'ours' || name === 'official' || name === 'bare') return name;
  console.error('--only takes ours, official or bare');
  process.exit(2);
})();

// ---------------------------------------------------------------------------------------------------------
// The server (child process)

interface EventShape {
  name: string;
  weight: number;
  topic: string;
  sig: string;
  contractType: string;
  types: string[];
  names: string[];
  /** Decoded values, raw topics after topic0, and the ABI-encoded data words. */
  make(r: Random): { values: string[]; topics: string[]; words: string[] };
}

interface Random {
  pick<T>(items: readonly T[]): T;
  int(max: number): number;
  hex(chars: number): string;
}

const word = (hex: string): string => hex.replace(/^0x/, '').padStart(64, '0');
const wordOf = (n: number | bigint): string => n.toString(16).padStart(64, '0');

/**
 * Names in URI values. `--ascii` keeps them ASCII: then no line has multi-byte text, and the official
 * reader, which decodes whole chunks, keeps one-byte strings (JSON.parse reads those faster).
 */
const LABELS = ASCII
  ? ['Drachen', 'Dragon', 'Doragon', 'Wyvern', 'Basilisk', 'Lunnyy kot', 'Fenix']
  : ['Drachen Ü', 'Dragon 🐉', 'ドラゴン', 'Wyvern', 'Basilisk', 'Лунный кот', 'Fénix ñ'];

function eventShapes(addresses: readonly string[], contracts: readonly string[]): EventShape[] {
  return [
    {
      name: 'Transfer',
      weight: 0.34,
      topic: '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef',
      sig: 'Transfer(address indexed from,address indexed to,uint256 indexed tokenId)',
      contractType: 'ERC721',
      types: ['address', 'address', 'uint256'],
      names: ['from', 'to', 'tokenId'],
      make: (r) => {
        const [from, to, id] = [r.pick(addresses), r.pick(addresses), r.int(100_000)];
        return { values: [from, to, String(id)], topics: [word(from), word(to), wordOf(id)], words: [] };
      },
    },
    {
      name: 'TransferSingle',
      weight: 0.22,
      topic: '0xc3d58168c5ae7397731d063d5bbf3d657854427343f4c083240f7aacaa2d0f62',
      sig: 'TransferSingle(address indexed operator,address indexed from,address indexed to,uint256 id,uint256 value)',
      contractType: 'ERC1155',
      types: ['address', 'address', 'address', 'uint256', 'uint256'],
      names: ['operator', 'from', 'to', 'id', 'value'],
      make: (r) => {
        const [operator, from, to] = [r.pick(addresses), r.pick(addresses), r.pick(addresses)];
        const [id, amount] = [r.int(1_000), 1 + r.int(20)];
        return {
          values: [operator, from, to, String(id), String(amount)],
          topics: [word(operator), word(from), word(to)],
          words: [wordOf(id), wordOf(amount)],
        };
      },
    },
    {
      name: 'URI',
      weight: 0.06,
      topic: '0x6bb7ff708619ba0610cba295a58592e0451dee2622938c8755667688daf3529b',
      sig: 'URI(string value,uint256 indexed id)',
      contractType: 'ERC1155',
      types: ['string', 'uint256'],
      names: ['value', 'id'],
      make: (r) => {
        const id = r.int(1_000);
        const uri = `https://meta.example/${r.pick(LABELS)}/${id}.json`;
        const bytes = Buffer.from(uri, 'utf8').toString('hex');
        return {
          values: [uri, String(id)],
          topics: [wordOf(id)],
          words: [wordOf(32), wordOf(bytes.length / 2), bytes.padEnd(Math.ceil(bytes.length / 64) * 64, '0')],
        };
      },
    },
    {
      name: 'RequestCreated',
      weight: 0.22,
      topic: '0xb67ee55b059861d68b3b5640ee51bde6a5d9d849c6ecdb610663cbd4290bdfd5',
      sig: 'RequestCreated(uint256 indexed requestId,address indexed creator,address indexed tokenContract,uint256 tokenId,bool isListing,uint256 quantity,address currency,uint256 pricePerToken,uint256 expiry)',
      contractType: 'UNKNOWN',
      types: ['uint256', 'address', 'address', 'uint256', 'bool', 'uint256', 'address', 'uint256', 'uint256'],
      names: [
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
      make: (r) => {
        const request = r.int(1_000_000);
        const [creator, token, currency] = [r.pick(addresses), r.pick(contracts), r.pick(contracts)];
        const tokenId = r.int(100_000);
        const listing = r.int(2);
        const quantity = 1 + r.int(5);
        const price = BigInt(1 + r.int(10_000)) * 10n ** 15n;
        const expiry = 1_760_000_000 + r.int(10_000_000);
        return {
          values: [
            String(request),
            creator,
            token,
            String(tokenId),
            listing ? 'true' : 'false',
            String(quantity),
            currency,
            String(price),
            String(expiry),
          ],
          topics: [wordOf(request), word(creator), word(token)],
          words: [wordOf(tokenId), wordOf(listing), wordOf(quantity), word(currency), wordOf(price), wordOf(expiry)],
        };
      },
    },
    {
      name: 'RequestAccepted',
      weight: 0.1,
      topic: '0x146c7c3a67244cf406ca437a82b2bf587bc02b628b63659c73b4295b8b00e76f',
      sig: 'RequestAccepted(uint256 indexed requestId,address indexed buyer,address indexed tokenContract,address receiver,uint256 quantity,uint256 quantityRemaining)',
      contractType: 'UNKNOWN',
      types: ['uint256', 'address', 'address', 'address', 'uint256', 'uint256'],
      names: ['requestId', 'buyer', 'tokenContract', 'receiver', 'quantity', 'quantityRemaining'],
      make: (r) => {
        const request = r.int(1_000_000);
        const [buyer, token, receiver] = [r.pick(addresses), r.pick(contracts), r.pick(addresses)];
        const [quantity, remaining] = [1 + r.int(3), r.int(3)];
        return {
          values: [String(request), buyer, token, receiver, String(quantity), String(remaining)],
          topics: [wordOf(request), word(buyer), word(token)],
          words: [word(receiver), wordOf(quantity), wordOf(remaining)],
        };
      },
    },
    {
      name: 'RequestCancelled',
      weight: 0.06,
      topic: '0xe0d7665e06e7db1fc500d66d4e3898d1d4a5533d7efe54b352fcdaa177c22783',
      sig: 'RequestCancelled(uint256 indexed requestId,address indexed tokenContract)',
      contractType: 'UNKNOWN',
      types: ['uint256', 'address'],
      names: ['requestId', 'tokenContract'],
      make: (r) => {
        const request = r.int(1_000_000);
        const token = r.pick(contracts);
        return { values: [String(request), token], topics: [wordOf(request), word(token)], words: [] };
      },
    },
  ];
}

/** The whole answer body: heartbeat, LOGS lines with a heartbeat every {@link HEARTBEAT_EVERY}, cut into chunks. */
function buildPayload(): { chunks: Buffer[]; bytes: number; minLine: number; maxLine: number; multiByte: number } {
  const random = prng(SEED);
  const r: Random = {
    pick: (items) => items[Math.floor(random() * items.length)] as (typeof items)[number],
    int: (max) => Math.floor(random() * max),
    hex: (chars) => {
      let out = '0x';
      for (let i = 0; i < chars; i++) out += '0123456789abcdef'[Math.floor(random() * 16)];
      return out;
    },
  };
  const hashes = Array.from({ length: 4_096 }, () => r.hex(64));
  const addresses = Array.from({ length: 1_024 }, () => r.hex(40));
  const contracts = addresses.slice(0, 32);
  const shapes = eventShapes(addresses, contracts);
  const chooseShape = (): EventShape => {
    let x = random();
    for (const shape of shapes) {
      x -= shape.weight;
      if (x < 0) return shape;
    }
    return shapes[0] as EventShape;
  };

  const lines: Buffer[] = [Buffer.from('\n')];
  let minLine = Number.POSITIVE_INFINITY;
  let maxLine = 0;
  let multiByte = 0;
  for (let i = 1; i <= LOGS; i++) {
    const shape = chooseShape();
    const { values, topics, words } = shape.make(r);
    const block = 61_000_000 + Math.floor(i / 40);
    const txn = r.pick(hashes);
    const head =
      `{"log":{"id":${i},"uid":"137-${txn.slice(2, 18)}-${i % 7}","type":"BLOCK_ADDED","blockNumber":${block},` +
      `"blockHash":"${r.pick(hashes)}"`;
    const middle =
      `,"contractAddress":"${r.pick(contracts)}","contractType":"${shape.contractType}","txnHash":"${txn}",` +
      `"txnIndex":${i % 97},"txnLogIndex":${i % 7},"logDataType":"${shape.name.startsWith('Transfer') ? 'TOKEN_TRANSFER' : 'EVENT'}",` +
      `"ts":"2025-06-01T12:${String(Math.floor(i / 60) % 60).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}Z"`;
    const tail =
      `,"rawLog":{"topics":${JSON.stringify([shape.topic, ...topics.map((t) => `0x${t}`)])},"data":"0x${words.join('')}"},` +
      `"event":{"topicHash":"${shape.topic}","eventSig":${JSON.stringify(shape.sig)},"types":${JSON.stringify(shape.types)},` +
      `"names":${JSON.stringify(shape.names)},"values":${JSON.stringify(values)}}}}\n`;
    // parentBlockHash and txnInfo are omitempty on the wire: a line carries them when they fit the size range.
    const parent = `,"parentBlockHash":"${r.pick(hashes)}"`;
    const info = `,"txnInfo":{"from":"${r.pick(addresses)}","to":"${r.pick(contracts)}","value":"${r.int(3) === 0 ? `${r.int(10 ** 9)}000000000` : '0'}"}`;
    const fits = (text: string) => Buffer.byteLength(text) <= MAX_LINE;
    let text = head + middle + tail;
    if (fits(head + parent + middle + tail)) text = head + parent + middle + tail;
    if (fits(text.slice(0, -tail.length) + info + tail)) text = text.slice(0, -tail.length) + info + tail;
    const short = MIN_LINE - Buffer.byteLength(text);
    if (short > 0) text = `${text.slice(0, -3)},"removed":false,"extraData":"${r.hex(short + 24).slice(2)}"}}\n`;
    const line = Buffer.from(text, 'utf8');
    if (line.length > MAX_LINE) throw new Error(`line ${i} is ${line.length} bytes, more than ${MAX_LINE}`);
    if (line.length !== text.length) multiByte++;
    minLine = Math.min(minLine, line.length);
    maxLine = Math.max(maxLine, line.length);
    lines.push(line);
    if (i % HEARTBEAT_EVERY === 0) lines.push(Buffer.from('\n'));
  }
  const all = Buffer.concat(lines);
  const chunks: Buffer[] = [];
  for (let at = 0; at < all.length; ) {
    const size = MIN_CHUNK + Math.floor(random() * (MAX_CHUNK - MIN_CHUNK));
    chunks.push(all.subarray(at, at + size));
    at += size;
  }
  return { chunks, bytes: all.length, minLine, maxLine, multiByte };
}

interface Ready {
  port: number;
  bytes: number;
  minLine: number;
  maxLine: number;
  multiByte: number;
}

function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

async function serve(): Promise<void> {
  const payload = buildPayload();
  const server = createServer(async (req, res) => {
    for await (const _ of req) {
      // The filter body is not needed.
    }
    if (req.url !== '/rpc/Indexer/SubscribeEvents') {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"error":"WebrpcBadRoute","code":-2,"msg":"bad route","status":404}');
      return;
    }
    res.writeHead(200, {
      'content-type': 'application/x-ndjson',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
    });
    for (const chunk of payload.chunks) {
      if (res.destroyed) return;
      if (!res.write(chunk)) await drained(res);
    }
    res.end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const ready: Ready = {
    port,
    bytes: payload.bytes,
    minLine: payload.minLine,
    maxLine: payload.maxLine,
    multiByte: payload.multiByte,
  };
  process.send?.(ready);
  process.on('disconnect', () => {
    server.closeAllConnections();
    server.close();
  });
}

// ---------------------------------------------------------------------------------------------------------
// The readers (parent process)

interface Run {
  logs: number;
  wallMs: number;
  cpuUs: number;
  /** The kernel's part of {@link cpuUs} (socket reads). */
  systemUs: number;
  /** Sum of block numbers and decoded value counts, to check both readers saw the same records. */
  checksum: number;
}

const FILTER = { contractAddresses: ['0x0000000000000000000000000000000000000001'] };

async function measure(read: (signal: AbortSignal) => Promise<{ logs: number; checksum: number }>): Promise<Run> {
  const signal = AbortSignal.timeout(RUN_TIMEOUT_MS);
  const cpu = process.cpuUsage();
  const started = performance.now();
  const { logs, checksum } = await read(signal);
  const wallMs = performance.now() - started;
  const used = process.cpuUsage(cpu);
  if (signal.aborted) throw new Error(`a run took longer than ${RUN_TIMEOUT_MS / 1000} s`);
  return { logs, wallMs, cpuUs: used.user + used.system, systemUs: used.system, checksum };
}

type Reader = (signal: AbortSignal) => Promise<{ logs: number; checksum: number }>;

function ours(client: PlatformClient): Reader {
  return async (signal) => {
    let logs = 0;
    let checksum = 0;
    let bad = 0;
    // As the alert pipeline reads it (src/alerts/streams.ts): the logs that arrived together, as a batch.
    for await (const batch of client.indexer.subscribeEventBatches(
      { network: 'polygon', filter: FILTER },
      { signal, reconnect: false, badLineReportMs: 0, onBadLine: () => bad++ },
    )) {
      for (const log of batch) {
        logs++;
        checksum += log.blockNumber + (log.event?.values.length ?? 0);
      }
    }
    if (bad > 0) throw new Error(`our reader skipped ${bad} lines`);
    return { logs, checksum };
  };
}

function official(base: string): Reader {
  const indexer = new SequenceIndexer(base, 'bench-access-key');
  return (signal) =>
    new Promise((resolve, reject) => {
      let logs = 0;
      let checksum = 0;
      indexer.subscribeEvents(
        { filter: FILTER },
        {
          signal,
          onMessage: ({ log }) => {
            logs++;
            checksum += log.blockNumber + (log.event?.values.length ?? 0);
          },
          onError: (error) => reject(error),
          onClose: () => resolve({ logs, checksum }),
        },
      );
    });
}

/**
 * The floor: the least a reader that hands out every line parsed whole can do over this HTTP client. One
 * undici request (undici is the HTTP client under both readers), lines found by a byte search, each decoded
 * and JSON.parse'd, nothing normalized, queued or kept, no heartbeat, no errors handled.
 */
function bare(pool: Pool): Reader {
  return async (signal) => {
    const response = await pool.request({
      path: '/rpc/Indexer/SubscribeEvents',
      method: 'POST',
      body: JSON.stringify({ filter: FILTER }),
      signal,
    });
    let logs = 0;
    let checksum = 0;
    let pending: Buffer[] = [];
    const parse = (line: string) => {
      if (line.length === 0) return;
      const { log } = JSON.parse(line) as { log: { blockNumber: number; event?: { values: string[] } } };
      logs++;
      checksum += log.blockNumber + (log.event?.values.length ?? 0);
    };
    await new Promise<void>((resolve, reject) => {
      response.body.on('data', (chunk: Buffer) => {
        let start = 0;
        for (let end = chunk.indexOf(0x0a); end !== -1; start = end + 1, end = chunk.indexOf(0x0a, start)) {
          if (pending.length > 0) {
            pending.push(chunk.subarray(start, end));
            parse(Buffer.concat(pending).toString('utf8'));
            pending = [];
          } else {
            parse(chunk.toString('utf8', start, end));
          }
        }
        if (start < chunk.length) pending.push(chunk.subarray(start));
      });
      response.body.on('end', resolve);
      response.body.on('error', reject);
    });
    return { logs, checksum };
  };
}

/** JSON.parse alone: each line of `body` decoded and parsed, in this process, nothing kept. CPU µs per log. */
function parseAlone(body: Buffer): number {
  const cpu = process.cpuUsage();
  let logs = 0;
  let checksum = 0;
  for (let start = 0, end = body.indexOf(0x0a); end !== -1; start = end + 1, end = body.indexOf(0x0a, start)) {
    if (end === start) continue;
    const { log } = JSON.parse(body.toString('utf8', start, end)) as { log: { blockNumber: number } };
    logs++;
    checksum += log.blockNumber;
  }
  const used = process.cpuUsage(cpu);
  if (logs !== LOGS || checksum === 0) throw new Error(`parsed ${logs} of ${LOGS} logs`);
  return (used.user + used.system) / LOGS;
}

/** The whole answer body for {@link parseAlone}, fetched anew each round (nothing holds 60 MB in between). */
async function wholeBody(pool: Pool): Promise<Buffer> {
  const response = await pool.request({
    path: '/rpc/Indexer/SubscribeEvents',
    method: 'POST',
    body: JSON.stringify({ filter: FILTER }),
    signal: AbortSignal.timeout(RUN_TIMEOUT_MS),
  });
  return Buffer.from(await response.body.arrayBuffer());
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

async function compare(): Promise<void> {
  let closeClient = async (): Promise<void> => undefined;
  const child = fork(
    fileURLToPath(import.meta.url),
    ['--serve', '--logs', String(LOGS), ...(ASCII ? ['--ascii'] : [])],
    { stdio: 'inherit' },
  );
  try {
    const [ready] = (await Promise.race([
      once(child, 'message'),
      once(child, 'exit').then(([code]) => {
        throw new Error(`the server exited (${code}) before it was ready`);
      }),
    ])) as [Ready];
    const base = `http://127.0.0.1:${ready.port}`;
    const mb = (ready.bytes / (1024 * 1024)).toFixed(1);
    console.log(
      `stream-compare: ${LOGS.toLocaleString('en-US')} logs per run (${mb} MB, lines ${ready.minLine}-${ready.maxLine} bytes, ` +
        `mean ${Math.round(ready.bytes / LOGS)}, ${ready.multiByte} with multi-byte text), ${ROUNDS} rounds after a warm-up`,
    );
    const client = new PlatformClient({
      endpoints: { metadataUrl: base, marketplaceUrl: base, indexerUrl: base, relayerUrl: base, apiUrl: base },
      networks: [{ name: 'polygon', chainId: 137 }],
      accessKey: 'bench-access-key',
    });
    // The floor (bare) runs only when both readers do, not while one is profiled.
    const pool = new Pool(base, { connections: 1 });
    closeClient = async () => {
      await pool.close();
      await client.close();
    };
    const readers = { ours: ours(client), official: official(base), bare: bare(pool) };
    const names: Array<keyof typeof readers> = ONLY === undefined ? ['ours', 'official', 'bare'] : [ONLY];
    const runs: Record<keyof typeof readers, Run[]> = { ours: [], official: [], bare: [] };
    const parseAloneUs: number[] = [];
    const deadline = performance.now() + DEADLINE_MS;
    for (let round = 0; round <= ROUNDS; round++) {
      if (performance.now() > deadline) {
        console.log(`  (stopped after ${round - 1} rounds: ${DEADLINE_MS / 1000} s passed)`);
        break;
      }
      for (const name of round % 2 === 0 ? names : [...names].reverse()) {
        const run = await measure(readers[name]);
        if (run.logs !== LOGS) throw new Error(`${name} read ${run.logs} of ${LOGS} logs`);
        if (round > 0) runs[name].push(run);
      }
      const [a, b, c] = [runs.ours.at(-1), runs.official.at(-1), runs.bare.at(-1)];
      if (a && b && a.checksum !== b.checksum) throw new Error('the readers saw different records');
      if (a && c && a.checksum !== c.checksum) throw new Error('the bare reader saw different records');
      if (round > 0 && ONLY === undefined) parseAloneUs.push(parseAlone(await wholeBody(pool)));
    }

    const n = (x: number) => Math.round(x).toLocaleString('en-US');
    const summary = (name: keyof typeof readers) => {
      const perSecond = runs[name].map((r) => (r.logs / r.wallMs) * 1_000);
      const cpuPerLog = runs[name].map((r) => r.cpuUs / r.logs);
      const systemPerLog = median(runs[name].map((r) => r.systemUs / r.logs));
      console.log(
        `  ${name.padEnd(8)} ${n(median(perSecond)).padStart(8)} logs/s (${n(Math.min(...perSecond))}-${n(Math.max(...perSecond))}), ` +
          `CPU ${median(cpuPerLog).toFixed(1)} µs/log (${Math.min(...cpuPerLog).toFixed(1)}-${Math.max(...cpuPerLog).toFixed(1)}; ` +
          `kernel ${systemPerLog.toFixed(1)})`,
      );
    };
    for (const name of names) summary(name);
    if (runs.ours.length === 0 || runs.official.length === 0) return;
    // Each round's runs ran back to back, so their ratio is the least disturbed by a busy machine.
    const range = (values: number[]) =>
      `${median(values).toFixed(2)}x (rounds ${Math.min(...values).toFixed(2)}-${Math.max(...values).toFixed(2)})`;
    const cpuRatios = runs.ours.map((ours, i) => (runs.official[i] as Run).cpuUs / ours.cpuUs);
    const speedRatios = runs.ours.map((ours, i) => (runs.official[i] as Run).wallMs / ours.wallMs);
    console.log(`  ours vs official: ${range(cpuRatios)} less CPU per log, ${range(speedRatios)} logs/s`);
    const cpuRatio = median(cpuRatios);
    console.log(
      cpuRatio >= GOAL
        ? `  goal ${GOAL}x (median CPU per log): met`
        : `  goal ${GOAL}x (median CPU per log): NOT met (${cpuRatio.toFixed(2)}x)`,
    );

    // The floor, per round: what the official reader's CPU is over the bare reader's, and ours above it.
    const boundRatios = runs.bare.map((bare, i) => (runs.official[i] as Run).cpuUs / bare.cpuUs);
    const above = runs.bare.map((bare, i) => ((runs.ours[i] as Run).cpuUs - bare.cpuUs) / bare.logs);
    console.log(
      `  floor: the bare reader reaches ${range(boundRatios)} less CPU per log than the official one; ` +
        `ours costs ${median(above).toFixed(1)} µs/log more than it (rounds ${Math.min(...above).toFixed(1)}-${Math.max(...above).toFixed(1)})`,
    );
    console.log(
      `  JSON.parse alone (each line decoded and parsed, in this process): ${median(parseAloneUs).toFixed(1)} µs/log ` +
        `(${Math.min(...parseAloneUs).toFixed(1)}-${Math.max(...parseAloneUs).toFixed(1)})`,
    );
  } finally {
    await closeClient();
    child.disconnect();
  }
}

if (process.argv.includes('--serve')) {
  await serve();
} else {
  await compare();
  // The official reader leaves its 11 s watchdog interval running after a stream ends; it would hold the
  // process for up to 22 s. Run alone, the benchmark exits; through bench/run.ts it just waits.
  if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) process.exit();
}
