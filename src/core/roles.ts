/**
 * Holder roles: the rules that give a Discord role or membership of a Telegram group to the people
 * whose verified wallets (core/wallets.ts) hold tokens of a collection, the grants the bot made
 * from them, and the ports the role sync (roles/sync.ts), the commands and the chat adapters meet at.
 *
 * A grant is recorded like a delivery: the change is claimed in the store *before* the chat
 * platform is called, and finished after; a claim is taken once whatever the number of processes,
 * so each change is made once. The file adapter (store/files/roles.ts) and the PostgreSQL one
 * (store/pg/roles.ts) honour the port the same way.
 *
 * Keys as in core/wallets.ts: a community is `discord:<guild id>` or `telegram:<group chat id>`, a
 * person `discord:<user id>` or `telegram:<user id>`.
 */
import { randomUUID } from 'node:crypto';
import type { TraitCondition } from './types.ts';

/** The chat platforms that have holder roles. */
export type RolePlatform = 'discord' | 'telegram';

/** What a Telegram gate gives: membership of the group itself. */
export const GROUP_MEMBERSHIP = 'member';

/** Role rules one community may have: bounds the work of every evaluation. */
export const MAX_ROLE_RULES = 25;

/**
 * A community's standing rule: who holds at least `minBalance` tokens of `collection` (summed over
 * their verified wallets in the community; only `tokenIds` when given; only tokens with every one of
 * `traits` when given) gets `target`. A target is given when any one of its rules holds.
 */
export interface RoleRule {
  /** Short, unique, stable (shown to people: `/roles remove h3`). */
  id: string;
  community: string;
  /** The Discord role id, or {@link GROUP_MEMBERSHIP} for a Telegram group. */
  target: string;
  /** The role's name when the rule was made (untrusted text from the chat platform). */
  targetName: string;
  network: string;
  /** Collection contract, lower-case. */
  collection: string;
  collectionName: string;
  /** At least 1. */
  minBalance: number;
  /** Only these token ids (decimal strings). */
  tokenIds?: string[];
  /** Only tokens with all these traits (case-insensitive, as watch rules match them). */
  traits?: TraitCondition[];
  createdBy: string;
  createdAt: string;
}

/** The platform of a community key (`discord:…`, `telegram:…`), when it has holder roles. */
export function platformOf(community: string): RolePlatform | undefined {
  const platform = community.slice(0, community.indexOf(':'));
  return platform === 'discord' || platform === 'telegram' ? platform : undefined;
}

/** The id after the platform in a community or person key. */
export function idOf(key: string): string {
  return key.slice(key.indexOf(':') + 1);
}

/** One grant: a target of a community, for a person. */
export interface GrantKey {
  community: string;
  target: string;
  person: string;
}

export const grantKeyText = (key: GrantKey): string => `${key.community}\n${key.target}\n${key.person}`;

/**
 * Where a grant stands: `granted` (the person has the role, or was let into the group), `lapsed`
 * (a Telegram member who stopped holding, removed once the grace period has passed), `revoked`.
 */
export type GrantState = 'granted' | 'lapsed' | 'revoked';

export type GrantAction = 'grant' | 'revoke';

/** Why the last change of a grant failed. */
export interface GrantFailure {
  /** A {@link MembershipFailure} reason. */
  reason: MembershipFailureReason;
  at: string;
  /** Retried only by the next full re-check (a role above the bot's) rather than at once. */
  permanent: boolean;
}

export interface RoleGrant extends GrantKey {
  state: GrantState;
  /** When the state was entered (ISO). */
  since: string;
  /** When the person stopped holding (Telegram: removed after the grace period). */
  lapsedAt?: string;
  /** The change a process claimed and has not finished yet. */
  pending?: { action: GrantAction; since: string; token: string };
  failure?: GrantFailure;
  /** An evaluation found the change pending: whoever finishes it evaluates the person again. */
  recheck?: boolean;
}

/**
 * The outcome of claiming a change: `claimed` (make it, then {@link RoleStore.finish} with the
 * token), `busy` (another evaluation is making a change of it now; it was asked to evaluate the
 * person again when done), `settled` (already so: nothing to do).
 */
export type ClaimOutcome = { kind: 'claimed'; token: string } | { kind: 'busy' } | { kind: 'settled' };

/** What a change came to, as {@link RoleStore.finish} records it. */
export type ChangeResult =
  | { ok: true }
  /** Nothing was done and nothing needs doing (an admin is never removed; a member already gone). */
  | { ok: true; state: GrantState }
  | { ok: false; reason: MembershipFailureReason; permanent: boolean };

/**
 * Where a full re-check got to: the communities still to do, in order, and the last person done in
 * the first one (people are read in key order: those with verified wallets there and those the bot
 * gave something). Saved after every batch, so that a restart resumes after that person.
 */
