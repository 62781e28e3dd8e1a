// The role sync (roles/sync.ts) over the real stores, the real platform client against the local
// platform and the real Discord membership sink against the Discord stand-in's REST routes: the full
// re-check resumes after the last person it finished and reads balances a batch at a time; trait
// rules count only tokens with the traits the platform's metadata gives; a change the hierarchy
// refuses is recorded as such and retried by the next full re-check only.
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { REST } from 'discord.js';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DiscordMembership } from '../../src/chat/discord/roles.ts';
import type { RoleRule } from '../../src/core/roles.ts';
import { traitsOf } from '../../src/market/format.ts';
import { HoldingsReader } from '../../src/roles/holdings.ts';
import { RoleSync } from '../../src/roles/sync.ts';
import { FileRoleStore } from '../../src/store/files/roles.ts';
import { FileWalletStore } from '../../src/store/files/wallets.ts';
import { FakeDiscord } from '../fakes/discord.ts';
import { type Harness, startHarness } from '../helpers/bot-harness.ts';
import { collectionNamed } from '../helpers/devnet-data.ts';

const GUILD = '1100000000000000100';
const COMMUNITY = `discord:${GUILD}`;
const HOLDERS = '1100000000000000301';
const FURRY = '1100000000000000302';
const BOT_ROLE = '1100000000000000303';
const WHALES = '1100000000000000304';
const silent = pino({ level: 'silent' });
const people = Array.from({ length: 5 }, (_, i) => ({
  user: String(1100000000000000601n + BigInt(i)),
  address: `0x${(0xa11ce00n + BigInt(i)).toString(16).padStart(40, '0')}`,
  token: '',
}));
const key = (user: string) => `discord:${user}`;

let h: Harness;
let discord: FakeDiscord;
let wallets: FileWalletStore;
let roles: FileRoleStore;
let moonCats: string;

beforeAll(async () => {
  h = await startHarness({ blockIntervalMs: 0 });
  moonCats = collectionNamed(h.devnet, 'Moon Cats').address;
  discord = await FakeDiscord.start({
    guilds: [
      {
        id: GUILD,
        name: 'Moon Cats Club',
        channels: ['1100000000000000200'],
        roles: [
          { id: HOLDERS, name: 'Holders', mentionable: false, position: 1 },
          { id: FURRY, name: 'Furry', mentionable: false, position: 2 },
          { id: BOT_ROLE, name: 'Floorwatch', mentionable: false, position: 3, permissions: String(1n << 28n) },
          { id: WHALES, name: 'Whales', mentionable: false, position: 4 },
        ],
        botRoles: [BOT_ROLE],
        members: people.map((p) => p.user),
      },
    ],
  });
  wallets = await FileWalletStore.open(join(h.dataDir, 'wallets.jsonl'));
  roles = await FileRoleStore.open(join(h.dataDir, 'roles.jsonl'));
  const mined = await h.devnet.mine(
    'devnet',
    people.map((p) => ({ kind: 'mint' as const, collection: moonCats, to: p.address })),
  );
  mined.transactions.forEach((txn, i) => {
    const person = people[i];
    if (person) person.token = txn.tokenIds[0] ?? '';
  });
  const now = new Date();
  for (const person of people) {
    const id = createHash('sha256').update(person.user).digest('hex');
    await wallets.createLink({
      id,
      community: COMMUNITY,
      communityName: 'Moon Cats Club',
      person: key(person.user),
      channel: 'page',
      miniApp: false,
      pageToken: `page-${person.user}`,
      createdAt: now.toISOString(),
      expiresAt: new Date(now.getTime() + 60_000).toISOString(),
    });
    await wallets.completeLink(id, { address: person.address, kind: 'eoa' }, now);
  }
}, 60_000);

afterAll(async () => {
  await roles?.close();
  await wallets?.close();
  await discord?.close();
  await h?.close();
});

function rule(fields: Partial<RoleRule>): Omit<RoleRule, 'id'> {
  return {
    community: COMMUNITY,
    target: HOLDERS,
    targetName: 'Holders',
    network: 'devnet',
    collection: moonCats,
    collectionName: 'Moon Cats',
    minBalance: 1,
    createdBy: 'discord:1',
    createdAt: new Date().toISOString(),
    ...fields,
  };
}

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const granted = (role: string) =>
  people.filter((p) => discord.rolesOfMember(GUILD, p.user).includes(role)).map((p) => p.user);
const putsOf = (role: string) =>
  discord.calls.filter((c) => c.method === 'PUT' && c.path.endsWith(`/roles/${role}`)).map((c) => c.path.split('/')[5]);

