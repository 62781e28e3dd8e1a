import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DISCORD_LIMITS, renderDiscord } from '../../src/chat/discord/render.ts';
import { renderTelegram, TELEGRAM_LIMITS } from '../../src/chat/telegram/render.ts';
import type { Reply } from '../../src/core/reply.ts';
import { GROUP, type Harness, OPERATOR, startHarness } from '../helpers/bot-harness.ts';
import { collectionNamed } from '../helpers/devnet-data.ts';

/*
 * Lists of addresses (/holders, /project audience, /project sponsors) show each address shortened to
 * read and whole in a code span to copy, within each chat platform's limits: a shortened address in a
 * code span copied as "0x1234…abcd", which is no address.
 */

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

/** The whole addresses a Telegram message gives in code spans (one tap copies one). */
function telegramCopyable(reply: Reply): string[] {
  const { html } = renderTelegram(reply);
  expect(html.length).toBeLessThanOrEqual(TELEGRAM_LIMITS.message);
  return [...html.matchAll(/<code>(0x[0-9a-fA-F]{40})<\/code>/g)].map((m) => m[1] ?? '');
}

/** The whole addresses a Discord embed gives in code spans, the message within Discord's limits. */
function discordCopyable(reply: Reply): string[] {
  const message = renderDiscord([reply]);
  const [embed] = message.embeds;
  const description = embed?.description ?? '';
  expect(description.length).toBeLessThanOrEqual(DISCORD_LIMITS.description);
  const fields = (embed?.fields ?? []).reduce((n, f) => n + f.name.length + f.value.length, 0);
  expect((embed?.title?.length ?? 0) + description.length + fields).toBeLessThanOrEqual(DISCORD_LIMITS.embedTotal);
  return [...description.matchAll(/`(0x[0-9a-fA-F]{40})`/g)].map((m) => m[1] ?? '');
}

describe('whole addresses to copy in lists', () => {
  it('GIVEN the top 25 holders of a collection THEN each line keeps its short address and ranking and gives the whole address to copy, on Telegram, Discord and the terminal', async () => {
    const moonCats = collectionNamed(h.devnet, 'Moon Cats');
    const reply = await h.run(`/holders devnet:${moonCats.address} 25`);
    const ranked = (reply.lines ?? []).slice(0, 25);
    expect(ranked).toHaveLength(25);
    const holders = h
      .text({ lines: ranked })
      .split('\n')
      .map((line) => /^\d+\. (0x[0-9a-f]{4}…[0-9a-f]{4}) holds \d+ \([\d.]+%\) · (0x[0-9a-f]{40})$/.exec(line));
    for (const match of holders) {
      expect(match).not.toBeNull();
      const [, short, whole] = match ?? [];
      expect(`${whole?.slice(0, 6)}…${whole?.slice(-4)}`).toBe(short);
    }
    const wholes = holders.map((m) => m?.[2] ?? '');
    expect(telegramCopyable(reply)).toEqual(wholes);
    expect(discordCopyable(reply)).toEqual(wholes);
  });

  it('GIVEN an audience of hundreds of contacts THEN the 20 shown give their whole addresses to copy within the limits, and the rest are counted', async () => {
    const reply = await h.run('/project audience 1', GROUP, OPERATOR);
    const { contacts } = await h.platform.builder.getAudience({ projectId: h.devnet.projectId, audienceId: 1 });
    expect(contacts.length).toBeGreaterThan(20);
    const shown = contacts.slice(0, 20).map((c) => c.address);
    expect(telegramCopyable(reply)).toEqual(shown);
    expect(discordCopyable(reply)).toEqual(shown);
    const text = h.text(reply);
    expect(text).toContain('Contacts:');
    expect(text).toContain(`… and ${contacts.length - 20} more`);
    const first = contacts[0];
    expect(text).toContain(
      `${first?.address.slice(0, 6)}…${first?.address.slice(-4)}${first?.name ? ` · ${first.name}` : ''} · ${first?.address}`,
    );
  });

  it('GIVEN gas sponsors THEN each gives its whole address to copy', async () => {
    const reply = await h.run('/project sponsors network=devnet', GROUP, OPERATOR);
    const { gasSponsors } = await h.platform.relayer.listGasSponsors({
      network: 'devnet',
      projectId: h.devnet.projectId,
      page: { pageSize: 50 },
    });
    expect(gasSponsors.length).toBeGreaterThan(0);
    const shown = gasSponsors.slice(0, 20).map((s) => s.address);
    expect(telegramCopyable(reply)).toEqual(shown);
    expect(discordCopyable(reply)).toEqual(shown);
  });
});
