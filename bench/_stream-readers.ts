// Shared by stream-compare and stream-fresh: the SubscribeEvents readers they compare, each reading one whole
// stream from a _stream-server.ts server. Each reader loads its library when it is made (a dynamic import), so
// that a process running one reader loads only that reader's code, as a program using it would.

/** What a run saw: logs, and a sum of block numbers and decoded value counts to check readers saw the same. */
export interface ReadResult {
  logs: number;
  checksum: number;
}

export interface StreamReader {
  /** Reads the whole stream once. */
  read(signal: AbortSignal): Promise<ReadResult>;
  close(): Promise<void>;
}

export type ReaderName = 'ours' | 'official' | 'bare' | 'bare-http';
export const READER_NAMES: readonly ReaderName[] = ['ours', 'official', 'bare', 'bare-http'];

const FILTER = { contractAddresses: ['0x0000000000000000000000000000000000000001'] };

/** Our client's reader, as the alert pipeline reads it (src/alerts/streams.ts): the logs of a chunk as a batch. */
export async function oursReader(base: string): Promise<StreamReader> {
  const { PlatformClient } = await import('../src/platform/index.ts');
  const client = new PlatformClient({
    endpoints: { metadataUrl: base, marketplaceUrl: base, indexerUrl: base, relayerUrl: base, apiUrl: base },
    networks: [{ name: 'polygon', chainId: 137 }],
    accessKey: 'bench-access-key',
  });
  return {
    async read(signal) {
      let logs = 0;
      let checksum = 0;
      let bad = 0;
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
    },
    close: () => client.close(),
  };
}

/**
 * The official reader (@0xsequence/indexer's subscribeEvents, over the global fetch). It leaves its 11 s
 * watchdog interval running after a stream ends, which holds a process that does not exit by itself.
 */
export async function officialReader(base: string): Promise<StreamReader> {
  const { SequenceIndexer } = await import('@0xsequence/indexer');
  const indexer = new SequenceIndexer(base, 'bench-access-key');
  return {
    read: (signal) =>
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
      }),
    close: async () => undefined,
  };
}

/**
 * The floor: the least a reader that hands out every line parsed whole can do over undici (the HTTP client
 * under the official reader's fetch). One request, lines found by a byte search, each decoded and
 * JSON.parse'd, nothing normalized, queued or kept, no heartbeat, no errors handled.
 */
export async function bareReader(base: string): Promise<StreamReader> {
  const { Pool } = await import('undici');
  const pool = new Pool(base, { connections: 1 });
  return {
    async read(signal) {
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
    },
    close: () => pool.close(),
  };
}

/** As {@link bareReader}, over node:http (Node's built-in HTTP client, whose parser is native; ours streams over it). */
export async function bareHttpReader(base: string): Promise<StreamReader> {
  const http = await import('node:http');
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const url = new URL('/rpc/Indexer/SubscribeEvents', base);
  return {
    read(signal) {
      return new Promise((resolve, reject) => {
        let logs = 0;
        let checksum = 0;
        let pending: Buffer[] = [];
        const parse = (line: string) => {
          if (line.length === 0) return;
          const { log } = JSON.parse(line) as { log: { blockNumber: number; event?: { values: string[] } } };
          logs++;
          checksum += log.blockNumber + (log.event?.values.length ?? 0);
        };
        const request = http.request(
          url,
          { method: 'POST', agent, signal, headers: { 'content-type': 'application/json' } },
          (response) => {
            response.on('data', (chunk: Buffer) => {
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
            response.on('end', () => resolve({ logs, checksum }));
            response.on('error', reject);
          },
        );
        request.on('error', reject);
        request.end(JSON.stringify({ filter: FILTER }));
      });
    },
    close: async () => agent.destroy(),
  };
}

export function makeReader(name: ReaderName, base: string): Promise<StreamReader> {
  if (name === 'ours') return oursReader(base);
  if (name === 'official') return officialReader(base);
  return name === 'bare' ? bareReader(base) : bareHttpReader(base);
}
