import * as v from 'valibot';
import type { ListingFate, ListingFateBody, ListingWatch } from '../core/deliveries.ts';
import type { ChatSettings } from '../core/settings.ts';
import { ALERT_KINDS, MOVE_SUBJECTS, NATIVE_COIN_ADDRESS, type WatchRule } from '../core/types.ts';
import { type Dict, dict } from '../records.ts';

const isPlainObject = (input: unknown): input is Record<string, unknown> =>
  typeof input === 'object' && input !== null && !Array.isArray(input);

/** A JSON object (not a list, not null) whose values match `value`, read into a {@link Dict}. */
function dictOf<T extends v.GenericSchema>(value: T) {
  return v.pipe(
    v.custom<Record<string, unknown>>(isPlainObject, 'expected an object'),
    v.record(v.string(), value),
    v.transform((record) => dict(record as Record<string, v.InferOutput<T>>)),
  );
}

const text = v.pipe(v.string(), v.minLength(1, 'expected a non-empty text'));
const isoTime = v.pipe(v.string(), v.isoTimestamp('expected an ISO time'));
/**
 * An address as the bot writes it: `0x` and 40 lower-case hex digits, nothing around. Anything else
 * never matches an event (a rule keyed by `0x…1111 ` would never fire) and is refused when written.
 */
const address = v.pipe(
  v.string(),
  v.regex(/^0x[0-9a-f]{40}$/, 'expected an address (0x and 40 lower-case hex digits)'),
);
const int = (min: number, max: number) =>
  v.pipe(v.number(), v.integer('expected a whole number'), v.minValue(min), v.maxValue(max));

const collectionKey = v.object({
  network: text,
  address,
  name: v.exactOptional(v.string()),
});

const marketSnapshot = v.object({
  floorUsd: v.exactOptional(v.number()),
  bestOfferUsd: v.exactOptional(v.number()),
  listings: v.exactOptional(v.number()),
});

const digestSettings = v.object({
  hour: int(0, 23),
  minute: int(0, 59),
  timeZone: text,
  collections: v.array(collectionKey),
  days: int(1, 365),
  setAt: isoTime,
  lastPostedFor: v.exactOptional(isoTime),
  lastMarket: v.exactOptional(dictOf(marketSnapshot)),
});

const chatSettings = v.object({
  network: v.exactOptional(text),
  collection: v.exactOptional(collectionKey),
  aliases: dictOf(v.object({ ...collectionKey.entries, alias: text })),
  digest: v.exactOptional(digestSettings),
  crosspost: v.exactOptional(v.boolean()),
});

/** A long button action stored under its hash (the buttons file's lines, older state files' `buttons`). */
export const storedButtonSchema = v.object({ action: v.string(), createdAt: isoTime });

/** How long a stored button action works: buttons older than this answer "no longer works". */
export const BUTTON_TTL_MS = 7 * 24 * 60 * 60 * 1000;
/** Most stored button actions kept; beyond it the least recently saved go first. */
export const MAX_STORED_BUTTONS = 10_000;

const destination = v.object({
  platform: v.picklist(['console', 'discord', 'telegram'], 'expected console, discord or telegram'),
  chatId: text,
});

const decimal = v.pipe(v.string(), v.regex(/^\d+(\.\d+)?$/, 'expected a decimal number'));

/** A currency's symbol as a rule shows it (`DEV`, `DUSD`, `USDC.e`). */
const currencySymbol = v.pipe(
  v.string(),
  v.regex(/^[A-Za-z][A-Za-z0-9.]{0,15}$/, 'expected a currency symbol such as DUSD'),
);

const moveLevel = v.object({
  amount: decimal,
  currency: address,
  usd: v.exactOptional(v.pipe(v.number(), v.finite(), v.minValue(0))),
  orderId: v.pipe(v.string(), v.maxLength(100)),
  tokenId: v.exactOptional(v.pipe(v.string(), v.regex(/^\d+$/, 'expected a token id'))),
  at: isoTime,
});

