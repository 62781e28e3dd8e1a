// Holder roles end to end, as `npm start` runs them: the bot with its local platform, the real
// discord.js and grammy clients against the stand-ins, the alert streams and the role sync. Wallets
// are verified with the paste path (the signature sent as /verify signature), tokens move in blocks
// mined on the local platform, and the role changes and group memberships are read from the
// stand-ins, as Discord and Telegram would hold them.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommunityRef } from '../../src/core/wallets.ts';
import { type Devnet, startDevnet } from '../../src/devnet/index.ts';
import { signMessageAs, type TestWallet, testWallet } from '../../src/devnet/wallets.ts';
import { type RunningBot, startBot } from '../../src/main.ts';
import { FakeDiscord, type InteractionSpec } from '../fakes/discord.ts';
import { FakeTelegram } from '../fakes/telegram.ts';
import { platformEnv } from '../helpers/devnet-data.ts';
import { startTestPostgres } from '../helpers/postgres.ts';

const GUILD = '1100000000000000100';
const HOLDERS = '1100000000000000301';
const BOT_ROLE = '1100000000000000302';
const WHALES = '1100000000000000303';
const ALICE = '1100000000000000501';
const BOB = '1100000000000000502';
const MANAGE_ROLES = String(1n << 28n);
const GROUP = -100500;
const GROUP_ADMIN = 900;
const OUTSIDER = 777;
const HOLDER = 778;
const ELSEWHERE = '0x00000000000000000000000000000000000b0b0b';

type Message = { content?: string; flags?: number; embeds?: Array<{ title?: string; description?: string }> };

interface Running {
  /** The bot commands and verification go to (the only one with Telegram). */
  bot: RunningBot;
  all: RunningBot[];
  devnet: Devnet;
  logs: () => string;
  close: () => Promise<void>;
}

interface Mode {
  name: string;
  start(env: Record<string, string>): Promise<Running>;
}

function logSink(): { stream: Writable; text: () => string } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  return { stream, text: () => text };
}

const MODES: Mode[] = [
  {
    name: 'files, one process with its local platform',
    async start(env) {
      const dataDir = await mkdtemp(join(tmpdir(), 'floorwatch-roles-e2e-'));
      const log = logSink();
      const bot = await startBot({
        env: { ...env, FLOORWATCH_DATA_DIR: dataDir, FLOORWATCH_DEVNET_BLOCK_MS: '0' },
        stdin: new PassThrough(),
        logDestination: log.stream,
      });
      if (!bot.devnet) throw new Error('no local platform');
      return {
        bot,
        all: [bot],
        devnet: bot.devnet,
        logs: log.text,
        async close() {
          await bot.stop();
          await rm(dataDir, { recursive: true, force: true });
        },
      };
    },
  },
  {
    name: 'PostgreSQL, two processes sharing one database and one platform',
    async start(env) {
      const postgres = await startTestPostgres();
      const devnet = await startDevnet({ scale: 'small', blockIntervalMs: 0 });
      const url = await postgres.freshDatabase();
      const bots: RunningBot[] = [];
      const dirs: string[] = [];
      const logs: Array<() => string> = [];
      // Discord's shards split between the two; Telegram (one poller at a time) on the first only.
      for (const shard of [0, 1]) {
        const dataDir = await mkdtemp(join(tmpdir(), `floorwatch-roles-pg-${shard}-`));
        dirs.push(dataDir);
        const log = logSink();
        logs.push(log.text);
        const own: Record<string, string> = { ...env };
        if (shard === 1) {
          delete own.TELEGRAM_BOT_TOKEN;
          delete own.TELEGRAM_API_ROOT;
        }
        bots.push(
          await startBot({
            env: {
              ...own,
              ...platformEnv(devnet),
              FLOORWATCH_DATA_DIR: dataDir,
              FLOORWATCH_DATABASE_URL: url,
              DISCORD_SHARD_IDS: String(shard),
              DISCORD_SHARD_COUNT: '2',
            },
            stdin: new PassThrough(),
            logDestination: log.stream,
          }),
        );
      }
      return {
        bot: bots[0] as RunningBot,
        all: bots,
        devnet,
        logs: () => logs.map((text) => text()).join(''),
        async close() {
          for (const bot of bots) await bot.stop();
          await devnet.close();
          await postgres.stop();
          for (const dir of dirs) await rm(dir, { recursive: true, force: true });
        },
      };
    },
  },
];

