import { type CommandContext, defineCommand, defineGroup } from '../src/bot/command.ts';
import { ArgumentError, UserError } from '../src/bot/errors.ts';
import { traitConditions } from '../src/bot/market-commands.ts';
import { parseTokenId } from '../src/bot/options.ts';
import { echo } from '../src/bot/user-text.ts';
import { code, oneLine, type Reply, type Rich } from '../src/core/reply.ts';
import {
  GROUP_MEMBERSHIP,
  type GrantCount,
  type HolderRolesPort,
  MAX_ROLE_RULES,
  type MembershipFailureReason,
  type RoleRule,
  type TargetCheck,
} from '../src/core/roles.ts';
import { requirementText } from '../src/roles/rules.ts';

const USAGE = '/roles add <@role> <collection> [min=N] [tokens=1,2] [trait=value ...]';
/** Longest names kept in a rule (they come from the chat platform and the collection's metadata). */
const NAME_LENGTH = 100;

/** The community of a command (its server or group) with the holder roles port, or a refusal. */
export function communityOf(ctx: CommandContext): { key: string; roles: HolderRolesPort } {
  const roles = ctx.roles;
  if (!roles) throw new UserError('not_configured', { what: 'Holder roles are not running on this bot.' });
  const community = ctx.chat.community;
  if (!community || ctx.chat.kind !== 'group') {
    throw new UserError('not_found', {
      what: 'Holder roles belong to a Discord server or a Telegram group: run this there.',
    });
  }
  return { key: `${ctx.chat.platform}:${community.id}`, roles };
}

/** Why the bot cannot give a role, in plain words and with what to do about it. */
export function targetProblem(check: Extract<TargetCheck, { ok: false }>, role: string): string {
  const at = (name: string) => (name.startsWith('@') ? echo(name) : `@${echo(name)}`);
  const name = check.name === undefined ? role : at(check.name);
  switch (check.reason) {
    case 'role_above_bot':
      return `I cannot give ${name}: my highest role${check.botRole ? ` (${at(check.botRole)})` : ''} sits below it. In Server Settings > Roles, drag my role above ${name}, then try again.`;
    case 'missing_permission':
      return `I cannot give roles here: I lack the Manage Roles permission. Give my role Manage Roles, then try again.`;
    case 'managed_role':
      return `${name} is managed by an integration (a bot's own role, Server Booster, a subscription): nobody can give it. Choose another role.`;
    case 'everyone':
      return '@everyone belongs to every member: choose another role.';
    case 'unknown_role':
      return 'That role is not one of this server’s roles.';
  }
}

const FAILURES: Readonly<Record<MembershipFailureReason, string>> = {
  role_above_bot: 'my highest role sits below the role',
  managed_role: 'the role is managed by an integration',
  unknown_role: 'the role no longer exists',
  missing_permission: 'I lack the permission (Manage Roles; in Telegram: invite users via link and ban users)',
  not_member: 'the person is not a member',
  unavailable: 'the chat platform could not be reached (retried)',
};

function targetLabel(rule: Pick<RoleRule, 'target' | 'targetName'>): string {
  return rule.target === GROUP_MEMBERSHIP ? 'membership of this group' : `@${echo(rule.targetName)}`;
}

export function describeRoleRule(rule: RoleRule): Rich {
  return [code(rule.id), ` ${targetLabel(rule)} for ${echo(requirementText(rule))}`];
}

function countLine(rule: Pick<RoleRule, 'target' | 'targetName'>, count: GrantCount | undefined): string {
  const held = `${count?.granted ?? 0} ${rule.target === GROUP_MEMBERSHIP ? 'members let in' : 'members hold it'}`;
  const lapsed = count?.lapsed ? `, ${count.lapsed} in their grace period` : '';
  const failed =
    count?.failed && count.lastFailure
      ? `, ${count.failed} failed (last: ${FAILURES[count.lastFailure.reason]})`
      : count?.failed
        ? `, ${count.failed} failed`
        : '';
  return `${targetLabel(rule)}: ${held}${lapsed}${failed}`;
}

function list(text: string | undefined): string[] {
  return (text ?? '')
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
}

/** What a rule asks for, whatever the order its lists were written in: two rules with one identity are one too many. */
function ruleIdentity(rule: Omit<RoleRule, 'id'>): string {
  return JSON.stringify([
    rule.target,
    rule.network,
    rule.collection,
    rule.minBalance,
    [...(rule.tokenIds ?? [])].sort(),
    (rule.traits ?? []).map((t) => `${t.name.toLowerCase()}=${t.value.toLowerCase()}`).sort(),
  ]);
}

/** Adds a rule unless the community has the same one, or has as many as it may. */
export async function addRoleRule(roles: HolderRolesPort, wanted: Omit<RoleRule, 'id'>): Promise<RoleRule> {
  const same = (await roles.rulesOf(wanted.community)).find((r) => ruleIdentity(r) === ruleIdentity(wanted));
  if (same) throw new UserError('not_found', { what: `Rule ${same.id} already asks for exactly this.` });
  const rule = await roles.addRule(wanted);
  if (!rule) {
    throw new UserError('not_found', {
      what: `This community already has ${MAX_ROLE_RULES} holder rules; remove one first (/roles list shows them).`,
    });
  }
  return rule;
}

/** `h3`, `H3` or `3` as the store has it. */
function ruleId(typed: string): string {
  return /^h/i.test(typed) ? typed.toLowerCase() : `h${typed}`;
}

