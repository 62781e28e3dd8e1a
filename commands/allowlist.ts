import { defineCommand } from '../src/bot/command.ts';
import { UserError } from '../src/bot/errors.ts';
import { code, oneLine } from '../src/core/reply.ts';
import { shortAddress } from '../src/market/format.ts';

export default defineCommand({
  name: 'allowlist',
  description: 'Is this wallet on the allowlist?',
  example: '/allowlist 0x1234… 1',
  options: [
    { name: 'address', type: 'address', description: 'Wallet address', required: true },
    { name: 'audience', type: 'integer', description: 'Audience id (default: the configured allowlist)', min: 1 },
  ],
  async run(ctx, { address, audience }) {
    const audienceId = audience ?? ctx.settings.allowlistAudience;
    if (audienceId === undefined) {
      throw new UserError('not_configured', {
        what: 'Which allowlist? Give the audience id, or ask the operator to set FLOORWATCH_ALLOWLIST_AUDIENCE.',
      });
    }
    if (ctx.settings.projectId === undefined) {
      throw new UserError('not_configured', { what: 'No project is configured: set FLOORWATCH_PROJECT_ID.' });
    }
    const result = await ctx.platform.builder.getAudience({ projectId: ctx.settings.projectId, audienceId });
    const listed = result.contacts.some((c) => c.address.toLowerCase() === address);
    const name = oneLine(result.audience.name, 80);
    return {
      title: listed ? 'On the allowlist' : 'Not on the allowlist',
      tone: listed ? 'success' : 'warning',
      lines: [[code(shortAddress(address)), listed ? ` is on "${name}".` : ` is not on "${name}".`]],
      ephemeral: true,
    };
  },
});
