/**
 * The neutral answer of a command. Chat adapters render it with pure converters (Discord embeds,
 * Telegram HTML, plain text) that escape every string and respect their platform's limits; nothing
 * in a Reply is pre-escaped or platform-specific.
 */

/**
 * A moment, shown as the platform can: Discord renders it in each reader's own zone and keeps the
 * relative part current; elsewhere it is `ago` (worked out when the message is sent) and the time in
 * `timeZone` (an IANA name; UTC when absent).
 */
export interface TimeInline {
  /** ISO 8601. */
  time: string;
  /** Relative text as of sending, e.g. `12 min ago`. */
  ago: string;
  timeZone?: string;
}

/** A piece of inline text. Plain strings are untrusted and are escaped by every renderer. */
export type Inline =
  | string
  | { bold: string }
  | { italic: string }
  | { code: string }
  | { link: string; href: string }
  | TimeInline;

/** A line of rich text: plain text or a sequence of inline pieces. */
export type Rich = string | readonly Inline[];

export interface ReplyField {
  name: string;
  value: Rich;
  /** Side by side where the platform can (Discord embeds). */
  inline?: boolean;
}

/**
 * A button. Pressing it runs `action`, which is a command line as a user would type it
 * (`/listings 0xabc… 12 page=2`), so its state lives in the message, not in memory, and survives
 * restarts. Adapters with small payload limits store long actions by hash (see ButtonStore).
 */
export interface ReplyButton {
  label: string;
  action?: string;
  /** Opens a link instead of running an action. */
  url?: string;
  /**
   * With `url`: opens it inside the chat app where it can (a Telegram Mini App, in a private chat
   * only, whose signed launch data tells the page who opened it); a plain link elsewhere.
   */
  webApp?: boolean;
  /**
   * Opens the person's private chat with the bot and runs this command line there, for the
   * community where the button was shown (a Telegram deep link `t.me/<bot>?start=…`; lower-case
   * words only). Platforms without such links drop the button.
   */
  privateCommand?: string;
  style?: 'primary' | 'secondary' | 'danger' | 'success';
  /** The answer replaces the message that holds the button (paging, refresh) instead of following it. */
  replaces?: boolean;
}

export interface ReplyAttachment {
  name: string;
  contentType: string;
  data: Uint8Array;
}

/** Colour family of the answer. */
export type ReplyTone = 'info' | 'success' | 'warning' | 'error' | 'sale' | 'listing' | 'offer' | 'mint' | 'transfer';

export interface Reply {
  title?: string;
  /** Link of the title. Only http(s) URLs are rendered. */
  url?: string;
  /** Body, one entry per line. */
  lines?: readonly Rich[];
  fields?: readonly ReplyField[];
  /** Large image. Only http(s) URLs are rendered. */
  image?: string;
  thumbnail?: string;
  footer?: string;
  /** ISO timestamp shown with the footer. */
  timestamp?: string;
  tone?: ReplyTone;
  /** Rows of buttons. */
  buttons?: readonly (readonly ReplyButton[])[];
  attachments?: readonly ReplyAttachment[];
  /** Only the person who asked sees it (where the platform can). */
  ephemeral?: boolean;
  /** Role ids that this message may ping (alerts with a configured mention); nothing else ever pings. */
  mentionRoles?: readonly string[];
  /**
   * An alert's event: when it happened (its block's time) and how the bot read it. Renderers ignore
   * it; the dispatcher turns it into a note when the message goes out late (delivery/lateness.ts).
   * Absent on digests, command answers and payloads recorded before it was kept.
   */
  happened?: Happened;
}

/** How the bot came to read an event: live from the streams, or read back from the chain later. */
export type ReadBack = 'restart' | 'reconnect';

/** See {@link Reply.happened}. */
export interface Happened {
  /** The block's time, ISO 8601. */
  at: string;
  /** Read back after a restart (or a take-over) from the saved cursor, or after an events stream broke. */
  readBack?: ReadBack;
}

export const bold = (text: string): Inline => ({ bold: text });
export const italic = (text: string): Inline => ({ italic: text });
export const code = (text: string): Inline => ({ code: text });
export const link = (text: string, href: string): Inline => ({ link: text, href });

/** The plain text of rich text, without markup (for logs and length checks). */
export function plain(rich: Rich): string {
  if (typeof rich === 'string') return rich;
  return rich
    .map((piece) => {
      if (typeof piece === 'string') return piece;
      if ('bold' in piece) return piece.bold;
      if ('italic' in piece) return piece.italic;
      if ('code' in piece) return piece.code;
      if ('time' in piece) return timeText(piece);
      return piece.link;
    })
    .join('');
}