const addRole = defineCommand({
  name: 'add',
  description: 'Give a role to members whose verified wallets hold a collection',
  example: '/roles add @Holders… moon cats min=2',
  acceptsTraits: true,
  options: [
    { name: 'role', type: 'role', description: 'The role to give', required: true },
    { name: 'collection', type: 'collection', description: 'Collection name, alias or address', required: true },
    { name: 'min', type: 'integer', description: 'Tokens needed (default 1)', min: 1, max: 1_000_000 },
    { name: 'tokens', type: 'text', description: 'Only these token ids count, comma-separated' },
  ],
  async run(ctx, { role, collection, min, tokens }) {
    const { key, roles } = communityOf(ctx);
    if (ctx.chat.platform !== 'discord') {
      throw new UserError('not_found', {
        what: 'Telegram groups have no roles: /gate <collection> lets only holders into this group.',
      });
    }
    const tokenIds = list(tokens).map((t) => {
      const parsed = parseTokenId(t, 'tokens');
      if (!parsed.ok) throw new ArgumentError(parsed.error, USAGE);
      return parsed.value;
    });
    if (tokenIds.length > 100) {
      throw new UserError('not_found', { what: 'At most 100 token ids may be named in a rule.' });
    }
    const traits = (await traitConditions(ctx, collection, USAGE)).map(({ filter, value }) => ({
      name: filter.name,
      value,
    }));
    const check = await roles.checkTarget(key, role);
    if (!check) throw new UserError('not_configured', { what: 'Discord is not connected to this bot process.' });
    if (!check.ok) throw new UserError('not_found', { what: targetProblem(check, role) });
    const rule = await addRoleRule(roles, {
      community: key,
      target: role,
      targetName: oneLine(check.name, NAME_LENGTH),
      network: collection.network,
      collection: collection.address,
      collectionName: oneLine(collection.name, NAME_LENGTH),
      minBalance: min ?? 1,
      ...(tokenIds.length ? { tokenIds } : {}),
      ...(traits.length ? { traits } : {}),
      createdBy: `${ctx.chat.platform}:${ctx.actor.id}`,
      createdAt: ctx.now().toISOString(),
    });
    return {
      tone: 'success',
      title: 'Holder role added',
      lines: [
        describeRoleRule(rule),
        'Members who verified a wallet (/verify) get it within seconds; those who stop holding lose it within seconds of the transfer.',
      ],
    };
  },
});

const listRoles = defineCommand({
  name: 'list',
  description: 'The holder role rules of this server or group',
  options: [],
  async run(ctx) {
    const { key, roles } = communityOf(ctx);
    const rules = await roles.rulesOf(key);
    if (rules.length === 0) {
      const how = ctx.chat.platform === 'telegram' ? '/gate <collection>' : '/roles add <@role> <collection>';
      return { tone: 'info', title: 'Holder roles', lines: [`No holder rule here yet. ${how} adds one.`] };
    }
    const counts = await roles.grantCounts(key);
    const lines: Rich[] = rules.map(describeRoleRule);
    const targets = [...new Map(rules.map((r) => [r.target, r])).values()];
    lines.push(
      '',
      ...targets.map((r) =>
        countLine(
          r,
          counts.find((c) => c.target === r.target),
        ),
      ),
    );
    return { tone: 'info', title: 'Holder roles', lines };
  },
});

const removeRole = defineCommand({
  name: 'remove',
  description: 'Remove a holder role rule',
  example: '/roles remove h…',
  options: [{ name: 'rule', type: 'text', description: 'Rule id, e.g. h3', required: true }],
  async run(ctx, { rule }) {
    const { key, roles } = communityOf(ctx);
    const removed = await roles.removeRule(key, ruleId(rule.trim()));
    if (!removed) {
      throw new UserError('not_found', { what: `There is no rule ${echo(rule)} here. /roles list shows them.` });
    }
    const left = (await roles.rulesOf(key)).some((r) => r.target === removed.target);
    return {
      tone: 'success',
      lines: [
        `Rule ${removed.id} removed.`,
        left
          ? `${targetLabel(removed)} still follows the other rules that give it.`
          : removed.target === GROUP_MEMBERSHIP
            ? 'The group is no longer gated: nobody is removed for it, and join requests are no longer answered.'
            : `I no longer manage ${targetLabel(removed)}: members who have it keep it.`,
      ],
    };
  },
});

const checkRoles = defineCommand({
  name: 'check',
  description: 'Whether I can give the roles of the rules, and how many members hold them; re-checks everyone',
  options: [],
  async run(ctx) {
    const { key, roles } = communityOf(ctx);
    const rules = await roles.rulesOf(key);
    if (rules.length === 0) return { tone: 'info', lines: ['No holder rule here: nothing to check.'] };
    const counts = await roles.grantCounts(key);
    const lines: Rich[] = [];
    let problems = 0;
    for (const rule of [...new Map(rules.map((r) => [r.target, r])).values()]) {
      if (rule.target !== GROUP_MEMBERSHIP) {
        const check = await roles.checkTarget(key, rule.target);
        if (check && !check.ok) {
          problems++;
          lines.push(`⚠ ${targetProblem(check, targetLabel(rule))}`);
        }
      }
      lines.push(
        countLine(
          rule,
          counts.find((c) => c.target === rule.target),
        ),
      );
    }
    roles.recheck(key);
    lines.push('', 'Every member with a verified wallet is being checked again now.');
    const reply: Reply = {
      tone: problems > 0 ? 'warning' : 'success',
      title: problems > 0 ? 'Holder roles: something needs fixing' : 'Holder roles: all good',
      lines,
    };
    return reply;
  },
});

export default defineGroup({
  name: 'roles',
  description: 'Holder roles: give a role to members who hold a collection',
  permission: 'manageRoles',
  subcommands: [addRole, listRoles, removeRole, checkRoles],
});
