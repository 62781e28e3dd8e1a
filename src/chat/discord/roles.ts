/**
 * Holder roles on Discord: gives and takes a member's role through the REST routes
 * `PUT|DELETE /guilds/{guild}/members/{user}/roles/{role}` (discord.js's REST queue keeps to
 * Discord's rate limits and retries its 429s), and says whether the bot can give a role at all: the
 * role must exist, not be managed by an integration, and sit below the bot's highest role, and the
 * bot needs Manage Roles. Needs no privileged intent: roles and the bot's own member are read over
 * REST.
 */
import {
  type APIGuildMember,
  type APIRole,
  DiscordAPIError,
  PermissionFlagsBits,
  type REST,
  RESTJSONErrorCodes,
  Routes,
} from 'discord.js';
import {
  type GrantKey,
  idOf,
  MembershipError,
  type MembershipFailureReason,
  type MembershipSink,
  type TargetCheck,
} from '../../core/roles.ts';

/** Role ids are snowflakes: anything else is refused before it reaches a URL. */
const SNOWFLAKE = /^\d{5,25}$/;

/** Whether role `a` sits above role `b` (Discord: higher position; at equal positions the older, lower id). */
function above(a: APIRole, b: APIRole): boolean {
  if (a.position !== b.position) return a.position > b.position;
  return BigInt(a.id) < BigInt(b.id);
}

/** Gives and takes Discord roles (see the module comment). */
export class DiscordMembership implements MembershipSink {
  readonly platform = 'discord' as const;
  readonly #rest: REST;
  readonly #botId: () => string | undefined;

  constructor(rest: REST, botId: () => string | undefined) {
    this.#rest = rest;
    this.#botId = botId;
  }

  async grant(key: GrantKey, reason: string): Promise<void> {
    const [guild, user, role] = this.#ids(key);
    try {
      await this.#rest.put(Routes.guildMemberRole(guild, user, role), { reason });
    } catch (error) {
      throw await this.#failure(key.community, role, error);
    }
  }

  async revoke(key: GrantKey, reason: string): Promise<'done' | 'exempt'> {
    const [guild, user, role] = this.#ids(key);
    try {
      await this.#rest.delete(Routes.guildMemberRole(guild, user, role), { reason });
    } catch (error) {
      // A member who left has no role left to take.
      if (error instanceof DiscordAPIError && error.code === RESTJSONErrorCodes.UnknownMember) return 'done';
      throw await this.#failure(key.community, role, error);
    }
    return 'done';
  }

  async checkTarget(community: string, target: string): Promise<TargetCheck> {
    const guild = idOf(community);
    const botId = this.#botId();
    if (!SNOWFLAKE.test(guild) || !SNOWFLAKE.test(target) || !botId) return { ok: false, reason: 'unknown_role' };
    if (target === guild) return { ok: false, reason: 'everyone' };
    let roles: APIRole[];
    let me: APIGuildMember;
    try {
      [roles, me] = await Promise.all([
        this.#rest.get(Routes.guildRoles(guild)) as Promise<APIRole[]>,
        this.#rest.get(Routes.guildMember(guild, botId)) as Promise<APIGuildMember>,
      ]);
    } catch (error) {
      if (error instanceof DiscordAPIError && error.status === 403) return { ok: false, reason: 'missing_permission' };
      throw new MembershipError('unavailable', 'the roles of the server could not be read', {
        permanent: false,
        cause: error,
      });
    }
    const role = roles.find((r) => r.id === target);
    if (!role) return { ok: false, reason: 'unknown_role' };
    if (role.managed) return { ok: false, reason: 'managed_role', name: role.name };
    const mine = roles.filter((r) => r.id === guild || me.roles.includes(r.id));
    const permissions = mine.reduce((bits, r) => bits | BigInt(r.permissions), 0n);
    const administrator = (permissions & PermissionFlagsBits.Administrator) !== 0n;
    if (!administrator && (permissions & PermissionFlagsBits.ManageRoles) === 0n) {
      return { ok: false, reason: 'missing_permission', name: role.name };
    }
    const highest = mine.reduce<APIRole | undefined>(
      (top, r) => (top === undefined || above(r, top) ? r : top),
      undefined,
    );
    // Even an administrator cannot give a role at or above its own highest one.
    if (!highest || !above(highest, role)) {
      return { ok: false, reason: 'role_above_bot', name: role.name, ...(highest ? { botRole: highest.name } : {}) };
    }
    return { ok: true, name: role.name };
  }

  #ids(key: GrantKey): [guild: string, user: string, role: string] {
    const ids: [string, string, string] = [idOf(key.community), idOf(key.person), key.target];
    if (!ids.every((id) => SNOWFLAKE.test(id))) {
      throw new MembershipError('unknown_role', 'not a Discord role of a member', { permanent: true });
    }
    return ids;
  }

  /** A refused change as a {@link MembershipError}: a 403 is looked into to say why. */
  async #failure(community: string, role: string, error: unknown): Promise<MembershipError> {
    if (!(error instanceof DiscordAPIError)) {
      return new MembershipError('unavailable', 'Discord could not be reached', { permanent: false, cause: error });
    }
    const permanent = (reason: MembershipFailureReason) =>
      new MembershipError(reason, `Discord answered ${error.status} (code ${error.code})`, {
        permanent: true,
        cause: error,
      });
    switch (error.code) {
      case RESTJSONErrorCodes.UnknownMember:
        return permanent('not_member');
      case RESTJSONErrorCodes.UnknownRole:
        return permanent('unknown_role');
      case RESTJSONErrorCodes.UnknownGuild:
      case RESTJSONErrorCodes.MissingAccess:
        return permanent('missing_permission');
      case RESTJSONErrorCodes.MissingPermissions: {
        const check = await this.checkTarget(community, role).catch(() => undefined);
        const reason = check && !check.ok && check.reason !== 'everyone' ? check.reason : 'missing_permission';
        return permanent(reason);
      }
    }
    return new MembershipError('unavailable', `Discord answered ${error.status} (code ${error.code})`, {
      permanent: false,
      cause: error,
    });
  }
}
