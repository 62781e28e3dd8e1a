/**
 * Market-move alerts: a collection's floor (its cheapest listing) or best offer moved past a rule's
 * threshold (`change=10%`) or crossed a line (`below=`, `above=`), at most once per cooldown.
 *
 * ## From the stream, confirmed by a look-up
 *
 * The stream keeps each followed level current cheaply: the level's order as last looked up is
 * remembered, and only an event that can move it asks again. For the floor: a listing cheaper than
 * it (or in another currency), or a sale or cancel of its order; for the best offer: a higher offer,
 * or a sale or cancel of its order. The level an alert states is always the one a ListCollectibles
 * look-up returns after a short quiet time, never the stream's guess: a listing the stream showed
 * but that was sold or cancelled before the look-up (a stale floor) alerts nobody, and is counted
 * as refused.
 *
 * ## Exactly once
 *
 * A rule's alert is recorded in the delivery journal under an id made of the rule and the time it
 * last alerted (or was added); the rule's reference level and that time are written after. A crash
 * in between makes the next check build the same id, which the journal skips, then writes the rule:
 * the alert is neither lost nor sent twice. Only a process that ingests the rule's network checks it
 * (with a shared database, one process at a time).
 */
import type { Logger } from 'pino';
import { formatUnits } from 'viem/utils';
import type { NewDelivery } from '../core/deliveries.ts';
import type { RulesChange, RulesRepository } from '../core/ports.ts';
import type { MoveLevel, MoveRule, MoveSubject, WatchRule } from '../core/types.ts';
import type { DeliveryRecorder } from '../delivery/recording.ts';
import type { CurrencyDirectory } from '../market/currencies.ts';
import type { Links } from '../market/links.ts';
import type { PlatformClient } from '../platform/client.ts';
import type { Order } from '../platform/types.ts';
import { renderMove } from './move-render.ts';
import type { ChainEvent } from './types.ts';

/** A move rule's cooldown when the command names none. */
export const DEFAULT_MOVE_EVERY_MS = 3_600_000;
/** A move rule's threshold when the command names neither a change nor a line. */
export const DEFAULT_MOVE_CHANGE_PERCENT = 10;
/** Orders read per look-up: the level is the best of them (the platform sorts by price, but the bot checks). */
const LOOKUP_PAGE_SIZE = 20;

export interface MoveWatcherOptions {
  platform: PlatformClient;
  rules: Pick<RulesRepository, 'allRules' | 'onRulesChanged' | 'updateRule'>;
  recorder: DeliveryRecorder<string>;
  currencies: CurrencyDirectory;
  links?: Links | undefined;
  logger: Logger;
  /** Whether this process checks a network's rules (the one that ingests it). Default: every network. */
  ingests?: ((network: string) => boolean) | undefined;
  /** Events of a collection are gathered this long before its level is looked up. Default 1 s. */
  checkDelayMs?: number | undefined;
  now?: () => number;
}

/** What /status and the metrics read of move alerts. */
export interface MoveCounters {
  /** Look-ups made. */
  checks: number;
  /** Alerts recorded. */
  alerts: number;
  /** Moves the stream suggested that the look-up did not confirm (a stale floor or offer). */
  refused: number;
}

/** A level's order as last looked up: what the stream compares new orders with. */
interface Known {
  orderId: string;
  currency: string;
  /** Price per token in the currency's units. */
  units: bigint;
}

/** One followed level: a collection's floor or best offer on a network. */
interface Followed {
  network: string;
  collection: string;
  subject: MoveSubject;
  rules: Map<string, WatchRule>;
  known?: Known | undefined;
  timer?: NodeJS.Timeout | undefined;
  running?: Promise<void> | undefined;
  /** Events came while a check ran: check again after it. */
  again?: boolean;
  /** Order ids the stream offered as the new level since the last check (to tell a refused move). */
  suggested: Set<string>;
  /** The cooldown's end re-checks (a level that moved during it and then stayed still). */
  cooldownTimer?: NodeJS.Timeout | undefined;
}

const keyOf = (network: string, collection: string, subject: MoveSubject) =>
  `${network}:${collection.toLowerCase()}:${subject}`;

/** Follows the move rules, checks their levels as the stream suggests, records their alerts. See the module comment. */
export class MoveWatcher {
  readonly #o: MoveWatcherOptions;
  readonly #now: () => number;
  readonly #followed = new Map<string, Followed>();
  readonly #ruleKeys = new Map<string, string>();
  readonly counters: MoveCounters = { checks: 0, alerts: 0, refused: 0 };
  #stopped = false;
  #loading: Promise<void> | undefined;

