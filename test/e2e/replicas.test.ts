import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Devnet, type DevnetCollectionInfo, startDevnet } from '../../src/devnet/index.ts';
import { openSharedDatabase } from '../../src/store/pg/index.ts';
import { FakeDiscord } from '../fakes/discord.ts';
import { platformEnv } from '../helpers/devnet-data.ts';
import { startTestPostgres, type TestPostgres } from '../helpers/postgres.ts';

/*
 * Issue 14: three bot processes (the real entry point, src/main.ts) on one PostgreSQL database and one
 * local platform, posting to the Discord stand-in. The process that ingests the stream is killed with
 * SIGKILL in the middle of a burst of 1,000 alerts: another takes over (backfilling from the shared
 * cursor) and every alert reaches the channel exactly once.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CHANNEL = '777000000000000001';
const DIGEST_CHANNEL = '777000000000000002';
const BLOCKS = 100;
const ALERTS_PER_BLOCK = 10;

let postgres: TestPostgres;
let devnet: Devnet;
let discord: FakeDiscord;
let cats: DevnetCollectionInfo;
let databaseUrl: string;
let probe: pg.Pool;
const dirs: string[] = [];

interface Replica {
  name: string;
  child: ChildProcess;
  logs: () => string;
  exited: Promise<number | null>;
}
const replicas: Replica[] = [];

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function until(check: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

async function startReplica(name: string): Promise<Replica> {
  const dataDir = await mkdtemp(join(tmpdir(), `floorwatch-replica-${name}-`));
  dirs.push(dataDir);
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: {
      PATH: process.env.PATH,
      ...platformEnv(devnet),
      FLOORWATCH_DATABASE_URL: databaseUrl,
      FLOORWATCH_DATA_DIR: dataDir,
      FLOORWATCH_LOG_LEVEL: 'info',
      ...discord.env,
    },
  });
  let logs = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    logs += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const replica = { name, child, logs: () => logs, exited };
  replicas.push(replica);
  return replica;
}

/** A process's JSON log lines (pino: `time` in ms since the epoch, `msg`). */
function logLines(logs: string): Array<{ time: number; msg: string }> {
  return logs.split('\n').flatMap((line) => {
    try {
      const parsed = JSON.parse(line) as { time?: unknown; msg?: unknown };
      return typeof parsed.time === 'number' && typeof parsed.msg === 'string'
        ? [{ time: parsed.time, msg: parsed.msg }]
        : [];
    } catch {
      return [];
    }
  });
}

/** Every alert embed posted to the channel, as JSON text. */
function alerts(): string[] {
  return (discord.messages.get(CHANNEL) ?? []).flatMap((m) =>
    ((m as { embeds?: unknown[] }).embeds ?? []).map((e) => JSON.stringify(e)),
  );
}

async function mineBlock(): Promise<number> {
  const activity = [];
  for (let i = 0; i < ALERTS_PER_BLOCK / 2; i++) {
    activity.push({ kind: 'listing' as const, collection: cats.address });
    activity.push({ kind: 'sale' as const, collection: cats.address });
  }
  return (await devnet.mine('devnet', activity)).blockNumber;
}

beforeAll(async () => {
  postgres = await startTestPostgres();
  databaseUrl = await postgres.freshDatabase();
  probe = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  devnet = await startDevnet({ scale: 'small', heartbeatIntervalMs: 1_000 });
  const found = devnet.collections.devnet?.find((c) => c.name === 'Moon Cats');
  if (!found) throw new Error('no Moon Cats');
  cats = found;
  discord = await FakeDiscord.start();
  // The watch rule, as /watch add would store it.
  const shared = await openSharedDatabase({ url: databaseUrl, poolSize: 2 }, pino({ level: 'silent' }), () => {});
  await shared.rules.addRule(
    {
      destination: { platform: 'discord', chatId: CHANNEL },
      network: 'devnet',
      collection: cats.address.toLowerCase(),
      collectionName: 'Moon Cats',
      kinds: ['listing', 'sale'],
      showRelists: true,
      paused: false,
      createdBy: 'discord:1',
      createdAt: new Date().toISOString(),
    },
    50,
  );
  await shared.close();
}, 120_000);

