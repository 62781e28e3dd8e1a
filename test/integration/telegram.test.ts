import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Alerts, createAlerts } from '../../src/alerts/index.ts';
import { isGroup } from '../../src/bot/command.ts';
import { ChatImages, imageHostsOf } from '../../src/chat/images/images.ts';
import { ChatStartError } from '../../src/chat/start-error.ts';
import {
  EXPIRED_BUTTON,
  startTelegram,
  type TelegramAdapter,
  type TelegramConfig,
} from '../../src/chat/telegram/adapter.ts';
import { Dispatcher } from '../../src/delivery/dispatcher.ts';
import { DeliveryError } from '../../src/delivery/sink.ts';
import { DeliveryJournal } from '../../src/store/files/journal/journal.ts';
import { FileMarketHistory } from '../../src/store/files/market-history.ts';
import { FakeTelegram, type StoredMessage, type TelegramCall, type UploadedFile } from '../fakes/telegram.ts';
import { type Harness, startHarness } from '../helpers/bot-harness.ts';
import { collectionNamed, listedToken } from '../helpers/devnet-data.ts';
import { marketplacesOf, streamsFollow } from '../helpers/streams.ts';

const OPERATOR_ID = 99;
const SENDS = ['sendMessage', 'sendPhoto'];

let h: Harness;
let tg: FakeTelegram;
let adapter: TelegramAdapter;
let journal: DeliveryJournal;
let dispatcher: Dispatcher;
let pipeline: Alerts;
let market: FileMarketHistory;
let images: ChatImages;
/** Serves a PNG, an image type Telegram fetches itself. */
let pngServer: Server;
let pngUrl: string;
const logs: string[] = [];
const logger = pino({ level: 'debug' }, { write: (line: string) => void logs.push(line) });

function config(extra: Partial<TelegramConfig> = {}): TelegramConfig {
  return {
    token: tg.token,
    apiRoot: tg.url,
    webhookUrl: undefined,
    webhookSecret: undefined,
    webhookPort: 0,
    ...extra,
  };
}

/** The address of a port nobody listens on. */
async function closedPort(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

/** The HTML of a sent message (text or caption). */
function htmlOf(call: TelegramCall): string {
  return String(call.params.text ?? call.params.caption ?? '');
}

/** Buttons of a sent message, as label -> callback data. */
function buttonsOf(call: TelegramCall): Array<{ text: string; callback_data?: string; url?: string }> {
  const markup = call.params.reply_markup as { inline_keyboard?: Array<Array<{ text: string }>> } | undefined;
  return (markup?.inline_keyboard ?? []).flat();
}

function messageIdOf(chatId: number, call: TelegramCall): number {
  const found = [...tg.messages.values()].find(
    (m: StoredMessage) => m.chat.id === chatId && (m.text ?? m.caption) === htmlOf(call),
  );
  if (!found) throw new Error('message not stored');
  return found.message_id;
}

/** Types a line in a chat and returns the bot's answer (the next message it sends there). */
async function say(chatId: number, userId: number, text: string): Promise<TelegramCall> {
  const from = tg.calls.length;
  tg.injectText(chatId, userId, text);
  return tg.waitFor(() =>
    tg.calls
      .slice(from)
      .find((c) => SENDS.includes(c.method) && c.status === 200 && String(c.params.chat_id) === String(chatId)),
  );
}

/**
 * Telegram HTML as the Bot API accepts it: only b, i, code and a href tags, properly nested, and
 * only the four entities; nothing else that looks like markup.
 */
function expectSafeHtml(html: string): void {
  const stack: string[] = [];
  const rest = html.replace(/<(\/?)(b|i|code|a)(?: href="(https?:\/\/[^"<>]*)")?>/g, (_, close, tag, href) => {
    if (close) expect(stack.pop(), html).toBe(tag);
    else {
      expect(tag === 'a' ? Boolean(href) : href === undefined, html).toBe(true);
      stack.push(tag);
    }
    return '';
  });
  expect(stack, html).toEqual([]);
  expect(rest, html).not.toMatch(/[<>]/);
  expect(rest.replace(/&(amp|lt|gt|quot);/g, ''), html).not.toContain('&');
  expect(html).not.toMatch(/@(everyone|here)/);
}

