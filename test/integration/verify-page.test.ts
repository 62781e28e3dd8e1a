import { request } from 'undici';
import { createSiweMessage, parseSiweMessage } from 'viem/siwe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signMessageAs, type TestWallet, testWallet } from '../../src/devnet/wallets.ts';
import { ADDRESS_FAILURES, PERSON_ATTEMPTS } from '../../src/roles/verification.ts';
import { FakeTelegram } from '../fakes/telegram.ts';
import { COMMUNITY, startVerifyPage, TELEGRAM_TOKEN, type VerifyPageHarness } from '../helpers/verify-page.ts';

let page: VerifyPageHarness;
let listen: string;
let telegram: FakeTelegram;

beforeAll(async () => {
  page = await startVerifyPage();
  listen = `http://127.0.0.1:${page.server.address.port}`;
  telegram = await FakeTelegram.start(TELEGRAM_TOKEN);
});

afterAll(async () => {
  await telegram.close();
  await page.close();
});

const wallet = (index: number): TestWallet => {
  const found = testWallet(index);
  if (!found) throw new Error(`no wallet ${index}`);
  return found;
};

let people = 0;
/** A person new to these tests (rate limits are per person). */
const nextPerson = () => `discord:${5000 + people++}`;

interface Answer {
  status: number;
  json: { ok: boolean; reason?: string; text: string; message?: string; kind?: string; moved?: boolean };
}

/** A browser on one link: its cookie, the page's token, and the headers a same-origin fetch sends. */
class PageVisit {
  cookie: string | undefined;
  pageToken = '';
  readonly path: string;

  constructor(url: string) {
    this.path = new URL(url).pathname;
  }

  async open(): Promise<{ status: number; body: string; headers: Record<string, string | string[] | undefined> }> {
    const response = await request(`${listen}${this.path}`, { headers: this.cookie ? { cookie: this.cookie } : {} });
    const body = await response.body.text();
    const setCookie = response.headers['set-cookie'];
    const first = Array.isArray(setCookie) ? setCookie[0] : setCookie;
    if (first) this.cookie = first.split(';')[0];
    this.pageToken = /data-page-token="([^"]*)"/.exec(body)?.[1] ?? this.pageToken;
    return { status: response.statusCode, body, headers: response.headers };
  }

  async post(step: 'challenge' | 'signature', body: unknown, headers: Record<string, string | undefined> = {}) {
    const sent: Record<string, string> = {
      'content-type': 'application/json',
      origin: page.origin,
      'sec-fetch-site': 'same-origin',
      'x-floorwatch-page-token': this.pageToken,
      ...(this.cookie ? { cookie: this.cookie } : {}),
    };
    for (const [name, value] of Object.entries(headers)) {
      if (value === undefined) delete sent[name];
      else sent[name] = value;
    }
    const response = await request(`${listen}${this.path}/${step}`, {
      method: 'POST',
      headers: sent,
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: response.statusCode, json: (await response.body.json()) as Answer['json'] };
  }

  async challenge(address: string, extra: Record<string, unknown> = {}): Promise<string> {
    const answer = await this.post('challenge', { address, ...extra });
    if (!answer.json.ok || !answer.json.message) throw new Error(`no message: ${answer.json.text}`);
    return answer.json.message;
  }
}

async function newVisit(person = nextPerson(), options: { miniApp?: boolean; community?: typeof COMMUNITY } = {}) {
  const link = await page.verification.issuePageLink(options.community ?? COMMUNITY, person, {
    miniApp: options.miniApp ?? false,
  });
  const visit = new PageVisit(link.url);
  await visit.open();
  return { visit, person, link };
}

