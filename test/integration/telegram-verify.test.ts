// /verify on Telegram through the real grammy client and the Bot API stand-in: a group answers with
// a deep link into the private chat, /start <payload> there answers with a Mini App (web_app)
// button, and the page accepts the Telegram data signed for that person only.
import pino from 'pino';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEEP_LINK_GONE, startTelegram, type TelegramAdapter } from '../../src/chat/telegram/adapter.ts';
import { signMessageAs, testWallet } from '../../src/devnet/wallets.ts';
import { FakeTelegram, type TelegramCall } from '../fakes/telegram.ts';
import { type Harness, startHarness } from '../helpers/bot-harness.ts';
import { startVerifyPage, TELEGRAM_TOKEN, type VerifyPageHarness } from '../helpers/verify-page.ts';

const PUBLIC = 'https://verify.example';
const GROUP = -100555;
const USER = 7;

let h: Harness;
let page: VerifyPageHarness;
let tg: FakeTelegram;
let adapter: TelegramAdapter;

beforeAll(async () => {
  h = await startHarness();
  page = await startVerifyPage({ publicUrl: PUBLIC });
  tg = await FakeTelegram.start(TELEGRAM_TOKEN);
  tg.titles.set(String(GROUP), 'Moon Cats Club');
  const engine = h.engineWith({
    verification: page.verification,
    userLimit: { capacity: 1_000, refillPerSecond: 1_000 },
    chatLimit: { capacity: 1_000, refillPerSecond: 1_000 },
  });
  adapter = await startTelegram({
    config: { token: tg.token, apiRoot: tg.url, webhookUrl: undefined, webhookSecret: undefined, webhookPort: 0 },
    engine,
    logger: pino({ level: 'silent' }),
    botInfo: tg.botInfo(),
  });
});

afterAll(async () => {
  await adapter?.stop();
  await tg?.close();
  await page?.close();
  await h?.close();
});

async function say(chatId: number, userId: number, text: string): Promise<TelegramCall> {
  const from = tg.calls.length;
  tg.injectText(chatId, userId, text);
  return tg.waitFor(() =>
    tg.calls
      .slice(from)
      .find((c) => c.method === 'sendMessage' && c.status === 200 && String(c.params.chat_id) === String(chatId)),
  );
}

type Button = { text: string; url?: string; web_app?: { url: string }; callback_data?: string };
const buttonsOf = (call: TelegramCall): Button[] =>
  ((call.params.reply_markup as { inline_keyboard?: Button[][] } | undefined)?.inline_keyboard ?? []).flat();

async function post(path: string, step: string, body: unknown, pageToken: string) {
  const response = await request(`http://127.0.0.1:${page.server.address.port}${path}/${step}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      origin: PUBLIC,
      'sec-fetch-site': 'same-origin',
      'x-floorwatch-page-token': pageToken,
    },
    body: JSON.stringify(body),
  });
  return (await response.body.json()) as { ok: boolean; reason?: string; message?: string; text: string };
}

describe('/verify on Telegram', () => {
  it('GIVEN /verify in a group THEN the answer is a deep link into the private chat, with no wallet shown', async () => {
    const answer = await say(GROUP, USER, '/verify');
    const [button] = buttonsOf(answer);
    expect(button?.url).toBe(`https://t.me/${tg.bot.username}?start=verify_${GROUP}`);
    expect(button?.web_app).toBeUndefined();
    const list = await say(GROUP, USER, '/verify list');
    expect(String(list.params.text)).not.toMatch(/0x[0-9a-f]{40}/);
    expect(buttonsOf(list)[0]?.url).toContain('?start=verify_');
  });

  it('GIVEN the deep link WHEN the person starts the private chat THEN a Mini App button opens the page, which verifies their wallet', async () => {
    const answer = await say(USER, USER, `/start verify_${GROUP}`);
    expect(String(tg.callsOf('getChat').at(-1)?.params.chat_id)).toBe(String(GROUP));
    expect(String(answer.params.text)).toContain('Moon Cats Club');
    const button = buttonsOf(answer)[0];
    const url = button?.web_app?.url ?? '';
    expect(url.startsWith(`${PUBLIC}/verify/`)).toBe(true);
    expect(button?.url).toBeUndefined();
    const path = new URL(url).pathname;
    const html = await (await request(`http://127.0.0.1:${page.server.address.port}${path}`)).body.text();
    const pageToken = /data-page-token="([^"]*)"/.exec(html)?.[1] ?? '';
    expect(html).toContain('Moon Cats Club');
    const wallet = testWallet(5);
    if (!wallet) throw new Error('no wallet 5');
    // Another Telegram user who got hold of the link is refused; so is tampered data.
    const stranger = await post(
      path,
      'challenge',
      { address: wallet.address, initData: tg.webAppInitData(8) },
      pageToken,
    );
    expect(stranger.reason).toBe('other_person');
    const tampered = tg.webAppInitData(USER).replace('auth_date=', 'auth_date=1');
    expect((await post(path, 'challenge', { address: wallet.address, initData: tampered }, pageToken)).reason).toBe(
      'mini_app_invalid',
    );
    const initData = tg.webAppInitData(USER);
    const challenge = await post(path, 'challenge', { address: wallet.address, initData }, pageToken);
    expect(challenge.ok).toBe(true);
    const message = challenge.message ?? '';
    expect(message.startsWith('verify.example wants you to sign in')).toBe(true);
    const signature = await signMessageAs(wallet, message, page.chainId);
    const done = await post(path, 'signature', { message, signature, initData }, pageToken);
    expect(done).toMatchObject({ ok: true });
    expect(await page.verification.walletsOf(`telegram:${USER}`, `telegram:${GROUP}`)).toMatchObject([
      { address: wallet.address, kind: 'contract' },
    ]);
    // The private chat lists the person's wallets of every group.
    const list = await say(USER, USER, '/verify list');
    expect(String(list.params.text)).toContain(wallet.address);
    const removed = await say(USER, USER, `/verify remove ${wallet.address}`);
    expect(String(removed.params.text)).toContain('removed');
    expect(await page.verification.walletsOf(`telegram:${USER}`)).toEqual([]);
  });

  it('GIVEN a deep link to a group the bot is not in THEN it says so and issues nothing', async () => {
    tg.leftGroups.add('-100999');
    const answer = await say(USER, USER, '/start verify_-100999');
    expect(String(answer.params.text)).toBe(DEEP_LINK_GONE);
    expect(buttonsOf(answer)).toEqual([]);
  });

  it('GIVEN a web_app button for a group THEN the stand-in refuses it as the Bot API does', async () => {
    const response = await request(`${tg.url}/bot${tg.token}/sendMessage`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        chat_id: GROUP,
        text: 'x',
        reply_markup: { inline_keyboard: [[{ text: 'open', web_app: { url: `${PUBLIC}/x` } }]] },
      }),
    });
    expect(response.statusCode).toBe(400);
    expect(((await response.body.json()) as { description: string }).description).toContain('BUTTON_TYPE_INVALID');
  });
});
