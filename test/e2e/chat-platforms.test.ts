import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningBot, startBot } from '../../src/main.ts';
import { FakeDiscord } from '../fakes/discord.ts';
import { FakeTelegram } from '../fakes/telegram.ts';

let bot: RunningBot;
let tg: FakeTelegram;
let discord: FakeDiscord;
let dataDir: string;
let logs = '';

beforeAll(async () => {
  tg = await FakeTelegram.start();
  discord = await FakeDiscord.start();
  dataDir = await mkdtemp(join(tmpdir(), 'floorwatch-chat-e2e-'));
  bot = await startBot({
    env: {
      FLOORWATCH_DATA_DIR: dataDir,
      FLOORWATCH_DEVNET_BLOCK_MS: '0',
      LOG_LEVEL: 'debug',
      ...tg.env,
      ...discord.env,
    },
    stdin: new PassThrough(),
    logDestination: new Writable({
      write(chunk: Buffer, _encoding, done) {
        logs += chunk.toString();
        done();
      },
    }),
  });
}, 60_000);

afterAll(async () => {
  await bot?.stop();
  await discord?.close();
  await tg?.close();
  await rm(dataDir, { recursive: true, force: true });
});

describe('the bot with Discord and Telegram configured', () => {
  it('registers its commands in the Discord guild and answers a slash command with an embed', async () => {
    expect((discord.commands.guild.get(discord.guildId) ?? []).length).toBe(bot.engine.commands.length);
    const { token } = discord.dispatchInteraction({
      kind: 'command',
      name: 'floor',
      options: { collection: 'moon cats' },
      permissions: '0',
    });
    const answer = await tg.waitFor(() =>
      discord.original(token)?.embeds?.length ? discord.original(token) : undefined,
    );
    expect(JSON.stringify(answer.embeds?.[0])).toContain('"title":"Floor of Moon Cats"');
  });

  it('answers a Telegram command, and an alert rule set there posts alerts to that chat', async () => {
    tg.injectText(501, 501, '/watch add moon cats listing', 'private');
    await tg.nextCall('sendMessage', (c) => String(c.params.text ?? '').includes('Watching'));
    const moonCats = bot.devnet?.collections.devnet?.find((c) => c.name === 'Moon Cats');
    if (!moonCats) throw new Error('no Moon Cats');
    // Wait until the alert streams follow the new rule (Moon Cats beside the marketplace), then mine a listing.
    await tg.waitFor(() =>
      bot.alerts.status().streams.some((s) => s.network === 'devnet' && s.events === 'connected' && s.contracts === 2)
        ? true
        : undefined,
    );
    await bot.devnet?.mine('devnet', [{ kind: 'listing', collection: moonCats.address, price: '7.25' }]);
    // An alert with an image goes out as a photo with its caption.
    const alert = await tg.waitFor(() =>
      tg.calls.find(
        (c) =>
          /^send(Message|Photo)$/.test(c.method) &&
          String(c.params.text ?? c.params.caption ?? '').includes('for 7.25 DEV'),
      ),
    );
    expect(String(alert.params.chat_id)).toBe('501');
  });

  it('never writes a token to its logs', () => {
    expect(logs.length).toBeGreaterThan(0);
    expect(logs).not.toContain(tg.token);
    expect(logs).not.toContain(discord.token);
    expect(logs).not.toContain(bot.devnet?.accessKey ?? 'no key');
  });
});
