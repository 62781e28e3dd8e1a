import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startTelegram,
  type TelegramAdapter,
  type TelegramConfig,
  WEBHOOK_MAX_BODY,
} from '../../src/chat/telegram/adapter.ts';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { FakeTelegram, SECRET_HEADER } from '../fakes/telegram.ts';
import { type Harness, startHarness } from '../helpers/bot-harness.ts';

const TOKEN = '123456:TEST-token-abcdefghijklmnopqrstuvwxyz';
const SECRET = 'replica-secret_0123456789';
const PATH = '/hooks/telegram';

function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    loadConfig(env, '/srv/bot');
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe('FLOORWATCH_TELEGRAM_WEBHOOK_* settings', () => {
  const base = { TELEGRAM_BOT_TOKEN: TOKEN };

  it('GIVEN URL, secret and port THEN webhook mode is configured; the port defaults to 8443 and may be 0', () => {
    const config = loadConfig({
      ...base,
      FLOORWATCH_TELEGRAM_WEBHOOK_URL: 'https://bot.example/hooks/telegram',
      FLOORWATCH_TELEGRAM_WEBHOOK_SECRET: SECRET,
      FLOORWATCH_TELEGRAM_WEBHOOK_PORT: '0',
    }).telegram;
    expect(config).toMatchObject({ webhookUrl: 'https://bot.example/hooks/telegram', webhookSecret: SECRET });
    expect(config?.webhookPort).toBe(0);
    const defaults = loadConfig({
      ...base,
      FLOORWATCH_TELEGRAM_WEBHOOK_URL: 'https://bot.example/t',
      FLOORWATCH_TELEGRAM_WEBHOOK_SECRET: SECRET,
    }).telegram;
    expect(defaults?.webhookPort).toBe(8443);
    expect(loadConfig(base).telegram?.webhookUrl).toBeUndefined();
  });

  it('GIVEN the older TELEGRAM_WEBHOOK_* names THEN they still work, and a conflict with the new ones is refused', () => {
    const old = loadConfig({
      ...base,
      TELEGRAM_WEBHOOK_URL: 'https://bot.example/t',
      TELEGRAM_WEBHOOK_SECRET: SECRET,
      TELEGRAM_WEBHOOK_PORT: '9000',
    }).telegram;
    expect(old).toMatchObject({ webhookUrl: 'https://bot.example/t', webhookSecret: SECRET, webhookPort: 9000 });
    const problems = problemsOf({
      ...base,
      TELEGRAM_WEBHOOK_URL: 'https://bot.example/t',
      FLOORWATCH_TELEGRAM_WEBHOOK_URL: 'https://other.example/t',
      FLOORWATCH_TELEGRAM_WEBHOOK_SECRET: SECRET,
    });
    expect(problems).toEqual([
      'FLOORWATCH_TELEGRAM_WEBHOOK_URL and TELEGRAM_WEBHOOK_URL are two names of one setting and are set differently; set only one.',
    ]);
  });

  it('GIVEN a URL without a secret, a secret of the wrong shape, an http URL or a bad port THEN each is named, never the secret', () => {
    const url = 'https://bot.example/t';
    expect(problemsOf({ ...base, FLOORWATCH_TELEGRAM_WEBHOOK_URL: url })).toEqual([
      'FLOORWATCH_TELEGRAM_WEBHOOK_SECRET (16-256 letters, digits, _ or -) is required with FLOORWATCH_TELEGRAM_WEBHOOK_URL.',
    ]);
    const shaped = 'short secret!';
    const wrong = problemsOf({
      ...base,
      FLOORWATCH_TELEGRAM_WEBHOOK_URL: url,
      FLOORWATCH_TELEGRAM_WEBHOOK_SECRET: shaped,
    });
    expect(wrong[0]).toMatch(/^FLOORWATCH_TELEGRAM_WEBHOOK_SECRET .* the one set has another shape\.$/);
    expect(wrong.join('\n')).not.toContain(shaped);
    expect(
      problemsOf({
        ...base,
        FLOORWATCH_TELEGRAM_WEBHOOK_URL: `http://bot.example/${TOKEN}`,
        FLOORWATCH_TELEGRAM_WEBHOOK_SECRET: SECRET,
      }),
    ).toEqual(['FLOORWATCH_TELEGRAM_WEBHOOK_URL must be the public https:// URL that Telegram posts updates to.']);
    expect(
      problemsOf({
        ...base,
        FLOORWATCH_TELEGRAM_WEBHOOK_URL: url,
        FLOORWATCH_TELEGRAM_WEBHOOK_SECRET: SECRET,
        FLOORWATCH_TELEGRAM_WEBHOOK_PORT: '70000',
      }),
    ).toEqual(['FLOORWATCH_TELEGRAM_WEBHOOK_PORT must be a whole number from 0 to 65535; got "70000".']);
  });
});

