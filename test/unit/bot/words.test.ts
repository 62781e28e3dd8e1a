import { describe, expect, it } from 'vitest';
import { type CommandSpec, defineCommand } from '../../../src/bot/command.ts';
import { type Tokens, tokenize } from '../../../src/bot/options.ts';
import {
  assignWords,
  choiceLines,
  commandLine,
  gluedReadings,
  invocationNetwork,
  MAX_GLUED_WORDS,
  missingOption,
  readOptions,
  readsWithoutName,
  shorterNames,
  withoutFirstWord,
} from '../../../src/bot/words.ts';

const ctx = { networks: ['devnet', 'devnet-l2'] };
const A = '0x1111111111111111111111111111111111111111';
const B = '0x2222222222222222222222222222222222222222';

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
const aliasSet = defineCommand({
  name: 'set',
  description: 'Alias',
  options: [
    { name: 'name', type: 'text', description: 'Short name', required: true },
    { name: 'collection', type: 'collection', description: 'Collection', required: true },
  ],
  run: async () => ({}),
});
const watchAdd = defineCommand({
  name: 'add',
  description: 'Watch',
  acceptsTraits: true,
  options: [
    { name: 'collection', type: 'collection', description: 'Collection', required: true },
    { name: 'kinds', type: 'choiceList', description: 'Kinds', choices: ['sale', 'listing', 'offer'] },
  ],
  run: async () => ({}),
});

function words(line: string): Tokens {
  const tokens = tokenize(line);
  if (!tokens.ok) throw new Error(`does not split: ${line}`);
  return tokens.value;
}

function assigned(spec: CommandSpec, line: string, extra: { defaultCollectionNetwork?: string } = {}) {
  const result = assignWords(spec, words(line), { ...ctx, ...extra });
  if (!result.ok) throw new Error(`refused: ${result.error.code}`);
  return result.value;
}

describe('assignWords', () => {
  it('GIVEN a name of several words and a count THEN the trailing word is the count and the rest the name', () => {
    const { raw, nameWords, longerName } = assigned(floor, 'moon cats 3');
    expect(Object.fromEntries(raw)).toEqual({ collection: 'moon cats', count: '3' });
    expect(nameWords).toMatchObject({ option: 'collection', at: 0, words: ['moon', 'cats'] });
    expect(longerName).toBeUndefined();
  });

  it('GIVEN a trailing word that only looks like the count THEN it is the count, and the longer name is kept as a second reading', () => {
    const { raw, longerName } = assigned(floor, 'area 51');
    expect(Object.fromEntries(raw)).toEqual({ collection: 'area', count: '51' });
    expect(Object.fromEntries(longerName ?? [])).toEqual({ collection: 'area 51' });
  });

  it('GIVEN an address THEN it is one word, whatever follows', () => {
    expect(Object.fromEntries(assigned(floor, `devnet:${A} 4`).raw)).toEqual({ collection: `devnet:${A}`, count: '4' });
  });

  it('GIVEN free text before a collection THEN it takes one word', () => {
    expect(Object.fromEntries(assigned(aliasSet, 'mc moon cats').raw)).toEqual({ name: 'mc', collection: 'moon cats' });
  });

  it('GIVEN a chat with a default collection THEN words that all read as the later options leave the name out', () => {
    expect(Object.fromEntries(assigned(floor, '3', { defaultCollectionNetwork: 'devnet' }).raw)).toEqual({
      count: '3',
    });
    // Without one, the word is a name.
    expect(Object.fromEntries(assigned(floor, '3').raw)).toEqual({ collection: '3' });
    // network= naming another network than the default collection's: the word is a name again.
    const other = assigned(floor, '3 network=devnet-l2', { defaultCollectionNetwork: 'devnet' });
    expect(Object.fromEntries(other.raw)).toEqual({ collection: '3' });
    expect(other.network).toBe('devnet-l2');
  });

  it('GIVEN a fixed name THEN the name is exactly those words and the next word goes to the next option', () => {
    const result = assignWords(floor, words('moon cats 3'), ctx, { at: 0, count: 2 });
    expect(result.ok && Object.fromEntries(result.value.raw)).toEqual({ collection: 'moon cats', count: '3' });
    const tooMany = assignWords(floor, words('moon cats 3 extra'), ctx, { at: 0, count: 2 });
    expect(tooMany).toEqual({ ok: false, error: { code: 'too_many_arguments', input: 'extra' } });
  });

  it('GIVEN words that fit no option THEN the error identifier says which', () => {
    expect(assignWords(token, words(`${A} 7 8`), ctx)).toEqual({
      ok: false,
      error: { code: 'too_many_arguments', input: '8' },
    });
    expect(assignWords(floor, words('moon rarity=1'), ctx)).toEqual({
      ok: false,
      error: { code: 'unknown_option', input: 'rarity=1' },
    });
    expect(assignWords(floor, words('moon network=mars'), ctx)).toMatchObject({
      ok: false,
      error: { code: 'unknown_network', input: 'mars', allowed: ['devnet', 'devnet-l2'] },
    });
  });

  it('GIVEN key=value words no option takes, on a command that accepts traits THEN they are extras', () => {
    const { raw, extras } = assigned(watchAdd, 'moon cats sales background=blue');
    expect(Object.fromEntries(raw)).toEqual({ collection: 'moon cats', kinds: 'sales' });
    expect(Object.fromEntries(extras)).toEqual({ background: 'blue' });
  });
});