const moveRule = v.object({
  subject: v.picklist(MOVE_SUBJECTS, `expected one of ${MOVE_SUBJECTS.join(', ')}`),
  changePercent: v.exactOptional(v.pipe(v.number(), v.minValue(0.1), v.maxValue(100))),
  below: v.exactOptional(v.object({ value: decimal, usd: v.boolean() })),
  above: v.exactOptional(v.object({ value: decimal, usd: v.boolean() })),
  everyMs: v.pipe(v.number(), v.integer(), v.minValue(60_000), v.maxValue(7 * 86_400_000)),
  reference: v.exactOptional(moveLevel),
  lastAlertAt: v.exactOptional(isoTime),
});

const watchRule = v.pipe(
  v.object({
    id: v.pipe(v.string(), v.regex(/^r\d+$/, 'expected a rule id such as r12')),
    destination,
    network: text,
    collection: address,
    collectionName: v.string(),
    // A move rule (floor, best offer) follows levels, not events: its kinds are empty.
    kinds: v.array(v.picklist(ALERT_KINDS, `expected one of ${ALERT_KINDS.join(', ')}`)),
    tokenIds: v.exactOptional(v.array(v.pipe(v.string(), v.regex(/^\d+$/, 'expected a token id')))),
    wallets: v.exactOptional(v.array(address)),
    ignoreWallets: v.exactOptional(v.array(address)),
    minPrice: v.exactOptional(
      v.object({
        value: decimal,
        usd: v.boolean(),
        currency: v.exactOptional(address),
        symbol: v.exactOptional(currencySymbol),
      }),
    ),
    floorPercent: v.exactOptional(v.pipe(v.number(), v.minValue(1), v.maxValue(100))),
    traits: v.exactOptional(v.array(v.object({ name: v.string(), value: v.string() }))),
    mentionRole: v.exactOptional(v.string()),
    showRelists: v.exactOptional(v.boolean()),
    move: v.exactOptional(moveRule),
    paused: v.boolean(),
    createdBy: v.string(),
    createdAt: isoTime,
  }),
  v.check((rule) => rule.kinds.length > 0 || rule.move !== undefined, 'expected kinds, or a floor or offer-top rule'),
);

/**
 * The state file as this version writes it; what is read must match it before it is used. Rules
 * are checked one by one (see {@link validateState}), so that a file of 100,000 rules is not copied
 * whole while it is read.
 */
export const stateSchema = v.object({
  version: v.literal(3),
  chats: dictOf(chatSettings),
  rules: v.array(v.unknown()),
  nextRuleNumber: v.exactOptional(int(1, Number.MAX_SAFE_INTEGER)),
});

export type WatchRuleRecord = v.InferOutput<typeof watchRule>;
export type ValidatedState = Omit<v.InferOutput<typeof stateSchema>, 'rules'> & { rules: WatchRuleRecord[] };

/** The first problems of a value that does not match `stateSchema`, each with the path of its field. */
export type SchemaProblems = string[];

/**
 * The problems of a rule about to be stored (none: undefined), each with its field's path. Stores
 * check every rule they write, so that what they refuse to read back is never written.
 */
export function problemsOfRule(rule: unknown): SchemaProblems | undefined {
  const result = v.safeParse(watchRule, rule);
  return result.success ? undefined : result.issues.slice(0, 3).map((i) => describeIssue(i));
}

/** The problems of a chat's settings about to be stored (none: undefined), as {@link problemsOfRule}. */
export function problemsOfChat(settings: unknown): SchemaProblems | undefined {
  const result = v.safeParse(chatSettings, settings);
  return result.success ? undefined : result.issues.slice(0, 3).map((i) => describeIssue(i));
}