export interface RecheckProgress {
  startedAt: string;
  communities: string[];
  after?: string;
  /** People evaluated so far in this run. */
  people: number;
}

/** Counts of a target's grants, for /roles check. */
export interface GrantCount {
  target: string;
  granted: number;
  lapsed: number;
  /** Grants whose last change failed, with the latest reason. */
  failed: number;
  lastFailure?: GrantFailure;
}

/**
 * Role rules, grants and the full re-check's progress. Every change resolves once durable. Listeners
 * hear of rule changes, also (with a shared database) those made by other processes.
 */
export interface RoleStore {
  /** Adds a rule with the next id; undefined when the community already has `limit` rules. */
  addRule(rule: Omit<RoleRule, 'id'>, limit: number): Promise<RoleRule | undefined>;
  /** Removes a community's rule; the removed rule, or undefined when the community has no such rule. */
  removeRule(community: string, id: string): Promise<RoleRule | undefined>;
  rulesOf(community: string): Promise<RoleRule[]>;
  /** Every rule (they are few: at most {@link MAX_ROLE_RULES} a community). */
  allRules(): Promise<RoleRule[]>;
  onRulesChanged(listener: (community: string) => void): void;

  grantsOf(community: string, person: string): Promise<RoleGrant[]>;
  /** People with a grant that is not revoked in a community, sorted, after `after`, at most `limit`. */
  grantedPeople(community: string, after: string | undefined, limit: number): Promise<string[]>;
  grantCounts(community: string): Promise<GrantCount[]>;
  /** Grants lapsed at or before `before` (their grace period has passed), oldest first. */
  lapsedBefore(before: Date, limit: number): Promise<RoleGrant[]>;
  /** Changes claimed at or before `before` and not finished (the process making them died). */
  stalePending(before: Date, limit: number): Promise<RoleGrant[]>;
  /** Forgets a target's grants (its last rule is gone: the bot lets go of it); how many. */
  forgetTarget(community: string, target: string): Promise<number>;

  /**
   * Claims a change of a grant, atomically: `grant` from `revoked` (or no record), `revoke` from
   * `granted` or `lapsed`; with `again`, whatever the state (a join request: the person is not in
   * the group, whatever the record says). A change claimed before `now - staleMs` and never finished
   * may be claimed again.
   */
  claim(
    key: GrantKey,
    action: GrantAction,
    now: Date,
    staleMs: number,
    options?: { again?: boolean },
  ): Promise<ClaimOutcome>;
  /**
   * Records what a claimed change came to (nothing when `token` is not the claim's any more);
   * `recheck`: another evaluation asked for the person to be evaluated again meanwhile.
   */
  finish(key: GrantKey, token: string, result: ChangeResult, now: Date): Promise<{ recheck: boolean }>;
  /** `granted` -> `lapsed` at `now`; true only for the call that made the change. */
  lapse(key: GrantKey, now: Date): Promise<boolean>;
  /** `lapsed` -> `granted`; true only for the call that made the change. */
  restore(key: GrantKey, now: Date): Promise<boolean>;

  recheckProgress(): Promise<RecheckProgress | undefined>;
  /** Saves the progress of the full re-check (undefined: it is done). */
  saveRecheckProgress(progress: RecheckProgress | undefined): Promise<void>;

