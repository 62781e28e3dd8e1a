// Holder roles in sync (issue 27): the time from the block that moves a token to the role change on
// Discord, through the bot as `npm start` runs it (src/main.ts: its local platform, the alert streams
// following the rule's collection, the role sync, the real discord.js client) against the Discord
// stand-in (test/fakes/discord.ts), which notes when each `PUT|DELETE /guilds/{g}/members/{u}/roles/{r}`
// arrives.
//
// "Block" is when `devnet.mine()` is called: the local platform builds the block and writes its logs to
// the open streams inside that call. The role change is when the stand-in receives the REST call. The
// local platform runs in the bot's process here (it shares the event loop, as `npm start` runs it), so the
// figures include its work; the platform calls the sync makes (GetTokenBalancesByContract) go over local
// HTTP. The machine is shared: its load (`uptime`) is printed before and after.
//
// Set-up: MEMBERS members, each with one verified wallet (a fresh key, verified with the paste path's
// signature) holding one Moon Cat, and one rule (`/roles add @Holders moon cats`), so each holds the role.
// Then, in turn: one member sends their token away (the role is taken), and it is minted back to them
// (the role is given): SEQUENTIAL samples of each, one block at a time. Then BURST blocks each move the
// tokens of BURST_SIZE members at once, away and back.
//
// Figures: p50 / p90 / p99 / max over all samples of each kind and over all of them; the goal is p99 < 5 s,
// platform calls included.
//
//   npm run bench -- roles-latency
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { startBot } from '../src/main.ts';
import { FakeDiscord } from '../test/fakes/discord.ts';

const MEMBERS = 20;
const SEQUENTIAL = 60;
const BURST = 10;
const BURST_SIZE = 10;
const GUILD = '1100000000000000100';
const HOLDERS = '1100000000000000301';
const BOT_ROLE = '1100000000000000302';
const ELSEWHERE = '0x00000000000000000000000000000000000b0b0b';

const load = () =>
  loadavg()
    .map((n) => n.toFixed(2))
    .join(' ');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

function figures(name: string, samples: readonly number[]): string {
  const sorted = [...samples].sort((a, b) => a - b);
  return `${name.padEnd(22)} n=${String(sorted.length).padStart(4)}  p50 ${percentile(sorted, 50)} ms  p90 ${percentile(sorted, 90)} ms  p99 ${percentile(sorted, 99)} ms  max ${sorted.at(-1)} ms`;
}

console.log(`load average (uptime) before: ${load()}`);
const members = Array.from({ length: MEMBERS }, (_, i) => ({
  user: String(1100000000000000600n + BigInt(i)),
  account: privateKeyToAccount(generatePrivateKey()),
  token: '',
}));
const discord = await FakeDiscord.start({
  guilds: [
    {
      id: GUILD,
      name: 'Bench',
      channels: ['1100000000000000200'],
      roles: [
        { id: HOLDERS, name: 'Holders', mentionable: false, position: 1 },
        { id: BOT_ROLE, name: 'Floorwatch', mentionable: false, position: 2, permissions: String(1n << 28n) },
      ],
      botRoles: [BOT_ROLE],
      members: members.map((m) => m.user),
    },
  ],
});
const dataDir = await mkdtemp(join(tmpdir(), 'floorwatch-bench-roles-'));
const bot = await startBot({
  env: {
    FLOORWATCH_DATA_DIR: dataDir,
    FLOORWATCH_DEVNET_BLOCK_MS: '0',
    LOG_LEVEL: 'warn',
    DISCORD_TOKEN: discord.token,
    DISCORD_APPLICATION_ID: discord.applicationId,
    DISCORD_GUILD_ID: GUILD,
    DISCORD_API_ROOT: discord.api,
  },
  stdin: new PassThrough(),
  logDestination: new Writable({ write: (_chunk, _encoding, done) => done() }),
});
const local = bot.devnet;
const found = local?.collections.devnet?.find((c) => c.name === 'Moon Cats')?.address;
if (!local || !found) throw new Error('no local platform with Moon Cats');
const devnet = local;
const moonCats: string = found;

async function until(check: () => boolean, what: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(2);
  }
}