/**
 * A change that would store what the state schema refuses (a rule whose collection is not an
 * address): nothing was changed. Commands check what they store first, so this names a defect, not
 * a user's mistake; it keeps a bad value out of the file, which would then refuse to be read.
 */
export class InvalidChangeError extends Error {
  override name = 'InvalidChangeError';
  readonly problems: SchemaProblems;
  constructor(what: string, problems: SchemaProblems) {
    super(`${what} was not saved: ${problems.join('; ')}`);
    this.problems = problems;
  }
}

/** Throws {@link InvalidChangeError} when `rule` is not one the state schema reads back. */
export function assertValidRule(rule: WatchRule): void {
  const problems = problemsOfRule(rule);
  if (problems) throw new InvalidChangeError(`rule ${rule.id}`, problems);
}

/** Throws {@link InvalidChangeError} when `settings` are not what the state schema reads back. */
export function assertValidChat(chatKey: string, settings: ChatSettings): void {
  const problems = problemsOfChat(settings);
  if (problems) throw new InvalidChangeError(`the settings of ${chatKey}`, problems);
}

/** Rules already checked one by one as the file was read (see {@link RuleChecker}). */
export interface CheckedRules {
  rules: WatchRuleRecord[];
  /** The problems of the first rule that failed, when one did (the rules after it are not kept). */
  problems: SchemaProblems | undefined;
}

/**
 * Validates parsed JSON against the state schema: the typed state, or the problems with the path
 * of each bad field (`rules[0]: expected an object, found null`). Problems outside the rules come
 * first. With `checked`, the rules were read and checked one by one already (`data.rules` is then
 * an empty list standing for them).
 */
export function validateState(
  data: unknown,
  checked?: CheckedRules,
): { ok: true; state: ValidatedState } | { ok: false; problems: SchemaProblems } {
  const result = v.safeParse(stateSchema, data);
  if (!result.success) return { ok: false, problems: result.issues.slice(0, 3).map((i) => describeIssue(i)) };
  let rules: WatchRuleRecord[];
  if (checked) {
    if (checked.problems) return { ok: false, problems: checked.problems };
    rules = checked.rules;
  } else {
    const checker = new RuleChecker();
    rules = [];
    for (const [index, raw] of result.output.rules.entries()) {
      const rule = checker.check(raw, index);
      if (!rule.ok) return rule;
      rules.push(rule.rule);
    }
  }
  const duplicate = duplicateId(rules);
  if (duplicate) return { ok: false, problems: [duplicate] };
  return { ok: true, state: { ...result.output, rules } };
}

/**
 * The first rule whose id an earlier rule has, told as a problem. Commands find, change and remove
 * rules by id: with two rules of one id, `/watch remove` would remove one and leave the other alerting.
 */
function duplicateId(rules: readonly WatchRuleRecord[]): string | undefined {
  const seen = new Map<string, number>();
  for (const [index, rule] of rules.entries()) {
    const first = seen.get(rule.id);
    if (first !== undefined)
      return `rules[${index}].id: ${rule.id} is the id of rules[${first}] too (ids must be unique)`;
    seen.set(rule.id, index);
  }
  return undefined;
}

/**
 * Validates the `buttons` of a state file of version 2 or older (they live in their own file since
 * version 3), with the path of each bad field (`buttons.h1.createdAt: expected an ISO time`).
 */
export function validateButtons(
  data: unknown,
): { ok: true; buttons: Dict<v.InferOutput<typeof storedButtonSchema>> } | { ok: false; problems: SchemaProblems } {
  const result = v.safeParse(dictOf(storedButtonSchema), data);
  if (!result.success)
    return { ok: false, problems: result.issues.slice(0, 3).map((i) => describeIssue(i, 'buttons')) };
  return { ok: true, buttons: result.output };
}

