/**
 * Shared pieces of the devnet integration tests: a devnet with a client wired to it, a stream
 * collector that waits for what it expects (never for a fixed time), and raw HTTP for the wire
 * convention tests.
 */
import { type Devnet, type DevnetCollectionInfo, type DevnetOptions, startDevnet } from '../../src/devnet/index.ts';
import { PlatformClient, type PlatformClientOptions, type StreamState } from '../../src/platform/index.ts';

/** Topic hashes from shared/reference/chain-events.md. */
export const TOPICS = {
  Transfer: '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef',
  TransferSingle: '0xc3d58168c5ae7397731d063d5bbf3d657854427343f4c083240f7aacaa2d0f62',
  TransferBatch: '0x4a39dc06d4c0dbc64b70af90fd698a233a518aa5d07e595d983b8c0526c8f7fb',
  RequestCreated: '0xb67ee55b059861d68b3b5640ee51bde6a5d9d849c6ecdb610663cbd4290bdfd5',
  RequestAccepted: '0x146c7c3a67244cf406ca437a82b2bf587bc02b628b63659c73b4295b8b00e76f',
  RequestCancelled: '0xe0d7665e06e7db1fc500d66d4e3898d1d4a5533d7efe54b352fcdaa177c22783',
} as const;

export const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000';

export interface TestDevnet {
  devnet: Devnet;
  client: PlatformClient;
  collection(network: string, name: string): DevnetCollectionInfo;
  close(): Promise<void>;
}

/** Starts a devnet on port 0 and a client with both credentials and short back-offs. */
export async function startTestDevnet(
  options: DevnetOptions = {},
  clientOptions: Partial<PlatformClientOptions> = {},
): Promise<TestDevnet> {
  const devnet = await startDevnet(options);
  const client = clientFor(devnet, clientOptions);
  return {
    devnet,
    client,
    collection(network, name) {
      const found = devnet.collections[network]?.find((c) => c.name === name);
      if (!found) throw new Error(`no collection ${name} on ${network}`);
      return found;
    },
    async close() {
      await client.close();
      await devnet.close();
    },
  };
}

export function clientFor(devnet: Devnet, options: Partial<PlatformClientOptions> = {}): PlatformClient {
  return new PlatformClient({
    endpoints: devnet.endpoints,
    networks: devnet.networks,
    accessKey: devnet.accessKey,
    secretToken: devnet.secretToken,
    projectId: devnet.projectId,
    retry: { retries: 2, baseDelayMs: 5, maxDelayMs: 50 },
    ...options,
  });
}

/** Resolves when `check` holds; re-checked on every `notify()`. Rejects after `timeoutMs` naming `what`. */
class Waiters {
  readonly #waiting = new Set<() => void>();

  notify(): void {
    for (const wake of [...this.#waiting]) wake();
  }

  until(check: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
    if (check()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const wake = () => {
        if (!check()) return;
        clearTimeout(timer);
        this.#waiting.delete(wake);
        resolve();
      };
      const timer = setTimeout(() => {
        this.#waiting.delete(wake);
        reject(new Error(`timed out waiting for ${what}`));
      }, timeoutMs);
      this.#waiting.add(wake);
    });
  }
}

/** A running subscription whose items and connection states are collected as they arrive. */
export interface Subscription<T> {
  readonly items: T[];
  readonly states: StreamState[];
  /** The error that ended the iterator, if any. */
  readonly error: () => unknown;
  /** Waits for the `n`-th successful connection. */
  connected(n?: number): Promise<void>;
  /** Waits until at least `count` items matching `predicate` arrived; returns them. */
  waitFor(predicate: (item: T) => boolean, count?: number, what?: string): Promise<T[]>;
  /** Waits until the iterator ended (with or without an error). */
  ended(): Promise<void>;
  close(): Promise<void>;
}

export function subscribe<T>(
  open: (options: { signal: AbortSignal; onState: (state: StreamState) => void }) => AsyncGenerator<T, void, undefined>,
): Subscription<T> {
  const controller = new AbortController();
  const items: T[] = [];
  const states: StreamState[] = [];
  const waiters = new Waiters();
  let failure: unknown;
  let finished = false;
  const iterator = open({
    signal: controller.signal,
    onState: (state) => {
      states.push(state);
      waiters.notify();
    },
  });
  const done = (async () => {
    try {
      for await (const item of iterator) {
        items.push(item);
        waiters.notify();
      }
    } catch (error) {
      failure = error;
    } finally {
      finished = true;
      waiters.notify();
    }
  })();
  const connections = () => states.filter((s) => s.kind === 'connected').length;
  return {
    items,
    states,
    error: () => failure,
    connected: (n = 1) => waiters.until(() => connections() >= n || finished, `connection #${n}`),
    async waitFor(predicate, count = 1, what = 'stream items') {
      await waiters.until(() => finished || items.filter(predicate).length >= count, `${count} ${what}`);
      const found = items.filter(predicate);
      if (found.length < count) throw new Error(`stream ended before ${count} ${what}: ${String(failure)}`);
      return found;
    },
    ended: () => waiters.until(() => finished, 'the end of the stream'),
    async close() {
      controller.abort();
      await done;
    },
  };
}

/** A raw POST, for the wire-convention tests. */
export function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}