/** The PNG a sendPhoto uploaded, with its size from the PNG header. */
function uploadedPng(call: TelegramCall): { file: UploadedFile; width: number; height: number } | undefined {
  const file = call.params.photo;
  if (typeof file !== 'object' || file === null || !('data' in file)) return undefined;
  const data = (file as UploadedFile).data;
  if (data.subarray(1, 4).toString() !== 'PNG') return undefined;
  return { file: file as UploadedFile, width: data.readUInt32BE(16), height: data.readUInt32BE(20) };
}

beforeAll(async () => {
  h = await startHarness();
  tg = await FakeTelegram.start();
  pngServer = createServer((_, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.alloc(64)));
  await new Promise<void>((resolve) => pngServer.listen(0, '127.0.0.1', resolve));
  pngUrl = `http://127.0.0.1:${(pngServer.address() as AddressInfo).port}/photo.png`;
  // As the bot allows them: the platform's hosts and ports, and here the photo server as one of them.
  images = new ChatImages({
    logger,
    allowHosts: [...imageHostsOf(Object.values(h.devnet.endpoints)), new URL(pngUrl).host],
  });
  adapter = await startTelegram({
    config: config(),
    engine: h.engine,
    logger,
    botInfo: tg.botInfo(),
    groupIntervalMs: 50,
    images,
  });
  journal = await DeliveryJournal.open(join(h.dataDir, 'deliveries.jsonl'), { fsync: false });
  dispatcher = new Dispatcher({
    journal,
    sinks: new Map([['telegram' as const, adapter.sink]]),
    logger,
    retryDelayMs: 20,
    maxRetryDelayMs: 200,
  });
  market = await FileMarketHistory.open(join(h.dataDir, 'market-history.jsonl'), { logger });
  pipeline = createAlerts({
    platform: h.platform,
    market,
    rules: h.store,
    deliveries: journal,
    queue: dispatcher,
    currencies: h.engine.currencies,
    logger,
    marketplaceContracts: marketplacesOf(h.devnet),
    replanDelayMs: 20,
    flushDelayMs: 5,
    streams: { reconnect: { initialDelayMs: 20, maxDelayMs: 200 } },
  });
  await pipeline.start();
});

afterAll(async () => {
  await adapter?.stop();
  await pipeline?.stop();
  await dispatcher?.stop();
  await journal?.close();
  await market?.close();
  await tg?.close();
  await images?.close();
  pngServer?.closeAllConnections();
  await new Promise((resolve) => pngServer?.close(resolve));
  await h?.close();
});

