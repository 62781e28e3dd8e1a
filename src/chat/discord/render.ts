import {
  type Inline,
  plain,
  type Reply,
  type ReplyTone,
  type Rich,
  safeUrl,
  sliceUnits,
  type TimeInline,
  timeText,
  truncate,
} from '../../core/reply.ts';

/** Discord message and embed limits. */
export const DISCORD_LIMITS = {
  content: 2_000,
  embedsPerMessage: 10,
  /** Characters of all embeds of a message together. */
  embedTotal: 6_000,
  title: 256,
  description: 4_096,
  fields: 25,
  fieldName: 256,
  fieldValue: 1_024,
  footer: 2_048,
  customId: 100,
  buttonLabel: 80,
  buttonsPerRow: 5,
  rows: 5,
} as const;

const COLORS: Record<ReplyTone, number> = {
  info: 0x5865f2,
  success: 0x57f287,
  warning: 0xfee75c,
  error: 0xed4245,
  sale: 0x2ecc71,
  listing: 0x3498db,
  offer: 0x9b59b6,
  mint: 0xf1c40f,
  transfer: 0x95a5a6,
};

/** Embed in Discord's API shape (what discord.js accepts as plain data). */
export interface DiscordEmbed {
  title?: string;
  url?: string;
  description?: string;
  color?: number;
  fields?: Array<{ name: string; value: string; inline?: boolean }>;
  image?: { url: string };
  thumbnail?: { url: string };
  footer?: { text: string };
  timestamp?: string;
}

export interface DiscordButton {
  label: string;
  style: 'primary' | 'secondary' | 'danger' | 'success' | 'link';
  /** The action, to be encoded into a custom id of at most 100 characters by the adapter. */
  action?: string;
  url?: string;
  /** The answer updates the message in place (paging, refresh). */
  replaces?: boolean;
}

export interface DiscordMessage {
  content?: string;
  embeds: DiscordEmbed[];
  buttons: DiscordButton[][];
  /** Whom the message may ping: nobody, except the roles a rule configured. */
  allowedMentions: { parse: []; roles: string[]; users: []; repliedUser: false };
  ephemeral: boolean;
}

const MARKDOWN = /[\\*_~`|>[\]()#:-]/g;

/**
 * Escapes untrusted text for Discord markdown: every markup character gets a backslash, `<` cannot
 * open a mention or channel link, and `@` is followed by a zero-width space so `@everyone` stays
 * text even where allowed mentions would not apply.
 */
export function escapeMarkdown(text: string): string {
  return text.replace(MARKDOWN, '\\$&').replace(/</g, '\\<').replace(/@/g, '@\u200b');
}

function inline(piece: Inline): string {
  if (typeof piece === 'string') return escapeMarkdown(piece);
  if ('bold' in piece) return `**${escapeMarkdown(piece.bold)}**`;
  if ('italic' in piece) return `*${escapeMarkdown(piece.italic)}*`;
  // Inside code, escapes are literal: a zero-width space keeps mentions and link syntax inert.
  if ('code' in piece) return `\`${piece.code.replace(/`/g, 'ˋ').replace(/[@<]|\](?=\()/g, '$&\u200b')}\``;
  if ('time' in piece) return discordTime(piece);
  const href = safeUrl(piece.href);
  return href ? `[${escapeMarkdown(piece.link)}](${href.replace(/\)/g, '%29')})` : escapeMarkdown(piece.link);
}

/**
 * A moment as Discord timestamps, which each reader's client shows in their own zone, the relative
 * one kept current (`<t:unix:R> (<t:unix:f>)`); an unreadable time as escaped text.
 */
function discordTime(piece: TimeInline): string {
  const ms = Date.parse(piece.time);
  if (Number.isNaN(ms)) return escapeMarkdown(timeText(piece));
  const unix = Math.floor(ms / 1000);
  return `<t:${unix}:R> (<t:${unix}:f>)`;
}

export function richToMarkdown(text: Rich): string {
  return typeof text === 'string' ? escapeMarkdown(text) : text.map(inline).join('');
}

/**
 * An embed title's Markdown: titles render emphasis, strike-through, spoilers and code (not links or
 * headings), so only those marks, backslashes and `<` (mentions, emoji) are escaped.
 */
