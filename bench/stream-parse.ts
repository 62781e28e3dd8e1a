// stream-parse: how fast the real client turns a SubscribeEvents NDJSON stream into typed logs.
//
// A local node:http server on 127.0.0.1 streams 200,000 `{"log":{...}}` lines shaped like
// wire-protocol.md §4.2 (decoded Transfer / TransferSingle / Approval events, 600-900 bytes each),
// written in large chunks that cut lines (and the occasional multi-byte character) at arbitrary
// places, through PlatformClient.indexer.subscribeEvents. Prints logs per second and peak RSS.
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PlatformClient } from '../src/platform/index.ts';
import { prng } from './_prng.ts';

const TOTAL = 200_000;
const TARGET_PER_SECOND = 50_000;
const MIN_CHUNK = 16 * 1024;
const MAX_CHUNK = 256 * 1024;
const MAX_LINE = 900;
/** Distinct line bodies; each line still gets its own id. */
const POOL = 8_192;

const random = prng(20250101);
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
const hex = (chars: number): string => {
  let out = '0x';
  for (let i = 0; i < chars; i++) out += '0123456789abcdef'[Math.floor(random() * 16)];
  return out;
};

const HASHES = Array.from({ length: 4_096 }, () => hex(64));
const ADDRESSES = Array.from({ length: 512 }, () => hex(40));
const CONTRACTS = ADDRESSES.slice(0, 24);
const NAMES = ['Drachen Ü', 'Dragon 🐉', 'ドラゴン', 'Wyvern', 'Basilisk'];

const EVENTS = [
  {
    topic: '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef',
    sig: 'Transfer(address indexed from,address indexed to,uint256 indexed tokenId)',
    types: '["address","address","uint256"]',
    names: '["from","to","tokenId"]',
    contractType: 'ERC721',
    values: () => `["${pick(ADDRESSES)}","${pick(ADDRESSES)}","${Math.floor(random() * 100_000)}"]`,
  },
  {
    topic: '0xc3d58168c5ae7397731d063d5bbf3d657854427343f4c083240f7aacaa2d0f62',
    sig: 'TransferSingle(address indexed operator,address indexed from,address indexed to,uint256 id,uint256 value)',
    types: '["address","address","address","uint256","uint256"]',
    names: '["operator","from","to","id","value"]',
    contractType: 'ERC1155',
    values: () =>
      `["${pick(ADDRESSES)}","${pick(ADDRESSES)}","${pick(ADDRESSES)}","${Math.floor(random() * 1_000)}","${1 + Math.floor(random() * 20)}"]`,
  },
  {
    topic: '0x8c5be1e5ebec7d5bd14f71427d1e84f3dd0314c0f7b2291e5b200ac8c7c3b925',
    sig: 'Approval(address indexed owner,address indexed approved,uint256 indexed tokenId,string note)',
    types: '["address","address","uint256","string"]',
    names: '["owner","approved","tokenId","note"]',
    contractType: 'ERC721',
    values: () => `["${pick(ADDRESSES)}","${pick(ADDRESSES)}","${Math.floor(random() * 100_000)}","${pick(NAMES)}"]`,
  },
] as const;

/**
 * The part of a stream line after `{"log":{"id":N,`, at most {@link MAX_LINE} bytes with its prefix.
 * `parentBlockHash`, `txnInfo` and `rawLog` are omitempty on the wire, so only some lines carry them.
 */
function lineBody(index: number): Buffer {
  const event = pick(EVENTS);
  const block = 61_000_000 + Math.floor(index / 40);
  const seconds = String(index % 60).padStart(2, '0');
  const body =
    `"uid":"${block}-${index % 40}","type":"BLOCK_ADDED","blockNumber":${block},` +
    `"blockHash":"${pick(HASHES)}","contractAddress":"${pick(CONTRACTS)}",` +
    `"contractType":"${event.contractType}","txnHash":"${pick(HASHES)}","txnIndex":${index % 97},` +
    `"txnLogIndex":${index % 7},"logDataType":"EVENT","ts":"2025-06-01T12:00:${seconds}Z"`;
  const tail =
    `,"event":{"topicHash":"${event.topic}","eventSig":"${event.sig}","types":${event.types},` +
    `"names":${event.names},"values":${event.values()}}}}\n`;
  const prefixRoom = `{"log":{"id":${TOTAL},`.length;
  let line = body;
  let room = MAX_LINE - prefixRoom - Buffer.byteLength(body) - Buffer.byteLength(tail);
  for (const [share, extra] of [
    [0.5, `,"parentBlockHash":"${pick(HASHES)}"`],
    [0.4, `,"txnInfo":{"from":"${pick(ADDRESSES)}","to":"${pick(CONTRACTS)}","value":"0"}`],
    [0.2, `,"rawLog":{"data":"0x${'0'.repeat(64)}"}`],
  ] as const) {
    if (random() < share && extra.length <= room) {
      line += extra;
      room -= extra.length;
    }
  }
  return Buffer.from(line + tail, 'utf8');
}