describe('readOptions', () => {
  it('GIVEN a word its option refuses but a longer name could hold THEN the longer reading, with the refusal kept', () => {
    const reading = readOptions(floor, assigned(floor, 'area 51'), ctx);
    expect(reading.ok).toBe(true);
    if (!reading.ok) return;
    expect(reading.value.values.collection).toEqual({ kind: 'name', text: 'area 51' });
    expect(reading.value.refused).toMatchObject({ code: 'out_of_range', option: 'count', input: '51' });
  });

  it('GIVEN words that parse THEN their values and the network a collection was written on', () => {
    const reading = readOptions(floor, assigned(floor, 'devnet-l2:harbor gulls 2'), ctx);
    expect(reading).toEqual({
      ok: true,
      value: {
        raw: new Map([
          ['collection', 'devnet-l2:harbor gulls'],
          ['count', '2'],
        ]),
        values: { collection: { kind: 'name', text: 'harbor gulls', network: 'devnet-l2' }, count: 2 },
        collectionNetwork: 'devnet-l2',
        refused: undefined,
      },
    });
  });

  it('GIVEN a malformed required word and no longer reading THEN the option’s own error', () => {
    expect(readOptions(token, assigned(token, `${A} seven`), ctx)).toMatchObject({
      ok: false,
      error: { code: 'invalid_token_id', option: 'token' },
    });
  });
});

describe('the other readings', () => {
  it('GIVEN collection= followed by plain words THEN readings that glue them on, the most words first', () => {
    const readings = gluedReadings(floor, words('collection=moon cats rescue 2'));
    expect(readings.map((r) => [r.named.get('collection'), r.positional])).toEqual([
      ['moon cats rescue 2', []],
      ['moon cats rescue', ['2']],
      ['moon cats', ['rescue', '2']],
    ]);
    expect(gluedReadings(floor, words('count=2 moon cats'))).toEqual([]);
    const long = gluedReadings(floor, words('collection=a b c d e f g h'));
    expect(long).toHaveLength(MAX_GLUED_WORDS);
  });

  it('GIVEN a name that matched nothing THEN shorter names where the first word left out reads as the next option', () => {
    const { nameWords } = assigned(floor, 'moon cats 3 extra');
    if (!nameWords) throw new Error('no name words');
    expect(shorterNames(floor, nameWords, ctx)).toEqual([
      { ref: { kind: 'name', text: 'moon cats' }, reading: { at: 0, count: 2 } },
    ]);
    // `50` is no count of at most 10, but reads as one: the words after the name explain the refusal.
    const outOfRange = assigned(floor, 'moon cats 50 extra');
    expect(outOfRange.nameWords && shorterNames(floor, outOfRange.nameWords, ctx)).toEqual([
      { ref: { kind: 'name', text: 'moon cats' }, reading: { at: 0, count: 2 } },
    ]);
    const misspelt = assigned(floor, 'moon cats rescuee');
    expect(misspelt.nameWords && shorterNames(floor, misspelt.nameWords, ctx)).toEqual([]);
  });

  it('GIVEN words that all read as the options after a name THEN the command reads without a name', () => {
    const lone = assigned(token, '4924');
    expect(lone.nameWords && readsWithoutName(token, lone.nameWords, ctx)).toBe(true);
    const named = assigned(token, 'moon 4924');
    expect(named.nameWords && readsWithoutName(token, named.nameWords, ctx)).toBe(false);
  });

  it('GIVEN a subcommand taken from the words THEN the glued words move one place', () => {
    expect(withoutFirstWord(words('add collection=moon cats').glued)).toEqual(
      new Map([['collection', { at: 0, words: ['cats'] }]]),
    );
    expect(withoutFirstWord(words('collection=moon add').glued)).toBeUndefined();
  });
});

