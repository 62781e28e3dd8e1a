import { type CommandContext, defineCommand, defineGroup, type ResolvedCollection } from '../src/bot/command.ts';
import { ArgumentError, assertBotCanPost, UserError } from '../src/bot/errors.ts';
import { looksLike, type OptionSpec, parseCollection, parseInteger, parseTimeZone } from '../src/bot/options.ts';
import { zonesForAbbreviation } from '../src/bot/time-zones.ts';
import { oneLine, type Rich } from '../src/core/reply.ts';
import type { CollectionKey, DigestSettings } from '../src/core/settings.ts';
import { zonedMoment } from '../src/digests/zoned-time.ts';

/** Collections one digest may cover. */
const MAX_COLLECTIONS = 5;
const USAGE = '/digest set <time> [timezone] [days] [collections, comma-separated]';

const TIMEZONE = {
  name: 'timezone',
  type: 'timeZone',
  description: 'IANA time zone, e.g. Europe/Paris (default UTC)',
  namedOnly: true,
} as const satisfies OptionSpec;
const DAYS = {
  name: 'days',
  type: 'integer',
  description: 'Days the analytics cover (1-30, default 1)',
  min: 1,
  max: 30,
  namedOnly: true,
} as const satisfies OptionSpec;

interface Leading {
  timezone: string | undefined;
  days: number | undefined;
  /** The words left: collections, comma-separated. */
  rest: string;
}

/**
 * A word the time zone is read from by position: an IANA name (`Europe/Paris`, reported if it is
 * none), `UTC` or `GMT`, or an abbreviation in capitals (`PST`, refused with the zone to use). Other single words the time zone database knows are abbreviations and old
 * country names (`gb`, `nz`, `wet`, `eire`, `Japan`) that could begin a collection's name: those are
 * taken as `timezone=` only.
 */
function readsAsTimeZone(word: string): boolean {
  return (
    /^(utc|gmt)$/i.test(word) ||
    looksLike(TIMEZONE, word, { networks: [] }) ||
    // `PST` in capitals is meant as a zone (and refused with the zone to use); `art` may begin a name.
    (word === word.toUpperCase() && zonesForAbbreviation(word) !== undefined)
  );
}

/**
 * The time zone and days read from the first words after the time, in either order, each when its
 * word reads as one (`7`, `40`: days, the second out of range) and it was not given by name; the
 * words left are the collections. The engine gives an optional option the next word whatever it is
 * (`/digest set 09:00 7` made `7` the time zone), so these two take no word from it (they are
 * named-only) and are read here from the words it passes on as the collections.
 */
function readLeading(text: string, given: { timezone: string | undefined; days: number | undefined }): Leading {
  const words = text.trim().split(/\s+/).filter(Boolean);
  let { timezone, days } = given;
  const taken = { timezone: given.timezone !== undefined, days: given.days !== undefined };
  while (words.length > 0) {
    const word = words[0] as string;
    if (!taken.timezone && readsAsTimeZone(word)) {
      const parsed = parseTimeZone(word);
      if (!parsed.ok) throw new ArgumentError(parsed.error, USAGE);
      timezone = parsed.value;
      taken.timezone = true;
    } else if (!taken.days && looksLike(DAYS, word, { networks: [] })) {
      const parsed = parseInteger(word, DAYS.name, DAYS.min, DAYS.max);
      if (!parsed.ok) throw new ArgumentError(parsed.error, USAGE);
      days = parsed.value;
      taken.days = true;
    } else break;
    words.shift();
  }
  return { timezone, days, rest: words.join(' ') };
}

function pad(n: number): string {
  return String(n).padStart(2, '0');
}

/** The schedule in words; its times in the schedule's own zone (UTC in brackets), as it is set. */
function describe(ctx: CommandContext, digest: DigestSettings): Rich[] {
  const next = ctx.digests?.nextRun(digest);
  return [
    `Every day at ${pad(digest.hour)}:${pad(digest.minute)} ${digest.timeZone}, covering ${digest.days} day${digest.days === 1 ? '' : 's'}.`,
    `Collections: ${digest.collections.map((c) => `${oneLine(c.name ?? '', 100) || c.address} (${c.network})`).join(', ') || 'none (analytics only)'}.`,
    ...(next ? [`Next: ${zonedMoment(next, digest.timeZone)}.`] : []),
    ...(digest.lastPostedFor
      ? [`Last posted for ${zonedMoment(new Date(digest.lastPostedFor), digest.timeZone)}.`]
      : []),
  ];
}