/**
 * A {@link TimeInline} as text: `12 min ago (2026-11-28 14:03 UTC)`, the clock in its time zone. An
 * unknown zone or a bad time falls back to UTC and the ISO text.
 */
export function timeText(piece: TimeInline): string {
  return `${piece.ago} (${clockText(piece.time, piece.timeZone)})`;
}

function clockText(iso: string, timeZone: string | undefined): string {
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return iso;
  if (timeZone && timeZone !== 'UTC') {
    try {
      const parts = new Intl.DateTimeFormat('en-CA', {
        timeZone,
        year: 'numeric',
        month: '2-digit',
        day: '2-digit',
        hour: '2-digit',
        minute: '2-digit',
        hourCycle: 'h23',
      }).formatToParts(at);
      const part = (type: Intl.DateTimeFormatPartTypes) => parts.find((p) => p.type === type)?.value ?? '';
      return `${part('year')}-${part('month')}-${part('day')} ${part('hour')}:${part('minute')} ${timeZone}`;
    } catch {
      // An unknown zone: UTC below.
    }
  }
  return `${at.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/**
 * Whether a URL may open inside a chat app (a Telegram Mini App): https, or plain http to this
 * machine (a local demo or test has no certificate; Telegram's own test environment allows http).
 */
export function opensInApp(url: string): boolean {
  try {
    const parsed = new URL(url);
    if (parsed.protocol === 'https:') return true;
    const host = parsed.hostname.replace(/^\[|\]$/g, '');
    return parsed.protocol === 'http:' && (host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host));
  } catch {
    return false;
  }
}

/** A URL a renderer may show: http or https only, parseable, of sane length. */
export function safeUrl(url: string | undefined): string | undefined {
  if (!url || url.length > 2048) return undefined;
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.toString() : undefined;
  } catch {
    return undefined;
  }
}

const GRAPHEMES = new Intl.Segmenter('en', { granularity: 'grapheme' });

/**
 * The longest start of `text` of at most `units` UTF-16 units that ends between two characters as
 * people see them: chat limits count UTF-16 units, and a cut inside an emoji (half a surrogate pair,
 * one flag of a pair, a family without its last member) shows a broken or different character, or
 * is an invalid string a chat API may refuse.
 */
export function sliceUnits(text: string, units: number): string {
  if (text.length <= units) return text;
  let end = 0;
  for (const { index, segment } of GRAPHEMES.segment(text)) {
    if (index + segment.length > units) break;
    end = index + segment.length;
  }
  return text.slice(0, end);
}

/**
 * Bidirectional formatting and invisible characters: LRM/RLM and the Arabic letter mark,
 * embeddings and overrides (U+202A–U+202E), isolates (U+2066–U+2069), zero-width space, word
 * joiner and invisible operators, and the byte order mark. Echoed raw, an override typed into an
 * argument turns the rest of the answer around (U+202E before "moon cats" shows it as "stac noom",
 * and the text after it too). Zero-width (non-)joiners are left alone: emoji and some scripts need them.
 */
export const INVISIBLE = /[\u061c\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/gu;

/** `text` without {@link INVISIBLE} characters: what to suggest typing instead. */
export function withoutInvisible(text: string): string {
  return text.replace(INVISIBLE, '');
}

/**
 * Untrusted text with every `/command` made inert by a word joiner after its slash: Telegram shows a
 * command in a message as a link that sends it, as whoever taps it, so an NFT named
 * "/watch remove r1" would remove a rule when an admin tapped it. Path slashes (`a/b`, `https://`) stay.
 */
export function inertCommands(text: string): string {
  return text.replace(/(^|[^\w:/])\/(?=[A-Za-z])/g, '$1/\u2060');
}

/**
 * An untrusted name (of a token, a collection, a trait) as one line of at most `max` UTF-16 units:
 * line breaks, tabs and control characters become one space, direction and zero-width characters go,
 * and commands in it are inert ({@link inertCommands}). A name then never breaks the layout of a list,
 * turns the rest of its line around or sends a command, on any chat.
 */
export function oneLine(text: string, max: number): string {
  return truncate(
    inertCommands(
      withoutInvisible(text)
        .replace(/[\s\p{Cc}]+/gu, ' ')
        .trim(),
    ),
    max,
  );
}

/** Shortens untrusted text to at most `max` UTF-16 units, ending with an ellipsis when cut, never inside a character. */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${sliceUnits(text, max - 1)}…`;
}
