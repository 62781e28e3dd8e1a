/**
 * Completions of an option while it is typed (Discord's autocomplete): what the chat knows first
 * (its aliases, the collections its watch rules follow), then the platform's search. The chat
 * adapter asks through the engine and converts; it never reads the store.
 */
import type { RulesRepository } from '../core/ports.ts';
import { truncate } from '../core/reply.ts';
import type { CollectionResolver } from './collections.ts';
import { type ChatRef, type CommandDefinition, isGroup } from './command.ts';
import type { OptionSpec } from './options.ts';

/** An option being typed, and the chat platform's limits on the answer. */
export interface CompletionRequest {
  chat: ChatRef;
  command: string;
  subcommand?: string | undefined;
  /** The option being typed: one of the command's, or `network` (the network word of commands with a collection). */
  option: string;
  /** What is typed so far. */
  text: string;
  /** The network typed beside it, if any (ignored unless the bot knows it). */
  network?: string | undefined;
  /** Most completions the platform shows. */
  limit: number;
  /** Longest name or value the platform takes; longer values are left out, longer names cut. */
  maxLength: number;
}

/** One completion: what the person sees, and what the option gets. */
export interface Completion {
  name: string;
  value: string;
}

/** What completing needs: the commands, the networks, the chat's settings and rules, the search. */
export interface CompletionSources {
  commands: readonly CommandDefinition[];
  networks: readonly string[];
  /** Network searched when neither the request nor the chat names one. */
  defaultNetwork: string | undefined;
  store: Pick<RulesRepository, 'chat' | 'rulesOf'>;
  resolver: Pick<CollectionResolver, 'suggest'>;
}

/** The spec of one option of a command (or of its subcommand). */
function optionSpecOf(
  commands: readonly CommandDefinition[],
  name: string,
  subcommand: string | undefined,
  option: string,
): OptionSpec | undefined {
  const command = commands.find((c) => c.name === name);
  if (!command) return undefined;
  const spec = isGroup(command) ? command.subcommands.find((s) => s.name === subcommand) : command;
  return spec?.options.find((o) => o.name === option);
}

/**
 * Completions of `request.option`: known networks for a network; for a collection (or an option
 * that asks for completion), the chat's aliases and watched collections whose names contain the
 * text, then, from two letters on, the platform's search on the network typed, the chat's or the
 * bot's. Each collection once, as an alias when it has one, else as `network:address`.
 *
 * @example
 * await completions({ chat, command: 'floor', option: 'collection', text: 'moon', limit: 25, maxLength: 100 }, sources)
 * // [{ name: 'kitties (Moon Cats)', value: 'kitties' }, { name: 'Moon Cats Rescue (devnet)', value: 'devnet:0x…' }]
 */
export async function completions(request: CompletionRequest, sources: CompletionSources): Promise<Completion[]> {
  const option = optionSpecOf(sources.commands, request.command, request.subcommand, request.option);
  const wanted = request.text.trim().toLowerCase();
  const { networks } = sources;
  if (request.option === 'network' || option?.type === 'network') {
    return networks
      .filter((n) => n.toLowerCase().includes(wanted))
      .slice(0, request.limit)
      .map((n) => ({ name: n, value: n }));
  }
  if (option?.type !== 'collection' && option?.autocomplete !== true) return [];
  const chatKey = `${request.chat.platform}:${request.chat.id}`;
  const settings = sources.store.chat(chatKey);
  const out: Completion[] = [];
  const seen = new Set<string>();
  const add = (name: string, value: string, key: string) => {
    if (seen.has(key) || out.length >= request.limit || value.length > request.maxLength) return;
    seen.add(key);
    out.push({ name: truncate(name, request.maxLength), value });
  };
  for (const alias of Object.values(settings.aliases)) {
    if (!wanted || alias.alias.includes(wanted) || (alias.name ?? '').toLowerCase().includes(wanted)) {
      add(`${alias.alias} (${alias.name ?? alias.address})`, alias.alias, `${alias.network}:${alias.address}`);
    }
  }
  for (const rule of await sources.store.rulesOf(chatKey)) {
    if (!wanted || rule.collectionName.toLowerCase().includes(wanted) || rule.collection.includes(wanted)) {
      const value = `${rule.network}:${rule.collection}`;
      add(`${rule.collectionName} (${rule.network})`, value, value);
    }
  }
  const typed = request.network !== undefined && networks.includes(request.network) ? request.network : undefined;
  const network = typed ?? settings.network ?? sources.defaultNetwork ?? networks[0];
  if (network && wanted.length >= 2) {
    for (const found of await sources.resolver.suggest(request.text, network)) {
      const value = `${found.network}:${found.address}`;
      add(`${found.name} (${found.network})`, value, value);
    }
  }
  return out;
}