/**
 * Checks watch rules one at a time, as they are read, so that a file of 100,000 rules is never held
 * twice. A rule that passes is the caller's own object, kept as it is (the checked copy is dropped
 * at once), with the texts that many rules repeat shared, unless `shareTexts` is false: a reader
 * that does not keep the rules together (the database's pages, read into the compact rule index)
 * would only keep every distinct text alive until the last rule is read.
 */
export class RuleChecker {
  readonly #intern: Interner | undefined;

  constructor(options: { shareTexts?: boolean } = {}) {
    this.#intern = options.shareTexts === false ? undefined : new Interner();
  }

  /** `raw` as a rule, or the problems of the rule at `index` in the file, each with its field's path. */
  check(raw: unknown, index: number): { ok: true; rule: WatchRuleRecord } | { ok: false; problems: SchemaProblems } {
    const result = v.safeParse(watchRule, raw);
    if (!result.success) {
      return { ok: false, problems: result.issues.slice(0, 3).map((i) => describeIssue(i, `rules[${index}]`)) };
    }
    const rule = withUnit(raw as WatchRuleRecord);
    return { ok: true, rule: this.#intern ? this.#intern.rule(rule) : rule };
  }
}

/**
 * A rule stored before minimums had a unit (`{value: '0.1', usd: false}`, compared with whatever
 * currency an order was in) as one in the network's native coin: what such minimums were almost
 * always meant in (the old examples: `min=1.5` next to `$500`), and known without asking the
 * platform, so both stores read it the same way at start-up. It is written back with its currency
 * the next time the rule changes, and `/watch list` shows the unit meanwhile.
 */
function withUnit(rule: WatchRuleRecord): WatchRuleRecord {
  const min = rule.minPrice;
  if (!min || min.usd || min.currency !== undefined) return rule;
  return { ...rule, minPrice: { ...min, currency: NATIVE_COIN_ADDRESS } };
}

/**
 * Shares the texts that many rules repeat (network, collection, its name, who made it, the kinds),
 * which JSON.parse reads as separate copies: a third of the memory of a large rule set.
 */
class Interner {
  readonly #texts = new Map<string, string>();
  readonly #kinds = new Map<string, WatchRuleRecord['kinds']>();

  text(value: string): string {
    const known = this.#texts.get(value);
    if (known !== undefined) return known;
    this.#texts.set(value, value);
    return value;
  }

