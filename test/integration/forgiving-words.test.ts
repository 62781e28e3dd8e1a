/**
 * Issue 29.6: forgiving words, through the real engine and commands against the local platform
 * (Moon Cats and Moon Cats Rescue, Glitch Gardens and "Render **Gremlins** || @everyone <b>" on
 * devnet; Harbor Gulls on devnet-l2).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRef } from '../../src/bot/command.ts';
import type { Reply } from '../../src/core/reply.ts';
import { ADMIN, GROUP, type Harness, startHarness } from '../helpers/bot-harness.ts';

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

let groups = 0;
function freshGroup(): ChatRef {
  groups += 1;
  return { ...GROUP, id: `-100950${groups}` };
}

function buttons(reply: Reply) {
  return reply.buttons?.flat() ?? [];
}

function collection(network: string, name: string) {
  const found = h.devnet.collections[network]?.find((c) => c.name === name);
  if (!found) throw new Error(`no ${name} on ${network}`);
  return found;
}

describe('GIVEN a command name with a typo', () => {
  it.each([
    ['/flor moon cats', 'Unknown command "flor". Did you mean /floor?'],
    ['/hodlers moon cats', 'Did you mean /holders?'],
    ['/stat', 'Did you mean /stats or /status?'],
  ])('%s THEN the answer names the command meant', async (line, message) => {
    const answer = await h.run(line);
    expect(answer.tone).toBe('error');
    expect(h.text(answer)).toContain(message);
  });

  it('/xyzzy THEN nothing close is suggested', async () => {
    expect(h.text(await h.run('/xyzzy'))).toBe('Unknown command "xyzzy". Type /help for the list.');
  });

  it('/watch ad moon cats sale THEN the subcommand meant is named', async () => {
    expect(h.text(await h.run('/watch ad moon cats sale', freshGroup(), ADMIN))).toContain('Did you mean /watch add?');
  });
});

describe('GIVEN a collection name typed without its spaces or punctuation', () => {
  it('/floor mooncats THEN it is Moon Cats, not a choice with Moon Cats Rescue', async () => {
    const answer = await h.run('/floor mooncats');
    expect(answer.tone).not.toBe('error');
    expect(answer.title).toBe('Floor of Moon Cats');
  });

  it('/floor render gremlins THEN it is the collection whose first words those are, markup and all', async () => {
    const answer = await h.run('/floor render gremlins');
    expect(answer.title).toBe('Floor of Render **Gremlins** || @everyone <b>');
  });

  it('/watch add glitchgardens sale THEN the rule is for Glitch Gardens', async () => {
    const chat = freshGroup();
    expect(h.text(await h.run('/watch add glitchgardens sale', chat, ADMIN))).toContain(
      'sale of Glitch Gardens (devnet)',
    );
  });
});

describe('GIVEN a collection name with a small typo', () => {
  it('/floor glitch gardns 2 THEN "did you mean" offers Glitch Gardens, and its button runs the command with it', async () => {
    const answer = await h.run('/floor glitch gardns 2');
    expect(answer.title).toBe('Did you mean?');
    expect(h.text(answer)).toContain('No collection is called "glitch gardns". Did you mean Glitch Gardens?');
    const [choice] = buttons(answer);
    const gardens = collection('devnet', 'Glitch Gardens');
    expect(choice?.action).toBe(`/floor collection=devnet:${gardens.address.toLowerCase()} 2`);
    const floor = await h.run(choice?.action ?? '');
    expect(floor.title).toBe('Floor of Glitch Gardens');
  });

  it('/floor moon cts THEN both names that begin so are offered', async () => {
    const answer = await h.run('/floor moon cts');
    expect(buttons(answer).map((b) => b.label.split(' (')[0])).toEqual(['Moon Cats', 'Moon Cats Rescue']);
  });

  it('/holders moon cats 3 extra THEN the extra word is still the answer, not a guess', async () => {
    expect(h.text(await h.run('/holders moon cats 3 extra'))).toContain('Too many arguments: "extra"');
  });

  it('/floor qqqqzz THEN nothing close: no collection matches', async () => {
    expect(h.text(await h.run('/floor qqqqzz'))).toContain('No collection matches "qqqqzz" on devnet.');
  });
});

describe('GIVEN /digest set with a time-zone abbreviation', () => {
  it.each([
    ['/digest set 9am PST moon cats', '"PST" is not a time zone the bot reads', 'America/Los_Angeles'],
    ['/digest set 09:00 CST 7', '"CST"', 'America/Chicago or Asia/Shanghai'],
    ['/digest set 09:00 timezone=cet moon cats', '"cet"', 'Europe/Paris'],
  ])('%s THEN it is refused with the IANA zone to use, and nothing is saved', async (line, what, zone) => {
    const chat = freshGroup();
    const answer = await h.run(line, chat, ADMIN);
    expect(answer.tone).toBe('error');
    expect(h.text(answer)).toContain(what);
    expect(h.text(answer)).toContain(zone);
    expect(h.store.chat(`telegram:${chat.id}`).digest).toBeUndefined();
  });

  it('/digest set 9am America/Los_Angeles moon cats THEN the zone named so is taken', async () => {
    const chat = freshGroup();
    expect(h.text(await h.run('/digest set 9am America/Los_Angeles moon cats', chat, ADMIN))).toContain(
      'America/Los_Angeles',
    );
    expect(h.store.chat(`telegram:${chat.id}`).digest?.timeZone).toBe('America/Los_Angeles');
  });
});

describe('GIVEN /alias set with a name of several words', () => {
  it('/alias set moon cats moon cats THEN an alias is one word, and nothing is saved', async () => {
    const chat = freshGroup();
    const answer = await h.run('/alias set moon cats moon cats', chat, ADMIN);
    expect(h.text(answer)).toContain('name is one word; "moon cats" is 2. Join them (mooncats)');
    expect(h.store.chat(`telegram:${chat.id}`).aliases).toEqual({});
  });

  it('/alias set mc moon cats THEN a one-word alias still works', async () => {
    expect(h.text(await h.run('/alias set mc moon cats', freshGroup(), ADMIN))).toContain('"mc" now means Moon Cats');
  });
});

describe('GIVEN an address of a collection on another network', () => {
  it('/floor <Harbor Gulls address> in a devnet chat THEN the answer says devnet-l2 has it, with a button', async () => {
    const gulls = collection('devnet-l2', 'Harbor Gulls');
    const answer = await h.run(`/floor ${gulls.address}`);
    expect(h.text(answer)).toContain('Harbor Gulls is on devnet-l2, not devnet:');
    const [choice] = buttons(answer);
    expect(choice?.action).toBe(`/floor collection=devnet-l2:${gulls.address.toLowerCase()}`);
    expect((await h.run(choice?.action ?? '')).title).toBe('Floor of Harbor Gulls');
  });

  it('/floor devnet-l2:<address> THEN the network given is used as it is', async () => {
    const gulls = collection('devnet-l2', 'Harbor Gulls');
    expect((await h.run(`/floor devnet-l2:${gulls.address}`)).title).toBe('Floor of Harbor Gulls');
  });
});