describe('commands in Telegram chats', () => {
  it('registers every command in the menu, a group once with its subcommands in the description', async () => {
    const menu = tg.commands as Array<{ command: string; description: string }>;
    expect(menu.map((c) => c.command).sort()).toEqual(h.engine.commands.map((c) => c.name).sort());
    const watch = menu.find((c) => c.command === 'watch');
    expect(watch?.description).toMatch(/\(add, list, remove, pause, resume, test\)$/);
    expect(adapter.bot.isRunning()).toBe(true);
  });

  it('answers every command of the registry with HTML that Telegram accepts', async () => {
    const moonCats = collectionNamed(h.devnet, 'Moon Cats');
    const tokenId = await listedToken(h.platform, moonCats.address);
    const { contacts } = await h.platform.builder.getAudience({ audienceId: 1 });
    const lines: Record<string, string> = {
      alias: '/alias list',
      allowlist: `/allowlist ${contacts[0]?.address ?? '0x0'}`,
      buy: `/buy moon cats ${tokenId} 0x1111111111111111111111111111111111111111`,
      floor: '/floor moon cats count=5',
      help: '/help',
      holders: '/holders moon cats count=3',
      holdings: `/holdings moon cats ${contacts[0]?.address ?? '0x0'}`,
      listings: `/listings moon cats ${tokenId}`,
      offers: `/offers moon cats ${tokenId}`,
      project: '/project contracts',
      search: '/search rescue',
      settings: '/settings',
      stats: '/stats 7',
      status: '/status',
      token: `/token moon cats ${tokenId}`,
      traits: '/traits moon cats',
      unpublish: '/unpublish 999999',
      watch: '/watch list',
    };
    const names = h.engine.commands.map((c) => c.name);
    // Commands added later are still run below, bare.
    expect(names).toEqual(expect.arrayContaining(Object.keys(lines)));
    // Bare command lines too: usage lines carry <placeholders> that must be escaped.
    const all = [...Object.values(lines), ...names.map((n) => `/${n}`)];
    for (const command of h.engine.commands) {
      if (isGroup(command)) for (const sub of command.subcommands) all.push(`/${command.name} ${sub.name}`);
    }
    const chat = 7001;
    for (const line of all) {
      const answer = await say(chat, OPERATOR_ID, line);
      expectSafeHtml(htmlOf(answer));
      expect(answer.params.parse_mode).toBe('HTML');
      expect(htmlOf(answer).length).toBeLessThanOrEqual(answer.method === 'sendPhoto' ? 1024 : 4096);
      for (const button of buttonsOf(answer)) {
        if (button.callback_data !== undefined) expect(Buffer.byteLength(button.callback_data)).toBeLessThanOrEqual(64);
      }
    }
    const usage = tg.calls.find((c) => c.method === 'sendMessage' && htmlOf(c).includes('/floor &lt;collection&gt;'));
    expect(usage).toBeDefined();
    const document = await tg.waitFor(() =>
      tg.callsOf('sendDocument').find((c) => String(c.params.chat_id) === String(chat)),
    );
    expect((document.params.document as { filename: string }).filename).toBe('checkout-steps.json');
  });

  it("escapes the hostile collection's HTML, markdown and @everyone in /token", async () => {
    const hostile = h.devnet.collections.devnet?.find((c) => c.hostile);
    if (!hostile) throw new Error('no hostile collection');
    const { collectibles } = await h.platform.marketplace.listCollectibles({
      network: 'devnet',
      side: 'listing',
      contractAddress: hostile.address,
      filter: { includeEmpty: true },
      page: { pageSize: 5 },
    });
    expect(collectibles.length).toBeGreaterThan(0);
    let escaped = 0;
    for (const item of collectibles) {
      const answer = await say(7002, 1, `/token ${hostile.address} ${item.metadata.tokenId}`);
      const html = htmlOf(answer);
      expectSafeHtml(html);
      if (/&lt;|@\u2060/.test(html)) escaped++;
    }
    expect(escaped).toBeGreaterThan(0);
  });

  it('pages /listings in place when More is pressed', async () => {
    const gardens = collectionNamed(h.devnet, 'Glitch Gardens');
    const tokenId = await listedToken(h.platform, gardens.address);
    await h.devnet.mine(
      'devnet',
      ['1.1', '1.2', '1.3', '1.4', '1.5', '1.6'].map((price) => ({
        kind: 'listing' as const,
        collection: gardens.address,
        tokenId,
        price,
      })),
    );
    const chat = 7003;
    const first = await say(chat, 1, `/listings ${gardens.address} ${tokenId}`);
    const more = buttonsOf(first).find((b) => b.text.startsWith('More'));
    expect(more?.callback_data).toBeDefined();
    const messageId = messageIdOf(chat, first);
    const edit = tg.nextCall(first.method === 'sendPhoto' ? 'editMessageCaption' : 'editMessageText');
    const answered = tg.nextCall('answerCallbackQuery');
    tg.pressButton(chat, 1, messageId, more?.callback_data ?? '');
    const edited = await edit;
    await answered;
    expect(edited.params.message_id).toBe(messageId);
    expect(htmlOf(edited)).toContain('page 2');
    expectSafeHtml(htmlOf(edited));
    expect(buttonsOf(edited).some((b) => b.text.includes('Cheaper'))).toBe(true);
  });

  it('asks an operator to confirm /unpublish in a group and unpublishes on the button', async () => {
    const target = h.devnet.collections['devnet-l2']?.at(-1);
    if (!target) throw new Error('no collection on devnet-l2');
    const chat = -100300;
    const ask = await say(chat, OPERATOR_ID, `/unpublish ${target.id}`);
    expect(htmlOf(ask)).toMatch(new RegExp(`Unpublish collection ${target.id} of project \\d+\\?`));
    const confirm = buttonsOf(ask).find((b) => b.text === 'Confirm unpublish');
    expect(confirm?.callback_data).toMatch(/confirm=[0-9a-f]{8}$/);
    const from = tg.calls.length;
    tg.pressButton(chat, OPERATOR_ID, messageIdOf(chat, ask), confirm?.callback_data ?? '');
    const done = await tg.waitFor(() =>
      tg.calls.slice(from).find((c) => c.method === 'sendMessage' && String(c.params.chat_id) === String(chat)),
    );
    expect(htmlOf(done)).toContain('Collection unpublished');
    expect(tg.calls.slice(from).some((c) => c.method === 'answerCallbackQuery')).toBe(true);
  });

  it('answers a button whose stored action is gone with a popup that says to run the command again', async () => {
    const ask = await say(7004, 1, '/help');
    const answered = tg.nextCall('answerCallbackQuery');
    tg.pressButton(7004, 1, messageIdOf(7004, ask), '#notstoredanymore');
    expect((await answered).params).toMatchObject({ text: EXPIRED_BUTTON, show_alert: true });
  });

  it('GIVEN a member presses a button only operators may use in a group THEN a popup tells them, and the group reads nothing', async () => {
    const target = h.devnet.collections['devnet-l2']?.at(-3);
    if (!target) throw new Error('no collection on devnet-l2');
    const chat = -100350;
    const ask = await say(chat, OPERATOR_ID, `/unpublish ${target.id}`);
    const confirm = buttonsOf(ask).find((b) => b.text === 'Confirm unpublish');
    const from = tg.calls.length;
    const answered = tg.nextCall('answerCallbackQuery');
    tg.pressButton(chat, 8, messageIdOf(chat, ask), confirm?.callback_data ?? '');
    const popup = (await answered).params;
    expect(popup.show_alert).toBe(true);
    expect(String(popup.text)).toMatch(/operators may run/);
    // The press after it is answered in the chat: nothing was posted for the refusal in between.
    const help = await say(chat, 8, '/help');
    const posted = tg.calls
      .slice(from)
      .filter((c) => SENDS.includes(c.method) && String(c.params.chat_id) === String(chat));
    expect(posted).toEqual([help]);
  });

  it('lets a group admin add a watch rule and refuses a member (getChatMember)', async () => {
    const chat = -100400;
    tg.admins.set(String(chat), [5, 6]);
    const before = h.store.rules.length;
    const refused = await say(chat, 7, '/watch add glitch gardens sale min=2');
    expect(htmlOf(refused)).toMatch(/needs a chat admin/);
    expect(tg.callsOf('getChatMember').some((c) => c.params.user_id === 7)).toBe(true);
    expect(h.store.rules.length).toBe(before);
    const added = await say(chat, 6, '/watch add glitch gardens sale min=2');
    expect(htmlOf(added)).toContain('<b>Watching</b>');
    expect(h.store.rules.length).toBe(before + 1);
    // The minimum carries its unit: a bare number is the collection's main currency, shown with it.
    expect(htmlOf(added)).toContain('min 2 DEV');
    const unknown = await say(chat, 6, '/watch add glitch gardens sale min=2 NOPE');
    expect(htmlOf(unknown)).toContain('NOPE is not a currency the bot knows on devnet');
    expect(h.store.rules.length).toBe(before + 1);
    expect(htmlOf(await say(chat, 6, '/watch list'))).toMatch(/min 2 DEV/);
  });

  it('ignores /floor@OtherBot and plain talk in a group, answers /help@ its own name, hints in private', async () => {
    const chat = -100500;
    const from = tg.calls.length;
    tg.injectText(chat, 1, '/floor@OtherBot moon cats');
    tg.injectText(chat, 1, 'what is the floor today?');
    const help = await say(chat, 1, `/help@${tg.bot.username}`);
    expect(htmlOf(help)).toContain('Floorwatch commands');
    const toChat = tg.calls
      .slice(from)
      .filter((c) => SENDS.includes(c.method) && String(c.params.chat_id) === String(chat));
    expect(toChat).toHaveLength(1);
    const hint = await say(7005, 1, 'hello');
    expect(htmlOf(hint)).toContain('/help');
  });
});

