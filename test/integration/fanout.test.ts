import { describe, expect, it } from 'vitest';
import { runFanout } from '../helpers/fanout.ts';

/*
 * Issue 26.7: one sale watched by many chats goes out through the real grammy and discord.js clients
 * against stand-ins that keep Telegram's flood limits and Discord's global and per-channel limits.
 * Every chat gets each sale once and in order, and the bot's global pace keeps the platforms from
 * refusing: a few 429s at most, never two for one chat. How fast it goes is bench/fanout-rate.ts's
 * figure; nothing here is timed beyond a generous deadline.
 */
describe('one sale to many chats under the platforms’ real limits', () => {
  it('GIVEN 120 Telegram chats (a tenth of them groups) and 120 Discord channels watching a collection WHEN two sales are recorded THEN every chat gets both, in order, with no 429 loop, each alert made into a message once per platform', async () => {
    const [telegram, discord] = await runFanout({
      telegramChats: 120,
      discordChannels: 120,
      sales: 2,
      timeoutMs: 90_000,
    });
    for (const figures of [telegram, discord]) {
      expect(figures, figures?.platform).toMatchObject({ delivered: 240, outOfOrder: 0, duplicated: 0 });
      expect(figures?.chatsRefusedTwice, figures?.platform).toBe(0);
      expect(figures?.refusals, figures?.platform).toBeLessThanOrEqual(3);
    }
    // Rendered once per alert, not once per chat: private chats and groups render apart on Telegram;
    // a Discord message that carries both sales is made for its chat.
    expect(telegram?.imageLookups).toBeLessThanOrEqual(2 * 2);
    expect(discord?.imageLookups).toBeLessThan(20);
  }, 150_000);
});