  constructor(options: MoveWatcherOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
  }

  /** Reads the move rules, follows their changes, and checks each level once. */
  start(): Promise<void> {
    this.#o.rules.onRulesChanged((change) => this.#changed(change));
    this.#loading = this.#load();
    return this.#loading;
  }

  /** Whether some move rule follows a collection of this network. */
  follows(network: string, collection: string): boolean {
    const c = collection.toLowerCase();
    for (const f of this.#followed.values()) if (f.network === network && f.collection === c) return true;
    return false;
  }

  /** An event the streams showed: a check of its collection's levels when it may have moved them. */
  event(event: ChainEvent): void {
    if (this.#stopped || this.#followed.size === 0) return;
    for (const subject of ['floor', 'offer-top'] as const) {
      const followed = this.#followed.get(keyOf(event.network, event.collection, subject));
      if (!followed) continue;
      const suggested = movesLevel(followed, event);
      if (suggested === false) continue;
      for (const id of suggested) followed.suggested.add(id);
      this.#schedule(followed);
    }
  }

  /** Resolves once no check is waiting or running (tests). */
  async settled(): Promise<void> {
    await this.#loading;
    for (;;) {
      const busy = [...this.#followed.values()].filter((f) => f.timer || f.running);
      if (busy.length === 0) return;
      await Promise.all(
        busy.map((f) => f.running ?? new Promise((resolve) => setTimeout(resolve, this.#o.checkDelayMs ?? 1_000))),
      );
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    for (const f of this.#followed.values()) {
      clearTimeout(f.timer);
      clearTimeout(f.cooldownTimer);
      f.timer = undefined;
    }
    await Promise.all([...this.#followed.values()].map((f) => f.running));
    await this.#o.recorder.stop();
    this.#o.recorder.abandon();
  }

  async #load(): Promise<void> {
    try {
      for await (const page of this.#o.rules.allRules()) for (const rule of page) this.#put(rule.id, rule, true);
    } catch (error) {
      this.#o.logger.error({ err: error }, 'could not read the floor and best-offer rules');
    }
  }

  #changed(change: RulesChange): void {
    if (change.all) {
      for (const id of [...this.#ruleKeys.keys()]) this.#put(id, undefined, false);
      this.#loading = this.#load();
      return;
    }
    for (const { id, rule } of change.rules) this.#put(id, rule, !this.#ruleKeys.has(id));
  }

  /** Adds, replaces or (rule undefined, or no move) drops a rule; `check`: look its level up soon. */
  #put(id: string, rule: WatchRule | undefined, check: boolean): void {
    const oldKey = this.#ruleKeys.get(id);
    if (oldKey) {
      const old = this.#followed.get(oldKey);
      old?.rules.delete(id);
      this.#ruleKeys.delete(id);
      if (old && old.rules.size === 0) {
        clearTimeout(old.timer);
        clearTimeout(old.cooldownTimer);
        this.#followed.delete(oldKey);
      }
    }
    if (!rule?.move || rule.paused) return;
    const key = keyOf(rule.network, rule.collection, rule.move.subject);
    let followed = this.#followed.get(key);
    if (!followed) {
      followed = {
        network: rule.network,
        collection: rule.collection.toLowerCase(),
        subject: rule.move.subject,
        rules: new Map(),
        suggested: new Set(),
      };
      this.#followed.set(key, followed);
    }
    followed.rules.set(id, rule);
    this.#ruleKeys.set(id, key);
    if (check) this.#schedule(followed);
  }

  #schedule(followed: Followed, delayMs = this.#o.checkDelayMs ?? 1_000): void {
    if (this.#stopped || !(this.#o.ingests?.(followed.network) ?? true)) return;
    if (followed.running) {
      followed.again = true;
      return;
    }
    if (followed.timer) return;
    followed.timer = setTimeout(() => {
      followed.timer = undefined;
      followed.running = this.#check(followed).finally(() => {
        followed.running = undefined;
        if (followed.again) {
          followed.again = false;
          this.#schedule(followed);
        }
      });
    }, delayMs);
    followed.timer.unref();
  }

  /** Looks the level up, then alerts the rules it moved past their thresholds. Never rejects. */
  async #check(followed: Followed): Promise<void> {
    const suggested = followed.suggested;
    followed.suggested = new Set();
    let found: { level: MoveLevel; order: Order } | undefined;
    try {
      this.counters.checks++;
      found = await lookUpLevel(this.#o.platform, followed, new Date(this.#now()).toISOString());
    } catch (error) {
      this.#o.logger.warn(
        { network: followed.network, collection: followed.collection, subject: followed.subject, err: error },
        'could not look up a level for move alerts',
      );
      return;
    }
    followed.known = found && {
      orderId: found.order.orderId,
      currency: found.level.currency,
      units: BigInt(found.order.priceAmount),
    };
    const level = found?.level;
    const stale = [...suggested].filter((id) => id !== level?.orderId);
    if (stale.length > 0 && stale.length === suggested.size) {
      this.counters.refused++;
      this.#o.logger.debug(
        { network: followed.network, collection: followed.collection, subject: followed.subject, orders: stale },
        'the stream suggested a move the look-up did not confirm',
      );
    }
    if (!found || !level) return;
    const now = this.#now();
    for (const rule of [...followed.rules.values()]) {
      const move = rule.move;
      if (!move || rule.paused) continue;
      if (!move.reference) {
        // No level when the rule was added: this is its first, to measure moves from.
        await this.#update(rule, { ...move, reference: level });
        continue;
      }
      const why = moveReason(move, level);
      if (!why) continue;
      const since = move.lastAlertAt ? now - Date.parse(move.lastAlertAt) : Number.POSITIVE_INFINITY;
      if (since < move.everyMs) {
        clearTimeout(followed.cooldownTimer);
        followed.cooldownTimer = setTimeout(() => this.#schedule(followed, 0), move.everyMs - since + 50);
        followed.cooldownTimer.unref();
        continue;
      }
      await this.#alert(rule, move, level, found.order, why);
    }
  }

  async #alert(rule: WatchRule, move: MoveRule, level: MoveLevel, order: Order, why: string): Promise<void> {
    const reference = move.reference;
    if (!reference) return;
    const symbols = await Promise.all([
      this.#o.currencies.symbol(rule.network, reference.currency).catch(() => '?'),
      this.#o.currencies.symbol(rule.network, level.currency).catch(() => '?'),
    ]);
    const buy =
      move.subject === 'floor' && level.tokenId !== undefined
        ? this.#o.links?.order(rule.network, rule.collection, level.tokenId, order)
        : undefined;
    const token =
      level.tokenId === undefined ? undefined : this.#o.links?.token(rule.network, rule.collection, level.tokenId);
    const reply = renderMove({
      rule,
      subject: move.subject,
      from: { ...reference, symbol: symbols[0] },
      to: { ...level, symbol: symbols[1] },
      why,
      ...(buy ? { buy } : {}),
      ...(token ? { token } : {}),
    });
    const since = move.lastAlertAt ?? rule.createdAt;
    const delivery: NewDelivery = {
      eventId: `move:${rule.id}:${since}`,
      destination: rule.destination,
      network: rule.network,
      txnHash: `move:${rule.id}:${since}`,
      blockNumber: 0,
      ...(level.usd === undefined ? {} : { usd: level.usd }),
      payload: reply,
    };
    await this.#o.recorder.record([{ subject: rule.id, deliveries: [delivery] }]);
    this.counters.alerts++;
    await this.#update(rule, { ...move, reference: level, lastAlertAt: new Date(this.#now()).toISOString() });
  }

  async #update(rule: WatchRule, move: MoveRule): Promise<void> {
    try {
      await this.#o.rules.updateRule(rule.id, (current) =>
        current.move?.subject === move.subject ? { ...current, move } : current,
      );
    } catch (error) {
      this.#o.logger.error({ rule: rule.id, err: error }, 'could not save the level a move rule alerted');
    }
  }
}

/**
 * Whether an event may move a followed level: false when not, else the order ids it offers as the
 * new level (none when it took the level's order away: the next level is unknown until looked up).
 */
function movesLevel(followed: Followed, event: ChainEvent): string[] | false {
  const known = followed.known;
  const side = followed.subject === 'floor' ? 'listing' : 'offer';
  if (event.kind === side) {
    if (!known || !event.price) return event.orderIds;
    if (event.price.currency.toLowerCase() !== known.currency) return event.orderIds;
    let units: bigint;
    try {
      units = BigInt(event.price.perToken);
    } catch {
      return event.orderIds;
    }
    const better = side === 'listing' ? units < known.units : units > known.units;
    return better ? event.orderIds : false;
  }
  if (event.kind === 'sale' || event.kind === 'cancel') {
    if (!known) return [];
    return event.orderIds.includes(known.orderId) ? [] : false;
  }
  return false;
}

/** The floor (cheapest listing) or best offer of a collection now, with its order; undefined when it has none. */
async function lookUpLevel(
  platform: PlatformClient,
  followed: Pick<Followed, 'network' | 'collection' | 'subject'>,
  at: string,
): Promise<{ level: MoveLevel; order: Order } | undefined> {
  const floor = followed.subject === 'floor';
  const { collectibles } = await platform.marketplace.listCollectibles({
    network: followed.network,
    side: floor ? 'listing' : 'offer',
    contractAddress: followed.collection,
    filter: { includeEmpty: false },
    page: { pageSize: LOOKUP_PAGE_SIZE },
  });
  let best: Order | undefined;
  for (const item of collectibles) {
    const order = item.order ?? (floor ? item.listing : item.offer);
    if (!order || !/^\d+$/.test(order.priceAmount) || order.priceAmount === '0') continue;
    if (!best || (floor ? cheaper(order, best) : cheaper(best, order))) best = order;
  }
  return best && { level: levelOf(best, at), order: best };
}

/** Whether `a` is priced under `b`: in US dollars when both are priced, else in units of one currency. */
function cheaper(a: Order, b: Order): boolean {
  if (a.priceUSD > 0 && b.priceUSD > 0) return a.priceUSD < b.priceUSD;
  if (a.priceCurrencyAddress.toLowerCase() === b.priceCurrencyAddress.toLowerCase())
    return BigInt(a.priceAmount) < BigInt(b.priceAmount);
  return false;
}

/** An order as a level: its price per token, from its units and decimals (not the platform's formatted text). */
export function levelOf(order: Order, at: string): MoveLevel {
  return {
    amount: formatUnits(BigInt(order.priceAmount), order.priceDecimals),
    currency: order.priceCurrencyAddress.toLowerCase(),
    ...(order.priceUSD > 0 ? { usd: order.priceUSD } : {}),
    orderId: order.orderId,
    ...(order.tokenId === undefined ? {} : { tokenId: order.tokenId }),
    at,
  };
}

/** A level's value against a line: in US dollars for a `$` line, else in its own currency. Undefined when unknown. */
function valueFor(level: MoveLevel, usd: boolean): number | undefined {
  if (usd) return level.usd;
  return Number(level.amount);
}

/** The same level in the same unit as another, for a change: units when they share a currency, else dollars. */
function changeOf(from: MoveLevel, to: MoveLevel): number | undefined {
  if (from.currency === to.currency) {
    const a = Number(from.amount);
    const b = Number(to.amount);
    return a > 0 ? ((b - a) / a) * 100 : undefined;
  }
  if (from.usd && to.usd) return ((to.usd - from.usd) / from.usd) * 100;
  return undefined;
}

/**
 * Why a level moved past a rule's thresholds since its reference (`fell 12.5%`, `fell below 100`),
 * or undefined when it did not. A line counts when crossed: from at or beyond it to past it.
 */
export function moveReason(move: MoveRule, level: MoveLevel): string | undefined {
  const reference = move.reference;
  if (!reference) return undefined;
  const reasons: string[] = [];
  if (move.below) {
    const line = Number(move.below.value);
    const now = valueFor(level, move.below.usd);
    const before =
      move.below.usd || reference.currency === level.currency ? valueFor(reference, move.below.usd) : undefined;
    if (now !== undefined && now < line && (before === undefined || before >= line))
      reasons.push(`fell below ${move.below.usd ? `$${move.below.value}` : move.below.value}`);
  }
  if (move.above) {
    const line = Number(move.above.value);
    const now = valueFor(level, move.above.usd);
    const before =
      move.above.usd || reference.currency === level.currency ? valueFor(reference, move.above.usd) : undefined;
    if (now !== undefined && now > line && (before === undefined || before <= line))
      reasons.push(`rose above ${move.above.usd ? `$${move.above.value}` : move.above.value}`);
  }
  if (move.changePercent !== undefined) {
    const change = changeOf(reference, level);
    if (change !== undefined && Math.abs(change) >= move.changePercent)
      reasons.push(`${change < 0 ? 'fell' : 'rose'} ${formatPercent(Math.abs(change))}`);
  }
  return reasons.length > 0 ? reasons.join(', ') : undefined;
}

/** `12.5%`, `3%`: one decimal under 10 %, none above. */
export function formatPercent(value: number): string {
  return `${value < 10 ? Number(value.toFixed(1)) : Math.round(value)}%`;
}

/**
 * The level of a collection now, for a rule being added (its reference). Undefined when it has none
 * or the look-up fails (the first level the watcher sees becomes the reference).
 */
export async function currentLevel(
  platform: PlatformClient,
  network: string,
  collection: string,
  subject: MoveSubject,
  at: Date,
): Promise<{ level: MoveLevel; order: Order } | undefined> {
  return lookUpLevel(platform, { network, collection, subject }, at.toISOString()).catch(() => undefined);
}