describe('images on Telegram', () => {
  const tokenImage = (tokenId: number) =>
    `${h.devnet.url}/assets/devnet/${collectionNamed(h.devnet, 'Moon Cats').address}/${tokenId}.svg`;

  it('GIVEN a command whose answer has an SVG token image THEN the photo goes as an uploaded PNG', async () => {
    const answer = await say(7500, 1, '/floor moon cats count=2');
    expect(answer.method).toBe('sendPhoto');
    const upload = uploadedPng(answer);
    expect(upload).toMatchObject({ width: 512, height: 512 });
    expect(upload?.file.filename).toMatch(/^image-[0-9a-f]{16}\.png$/);
    expect(tg.messages.get(`7500:${messageIdOf(7500, answer)}`)?.photo?.[0]?.width).toBe(512);
  });

  it('GIVEN alerts with an SVG, a PNG and an unusable image THEN an uploaded photo, a photo by address and a text without preview', async () => {
    const from = tg.calls.length;
    await adapter.sink.send('7501', [{ title: 'Sold: svg', tone: 'sale', image: tokenImage(3) }], 'i1');
    await adapter.sink.send('7501', [{ title: 'Sold: png', tone: 'sale', image: pngUrl }], 'i2');
    await adapter.sink.send('7501', [{ title: 'Sold: gone', tone: 'sale', image: tokenImage(999_999_999) }], 'i3');
    const sent = tg.calls.slice(from).filter((c) => SENDS.includes(c.method));
    expect(sent.map((c) => [c.method, c.status])).toEqual([
      ['sendPhoto', 200],
      ['sendPhoto', 200],
      ['sendMessage', 200],
    ]);
    expect(uploadedPng(sent[0] as TelegramCall)).toMatchObject({ width: 512, height: 512 });
    expect(sent[1]?.params.photo).toBe(pngUrl);
    expect(sent[2]?.params.link_preview_options).toEqual({ is_disabled: true });
  });
});