function escapeTitle(text: string): string {
  return text.replace(/[\\*_~`|<]/g, '\\$&').replace(/@/g, '@\u200b');
}

/** Markdown cut to `max`, re-rendered from the plain text if the markup would be split. */
function fitMarkdown(text: Rich, max: number, escapeText: (text: string) => string = escapeMarkdown): string {
  const rendered = typeof text === 'string' ? escapeText(text) : richToMarkdown(text);
  if (rendered.length <= max) return rendered;
  let room = max - 1;
  while (room > 0) {
    const escaped = escapeText(sliceUnits(plain(text), room));
    if (escaped.length + 1 <= max) return `${escaped}…`;
    room = Math.floor(room * 0.8);
  }
  return '…';
}

function embedLength(embed: DiscordEmbed): number {
  let n = (embed.title?.length ?? 0) + (embed.description?.length ?? 0) + (embed.footer?.text.length ?? 0);
  for (const field of embed.fields ?? []) n += field.name.length + field.value.length;
  return n;
}

/** One Reply as one embed, within the per-embed limits and a character budget. */
export function renderEmbed(reply: Reply, budget: number = DISCORD_LIMITS.embedTotal): DiscordEmbed {
  const embed: DiscordEmbed = { color: COLORS[reply.tone ?? 'info'] };
  if (reply.title) embed.title = fitMarkdown(reply.title, DISCORD_LIMITS.title, escapeTitle);
  const url = safeUrl(reply.url);
  if (url && embed.title) embed.url = url;
  const lines = (reply.lines ?? []).flatMap((line, i): Inline[] => [
    ...(i ? ['\n'] : []),
    ...(typeof line === 'string' ? [line] : line),
  ]);
  if (lines.length) embed.description = fitMarkdown(lines, DISCORD_LIMITS.description);
  const fields = (reply.fields ?? []).slice(0, DISCORD_LIMITS.fields);
  if (fields.length) {
    embed.fields = fields.map((f) => ({
      name: fitMarkdown(f.name, DISCORD_LIMITS.fieldName) || '\u200b',
      value: fitMarkdown(f.value, DISCORD_LIMITS.fieldValue) || '\u200b',
      ...(f.inline ? { inline: true } : {}),
    }));
  }
  const image = safeUrl(reply.image);
  if (image) embed.image = { url: image };
  const thumbnail = safeUrl(reply.thumbnail);
  if (thumbnail) embed.thumbnail = { url: thumbnail };
  if (reply.footer) embed.footer = { text: truncate(reply.footer.replace(/@/g, '@\u200b'), DISCORD_LIMITS.footer) };
  if (reply.timestamp && !Number.isNaN(Date.parse(reply.timestamp)))
    embed.timestamp = new Date(reply.timestamp).toISOString();
  // Over the shared budget: drop fields from the end, then shorten the description.
  while (embedLength(embed) > budget && embed.fields?.length) embed.fields.pop();
  if (embedLength(embed) > budget && embed.description) {
    const room = Math.max(0, budget - (embedLength(embed) - embed.description.length));
    // Shortened like any rich text, so that no link or markup is cut in two.
    if (room > 1) embed.description = fitMarkdown(lines, room);
    else delete embed.description;
  }
  if (embedLength(embed) > budget && embed.footer) delete embed.footer;
  if (embedLength(embed) > budget && embed.title && reply.title) {
    const room = budget - (embedLength(embed) - embed.title.length);
    if (room > 1) embed.title = fitMarkdown(reply.title, room, escapeTitle);
    else delete embed.title;
  }
  return embed;
}

/** Several Replies (a burst of alerts) as one message; the first gives buttons and flags. */
export function renderDiscord(replies: readonly Reply[]): DiscordMessage {
  const shown = replies.slice(0, DISCORD_LIMITS.embedsPerMessage);
  const embeds: DiscordEmbed[] = [];
  let budget: number = DISCORD_LIMITS.embedTotal;
  for (const [index, reply] of shown.entries()) {
    const share = Math.floor(budget / (shown.length - index));
    // An embed squeezed below a readable size is left out rather than sent empty.
    if (share < 64) break;
    const embed = renderEmbed(reply, share);
    budget -= embedLength(embed);
    embeds.push(embed);
  }
  const first = replies[0];
  const buttons: DiscordButton[][] = [];
  for (const row of (first?.buttons ?? []).slice(0, DISCORD_LIMITS.rows)) {
    const out: DiscordButton[] = [];
    for (const button of row.slice(0, DISCORD_LIMITS.buttonsPerRow)) {
      const label = truncate(button.label, DISCORD_LIMITS.buttonLabel);
      const url = safeUrl(button.url);
      if (url) out.push({ label, style: 'link', url });
      else if (button.action) {
        out.push({
          label,
          style: button.style ?? 'secondary',
          action: button.action,
          ...(button.replaces ? { replaces: true } : {}),
        });
      }
    }
    if (out.length) buttons.push(out);
  }
  const roles = [...new Set(shown.flatMap((r) => r.mentionRoles ?? []))].filter((r) => /^\d{5,25}$/.test(r));
  const message: DiscordMessage = {
    embeds,
    buttons,
    allowedMentions: { parse: [], roles, users: [], repliedUser: false },
    ephemeral: first?.ephemeral === true,
  };
  if (roles.length) message.content = roles.map((r) => `<@&${r}>`).join(' ');
  return message;
}
