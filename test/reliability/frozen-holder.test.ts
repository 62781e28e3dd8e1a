import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Devnet, type DevnetCollectionInfo, startDevnet } from '../../src/devnet/index.ts';
import { LOCK_FILE } from '../../src/store/files/lock.ts';
import { StateStore } from '../../src/store/files/state.ts';
import { openSharedDatabase } from '../../src/store/pg/index.ts';
import { FakeDiscord } from '../fakes/discord.ts';
import { collectionNamed, platformEnv } from '../helpers/devnet-data.ts';
import { type RunningEntryPoint, spawnEntryPoint } from '../helpers/entry-point.ts';
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.ts';

/*
 * Issue 24: a frozen holder keeps its role. Real bot processes (the entry point, src/main.ts), frozen
 * with a real SIGSTOP and woken with SIGCONT, against one local platform in this process:
 *
 * - files: a second bot started on the frozen one's data directory once its lease went unrenewed
 *   takes the directory over and posts every alert; the first, woken with alerts waiting in its
 *   streams, exits 75 without posting any. Before leases the second was refused for 60 s, then both
 *   ran and both posted every alert.
 * - PostgreSQL: with 3 replicas, alerts resume while the ingest leader is frozen (its leases expire);
 *   woken, it exits 75 without sending. Before leases its advisory locks stayed held by its open
 *   connection: no alert anywhere for the whole freeze.
 * - A lone bot (files, or one replica on PostgreSQL) frozen past its lease, which nobody took, takes
 *   it again on waking and goes on: the alerts of the blocks mined meanwhile are posted once. Before,
 *   it exited 75 on waking (a Ctrl-Z of `npm start` for 10 s, or a laptop asleep, ended the bot).
 */

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function until(check: () => boolean, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

const running: RunningEntryPoint[] = [];
const dirs: string[] = [];
let devnet: Devnet;
let cats: DevnetCollectionInfo;

function start(env: Record<string, string>): RunningEntryPoint {
  const bot = spawnEntryPoint({ ...platformEnv(devnet), FLOORWATCH_LOG_LEVEL: 'info', ...env });
  running.push(bot);
  return bot;
}

/** The exit code, or `running` when the bot has not exited within `ms`. */
async function exitWithin(bot: RunningEntryPoint, ms: number): Promise<number | null | 'running'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'running'>((resolve) => {
    timer = setTimeout(() => resolve('running'), ms);
  });
  try {
    return await Promise.race([bot.exited.then((run) => run.code), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The leases in the database and their tokens. */
async function leaseTokens(databaseUrl: string): Promise<Map<string, string>> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string; token: string }>(
      'SELECT name, token::text AS token FROM leases',
    );
    return new Map(rows.map((row) => [row.name, row.token]));
  } finally {
    await client.end();
  }
}

const alive = (bot: RunningEntryPoint) => bot.child.exitCode === null && bot.child.signalCode === null;

/** Mines a block with one listing of Moon Cats; its number. */
async function mineListing(): Promise<number> {
  return (await devnet.mine('devnet', [{ kind: 'listing', collection: cats.address }])).blockNumber;
}

beforeAll(async () => {
  devnet = await startDevnet({ scale: 'small', blockIntervalMs: 0, heartbeatIntervalMs: 1_000 });
  cats = collectionNamed(devnet, 'Moon Cats');
});

afterAll(async () => {
  for (const bot of running) {
    if (bot.child.signalCode === null && bot.child.exitCode === null) {
      bot.child.kill('SIGCONT');
      bot.child.kill('SIGKILL');
    }
  }
  await Promise.all(running.map((bot) => bot.exited.catch(() => undefined)));
  await devnet?.close();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

describe('a frozen bot on files', () => {
  /** The blocks of the listing alerts a bot printed in its terminal chat. */
  const alertedBlocks = (stdout: string): number[] =>
    [...stdout.matchAll(/Moon Cats · devnet · block (\d+)/g)].map((m) => Number(m[1]));

  /** A data directory with a listing rule for Moon Cats in the terminal chat. */
  async function dataDirWithRule(): Promise<string> {
    const dataDir = await mkdtemp(join(tmpdir(), 'floorwatch-frozen-'));
    dirs.push(dataDir);
    // The watch rule, as /watch add in the terminal chat would store it.
    const store = await StateStore.open(join(dataDir, 'state.json'));
    await store.addRule(
      {
        destination: { platform: 'console', chatId: 'terminal' },
        network: 'devnet',
        collection: cats.address.toLowerCase(),
        collectionName: cats.name,
        kinds: ['listing'],
        paused: false,
        createdBy: 'frozen-test',
        createdAt: new Date().toISOString(),
      },
      10,
    );
    await store.flush();
    return dataDir;
  }

  /** Mines blocks until the bot alerts one (its streams are open), then lets it save its cursor. */
  async function warmUp(bot: RunningEntryPoint): Promise<void> {
    await until(() => bot.stderr.includes('floorwatch started'), 'the bot to start', 60_000);
    const warmUntil = Date.now() + 30_000;
    while (alertedBlocks(bot.stdout).length === 0) {
      if (Date.now() > warmUntil) throw new Error(`no alert from the bot:\n${bot.stderr.slice(-3_000)}`);
      await mineListing();
      const minedAt = Date.now();
      while (alertedBlocks(bot.stdout).length === 0 && Date.now() - minedAt < 2_000) await sleep(50);
    }
    // Its cursor is saved (within a second), for whoever reads the blocks it missed.
    await sleep(2_500);
  }

  it('GIVEN a lone bot frozen with SIGSTOP for 12 s, past its lease WHEN it is woken and nobody took its data directory THEN it takes the lease again, keeps running, and posts the alerts of the blocks mined meanwhile once', async () => {
    const dataDir = await dataDirWithRule();
    const bot = start({ FLOORWATCH_DATA_DIR: dataDir });
    await warmUp(bot);

    bot.child.kill('SIGSTOP');
    const frozenAt = Date.now();
    const whileFrozen = [await mineListing(), await mineListing()];
    // Past the lease's 10 s without renewal (8 s of it counted valid by the holder).
    await sleep(Math.max(0, frozenAt + 12_000 - Date.now()));
    const logBefore = bot.stderr.length;
    bot.child.kill('SIGCONT');
    const wokenAt = Date.now();
    await until(
      () => whileFrozen.every((block) => alertedBlocks(bot.stdout).includes(block)) || !alive(bot),
      'the alerts of the blocks mined while it was frozen',
      30_000,
    );
    const caughtUpMs = Date.now() - wokenAt;
    expect(alive(bot)).toBe(true);
    const afterWaking = await mineListing();
    await until(() => alertedBlocks(bot.stdout).includes(afterWaking), 'an alert after it was woken', 30_000);
    await sleep(1_000);

    expect(alive(bot)).toBe(true);
    const alerted = alertedBlocks(bot.stdout);
    for (const block of [...whileFrozen, afterWaking]) expect(alerted.filter((b) => b === block)).toEqual([block]);
    const afterWakingLog = bot.stderr.slice(logBefore);
    expect(afterWakingLog).toMatch(/nobody took it over: it goes on/);
    expect(afterWakingLog).not.toMatch(/lost the lease/);
    expect(JSON.parse(await readFile(join(dataDir, LOCK_FILE), 'utf8')).pid).toBe(bot.child.pid);
    bot.child.stdin.end('/help\n');
    expect((await bot.exited).code).toBe(0);
    console.log(
      `lone frozen bot on files: frozen ${((wokenAt - frozenAt) / 1000).toFixed(1)} s; woken, it took its lease ` +
        `again and posted the ${whileFrozen.length} blocks mined meanwhile ${caughtUpMs} ms later`,
    );
  }, 180_000);

  it('GIVEN a bot frozen with SIGSTOP WHEN a second starts on its data directory after its lease went unrenewed and the first is woken THEN the second posts every alert once and the first exits 75 without posting', async () => {
    const dataDir = await dataDirWithRule();
    const env = { FLOORWATCH_DATA_DIR: dataDir };

    const first = start(env);
    await warmUp(first);

    first.child.kill('SIGSTOP');
    const frozenAt = Date.now();
    // Mined while it is frozen: its streams hold these events for when it wakes.
    const whileFrozen = [await mineListing()];
    // Past the lease's 10 s without renewal.
    await sleep(Math.max(0, frozenAt + 11_000 - Date.now()));
    const second = start(env);
    await until(
      () => second.stderr.includes('floorwatch started') || !alive(second),
      'the second bot to start',
      60_000,
    );
    expect(second.stderr).not.toContain('is in use by another Floorwatch');
    expect(alive(second)).toBe(true);
    expect(JSON.parse(await readFile(join(dataDir, LOCK_FILE), 'utf8')).pid).toBe(second.child.pid);
    // It reads back the block mined while the first was frozen, and alerts from its streams.
    await until(() => alertedBlocks(second.stdout).includes(whileFrozen[0] ?? -1), 'the missed block', 30_000);
    const beforeWaking = await mineListing();
    whileFrozen.push(beforeWaking);
    await until(() => alertedBlocks(second.stdout).includes(beforeWaking), 'the second bot’s alert', 30_000);

    // Woken, with two blocks of alerts waiting in its streams.
    const firstOutputBefore = first.stdout.length;
    first.child.kill('SIGCONT');
    const wokenAt = Date.now();
    const code = await exitWithin(first, 30_000);
    const exitedMs = Date.now() - wokenAt;
    expect(alertedBlocks(first.stdout.slice(firstOutputBefore))).toEqual([]);
    expect(code).toBe(75);
    expect(first.stderr).toMatch(/lost the lease on the data directory/);

    const afterWaking = await mineListing();
    await until(() => alertedBlocks(second.stdout).includes(afterWaking), 'an alert after the first exited', 30_000);
    await sleep(1_000);
    const all = [...alertedBlocks(first.stdout), ...alertedBlocks(second.stdout)];
    for (const block of [...whileFrozen, afterWaking]) expect(all.filter((b) => b === block)).toEqual([block]);
    // The first left the lease alone: it is the second's, which still runs and stops cleanly.
    expect(JSON.parse(await readFile(join(dataDir, LOCK_FILE), 'utf8')).pid).toBe(second.child.pid);
    second.child.stdin.end('/help\n');
    expect((await second.exited).code).toBe(0);
    console.log(
      `frozen bot on files: frozen ${((wokenAt - frozenAt) / 1000).toFixed(1)} s, the second started 11 s in and took ` +
        `the directory over; the first, woken, exited ${code} ${exitedMs} ms later with no alert posted`,
    );
  }, 180_000);
});

describe('a frozen replica on PostgreSQL', () => {
  const CHANNEL = '777000000000000024';
  const ALERTS_PER_BLOCK = 4;
  let postgres: TestPostgres;
  let discord: FakeDiscord;

  beforeAll(async () => {
    postgres = await startTestPostgres();
    discord = await FakeDiscord.start();
  }, 120_000);
  afterAll(async () => {
    await discord?.close();
    await postgres?.stop();
  });

  /** Every alert embed posted to the channel, as JSON text. */
  const alerts = (channel = CHANNEL): string[] =>
    (discord.messages.get(channel) ?? []).flatMap((m) =>
      ((m as { embeds?: unknown[] }).embeds ?? []).map((e) => JSON.stringify(e)),
    );

  /** A fresh database with a listing rule for Moon Cats in `channel`. */
  async function databaseWithRule(channel: string): Promise<string> {
    const databaseUrl = await postgres.freshDatabase();
    const shared = await openSharedDatabase({ url: databaseUrl, poolSize: 2 }, pino({ level: 'silent' }), () => {});
    await shared.rules.addRule(
      {
        destination: { platform: 'discord', chatId: channel },
        network: 'devnet',
        collection: cats.address.toLowerCase(),
        collectionName: 'Moon Cats',
        kinds: ['listing'],
        showRelists: true,
        paused: false,
        createdBy: 'discord:1',
        createdAt: new Date().toISOString(),
      },
      50,
    );
    await shared.close();
    return databaseUrl;
  }

  async function replica(databaseUrl: string): Promise<RunningEntryPoint> {
    const dataDir = await mkdtemp(join(tmpdir(), 'floorwatch-frozen-replica-'));
    dirs.push(dataDir);
    return start({
      FLOORWATCH_DATABASE_URL: databaseUrl,
      FLOORWATCH_DATA_DIR: dataDir,
      // Each send is logged at debug: the frozen one's log tells whether it sent after waking.
      FLOORWATCH_LOG_LEVEL: 'debug',
      DISCORD_TOKEN: discord.token,
      DISCORD_APPLICATION_ID: discord.applicationId,
      DISCORD_GUILD_ID: discord.guildId,
      DISCORD_API_ROOT: discord.api,
    });
  }

  async function mineBlock(): Promise<number> {
    const activity = Array.from({ length: ALERTS_PER_BLOCK }, () => ({
      kind: 'listing' as const,
      collection: cats.address,
    }));
    return (await devnet.mine('devnet', activity)).blockNumber;
  }

  it('GIVEN a lone replica frozen with SIGSTOP for 12 s, past its leases WHEN it is woken and nobody took them THEN it takes them again with the same tokens, keeps running, and posts the alerts of the blocks mined meanwhile once', async () => {
    const LONE = '777000000000000025';
    const databaseUrl = await databaseWithRule(LONE);
    const bot = await replica(databaseUrl);
    await until(() => bot.stderr.includes('floorwatch started'), 'the replica', 90_000);
    await until(() => bot.stderr.includes('now leads ingest'), 'the ingest lease', 30_000);
    const warmUntil = Date.now() + 40_000;
    while (alerts(LONE).length < ALERTS_PER_BLOCK) {
      if (Date.now() > warmUntil) throw new Error('timed out waiting for the first alerts');
      await mineBlock();
      const minedAt = Date.now();
      while (alerts(LONE).length < ALERTS_PER_BLOCK && Date.now() - minedAt < 3_000) await sleep(50);
    }
    await sleep(2_500);
    const warmAlerts = alerts(LONE).length;
    const tokensBefore = await leaseTokens(databaseUrl);

    bot.child.kill('SIGSTOP');
    const frozenAt = Date.now();
    const mined = [await mineBlock(), await mineBlock()];
    // Past the leases' 10 s without renewal: expired in the database, but nobody takes them.
    await sleep(Math.max(0, frozenAt + 12_000 - Date.now()));
    const logBefore = bot.stderr.length;
    bot.child.kill('SIGCONT');
    const wokenAt = Date.now();
    const expectedWhileFrozen = warmAlerts + mined.length * ALERTS_PER_BLOCK;
    await until(
      () => alerts(LONE).length >= expectedWhileFrozen || !alive(bot),
      'the alerts of the blocks mined while it was frozen',
      60_000,
    );
    const caughtUpMs = Date.now() - wokenAt;
    expect(alive(bot)).toBe(true);
    mined.push(await mineBlock());
    const expected = warmAlerts + mined.length * ALERTS_PER_BLOCK;
    await until(() => alerts(LONE).length >= expected, `${expected} alerts`, 60_000);
    await sleep(1_500);
    const posted = alerts(LONE);
    const afterWaking = bot.stderr.slice(logBefore);

    expect(alive(bot)).toBe(true);
    expect(posted).toHaveLength(expected);
    expect(new Set(posted).size).toBe(expected);
    for (const block of mined)
      expect(posted.filter((a) => a.includes(`block ${block}`))).toHaveLength(ALERTS_PER_BLOCK);
    expect(afterWaking).toMatch(/nobody had taken them/);
    expect(afterWaking).not.toMatch(/lost a lease|lost the lease/);
    // The same leases, renewed: nobody took them, so their tokens did not change.
    const tokensAfter = await leaseTokens(databaseUrl);
    for (const [name, token] of tokensBefore) if (tokensAfter.has(name)) expect(tokensAfter.get(name)).toBe(token);
    expect(tokensAfter.get('ingest:devnet')).toBe(tokensBefore.get('ingest:devnet'));
    bot.child.kill('SIGTERM');
    expect((await bot.exited).code).toBe(0);
    console.log(
      `lone frozen replica: frozen ${((wokenAt - frozenAt) / 1000).toFixed(1)} s; woken, it took its leases again ` +
        `and posted the alerts of the ${mined.length - 1} blocks mined meanwhile ${caughtUpMs} ms later`,
    );
  }, 240_000);

  it('GIVEN 3 replicas WHEN the ingest leader is frozen with SIGSTOP THEN alerts resume while it is frozen, every alert is posted once, and woken it exits 75 without sending', async () => {
    const databaseUrl = await databaseWithRule(CHANNEL);
    const replicas: RunningEntryPoint[] = [];
    for (let i = 0; i < 3; i++) replicas.push(await replica(databaseUrl));
    const leaderOf = () => replicas.find((r) => r.stderr.includes('now leads ingest'));
    await until(() => replicas.every((r) => r.stderr.includes('floorwatch started')), 'three replicas', 90_000);
    await until(() => leaderOf() !== undefined, 'an ingest leader', 30_000);
    const leader = leaderOf() as RunningEntryPoint;
    const warmUntil = Date.now() + 40_000;
    while (alerts().length < ALERTS_PER_BLOCK) {
      if (Date.now() > warmUntil) throw new Error('timed out waiting for the first alerts');
      await mineBlock();
      const minedAt = Date.now();
      while (alerts().length < ALERTS_PER_BLOCK && Date.now() - minedAt < 3_000) await sleep(50);
    }
    await sleep(2_500);
    const warmAlerts = alerts().length;

    leader.child.kill('SIGSTOP');
    const frozenAt = Date.now();
    // A block a second for 25 s; alerts must come back before the leader is woken.
    const FREEZE_MS = 25_000;
    const mined: number[] = [];
    let resumedMs: number | undefined;
    while (Date.now() - frozenAt < FREEZE_MS) {
      mined.push(await mineBlock());
      const blocks = mined.map((b) => `block ${b}`);
      if (resumedMs === undefined && alerts().some((a) => blocks.some((b) => a.includes(b)))) {
        resumedMs = Date.now() - frozenAt;
      }
      await sleep(1_000);
    }
    const taker = replicas.find((r) => r !== leader && r.stderr.includes('now leads ingest'));

    const leaderLogBefore = leader.stderr.length;
    leader.child.kill('SIGCONT');
    const code = await exitWithin(leader, 30_000);
    const afterWaking = leader.stderr.slice(leaderLogBefore);
    for (let i = 0; i < 3; i++) mined.push(await mineBlock());
    const expected = warmAlerts + mined.length * ALERTS_PER_BLOCK;
    await until(() => alerts().length >= expected, `${expected} alerts`, 60_000);
    await sleep(1_500);
    const posted = alerts();
    console.log(
      `frozen replica: alerts resumed ${resumedMs} ms after the ingest leader was frozen (for ${FREEZE_MS / 1000} s); ` +
        `woken, it exited ${code}; ${posted.length} alerts posted (${new Set(posted).size} distinct), expected ${expected}`,
    );

    expect(resumedMs).toBeDefined();
    expect(taker).toBeDefined();
    expect(code).toBe(75);
    expect(afterWaking).toMatch(/lost a lease|lost the lease/);
    expect(afterWaking).not.toMatch(/"outcome":"sent"/);
    expect(posted).toHaveLength(expected);
    expect(new Set(posted).size).toBe(expected);
    for (const replica of replicas) if (replica !== leader) replica.child.kill('SIGTERM');
    for (const replica of replicas) expect((await replica.exited).code).toBe(replica === leader ? 75 : 0);
  }, 240_000);
});
