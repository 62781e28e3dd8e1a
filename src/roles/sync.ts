/**
 * Holder roles kept in sync: the role rules, the verified wallets and what they hold decide who
 * gets a Discord role or stays in a gated Telegram group, and the chat platform is told of every
 * change, each made once (claimed in the store before the platform is called, finished after).
 *
 * A person is evaluated again when one of their wallets changes (verified, moved, removed), when a
 * token of a rule's collection moves to or from one of their wallets (transfer, sale, mint, burn:
 * the alert path hands every such event to {@link RoleSync.tokensMoved}), and by the full re-check,
 * which runs at start and on a schedule, a batch of people at a time (one balance read for the
 * batch), and resumes after the last person it finished when the process restarts. On Telegram a
 * member who stops holding is told, and removed once the grace period has passed unless they hold
 * again; administrators are never removed. With a shared database every process evaluates what it
 * hears of; the full re-check and the sweeps run where {@link RoleSyncOptions.leads} says.
 *
 * Nothing personal is logged: no address, no person; communities, targets and outcomes only.
 */
import type { Logger } from 'pino';
import {
  type ChangeResult,
  GROUP_MEMBERSHIP,
  type GrantCount,
  type GrantKey,
  type HolderRolesPort,
  type JoinOutcome,
  type JoinRequest,
  MAX_ROLE_RULES,
  MembershipError,
  type MembershipNotice,
  type MembershipSink,
  platformOf,
  type RecheckProgress,
  type RoleGrant,
  type RolePlatform,
  type RoleRule,
  type RoleStore,
  type TargetCheck,
} from '../core/roles.ts';
import type { WalletChange, WalletRegistry } from '../core/wallets.ts';
import type { HoldingsReader } from './holdings.ts';
import { earnedTargets, requirementOf, requirementText, targetsOf } from './rules.ts';

const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000';

/** Default grace period of a Telegram gate: a day. */
export const DEFAULT_GRACE_MS = 24 * 60 * 60 * 1000;
/** Default time between two full re-checks: six hours. */
export const DEFAULT_RECHECK_EVERY_MS = 6 * 60 * 60 * 1000;

export interface RoleSyncOptions {
  wallets: WalletRegistry;
  store: RoleStore;
  holdings: HoldingsReader;
  logger: Logger;
  /** Telegram: a member who stopped holding is removed after this long (default a day). */
  graceMs?: number;
  /** A full re-check starts this long after the last one began (0: at start only). */
  recheckEveryMs?: number;
  /** People per batch of the full re-check (default 200): one balance read per batch. */
  batchSize?: number;
  /** Evaluations and platform changes at once (default 8). */
  concurrency?: number;
  /** A claimed change not finished after this long was its process's last (default a minute). */
  staleMs?: number;
  /**
   * Whether this process runs the full re-check and the sweeps (grace periods, changes left
   * unfinished). Default: yes (one process on files). With a shared database, the roles lease's holder.
   */
  leads?: () => boolean;
  now?: () => Date;
}

/** Tokens of a collection moved: the wallets concerned are evaluated again. */
export interface TokensMoved {
  network: string;
  /** Lower-case contract. */
  collection: string;
  /** Every wallet involved, lower-case. */
  accounts: readonly string[];
}

interface Evaluation {
  community: string;
  person: string;
}

/** Holdings worked out for a batch of the re-check, so that its people need no read of their own. */
interface Known {
  wallets: string[];
  counts: ReadonlyMap<string, readonly bigint[]>;
  /** A full re-check retries changes that failed for good (a role above the bot's, since moved). */
  retryFailed: boolean;
}

const keyOf = (community: string, person: string) => `${community}\n${person}`;

