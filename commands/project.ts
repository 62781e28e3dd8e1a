import { defineCommand, defineGroup } from '../src/bot/command.ts';
import { UserError } from '../src/bot/errors.ts';
import { bold, code, oneLine, type Reply, type Rich } from '../src/core/reply.ts';
import { shortAddress } from '../src/market/format.ts';

const SHOWN = 20;

function requireProject(projectId: number | undefined): number {
  if (projectId === undefined) {
    throw new UserError('not_configured', { what: 'No project is configured: set FLOORWATCH_PROJECT_ID.' });
  }
  return projectId;
}

export default defineGroup({
  name: 'project',
  description: 'The platform project: contracts, sources, gas sponsors, audiences (operators)',
  permission: 'operator',
  subcommands: [
    defineCommand({
      name: 'contracts',
      description: "The project's contracts",
      options: [{ name: 'type', type: 'text', description: 'Only this contract type, e.g. ERC721' }],
      async run(ctx, { type }) {
        const projectId = requireProject(ctx.settings.projectId);
        const chainId = ctx.platform.networks.resolve(ctx.network).chainId;
        const { contracts } = await ctx.platform.builder.listContracts({
          projectId,
          filter: { chainId, ...(type ? { contractType: type.toUpperCase() } : {}) },
          page: { pageSize: 50 },
        });
        const reply: Reply = { title: `Contracts of project ${projectId}`, tone: 'info', footer: ctx.network };
        reply.lines = contracts.length
          ? contracts
              .slice(0, SHOWN)
              .map((c) => [
                `${oneLine(c.contractName || 'unnamed', 50)} · ${c.contractType} · `,
                code(c.contractAddress),
              ])
          : [`No contracts on ${ctx.network}${type ? ` of type ${type}` : ''}.`];
        if (contracts.length > SHOWN) reply.lines = [...reply.lines, `… and ${contracts.length - SHOWN} more`];
        return reply;
      },
    }),
    defineCommand({
      name: 'sources',
      description: 'Contract sources available to the project',
      options: [],
      async run(ctx) {
        const { contractSources } = await ctx.platform.builder.listContractSources({
          projectId: requireProject(ctx.settings.projectId),
          page: { pageSize: 50 },
        });
        const reply: Reply = { title: 'Contract sources', tone: 'info' };
        reply.lines = contractSources.length
          ? contractSources
              .slice(0, SHOWN)
              .map(
                (s) =>
                  `${oneLine(s.name, 50)} · ${s.contractType} · ${s.audited ? 'audited' : 'not audited'}${s.disabled ? ' · disabled' : ''} · by ${oneLine(s.author || '?', 30)}`,
              )
          : ['No contract sources.'];
        if (contractSources.length > SHOWN)
          reply.lines = [...reply.lines, `… and ${contractSources.length - SHOWN} more`];
        return reply;
      },
    }),
    defineCommand({
      name: 'sponsors',
      description: "The project's gas sponsors on a network",
      options: [{ name: 'network', type: 'network', description: 'Network (default: the chat default)' }],
      async run(ctx) {
        const { gasSponsors } = await ctx.platform.relayer.listGasSponsors({
          network: ctx.network,
          projectId: requireProject(ctx.settings.projectId),
          page: { pageSize: 50 },
        });
        const active = gasSponsors.filter((s) => s.active).length;
        const reply: Reply = { title: `Gas sponsors on ${ctx.network}`, tone: 'info' };
        reply.lines = gasSponsors.length
          ? [
              `${active} active, ${gasSponsors.length - active} inactive.`,
              ...gasSponsors
                .slice(0, SHOWN)
                .map((s) => [`${s.active ? '●' : '○'} ${oneLine(s.name || 'unnamed', 50)} · `, code(s.address)]),
            ]
          : ['No gas sponsors on this network.'];
        return reply;
      },
    }),
    defineCommand({
      name: 'audience',
      description: 'An audience (allowlist) with its contacts',
      options: [{ name: 'id', type: 'integer', description: 'Audience id', required: true, min: 1 }],
      async run(ctx, { id }) {
        const { audience, contacts, contracts } = await ctx.platform.builder.getAudience({
          projectId: requireProject(ctx.settings.projectId),
          audienceId: id,
        });
        // The contacts are lines, not a field: with their whole addresses (to copy) they outgrow a
        // Discord field (1,024 characters) but fit a description (4,096) and a Telegram message.
        return {
          title: `Audience ${oneLine(audience.name, 80)}`,
          tone: 'info',
          lines: [
            `${audience.contactCount} contacts${audience.deletedAt ? ' · deleted' : ''}; used by ${contracts.length} contract${contracts.length === 1 ? '' : 's'}.`,
            [bold('Contacts:')],
            ...(contacts.length
              ? contacts
                  .slice(0, SHOWN)
                  .map(
                    (c): Rich => [
                      `${shortAddress(c.address)}${c.name ? ` · ${oneLine(c.name, 40)}` : ''} · `,
                      code(c.address),
                    ],
                  )
              : ['The platform did not list contacts.']),
            ...(contacts.length > SHOWN ? [`… and ${contacts.length - SHOWN} more`] : []),
          ],
        };
      },
    }),
  ],
});