describe('the verification page', () => {
  it('GIVEN a link WHEN a wallet signs the message THEN it is verified once, and the link then works no more', async () => {
    const { visit, person } = await newVisit();
    const opened = await visit.open();
    expect(opened.status).toBe(200);
    expect(opened.headers['content-security-policy']).toMatch(/^default-src 'self';.*frame-ancestors 'none'/);
    expect(opened.headers['referrer-policy']).toBe('no-referrer');
    expect(opened.headers['cache-control']).toBe('no-store');
    const fresh = await request(`${listen}${visit.path}`);
    await fresh.body.text();
    expect(String(fresh.headers['set-cookie'])).toMatch(
      /^fw_browser=[\w-]{43}; Path=\/verify; HttpOnly; SameSite=Lax; Max-Age=3600$/,
    );
    const w = wallet(1);
    const message = await visit.challenge(w.address);
    const parsed = parseSiweMessage(message);
    expect(parsed.domain).toBe(new URL(page.origin).host);
    expect(parsed.statement).toContain('Moon Cats Club');
    expect(parsed.chainId).toBe(page.chainId);
    expect((parsed.expirationTime?.getTime() ?? 0) - (parsed.issuedAt?.getTime() ?? 0)).toBe(10 * 60_000);
    const signature = await signMessageAs(w, message, page.chainId);
    const done = await visit.post('signature', { message, signature });
    expect(done.json).toMatchObject({ ok: true, kind: 'eoa', moved: false });
    expect(await page.verification.walletsOf(person, COMMUNITY.key)).toMatchObject([{ address: w.address }]);
    // Replayed: the same signed message again, and a new message on the used link.
    const replay = await visit.post('signature', { message, signature });
    expect(replay.json).toMatchObject({ ok: false, reason: 'link_used' });
    expect((await visit.post('challenge', { address: w.address })).json.reason).toBe('link_used');
    expect((await visit.open()).status).toBe(410);
  });

  it('GIVEN contract wallets, deployed (ERC-1271) and not yet (ERC-6492) THEN they are verified through the chain RPC', async () => {
    for (const index of [2, 3]) {
      const { visit } = await newVisit();
      const w = wallet(index);
      const message = await visit.challenge(w.address);
      const done = await visit.post('signature', { message, signature: await signMessageAs(w, message, page.chainId) });
      expect(done.json, `wallet ${index}`).toMatchObject({ ok: true, kind: 'contract' });
    }
  });

  it('GIVEN a wallet verified by one person WHEN another verifies it in the same community THEN it moves to them, and the page says so', async () => {
    const w = wallet(4);
    const first = await newVisit();
    let message = await first.visit.challenge(w.address);
    await first.visit.post('signature', { message, signature: await signMessageAs(w, message, page.chainId) });
    const second = await newVisit();
    message = await second.visit.challenge(w.address);
    const moved = await second.visit.post('signature', {
      message,
      signature: await signMessageAs(w, message, page.chainId),
    });
    expect(moved.json).toMatchObject({ ok: true, moved: true });
    expect(moved.json.text).toContain('now linked to yours only');
    expect(await page.verification.walletsOf(first.person, COMMUNITY.key)).toEqual([]);
  });

  it('GIVEN signatures that do not answer the issued message THEN each is refused with its reason', async () => {
    const w = wallet(1);
    const cases: Array<[string, (message: string) => Promise<{ message: string; signature: `0x${string}` }>]> = [
      [
        'wrong_domain',
        async (message) => {
          const other = message.replace(/^[^ ]+ wants/, 'evil.example wants');
          return { message: other, signature: await signMessageAs(w, other, page.chainId) };
        },
      ],
      [
        'wrong_nonce',
        async (message) => {
          const other = message.replace(/Nonce: \w+/, 'Nonce: abcdefgh12345678');
          return { message: other, signature: await signMessageAs(w, other, page.chainId) };
        },
      ],
      [
        'bad_signature',
        // Another key signs the message naming wallet 1.
        async (message) => ({ message, signature: await signMessageAs(wallet(4), message, page.chainId) }),
      ],
      [
        'wrong_address',
        async (message) => {
          const parsed = parseSiweMessage(message);
          const other = createSiweMessage({
            domain: parsed.domain ?? '',
            address: wallet(4).address,
            statement: parsed.statement,
            uri: parsed.uri ?? '',
            version: '1',
            chainId: parsed.chainId ?? 0,
            nonce: parsed.nonce ?? '',
            issuedAt: parsed.issuedAt ?? new Date(),
            expirationTime: parsed.expirationTime,
          });
          return { message: other, signature: await signMessageAs(wallet(4), other, page.chainId) };
        },
      ],
      [
        'changed',
        async (message) => {
          const other = message.replace('Verify this wallet', 'Give away this wallet');
          return { message: other, signature: await signMessageAs(w, other, page.chainId) };
        },
      ],
    ];
    for (const [reason, forge] of cases) {
      const { visit } = await newVisit();
      const message = await visit.challenge(w.address);
      const answer = await visit.post('signature', await forge(message));
      expect(answer.json, reason).toMatchObject({ ok: false, reason });
      // The issued message was tried: signing it now is too late.
      const late = await visit.post('signature', { message, signature: await signMessageAs(w, message, page.chainId) });
      expect(late.json.ok, reason).toBe(false);
    }
  });

  it('GIVEN a message signed after it expired THEN it is refused', async () => {
    const { visit } = await newVisit();
    const w = wallet(1);
    const message = await visit.challenge(w.address);
    const signature = await signMessageAs(w, message, page.chainId);
    page.advance(10 * 60_000 + 1_000);
    try {
      expect((await visit.post('signature', { message, signature })).json).toMatchObject({
        ok: false,
        reason: 'expired',
      });
    } finally {
      page.advance(-(10 * 60_000 + 1_000));
    }
  });

  it('GIVEN an expired link THEN its page and its requests say so', async () => {
    const { visit } = await newVisit();
    page.advance(31 * 60_000);
    try {
      expect((await visit.open()).status).toBe(410);
      expect((await visit.post('challenge', { address: wallet(1).address })).json.reason).toBe('link_expired');
    } finally {
      page.advance(-31 * 60_000);
    }
  });

  it('GIVEN a link used in one browser WHEN another browser uses it THEN it is refused', async () => {
    const { visit } = await newVisit();
    await visit.challenge(wallet(1).address);
    const stranger = new PageVisit(`${listen}${visit.path}`);
    await stranger.open();
    expect(stranger.cookie).toBeDefined();
    expect(stranger.cookie).not.toBe(visit.cookie);
    expect((await stranger.post('challenge', { address: wallet(1).address })).json).toMatchObject({
      ok: false,
      reason: 'other_browser',
    });
    // Without any cookie (a client that keeps none) too.
    const bare = await stranger.post('challenge', { address: wallet(1).address }, { cookie: undefined });
    expect(bare.json.reason).toBe('other_browser');
  });

  it('GIVEN cross-site requests THEN they are refused before anything happens', async () => {
    const { visit } = await newVisit();
    const address = wallet(1).address;
    const refusals: Array<[string, Record<string, string | undefined>, number]> = [
      ['another origin', { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' }, 403],
      ['another origin without fetch metadata', { origin: 'https://evil.example', 'sec-fetch-site': undefined }, 403],
      ['a cross-site fetch without origin', { origin: undefined, 'sec-fetch-site': 'cross-site' }, 403],
      ['neither origin nor fetch metadata', { origin: undefined, 'sec-fetch-site': undefined }, 403],
      ['no page token', { 'x-floorwatch-page-token': undefined }, 403],
      ['another page token', { 'x-floorwatch-page-token': 'x'.repeat(32) }, 403],
      ['a form post', { 'content-type': 'application/x-www-form-urlencoded' }, 415],
    ];
    for (const [what, headers, status] of refusals) {
      const answer = await visit.post('challenge', { address }, headers);
      expect(answer.status, what).toBe(status);
      expect(answer.json.ok, what).toBe(false);
    }
    expect((await page.store.link((await linkId(visit)) ?? ''))?.challenge).toBeUndefined();
    // The same request from the page itself goes through.
    expect((await visit.post('challenge', { address })).json.ok).toBe(true);
    // And without Origin, a same-origin fetch's metadata suffices.
    expect((await visit.post('challenge', { address }, { origin: undefined })).json.ok).toBe(true);
  });

  it('GIVEN a Mini App link THEN only Telegram data signed for its person opens it', async () => {
    const { visit } = await newVisit('telegram:7001', { miniApp: true });
    expect((await visit.open()).headers['content-security-policy']).toContain(
      'frame-ancestors https://web.telegram.org',
    );
    const address = wallet(1).address;
    const valid = telegram.webAppInitData(7001);
    expect((await visit.post('challenge', { address })).json.reason).toBe('mini_app_required');
    const tampered = valid.replace(/%22id%22%3A7001/, '%22id%22%3A7002');
    expect(tampered).not.toBe(valid);
    expect((await visit.post('challenge', { address, initData: tampered })).json.reason).toBe('mini_app_invalid');
    const stale = telegram.webAppInitData(7001, Math.floor(Date.now() / 1000) - 2 * 60 * 60);
    expect((await visit.post('challenge', { address, initData: stale })).json.reason).toBe('mini_app_invalid');
    const someoneElse = telegram.webAppInitData(7002);
    expect((await visit.post('challenge', { address, initData: someoneElse })).json.reason).toBe('other_person');
    const fake = new FakeTelegramToken();
    expect((await visit.post('challenge', { address, initData: fake.initData(7001) })).json.reason).toBe(
      'mini_app_invalid',
    );
    const message = await visit.challenge(address, { initData: valid });
    const signature = await signMessageAs(wallet(1), message, page.chainId);
    // No cookie needed: Telegram's data names the person.
    const done = await visit.post('signature', { message, signature, initData: valid }, { cookie: undefined });
    expect(done.json).toMatchObject({ ok: true });
  });

  it('GIVEN too many attempts THEN they are refused per person and per address', async () => {
    const person = nextPerson();
    const { visit } = await newVisit(person);
    let answer: Answer | undefined;
    for (let i = 0; i <= PERSON_ATTEMPTS; i++) answer = await visit.post('challenge', { address: wallet(5).address });
    expect(answer?.json.reason).toBe('rate_limited');
    // Bad signatures for one address, from several people: the address is then refused to anyone.
    const target = wallet(6);
    for (let i = 0; i < ADDRESS_FAILURES; i++) {
      const attempt = await newVisit();
      const message = await attempt.visit.challenge(target.address);
      const bad = await attempt.visit.post('signature', {
        message,
        signature: await signMessageAs(wallet(1), message, page.chainId),
      });
      expect(bad.json.reason).toBe('bad_signature');
    }
    const next = await newVisit();
    expect((await next.visit.post('challenge', { address: target.address })).json.reason).toBe('rate_limited');
  });

  it('GIVEN a hostile community name THEN the page shows it as text', async () => {
    const { visit } = await newVisit(nextPerson(), {
      community: { key: 'discord:2000', name: '<script>alert(1)</script>"onload="x' },
    });
    const { body } = await visit.open();
    expect(body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;&quot;onload=&quot;x');
    expect(body).not.toContain('<script>alert');
    expect(body.match(/<script/g)).toHaveLength(1);
  });

  it('GIVEN unknown addresses and tokens THEN the listener answers 404 or 405', async () => {
    expect((await request(`${listen}/verify/${'a'.repeat(43)}`)).statusCode).toBe(404);
    expect((await request(`${listen}/verify/nope`)).statusCode).toBe(404);
    expect((await request(`${listen}/other`)).statusCode).toBe(404);
    expect((await request(`${listen}/verify/assets/verify.js`)).headers['content-type']).toMatch(/javascript/);
    expect((await request(`${listen}/verify/${'a'.repeat(43)}/challenge`)).statusCode).toBe(405);
  });

  it('GIVEN all of the above THEN the logs hold no address, person, link, signature or Telegram data', () => {
    const logs = page.logs();
    expect(logs).toContain('wallet verified');
    expect(logs).not.toMatch(/0x[0-9a-fA-F]{40}/);
    // Telegram's user id 7001 as a number of its own: a log line's time in milliseconds may hold those digits.
    expect(logs).not.toMatch(/discord:5\d{3}|telegram:7\d{3}|(?<![0-9])7001(?![0-9])/);
    expect(logs).not.toMatch(/\/verify\/[A-Za-z0-9_-]{43}/);
    expect(logs).not.toContain('tgWebAppData');
    expect(logs).not.toContain('query_id');
  });
});

/** Telegram data signed with another bot's token. */
class FakeTelegramToken {
  initData(userId: number): string {
    const other = Object.create(FakeTelegram.prototype) as FakeTelegram;
    Object.defineProperty(other, 'token', { value: '999999:another-bot-token-abcdefghijklmnop' });
    return other.webAppInitData(userId);
  }
}

async function linkId(visit: PageVisit): Promise<string | undefined> {
  const { createHash } = await import('node:crypto');
  const token = visit.path.split('/').pop() ?? '';
  return createHash('sha256').update(token).digest('hex');
}
