import { defineCommand } from '../src/bot/command.ts';
import { UserError } from '../src/bot/errors.ts';
import { traitConditions } from '../src/bot/market-commands.ts';
import { echo } from '../src/bot/user-text.ts';
import { link, oneLine, type Rich } from '../src/core/reply.ts';
import { GROUP_MEMBERSHIP, MembershipError } from '../src/core/roles.ts';
import { requirementText } from '../src/roles/rules.ts';
import { addRoleRule, communityOf, describeRoleRule } from './roles.ts';

const USAGE = '/gate <collection> [min=N] [trait=value ...]';
const NAME_LENGTH = 100;

function hours(ms: number): string {
  const h = ms / 3_600_000;
  return h >= 1 ? `${Number(h.toFixed(1))} h` : `${Math.round(ms / 60_000)} min`;
}

export default defineCommand({
  name: 'gate',
  description: 'Let only holders of a collection into this Telegram group (an invite link that asks)',
  example: '/gate <collection…> min=2',
  permission: 'manageRoles',
  acceptsTraits: true,
  options: [
    { name: 'collection', type: 'collection', description: 'Collection name, alias or address' },
    { name: 'min', type: 'integer', description: 'Tokens needed (default 1)', min: 1, max: 1_000_000 },
  ],
  async run(ctx, { collection, min }) {
    const { key, roles } = communityOf(ctx);
    if (ctx.chat.platform !== 'telegram') {
      throw new UserError('not_found', {
        what: '/gate is for Telegram groups. On Discord, /roles add <@role> <collection> gives holders a role.',
      });
    }
    const lines: Rich[] = [];
    if (collection) {
      const traits = (await traitConditions(ctx, collection, USAGE)).map(({ filter, value }) => ({
        name: filter.name,
        value,
      }));
      const rule = await addRoleRule(roles, {
        community: key,
        target: GROUP_MEMBERSHIP,
        targetName: 'group',
        network: collection.network,
        collection: collection.address,
        collectionName: oneLine(collection.name, NAME_LENGTH),
        minBalance: min ?? 1,
        ...(traits.length ? { traits } : {}),
        createdBy: `${ctx.chat.platform}:${ctx.actor.id}`,
        createdAt: ctx.now().toISOString(),
      });
      lines.push('Gate rule added:', describeRoleRule(rule));
    }
    const rules = await roles.rulesOf(key);
    if (rules.length === 0) {
      return { tone: 'info', title: 'Gate', lines: [`This group is not gated. ${USAGE} gates it.`] };
    }
    let invite: string | undefined;
    try {
      invite = await roles.inviteLink(key);
    } catch (error) {
      if (error instanceof MembershipError && error.reason === 'missing_permission') {
        throw new UserError('not_found', {
          what: 'I cannot make invite links here: make me an administrator with "Invite users via link" and "Ban users", then send /gate again.',
        });
      }
      throw error;
    }
    if (!invite) throw new UserError('not_configured', { what: 'Telegram is not connected to this bot process.' });
    lines.push(
      `Who may join: holders of ${rules.map((r) => echo(requirementText(r))).join(', or of ')}.`,
      ['Share this link: ', link(invite, invite)],
      'People who open it ask to join; I let in those whose verified wallets hold enough, and tell the others privately how to verify.',
      `Members who stop holding are told, and removed ${hours(roles.graceMs)} later unless they hold again. Administrators are never removed.`,
    );
    return { tone: 'success', title: 'Holders-only group', lines };
  },
});