afterAll(async () => {
  for (const replica of replicas) replica.child.kill('SIGKILL');
  await Promise.all(replicas.map((r) => r.exited));
  await probe?.end();
  await discord?.close();
  await devnet?.close();
  await postgres?.stop();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

describe('several processes on one database', () => {
  it('GIVEN 3 replicas WHEN the ingest leader is killed with SIGKILL during a burst of 1,000 alerts THEN every alert is posted exactly once, the ingest lease is taken over within 10 s and alerts resume', async () => {
    for (const name of ['a', 'b', 'c']) await startReplica(name);
    const leaderOf = () => replicas.find((r) => /now leads ingest/.test(r.logs()));
    await until(() => replicas.every((r) => /floorwatch started/.test(r.logs())), 'three replicas started', 60_000);
    await until(() => leaderOf() !== undefined, 'an ingest leader', 20_000);
    const leader = leaderOf() as Replica;
    expect(replicas.filter((r) => /now leads ingest/.test(r.logs()))).toHaveLength(1);
    // Its streams are open once a block's alerts arrive: blocks mined before are not news to it (alerts
    // start at the head on a first start), so a block is mined every 3 s until one is alerted.
    const warmUntil = Date.now() + 30_000;
    while (alerts().length < ALERTS_PER_BLOCK) {
      if (Date.now() > warmUntil) throw new Error('timed out waiting for the first alerts');
      await mineBlock();
      const minedAt = Date.now();
      while (alerts().length < ALERTS_PER_BLOCK && Date.now() - minedAt < 3_000) await sleep(50);
    }
    await sleep(1_000);
    // The alerts of the warm-up blocks the streams saw; every block from here on is expected whole.
    const warmAlerts = alerts().length;

    // The leader has recorded how far it got (the shared cursor), for whoever takes over.
    const cursor = async () =>
      (await probe.query<{ block: string }>("SELECT block FROM cursors WHERE network = 'devnet'")).rows[0]?.block;
    const deadline = Date.now() + 15_000;
    while ((await cursor()) === undefined && Date.now() < deadline) await sleep(100);
    expect(await cursor()).toBeDefined();

    // The burst: the leader dies with a third of it mined.
    let mined = 1;
    for (; mined < BLOCKS / 3; mined++) await mineBlock();
    leader.child.kill('SIGKILL');
    const killedAt = Date.now();
    await leader.exited;
    const afterKill = await mineBlock();
    mined++;
    await until(
      () => alerts().some((a) => a.includes(`block ${afterKill}`)),
      'an alert of a block mined after the kill',
      45_000,
    );
    const resumedMs = Date.now() - killedAt;
    // When a survivor took the ingest lease over, by its own log line's time.
    const takenOverAt = replicas
      .filter((r) => r !== leader)
      .flatMap((r) => logLines(r.logs()))
      .find((line) => line.msg === 'this process now leads ingest')?.time;
    for (; mined < BLOCKS; mined++) await mineBlock();

    const expected = warmAlerts + (BLOCKS - 1) * ALERTS_PER_BLOCK;
    await until(() => alerts().length >= expected, `${expected} alerts`, 60_000);
    await sleep(1_000);
    const posted = alerts();
    const distinct = new Set(posted);
    console.log(
      `replicas: ${posted.length} alerts posted (${distinct.size} distinct) in ${(discord.messages.get(CHANNEL) ?? []).length} messages; ` +
        `ingest taken over ${takenOverAt === undefined ? '?' : takenOverAt - killedAt} ms and alerts resumed ${resumedMs} ms after the leader was killed`,
    );
    expect(posted).toHaveLength(expected);
    expect(distinct.size).toBe(expected);
    // The product's promise: a lease not held any more is taken over within 10 s (a killed holder's at
    // once, its connection gone; the survivors try every second), measured by the taker's own clock.
    expect(takenOverAt).toBeDefined();
    expect((takenOverAt ?? Number.POSITIVE_INFINITY) - killedAt).toBeLessThan(10_000);
    // The alerts of the block mined after the kill then wait for the taker's streams to open, the
    // blocks the leader missed to be read back, and the backlog of the burst before them to be sent
    // at the channel's pace: 8-10 s measured at load 8-12 on 2 cores (takeover 140-300 ms), up to
    // 15 s seen. The bound allows for that; the takeover above is what the product promises.
    expect(resumedMs).toBeLessThan(30_000);
    const survivors = replicas.filter((r) => r !== leader);
    expect(survivors.filter((r) => /now leads ingest/.test(r.logs()))).toHaveLength(1);
  }, 240_000);

  it('GIVEN a digest due while 3 replicas run THEN it is posted once', async () => {
    await startReplica('d');
    const running = replicas.filter((r) => r.child.exitCode === null && r.child.signalCode === null);
    expect(running).toHaveLength(3);
    await until(() => running.every((r) => /floorwatch started/.test(r.logs())), 'three replicas started', 60_000);
    // Due at the next minute that is at least 15 s away, set as /digest set would, from another process.
    const due = new Date(Math.ceil((Date.now() + 15_000) / 60_000) * 60_000);
    const chat = `discord:${DIGEST_CHANNEL}`;
    const shared = await openSharedDatabase({ url: databaseUrl, poolSize: 2 }, pino({ level: 'silent' }), () => {});
    try {
      await shared.rules.updateChat(chat, (settings) => {
        settings.digest = {
          hour: due.getUTCHours(),
          minute: due.getUTCMinutes(),
          timeZone: 'UTC',
          collections: [{ network: 'devnet', address: cats.address.toLowerCase(), name: 'Moon Cats' }],
          days: 1,
          setAt: new Date().toISOString(),
        };
      });
    } finally {
      await shared.close();
    }
    const digests = () =>
      (discord.messages.get(DIGEST_CHANNEL) ?? []).filter((m) =>
        JSON.stringify((m as { embeds?: unknown[] }).embeds ?? []).includes('Daily digest'),
      );
    await until(() => digests().length > 0, 'the digest', due.getTime() - Date.now() + 45_000);
    // Long enough for a second replica's posting to have arrived, were there one.
    await sleep(5_000);
    expect(digests()).toHaveLength(1);
    const posters = running.filter((r) => /now leads digests/.test(r.logs()));
    expect(posters.length).toBeGreaterThanOrEqual(1);
  }, 150_000);
});