/** When the stand-in received the member's next role change of `method`, after call number `from`. */
function changeAt(user: string, method: 'PUT' | 'DELETE', from: number): number | undefined {
  for (let i = from; i < discord.calls.length; i++) {
    const call = discord.calls[i];
    if (call?.method === method && call.path.endsWith(`/members/${user}/roles/${HOLDERS}`)) return call.at;
  }
  return undefined;
}

// The rule, as a moderator adds it.
discord.dispatchInteraction({
  kind: 'command',
  name: 'roles',
  subcommand: 'add',
  options: { role: HOLDERS, collection: moonCats },
  permissions: String(1n << 28n),
});
await until(() => bot.roles.collections('devnet').length > 0, 'the rule');
await until(() => bot.alerts.status().streams.some((s) => s.contracts >= 2), 'the streams to follow the rule');

// Every member holds a token and verifies their wallet.
const minted = await devnet.mine(
  'devnet',
  members.map((m) => ({ kind: 'mint' as const, collection: moonCats, to: m.account.address })),
);
minted.transactions.forEach((txn, i) => {
  const member = members[i];
  if (member) member.token = txn.tokenIds[0] ?? '';
});
const community = { key: `discord:${GUILD}`, name: 'Bench' };
for (const m of members) {
  const issued = await bot.verification.issueChatMessage(community, `discord:${m.user}`, m.account.address);
  if (!issued.ok) throw new Error(issued.text);
  const signature = await m.account.signMessage({ message: issued.message });
  const outcome = await bot.verification.checkChatSignature(community, `discord:${m.user}`, signature);
  if (!outcome.ok) throw new Error('verification failed');
}
await until(() => members.every((m) => discord.rolesOfMember(GUILD, m.user).includes(HOLDERS)), 'the first grants');
const callsBefore = bot.roles.platformCalls;

const taken: number[] = [];
const given: number[] = [];
/** Moves tokens of some members away (or back) in one block; the latency of each member's role change. */
async function move(batch: typeof members, away: boolean): Promise<number[]> {
  const from = discord.calls.length;
  const method = away ? 'DELETE' : 'PUT';
  const minedAt = Date.now();
  const mined = await devnet.mine(
    'devnet',
    batch.map((m) =>
      away
        ? { kind: 'transfer' as const, collection: moonCats, tokenId: m.token, from: m.account.address, to: ELSEWHERE }
        : { kind: 'mint' as const, collection: moonCats, to: m.account.address },
    ),
  );
  if (!away)
    mined.transactions.forEach((txn, i) => {
      const member = batch[i];
      if (member) member.token = txn.tokenIds[0] ?? '';
    });
  await until(() => batch.every((m) => changeAt(m.user, method, from) !== undefined), `${method} of ${batch.length}`);
  return batch.map((m) => (changeAt(m.user, method, from) ?? minedAt) - minedAt);
}

for (let i = 0; i < SEQUENTIAL; i++) {
  const member = members[i % MEMBERS];
  if (!member) continue;
  taken.push(...(await move([member], true)));
  given.push(...(await move([member], false)));
}
const burstTaken: number[] = [];
const burstGiven: number[] = [];
for (let i = 0; i < BURST; i++) {
  const batch = members.slice((i * BURST_SIZE) % MEMBERS).slice(0, BURST_SIZE);
  burstTaken.push(...(await move(batch, true)));
  burstGiven.push(...(await move(batch, false)));
}

const all = [...taken, ...given, ...burstTaken, ...burstGiven];
console.log(`${MEMBERS} members, 1 rule; a block mined, then the role change received by the Discord stand-in`);
console.log(figures('taken (1 a block)', taken));
console.log(figures('given (1 a block)', given));
console.log(figures(`taken (${BURST_SIZE} a block)`, burstTaken));
console.log(figures(`given (${BURST_SIZE} a block)`, burstGiven));
console.log(figures('all samples', all));
const p99 = percentile(
  [...all].sort((a, b) => a - b),
  99,
);
console.log(`goal p99 < 5000 ms: ${p99 < 5000 ? 'met' : 'NOT met'} (p99 ${p99} ms)`);
console.log(
  `platform calls by the role sync during the samples: ${bot.roles.platformCalls - callsBefore} (${all.length} role changes)`,
);
console.log(`load average (uptime) after: ${load()}`);
await bot.stop();
await discord.close();
await rm(dataDir, { recursive: true, force: true });
