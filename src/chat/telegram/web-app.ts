/**
 * Telegram Mini App launch data (`Telegram.WebApp.initData`, passed to the page in its URL's
 * `#tgWebAppData`): a query string Telegram signs with the bot's token. The secret key is
 * HMAC-SHA256(key "WebAppData", the token); the `hash` field is the hex HMAC-SHA256 (that key) of
 * every other field as `key=value` lines sorted by key and joined with `\n`.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import * as v from 'valibot';

/** How long after Telegram opened the Mini App its data is accepted. */
export const INIT_DATA_MAX_AGE_S = 60 * 60;
/** Clock difference tolerated for an `auth_date` ahead of ours. */
const CLOCK_SKEW_S = 60;

const userSchema = v.object({ id: v.pipe(v.number(), v.integer(), v.minValue(1)) });

export type InitDataCheck =
  | { ok: true; userId: string; authDate: number }
  | { ok: false; reason: 'malformed' | 'bad_hash' | 'stale' | 'no_user' };

/** The `key=value` lines Telegram signs (every field but `hash`, sorted by key); undefined if a key repeats. */
export function dataCheckString(params: URLSearchParams): string | undefined {
  const entries = [...params].filter(([key]) => key !== 'hash');
  if (new Set(entries.map(([key]) => key)).size !== entries.length) return undefined;
  return entries
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, value]) => `${key}=${value}`)
    .join('\n');
}

/** The `hash` Telegram puts on data signed for `botToken`. */
export function initDataHash(checkString: string, botToken: string): string {
  const secret = createHmac('sha256', 'WebAppData').update(botToken).digest();
  return createHmac('sha256', secret).update(checkString).digest('hex');
}

/** Checks Mini App data against the bot's token and its age; the Telegram user it names. */
export function checkInitData(
  initData: string,
  botToken: string,
  now: Date,
  maxAgeSeconds = INIT_DATA_MAX_AGE_S,
): InitDataCheck {
  if (initData.length === 0 || initData.length > 8_192) return { ok: false, reason: 'malformed' };
  const params = new URLSearchParams(initData);
  const hash = params.getAll('hash');
  const checkString = dataCheckString(params);
  if (hash.length !== 1 || !/^[0-9a-f]{64}$/.test(hash[0] ?? '') || checkString === undefined) {
    return { ok: false, reason: 'malformed' };
  }
  const expected = Buffer.from(initDataHash(checkString, botToken), 'hex');
  const given = Buffer.from(hash[0] ?? '', 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: 'bad_hash' };
  const authDate = Number(params.get('auth_date'));
  const nowSeconds = now.getTime() / 1000;
  if (!Number.isInteger(authDate) || authDate > nowSeconds + CLOCK_SKEW_S || nowSeconds - authDate > maxAgeSeconds) {
    return { ok: false, reason: 'stale' };
  }
  let user: unknown;
  try {
    user = JSON.parse(params.get('user') ?? '');
  } catch {
    return { ok: false, reason: 'no_user' };
  }
  const parsed = v.safeParse(userSchema, user);
  if (!parsed.success) return { ok: false, reason: 'no_user' };
  return { ok: true, userId: String(parsed.output.id), authDate };
}
