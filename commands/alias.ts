import { defineCommand, defineGroup } from '../src/bot/command.ts';
import { UserError } from '../src/bot/errors.ts';
import { echo } from '../src/bot/user-text.ts';
import { code, oneLine } from '../src/core/reply.ts';
import { shortAddress } from '../src/market/format.ts';
import { own } from '../src/records.ts';

const MAX_ALIASES = 100;
/** Names that JavaScript objects carry: refused so that the state file reads back exactly what was saved. */
const RESERVED_ALIASES = new Set(['constructor', 'prototype']);

export default defineGroup({
  name: 'alias',
  // About this chat's own setup: where the bot answers one person among others, only they see it.
  personal: true,
  description: 'Short names for collections in this chat',
  subcommands: [
    defineCommand({
      name: 'set',
      description: 'Give a collection a short name in this chat',
      permission: 'manage',
      example: '/alias set mc moon cats',
      options: [
        {
          name: 'name',
          type: 'text',
          description: 'The short name, one word (letters, digits, - and _)',
          required: true,
          oneWord: true,
        },
        {
          name: 'collection',
          type: 'collection',
          description: 'Collection name or address',
          required: true,
          autocomplete: true,
        },
      ],
      async run(ctx, { name, collection }) {
        const alias = name.toLowerCase();
        if (!/^[a-z0-9][a-z0-9_-]{0,31}$/.test(alias)) {
          throw new UserError('not_found', {
            what: 'An alias is 1-32 letters, digits, - or _, starting with a letter or digit.',
          });
        }
        if (/^0x/.test(alias))
          throw new UserError('not_found', { what: 'An alias cannot start with 0x (it would look like an address).' });
        if (RESERVED_ALIASES.has(alias)) {
          throw new UserError('not_found', { what: `"${alias}" is a reserved word; choose another alias.` });
        }
        if (ctx.platform.networks.all.some((n) => n.name.toLowerCase() === alias)) {
          // `devnet-l2` as an alias would read as the network in `devnet-l2:…` and in network=.
          throw new UserError('not_found', { what: `"${alias}" is the name of a network; choose another alias.` });
        }
        let replaced: string | undefined;
        await ctx.store.updateChat(ctx.chatKey, (settings) => {
          const before = own(settings.aliases, alias);
          if (before && before.address !== collection.address) replaced = before.name ?? shortAddress(before.address);
          if (!before && Object.keys(settings.aliases).length >= MAX_ALIASES) {
            throw new UserError('not_found', {
              what: `This chat already has ${MAX_ALIASES} aliases; remove one first.`,
            });
          }
          settings.aliases[alias] = {
            alias,
            network: collection.network,
            address: collection.address,
            name: collection.name,
          };
        });
        return {
          tone: 'success',
          lines: [
            [
              '"',
              alias,
              '" now means ',
              collection.name,
              ' (',
              code(shortAddress(collection.address)),
              ` on ${collection.network}).`,
              ...(replaced === undefined ? [] : [` It meant ${replaced} before.`]),
            ],
          ],
        };
      },
    }),
    defineCommand({
      name: 'remove',
      description: 'Remove a short name',
      permission: 'manage',
      options: [{ name: 'name', type: 'text', description: 'The short name', required: true }],
      async run(ctx, { name }) {
        const alias = name.toLowerCase();
        if (!own(ctx.store.chat(ctx.chatKey).aliases, alias)) {
          throw new UserError('not_found', {
            what: `There is no alias "${echo(alias)}" in this chat. /alias list shows them.`,
          });
        }
        await ctx.store.updateChat(ctx.chatKey, (settings) => {
          delete settings.aliases[alias];
        });
        return { tone: 'success', lines: [`Alias "${alias}" removed.`] };
      },
    }),
    defineCommand({
      name: 'list',
      description: 'The short names of this chat',
      options: [],
      async run(ctx) {
        const aliases = Object.values(ctx.store.chat(ctx.chatKey).aliases).sort((a, b) =>
          a.alias.localeCompare(b.alias),
        );
        return {
          title: 'Aliases',
          tone: 'info',
          lines: aliases.length
            ? aliases.map((a) => [
                `${a.alias} → ${oneLine(a.name ?? '', 100)} `,
                code(shortAddress(a.address)),
                ` (${a.network})`,
              ])
            : ['No aliases yet. Add one with /alias set <name> <collection>.'],
        };
      },
    }),
  ],
});
