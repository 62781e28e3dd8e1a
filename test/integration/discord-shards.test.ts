import { Events, type Interaction } from 'discord.js';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { type DiscordAdapter, startDiscord } from '../../src/chat/discord/adapter.ts';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { FakeDiscord, type FakeGuild, INVALID_SHARD, shardOf } from '../fakes/discord.ts';
import { type Harness, startHarness } from '../helpers/bot-harness.ts';

const COUNT = 2;
/** A guild id whose timestamp bits put it on `shard` of {@link COUNT}. */
function guildOn(shard: number, n: number): string {
  return String(((300_000_000_000n + BigInt(n * COUNT + shard)) << 22n) | 7n);
}
const GUILDS: FakeGuild[] = [
  { id: guildOn(0, 0), name: 'Zero A', channels: ['1100000000000000210'] },
  { id: guildOn(1, 0), name: 'One A', channels: ['1100000000000000211'] },
  { id: guildOn(0, 1), name: 'Zero B', channels: ['1100000000000000212'] },
  { id: guildOn(1, 1), name: 'One B', channels: ['1100000000000000213'] },
];

function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    loadConfig(env, '/srv/bot');
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe('DISCORD_SHARD_IDS and DISCORD_SHARD_COUNT', () => {
  const discord = { DISCORD_TOKEN: 'secret.discord.token-value', DISCORD_APPLICATION_ID: '1' };

  it('GIVEN ids and ranges THEN the shards are read sorted and distinct', () => {
    const config = loadConfig({ ...discord, DISCORD_SHARD_IDS: '8, 0-3,2', DISCORD_SHARD_COUNT: '10' });
    expect(config.discord?.shards).toEqual({ ids: [0, 1, 2, 3, 8], count: 10 });
    expect(loadConfig(discord).discord?.shards).toBeUndefined();
  });

  it('GIVEN one without the other THEN the missing variable is named', () => {
    expect(problemsOf({ ...discord, DISCORD_SHARD_IDS: '0' })).toEqual([
      expect.stringMatching(/^DISCORD_SHARD_COUNT is not set: DISCORD_SHARD_IDS and DISCORD_SHARD_COUNT go together/),
    ]);
    expect(problemsOf({ ...discord, DISCORD_SHARD_COUNT: '2' })).toEqual([
      expect.stringMatching(/^DISCORD_SHARD_IDS is not set/),
    ]);
  });

  it('GIVEN a shard id not below the count, a count below 1 or a malformed entry THEN each is refused by name', () => {
    expect(problemsOf({ ...discord, DISCORD_SHARD_IDS: '0-2', DISCORD_SHARD_COUNT: '2' })).toEqual([
      'DISCORD_SHARD_IDS: shard 2 is not below DISCORD_SHARD_COUNT (2); shard ids run from 0 to 1.',
    ]);
    expect(problemsOf({ ...discord, DISCORD_SHARD_IDS: '0', DISCORD_SHARD_COUNT: '0' })[0]).toMatch(
      /^DISCORD_SHARD_COUNT must be a whole number from 1 to/,
    );
    for (const ids of ['3-1', 'one', '1,,2', '-1', '0-']) {
      const problems = problemsOf({ ...discord, DISCORD_SHARD_IDS: ids, DISCORD_SHARD_COUNT: '4' });
      expect(problems[0], ids).toMatch(/^DISCORD_SHARD_IDS: ".*" must be a shard id or an ascending range/);
    }
    const all = problemsOf({ ...discord, DISCORD_SHARD_IDS: 'x', DISCORD_SHARD_COUNT: 'y' }).join('\n');
    expect(all).not.toContain(discord.DISCORD_TOKEN);
  });
});

