import type { Context } from 'grammy';
import type { Logger } from 'pino';
import type { ButtonCodec } from '../../bot/buttons.ts';
import type { CommandEngine, Outcome } from '../../bot/engine.ts';
import { plain, type Reply, truncate } from '../../core/reply.ts';
import type { OutcomeProbe } from '../outcome-probe.ts';
import { describe, type Scrub } from './bot.ts';
import { REPLACES_MARK, type SentKind, type TelegramOutbox } from './outbox.ts';
import type { ChatPeople } from './people.ts';
import { TELEGRAM_LIMITS } from './render.ts';
import { threadOf } from './topics.ts';

/** Answer to a button whose stored action is gone. */
export const EXPIRED_BUTTON = 'This button no longer works. Run the command again.';

/**
 * Verdicts on a button press that concern the presser alone: they answer it with a popup and post
 * nothing, so a group does not read that one member may not do something, or pressed too fast.
 * (An expired button and a flood are refused before the engine runs; the same popup answers them.)
 * Other failures (the platform down, a listing gone) stay messages: they may carry a reference to
 * report, are often longer than a popup holds, and say something about the message's content.
 */
const REFUSALS: ReadonlySet<Outcome | undefined> = new Set<Outcome>(['denied', 'rate_limited']);

/** What answering a button press needs. */
export interface ButtonHandling {
  engine: CommandEngine;
  /** The verdict of the command a press ran (a refusal is a popup). */
  probe: OutcomeProbe;
  codec: ButtonCodec;
  outbox: TelegramOutbox;
  people: ChatPeople;
  logger: Logger;
  scrub: Scrub;
}

/** A reply as the popup answering a button press (seen by the presser alone, until dismissed). */
function popup(reply: Reply): { text: string; show_alert: true } {
  return {
    text: truncate((reply.lines ?? []).map(plain).join('\n'), TELEGRAM_LIMITS.callbackAnswer),
    show_alert: true,
  };
}

/**
 * Answers a button press (a callback query) once, whatever happens: its action runs in the engine
 * (after the rate limits); a refusal is a popup, an answer of the same kind edits the message in
 * place when the button says so (else, or when the edit fails, a new message), an action gone from
 * the store is a popup saying so.
 */
export async function answerButton(ctx: Context, handling: ButtonHandling): Promise<void> {
  const { engine, probe, codec, outbox, people, logger, scrub } = handling;
  const query = ctx.callbackQuery;
  if (!query?.data) return;
  const message = query.message;
  // A button on a message in a forum topic answers in that topic (an inaccessible message names none).
  const chatOf = (m: NonNullable<typeof message>) => people.chat(m.chat, threadOf(m));
  const admission = engine.admit(
    message ? chatOf(message) : { platform: 'telegram', id: String(query.from.id), kind: 'private' },
    { id: String(query.from.id) },
  );
  if (admission.status !== 'ok') {
    await ctx.answerCallbackQuery(admission.status === 'notify' ? popup(admission.reply) : undefined);
    return;
  }
  const replaces = query.data.startsWith(REPLACES_MARK);
  const action = codec.decode(replaces ? query.data.slice(REPLACES_MARK.length) : query.data);
  if (!action || !message) {
    await ctx.answerCallbackQuery({ text: EXPIRED_BUTTON, show_alert: true });
    return;
  }
  let answered = false;
  try {
    const chat = chatOf(message);
    const actor = await people.actor(message.chat, query.from);
    const { value: reply, outcome } = await probe.observe(() => engine.runLine(action, chat, actor));
    if (reply && REFUSALS.has(outcome)) {
      answered = true;
      await ctx.answerCallbackQuery(popup(reply));
      return;
    }
    await ctx.answerCallbackQuery();
    answered = true;
    if (!reply) return;
    const kind: SentKind = 'photo' in message && message.photo ? 'photo' : 'text';
    if (replaces && reply.tone !== 'error' && message.date !== 0) {
      try {
        await outbox.edit(chat.id, message.message_id, kind, reply);
        return;
      } catch (error) {
        logger.debug({ err: describe(error, scrub) }, 'edit in place failed; sending a new message');
      }
    }
    await outbox.send(chat.id, reply);
  } finally {
    if (!answered) await ctx.answerCallbackQuery().catch(() => undefined);
  }
}