/** Holder roles (see the module comment). */
export class RoleSync implements HolderRolesPort {
  readonly graceMs: number;
  readonly #options: RoleSyncOptions;
  readonly #store: RoleStore;
  readonly #wallets: WalletRegistry;
  readonly #logger: Logger;
  readonly #now: () => Date;
  readonly #staleMs: number;
  readonly #batchSize: number;
  readonly #concurrency: number;
  readonly #sinks = new Map<RolePlatform, MembershipSink>();
  /** Rules by community, as the store has them. */
  #rules = new Map<string, RoleRule[]>();
  /** `network\ncollection` of every rule, for the events. */
  #collections = new Set<string>();
  readonly #collectionListeners: Array<() => void> = [];
  readonly #waiting = new Map<string, Evaluation>();
  readonly #running = new Map<string, Promise<void>>();
  readonly #again = new Set<string>();
  readonly #idle: Array<() => void> = [];
  readonly #timers: NodeJS.Timeout[] = [];
  readonly #background = new Set<Promise<unknown>>();
  #recheck: Promise<void> | undefined;
  #lastRecheck = 0;
  #stopped = false;
  /** Evaluations made, for benchmarks and metrics. */
  readonly counters = { evaluations: 0, granted: 0, revoked: 0, failed: 0, recheckPeople: 0 };

  constructor(options: RoleSyncOptions) {
    this.#options = options;
    this.#store = options.store;
    this.#wallets = options.wallets;
    this.#logger = options.logger;
    this.#now = options.now ?? (() => new Date());
    this.graceMs = options.graceMs ?? DEFAULT_GRACE_MS;
    this.#staleMs = options.staleMs ?? 60_000;
    this.#batchSize = options.batchSize ?? 200;
    this.#concurrency = options.concurrency ?? 8;
  }

  /** Platform calls made to read holdings (balance pages and metadata), for benchmarks and metrics. */
  get platformCalls(): number {
    return this.#options.holdings.calls;
  }

  /** A chat platform's adapter, once it runs: its communities are kept in sync from then on. */
  useSink(sink: MembershipSink): void {
    this.#sinks.set(sink.platform, sink);
  }

