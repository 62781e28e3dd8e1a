// The full re-check of holder roles (issue 27): every verified member of a server evaluated against its
// rules, a batch at a time, as the role sync runs it at start and on a schedule (roles/sync.ts), with the
// real platform client against the local platform (balances through GetTokenBalancesByContract, traits
// through the platform's metadata) and the real Discord membership sink (discord.js REST, whose queue
// keeps Discord's global limit of 50 requests a second) against the Discord stand-in.
//
// Set-up: MEMBERS members with one verified wallet each (the wallet file written as the store writes it),
// RULES rules on as many collections and roles (one asks for a trait), HOLDERS of the members holding a
// token of the first collection (minted on the local platform), in one process with the local platform.
// Two runs: the first gives the role to every holder (Discord's rate limit bounds it: one request per
// change); the second finds nothing to change (the steady state of a scheduled re-check). Each prints its
// time, the people evaluated, the platform requests made and the role changes. The machine is shared:
// `uptime`'s load is printed before and after.
//
//   npm run bench -- roles-recheck
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { REST } from 'discord.js';
import pino from 'pino';
import { DiscordMembership } from '../src/chat/discord/roles.ts';
import { startDevnet } from '../src/devnet/index.ts';
import { PlatformClient } from '../src/platform/client.ts';
import { HoldingsReader } from '../src/roles/holdings.ts';
import { RoleSync } from '../src/roles/sync.ts';
import { FileRoleStore } from '../src/store/files/roles.ts';
import { FileWalletStore } from '../src/store/files/wallets.ts';
import { FakeDiscord } from '../test/fakes/discord.ts';

const MEMBERS = 10_000;
const RULES = 5;
const HOLDERS = 500;
const GUILD = '1100000000000000100';
const COMMUNITY = `discord:${GUILD}`;
const BOT_ROLE = '1100000000000000399';
const roleId = (i: number) => String(1100000000000000301n + BigInt(i));
const userId = (i: number) => String(1200000000000000000n + BigInt(i));
const addressOf = (i: number) => `0x${(0xbe0000000n + BigInt(i)).toString(16).padStart(40, '0')}`;
const load = () =>
  loadavg()
    .map((n) => n.toFixed(2))
    .join(' ');
const silent = pino({ level: 'silent' });

console.log(`load average (uptime) before: ${load()}`);
const devnet = await startDevnet({ scale: 'small', blockIntervalMs: 0 });
const platform = new PlatformClient({
  endpoints: devnet.endpoints,
  networks: devnet.networks,
  accessKey: devnet.accessKey,
  secretToken: devnet.secretToken,
  projectId: devnet.projectId,
});
// The rules' collections: the local platform's ordinary ones (one rule each, in turn, when it has fewer).
const collections = (devnet.collections.devnet ?? []).filter((c) => !c.hostile);
const first = collections[0];
if (!first) throw new Error('no collection on the local platform');
for (let at = 0; at < HOLDERS; at += 100) {
  const batch = Array.from({ length: Math.min(100, HOLDERS - at) }, (_, i) => ({
    kind: 'mint' as const,
    collection: first.address,
    to: addressOf(at + i),
  }));
  await devnet.mine('devnet', batch);
}

const dir = await mkdtemp(join(tmpdir(), 'floorwatch-bench-recheck-'));
const now = new Date().toISOString();
let file = `${JSON.stringify({ op: 'wallets', v: 1 })}\n`;
for (let i = 0; i < MEMBERS; i++) {
  const wallet = {
    community: COMMUNITY,
    person: `discord:${userId(i)}`,
    address: addressOf(i),
    kind: 'eoa',
    verifiedAt: now,
  };
  file += `${JSON.stringify({ k: 'wallet', wallet })}\n`;
}
await writeFile(join(dir, 'wallets.jsonl'), file);
const wallets = await FileWalletStore.open(join(dir, 'wallets.jsonl'));
const roles = await FileRoleStore.open(join(dir, 'roles.jsonl'));
const traitFilter = (
  await platform.metadata.tokenCollectionFilters({ network: 'devnet', contractAddress: first.address })
)[0];
for (let i = 0; i < RULES; i++) {
  const collection = collections[i % collections.length] ?? first;
  const trait =
    i === RULES - 1 && traitFilter ? [{ name: traitFilter.name, value: String(traitFilter.values[0]) }] : [];
  await roles.addRule(
    {
      community: COMMUNITY,
      target: roleId(i),
      targetName: `Role ${i}`,
      network: 'devnet',
      collection: i === RULES - 1 ? first.address : collection.address,
      collectionName: collection.name,
      minBalance: 1,
      ...(trait.length ? { traits: trait } : {}),
      createdBy: 'discord:1',
      createdAt: now,
    },
    25,
  );
}
const discord = await FakeDiscord.start({
  guilds: [
    {
      id: GUILD,
      name: 'Bench',
      channels: ['1100000000000000200'],
      roles: [
        ...Array.from({ length: RULES }, (_, i) => ({
          id: roleId(i),
          name: `Role ${i}`,
          mentionable: false,
          position: i + 1,
        })),
        { id: BOT_ROLE, name: 'Floorwatch', mentionable: false, position: RULES + 1, permissions: String(1n << 28n) },
      ],
      botRoles: [BOT_ROLE],
      members: Array.from({ length: MEMBERS }, (_, i) => userId(i)),
    },
  ],
});
const holdings = new HoldingsReader(platform, { logger: silent });
const sync = new RoleSync({ wallets, store: roles, holdings, logger: silent, recheckEveryMs: 0 });
sync.useSink(new DiscordMembership(new REST({ api: discord.api }).setToken(discord.token), () => discord.botUser.id));

async function run(label: string, begin: () => Promise<void>): Promise<void> {
  const calls = holdings.calls;
  const changes = discord.calls.length;
  const people = sync.counters.recheckPeople;
  const started = performance.now();
  await begin();
  for (;;) {
    await sync.settled();
    if ((await roles.recheckProgress()) === undefined && sync.counters.recheckPeople - people >= MEMBERS) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await sync.settled();
  const ms = performance.now() - started;
  console.log(
    `${label}: ${(ms / 1000).toFixed(1)} s for ${sync.counters.recheckPeople - people} members x ${RULES} rules; ${holdings.calls - calls} platform requests (balance pages, one per batch of 200 wallets and kind of rule, and token metadata); ${discord.calls.length - changes} Discord role changes`,
  );
}

await run('first full re-check (gives the roles)', () => sync.start());
await run('second full re-check (nothing to change)', async () => sync.recheck(COMMUNITY));
console.log('goal: under 60 s for 10,000 members x 5 rules');
console.log(`load average (uptime) after: ${load()}`);
await sync.stop();
await roles.close();
await wallets.close();
await discord.close();
await platform.close();
await devnet.close();
await rm(dir, { recursive: true, force: true });