function startSync(holdings: HoldingsReader): RoleSync {
  const sync = new RoleSync({
    wallets,
    store: roles,
    holdings,
    logger: silent,
    batchSize: 2,
    recheckEveryMs: 0,
  });
  const rest = new REST({ api: discord.api }).setToken(discord.token);
  sync.useSink(new DiscordMembership(rest, () => discord.botUser.id));
  return sync;
}

describe('the role sync', () => {
  it('GIVEN a full re-check under way when the process stopped THEN it resumes after the last person done, a batch of balances at a time', async () => {
    await roles.addRule(rule({}), 25);
    const [, second] = people.map((p) => key(p.user)).sort();
    if (!second) throw new Error('no people');
    // Two people were done before the process stopped.
    await roles.saveRecheckProgress({
      startedAt: new Date().toISOString(),
      communities: [COMMUNITY],
      after: second,
      people: 2,
    });
    const holdings = new HoldingsReader(h.platform, { logger: silent });
    const sync = startSync(holdings);
    await sync.start();
    await until(async () => (await roles.recheckProgress()) === undefined, 'the re-check to finish');
    await sync.settled();
    const rest = people.slice(2).map((p) => p.user);
    expect(granted(HOLDERS).sort()).toEqual(rest.sort());
    // Three people in batches of two: two balance reads, not one per person.
    expect(holdings.calls).toBe(2);
    expect(sync.counters.recheckPeople).toBe(3);
    // The next full re-check (here one asked for the community) covers everyone.
    sync.recheck(COMMUNITY);
    await until(() => granted(HOLDERS).length === people.length, 'everyone to hold the role');
    expect(putsOf(HOLDERS).sort()).toEqual(people.map((p) => p.user).sort());
    await sync.stop();
  });

  it('GIVEN a trait rule THEN only members whose tokens have the trait (as the platform’s metadata says) get the role', async () => {
    const first = people[0];
    if (!first) throw new Error('no people');
    const metadata = await h.platform.marketplace.getCollectible({
      network: 'devnet',
      contractAddress: moonCats,
      tokenId: first.token,
    });
    const trait = traitsOf(metadata)[0];
    if (!trait) throw new Error('the token has no trait');
    const expected: string[] = [];
    for (const person of people) {
      const token = await h.platform.marketplace.getCollectible({
        network: 'devnet',
        contractAddress: moonCats,
        tokenId: person.token,
      });
      const has = token.attributes.some(
        (a) =>
          String(a.trait_type ?? a.traitType ?? a.name).toLowerCase() === trait.name.toLowerCase() &&
          String(a.value).toLowerCase() === trait.value.toLowerCase(),
      );
      if (has) expected.push(person.user);
    }
    await roles.addRule(rule({ target: FURRY, targetName: 'Furry', traits: [trait] }), 25);
    const sync = startSync(new HoldingsReader(h.platform, { logger: silent }));
    // The full re-check at start.
    await sync.start();
    await until(() => granted(FURRY).length >= expected.length && expected.length > 0, 'the trait role');
    await until(async () => (await roles.recheckProgress()) === undefined, 'the re-check');
    await sync.settled();
    expect(granted(FURRY).sort()).toEqual(expected.sort());
    await sync.stop();
  });

  it('GIVEN a role above the bot’s THEN the refusal is recorded for good and not retried on every change, until a full re-check', async () => {
    await roles.addRule(rule({ target: WHALES, targetName: 'Whales' }), 25);
    const sync = startSync(new HoldingsReader(h.platform, { logger: silent }));
    await sync.start();
    await until(async () => {
      const counts = await roles.grantCounts(COMMUNITY);
      return (counts.find((c) => c.target === WHALES)?.failed ?? 0) === people.length;
    }, 'the refusals to be recorded');
    const counts = (await roles.grantCounts(COMMUNITY)).find((c) => c.target === WHALES);
    expect(counts?.lastFailure).toMatchObject({ reason: 'role_above_bot', permanent: true });
    const attempts = () =>
      discord.calls.filter((c) => c.method === 'PUT' && c.path.endsWith(`/roles/${WHALES}`)).length;
    const before = attempts();
    expect(before).toBe(people.length);
    // A wallet change of one of them evaluates them again, but does not knock on the same door.
    const person = people[0];
    if (!person) throw new Error('no people');
    const [wallet] = await wallets.walletsOf(COMMUNITY, key(person.user));
    if (!wallet) throw new Error('no wallet');
    sync.walletChanged({ type: 'linked', wallet });
    await sync.settled();
    expect(attempts()).toBe(before);
    // The bot's role is moved up: the next full re-check gives the role.
    const botRole = discord.guilds[0]?.roles?.find((r) => r.id === BOT_ROLE);
    if (!botRole) throw new Error('no bot role');
    botRole.position = 5;
    sync.recheck(COMMUNITY);
    await until(() => granted(WHALES).length === people.length, 'the role once the bot sits above it');
    await sync.stop();
  });
});
