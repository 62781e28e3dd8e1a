import {
  type APIApplicationCommandBasicOption,
  type APIApplicationCommandOption,
  ApplicationCommandOptionType,
  ApplicationCommandType,
  ApplicationIntegrationType,
  InteractionContextType,
  PermissionFlagsBits,
  type RESTPutAPIApplicationCommandsJSONBody,
} from 'discord.js';
import { type CommandDefinition, type CommandSpec, isGroup, type Permission } from '../../bot/command.ts';
import type { OptionSpec } from '../../bot/options.ts';

/** The Discord permission that stands for the bot's 'manage' permission. */
export type ManagePermission = 'ManageGuild' | 'ManageChannels';

/**
 * Options that Discord shows besides a command's own: words the engine takes by name but that a
 * slash command can only carry as declared options.
 */
export const EXTRA_OPTIONS = {
  /** `trait=value` words of commands that accept traits. */
  traits: 'traits',
  /** The `network=` override of commands that take a collection. */
  network: 'network',
} as const;

const DESCRIPTION_MAX = 100;
const CHOICES_MAX = 25;
const OPTIONS_MAX = 25;

function clip(text: string): string {
  return text.length <= DESCRIPTION_MAX ? text : `${text.slice(0, DESCRIPTION_MAX - 1)}…`;
}

function optionOf(option: OptionSpec): APIApplicationCommandBasicOption {
  const base = { name: option.name, description: clip(option.description), required: option.required === true };
  if (option.type === 'integer') {
    return {
      ...base,
      type: ApplicationCommandOptionType.Integer,
      ...(option.min === undefined ? {} : { min_value: option.min }),
      ...(option.max === undefined ? {} : { max_value: option.max }),
    };
  }
  if (option.type === 'role') return { ...base, type: ApplicationCommandOptionType.Role };
  if (option.type === 'choice' && option.choices?.length) {
    return {
      ...base,
      type: ApplicationCommandOptionType.String,
      choices: option.choices.slice(0, CHOICES_MAX).map((c) => ({ name: c, value: c })),
    };
  }
  const autocomplete = option.type === 'collection' || option.type === 'network' || option.autocomplete === true;
  return { ...base, type: ApplicationCommandOptionType.String, ...(autocomplete ? { autocomplete: true } : {}) };
}

/** The options of one command as Discord declares them: required first, then the extras the engine accepts. */
export function optionsOf(spec: CommandSpec): APIApplicationCommandBasicOption[] {
  const own = [...spec.options.filter((o) => o.required), ...spec.options.filter((o) => !o.required)].map(optionOf);
  const names = new Set(spec.options.map((o) => o.name));
  if (spec.options.some((o) => o.type === 'collection') && !names.has(EXTRA_OPTIONS.network)) {
    own.push({
      type: ApplicationCommandOptionType.String,
      name: EXTRA_OPTIONS.network,
      description: 'Network (default: the chat default)',
      required: false,
      autocomplete: true,
    });
  }
  if (spec.acceptsTraits && !names.has(EXTRA_OPTIONS.traits)) {
    own.push({
      type: ApplicationCommandOptionType.String,
      name: EXTRA_OPTIONS.traits,
      description: 'Trait filters as name=value words, e.g. fur=gold eyes="big blue"',
      required: false,
    });
  }
  return own.slice(0, OPTIONS_MAX);
}

/** Where the commands can be installed: servers (0) and people's accounts (1). */
export const INSTALL_KINDS = [ApplicationIntegrationType.GuildInstall, ApplicationIntegrationType.UserInstall];
/** Where they can be used: servers (0), the bot's DM (1), other DMs and group DMs (2). */
export const COMMAND_CONTEXTS = [
  InteractionContextType.Guild,
  InteractionContextType.BotDM,
  InteractionContextType.PrivateChannel,
];

const RANK: Record<Permission, number> = { everyone: 0, manage: 1, manageRoles: 1, operator: 2 };

/** The least permission that lets a member see a command (the server checks each subcommand again). */
function visibleTo(command: CommandDefinition): Permission {
  const own = command.permission ?? 'everyone';
  if (!isGroup(command) || own !== 'everyone') return own;
  let least: Permission = 'operator';
  for (const sub of command.subcommands) {
    const p = sub.permission ?? 'everyone';
    if (RANK[p] < RANK[least]) least = p;
  }
  return least;
}

/** `default_member_permissions` for a permission: null lets everyone see the command. */
export function memberPermissionsFor(permission: Permission, manage: ManagePermission): string | null {
  if (permission === 'operator') return PermissionFlagsBits.Administrator.toString();
  if (permission === 'manage') return PermissionFlagsBits[manage].toString();
  if (permission === 'manageRoles') return PermissionFlagsBits.ManageRoles.toString();
  return null;
}

/**
 * The command registry as Discord application commands (the body of a bulk PUT): groups become
 * commands with subcommands, option types become STRING or INTEGER with choices, bounds and
 * autocomplete, and 'manage'/'operator' commands are hidden from members without the permission
 * (the engine still checks every invocation).
 */
export function toApplicationCommands(
  registry: readonly CommandDefinition[],
  manage: ManagePermission = 'ManageGuild',
  scope: 'global' | 'guild' = 'global',
): RESTPutAPIApplicationCommandsJSONBody {
  return registry.map((command) => {
    const options: APIApplicationCommandOption[] = isGroup(command)
      ? command.subcommands.map((sub) => ({
          type: ApplicationCommandOptionType.Subcommand,
          name: sub.name,
          description: clip(sub.description),
          options: optionsOf(sub),
        }))
      : optionsOf(command);
    return {
      type: ApplicationCommandType.ChatInput,
      name: command.name,
      description: clip(command.description),
      options,
      default_member_permissions: memberPermissionsFor(visibleTo(command), manage),
      // Global commands install to a server and to a person's account, and run in servers, the
      // bot's DM and other DMs: where the bot is not, the engine answers for the person alone
      // (ChatRef.viaUserInstall). Discord reads these for global commands only.
      ...(scope === 'global' ? { integration_types: INSTALL_KINDS, contexts: COMMAND_CONTEXTS } : {}),
    };
  });
}