  rule(rule: WatchRuleRecord): WatchRuleRecord {
    rule.network = this.text(rule.network);
    rule.collection = this.text(rule.collection);
    rule.collectionName = this.text(rule.collectionName);
    rule.createdBy = this.text(rule.createdBy);
    const key = rule.kinds.join(',');
    const kinds = this.#kinds.get(key);
    if (kinds) rule.kinds = kinds;
    else this.#kinds.set(key, rule.kinds);
    return rule;
  }
}

function describeIssue(issue: v.BaseIssue<unknown>, prefix = ''): string {
  const path = (
    prefix +
    (issue.path ?? []).map((item) => (typeof item.key === 'number' ? `[${item.key}]` : `.${String(item.key)}`)).join('')
  ).replace(/^\./, '');
  const found = issue.received === undefined ? '' : `, found ${issue.received}`;
  const expected = issue.expected && !/^expected/.test(issue.message) ? `expected ${issue.expected}` : issue.message;
  return `${path || 'the top level'}: ${expected}${found}`;
}

// ---- Holder roles (core/roles.ts): the records both role stores check when they read them.

const keySchema = v.pipe(v.string(), v.regex(/^[a-z]+:[^\s]{1,100}$/, 'expected platform:id'));
const bounded = (max: number) => v.pipe(v.string(), v.maxLength(max));

export const roleRuleSchema = v.object({
  id: v.pipe(v.string(), v.regex(/^h\d{1,15}$/, 'expected a rule id like h3')),
  community: keySchema,
  target: v.pipe(bounded(100), v.minLength(1)),
  targetName: bounded(200),
  network: v.pipe(bounded(60), v.minLength(1)),
  collection: address,
  collectionName: bounded(300),
  minBalance: int(1, 1_000_000_000),
  tokenIds: v.exactOptional(v.pipe(v.array(v.pipe(v.string(), v.regex(/^\d{1,78}$/))), v.maxLength(100))),
  traits: v.exactOptional(v.pipe(v.array(v.object({ name: bounded(200), value: bounded(200) })), v.maxLength(10))),
  createdBy: bounded(120),
  createdAt: isoTime,
});

export const grantFailureSchema = v.object({
  reason: v.picklist([
    'role_above_bot',
    'managed_role',
    'unknown_role',
    'missing_permission',
    'not_member',
    'unavailable',
  ]),
  at: isoTime,
  permanent: v.boolean(),
});

export const roleGrantSchema = v.object({
  community: keySchema,
  target: v.pipe(bounded(100), v.minLength(1)),
  person: keySchema,
  state: v.picklist(['granted', 'lapsed', 'revoked']),
  since: isoTime,
  lapsedAt: v.exactOptional(isoTime),
  pending: v.exactOptional(v.object({ action: v.picklist(['grant', 'revoke']), since: isoTime, token: bounded(100) })),
  failure: v.exactOptional(grantFailureSchema),
  recheck: v.exactOptional(v.boolean()),
});

export const recheckProgressSchema = v.object({
  startedAt: isoTime,
  communities: v.array(keySchema),
  after: v.exactOptional(keySchema),
  people: int(0, Number.MAX_SAFE_INTEGER),
});

// ---------------------------------------------------------------------------------------------
// Listing cards (core/deliveries.ts: ListingWatch, ListingFate), as both delivery logs read them back.

const boundedText = (max: number) => v.pipe(v.string(), v.maxLength(max));
const listingIds = v.pipe(v.array(boundedText(80)), v.maxLength(1_000));

const ListingWatchSchema = v.object({
  collection: boundedText(80),
  orderIds: listingIds,
  tokenIds: listingIds,
  seller: v.optional(boundedText(80)),
  expiresAt: v.optional(boundedText(40)),
  buyUrl: v.optional(boundedText(2_048)),
  price: v.optional(boundedText(200)),
});

const blockNumber = v.pipe(v.number(), v.integer(), v.minValue(0));

const FateBodySchema = v.variant('state', [
  v.object({
    state: v.literal('sold'),
    txnHash: boundedText(100),
    blockNumber,
    buyer: v.optional(boundedText(80)),
    orderIds: v.optional(listingIds),
    price: v.optional(boundedText(200)),
    transaction: v.optional(boundedText(2_048)),
  }),
  v.object({
    state: v.literal('cancelled'),
    txnHash: boundedText(100),
    blockNumber,
    transaction: v.optional(boundedText(2_048)),
  }),
  v.object({ state: v.literal('expired') }),
  v.object({ state: v.literal('listed'), reversed: boundedText(100) }),
]);

const FateSchema = v.intersect([
  FateBodySchema,
  v.object({ at: boundedText(40), rev: v.pipe(v.number(), v.integer(), v.minValue(1)) }),
]);

/** The listing of a stored record, or undefined when it is not one. */
export function readListing(value: unknown): ListingWatch | undefined {
  const result = v.safeParse(ListingWatchSchema, value);
  // Absent optional keys stay absent in valibot's output.
  return result.success ? (result.output as ListingWatch) : undefined;
}

/** A stored fate (with its date and revision), or undefined when it is not one. */
export function readFate(value: unknown): ListingFate | undefined {
  const result = v.safeParse(FateSchema, value);
  return result.success ? (result.output as ListingFate) : undefined;
}

/** A fate as a journal line holds it (without date and revision), or undefined when it is not one. */
export function readFateBody(value: unknown): ListingFateBody | undefined {
  const result = v.safeParse(FateBodySchema, value);
  return result.success ? (result.output as ListingFateBody) : undefined;
}
