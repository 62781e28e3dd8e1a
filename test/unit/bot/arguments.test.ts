import { describe, expect, it } from 'vitest';
import { type ArgumentSources, readArguments } from '../../../src/bot/arguments.ts';
import { type CommandSpec, defineCommand, type ResolvedCollection } from '../../../src/bot/command.ts';
import { AmbiguousCollectionError, UserError } from '../../../src/bot/errors.ts';
import { type CollectionRef, tokenize } from '../../../src/bot/options.ts';

const MOON = { network: 'devnet', address: `0x${'1'.repeat(40)}`, name: 'Moon Cats' };
const RESCUE = { network: 'devnet', address: `0x${'2'.repeat(40)}`, name: 'Moon Cats Rescue' };
const AREA = { network: 'devnet', address: `0x${'3'.repeat(40)}`, name: 'Area 51' };
const GULLS = { network: 'devnet-l2', address: `0x${'4'.repeat(40)}`, name: 'Harbor Gulls' };

/** The collections a name finds on a network: one (found), several (a choice) or none. */
const CATALOG: Record<string, ResolvedCollection[]> = {
  'devnet/moon cats': [MOON],
  'devnet/moon cats rescue': [RESCUE],
  'devnet/area 51': [AREA],
  'devnet/moon': [MOON, RESCUE],
  'devnet-l2/harbor gulls': [GULLS],
};

const floor = defineCommand({
  name: 'floor',
  description: 'Floor',
  options: [
    { name: 'collection', type: 'collection', description: 'Collection', required: true },
    { name: 'count', type: 'integer', description: 'How many', min: 1, max: 10 },
  ],
  run: async () => ({}),
});
const token = defineCommand({
  name: 'token',
  description: 'Token',
  options: [
    { name: 'collection', type: 'collection', description: 'Collection', required: true },
    { name: 'token', type: 'tokenId', description: 'Token id', required: true },
  ],
  run: async () => ({}),
});

/** Sources over the catalog above; `lookups` records each name looked up. */
function sources(chat: ArgumentSources['chat'] = {}, lookups: string[] = []): ArgumentSources {
  const find = (ref: CollectionRef, network: string) =>
    ref.kind === 'address' ? undefined : CATALOG[`${ref.network ?? network}/${ref.text.toLowerCase()}`];
  return {
    networks: ['devnet', 'devnet-l2'],
    defaultNetwork: 'devnet',
    chat,
    async lookup(ref, network, option) {
      lookups.push(ref.kind === 'name' ? ref.text : ref.address);
      if (ref.kind === 'address')
        return { ok: true, value: { network: ref.network ?? network, address: ref.address, name: '?' } };
      const found = find(ref, network) ?? [];
      if (found.length === 1) return { ok: true, value: found[0] as ResolvedCollection };
      if (found.length > 1)
        return {
          ok: false,
          error: { code: 'ambiguous_collection', error: new AmbiguousCollectionError(ref.text, found, option) },
        };
      return {
        ok: false,
        error: { code: 'unknown_collection', error: new UserError('unknown_collection', { query: ref.text, network }) },
      };
    },
    probe: async (ref, network) => (find(ref, network) ?? []).length === 1,
  };
}

async function read(spec: CommandSpec, line: string, from: ArgumentSources = sources()) {
  const tokens = tokenize(line);
  if (!tokens.ok) throw new Error(`does not split: ${line}`);
  return readArguments(spec, tokens.value, from);
}

describe('readArguments', () => {
  it('GIVEN a name and a count THEN the collection found and the count, on its network', async () => {
    const result = await read(floor, 'moon cats rescue 2');
    expect(result).toMatchObject({ ok: true, value: { values: { collection: RESCUE, count: 2 }, network: 'devnet' } });
    const l2 = await read(floor, 'devnet-l2:harbor gulls');
    expect(l2).toMatchObject({ ok: true, value: { values: { collection: GULLS }, network: 'devnet-l2' } });
  });

  it('GIVEN a name that ends in a number too large for the count THEN the longer name when it is known', async () => {
    expect(await read(floor, 'area 51')).toMatchObject({ ok: true, value: { values: { collection: AREA } } });
  });

  it('GIVEN a number too large for the count after a name THEN the count’s own error when no longer name is known', async () => {
    expect(await read(floor, 'moon cats 50')).toEqual({
      ok: false,
      error: {
        code: 'invalid_argument',
        error: { code: 'out_of_range', option: 'count', input: '50', min: 1, max: 10 },
      },
    });
  });

  it('GIVEN collection= with the rest of the name unquoted THEN the words after it complete the name', async () => {
    const lookups: string[] = [];
    const result = await read(floor, 'collection=moon cats 3', sources({}, lookups));
    expect(result).toMatchObject({ ok: true, value: { values: { collection: MOON, count: 3 } } });
    // The first reading (count "cats") is refused before any search; the longest glued name is tried first.
    expect(lookups).toEqual(['moon cats 3', 'moon cats']);
  });

  it('GIVEN a known name followed by one word too many THEN the answer is that word, not an unknown name', async () => {
    expect(await read(floor, 'moon cats 3 extra')).toEqual({
      ok: false,
      error: { code: 'invalid_argument', error: { code: 'too_many_arguments', input: 'extra' } },
    });
  });

  it('GIVEN a name that matches nothing THEN unknown_collection, with what was searched', async () => {
    const result = await read(floor, 'zzz no such thing');
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.code).toBe('unknown_collection');
    expect(result.error.code === 'unknown_collection' && result.error.error.params).toEqual({
      query: 'zzz no such thing',
      network: 'devnet',
    });
  });

  it('GIVEN only a token id and no default collection THEN the question is which collection', async () => {
    expect(await read(token, '4924')).toEqual({ ok: false, error: { code: 'no_collection' } });
  });

  it('GIVEN a chat with a default collection THEN words without a name are its options', async () => {
    const chat = { collection: { network: MOON.network, address: MOON.address, name: MOON.name } };
    expect(await read(token, '4924', sources(chat))).toMatchObject({
      ok: true,
      value: { values: { collection: MOON, token: '4924' }, network: 'devnet' },
    });
    expect(await read(floor, '', sources(chat))).toMatchObject({ ok: true, value: { values: { collection: MOON } } });
    expect(await read(floor, '')).toEqual({ ok: false, error: { code: 'no_collection' } });
  });

  it('GIVEN a name with several matches THEN a choice, with where the name’s words are', async () => {
    const result = await read(floor, 'moon 3');
    expect(result).toMatchObject({
      ok: false,
      error: { code: 'ambiguous_collection', typed: { positional: ['moon', '3'], nameAt: 0, nameLength: 1 } },
    });
  });

  it('GIVEN a lookup that fails (the platform down) THEN the reading fails with it', async () => {
    const down = { ...sources(), lookup: () => Promise.reject(new Error('platform down')) };
    await expect(read(floor, 'moon cats', down)).rejects.toThrow('platform down');
  });

  it('GIVEN words the command cannot take THEN the error identifier, before any search', async () => {
    const lookups: string[] = [];
    expect(await read(floor, 'moon network=mars', sources({}, lookups))).toMatchObject({
      ok: false,
      error: { code: 'invalid_argument', error: { code: 'unknown_network' } },
    });
    expect(lookups).toEqual([]);
  });
});
