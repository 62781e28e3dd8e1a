import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type CommandDefinition, type CommandSpec, isGroup } from './command.ts';

/** Discord's limits on application commands, which every command must fit. */
export const COMMAND_LIMITS = {
  nameLength: 32,
  descriptionLength: 100,
  options: 25,
  choices: 25,
  subcommands: 25,
} as const;

const NAME = /^[a-z][a-z0-9_-]{0,31}$/;

/** A command file that does not describe a valid command. */
export class CommandDefinitionError extends Error {
  override name = 'CommandDefinitionError';
}

function checkSpec(spec: CommandSpec, where: string): void {
  if (!NAME.test(spec.name)) throw new CommandDefinitionError(`${where}: invalid name "${spec.name}"`);
  if (!spec.description || spec.description.length > COMMAND_LIMITS.descriptionLength) {
    throw new CommandDefinitionError(
      `${where}: description must have 1-${COMMAND_LIMITS.descriptionLength} characters`,
    );
  }
  if (typeof spec.run !== 'function') throw new CommandDefinitionError(`${where}: run is not a function`);
  if (spec.options.length > COMMAND_LIMITS.options) throw new CommandDefinitionError(`${where}: too many options`);
  const seen = new Set<string>();
  let optionalSeen = false;
  spec.options.forEach((option, index) => {
    const at = `${where} option "${option.name}"`;
    if (!NAME.test(option.name) || (option.name === 'network' && option.type !== 'network')) {
      throw new CommandDefinitionError(`${at}: invalid name`);
    }
    if (seen.has(option.name)) throw new CommandDefinitionError(`${at}: duplicate`);
    seen.add(option.name);
    if (!option.description || option.description.length > COMMAND_LIMITS.descriptionLength) {
      throw new CommandDefinitionError(`${at}: description must have 1-${COMMAND_LIMITS.descriptionLength} characters`);
    }
    // Discord requires required options before optional ones.
    if (option.required && optionalSeen) throw new CommandDefinitionError(`${at}: required after optional`);
    if (!option.required) optionalSeen = true;
    if (option.rest && spec.options.slice(index + 1).some((later) => !later.namedOnly))
      throw new CommandDefinitionError(`${at}: only the last option (but named-only ones) may take the rest`);
    if (
      (option.type === 'choice' || option.type === 'choiceList') &&
      (!option.choices?.length || option.choices.length > COMMAND_LIMITS.choices)
    ) {
      throw new CommandDefinitionError(`${at}: a choice needs 1-${COMMAND_LIMITS.choices} choices`);
    }
  });
}

/** Validates command definitions: names, descriptions, option order and limits, uniqueness. */
export function validateCommands(commands: readonly CommandDefinition[]): void {
  const names = new Set<string>();
  for (const command of commands) {
    const where = `/${command.name}`;
    if (names.has(command.name)) throw new CommandDefinitionError(`${where}: defined twice`);
    names.add(command.name);
    if (isGroup(command)) {
      if (!NAME.test(command.name)) throw new CommandDefinitionError(`${where}: invalid name`);
      if (command.subcommands.length === 0 || command.subcommands.length > COMMAND_LIMITS.subcommands) {
        throw new CommandDefinitionError(`${where}: needs 1-${COMMAND_LIMITS.subcommands} subcommands`);
      }
      const subs = new Set<string>();
      for (const sub of command.subcommands) {
        if (subs.has(sub.name)) throw new CommandDefinitionError(`${where} ${sub.name}: defined twice`);
        subs.add(sub.name);
        checkSpec(sub, `${where} ${sub.name}`);
      }
    } else {
      checkSpec(command, where);
    }
  }
}

function isDefinition(value: unknown): value is CommandDefinition {
  return typeof value === 'object' && value !== null && 'name' in value && 'description' in value;
}

/**
 * Loads every command file of a directory (one default export each), validates them all, and
 * returns them sorted by name. A broken file stops start-up with its name in the error.
 */
export async function loadCommands(directory: string): Promise<CommandDefinition[]> {
  const files = (await readdir(directory)).filter((f) => /\.(ts|js)$/.test(f) && !f.endsWith('.d.ts')).sort();
  const commands: CommandDefinition[] = [];
  for (const file of files) {
    const module = (await import(pathToFileURL(join(directory, file)).href)) as { default?: unknown };
    if (!isDefinition(module.default)) {
      throw new CommandDefinitionError(`${file}: the default export is not a command`);
    }
    commands.push(module.default);
  }
  validateCommands(commands);
  return commands.sort((a, b) => a.name.localeCompare(b.name));
}
