import type { FakeDiscord } from '../fakes/discord.ts';
import type { FakeTelegram } from '../fakes/telegram.ts';
import { until } from './waiting.ts';

/** Sends `text` to the bot in the private chat `chatId`; resolves with its first answer that `answered` matches. */
export async function askTelegram(tg: FakeTelegram, chatId: number, text: string, answered: RegExp): Promise<string> {
  const before = tg.calls.length;
  tg.injectText(chatId, chatId, text, 'private');
  return until(() => {
    const call = tg.calls
      .slice(before)
      .find((c) => c.method === 'sendMessage' && answered.test(String(c.params.text ?? '')));
    return call ? String(call.params.text) : undefined;
  }, `the answer to ${text} on Telegram`);
}

/**
 * Runs a slash command as an administrator in the stand-in's first guild; resolves with the bot's
 * answer (its original response, as JSON) once `answered` matches it.
 */
export async function askDiscord(
  discord: FakeDiscord,
  command: { name: string; subcommand?: string; options?: Record<string, string> },
  answered: RegExp = /./,
): Promise<string> {
  const { token } = discord.dispatchInteraction({ kind: 'command', ...command, permissions: '8' });
  return until(
    () => {
      const original = discord.original(token);
      const text = original && (original.embeds?.length || original.content) ? JSON.stringify(original) : undefined;
      return text !== undefined && answered.test(text) ? text : undefined;
    },
    `the answer to /${command.name} ${command.subcommand ?? ''} on Discord`,
  );
}