/** The collections named, each once (by name as typed, then by contract): none when no name is given. */
async function resolveAll(ctx: CommandContext, text: string): Promise<ResolvedCollection[]> {
  const byName = new Map<string, string>();
  for (const name of text.split(',')) {
    const trimmed = name.trim().replace(/\s+/g, ' ');
    if (trimmed) byName.set(trimmed.toLowerCase(), trimmed);
  }
  const names = [...byName.values()];
  if (names.length > MAX_COLLECTIONS) {
    throw new UserError('not_found', { what: `A digest covers at most ${MAX_COLLECTIONS} collections.` });
  }
  const settings = ctx.store.chat(ctx.chatKey);
  const out = new Map<string, ResolvedCollection>();
  for (const name of names) {
    const ref = parseCollection(name, { networks: ctx.platform.networks.all.map((n) => n.name) });
    if (!ref.ok) throw new ArgumentError(ref.error, USAGE);
    const resolved = await ctx.collections.resolve(ref.value, ctx.network, settings, 'collections');
    const key = `${resolved.network}:${resolved.address.toLowerCase()}`;
    if (!out.has(key)) out.set(key, resolved);
  }
  return [...out.values()];
}

/** The chat's default collection, which a new digest covers when it names none. */
function chatDefault(ctx: CommandContext): CollectionKey[] {
  const chosen = ctx.store.chat(ctx.chatKey).collection;
  return chosen ? [{ network: chosen.network, address: chosen.address, name: chosen.name ?? chosen.address }] : [];
}

export default defineGroup({
  name: 'digest',
  // About this chat's own setup: where the bot answers one person among others, only they see it.
  personal: true,
  description: 'A daily digest of the market and the project in this chat, with a chart',
  subcommands: [
    defineCommand({
      name: 'set',
      description: 'Post a digest here every day at a time of day',
      permission: 'manage',
      example: '/digest set 09:00 Europe/Paris 7 moon cats, glitch gardens',
      options: [
        { name: 'time', type: 'timeOfDay', description: 'Time of day, e.g. 09:00 or 9am', required: true },
        TIMEZONE,
        DAYS,
        {
          name: 'collections',
          type: 'text',
          description: 'Collections, comma-separated (default: the chat default)',
          rest: true,
        },
      ],
      async run(ctx, { time, timezone: namedZone, days: namedDays, collections }) {
        assertBotCanPost(ctx.chat);
        // Collections given by name (collections=, or Discord's own field) are only collections.
        const { timezone, days, rest } = ctx.typed.namedKeys.has('collections')
          ? { timezone: namedZone, days: namedDays, rest: collections ?? '' }
          : readLeading(collections ?? '', { timezone: namedZone, days: namedDays });
        const resolved = await resolveAll(ctx, rest);
        const previous = ctx.store.chat(ctx.chatKey).digest;
        // Setting the time again changes what is restated and keeps the rest, collections as much as the
        // time zone and days: `/digest set 10:00` moves the digest, it does not empty it. The answer
        // names what was kept; /digest off and a new /digest set start from the defaults.
        const kept = [
          ...(previous && timezone === undefined ? ['time zone'] : []),
          ...(previous && days === undefined ? ['days'] : []),
          ...(previous && resolved.length === 0 ? ['collections'] : []),
        ];
        const digest: DigestSettings = {
          hour: time.hour,
          minute: time.minute,
          timeZone: timezone ?? previous?.timeZone ?? 'UTC',
          days: days ?? previous?.days ?? 1,
          collections:
            resolved.length > 0
              ? resolved.map((c) => ({ network: c.network, address: c.address, name: c.name }))
              : (previous?.collections ?? chatDefault(ctx)),
          setAt: ctx.now().toISOString(),
          ...(previous?.lastMarket ? { lastMarket: previous.lastMarket } : {}),
        };
        await ctx.store.updateChat(ctx.chatKey, (settings) => {
          settings.digest = digest;
        });
        return {
          title: 'Digest scheduled',
          tone: 'success',
          lines: [
            ...describe(ctx, digest),
            ...(kept.length > 0 ? [`Kept from the previous digest: ${kept.join(', ')}.`] : []),
            '/digest preview shows it now.',
          ],
        };
      },
    }),
    defineCommand({
      name: 'show',
      description: "This chat's digest schedule",
      options: [],
      async run(ctx) {
        const digest = ctx.store.chat(ctx.chatKey).digest;
        if (!digest)
          return { title: 'No digest', tone: 'info', lines: ['Set one with /digest set 09:00 Europe/Paris.'] };
        return { title: 'Daily digest', tone: 'info', lines: describe(ctx, digest) };
      },
    }),
    defineCommand({
      name: 'preview',
      description: 'Post the digest now',
      permission: 'manage',
      options: [],
      async run(ctx) {
        const digest = ctx.store.chat(ctx.chatKey).digest;
        if (!digest)
          throw new UserError('not_found', { what: 'This chat has no digest yet: /digest set 09:00 Europe/Paris.' });
        if (!ctx.digests) throw new UserError('not_configured', { what: 'Digests are not running in this bot.' });
        return ctx.digests.preview(ctx.chatKey, digest);
      },
    }),
    defineCommand({
      name: 'off',
      description: 'Stop the daily digest',
      permission: 'manage',
      options: [],
      async run(ctx) {
        if (!ctx.store.chat(ctx.chatKey).digest) return { tone: 'info', lines: ['This chat has no digest.'] };
        await ctx.store.updateChat(ctx.chatKey, (settings) => {
          delete settings.digest;
        });
        return { tone: 'success', lines: ['Digest stopped.'] };
      },
    }),
  ],
});
