import { type Api, GrammyError, InputFile } from 'grammy';
import type { InlineKeyboardButton, InlineKeyboardMarkup, LinkPreviewOptions } from 'grammy/types';
import type { Logger } from 'pino';
import type { ButtonCodec } from '../../bot/buttons.ts';
import type { Reply } from '../../core/reply.ts';
import { type ChatImage, IMAGES_BY_URL, type ImageSource } from '../images/images.ts';
import { deepLink, startPayload } from './deep-link.ts';
import { type RenderOptions, renderTelegram, TELEGRAM_LIMITS, type TelegramButton } from './render.ts';
import { splitChatId } from './topics.ts';

/** How a message was sent, which decides how it is edited. */
export type SentKind = 'text' | 'photo';

export interface SentMessage {
  messageId: number;
  kind: SentKind;
}

/** The Bot API's answer when an edit changes nothing (a Refresh with the same numbers). */
export function isNotModified(error: unknown): boolean {
  return error instanceof GrammyError && error.error_code === 400 && /message is not modified/i.test(error.description);
}

function withoutImage(reply: Reply): Reply {
  const { image: _image, thumbnail: _thumbnail, ...rest } = reply;
  return rest;
}

/** A reply made into a Telegram message, before it is sent to a chat. */
interface Prepared {
  text: ReturnType<typeof renderTelegram>;
  image: ChatImage | undefined;
  reply_markup: InlineKeyboardMarkup | undefined;
}

/** Prefix of callback data whose answer edits the message in place. */
export const REPLACES_MARK = '~';

/**
 * Sends and edits rendered Replies: a photo with an HTML caption when the reply has an image and
 * its text fits a caption, else an HTML message (with the image as a large link preview); buttons
 * as an inline keyboard whose callback data the codec fits into 64 bytes; attachments as documents.
 * `images` decides how an image goes: by its address (Telegram fetches it), uploaded (an SVG drawn
 * as PNG: Telegram takes no SVG photo), or not at all.
 */
export class TelegramOutbox {
  readonly #api: Api;
  readonly #codec: ButtonCodec;
  readonly #logger: Logger;
  readonly #images: ImageSource;
  readonly #botUsername: () => string | undefined;
  /** Messages made for replies lately sent, per kind of chat (see #prepare); gone with the reply. */
  readonly #prepared = new WeakMap<Reply, Map<'private' | 'group', Promise<Prepared>>>();

  /** `botUsername`: the bot's, for deep links into its private chats (known once it has started). */
  constructor(
    api: Api,
    codec: ButtonCodec,
    logger: Logger,
    images: ImageSource = IMAGES_BY_URL,
    botUsername: () => string | undefined = () => undefined,
  ) {
    this.#api = api;
    this.#codec = codec;
    this.#logger = logger;
    this.#images = images;
    this.#botUsername = botUsername;
  }

