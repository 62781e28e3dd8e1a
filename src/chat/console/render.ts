import { type Inline, type Reply, type Rich, safeUrl, timeText } from '../../core/reply.ts';

/** Width of the rule under a title. */
const RULE = 48;

/** Removes terminal control sequences and other control characters from untrusted text. */
export function stripControl(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: removing control characters is the point
  return text.replace(/\u001b\[[0-9;?]*[ -/]*[@-~]/g, '').replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, '');
}

function inline(piece: Inline): string {
  if (typeof piece === 'string') return stripControl(piece);
  if ('bold' in piece) return stripControl(piece.bold);
  if ('italic' in piece) return stripControl(piece.italic);
  if ('code' in piece) return stripControl(piece.code);
  if ('time' in piece) return stripControl(timeText(piece));
  const href = safeUrl(piece.href);
  return href ? `${stripControl(piece.link)} <${href}>` : stripControl(piece.link);
}

function rich(text: Rich): string {
  return typeof text === 'string' ? stripControl(text) : text.map(inline).join('');
}

export interface PlainRender {
  text: string;
  /** Actions of the numbered choices shown, in order (1-based in the text). */
  choices: string[];
}

export interface PlainRenderOptions {
  /**
   * Whether buttons with an action become numbered choices (default true). Without numbers, each
   * shows the command it runs, to be typed: for messages a typed number does not refer to.
   */
  numbered?: boolean;
}

/** Renders a Reply as plain terminal text; buttons become numbered choices. */
export function renderPlain(reply: Reply, { numbered = true }: PlainRenderOptions = {}): PlainRender {
  const out: string[] = [];
  if (reply.title) {
    const title = stripControl(reply.title);
    out.push(title, '─'.repeat(Math.min(RULE, Math.max(3, title.length))));
  }
  const url = safeUrl(reply.url);
  if (url) out.push(url);
  for (const line of reply.lines ?? []) out.push(rich(line));
  for (const field of reply.fields ?? []) {
    const value = rich(field.value);
    if (value.includes('\n') || !field.inline)
      out.push(`${stripControl(field.name)}:`, ...value.split('\n').map((l) => `  ${l}`));
    else out.push(`${stripControl(field.name)}: ${value}`);
  }
  const image = safeUrl(reply.image) ?? safeUrl(reply.thumbnail);
  if (image) out.push(`image: ${image}`);
  const choices: string[] = [];
  for (const row of reply.buttons ?? []) {
    for (const button of row) {
      const link = safeUrl(button.url);
      if (link) out.push(`  ${stripControl(button.label)}: ${link}`);
      else if (button.action && !numbered) out.push(`  ${stripControl(button.label)}: ${stripControl(button.action)}`);
      else if (button.action) {
        choices.push(button.action);
        out.push(`  [${choices.length}] ${stripControl(button.label)}`);
      }
    }
  }
  // The terminal pings nobody: it says whom the alert would ping on Discord.
  if (reply.mentionRoles?.length)
    out.push(`(on Discord: pings role ${reply.mentionRoles.map(stripControl).join(', ')})`);
  if (reply.footer) out.push(`— ${stripControl(reply.footer)}`);
  return { text: out.join('\n'), choices };
}
