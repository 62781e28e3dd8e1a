/**
 * Deep links into the private chat with the bot for a group: `https://t.me/<bot>?start=<payload>`
 * opens the chat and sends `/start <payload>` as the person who tapped it. The payload (at most 64
 * characters of A-Z, a-z, 0-9, _ and -) names a command line of lower-case words and the group:
 * `verify_-1001234567890` runs `/verify` there for group -1001234567890.
 */

const PAYLOAD = /^[A-Za-z0-9_-]{1,64}$/;

/** The payload for `command` (lower-case words) in the group `communityId`; undefined when it does not fit. */
export function startPayload(command: string, communityId: string): string | undefined {
  const words = command.trim().split(/\s+/);
  if (!words.every((word) => /^[a-z]+$/.test(word)) || !/^-?\d{1,20}$/.test(communityId)) return undefined;
  const payload = `${words.join('-')}_${communityId}`;
  return PAYLOAD.test(payload) ? payload : undefined;
}

/** The command line and group of a payload; undefined for any other `/start` payload. */
export function parseStartPayload(payload: string): { commandLine: string; communityId: string } | undefined {
  const match = /^([a-z]+(?:-[a-z]+)*)_(-?\d{1,20})$/.exec(payload);
  if (!match) return undefined;
  return { commandLine: `/${(match[1] ?? '').split('-').join(' ')}`, communityId: match[2] ?? '' };
}

/** The link that opens the private chat with `botUsername` and sends `/start <payload>`. */
export function deepLink(botUsername: string, payload: string): string {
  return `https://t.me/${encodeURIComponent(botUsername)}?start=${payload}`;
}
