// Shared by stream-compare and stream-fresh: a local SubscribeEvents server in a child process.
//
// It serves SubscribeEvents as NDJSON: a heartbeat at open, then LOGS `{"log":{...}}` lines of 1.2-2 KB shaped like
// wire-protocol.md §4.2 and devnet/wire.ts (decoded ERC-721 Transfer, ERC-1155 TransferSingle and URI, marketplace
// RequestCreated / RequestAccepted / RequestCancelled, with raw topics and data; some carry multi-byte names), a
// blank heartbeat line now and then, written in chunks of random size that cut lines, keys and characters anywhere.
// Every request gets the same bytes (seeded PRNG). The server runs in a child process of its own so that its CPU
// is not counted as a reader's.
//
// Run as a script (as startStreamServer forks it): `_stream-server.ts --serve --logs N --min-chunk B --max-chunk B [--ascii]`;
// it sends its {@link Ready} over IPC and serves until its parent disconnects.
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { prng } from './_prng.ts';

const MIN_LINE = 1_200;
const MAX_LINE = 2_000;
const HEARTBEAT_EVERY = 5_000;
const SEED = 20250615;

/** What the server sends and how it cuts it. */
export interface PayloadOptions {
  logs: number;
  /** No multi-byte text in any line (see {@link labels}). */
  ascii: boolean;
  /** Sizes of the writes, drawn uniformly from this range (seeded): they cut lines anywhere. */
  minChunk: number;
  maxChunk: number;
}

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
function labels(ascii: boolean): string[] {
  return ascii
    ? ['Drachen', 'Dragon', 'Doragon', 'Wyvern', 'Basilisk', 'Lunnyy kot', 'Fenix']
    : ['Drachen Ü', 'Dragon 🐉', 'ドラゴン', 'Wyvern', 'Basilisk', 'Лунный кот', 'Fénix ñ'];
}

function eventShapes(addresses: readonly string[], contracts: readonly string[], ascii: boolean): EventShape[] {
  const LABELS = labels(ascii);
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
export function buildPayload(options: PayloadOptions): {
  chunks: Buffer[];
  bytes: number;
  minLine: number;
  maxLine: number;
  multiByte: number;
} {
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
  const shapes = eventShapes(addresses, contracts, options.ascii);
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
  for (let i = 1; i <= options.logs; i++) {
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
    const size = options.minChunk + Math.floor(random() * (options.maxChunk - options.minChunk));
    chunks.push(all.subarray(at, at + size));
    at += size;
  }
  return { chunks, bytes: all.length, minLine, maxLine, multiByte };
}

export interface Ready {
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

async function serve(options: PayloadOptions): Promise<void> {
  const payload = buildPayload(options);
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

/** A running server: its base URL and what it serves; `stop()` ends it. */
export interface StreamServer {
  base: string;
  ready: Ready;
  stop(): void;
}

/** Forks this module as the server (with this process's node flags, so a .ts runs under tsx as here). */
export async function startStreamServer(options: PayloadOptions): Promise<StreamServer> {
  const child = fork(
    fileURLToPath(import.meta.url),
    [
      '--serve',
      '--logs',
      String(options.logs),
      '--min-chunk',
      String(options.minChunk),
      '--max-chunk',
      String(options.maxChunk),
      ...(options.ascii ? ['--ascii'] : []),
    ],
    { stdio: 'inherit' },
  );
  try {
    const [ready] = (await Promise.race([
      once(child, 'message'),
      once(child, 'exit').then(([code]) => {
        throw new Error(`the server exited (${code}) before it was ready`);
      }),
    ])) as [Ready];
    return { base: `http://127.0.0.1:${ready.port}`, ready, stop: () => child.disconnect() };
  } catch (error) {
    child.kill();
    throw error;
  }
}

function numberArgument(name: string): number {
  const at = process.argv.indexOf(`--${name}`);
  const value = Number(process.argv[at + 1]);
  if (at === -1 || !Number.isInteger(value) || value < 1) throw new Error(`the stream server needs --${name}`);
  return value;
}

// `--serve` as well as the path: a bundle that includes this module runs as its own entry point.
if (
  process.argv.includes('--serve') &&
  process.argv[1] !== undefined &&
  import.meta.url === pathToFileURL(process.argv[1]).href
) {
  await serve({
    logs: numberArgument('logs'),
    ascii: process.argv.includes('--ascii'),
    minChunk: numberArgument('min-chunk'),
    maxChunk: numberArgument('max-chunk'),
  });
}