describe('alerts through the Telegram sink', () => {
  const chat = 7100;

  async function planned(): Promise<void> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, 40));
      if (streamsFollow(pipeline.status().streams, h.store.rules, marketplacesOf(h.devnet))) return;
      if (Date.now() > deadline) throw new Error('streams not planned');
    }
  }

  function sentTo(from: number, match: string): TelegramCall[] {
    return tg.calls
      .slice(from)
      .filter(
        (c) => SENDS.includes(c.method) && String(c.params.chat_id) === String(chat) && htmlOf(c).includes(match),
      );
  }

  it('sends a sale alert and edits it when its block is reorganised away', async () => {
    expect(htmlOf(await say(chat, 1, '/watch add moon cats sale'))).toContain('Watching');
    await planned();
    const tokenId = await listedToken(h.platform, collectionNamed(h.devnet, 'Moon Cats').address);
    const from = tg.calls.length;
    await h.devnet.mine('devnet', [
      { kind: 'sale', collection: collectionNamed(h.devnet, 'Moon Cats').address, tokenId },
    ]);
    const alert = await tg.waitFor(() => sentTo(from, 'Sold: ').find((c) => c.status === 200));
    expectSafeHtml(htmlOf(alert));
    await dispatcher.drained();
    const messageId = messageIdOf(chat, alert);
    await h.devnet.reorg('devnet', 1);
    const edit = await tg.waitFor(() =>
      tg.calls
        .slice(from)
        .find((c) => c.method.startsWith('editMessage') && c.params.message_id === messageId && c.status === 200),
    );
    expect(edit.method).toBe(alert.method === 'sendPhoto' ? 'editMessageCaption' : 'editMessageText');
    expect(htmlOf(edit)).toContain('Reversed');
  });

  it('waits out a 429 and delivers the alert exactly once', async () => {
    const tokenId = await listedToken(h.platform, collectionNamed(h.devnet, 'Moon Cats').address);
    tg.fail(SENDS, { code: 429, description: 'Too Many Requests: retry after 1', retryAfter: 1, chatId: String(chat) });
    const from = tg.calls.length;
    await h.devnet.mine('devnet', [
      { kind: 'sale', collection: collectionNamed(h.devnet, 'Moon Cats').address, tokenId },
    ]);
    const limited = await tg.waitFor(() => sentTo(from, 'Sold: ').find((c) => c.status === 429));
    const delivered = await tg.waitFor(() => sentTo(from, 'Sold: ').find((c) => c.status === 200));
    expect(delivered.at - limited.at).toBeGreaterThanOrEqual(950);
    await dispatcher.drained();
    expect(sentTo(from, 'Sold: ').filter((c) => c.status === 200)).toHaveLength(1);
    expect(journal.stats().failed).toBe(0);
  });

  it('keeps three seconds (here 50 ms) between alerts to one group', async () => {
    const from = tg.calls.length;
    const asked = Date.now();
    await adapter.sink.send('-7400', [{ title: 'first' }], 'g1');
    await adapter.sink.send('-7400', [{ title: 'second' }], 'g2');
    const [first, second] = tg.calls.slice(from).filter((c) => String(c.params.chat_id) === '-7400');
    expect(first?.params.text).toContain('first');
    // The sink starts the second send 50 ms after it started the first. The stand-in sees requests
    // arrive, each some time after its send started, unevenly on a busy machine (arrivals 41 ms apart
    // were seen): so the bound is from before the first send was asked for, which no arrival precedes.
    expect((second?.at ?? 0) - asked).toBeGreaterThanOrEqual(50);
    expect(adapter.sink.maxBatch).toBe(1);
    expect(adapter.sink.minIntervalMs).toBe(1_000);
  });

  it('reports a blocked chat as permanent and a 429 with its retry_after', async () => {
    tg.blocked.add('7200');
    const blocked = await adapter.sink.send('7200', [{ title: 'x' }], 'k1').catch((e: unknown) => e);
    expect(blocked).toBeInstanceOf(DeliveryError);
    expect(blocked).toMatchObject({ permanent: true });
    tg.fail(SENDS, { code: 429, description: 'Too Many Requests: retry after 2', retryAfter: 2, chatId: '7201' });
    const limited = await adapter.sink.send('7201', [{ title: 'x' }], 'k2').catch((e: unknown) => e);
    expect(limited).toMatchObject({ permanent: false, retryAfterMs: 2_000 });
    tg.fail(SENDS, { code: 502, description: 'Bad Gateway', chatId: '7201' });
    expect(await adapter.sink.send('7201', [{ title: 'x' }], 'k3').catch((e: unknown) => e)).toMatchObject({
      permanent: false,
    });
  });
});