  /** How buttons render for a chat: Mini Apps in private chats, deep links from groups. */
  #renderOptions(chatId: string): RenderOptions {
    const username = this.#botUsername();
    return {
      // User ids (private chats) are positive; groups' ids are negative.
      privateChat: /^\d+$/.test(chatId),
      deepLink: (command) => {
        const payload = startPayload(command, chatId);
        return username && payload ? deepLink(username, payload) : undefined;
      },
    };
  }

  /**
   * Sends a reply to a chat, or to a forum topic (`<group id>/<thread id>`, see topics.ts), as an
   * answer to `replyTo` when given.
   */
  async send(topicOrChatId: string, reply: Reply, replyTo?: number): Promise<SentMessage> {
    const { chatId, threadId } = splitChatId(topicOrChatId);
    const { text, image, reply_markup } = await this.#prepare(reply, chatId);
    const thread = threadId === undefined ? {} : { message_thread_id: threadId };
    const common = {
      parse_mode: 'HTML' as const,
      ...thread,
      ...(reply_markup ? { reply_markup } : {}),
      ...(replyTo === undefined
        ? {}
        : { reply_parameters: { message_id: replyTo, allow_sending_without_reply: true } }),
    };
    let sent: SentMessage | undefined;
    if (image && text.html.length <= TELEGRAM_LIMITS.caption) {
      const photo = image.kind === 'png' ? new InputFile(image.data, image.name) : image.url;
      try {
        const message = await this.#api.sendPhoto(chatId, photo, { ...common, caption: text.html });
        sent = { messageId: message.message_id, kind: 'photo' };
      } catch (error) {
        // Telegram could not fetch the image (or refused it): the text still goes out, with a preview.
        if (!(error instanceof GrammyError && error.error_code === 400)) throw error;
        this.#logger.debug({ chatId, reason: error.description }, 'photo refused; sending text');
      }
    }
    if (!sent) {
      const message = await this.#api.sendMessage(chatId, text.html || '…', {
        ...common,
        link_preview_options: preview(image),
      });
      sent = { messageId: message.message_id, kind: 'text' };
    }
    for (const attachment of text.attachments) {
      try {
        await this.#api.sendDocument(chatId, new InputFile(attachment.data, attachment.name), {
          ...thread,
          reply_parameters: { message_id: sent.messageId, allow_sending_without_reply: true },
        });
      } catch (error) {
        // The message itself is out; sending it again for a lost attachment would duplicate it.
        this.#logger.warn({ chatId, file: attachment.name, err: error }, 'attachment not sent');
      }
    }
    return sent;
  }

  /**
   * The message of a reply for a chat: made once per kind of chat (private or group) for all the chats
   * an alert goes to, unless it holds a deep link, which names its chat. The dispatcher hands each
   * chat of an event the same Reply; images are fetched or drawn and buttons stored once.
   */
  #prepare(reply: Reply, chatId: string): Promise<Prepared> {
    const options = this.#renderOptions(chatId);
    const kind = options.privateChat ? 'private' : 'group';
    const cached = this.#prepared.get(reply)?.get(kind);
    if (cached) return cached;
    let linked = false;
    const text = renderTelegram(withoutImage(reply), {
      ...options,
      deepLink: (command) => {
        linked = true;
        return options.deepLink?.(command);
      },
    });
    const made = (async (): Promise<Prepared> => {
      const image = await this.#images.show(renderTelegram(reply).photo);
      return { text, image, reply_markup: await this.#keyboard(text.keyboard) };
    })();
    if (!linked) {
      const byKind = this.#prepared.get(reply) ?? new Map<'private' | 'group', Promise<Prepared>>();
      byKind.set(kind, made);
      this.#prepared.set(reply, byKind);
      made.catch(() => byKind.delete(kind));
    }
    return made;
  }

  /** Rewrites a sent message (in a chat or a topic of it); an edit that changes nothing is not an error. */
  async edit(topicOrChatId: string, messageId: number, kind: SentKind, reply: Reply): Promise<void> {
    // A message id is unique in its chat, topics included: an edit names no thread.
    const { chatId } = splitChatId(topicOrChatId);
    try {
      if (kind === 'photo') {
        const caption = renderTelegram(reply, { ...this.#renderOptions(chatId), limit: TELEGRAM_LIMITS.caption });
        const reply_markup = await this.#keyboard(caption.keyboard);
        await this.#api.editMessageCaption(chatId, messageId, {
          caption: caption.html || '…',
          parse_mode: 'HTML',
          ...(reply_markup ? { reply_markup } : {}),
        });
      } else {
        const text = renderTelegram(withoutImage(reply), this.#renderOptions(chatId));
        const reply_markup = await this.#keyboard(text.keyboard);
        await this.#api.editMessageText(chatId, messageId, text.html || '…', {
          parse_mode: 'HTML',
          link_preview_options: preview(await this.#images.show(renderTelegram(reply).photo)),
          ...(reply_markup ? { reply_markup } : {}),
        });
      }
    } catch (error) {
      if (!isNotModified(error)) throw error;
    }
  }

  async #keyboard(rows: readonly TelegramButton[][]): Promise<InlineKeyboardMarkup | undefined> {
    const inline_keyboard: InlineKeyboardButton[][] = [];
    for (const row of rows) {
      const buttons: InlineKeyboardButton[] = [];
      for (const button of row) {
        if (button.url && button.webApp) buttons.push({ text: button.text, web_app: { url: button.url } });
        else if (button.url) buttons.push({ text: button.text, url: button.url });
        else if (button.action) {
          // A leading mark says the answer edits this message in place.
          const data = await this.#codec.encode(button.action);
          buttons.push({ text: button.text, callback_data: button.replaces ? `${REPLACES_MARK}${data}` : data });
        }
      }
      if (buttons.length) inline_keyboard.push(buttons);
    }
    return inline_keyboard.length ? { inline_keyboard } : undefined;
  }
}

/** A large preview of an image Telegram can fetch; none for a drawn one (its address is an SVG). */
function preview(image: ChatImage | undefined): LinkPreviewOptions {
  return image?.kind === 'url' ? { url: image.url, prefer_large_media: true } : { is_disabled: true };
}