// Built before the clock starts, so the server costs little next to the client being measured.
const BODIES = Array.from({ length: POOL }, (_, i) => lineBody(i));

let bytesSent = 0;
let minLine = Number.POSITIVE_INFINITY;
let maxLine = 0;

const server = createServer(async (req, res) => {
  for await (const _ of req) {
    // The filter body is not needed.
  }
  if (req.url !== '/rpc/Indexer/SubscribeEvents') {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end('{"error":"WebrpcBadRoute","code":-2,"msg":"bad route","status":404}');
    return;
  }
  res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
  res.write('\n');

  const nextSize = () => MIN_CHUNK + Math.floor(random() * (MAX_CHUNK - MIN_CHUNK));
  let chunk = Buffer.allocUnsafe(nextSize());
  let used = 0;
  let blocked = false;
  const flush = () => {
    if (used === 0) return;
    bytesSent += used;
    blocked = !res.write(chunk.subarray(0, used)) || blocked;
    chunk = Buffer.allocUnsafe(nextSize());
    used = 0;
  };
  // Chunks are cut at exactly their size: mid-line, mid-key, mid-character, wherever that falls.
  const put = (bytes: Buffer) => {
    let offset = 0;
    while (offset < bytes.length) {
      const n = bytes.copy(chunk, used, offset, Math.min(bytes.length, offset + chunk.length - used));
      used += n;
      offset += n;
      if (used === chunk.length) flush();
    }
  };
  const prefix = Buffer.alloc(32);
  for (let i = 0; i < TOTAL; i++) {
    const body = BODIES[i % POOL] as Buffer;
    const prefixLength = prefix.write(`{"log":{"id":${i + 1},`, 0, 'latin1');
    const size = prefixLength + body.length;
    if (size < minLine) minLine = size;
    if (size > maxLine) maxLine = size;
    put(prefix.subarray(0, prefixLength));
    put(body);
    if (blocked) {
      await once(res, 'drain');
      blocked = false;
    }
  }
  flush();
  res.end();
});

server.listen(0, '127.0.0.1');
await once(server, 'listening');
const { port } = server.address() as AddressInfo;
const base = `http://127.0.0.1:${port}`;

const client = new PlatformClient({
  endpoints: { metadataUrl: base, marketplaceUrl: base, indexerUrl: base, relayerUrl: base, apiUrl: base },
  networks: [{ name: 'polygon', chainId: 137 }],
  accessKey: 'bench-access-key',
});

const startRss = process.memoryUsage.rss();
let peakRss = startRss;
const sampler = setInterval(() => {
  const rss = process.memoryUsage.rss();
  if (rss > peakRss) peakRss = rss;
}, 10);

let count = 0;
let badLines = 0;
let valueCount = 0;
let outOfOrder = 0;
const started = performance.now();
try {
  for await (const log of client.indexer.subscribeEvents(
    { network: 'polygon', filter: { contractAddresses: CONTRACTS } },
    { reconnect: false, onBadLine: () => badLines++ },
  )) {
    count++;
    valueCount += log.event?.values.length ?? 0;
    if (log.id !== count) outOfOrder++;
  }
} finally {
  clearInterval(sampler);
  await client.close();
  server.close();
}
const seconds = (performance.now() - started) / 1_000;
peakRss = Math.max(peakRss, process.memoryUsage.rss());

const perSecond = Math.round(count / seconds);
const mb = (bytes: number) => (bytes / (1024 * 1024)).toFixed(0);
console.log(
  `stream-parse: ${count} logs in ${seconds.toFixed(2)} s = ${perSecond.toLocaleString('en-US')} logs/s, ` +
    `peak RSS ${mb(peakRss)} MB (${mb(startRss)} MB before streaming)`,
);
console.log(
  `  ${mb(bytesSent)} MB streamed (${(bytesSent / (1024 * 1024) / seconds).toFixed(0)} MB/s), ` +
    `lines ${minLine}-${maxLine} bytes (mean ${Math.round(bytesSent / TOTAL)}), ` +
    `${valueCount} decoded values, ${outOfOrder} out of order, ${badLines} bad lines`,
);
if (count !== TOTAL || badLines > 0 || outOfOrder > 0) {
  console.log(`  ERROR: expected ${TOTAL} logs in order and no bad lines`);
  process.exitCode = 1;
}
console.log(
  perSecond >= TARGET_PER_SECOND
    ? `  target ${TARGET_PER_SECOND.toLocaleString('en-US')} logs/s: met`
    : `  target ${TARGET_PER_SECOND.toLocaleString('en-US')} logs/s: NOT met`,
);
