import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One message the inbox holds. */
export interface InboxMessage {
  id: string;
  chatId: string;
  /** The sender's idempotency key (Discord: the message nonce). */
  key: string;
  /** The message's content as last posted or edited (the alerts' Replies). */
  replies: unknown[];
  edits: number;
}

export interface ChatInboxOptions {
  /** Time to answer one request, drawn uniformly from `[min, max]` ms. Default `[0, 0]`. */
  latencyMs?: readonly [number, number];
  /** Added to the answer time for each reply a message carries (a merged burst takes longer). Default 0. */
  perReplyMs?: number;
}

/** Counts of what reached the inbox. */
export interface ChatInboxStats {
  /** Messages created. */
  messages: number;
  /** POSTs whose key was already known: answered with the first message's id, nothing created. */
  deduplicated: number;
  /** PATCHes applied. */
  edits: number;
}

/**
 * A chat platform stand-in over real HTTP, for tests that run the bot in another process.
 *
 * - `POST /messages` `{chatId, key, replies}` creates a message and answers `{id}`. Like Discord's
 *   message nonce with `enforce_nonce`, a POST whose `key` is already known creates nothing and
 *   answers the first message's id (counted in {@link ChatInboxStats.deduplicated}). The message is
 *   stored as soon as the request is read, before the (slow) answer: a sender killed while waiting
 *   leaves a message it never heard about, as on a real network.
 * - `PATCH /messages/:id` `{replies}` rewrites a message.
 * - `GET /messages` lists the messages in creation order.
 *
 * @example
 * const inbox = await startChatInbox({ latencyMs: [5, 20] });
 * await fetch(`${inbox.url}/messages`, { method: 'POST', body: JSON.stringify({ chatId: '1', key: 'k', replies: [] }) });
 * inbox.messages(); // [{ id: '1', chatId: '1', key: 'k', replies: [], edits: 0 }]
 * await inbox.close();
 */
export interface ChatInbox {
  /** `http://127.0.0.1:PORT` */
  readonly url: string;
  messages(): InboxMessage[];
  stats(): ChatInboxStats;
  /** Holds every answer (messages are still stored) until {@link ChatInbox.release}. */
  hold(): void;
  release(): void;
  close(): Promise<void>;
}

export async function startChatInbox(options: ChatInboxOptions = {}): Promise<ChatInbox> {
  const [minLatency, maxLatency] = options.latencyMs ?? [0, 0];
  const perReplyMs = options.perReplyMs ?? 0;
  const messages: InboxMessage[] = [];
  const byKey = new Map<string, InboxMessage>();
  const byId = new Map<string, InboxMessage>();
  const stats: ChatInboxStats = { messages: 0, deduplicated: 0, edits: 0 };
  let held: Array<() => void> | undefined;

  const pause = async (replies: number): Promise<void> => {
    const ms = minLatency + Math.random() * (maxLatency - minLatency) + perReplyMs * replies;
    if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms));
    if (held) await new Promise<void>((resolve) => held?.push(resolve));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? '/', 'http://inbox').pathname;
    if (req.method === 'GET' && path === '/messages') return answer(res, 200, messages);
    if (req.method === 'POST' && path === '/messages') {
      const body = await readJson(req);
      if (!isRecord(body) || typeof body.chatId !== 'string' || typeof body.key !== 'string') {
        return answer(res, 400, { message: 'expected {chatId, key, replies}' });
      }
      if (!Array.isArray(body.replies)) return answer(res, 400, { message: 'replies must be an array' });
      let message = byKey.get(body.key);
      if (message) {
        stats.deduplicated += 1;
      } else {
        message = {
          id: String(messages.length + 1),
          chatId: body.chatId,
          key: body.key,
          replies: body.replies,
          edits: 0,
        };
        messages.push(message);
        byKey.set(message.key, message);
        byId.set(message.id, message);
        stats.messages += 1;
      }
      await pause(body.replies.length);
      return answer(res, 200, { id: message.id });
    }
    const edit = /^\/messages\/([^/]+)$/.exec(path);
    if (req.method === 'PATCH' && edit) {
      const message = byId.get(decodeURIComponent(edit[1] ?? ''));
      if (!message) return answer(res, 404, { message: 'Unknown Message' });
      const body = await readJson(req);
      if (!isRecord(body) || !Array.isArray(body.replies)) return answer(res, 400, { message: 'expected {replies}' });
      message.replies = body.replies;
      message.edits += 1;
      stats.edits += 1;
      await pause(body.replies.length);
      return answer(res, 200, { id: message.id });
    }
    return answer(res, 404, { message: 'Not Found' });
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) answer(res, 400, { message: String((error as Error)?.message ?? error) });
      else res.destroy();
    });
  });
  // A killed sender's half-finished request must not take the server down.
  server.on('clientError', (_error, socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  const release = (): void => {
    const waiting = held ?? [];
    held = undefined;
    for (const resume of waiting) resume();
  };
  return {
    url: `http://127.0.0.1:${port}`,
    messages: () => messages.map((m) => ({ ...m })),
    stats: () => ({ ...stats }),
    hold() {
      held ??= [];
    },
    release,
    async close() {
      release();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function answer(res: ServerResponse, status: number, body: unknown): void {
  if (res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
