import { type CommandContext, defineCommand, defineGroup, type ResolvedCollection } from '../src/bot/command.ts';
import { ArgumentError, UserError } from '../src/bot/errors.ts';
import { parseCollection } from '../src/bot/options.ts';
import type { Rich } from '../src/core/reply.ts';
import type { DigestSettings } from '../src/core/settings.ts';

/** Collections one digest may cover. */
const MAX_COLLECTIONS = 5;
const USAGE = '/digest set <time> [timezone] [days] [collections, comma-separated]';

function pad(n: number): string {
  return String(n).padStart(2, '0');
}

function describe(ctx: CommandContext, digest: DigestSettings): Rich[] {
  const next = ctx.digests?.nextRun(digest);
  return [
    `Every day at ${pad(digest.hour)}:${pad(digest.minute)} ${digest.timeZone}, covering ${digest.days} day${digest.days === 1 ? '' : 's'}.`,
    `Collections: ${digest.collections.map((c) => `${c.name ?? c.address} (${c.network})`).join(', ') || 'none (analytics only)'}.`,
    ...(next ? [`Next: ${next.toISOString().replace('T', ' ').slice(0, 16)} UTC.`] : []),
    ...(digest.lastPostedFor ? [`Last posted for ${digest.lastPostedFor.replace('T', ' ').slice(0, 16)} UTC.`] : []),
  ];
}

async function resolveAll(ctx: CommandContext, text: string | undefined): Promise<ResolvedCollection[]> {
  const names = (text ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (names.length > MAX_COLLECTIONS) {
    throw new UserError('not_found', { what: `A digest covers at most ${MAX_COLLECTIONS} collections.` });
  }
  const settings = ctx.store.chat(ctx.chatKey);
  const out: ResolvedCollection[] = [];
  for (const name of names) {
    const ref = parseCollection(name, { networks: ctx.platform.networks.all.map((n) => n.name) });
    if (!ref.ok) throw new ArgumentError(ref.error, USAGE);
    out.push(await ctx.collections.resolve(ref.value, ctx.network, settings, 'collections'));
  }
  if (out.length === 0 && settings.collection) {
    out.push({
      network: settings.collection.network,
      address: settings.collection.address,
      name: settings.collection.name ?? settings.collection.address,
    });
  }
  return out;
}

export default defineGroup({
  name: 'digest',
  description: 'A daily digest of the market and the project in this chat, with a chart',
  subcommands: [
    defineCommand({
      name: 'set',
      description: 'Post a digest here every day at a time of day',
      permission: 'manage',
      example: '/digest set 09:00 Europe/Paris 7 moon cats, glitch gardens',
      options: [
        { name: 'time', type: 'timeOfDay', description: 'Time of day, e.g. 09:00 or 9am', required: true },
        { name: 'timezone', type: 'timeZone', description: 'IANA time zone, e.g. Europe/Paris (default UTC)' },
        { name: 'days', type: 'integer', description: 'Days the analytics cover (1-30, default 1)', min: 1, max: 30 },
        {
          name: 'collections',
          type: 'text',
          description: 'Collections, comma-separated (default: the chat default)',
          rest: true,
        },
      ],
      async run(ctx, { time, timezone, days, collections }) {
        const resolved = await resolveAll(ctx, collections);
        const previous = ctx.store.chat(ctx.chatKey).digest;
        const digest: DigestSettings = {
          hour: time.hour,
          minute: time.minute,
          timeZone: timezone ?? previous?.timeZone ?? 'UTC',
          days: days ?? previous?.days ?? 1,
          collections: resolved.map((c) => ({ network: c.network, address: c.address, name: c.name })),
          setAt: ctx.now().toISOString(),
          ...(previous?.lastMarket ? { lastMarket: previous.lastMarket } : {}),
        };
        await ctx.store.updateChat(ctx.chatKey, (settings) => {
          settings.digest = digest;
        });
        return {
          title: 'Digest scheduled',
          tone: 'success',
          lines: [...describe(ctx, digest), '/digest preview shows it now.'],
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
