import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Devnet, type DevnetCollectionInfo, startDevnet } from '../../src/devnet/index.ts';
import { type RunningBot, startBot } from '../../src/main.ts';
import { FakeDiscord } from '../fakes/discord.ts';
import { FakeTelegram } from '../fakes/telegram.ts';
import { askTelegram } from '../helpers/chat-commands.ts';
import { collectionNamed, platformEnv } from '../helpers/devnet-data.ts';
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.ts';
import { endSuite } from '../helpers/suite-end.ts';
import { until } from '../helpers/waiting.ts';

/*
 * Issue 26.5, honest timing, end to end: the bot (src/main.ts) against a local platform started apart
 * whose chain clock the test moves (so that blocks mined while the bot is stopped are 12 minutes old
 * when it starts again), alerts and commands through the real discord.js and grammY clients against
 * their stand-ins, in both storage modes. The bot is stopped, blocks are mined, it starts again: the
 * alerts it reads back say how long ago and why; /status and a digest preview count the events seen,
 * the blocks read back and the blocks missed, and those figures survive a restart.
 */

const TG_CHAT = 611;

let postgres: TestPostgres;

beforeAll(async () => {
  postgres = await startTestPostgres();
}, 180_000);

afterAll(async () => {
  await postgres?.stop();
});

