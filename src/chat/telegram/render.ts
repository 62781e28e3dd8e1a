import {
  type Inline,
  opensInApp,
  plain,
  type Reply,
  type ReplyAttachment,
  type Rich,
  safeUrl,
  timeText,
  truncate,
} from '../../core/reply.ts';

/** Bot API limits. */
export const TELEGRAM_LIMITS = {
  /** Characters of a message text. */
  message: 4_096,
  /** Characters of a photo caption. */
  caption: 1_024,
  /** Bytes of a button's callback data. */
  callbackData: 64,
  /** Characters of the notice shown when a button press is answered (answerCallbackQuery). */
  callbackAnswer: 200,
  /** Characters we allow on a button label (the API has no hard limit; long labels are unreadable). */
  buttonLabel: 64,
  buttonsPerRow: 8,
  rows: 10,
} as const;

export interface TelegramButton {
  text: string;
  /** A stored or plain action; the adapter encodes it to fit `callbackData`. */
  action?: string;
  url?: string;
  /** `url` opens as a Mini App (a `web_app` button: private chats only). */
  webApp?: boolean;
  /** The answer edits the message in place (paging, refresh). */
  replaces?: boolean;
}

export interface RenderOptions {
  /** Overrides the length budget (a photo's caption edited with a reply that has no image). */
  limit?: number;
  /** The message goes to a private chat, where Mini App buttons are allowed. */
  privateChat?: boolean;
  /** The deep link of a button's private command (see deep-link.ts); such buttons are dropped without it. */
  deepLink?: (command: string) => string | undefined;
}

export interface TelegramMessage {
  /** HTML (parse_mode HTML); every piece of untrusted text escaped. */
  html: string;
  /** Send as a photo with `html` as its caption. */
  photo?: string;
  keyboard: TelegramButton[][];
  attachments: readonly ReplyAttachment[];
}

/** Escapes text for Telegram HTML and keeps `@name` from becoming a mention (a word joiner after @). */
export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/@/g, '@\u2060');
}

function inline(piece: Inline): string {
  if (typeof piece === 'string') return escapeHtml(piece);
  if ('bold' in piece) return `<b>${escapeHtml(piece.bold)}</b>`;
  if ('italic' in piece) return `<i>${escapeHtml(piece.italic)}</i>`;
  if ('code' in piece) return `<code>${escapeHtml(piece.code)}</code>`;
  if ('time' in piece) return escapeHtml(timeText(piece));
  const href = safeUrl(piece.href);
  return href
    ? `<a href="${escapeHtml(href).replace(/@\u2060/g, '@')}">${escapeHtml(piece.link)}</a>`
    : escapeHtml(piece.link);
}

/** Rich text as Telegram HTML. */
export function richToHtml(text: Rich): string {
  return typeof text === 'string' ? escapeHtml(text) : text.map(inline).join('');
}

/**
 * Renders a Reply as one Telegram message. Blocks are added whole while they fit; a block that
 * does not fit is cut on its plain text before escaping, so no tag or entity is ever split.
 * See {@link RenderOptions} for the options.
 */
export function renderTelegram(reply: Reply, options: RenderOptions = {}): TelegramMessage {
  const image = safeUrl(reply.image) ?? safeUrl(reply.thumbnail);
  const limit = options.limit ?? (image ? TELEGRAM_LIMITS.caption : TELEGRAM_LIMITS.message);
  const blocks: Array<() => [string, (room: number) => string]> = [];
  const titleUrl = safeUrl(reply.url);
  if (reply.title) {
    const title = reply.title;
    blocks.push(() => {
      const render = (t: string) =>
        titleUrl
          ? `<b><a href="${escapeHtml(titleUrl).replace(/@\u2060/g, '@')}">${escapeHtml(t)}</a></b>`
          : `<b>${escapeHtml(t)}</b>`;
      return [render(title), (room) => render(truncate(title, Math.max(1, room - 40)))];
    });
  }
  for (const line of reply.lines ?? []) {
    blocks.push(() => [
      richToHtml(line),
      (room) => escapeHtml(truncate(plain(line), Math.max(1, Math.floor(room / 2)))),
    ]);
  }
  for (const field of reply.fields ?? []) {
    const value = richToHtml(field.value);
    const sep = field.inline && !value.includes('\n') ? ' ' : '\n';
    blocks.push(() => [
      `<b>${escapeHtml(field.name)}</b>${sep}${value}`,
      (room) =>
        `<b>${escapeHtml(truncate(field.name, 60))}</b>${sep}${escapeHtml(truncate(plain(field.value), Math.max(1, Math.floor(room / 2) - 70)))}`,
    ]);
  }
  if (reply.footer) {
    const footer = reply.footer;
    blocks.push(() => [
      `<i>${escapeHtml(footer)}</i>`,
      (room) => `<i>${escapeHtml(truncate(footer, Math.max(1, Math.floor(room / 2))))}</i>`,
    ]);
  }
  const parts: string[] = [];
  let used = 0;
  for (const make of blocks) {
    const [full, shortened] = make();
    const sepLength = parts.length ? 1 : 0;
    if (used + sepLength + full.length <= limit) {
      parts.push(full);
      used += sepLength + full.length;
      continue;
    }
    const room = limit - used - sepLength - 2;
    if (room > 20) {
      const short = shortened(room);
      if (short.length <= room) {
        parts.push(short);
        used += sepLength + short.length;
      }
    }
    if (used + 2 <= limit) parts.push('…');
    break;
  }
  const keyboard: TelegramButton[][] = [];
  for (const row of (reply.buttons ?? []).slice(0, TELEGRAM_LIMITS.rows)) {
    const buttons: TelegramButton[] = [];
    for (const button of row.slice(0, TELEGRAM_LIMITS.buttonsPerRow)) {
      const text = truncate(button.label, TELEGRAM_LIMITS.buttonLabel);
      const url = safeUrl(button.url);
      if (url)
        buttons.push({
          text,
          url,
          ...(button.webApp && options.privateChat && opensInApp(url) ? { webApp: true } : {}),
        });
      else if (button.privateCommand) {
        const link = options.deepLink?.(button.privateCommand);
        if (link) buttons.push({ text, url: link });
      } else if (button.action)
        buttons.push({ text, action: button.action, ...(button.replaces ? { replaces: true } : {}) });
    }
    if (buttons.length) keyboard.push(buttons);
  }
  const message: TelegramMessage = { html: parts.join('\n'), keyboard, attachments: reply.attachments ?? [] };
  if (image) message.photo = image;
  return message;
}
