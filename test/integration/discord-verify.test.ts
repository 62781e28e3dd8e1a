// /verify on Discord through the real discord.js client and the stand-in: an ephemeral answer with a
// one-time link to the page, for the server the command ran in; the wallet list is ephemeral too.
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DiscordAdapter, startDiscord } from '../../src/chat/discord/adapter.ts';
import { signMessageAs, testWallet } from '../../src/devnet/wallets.ts';
import { FakeDiscord, type InteractionSpec } from '../fakes/discord.ts';
import { type Harness, startHarness } from '../helpers/bot-harness.ts';
import { startVerifyPage, type VerifyPageHarness } from '../helpers/verify-page.ts';

const GUILD = '1100000000000000100';
let h: Harness;
let page: VerifyPageHarness;
let fake: FakeDiscord;
let adapter: DiscordAdapter;

type Button = { label: string; url?: string; custom_id?: string };
type Message = {
  flags?: number;
  embeds?: Array<{ title?: string; description?: string; fields?: Array<{ name: string; value: string }> }>;
  components?: Array<{ components: Button[] }>;
};

beforeAll(async () => {
  h = await startHarness();
  page = await startVerifyPage();
  fake = await FakeDiscord.start({
    guilds: [{ id: GUILD, name: 'Moon <Cats> Club', channels: ['1100000000000000200'] }],
  });
  adapter = await startDiscord({
    config: {
      token: fake.token,
      applicationId: fake.applicationId,
      guildId: fake.guildId,
      apiRoot: fake.api,
      managePermission: 'ManageGuild',
    },
    engine: h.engineWith({
      verification: page.verification,
      userLimit: { capacity: 1_000, refillPerSecond: 1_000 },
      chatLimit: { capacity: 1_000, refillPerSecond: 1_000 },
    }),
    logger: pino({ level: 'silent' }),
    deferAfterMs: 2_500,
  });
});

afterAll(async () => {
  await adapter?.stop();
  await fake?.close();
  await page?.close();
  await h?.close();
});

async function interact(spec: InteractionSpec): Promise<Message> {
  const { id, token } = fake.dispatchInteraction(spec);
  const callback = await fake.nextCall('POST', new RegExp(`^/interactions/${id}/`), 10_000);
  if (Number(callback.body?.type) !== 5) return (callback.body?.data ?? {}) as Message;
  const next = await fake.nextCall('*', new RegExp(`^/webhooks/\\d+/${token}`), 10_000);
  return (next.body ?? {}) as Message;
}

const ephemeral = (message: Message) => ((message.flags ?? 0) & 64) !== 0;

describe('/verify on Discord', () => {
  it('GIVEN /verify in a server THEN only the person sees a one-time link to the page for that server', async () => {
    const answer = await interact({ kind: 'command', name: 'verify' });
    expect(ephemeral(answer)).toBe(true);
    const link = answer.components?.[0]?.components[0];
    expect(link?.label).toBe('Open the verification page');
    expect(link?.url?.startsWith(`${page.origin}/verify/`)).toBe(true);
    // The page names the server (escaped), and verifies for it.
    const path = new URL(link?.url ?? '').pathname;
    const response = await fetch(`${page.origin}${path}`);
    const html = await response.text();
    expect(html).toContain('Moon &lt;Cats&gt; Club');
    const cookie = response.headers.get('set-cookie')?.split(';')[0] ?? '';
    const pageToken = /data-page-token="([^"]*)"/.exec(html)?.[1] ?? '';
    const headers = {
      'content-type': 'application/json',
      cookie,
      'x-floorwatch-page-token': pageToken,
      origin: page.origin,
    };
    const wallet = testWallet(1);
    if (!wallet) throw new Error('no wallet 1');
    const challenge = (await (
      await fetch(`${page.origin}${path}/challenge`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ address: wallet.address }),
      })
    ).json()) as { message: string };
    const signature = await signMessageAs(wallet, challenge.message, page.chainId);
    const done = (await (
      await fetch(`${page.origin}${path}/signature`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ message: challenge.message, signature }),
      })
    ).json()) as { ok: boolean };
    expect(done.ok).toBe(true);
    const list = await interact({ kind: 'command', name: 'verify', options: { action: 'list' } });
    expect(ephemeral(list)).toBe(true);
    expect(JSON.stringify(list.embeds)).toContain(wallet.address);
    // The server's name is escaped for Discord's markdown.
    expect(list.embeds?.[0]?.title).toBe('Your wallets in Moon \\<Cats> Club');
  });
});