describe('button presses over the rate limit', () => {
  it('GIVEN a member who presses buttons too fast THEN a popup says to slow down, once, then presses are only acknowledged', async () => {
    const fake = await FakeTelegram.start();
    const engine = h.engineWith({
      userLimit: { capacity: 2, refillPerSecond: 0.01 },
      chatLimit: { capacity: 1_000, refillPerSecond: 1_000 },
    });
    const limited = await startTelegram({
      config: { ...config(), token: fake.token, apiRoot: fake.url },
      engine,
      logger,
      botInfo: fake.botInfo(),
      images,
    });
    try {
      const chat = -100600;
      fake.injectText(chat, 1, '/help');
      await fake.nextCall('sendMessage');
      const message = [...fake.messages.values()].find((m) => m.chat.id === chat) as StoredMessage;
      const from = fake.calls.length;
      for (let i = 0; i < 3; i++) {
        const answered = fake.nextCall('answerCallbackQuery');
        fake.pressButton(chat, 1, message.message_id, '/help');
        await answered;
      }
      const answers = fake.callsOf('answerCallbackQuery').map((c) => c.params);
      expect(answers[0]?.text).toBeUndefined();
      expect(answers[1]).toMatchObject({ show_alert: true, text: expect.stringMatching(/Slow down/) });
      expect(answers[2]?.text).toBeUndefined();
      // Only the admitted press is answered in the group.
      const toChat = () =>
        fake.calls.slice(from).filter((c) => SENDS.includes(c.method) && String(c.params.chat_id) === String(chat));
      await fake.waitFor(() => toChat()[0]);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(toChat().map((c) => htmlOf(c))).toEqual([expect.stringContaining('Floorwatch commands')]);
    } finally {
      await limited.stop();
      await fake.close();
    }
  });
});

