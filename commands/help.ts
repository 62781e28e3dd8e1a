import { type CommandDefinition, type CommandSpec, defineCommand, isGroup } from '../src/bot/command.ts';
import { usageOf } from '../src/bot/engine.ts';
import { UserError } from '../src/bot/errors.ts';
import type { Rich } from '../src/core/reply.ts';

function lineOf(spec: CommandSpec, label: string): Rich {
  return [{ code: usageOf(spec, label) }, ` · ${spec.description}`];
}

function detail(command: CommandDefinition): Rich[] {
  if (isGroup(command)) return command.subcommands.map((sub) => lineOf(sub, `${command.name} ${sub.name}`));
  const lines: Rich[] = [lineOf(command, command.name)];
  for (const option of command.options) lines.push(`  ${option.name}: ${option.description}`);
  if (command.example) lines.push(['Example: ', { code: command.example }]);
  return lines;
}

export default defineCommand({
  name: 'help',
  description: 'What the bot can do',
  options: [{ name: 'command', type: 'text', description: 'A command to explain' }],
  async run(ctx, { command }) {
    const visible = ctx.commands.filter((c) => c.permission !== 'operator' || ctx.may('operator'));
    if (command) {
      const name = command.replace(/^\//, '').split(/\s+/)[0]?.toLowerCase() ?? '';
      const found = ctx.commands.find((c) => c.name === name);
      if (!found) throw new UserError('unknown_command', { command: name });
      return { title: `/${found.name}`, tone: 'info', lines: [found.description, ...detail(found)] };
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