  /**
   * Reads the rules and follows their changes and the wallets'. Then, in the background and where
   * this process leads, the full re-check (resumed when one was under way) and the sweeps.
   */
  async start(): Promise<void> {
    this.#store.onRulesChanged((community) => this.#track(this.#reload(community), 'could not read role rules'));
    this.#wallets.onWalletsChanged((change) => this.walletChanged(change));
    this.#setRules(await this.#store.allRules());
    const recheckEvery = this.#options.recheckEveryMs ?? DEFAULT_RECHECK_EVERY_MS;
    const sweepEvery = Math.min(60_000, Math.max(1_000, Math.floor(this.graceMs / 4)));
    this.#every(sweepEvery, () => this.#sweepLapsed());
    this.#every(Math.max(1_000, Math.floor(this.#staleMs / 2)), () => this.#sweepStale());
    this.#every(Math.min(recheckEvery || 60_000, 60_000), () => {
      if (recheckEvery > 0 && this.#now().getTime() - this.#lastRecheck >= recheckEvery) this.recheckAll();
    });
    this.recheckAll();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    for (const timer of this.#timers) clearInterval(timer);
    this.#waiting.clear();
    while (this.#running.size > 0 || this.#background.size > 0) {
      await Promise.allSettled([...this.#running.values(), ...this.#background]);
    }
    await this.#recheck;
  }

  /** Resolves when no evaluation is waiting or running (tests, benchmarks). */
  settled(): Promise<void> {
    if (this.#waiting.size === 0 && this.#running.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  // ---- what the stream plan needs

  /** The collections of role rules on a network (lower-case): the streams follow them too. */
  collections(network: string): string[] {
    const out: string[] = [];
    for (const rules of this.#rules.values()) {
      for (const rule of rules)
        if (rule.network === network && !out.includes(rule.collection)) out.push(rule.collection);
    }
    return out;
  }

  /** The networks of role rules. */
  networks(): string[] {
    return [...new Set([...this.#rules.values()].flat().map((rule) => rule.network))];
  }

  /** Whether a rule follows this collection. */
  watches(network: string, collection: string): boolean {
    return this.#collections.has(`${network}\n${collection}`);
  }

  /** Called when the collections of role rules change (the streams are planned again). */
  onCollectionsChanged(listener: () => void): void {
    this.#collectionListeners.push(listener);
  }

  // ---- what makes people be evaluated again

  /** Tokens moved on chain: the people whose wallets sent or received them are evaluated again. */
  tokensMoved(moved: TokensMoved): void {
    if (this.#stopped || !this.watches(moved.network, moved.collection)) return;
    for (const account of new Set(moved.accounts)) {
      if (account === ZERO_ADDRESS) continue;
      this.#track(
        this.#wallets.byAddress(account).then((wallets) => {
          for (const wallet of wallets) {
            const rules = this.#rules.get(wallet.community) ?? [];
            const concerned = rules.some((r) => r.network === moved.network && r.collection === moved.collection);
            if (concerned) this.#request(wallet.community, wallet.person);
          }
        }),
        'could not look up the wallets of a transfer',
      );
    }
  }

  /** A wallet was verified, moved or removed: its person (and the one it moved from) are evaluated again. */
  walletChanged(change: WalletChange): void {
    if (this.#stopped || !this.#rules.has(change.wallet.community)) return;
    this.#request(change.wallet.community, change.wallet.person);
    if (change.type === 'linked' && change.previousPerson !== undefined) {
      this.#request(change.wallet.community, change.previousPerson);
    }
  }

  /** A Telegram join request: approved for a holder; otherwise the person is told how to verify, then declined. */
  async joinRequest(request: JoinRequest): Promise<JoinOutcome> {
    const rules = this.#rules.get(request.community) ?? [];
    const sink = this.#sinks.get('telegram');
    if (rules.length === 0 || !sink) return 'not_gated';
    const key: GrantKey = { community: request.community, target: GROUP_MEMBERSHIP, person: request.person };
    try {
      const wallets = (await this.#wallets.walletsOf(request.community, request.person)).map((w) => w.address);
      const counts = await this.#options.holdings.count(rules.map(requirementOf), wallets);
      if (earnedTargets(rules, wallets, counts).has(GROUP_MEMBERSHIP)) {
        const result = await this.#change(sink, key, 'grant', 'holds what the gate asks for', { again: true });
        return result === 'busy' || result === 'settled' || result.ok ? 'approved' : 'failed';
      }
      await sink.tell?.(request.person, this.#notice('declined', request.community), request.userChatId);
      await sink.decline?.(request);
      this.#logger.info({ community: request.community }, 'join request declined: no holding');
      return 'declined';
    } catch (error) {
      this.#logger.warn({ community: request.community, err: error }, 'join request not answered');
      return 'failed';
    }
  }

  // ---- the port of /roles and /gate

  async addRule(rule: Omit<RoleRule, 'id'>): Promise<RoleRule | undefined> {
    const added = await this.#store.addRule(rule, MAX_ROLE_RULES);
    if (added) {
      await this.#reload(added.community);
      this.recheck(added.community);
    }
    return added;
  }

  rulesOf(community: string): Promise<RoleRule[]> {
    return this.#store.rulesOf(community);
  }

  async removeRule(community: string, id: string): Promise<RoleRule | undefined> {
    const removed = await this.#store.removeRule(community, id);
    if (!removed) return undefined;
    await this.#reload(community);
    const left = this.#rules.get(community) ?? [];
    // With no rule left for its target, the bot lets go of it: nobody loses it for that.
    if (!left.some((rule) => rule.target === removed.target)) await this.#store.forgetTarget(community, removed.target);
    else this.recheck(community);
    return removed;
  }

  async checkTarget(community: string, target: string): Promise<TargetCheck | undefined> {
    const platform = platformOf(community);
    const sink = platform ? this.#sinks.get(platform) : undefined;
    return sink?.checkTarget?.(community, target);
  }

  async inviteLink(community: string): Promise<string | undefined> {
    const sink = this.#sinks.get('telegram');
    return sink?.inviteLink?.(community);
  }

  grantCounts(community: string): Promise<GrantCount[]> {
    return this.#store.grantCounts(community);
  }

  /** Evaluates a community's people again now, in the background (not resumed after a restart). */
  recheck(community: string): void {
    const progress: RecheckProgress = { startedAt: this.#now().toISOString(), communities: [community], people: 0 };
    this.#track(this.#run(progress, false), 'role re-check failed');
  }

  /** Starts the full re-check (or resumes the one under way) where this process leads, unless one runs. */
  recheckAll(): void {
    if (this.#stopped || this.#recheck || !(this.#options.leads?.() ?? true)) return;
    this.#lastRecheck = this.#now().getTime();
    this.#recheck = (async () => {
      const saved = await this.#store.recheckProgress();
      if (saved) {
        this.#logger.info({ community: saved.communities[0], people: saved.people }, 'resuming the role re-check');
      }
      const progress = saved ?? {
        startedAt: this.#now().toISOString(),
        communities: [...this.#rules.keys()].sort(),
        people: 0,
      };
      await this.#run(progress, true);
    })()
      .catch((error: unknown) => this.#logger.error({ err: error }, 'role re-check failed'))
      .finally(() => {
        this.#recheck = undefined;
      });
  }

  /**
   * Runs a re-check from `progress`, a batch at a time: the people after `after` in key order, those
   * with wallets and those the bot gave something; saved after each batch when `persist`.
   */
  async #run(progress: RecheckProgress, persist: boolean): Promise<void> {
    const started = performance.now();
    while (progress.communities.length > 0) {
      if (this.#stopped || (persist && !(this.#options.leads?.() ?? true))) return;
      const community = progress.communities[0] as string;
      const rules = this.#rules.get(community) ?? [];
      const platform = platformOf(community);
      const sink = platform ? this.#sinks.get(platform) : undefined;
      const batch = rules.length > 0 && sink ? await this.#batch(community, progress.after) : [];
      if (batch.length === 0) {
        progress.communities.shift();
        delete progress.after;
      } else {
        const addresses = batch.flatMap((entry) => entry.wallets);
        const counts = await this.#options.holdings.count(rules.map(requirementOf), addresses);
        await this.#pool(batch, (entry) =>
          this.#evaluate(community, entry.person, { wallets: entry.wallets, counts, retryFailed: true }),
        );
        progress.after = (batch[batch.length - 1] as { person: string }).person;
        progress.people += batch.length;
        this.counters.recheckPeople += batch.length;
      }
      if (persist) await this.#store.saveRecheckProgress(progress.communities.length > 0 ? progress : undefined);
    }
    this.#logger.info({ people: progress.people, ms: Math.round(performance.now() - started) }, 'role re-check done');
  }

  /** The next people of a community after `after`: a merge of those with wallets and those with grants. */
  async #batch(community: string, after: string | undefined): Promise<Array<{ person: string; wallets: string[] }>> {
    const size = this.#batchSize;
    const [withWallets, granted] = await Promise.all([
      this.#wallets.peopleIn(community, after, size),
      this.#store.grantedPeople(community, after, size),
    ]);
    // Only up to where both lists surely reach: a full page may stop before people of the other.
    const lastOf = (list: readonly string[]) => (list.length === size ? list[list.length - 1] : undefined);
    const bounds = [lastOf(withWallets.map((p) => p.person)), lastOf(granted)].filter((b) => b !== undefined);
    const bound = bounds.length > 0 ? bounds.reduce((a, b) => (b < a ? b : a)) : undefined;
    const wallets = new Map(withWallets.map((p) => [p.person, p.wallets.map((w) => w.address)]));
    const people = [...new Set([...wallets.keys(), ...granted])]
      .filter((person) => bound === undefined || person <= bound)
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return people.map((person) => ({ person, wallets: wallets.get(person) ?? [] }));
  }

  // ---- evaluation

  #request(community: string, person: string): void {
    if (this.#stopped) return;
    const key = keyOf(community, person);
    if (this.#running.has(key)) this.#again.add(key);
    else this.#waiting.set(key, { community, person });
    this.#pump();
  }

  #pump(): void {
    while (this.#running.size < this.#concurrency && this.#waiting.size > 0) {
      const [key, evaluation] = this.#waiting.entries().next().value as [string, Evaluation];
      this.#waiting.delete(key);
      const run = this.#evaluate(evaluation.community, evaluation.person)
        .catch((error: unknown) => {
          this.#logger.warn({ community: evaluation.community, err: error }, 'holder role evaluation failed');
        })
        .finally(() => {
          this.#running.delete(key);
          if (this.#again.delete(key)) this.#waiting.set(key, evaluation);
          this.#pump();
        });
      this.#running.set(key, run);
    }
    if (this.#waiting.size === 0 && this.#running.size === 0) for (const resolve of this.#idle.splice(0)) resolve();
  }

  /** Works out what a person earns and makes the changes that follow. */
  async #evaluate(community: string, person: string, known?: Known): Promise<void> {
    const rules = this.#rules.get(community) ?? [];
    const platform = platformOf(community);
    const sink = platform ? this.#sinks.get(platform) : undefined;
    if (rules.length === 0 || !sink) return;
    this.counters.evaluations++;
    const wallets = known?.wallets ?? (await this.#wallets.walletsOf(community, person)).map((w) => w.address);
    const counts = known?.counts ?? (await this.#options.holdings.count(rules.map(requirementOf), wallets));
    const earned = earnedTargets(rules, wallets, counts);
    const grants = await this.#store.grantsOf(community, person);
    for (const target of targetsOf(rules)) {
      const key: GrantKey = { community, target, person };
      const grant = grants.find((g) => g.target === target);
      if (grant?.failure?.permanent && !known?.retryFailed && grant.pending === undefined) continue;
      if (sink.platform === 'discord') await this.#settleRole(sink, key, earned.has(target), grant);
      else await this.#settleMember(sink, key, earned.has(target), grant);
    }
  }

  /** Discord: the role follows the holdings. */
  async #settleRole(sink: MembershipSink, key: GrantKey, earned: boolean, grant: RoleGrant | undefined) {
    const state = grant?.state ?? 'revoked';
    if (earned && state !== 'granted') await this.#change(sink, key, 'grant', 'holds what the rule asks for');
    if (!earned && state !== 'revoked')
      await this.#change(sink, key, 'revoke', 'no longer holds what the rule asks for');
  }

  /**
   * Telegram: a member who stops holding is told and removed once the grace period has passed (an
   * administrator never); one who holds again in time stays. People join through join requests only.
   */
  async #settleMember(sink: MembershipSink, key: GrantKey, earned: boolean, grant: RoleGrant | undefined) {
    const now = this.#now();
    if (earned) {
      if (grant?.state === 'lapsed' && (await this.#store.restore(key, now))) {
        await this.#tell(sink, key, this.#notice('restored', key.community));
      }
      return;
    }
    if (grant?.state === 'granted') {
      if (await sink.isExempt?.(key.community, key.person)) return;
      if (await this.#store.lapse(key, now)) {
        const removeAt = new Date(now.getTime() + this.graceMs).toISOString();
        await this.#tell(sink, key, { ...this.#notice('lapsed', key.community), removeAt });
      }
      return;
    }
    if (grant?.state === 'lapsed' && Date.parse(grant.lapsedAt ?? grant.since) + this.graceMs <= now.getTime()) {
      const result = await this.#change(sink, key, 'revoke', 'no longer holds what the gate asks for');
      if (result !== 'busy' && result !== 'settled' && result.ok && !('state' in result)) {
        await this.#tell(sink, key, this.#notice('removed', key.community));
      }
    }
  }

  /** Claims a change, makes it on the platform, records how it went. */
  async #change(
    sink: MembershipSink,
    key: GrantKey,
    action: 'grant' | 'revoke',
    reason: string,
    options: { again?: boolean } = {},
  ): Promise<ChangeResult | 'busy' | 'settled'> {
    const claim = await this.#store.claim(key, action, this.#now(), this.#staleMs, options);
    if (claim.kind !== 'claimed') return claim.kind;
    let result: ChangeResult;
    try {
      if (action === 'grant') {
        await sink.grant(key, reason);
        result = { ok: true };
        this.counters.granted++;
      } else {
        const done = await sink.revoke(key, reason);
        result = done === 'exempt' ? { ok: true, state: 'granted' } : { ok: true };
        if (done === 'done') this.counters.revoked++;
      }
    } catch (error) {
      this.counters.failed++;
      result =
        error instanceof MembershipError
          ? { ok: false, reason: error.reason, permanent: error.permanent }
          : { ok: false, reason: 'unavailable', permanent: false };
      this.#logger.warn(
        { community: key.community, target: key.target, action, reason: result.reason, err: error },
        'holder role change failed',
      );
    }
    const { recheck } = await this.#store.finish(key, claim.token, result, this.#now());
    if (result.ok) {
      this.#logger.info({ community: key.community, target: key.target, action }, 'holder role changed');
    }
    if (recheck) this.#request(key.community, key.person);
    return result;
  }

  async #tell(sink: MembershipSink, key: GrantKey, notice: MembershipNotice): Promise<void> {
    const told = await sink.tell?.(key.person, notice).catch(() => false);
    if (told === false) this.#logger.info({ community: key.community, kind: notice.kind }, 'member could not be told');
  }

  #notice(kind: MembershipNotice['kind'], community: string): MembershipNotice {
    return { kind, community, requirements: (this.#rules.get(community) ?? []).map(requirementText) };
  }

  // ---- sweeps

  async #sweepLapsed(): Promise<void> {
    if (!(this.#options.leads?.() ?? true)) return;
    const due = await this.#store.lapsedBefore(new Date(this.#now().getTime() - this.graceMs), 500);
    for (const grant of due) this.#request(grant.community, grant.person);
  }

  async #sweepStale(): Promise<void> {
    if (!(this.#options.leads?.() ?? true)) return;
    const stale = await this.#store.stalePending(new Date(this.#now().getTime() - this.#staleMs), 500);
    for (const grant of stale) this.#request(grant.community, grant.person);
  }

  // ---- rules

  async #reload(community: string): Promise<void> {
    const rules = await this.#store.rulesOf(community);
    const next = new Map(this.#rules);
    if (rules.length > 0) next.set(community, rules);
    else next.delete(community);
    this.#setRules([...next.values()].flat());
  }

  #setRules(rules: readonly RoleRule[]): void {
    const byCommunity = new Map<string, RoleRule[]>();
    for (const rule of rules) byCommunity.set(rule.community, [...(byCommunity.get(rule.community) ?? []), rule]);
    this.#rules = byCommunity;
    const collections = new Set(rules.map((rule) => `${rule.network}\n${rule.collection}`));
    const changed =
      collections.size !== this.#collections.size || [...collections].some((c) => !this.#collections.has(c));
    this.#collections = collections;
    if (changed) for (const listener of this.#collectionListeners) listener();
  }

  // ---- helpers

  /** Runs `work` for each item, at most {@link RoleSyncOptions.concurrency} at once. */
  async #pool<T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
    let next = 0;
    const worker = async () => {
      while (next < items.length && !this.#stopped) {
        const item = items[next++] as T;
        await work(item).catch((error: unknown) => this.#logger.warn({ err: error }, 'holder role evaluation failed'));
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.#concurrency, items.length) }, worker));
  }

  #every(ms: number, task: () => Promise<void> | void): void {
    const timer = setInterval(() => {
      if (this.#stopped) return;
      this.#track(Promise.resolve().then(task), 'holder role sweep failed');
    }, ms);
    timer.unref();
    this.#timers.push(timer);
  }

  #track(work: Promise<unknown>, failure: string): void {
    const tracked = work.catch((error: unknown) => this.#logger.warn({ err: error }, failure));
    this.#background.add(tracked);
    void tracked.finally(() => this.#background.delete(tracked));
  }
}