describe.each(['files', 'PostgreSQL'] as const)('late alerts and the record, stored in %s', (mode) => {
  let devnet: Devnet;
  let cats: DevnetCollectionInfo;
  let tg: FakeTelegram;
  let discord: FakeDiscord;
  let dataDir: string;
  let databaseUrl: string | undefined;
  let bot: RunningBot | undefined;
  /** The chain's clock runs this far behind the real one. */
  let chainBehindMs = 30 * 60_000;
  let lastBlock = 0;

  beforeAll(async () => {
    devnet = await startDevnet({
      scale: 'small',
      heartbeatIntervalMs: 1_000,
      blockIntervalMs: 0,
      clock: () => Date.now() - chainBehindMs,
    });
    cats = collectionNamed(devnet, 'Moon Cats');
    tg = await FakeTelegram.start();
    discord = await FakeDiscord.start();
    dataDir = await mkdtemp(join(tmpdir(), 'floorwatch-late-'));
    databaseUrl = mode === 'PostgreSQL' ? await postgres.freshDatabase() : undefined;
  }, 120_000);

  afterAll(() => endSuite({ bot, closing: [discord, tg, devnet], dataDir }));

  async function start(env: Record<string, string> = {}): Promise<RunningBot> {
    bot = await startBot({
      env: {
        ...platformEnv(devnet),
        FLOORWATCH_DATA_DIR: dataDir,
        ...(databaseUrl ? { FLOORWATCH_DATABASE_URL: databaseUrl } : {}),
        FLOORWATCH_LOG_LEVEL: 'info',
        ...tg.env,
        ...discord.env,
        ...env,
      },
      stdin: new PassThrough(),
      logDestination: join(dataDir, 'test.log'),
    });
    return bot;
  }

  async function stop(): Promise<void> {
    await bot?.stop();
    bot = undefined;
  }

  /** Mines `count` sales of Moon Cats (a fresh listing, then its sale: two blocks each); their block times. */
  async function mineSales(count: number): Promise<number[]> {
    const times: number[] = [];
    for (let i = 0; i < count; i++) {
      await devnet.mine('devnet', [{ kind: 'listing', collection: cats.address }]);
      const sale = await devnet.mine('devnet', [{ kind: 'sale', collection: cats.address }]);
      times.push(Math.floor((Date.now() - chainBehindMs) / 1000));
      lastBlock = sale.blockNumber;
    }
    return times;
  }

  const telegramSales = () =>
    tg.calls
      .filter((c) => /^send(Message|Photo)$/.test(c.method) && String(c.params.chat_id) === String(TG_CHAT))
      .map((c) => String(c.params.text ?? c.params.caption ?? ''))
      .filter((text) => text.includes('Sold'));

  const discordSales = () =>
    (discord.messages.get(discord.channelId) ?? [])
      .flatMap((m) => (m.embeds ?? []) as Array<{ title?: string; description?: string }>)
      .filter((embed) => String(embed.title ?? '').startsWith('Sold'));

  const telegramCommand = (text: string, answered: RegExp) => askTelegram(tg, TG_CHAT, text, answered);

  /** The figures of the devnet network in a /status or digest text. */
  function figures(text: string): { events: number; readBack: number; missed: number } | undefined {
    const found = /devnet: ([\d,]+) events? seen, ([\d,]+) blocks? read back, ([\d,]+) blocks? missed/.exec(text);
    if (!found) return undefined;
    const n = (s: string | undefined) => Number(String(s).replaceAll(',', ''));
    return { events: n(found[1]), readBack: n(found[2]), missed: n(found[3]) };
  }

  /** The saved block cursor of the network, once there is one. */
  async function savedCursor(): Promise<number | undefined> {
    if (!databaseUrl) {
      const file = join(dataDir, 'cursors.json');
      if (!existsSync(file)) return undefined;
      return (JSON.parse(await readFile(file, 'utf8')) as { networks: Record<string, number> }).networks.devnet;
    }
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      const { rows } = await client.query<{ block: string }>("SELECT block FROM cursors WHERE network = 'devnet'");
      return rows[0] === undefined ? undefined : Number(rows[0].block);
    } finally {
      await client.end();
    }
  }

  it('GIVEN a bot stopped while sales are mined WHEN it starts 12 minutes later THEN the alerts it reads back say when and why (Telegram: in the chat digest zone; Discord: timestamps), a fresh alert has no note, and /status and the digest preview count what was read back and what was missed, also after a restart', async () => {
    const first = await start();
    await telegramCommand('/digest set 09:00 Europe/Berlin 1 moon cats', /Digest scheduled/);
    await telegramCommand('/watch add moon cats sale', /Watching/);
    const { token } = discord.dispatchInteraction({
      kind: 'command',
      name: 'watch',
      subcommand: 'add',
      options: { collection: 'moon cats', kinds: 'sale' },
      permissions: '8',
    });
    await until(() => JSON.stringify(discord.original(token) ?? '').includes('Watching'), 'the Discord rule');
    await until(
      () => first.alerts.status().streams.some((s) => s.events === 'connected' && s.contracts >= 2),
      'the streams following Moon Cats',
    );
    await until(async () => (await savedCursor()) !== undefined, 'the block cursor');
    await stop();

    // Mined while the bot is down, 12 minutes before it starts again.
    chainBehindMs = 12 * 60_000;
    const missedTimes = await mineSales(3);
    chainBehindMs = 0;

    const second = await start();
    await until(() => telegramSales().length >= 3 && discordSales().length >= 3, 'the 3 sales read back');
    for (const text of telegramSales()) {
      expect(text).toMatch(/⏱ 1[1-4] min ago \(\d{4}-\d\d-\d\d \d\d:\d\d Europe\/Berlin\), read back after a restart/);
    }
    for (const [i, embed] of discordSales().entries()) {
      const note = /⏱ <t:(\d+):R> \(<t:(\d+):f>\), read back after a restart/.exec(String(embed.description));
      expect(note, String(embed.description)).not.toBeNull();
      expect(note?.[1]).toBe(note?.[2]);
      expect(Math.abs(Number(note?.[1]) - (missedTimes[i] as number))).toBeLessThanOrEqual(5);
    }

    // A sale mined now is sent at once: no note.
    await mineSales(1);
    await until(() => telegramSales().length >= 4 && discordSales().length >= 4, 'the fresh sale');
    expect(telegramSales()[3]).not.toContain('⏱');
    expect(String(discordSales()[3]?.description ?? '')).not.toContain('⏱');
    await second.alerts.settled();

    const today = new Date().toISOString().slice(0, 10);
    const status = await telegramCommand('/status', /Record of/);
    expect(status).toContain(`Record of ${today} (UTC day):`);
    const before = figures(status);
    // 3 listings and 3 sales read back from 6 blocks, a listing and a sale seen live.
    expect(before?.events).toBeGreaterThanOrEqual(8);
    expect(before?.readBack).toBeGreaterThanOrEqual(6);
    expect(before?.missed).toBe(0);
    const preview = await telegramCommand('/digest preview', /Bot's record/);
    expect(preview).toContain(`Bot's record, ${today} (UTC)`);
    expect(figures(preview)).toEqual(before);

    // Down again once every block so far is behind the saved cursor; more blocks go by than the
    // backfill reads back (4): the 6 older ones are missed.
    await until(async () => ((await savedCursor()) ?? 0) >= lastBlock, 'the cursor at the last block');
    await stop();
    await mineSales(5);
    const third = await start({ FLOORWATCH_BACKFILL_MAX_BLOCKS: '4' });
    await until(() => telegramSales().length >= 6, 'the 2 sales read back');
    await third.alerts.settled();
    const after = figures(await telegramCommand('/status', /Record of/));
    // What the stopped process counted is still there, with what this one read back and missed.
    expect(after?.missed).toBe(6);
    expect(after?.readBack).toBe((before?.readBack ?? 0) + 4);
    expect(after?.events).toBeGreaterThanOrEqual((before?.events ?? 0) + 4);
    const later = await telegramCommand('/digest preview', /Bot's record/);
    expect(figures(later)).toEqual(after);
    expect(later).toContain('⚠️ devnet');

    if (!databaseUrl) return;
    // Another process on the database, which ingests nothing (the first holds the lease), shows the
    // same figures from the shared table once the first has written its last counts.
    let replicaOut = '';
    const input = new PassThrough();
    const replicaDir = await mkdtemp(join(tmpdir(), 'floorwatch-late-replica-'));
    const replica = await startBot({
      env: {
        ...platformEnv(devnet),
        FLOORWATCH_DATA_DIR: replicaDir,
        FLOORWATCH_DATABASE_URL: databaseUrl,
        FLOORWATCH_LOG_LEVEL: 'info',
      },
      stdin: input,
      stdout: new Writable({
        write(chunk, _encoding, done) {
          replicaOut += String(chunk);
          done();
        },
      }),
      logDestination: join(replicaDir, 'test.log'),
    });
    try {
      await until(async () => {
        const before = replicaOut.length;
        input.write('/status\n');
        const answer = await until(() => {
          const text = replicaOut.slice(before);
          return /Alerts: /.test(text) ? text : undefined;
        }, 'the replica status');
        const shown = figures(answer);
        return shown && shown.events === after?.events && shown.readBack === after.readBack ? shown : undefined;
      }, 'the replica showing the shared figures');
    } finally {
      await replica.stop();
      await rm(replicaDir, { recursive: true, force: true });
    }
  }, 240_000);
});