describe.each(MODES)('holder roles on $name', (mode) => {
  let running: Running;
  let bot: RunningBot;
  let tg: FakeTelegram;
  let discord: FakeDiscord;
  let moonCats: string;

  beforeAll(async () => {
    tg = await FakeTelegram.start();
    tg.admins.set(String(GROUP), [GROUP_ADMIN]);
    tg.titles.set(String(GROUP), 'Moon Cats Lounge');
    discord = await FakeDiscord.start({
      guilds: [
        {
          id: GUILD,
          name: 'Moon Cats Club',
          channels: ['1100000000000000200'],
          roles: [
            { id: HOLDERS, name: 'Holders', mentionable: false, position: 1 },
            { id: BOT_ROLE, name: 'Floorwatch', mentionable: false, position: 2, permissions: MANAGE_ROLES },
            { id: WHALES, name: 'Whales', mentionable: false, position: 3 },
          ],
          botRoles: [BOT_ROLE],
          members: [ALICE, BOB],
        },
      ],
    });
    running = await mode.start({
      FLOORWATCH_GATE_GRACE_HOURS: '0',
      LOG_LEVEL: 'debug',
      ...tg.env,
      ...discord.env,
      DISCORD_GUILD_ID: GUILD,
    });
    bot = running.bot;
    const found = running.devnet.collections.devnet?.find((c) => c.name === 'Moon Cats');
    if (!found) throw new Error('no Moon Cats');
    moonCats = found.address;
  }, 120_000);

  afterAll(async () => {
    await running?.close();
    await discord?.close();
    await tg?.close();
  });

  async function interact(spec: InteractionSpec): Promise<Message> {
    const { id, token } = discord.dispatchInteraction(spec);
    const callback = await discord.nextCall('POST', new RegExp(`^/interactions/${id}/`), 15_000);
    if (Number(callback.body?.type) !== 5) return (callback.body?.data ?? {}) as Message;
    const next = await discord.nextCall('*', new RegExp(`^/webhooks/\\d+/${token}`), 15_000);
    return (next.body ?? {}) as Message;
  }

  /** What a member reads: Discord shows `\:` as `:`, and the zero-width space that keeps `@` from pinging is unseen. */
  /** Moderators with Manage Roles; each test uses its own, so the per-person rate limit (6 at once) is no matter. */
  const mod = (n: number) => ({
    user: { id: `110000000000000060${n}`, username: `mod${n}` },
    permissions: MANAGE_ROLES,
  });

  const textOf = (message: Message) =>
    [message.content ?? '', ...(message.embeds ?? []).map((e) => `${e.title ?? ''}\n${e.description ?? ''}`)]
      .join('\n')
      .replaceAll('\u200b', '')
      .replace(/\\([^\w\s])/g, '$1');

  function wallet(index: number): TestWallet {
    const found = testWallet(index);
    if (!found) throw new Error(`no test wallet ${index}`);
    return found;
  }

  /** A person verifies a wallet with the paste path: the bot's message, signed, sent back as a command. */
  async function verifyOnDiscord(user: string, signer: TestWallet): Promise<void> {
    const community: CommunityRef = { key: `discord:${GUILD}`, name: 'Moon Cats Club' };
    const issued = await bot.verification.issueChatMessage(community, `discord:${user}`, signer.address);
    if (!issued.ok) throw new Error(issued.text);
    const chainId = running.devnet.networks[0]?.chainId ?? 0;
    const signature = await signMessageAs(signer, issued.message, chainId);
    const answer = await interact({
      kind: 'command',
      name: 'verify',
      options: { action: 'signature', value: signature },
      user: { id: user, username: 'member' },
    });
    expect(textOf(answer)).toMatch(/verified/i);
  }

  async function verifyOnTelegram(user: number, signer: TestWallet): Promise<void> {
    const community: CommunityRef = { key: `telegram:${GROUP}`, name: 'Moon Cats Lounge' };
    const issued = await bot.verification.issueChatMessage(community, `telegram:${user}`, signer.address);
    if (!issued.ok) throw new Error(issued.text);
    const signature = await signMessageAs(signer, issued.message, running.devnet.networks[0]?.chainId ?? 0);
    const outcome = await bot.verification.checkChatSignature(community, `telegram:${user}`, signature);
    expect(outcome.ok).toBe(true);
  }

  async function mint(to: string): Promise<string> {
    const mined = await running.devnet.mine('devnet', [{ kind: 'mint', collection: moonCats, to }]);
    const tokenId = mined?.transactions[0]?.tokenIds[0];
    if (!tokenId) throw new Error('nothing minted');
    return tokenId;
  }

  async function transfer(from: string, tokenId: string, to = ELSEWHERE): Promise<void> {
    await running.devnet.mine('devnet', [{ kind: 'transfer', collection: moonCats, tokenId, from, to }]);
  }

  const hasRole = (user: string, role = HOLDERS) => discord.rolesOfMember(GUILD, user).includes(role);

  describe('on Discord', () => {
    it('GIVEN a member without Manage Roles THEN /roles add is refused', async () => {
      const answer = await interact({
        kind: 'command',
        name: 'roles',
        subcommand: 'add',
        options: { role: HOLDERS, collection: moonCats },
        permissions: '32',
      });
      expect(textOf(answer)).toContain('needs the Manage Roles permission');
    });

    it('GIVEN a role above the bot’s highest role THEN /roles add says so plainly and adds nothing', async () => {
      const answer = await interact({
        kind: 'command',
        name: 'roles',
        subcommand: 'add',
        options: { role: WHALES, collection: moonCats },
        ...mod(2),
      });
      expect(textOf(answer)).toContain('I cannot give @Whales: my highest role (@Floorwatch) sits below it');
      const list = await interact({ kind: 'command', name: 'roles', subcommand: 'list', ...mod(2) });
      expect(textOf(list)).toContain('No holder rule here yet');
    });

    it('GIVEN a rule WHEN a member verifies a holding wallet THEN they get the role; a transfer away takes it within seconds, a mint gives it back, removing the wallet takes it', async () => {
      const added = await interact({
        kind: 'command',
        name: 'roles',
        subcommand: 'add',
        options: { role: HOLDERS, collection: moonCats },
        ...mod(3),
      });
      expect(textOf(added)).toContain('Holder role added');
      const again = await interact({
        kind: 'command',
        name: 'roles',
        subcommand: 'add',
        options: { role: HOLDERS, collection: moonCats },
        ...mod(3),
      });
      expect(textOf(again)).toMatch(/Rule h\d+ already asks for exactly this/);
      // The streams follow the rule's collection before tokens move.
      await tg.waitFor(
        () => (running.all.some((b) => b.alerts.status().streams.some((s) => s.contracts >= 2)) ? true : undefined),
        15_000,
      );

      const alice = wallet(1);
      const token = await mint(alice.address);
      await verifyOnDiscord(ALICE, alice);
      await tg.waitFor(() => hasRole(ALICE) || undefined, 15_000);
      expect(hasRole(BOB)).toBe(false);

      const sent = Date.now();
      await transfer(alice.address, token);
      await tg.waitFor(() => !hasRole(ALICE) || undefined, 15_000);
      const removal = discord.calls.find(
        (c) => c.method === 'DELETE' && c.path.endsWith(`/members/${ALICE}/roles/${HOLDERS}`),
      );
      expect(removal?.status).toBe(204);
      expect((removal?.at ?? Number.POSITIVE_INFINITY) - sent).toBeLessThan(15_000);

      await mint(alice.address);
      await tg.waitFor(() => hasRole(ALICE) || undefined, 15_000);

      const removed = await interact({
        kind: 'command',
        name: 'verify',
        options: { action: 'remove', value: alice.address },
        user: { id: ALICE, username: 'alice' },
      });
      expect(textOf(removed)).toContain('removed');
      await tg.waitFor(() => !hasRole(ALICE) || undefined, 15_000);
      // Each change was made once: one PUT per grant, one DELETE per removal.
      const changes = discord.calls.filter((c) => c.path.endsWith(`/members/${ALICE}/roles/${HOLDERS}`));
      expect(changes.map((c) => c.method)).toEqual(['PUT', 'DELETE', 'PUT', 'DELETE']);
    });

    it('GIVEN rules THEN /roles list and /roles check show them and the counts; /roles remove lets the role go', async () => {
      const list = await interact({ kind: 'command', name: 'roles', subcommand: 'list', ...mod(4) });
      expect(textOf(list)).toMatch(/h\d+.*@Holders for at least 1 Moon Cats \(devnet\)/);
      const check = await interact({ kind: 'command', name: 'roles', subcommand: 'check', ...mod(4) });
      expect(textOf(check)).toContain('Holder roles: all good');
      // The bot's role is moved below Holders: /roles check says what to fix.
      const guild = discord.guilds[0];
      const botRole = guild?.roles?.find((r) => r.id === BOT_ROLE);
      if (!botRole) throw new Error('no bot role');
      // Level with Holders: the older role (the lower id) sits above.
      botRole.position = 1;
      const broken = await interact({ kind: 'command', name: 'roles', subcommand: 'check', ...mod(4) });
      expect(textOf(broken)).toContain('my highest role (@Floorwatch) sits below it');
      botRole.position = 2;
      // Without Manage Roles, it says that instead.
      botRole.permissions = '0';
      const unable = await interact({ kind: 'command', name: 'roles', subcommand: 'check', ...mod(4) });
      expect(textOf(unable)).toContain('I lack the Manage Roles permission');
      botRole.permissions = MANAGE_ROLES;
      const id = /(h\d+)/.exec(textOf(list))?.[1] ?? '';
      const removed = await interact({
        kind: 'command',
        name: 'roles',
        subcommand: 'remove',
        options: { rule: id },
        ...mod(4),
      });
      expect(textOf(removed)).toContain(`Rule ${id} removed`);
    });
  });

  describe('on Telegram', () => {
    it('GIVEN /gate from an admin THEN the group gets an invite link that creates join requests', async () => {
      tg.injectText(GROUP, GROUP_ADMIN, `/gate ${moonCats}`);
      const answer = await tg.nextCall('sendMessage', (c) =>
        String(c.params.text ?? '').includes('Holders-only group'),
      );
      const link = tg.inviteLinks.at(-1);
      expect(link?.creates_join_request).toBe(true);
      expect(String(answer.params.text)).toContain(link?.invite_link);
      // Without the admin rights to make invite links, it says which rights it needs.
      tg.withoutRights.add(String(GROUP));
      tg.injectText(GROUP, GROUP_ADMIN, '/gate');
      const unable = await tg.nextCall('sendMessage', (c) =>
        String(c.params.text ?? '').includes('Invite users via link'),
      );
      expect(String(unable.params.text)).toContain('Ban users');
      tg.withoutRights.delete(String(GROUP));
      tg.injectText(GROUP, OUTSIDER, `/gate ${moonCats}`);
      const refused = await tg.nextCall('sendMessage', (c) =>
        String(c.params.text ?? '').includes('group administrator'),
      );
      expect(refused).toBeDefined();
    });

    it('GIVEN join requests THEN a holder is let in, anyone else is declined and told privately how to verify', async () => {
      const holder = wallet(2);
      await mint(holder.address);
      await verifyOnTelegram(HOLDER, holder);
      const link = tg.inviteLinks.at(-1)?.invite_link;
      tg.injectJoinRequest(GROUP, OUTSIDER, link);
      const declined = await tg.nextCall('declineChatJoinRequest', (c) => Number(c.params.user_id) === OUTSIDER);
      expect(declined.status).toBe(200);
      const told = tg.callsOf('sendMessage').find((c) => String(c.params.chat_id) === String(OUTSIDER));
      expect(String(told?.params.text)).toContain('none of your verified wallets holds enough');
      expect(String(told?.params.text)).toContain('start=verify_-100500');

      tg.injectJoinRequest(GROUP, HOLDER, link);
      await tg.nextCall('approveChatJoinRequest', (c) => Number(c.params.user_id) === HOLDER);
      expect(tg.isMember(GROUP, HOLDER)).toBe(true);
    });

    it('GIVEN members who stop holding THEN they are told and removed after the grace period, without a lasting ban; an admin never', async () => {
      // The admin joined as a holder too.
      const admin = wallet(3);
      const adminToken = await mint(admin.address);
      await verifyOnTelegram(GROUP_ADMIN, admin);
      tg.injectJoinRequest(GROUP, GROUP_ADMIN);
      await tg.nextCall('approveChatJoinRequest', (c) => Number(c.params.user_id) === GROUP_ADMIN);
      await transfer(admin.address, adminToken);

      const holder = wallet(2);
      const balances = await bot.platform.indexer.getTokenBalancesByContract({
        network: 'devnet',
        filter: { contractAddresses: [moonCats], accountAddresses: [holder.address], contractStatus: 'ALL' },
      });
      const token = balances.balances[0]?.tokenID ?? '';
      await transfer(holder.address, token);
      await tg.waitFor(() => (tg.isMember(GROUP, HOLDER) ? undefined : true), 20_000);
      await tg.nextCall('sendMessage', (c) => String(c.params.text ?? '').includes('You were removed'));
      const kinds = tg.restrictions.filter((r) => r.userId === HOLDER).map((r) => r.kind);
      expect(kinds).toEqual(['ban', 'unban']);
      const notices = tg
        .callsOf('sendMessage')
        .filter((c) => String(c.params.chat_id) === String(HOLDER))
        .map((c) => String(c.params.text));
      expect(notices.some((t) => t.includes('You may lose your place in Moon Cats Lounge'))).toBe(true);
      expect(notices.some((t) => t.includes('You were removed from Moon Cats Lounge'))).toBe(true);
      expect(tg.restrictions.some((r) => r.userId === GROUP_ADMIN)).toBe(false);
      expect(tg.isMember(GROUP, GROUP_ADMIN)).toBe(true);
      // Nothing personal in the logs: no wallet address, no person.
      expect(running.logs()).not.toContain(holder.address.slice(2));
      expect(running.logs()).not.toContain(`telegram:${HOLDER}`);
    });
  });
});
