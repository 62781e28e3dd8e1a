import { sampleAlert } from '../src/alerts/sample.ts';
import { type CommandContext, defineCommand, defineGroup, type ResolvedCollection } from '../src/bot/command.ts';
import { ArgumentError, assertBotCanPost, UserError } from '../src/bot/errors.ts';
import { onCollection, traitConditions } from '../src/bot/market-commands.ts';
import { type Amount, parseAddress, parsePercent, parseTokenId } from '../src/bot/options.ts';
import { echo } from '../src/bot/user-text.ts';
import { code, oneLine, type Reply, type Rich } from '../src/core/reply.ts';
import {
  ALERT_KINDS,
  type AlertKind,
  type MinimumPrice,
  type TraitCondition,
  type WatchRule,
} from '../src/core/types.ts';
import { NATIVE_CURRENCY } from '../src/market/currencies.ts';
import { formatUsd, shortAddress } from '../src/market/format.ts';
import type { Order } from '../src/platform/types.ts';

/** Rules one chat may have: bounds the work of every event. */
export const MAX_RULES_PER_CHAT = 50;

/** What a rule asks for, whatever the order its lists were written in: two rules with one identity alert twice. */
function ruleIdentity(rule: Omit<WatchRule, 'id'>): string {
  const sorted = (list: readonly string[] | undefined) => [...(list ?? [])].sort();
  return JSON.stringify([
    rule.network,
    rule.collection,
    sorted(rule.kinds),
    sorted(rule.tokenIds),
    sorted(rule.wallets),
    sorted(rule.ignoreWallets),
    rule.minPrice ? [rule.minPrice.value, rule.minPrice.usd, rule.minPrice.currency ?? null] : null,
    rule.floorPercent ?? null,
    sorted(rule.traits?.map((t) => `${t.name.toLowerCase()}=${t.value.toLowerCase()}`)),
    rule.mentionRole ?? null,
    rule.showRelists === true,
  ]);
}
const MAX_LIST = 20;

const USAGE =
  '/watch add <collection> [kinds] [tokens=1,2] [wallets=0x…] [ignore=0x…] [min=1.5|0.5DUSD|$500] [floor=80%] [mention=role] [relists=show] [trait=value ...]';

function list(text: string | undefined): string[] {
  return (text ?? '')
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
}

function parseKinds(words: readonly string[] | undefined): AlertKind[] {
  if (!words || words.length === 0) return ['sale'];
  if (words.includes('all')) return [...ALERT_KINDS];
  return ALERT_KINDS.filter((kind) => words.includes(kind));
}

/** `$500`, `0.5 DUSD`: a minimum with its unit (the symbol looked up for rules stored without one). */
async function minimumText(ctx: CommandContext, rule: WatchRule, min: MinimumPrice): Promise<string> {
  if (min.usd) return `$${min.value}`;
  const symbol =
    min.symbol ??
    (await ctx.currencies.symbol(rule.network, min.currency ?? NATIVE_CURRENCY).catch(() => 'native coin'));
  return `${min.value} ${symbol}`;
}

async function describeRule(ctx: CommandContext, rule: WatchRule): Promise<Rich> {
  const parts = [`${rule.kinds.join(', ')} of ${oneLine(rule.collectionName, 100)} (${rule.network})`];
  if (rule.tokenIds?.length)
    parts.push(`tokens ${rule.tokenIds.slice(0, 5).join(', ')}${rule.tokenIds.length > 5 ? '…' : ''}`);
  if (rule.wallets?.length) parts.push(`wallets ${rule.wallets.map(shortAddress).join(', ')}`);
  if (rule.ignoreWallets?.length) parts.push(`ignoring ${rule.ignoreWallets.map(shortAddress).join(', ')}`);
  if (rule.minPrice) parts.push(`min ${await minimumText(ctx, rule, rule.minPrice)}`);
  if (rule.floorPercent !== undefined) parts.push(`at most ${rule.floorPercent}% of floor`);
  if (rule.traits?.length) parts.push(rule.traits.map((t) => `${t.name}=${t.value}`).join(', '));
  if (rule.mentionRole) parts.push('with mention');
  if (rule.showRelists && rule.kinds.includes('listing')) parts.push('relists shown');
  return [code(rule.id), ` ${rule.paused ? '(paused) ' : ''}${parts.join(' · ')}`];
}

