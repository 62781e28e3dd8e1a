import { type CommandDefinition, type CommandSpec, defineCommand, isGroup } from '../src/bot/command.ts';
import { usageOf } from '../src/bot/engine.ts';
import { UserError } from '../src/bot/errors.ts';
import type { Rich } from '../src/core/reply.ts';

function lineOf(spec: CommandSpec, label: string): Rich {
  return [{ code: usageOf(spec, label) }, ` · ${spec.description}`];
}

/** A command's usage, each of its options with what it takes, and its example. */
function detail(spec: CommandSpec, label: string): Rich[] {
  const lines: Rich[] = [lineOf(spec, label)];
  for (const option of spec.options) lines.push(`  ${option.name}: ${option.description}`);
  if (spec.example) lines.push(['Example: ', { code: spec.example }]);
  return lines;
}

function groupDetail(command: CommandDefinition & { subcommands: readonly CommandSpec[] }): Rich[] {
  return [
    ...command.subcommands.map((sub) => lineOf(sub, `${command.name} ${sub.name}`)),
    ['Type ', { code: `/help ${command.name} ${command.subcommands[0]?.name ?? ''}`.trim() }, ' for its options.'],
  ];
}

export default defineCommand({
  name: 'help',
  description: 'What the bot can do',
  options: [{ name: 'command', type: 'text', description: 'A command to explain' }],
  async run(ctx, { command }) {
    const visible = ctx.bot.commands.filter((c) => c.permission !== 'operator' || ctx.may('operator'));
    if (command) {
      const [name = '', subName] = command.replace(/^\//, '').toLowerCase().split(/\s+/);
      const found = ctx.bot.commands.find((c) => c.name === name);
      if (!found) throw new UserError('unknown_command', { command: name });
      if (!isGroup(found)) {
        return { title: `/${found.name}`, tone: 'info', lines: [found.description, ...detail(found, found.name)] };
      }
      const sub = subName === undefined ? undefined : found.subcommands.find((s) => s.name === subName);
      if (sub) {
        const label = `${found.name} ${sub.name}`;
        return { title: `/${label}`, tone: 'info', lines: [sub.description, ...detail(sub, label)] };
      }
      return { title: `/${found.name}`, tone: 'info', lines: [found.description, ...groupDetail(found)] };
    }
    return {
      title: 'Floorwatch commands',
      tone: 'info',
      lines: [
        ...visible.flatMap((c) =>
          isGroup(c) ? c.subcommands.map((s) => lineOf(s, `${c.name} ${s.name}`)) : [lineOf(c, c.name)],
        ),
        'Collections can be named by name, alias or address (network:0x… for another network).',
        'Type /help <command> for details.',
      ],
      footer: `Floorwatch ${ctx.settings.version}`,
    };
  },
});