describe('network and required options', () => {
  it('GIVEN the sources of a network THEN the given one, the collection’s, the chat’s known one, then the bot’s', () => {
    const defaults = { ...ctx, defaultNetwork: 'devnet' };
    const read = (values: Record<string, unknown>, collectionNetwork?: string) => ({ values, collectionNetwork });
    expect(invocationNetwork(read({ network: 'devnet-l2' }), 'devnet', undefined, defaults)).toBe('devnet-l2');
    expect(invocationNetwork(read({}, 'devnet'), 'devnet-l2', undefined, defaults)).toBe('devnet-l2');
    expect(invocationNetwork(read({}, 'devnet-l2'), undefined, 'devnet', defaults)).toBe('devnet-l2');
    expect(invocationNetwork(read({}), undefined, 'devnet-l2', defaults)).toBe('devnet-l2');
    expect(invocationNetwork(read({}), undefined, 'gone', defaults)).toBe('devnet');
  });

  it('GIVEN a required option without a value THEN missing names it', () => {
    expect(missingOption(token, { collection: {} })).toEqual({ code: 'missing', option: 'token' });
    expect(missingOption(token, { collection: {}, token: '1' })).toBeUndefined();
  });
});

describe('command lines', () => {
  const moon = { network: 'devnet', address: A, name: 'Moon Cats' };

  it('GIVEN changes THEN the line runs the command again with them, collections by address, words quoted', () => {
    const raw = new Map([
      ['collection', 'moon cats'],
      ['page', '1'],
    ]);
    const resolved = new Map([['collection', moon]]);
    const extras = new Map([['background', 'deep blue']]);
    expect(commandLine('listings', raw, resolved, extras, { page: '2' })).toBe(
      `/listings collection=devnet:${A} page=2 background="deep blue"`,
    );
    expect(commandLine('listings', raw, resolved, new Map(), { page: undefined })).toBe(
      `/listings collection=devnet:${A}`,
    );
  });

  it('GIVEN a choice of collections THEN each line replaces the words of the name with one candidate', () => {
    const candidates = [moon, { network: 'devnet-l2', address: B, name: 'Moon Cats L2' }];
    const typed = {
      positional: ['moon', 'cats', '3'],
      named: new Map([['network', 'devnet']]),
      nameAt: 0,
      nameLength: 2,
    };
    expect(
      choiceLines('floor', { option: 'collection', query: 'moon cats', searched: undefined, candidates }, typed),
    ).toEqual([`/floor collection=devnet:${A} 3 network=devnet`, `/floor collection=devnet-l2:${B} 3 network=devnet`]);
    // Found on other networks: the network typed for the search is left out.
    expect(
      choiceLines('floor', { option: 'collection', query: 'moon cats', searched: 'devnet', candidates }, typed)[1],
    ).toBe(`/floor collection=devnet-l2:${B} 3`);
    // Without the name's place, the query's words are found among the words.
    const untyped = { positional: ['big', 'moon', 'cats'], named: new Map<string, string>() };
    expect(
      choiceLines('floor', { option: 'collection', query: 'moon cats', searched: undefined, candidates }, untyped)[0],
    ).toBe(`/floor collection=devnet:${A} big`);
  });
});