/** The rules of the chat a command came from. */
function rulesOfChat(ctx: CommandContext): Promise<WatchRule[]> {
  return ctx.store.rulesOf(ctx.chatKey);
}

/** A rule id as typed (`r3`, `R3`, `3`) as the store has it (`r3`). */
function ruleId(typed: string): string {
  return /^r/i.test(typed) ? typed.toLowerCase() : `r${typed}`;
}

async function ruleOfChat(ctx: CommandContext, id: string): Promise<WatchRule> {
  const wanted = ruleId(id);
  const rule = (await rulesOfChat(ctx)).find((r) => r.id === wanted);
  if (!rule) throw new UserError('not_found', { what: `This chat has no rule ${echo(id)}. /watch list shows them.` });
  return rule;
}

const ruleOption = { name: 'rule', type: 'text', description: 'Rule id, e.g. r3', required: true } as const;
/** `rule` of the commands that change rules: one id, or several (`r3,r4`). */
const rulesOption = {
  name: 'rule',
  type: 'text',
  description: 'Rule id, e.g. r3, or several: r3,r4',
  required: true,
  rest: true,
} as const;

/** The rules named (`r3`, `3`, `r3,r4 r5`), each once; none is changed when one of them is not the chat's. */
async function rulesNamed(ctx: CommandContext, text: string): Promise<WatchRule[]> {
  const ids = [
    ...new Set(
      text
        .split(/[\s,]+/)
        .filter(Boolean)
        .map(ruleId),
    ),
  ];
  const rules = await rulesOfChat(ctx);
  const missing = ids.filter((id) => !rules.some((r) => r.id === id));
  if (missing.length > 0) {
    const named = missing.length === 1 ? `rule ${echo(missing[0])}` : `rules ${echo(missing.join(', '))}`;
    throw new UserError('not_found', {
      what: `This chat has no ${named}: nothing was changed. /watch list shows them.`,
    });
  }
  return ids.map((id) => rules.find((r) => r.id === id) as WatchRule);
}

/** `Rule r3` or `Rules r3, r4 and r5`. */
function rulesText(rules: readonly WatchRule[]): string {
  const ids = rules.map((r) => r.id);
  return ids.length === 1 ? `Rule ${ids[0]}` : `Rules ${ids.slice(0, -1).join(', ')} and ${ids.at(-1)}`;
}

/** Pauses or resumes the rules named, and says which were already so. */
async function setPaused(ctx: CommandContext, text: string, paused: boolean): Promise<Reply> {
  const found = await rulesNamed(ctx, text);
  const changing = found.filter((r) => (r.paused === true) !== paused);
  const already = found.filter((r) => (r.paused === true) === paused);
  for (const rule of changing) await ctx.store.updateRule(rule.id, (r) => ({ ...r, paused }));
  const one = (rules: readonly WatchRule[]) => rules.length === 1;
  const changed = paused
    ? `${rulesText(changing)} paused. /watch resume ${changing.map((r) => r.id).join(',')} turns ${one(changing) ? 'it' : 'them'} back on.`
    : `${rulesText(changing)} ${one(changing) ? 'is' : 'are'} on again.`;
  const unchanged = `${rulesText(already)} ${one(already) ? 'was' : 'were'} ${paused ? 'already paused' : 'not paused'}.`;
  return {
    tone: changing.length > 0 ? 'success' : 'info',
    lines: [...(changing.length > 0 ? [changed] : []), ...(already.length > 0 ? [unchanged] : [])],
  };
}

/** Orders of each side read to learn a collection's main currency and the USD rates of its currencies. */
const MARKET_PAGE_SIZE = 100;