  /** Resolves once every change made so far is durable (or has failed). */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** Why the chat platform did not make a change. */
export type MembershipFailureReason =
  /** Discord: the role sits above (or at) the bot's highest role. */
  | 'role_above_bot'
  /** Discord: integration roles (bots, boosts, subscriptions) cannot be given by anyone. */
  | 'managed_role'
  | 'unknown_role'
  /** The bot lacks Manage Roles (Discord), or the admin right (Telegram: invite users via link, ban users). */
  | 'missing_permission'
  /** The person is not in the server (left it), or has no join request pending (Telegram). */
  | 'not_member'
  /** The platform could not be reached or failed (retried). */
  | 'unavailable';

/** A change the chat platform refused or could not make. */
export class MembershipError extends Error {
  override name = 'MembershipError';
  readonly reason: MembershipFailureReason;
  readonly permanent: boolean;
  constructor(reason: MembershipFailureReason, message: string, options: { permanent: boolean; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.reason = reason;
    this.permanent = options.permanent;
  }
}

/** Whether the bot can give a Discord role, and if not why (said plainly by /roles add and /roles check). */
export type TargetCheck =
  | { ok: true; name: string }
  | {
      ok: false;
      reason: 'unknown_role' | 'everyone' | 'managed_role' | 'missing_permission' | 'role_above_bot';
      /** The role's name, when it exists (untrusted text). */
      name?: string;
      /** The bot's highest role's name (untrusted text). */
      botRole?: string;
    };

/** A Telegram join request, as the adapter hands it to the role sync. */
export interface JoinRequest {
  community: string;
  person: string;
  /** The private chat the bot may write to while the request is pending (`user_chat_id`). */
  userChatId: string;
  /** The person's name as Telegram gave it (untrusted). */
  name: string;
}

/**
 * What the role sync needs of a chat platform: give and take roles or membership, and say so. Each
 * adapter implements it with its own API (chat/discord/roles.ts, chat/telegram/gate.ts); failures
 * are {@link MembershipError}s.
 */
export interface MembershipSink {
  readonly platform: RolePlatform;
  /** Gives the target (Discord: adds the role; Telegram: approves the person's pending join request). */
  grant(key: GrantKey, reason: string): Promise<void>;
  /**
   * Takes it back (Discord: removes the role; Telegram: removes the person from the group, without a
   * lasting ban). `exempt`: the person may not be removed (a group's administrator or creator).
   */
  revoke(key: GrantKey, reason: string): Promise<'done' | 'exempt'>;
  /** Telegram: declines a pending join request. */
  decline?(request: JoinRequest): Promise<void>;
  /** Telegram: whether the person is a group administrator or its creator (never removed). */
  isExempt?(community: string, person: string): Promise<boolean>;
  /**
   * Telegram: tells a person something in private (`chatId`: a join request's private chat, else
   * theirs). False when it could not be sent (they never started the bot, blocked it).
   */
  tell?(person: string, notice: MembershipNotice, chatId?: string): Promise<boolean>;
  /** Discord: whether the bot can give the role. */
  checkTarget?(community: string, target: string): Promise<TargetCheck>;
  /** Telegram: a new invite link to the group that makes join requests. */
  inviteLink?(community: string): Promise<string>;
}

/** What a person is told about a gate, in words the adapter renders with its own links. */
export interface MembershipNotice {
  kind: 'declined' | 'lapsed' | 'removed' | 'restored';
  community: string;
  /** What the gate asks for, one line per rule ("at least 2 Moon Cats (devnet) with fur=gold"). */
  requirements: string[];
  /** `lapsed`: when the person will be removed unless they hold again. */
  removeAt?: string;
}

/** The outcome of a join request. */
export type JoinOutcome = 'approved' | 'declined' | 'not_gated' | 'failed';

/** What /roles and /gate need of holder roles (roles/service.ts implements it). */
export interface HolderRolesPort {
  addRule(rule: Omit<RoleRule, 'id'>): Promise<RoleRule | undefined>;
  rulesOf(community: string): Promise<RoleRule[]>;
  removeRule(community: string, id: string): Promise<RoleRule | undefined>;
  /** Whether the bot can give a Discord role (undefined when Discord is not running here). */
  checkTarget(community: string, target: string): Promise<TargetCheck | undefined>;
  /** A new invite link of a gated Telegram group (undefined when Telegram is not running here). */
  inviteLink(community: string): Promise<string | undefined>;
  grantCounts(community: string): Promise<GrantCount[]>;
  /** Evaluates a community's people again now, in the background (changes that failed for good are retried). */
  recheck(community: string): void;
  /** The grace period of a Telegram gate, in ms. */
  readonly graceMs: number;
}

/**
 * Whether a change of a grant may be claimed (both adapters decide alike): `busy` while another
 * claim of it is fresh; `settled` when the grant is already as the change would leave it.
 */
export function decideClaim(
  current: RoleGrant | undefined,
  action: GrantAction,
  now: Date,
  staleMs: number,
  again: boolean,
): ClaimOutcome {
  if (current?.pending && Date.parse(current.pending.since) > now.getTime() - staleMs) return { kind: 'busy' };
  const state = current?.state ?? 'revoked';
  const allowed = again || (action === 'grant' ? state === 'revoked' : state !== 'revoked');
  return allowed ? { kind: 'claimed', token: randomUUID() } : { kind: 'settled' };
}

/** A grant once its claimed change came to `result` (both adapters record alike). */
export function finishedGrant(current: RoleGrant, result: ChangeResult, now: Date): RoleGrant {
  const { pending, recheck: _asked, failure: _old, lapsedAt, ...rest } = current;
  const at = now.toISOString();
  if (!result.ok) {
    return {
      ...rest,
      ...(lapsedAt === undefined ? {} : { lapsedAt }),
      failure: { reason: result.reason, at, permanent: result.permanent },
    };
  }
  const state = 'state' in result ? result.state : pending?.action === 'grant' ? 'granted' : 'revoked';
  const lapse = state === 'lapsed' && lapsedAt !== undefined ? { lapsedAt } : {};
  return state === current.state ? { ...rest, ...lapse } : { ...rest, ...lapse, state, since: at };
}