describe('Discord shards split across processes', () => {
  let h: Harness;
  let fake: FakeDiscord;
  const adapters: DiscordAdapter[] = [];
  /** Guild ids (or `dm`) of the interactions each adapter's client received, by shard id. */
  const received: string[][] = [[], []];

  beforeAll(async () => {
    h = await startHarness();
    fake = await FakeDiscord.start({ guilds: GUILDS, recommendedShards: COUNT });
    for (const shard of [0, 1]) {
      // One process's environment each, as a replica would be started.
      const config = loadConfig({
        DISCORD_TOKEN: fake.token,
        DISCORD_APPLICATION_ID: fake.applicationId,
        DISCORD_API_ROOT: fake.api,
        DISCORD_SHARD_IDS: String(shard),
        DISCORD_SHARD_COUNT: String(COUNT),
      }).discord;
      if (!config) throw new Error('no discord configuration');
      const adapter = await startDiscord({
        config,
        engine: h.engine,
        logger: pino({ level: 'silent' }),
        clientOptions: { rest: { retries: 1, timeout: 5_000 } },
        deferAfterMs: 2_500,
        readyTimeoutMs: 10_000,
      });
      adapters.push(adapter);
      adapter.client.on(Events.InteractionCreate, (interaction: Interaction) => {
        received[shard]?.push(interaction.guildId ?? 'dm');
      });
    }
  }, 60_000);

  afterAll(async () => {
    for (const adapter of adapters) await adapter.stop();
    await fake?.close();
    await h?.close();
  });

  it('GIVEN DISCORD_SHARD_IDS 0 and 1 of 2 THEN the clients identify as [0, 2] and [1, 2] and hold only their guilds', () => {
    expect([...fake.identifiedShards].sort()).toEqual([
      [0, 2],
      [1, 2],
    ]);
    for (const [shard, adapter] of adapters.entries()) {
      expect([...adapter.client.ws.shards.keys()]).toEqual([shard]);
      expect(adapter.client.options.shardCount).toBe(COUNT);
      expect(adapter.ready()).toBe(true);
      const own = GUILDS.filter((g) => shardOf(g.id, COUNT) === shard).map((g) => g.id);
      expect(own).toHaveLength(2);
      expect([...adapter.client.guilds.cache.keys()].sort()).toEqual(own.sort());
    }
  });

  it('GIVEN commands in every guild THEN each is answered once, by the process holding its shard', async () => {
    const before = received.map((r) => r.length);
    for (const guild of GUILDS) {
      const { id } = fake.dispatchInteraction({
        kind: 'command',
        name: 'help',
        guildId: guild.id,
        channelId: guild.channels[0] ?? '',
      });
      const callback = await fake.nextCall('POST', new RegExp(`^/interactions/${id}/`), 10_000);
      expect(callback.body?.type).toBe(4);
      expect(JSON.stringify(callback.body)).toContain('Floorwatch');
    }
    // A direct message belongs to shard 0.
    const dm = fake.dispatchInteraction({
      kind: 'command',
      name: 'help',
      guildId: null,
      channelId: '1100000000000000299',
    });
    await fake.nextCall('POST', new RegExp(`^/interactions/${dm.id}/`), 10_000);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(received[0]?.slice(before[0])).toEqual([GUILDS[0]?.id, GUILDS[2]?.id, 'dm']);
    expect(received[1]?.slice(before[1])).toEqual([GUILDS[1]?.id, GUILDS[3]?.id]);
    const callbacks = fake.calls.filter((c) => c.method === 'POST' && /^\/v10\/interactions\//.test(c.path));
    expect(callbacks).toHaveLength(GUILDS.length + 1);
  });

  it('GIVEN shards split across processes THEN only the process holding shard 0 registers the commands', () => {
    const puts = fake.calls.filter((c) => c.method === 'PUT' && /\/commands$/.test(c.path));
    expect(puts).toHaveLength(1);
    expect((fake.commands.global as Array<{ name: string }>).map((c) => c.name)).toEqual(
      h.engine.commands.map((c) => c.name),
    );
  });

  it('GIVEN an IDENTIFY with a shard id not below its count THEN the stand-in closes with 4010, as Discord does', async () => {
    const url = fake.api.replace(/^http/, 'ws').replace(/\/api$/, '/gateway');
    const ws = new WebSocket(url);
    const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
    await new Promise((resolve) => ws.once('message', resolve));
    ws.send(JSON.stringify({ op: 2, d: { token: fake.token, intents: 1, properties: {}, shard: [2, 2] } }));
    expect(await closed).toBe(INVALID_SHARD);
    expect(fake.identifiedShards).toHaveLength(2);
  });
});