/**
 * The collection's main currency: the one most of its listings are priced in (what its sellers ask
 * and buyers pay; the cheapest listing alone may be an odd one out in another currency), the native
 * coin on a tie with it or with nothing listed. Reading its listings and offers also teaches the
 * currency directory their USD rates, which the rule's note and the conversion need.
 */
async function marketCurrency(ctx: CommandContext, collection: { network: string; address: string }): Promise<string> {
  const sides = ['listing', 'offer'] as const;
  const [listings] = await Promise.all(
    sides.map(async (side) => {
      const { collectibles } = await ctx.platform.marketplace.listCollectibles({
        network: collection.network,
        side,
        contractAddress: collection.address,
        filter: { includeEmpty: false },
        page: { pageSize: MARKET_PAGE_SIZE },
      });
      const orders = collectibles.map((c) => c.order ?? c.listing).filter((o): o is Order => o !== undefined);
      for (const order of orders) ctx.currencies.learn(collection.network, order);
      return orders;
    }),
  );
  const counts = new Map<string, number>([[NATIVE_CURRENCY, 0]]);
  for (const order of listings ?? []) {
    const currency = order.priceCurrencyAddress.toLowerCase();
    counts.set(currency, (counts.get(currency) ?? 0) + 1);
  }
  // The native coin is first in the map: it wins a tie.
  let main = NATIVE_CURRENCY;
  for (const [currency, count] of counts) if (count > (counts.get(main) ?? 0)) main = currency;
  return main;
}

/**
 * A typed minimum as the rule stores it, with its unit: dollars as typed; a symbol checked against
 * the network's currencies; a bare number in the collection's main currency (see marketCurrency).
 * A currency the bot cannot turn into US dollars is refused: orders in other currencies could
 * never be compared with it. The note tells the user how other currencies are compared.
 */
async function minimumOf(
  ctx: CommandContext,
  collection: ResolvedCollection,
  amount: Amount,
): Promise<{ price: MinimumPrice; note: string | undefined }> {
  if (amount.usd) {
    return {
      price: { value: amount.value, usd: true },
      note: 'Orders in any currency are compared by their US dollar value.',
    };
  }
  const main = await onCollection(collection, () => marketCurrency(ctx, collection));
  let currency: { address: string; symbol: string } | undefined;
  if (amount.currency === undefined) {
    currency = { address: main, symbol: await ctx.currencies.symbol(collection.network, main) };
  } else {
    currency = await ctx.currencies.bySymbol(collection.network, amount.currency);
    if (!currency) {
      throw new UserError('not_found', {
        what: `${echo(amount.currency)} is not a currency the bot knows on ${collection.network}. Use the symbol of one its orders are priced in, or $ for US dollars (min=$100).`,
      });
    }
  }
  const rate = ctx.currencies.lastUsdRate(collection.network, currency.address);
  if (rate === undefined) {
    throw new UserError('not_found', {
      what: `The bot knows no US dollar price of ${currency.symbol} on ${collection.network}, so it could not compare orders in other currencies with min=${amount.value} ${currency.symbol}. Give the minimum in US dollars (min=$100) or in a currency this collection trades in.`,
    });
  }
  const worth = Number(amount.value) * rate;
  return {
    price: { value: amount.value, usd: false, currency: currency.address, symbol: currency.symbol },
    note: `Orders in ${currency.symbol} compare by amount; orders in other currencies by their US dollar value (${amount.value} ${currency.symbol} is ${formatUsd(worth) ?? 'under a cent'} now).`,
  };
}

/** How people say the kinds otherwise (plurals are read anyway): `/watch add moon cats sold` means sales. */
const KIND_SYNONYMS: Readonly<Record<string, string>> = {
  sold: 'sale',
  bought: 'sale',
  list: 'listing',
  listed: 'listing',
  bid: 'offer',
  bids: 'offer',
  offered: 'offer',
  minted: 'mint',
  transferred: 'transfer',
  burned: 'burn',
  burnt: 'burn',
  cancelled: 'cancel',
  canceled: 'cancel',
  delisted: 'cancel',
  everything: 'all',
};