/** A tiny load balancer: each request goes to the next replica in turn, body and headers as they came. */
class RoundRobin {
  readonly targets: number[] = [];
  /** Which target (by index) answered each request, with its status. */
  readonly served: Array<{ target: number; status: number }> = [];
  #next = 0;
  readonly #server: Server = createServer((req, res) => {
    const target = this.#next++ % this.targets.length;
    const upstream = request(
      {
        host: '127.0.0.1',
        port: this.targets[target],
        method: req.method,
        path: req.url,
        headers: req.headers,
      },
      (answer) => {
        this.served.push({ target, status: answer.statusCode ?? 0 });
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502).end();
    });
    req.pipe(upstream);
  });

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}

/** Sends a request head (no body) on a raw socket and returns the status line's code. */
function statusOfHead(port: number, head: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(head));
    let text = '';
    socket.on('data', (chunk) => {
      text += chunk.toString();
      const match = /^HTTP\/1\.1 (\d{3})/.exec(text);
      if (match) {
        resolve(Number(match[1]));
        socket.destroy();
      }
    });
    socket.on('error', reject);
    socket.setTimeout(5_000, () => reject(new Error('no answer')));
  });
}

describe('Telegram webhook mode with several replicas', () => {
  let h: Harness;
  let tg: FakeTelegram;
  let balancer: RoundRobin;
  let publicUrl: string;
  const replicas: TelegramAdapter[] = [];

  const sentTo = (chatId: number) =>
    tg.calls.filter((c) => c.method === 'sendMessage' && String(c.params.chat_id) === String(chatId));

  beforeAll(async () => {
    h = await startHarness();
    tg = await FakeTelegram.start(TOKEN);
    balancer = new RoundRobin();
    publicUrl = `${await balancer.listen()}${PATH}`;
    const config: TelegramConfig = {
      token: tg.token,
      apiRoot: tg.url,
      webhookUrl: publicUrl,
      webhookSecret: SECRET,
      webhookPort: 0,
    };
    for (let i = 0; i < 2; i++) {
      const replica = await startTelegram({
        config,
        engine: h.engine,
        logger: pino({ level: 'silent' }),
        botInfo: tg.botInfo(),
        webhookHost: '127.0.0.1',
      });
      replicas.push(replica);
      balancer.targets.push(replica.webhook?.port ?? 0);
    }
  }, 60_000);

  afterAll(async () => {
    for (const replica of replicas) await replica.stop();
    await balancer?.close();
    await tg?.close();
    await h?.close();
  });

  it('GIVEN two replicas THEN each registers the one webhook with its secret, keeps pending updates and never polls', () => {
    const calls = tg.callsOf('setWebhook');
    expect(calls).toHaveLength(2);
    for (const call of calls) {
      expect(call.params).toMatchObject({
        url: publicUrl,
        secret_token: SECRET,
        drop_pending_updates: false,
        // Channel posts, and join requests of gated groups (holder roles) too.
        allowed_updates: ['message', 'channel_post', 'callback_query', 'chat_join_request'],
      });
    }
    expect(tg.webhook).toEqual({ url: publicUrl, secret_token: SECRET });
    expect(tg.callsOf('getUpdates')).toEqual([]);
    expect(tg.callsOf('deleteWebhook')).toEqual([]);
    expect(replicas.every((r) => r.ready())).toBe(true);
  });

  it('GIVEN updates delivered through the load balancer THEN both replicas answer, each update exactly once', async () => {
    const chats = [7401, 7402, 7403, 7404];
    const from = balancer.served.length;
    for (const chat of chats) tg.injectText(chat, chat, '/help');
    await tg.webhookIdle();
    for (const chat of chats) {
      const answer = await tg.waitFor(() => sentTo(chat)[0]);
      expect(String(answer.params.text)).toContain('Floorwatch commands');
    }
    const served = balancer.served.slice(from);
    expect(served.map((s) => s.status)).toEqual([200, 200, 200, 200]);
    expect(served.map((s) => s.target)).toEqual([0, 1, 0, 1]);
    expect(tg.webhookDeliveries.slice(-4).map((d) => d.status)).toEqual([200, 200, 200, 200]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    for (const chat of chats) expect(sentTo(chat)).toHaveLength(1);
    expect(tg.callsOf('getUpdates')).toEqual([]);
  });

  it('GIVEN a wrong or missing secret THEN 401 and the update is not processed', async () => {
    const wrong = tg.textUpdate(7410, 7410, '/help');
    expect(await tg.postUpdate(wrong, 'wrong-secret_0123456789')).toBe(401);
    const missing = tg.textUpdate(7411, 7411, '/help');
    expect(await tg.postUpdate(missing, null)).toBe(401);
    // The same update with the right secret is answered: the refusals were the secret's doing.
    const right = tg.textUpdate(7412, 7412, '/help');
    expect(await tg.postUpdate(right)).toBe(200);
    await tg.waitFor(() => sentTo(7412)[0]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(sentTo(7410)).toEqual([]);
    expect(sentTo(7411)).toEqual([]);
  });

  it('GIVEN another method, another path, a body over the cap or a non-update THEN refused before any handling', async () => {
    const port = replicas[0]?.webhook?.port ?? 0;
    const direct = `http://127.0.0.1:${port}`;
    const secret = { [SECRET_HEADER]: SECRET };
    expect((await fetch(`${direct}${PATH}`, { headers: secret })).status).toBe(405);
    expect((await fetch(`${direct}${PATH}`, { method: 'PUT', headers: secret, body: '{}' })).status).toBe(405);
    expect((await fetch(`${direct}/elsewhere`, { method: 'POST', headers: secret, body: '{}' })).status).toBe(404);
    const post = (body: string) =>
      fetch(`${direct}${PATH}`, { method: 'POST', headers: { ...secret, 'content-type': 'application/json' }, body });
    expect((await post('{not json')).status).toBe(400);
    expect((await post('{"message":{}}')).status).toBe(400);
    const head = (length: number) =>
      `POST ${PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\n${SECRET_HEADER}: ${SECRET}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;
    expect(await statusOfHead(port, head(WEBHOOK_MAX_BODY + 1))).toBe(413);
    // A body that grows past the cap without announcing its length (chunked).
    const chunked = await new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: PATH,
          headers: { ...secret, 'content-type': 'application/json' },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      const piece = Buffer.alloc(64 * 1024, 0x20);
      for (let sent = 0; sent <= WEBHOOK_MAX_BODY; sent += piece.length) req.write(piece);
      req.end();
    });
    expect(chunked).toBe(413);
    expect(replicas[0]?.ready()).toBe(true);
  });

  it('GIVEN a replica stops THEN its listener closes and the webhook stays registered for the others', async () => {
    const last = replicas.pop();
    await last?.stop();
    expect(last?.ready()).toBe(false);
    expect(tg.callsOf('deleteWebhook')).toEqual([]);
    expect(tg.webhook?.url).toBe(publicUrl);
    balancer.targets.pop();
    tg.injectText(7420, 7420, '/help');
    await tg.webhookIdle();
    await tg.waitFor(() => sentTo(7420)[0]);
  });
});
