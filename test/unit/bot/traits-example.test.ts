import { describe, expect, it } from 'vitest';
import { filterExample } from '../../../commands/traits.ts';
import { tokenize } from '../../../src/bot/options.ts';

const ADDRESS = '0x00000000000000000000000000000000000000aa';
const FLOOR_OPTIONS = ['collection', 'count'];
const fur = [{ name: 'Fur', type: 'STRING', values: ['Black', 'Grey'] }] as never;

const example = (name: string, filters = fur, network = 'devnet') =>
  filterExample({ network, address: ADDRESS, name }, filters, 'devnet', FLOOR_OPTIONS);

describe('the /floor line /traits suggests', () => {
  it('GIVEN a plain name on the chat network THEN the name and the filter, as typed', () => {
    expect(example('Moon Cats')).toBe('/floor moon cats Fur=Black');
  });

  it('GIVEN a collection on another network THEN it carries the network', () => {
    expect(example('Tiny Tractors', fur, 'devnet-l2')).toBe('/floor devnet-l2:tiny tractors Fur=Black');
  });

  it.each([
    ["Bob's Cats", 'an apostrophe opens a quote'],
    ['0xmons', 'a word starting 0x is an address'],
    ['Skulls 1337', 'a last number reads as the count'],
    ['Render **Gremlins**', 'markup'],
  ])('GIVEN the name %s (%s) THEN the address stands for it', (name) => {
    expect(example(name)).toBe(`/floor ${ADDRESS} Fur=Black`);
  });

  it('GIVEN traits named like an option of /floor, or untypeable ones THEN the first other trait is suggested, or none', () => {
    const filters = [
      { name: 'count', values: ['3'] },
      { name: 'Network', values: ['main'] },
      { name: '**Mood**', values: ['@here'] },
      { name: 'Glitch Level', values: ["it's", 'Very High'] },
    ] as never;
    const line = example('Glitch Gardens', filters) ?? '';
    expect(line).toBe('/floor glitch gardens "Glitch Level=Very High"');
    const words = tokenize(line.replace(/^\/floor /, ''));
    expect(words.ok && Object.fromEntries(words.value.named)).toEqual({ 'glitch level': 'Very High' });
    expect(example('Glitch Gardens', [{ name: 'count', values: ['3'] }] as never)).toBeUndefined();
  });
});