/** `sales, listings, …, cancels`: every kind a rule can follow, as /help names them. */
const KINDS_TEXT = ALERT_KINDS.map((kind) => `${kind}s`).join(', ');

export default defineGroup({
  name: 'watch',
  // About this chat's own setup: where the bot answers one person among others, only they see it.
  personal: true,
  description: `Alerts for this chat: ${KINDS_TEXT}`,
  subcommands: [
    defineCommand({
      name: 'add',
      description: 'Add an alert rule for a collection',
      permission: 'manage',
      acceptsTraits: true,
      example: '/watch add moon cats sale,listing min=0.5 background=aurora',
      options: [
        {
          name: 'collection',
          type: 'collection',
          description: 'Collection name, alias or address',
          required: true,
          autocomplete: true,
        },
        {
          name: 'kinds',
          type: 'choiceList',
          description: `${ALERT_KINDS.join(', ')} or all (default sale)`,
          choices: [...ALERT_KINDS, 'all'],
          synonyms: KIND_SYNONYMS,
        },
        { name: 'tokens', type: 'text', description: 'Only these token ids, comma-separated' },
        { name: 'wallets', type: 'text', description: 'Only events involving these wallets, comma-separated' },
        { name: 'ignore', type: 'text', description: 'Never events involving these wallets, comma-separated' },
        {
          name: 'min',
          type: 'amount',
          description: "Minimum price: 1.5 (the collection's currency), 0.5 DUSD or $500",
        },
        {
          name: 'floor',
          type: 'text',
          description: 'Sales and listings at most this share of the floor, e.g. 80%',
        },
        { name: 'mention', type: 'role', description: 'Role to ping on a match (Discord)' },
        {
          name: 'relists',
          type: 'choice',
          description: 'Identical relists (same token, seller and price within a day): hide (default) or show',
          choices: ['hide', 'show'],
        },
      ],
      async run(ctx, { collection, kinds, tokens, wallets, ignore, min, floor, mention, relists }) {
        assertBotCanPost(ctx.chat);
        // Telegram has no roles: a role there would be kept and never used (the terminal shows whom it would ping).
        if (mention !== undefined && ctx.chat.platform === 'telegram') {
          throw new UserError('discord_only', { what: 'mention= (a role to ping)' });
        }
        const mentionCheck = mention === undefined ? 'ok' : (ctx.actor.mayMention?.(mention) ?? 'ok');
        if (mentionCheck !== 'ok') throw new UserError('role_mention', { role: mention, reason: mentionCheck });
        const tokenIds = list(tokens).map((t) => {
          const parsed = parseTokenId(t, 'tokens');
          if (!parsed.ok) throw new ArgumentError(parsed.error, USAGE);
          return parsed.value;
        });
        const addresses = (text: string | undefined, option: string) =>
          list(text).map((w) => {
            const parsed = parseAddress(w, option);
            if (!parsed.ok) throw new ArgumentError(parsed.error, USAGE);
            return parsed.value;
          });
        const walletList = addresses(wallets, 'wallets');
        const ignored = addresses(ignore, 'ignore');
        const ruleKinds = parseKinds(kinds);
        let floorPercent: number | undefined;
        if (floor !== undefined) {
          const parsed = parsePercent(floor, 'floor');
          if (!parsed.ok) throw new ArgumentError(parsed.error, USAGE);
          floorPercent = parsed.value;
          // The floor compares prices: only sales and listings have one to compare.
          const unpriced = ruleKinds.filter((kind) => kind !== 'sale' && kind !== 'listing');
          if (unpriced.length > 0) {
            throw new ArgumentError(
              {
                code: 'invalid_choice',
                option: 'kinds (with floor=)',
                input: unpriced.join(','),
                allowed: ['sale', 'listing'],
              },
              USAGE,
            );
          }
        }
        const traits: TraitCondition[] = (await traitConditions(ctx, collection, USAGE)).map(({ filter, value }) => ({
          name: filter.name,
          value,
        }));
        const minimum = min ? await minimumOf(ctx, collection, min) : { price: undefined, note: undefined };
        const wanted: Omit<WatchRule, 'id'> = {
          destination: { platform: ctx.chat.platform, chatId: ctx.chat.id },
          network: collection.network,
          collection: collection.address,
          collectionName: collection.name,
          kinds: ruleKinds,
          ...(tokenIds.length ? { tokenIds } : {}),
          ...(walletList.length ? { wallets: walletList } : {}),
          ...(ignored.length ? { ignoreWallets: ignored } : {}),
          ...(minimum.price ? { minPrice: minimum.price } : {}),
          ...(floorPercent === undefined ? {} : { floorPercent }),
          ...(traits.length ? { traits } : {}),
          ...(mention ? { mentionRole: mention } : {}),
          // Relists are listings: the choice means nothing to a rule without them.
          ...(relists === 'show' && ruleKinds.includes('listing') ? { showRelists: true } : {}),
          paused: false,
          createdBy: `${ctx.chat.platform}:${ctx.actor.id}`,
          createdAt: ctx.now().toISOString(),
        };
        const same = (await rulesOfChat(ctx)).find((r) => ruleIdentity(r) === ruleIdentity(wanted));
        if (same) {
          throw new UserError('not_found', {
            what: `${same.id} already watches exactly this${same.paused ? ` (paused: /watch resume ${same.id})` : ''}.`,
          });
        }
        const rule = await ctx.store.addRule(wanted, MAX_RULES_PER_CHAT);
        if (!rule)
          throw new UserError('not_found', {
            what: `This chat already has ${MAX_RULES_PER_CHAT} rules; remove one first.`,
          });
        return {
          title: 'Watching',
          tone: 'success',
          lines: [
            await describeRule(ctx, rule),
            ...(minimum.note ? [minimum.note] : []),
            'Alerts arrive here within seconds of the event. /watch test shows a sample.',
          ],
          buttons: [[{ label: 'Show a sample', action: `/watch test rule=${rule.id}` }]],
        };
      },
    }),
    defineCommand({
      name: 'list',
      description: "This chat's alert rules",
      options: [],
      async run(ctx) {
        const rules = await rulesOfChat(ctx);
        return {
          title: 'Alert rules',
          tone: 'info',
          lines: rules.length
            ? [
                ...(await Promise.all(rules.slice(0, MAX_LIST).map((rule) => describeRule(ctx, rule)))),
                ...(rules.length > MAX_LIST ? [`… and ${rules.length - MAX_LIST} more`] : []),
              ]
            : ['No rules yet. Add one with /watch add <collection>.'],
        };
      },
    }),
    defineCommand({
      name: 'remove',
      description: 'Remove alert rules',
      permission: 'manage',
      options: [rulesOption],
      async run(ctx, { rule }) {
        const found = await rulesNamed(ctx, rule);
        for (const rule of found) await ctx.store.updateRule(rule.id, () => null);
        return { tone: 'success', lines: [`${rulesText(found)} removed.`] };
      },
    }),
    defineCommand({
      name: 'pause',
      description: 'Pause alert rules',
      permission: 'manage',
      options: [rulesOption],
      async run(ctx, { rule }) {
        return setPaused(ctx, rule, true);
      },
    }),
    defineCommand({
      name: 'resume',
      description: 'Resume paused alert rules',
      permission: 'manage',
      options: [rulesOption],
      async run(ctx, { rule }) {
        return setPaused(ctx, rule, false);
      },
    }),
    defineCommand({
      name: 'test',
      description: 'Show a sample alert of a rule, built from the current market',
      permission: 'manage',
      options: [ruleOption],
      async run(ctx, { rule }) {
        return sampleAlert(ctx, await ruleOfChat(ctx, rule));
      },
    }),
  ],
});
