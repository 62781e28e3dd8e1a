import { defineCommand } from '../src/bot/command.ts';
import { ArgumentError, permissionError, UserError } from '../src/bot/errors.ts';
import { parseCollection } from '../src/bot/options.ts';
import { code, oneLine, type Rich } from '../src/core/reply.ts';
import { shortAddress } from '../src/market/format.ts';

const CLEAR = ['none', 'off', 'clear'];

export default defineCommand({
  name: 'settings',
  // About this chat's own setup: where the bot answers one person among others, only they see it.
  personal: true,
  description: "Show or change this chat's default network and collection",
  example: '/settings network=devnet collection="moon cats"',
  options: [
    { name: 'network', type: 'network', description: 'Default network for this chat' },
    // Text, not collection: an absent value must not fall back to the current default, and "none" clears it.
    { name: 'collection', type: 'text', description: 'Default collection, or "none" to clear', autocomplete: true },
    {
      name: 'crosspost',
      type: 'choice',
      description: 'Announcement channels (Discord): publish alerts and digests to following servers',
      choices: ['on', 'off'],
    },
  ],
  async run(ctx, { network, collection, crosspost }) {
    const changing = network !== undefined || collection !== undefined || crosspost !== undefined;
    if (changing && !ctx.may('manage')) throw permissionError('manage', { action: "Changing this chat's settings" });
    // Publishing exists only in Discord's announcement channels; turning it off is always allowed.
    if (crosspost === 'on' && !ctx.chat.publishes) {
      throw new UserError('not_found', {
        what: 'crosspost=on works in a Discord announcement channel only: this channel has no followers to publish to.',
      });
    }
    const changes: Rich[] = [];
    if (changing) {
      const current = ctx.store.chat(ctx.chatKey);
      let resolved: Awaited<ReturnType<typeof ctx.collections.resolve>> | null | undefined;
      if (collection !== undefined) {
        if (CLEAR.includes(collection.toLowerCase())) {
          resolved = null;
        } else {
          const ref = parseCollection(collection, { networks: ctx.platform.networks.all.map((n) => n.name) });
          if (!ref.ok) throw new ArgumentError(ref.error, '/settings [network] [collection]');
          resolved = await ctx.collections.resolve(
            ref.value,
            network ?? current.network ?? ctx.network,
            current,
            'collection',
          );
        }
      }
      await ctx.store.updateChat(ctx.chatKey, (settings) => {
        if (network !== undefined) settings.network = network;
        if (resolved === null) delete settings.collection;
        else if (resolved)
          settings.collection = { network: resolved.network, address: resolved.address, name: resolved.name };
        if (crosspost === 'on') settings.crosspost = true;
        else if (crosspost === 'off') delete settings.crosspost;
      });
      if (network !== undefined) changes.push(`Default network is now ${network}.`);
      if (resolved === null) changes.push('Default collection cleared.');
      else if (resolved) changes.push(`Default collection is now ${resolved.name} on ${resolved.network}.`);
      if (crosspost === 'on') {
        changes.push(
          'Alerts and digests posted here are now published to the servers that follow this channel (at most 10 an hour: Discord’s limit; past it they are posted here only).',
        );
      } else if (crosspost === 'off') changes.push('Alerts and digests are no longer published to following servers.');
    }
    const settings = ctx.store.chat(ctx.chatKey);
    const aliasCount = Object.keys(settings.aliases).length;
    return {
      title: 'Chat settings',
      tone: changing ? 'success' : 'info',
      lines: changes,
      fields: [
        { name: 'Network', value: settings.network ?? `${ctx.settings.defaultNetwork} (bot default)`, inline: true },
        {
          name: 'Collection',
          value: settings.collection
            ? [
                `${oneLine(settings.collection.name ?? '', 100)} `,
                code(shortAddress(settings.collection.address)),
                ` (${settings.collection.network})`,
              ]
            : 'none',
          inline: true,
        },
        { name: 'Aliases', value: aliasCount ? `${aliasCount} (/alias list)` : 'none', inline: true },
        ...(ctx.chat.publishes || settings.crosspost
          ? [{ name: 'Crosspost', value: settings.crosspost ? 'on' : 'off', inline: true }]
          : []),
      ],
      footer: 'Change with /settings network=<name> collection=<name, address or none>',
    };
  },
});