describe('webhook mode and secrets', () => {
  it('rejects a webhook request without the secret (401) and answers one with it', async () => {
    const secret = 'webhook-secret-0123456789';
    const hook = await startTelegram({
      config: config({ webhookUrl: 'https://bot.example.test/telegram', webhookSecret: secret }),
      engine: h.engine,
      logger,
    });
    try {
      expect(tg.webhook).toEqual({ url: 'https://bot.example.test/telegram', secret_token: secret });
      const url = `http://127.0.0.1:${hook.webhook?.port}/telegram`;
      const post = (update: object, headers: Record<string, string>) =>
        fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify(update),
        });
      const from = tg.calls.length;
      const denied = await post(tg.textUpdate(7300, 1, '/help'), {});
      expect(denied.status).toBe(401);
      const wrong = await post(tg.textUpdate(7300, 1, '/help'), { 'x-telegram-bot-api-secret-token': 'nope' });
      expect(wrong.status).toBe(401);
      const accepted = await post(tg.textUpdate(7300, 1, '/help'), { 'x-telegram-bot-api-secret-token': secret });
      expect(accepted.status).toBe(200);
      const answer = await tg.waitFor(() =>
        tg.calls.slice(from).find((c) => c.method === 'sendMessage' && String(c.params.chat_id) === '7300'),
      );
      expect(htmlOf(answer)).toContain('Floorwatch commands');
      expect(
        tg.calls.slice(from).filter((c) => String(c.params.chat_id) === '7300' && c.method === 'sendMessage'),
      ).toHaveLength(1);
    } finally {
      await hook.stop();
    }
  });

  it('GIVEN a Bot API that cannot be reached at start THEN a ChatStartError names it, without the bot token', async () => {
    const apiRoot = await closedPort();
    const failed = await startTelegram({
      config: config({ apiRoot }),
      engine: h.engine,
      logger,
    }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(ChatStartError);
    expect(failed).toMatchObject({ platform: 'telegram', failure: 'unreachable', address: apiRoot, exitCode: 69 });
    expect((failed as Error).message).toBe(`Telegram: cannot reach the Bot API at ${apiRoot} (getMe: ECONNREFUSED).`);
    expect(JSON.stringify(failed)).not.toContain(tg.token);
    expect(String((failed as Error).cause)).not.toContain(tg.token);
    expect(logs.length).toBeGreaterThan(0);
    expect(logs.join('\n')).not.toContain(tg.token);
  });
});
