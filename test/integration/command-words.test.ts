/**
 * Issue 15: how the engine reads the words of a command, through the real engine, the real
 * commands and the local platform (Moon Cats and Moon Cats Rescue on devnet, Harbor Gulls and
 * Harbor Gulls Club on devnet-l2).
 * 1. a trailing word that reads as the next option is that option's, with its own error;
 *    collection names ending in a word or a number still work;
 * 2. `/alias set <alias> <collection name>`: the alias is one word;
 * 3. unpublish's Cancel button cancels;
 * 4. a name found only on another network is offered, not taken;
 * 5. a refusal names what is needed.
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRef } from '../../src/bot/command.ts';
import { CommandEngine } from '../../src/bot/engine.ts';
import { loadCommands } from '../../src/bot/registry.ts';
import { renderPlain } from '../../src/chat/console/render.ts';
import { plain, type Reply } from '../../src/core/reply.ts';
import { COMMANDS_DIR } from '../../src/main.ts';
import { StateStore } from '../../src/store/files/state.ts';
import { ADMIN, CONSOLE, GROUP, type Harness, MEMBER, OPERATOR, startHarness } from '../helpers/bot-harness.ts';
import { collectionNamed } from '../helpers/devnet-data.ts';
import { createTestClient } from '../helpers/platform-fixtures.ts';
import { type RecordedRequest, RpcTestServer, reply } from '../helpers/rpc-test-server.ts';

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

/** A Telegram group of its own per test, so that watch rules and aliases do not meet. */
let groups = 0;
function freshGroup(): ChatRef {
  groups += 1;
  return { ...GROUP, id: `-100900${groups}` };
}

function buttons(reply: Reply) {
  return reply.buttons?.flat() ?? [];
}

describe('GIVEN a trailing word that reads as the option after a collection name', () => {
  it.each([
    ['/floor moon cats 50', 'count must be between 1 and 10; got 50.'],
    ['/holders moon cats 1000', 'count must be between 1 and 25; got 1000.'],
    ['/holders moon cats 99999999999999999999999', 'count must be between 1 and 25; got 99999999999999999999999.'],
    ['/floor moon cats 2.5', 'count must be a whole number; got "2.5".'],
    ['/listings moon cats 12 500', 'page must be between 1 and'],
  ])('%s THEN the answer is the option’s own error', async (line, message) => {
    const answer = await h.run(line);
    expect(answer.tone).toBe('error');
    expect(h.text(answer)).toContain(message);
    expect(h.text(answer)).not.toContain('No collection matches');
  });

  it('/watch add moon cats sales THEN the plural is the kind: a rule for sales of Moon Cats', async () => {
    const chat = freshGroup();
    const added = await h.run('/watch add moon cats sales', chat, ADMIN);
    expect(added.tone).not.toBe('error');
    expect(h.text(added)).toContain('sale of Moon Cats (devnet)');
    const both = await h.run('/watch add moon cats listings,offers', chat, ADMIN);
    expect(h.text(both)).toContain('listing, offer of Moon Cats (devnet)');
  });

  it('/watch add moon cats sael THEN the answer lists the kinds', async () => {
    const answer = await h.run('/watch add moon cats sael', freshGroup(), ADMIN);
    expect(h.text(answer)).toContain(
      'kinds must be one of sale, listing, offer, mint, transfer, burn, cancel, all, floor, offer-top; got "sael".',
    );
  });

  it('a collection name that ends in a word still works, with or without the option after it', async () => {
    expect((await h.run('/floor moon cats rescue')).title).toBe('Floor of Moon Cats Rescue');
    const two = await h.run('/floor moon cats rescue 2');
    expect(two.title).toBe('Floor of Moon Cats Rescue');
    expect(two.fields).toHaveLength(2);
    const three = await h.run('/floor moon cats 3');
    expect(three.title).toBe('Floor of Moon Cats');
    expect(three.fields).toHaveLength(3);
    const rule = await h.run('/watch add moon cats rescue listings', freshGroup(), ADMIN);
    expect(h.text(rule)).toContain('listing of Moon Cats Rescue (devnet)');
  });
});

describe('GIVEN a chat with a default collection (Moon Cats)', () => {
  async function chatWithDefault(): Promise<ChatRef> {
    const chat = freshGroup();
    const set = await h.run('/settings collection="moon cats"', chat, ADMIN);
    expect(h.text(set)).toContain('Moon Cats');
    return chat;
  }

  it.each([
    ['/floor 3', 'Floor of Moon Cats', 3],
    ['/holders 5', 'Top holders of Moon Cats', 6],
  ])('%s THEN the words are the options of the default collection', async (line, title, lines) => {
    const answer = await h.run(line, await chatWithDefault(), ADMIN);
    expect(answer.title).toBe(title);
    if (line.startsWith('/floor')) expect(answer.fields).toHaveLength(lines);
    else expect(answer.lines).toHaveLength(lines);
  });

  it('/token <id> THEN that token of the default collection', async () => {
    const answer = await h.run('/token 7', await chatWithDefault(), ADMIN);
    expect(answer.tone).not.toBe('error');
    expect(h.text(answer)).toContain('Moon Cats');
    expect(h.text(answer)).not.toContain('No collection matches');
  });

  it('/watch add sales THEN a rule for sales of the default collection', async () => {
    const answer = await h.run('/watch add sales', await chatWithDefault(), ADMIN);
    expect(h.text(answer)).toContain('sale of Moon Cats (devnet)');
  });

  it('/floor 50 THEN the count is refused, not taken for a name', async () => {
    const answer = await h.run('/floor 50', await chatWithDefault(), ADMIN);
    expect(h.text(answer)).toContain('count must be between 1 and 10; got 50.');
  });

  it('/floor moon cats rescue 2 THEN a name still wins over the default', async () => {
    const answer = await h.run('/floor moon cats rescue 2', await chatWithDefault(), ADMIN);
    expect(answer.title).toBe('Floor of Moon Cats Rescue');
    expect(answer.fields).toHaveLength(2);
  });

  it('WITHOUT a default, /token 4924 THEN the answer asks which collection', async () => {
    const answer = await h.run('/token 4924', freshGroup(), ADMIN);
    expect(h.text(answer)).toContain('Which collection?');
    expect(h.text(answer)).not.toContain('No collection matches');
  });
});

describe('GIVEN words after a collection name that fit no option', () => {
  it.each([
    ['/holders moon cats 3 extra', 'Too many arguments: "extra"'],
    ['/token moon cats 1 2', 'Too many arguments: "2"'],
    ['/holders moon cats 1e3', 'count must be a whole number; got "1e3".'],
    [
      '/watch add moon cats sails',
      'kinds must be one of sale, listing, offer, mint, transfer, burn, cancel, all, floor, offer-top; got "sails".',
    ],
  ])('%s THEN the answer names the words that do not fit', async (line, message) => {
    const answer = await h.run(line, freshGroup(), ADMIN);
    expect(answer.tone).toBe('error');
    expect(h.text(answer)).toContain(message);
    expect(h.text(answer)).not.toContain('No collection matches');
  });

  it.each([
    // A misspelt name is offered as what it is close to (issue 29.6).
    ['/floor moon cats rescuee 2', 'No collection is called "moon cats rescuee". Did you mean Moon Cats Rescue?'],
    ['/floor moon cats aurora', 'No collection matches "moon cats aurora" on devnet.'],
  ])('%s THEN a word that reads as no option is part of the name: nothing has it', async (line, message) => {
    expect(h.text(await h.run(line))).toContain(message);
  });

  it('/alias set mc moon cats extra THEN no collection has that name, and no alias is saved (not "mc extra")', async () => {
    const chat = freshGroup();
    expect(h.text(await h.run('/alias set mc moon cats extra', chat, ADMIN))).toContain(
      'No collection matches "moon cats extra"',
    );
    expect(h.store.chat(`telegram:${chat.id}`).aliases).toEqual({});
  });

  it('/holders devnet-l2:harbor gulls 3 extra THEN the network prefix is kept: one word too many', async () => {
    expect(h.text(await h.run('/holders devnet-l2:harbor gulls 3 extra'))).toContain('Too many arguments: "extra"');
  });

  it('/offers moon cats THEN the token is missing, not "cats is not a token id"', async () => {
    const answer = await h.run('/offers moon cats');
    expect(h.text(answer)).toContain('Missing token.');
    expect(h.text(answer)).not.toContain('not a token id');
  });

  it('/offers moon cats abc THEN abc is refused as a token id', async () => {
    expect(h.text(await h.run('/offers moon cats abc'))).toContain('"abc" is not a token id');
  });
});

describe('GIVEN a name of several words typed after key= without quotes', () => {
  it('/settings collection=moon cats THEN the default is Moon Cats', async () => {
    const chat = freshGroup();
    const answer = await h.run('/settings collection=moon cats', chat, ADMIN);
    expect(answer.tone).not.toBe('error');
    expect(h.store.chat(`telegram:${chat.id}`).collection?.name).toBe('Moon Cats');
  });

  it('/settings collection=moon cats rescue network=devnet THEN both are set', async () => {
    const chat = freshGroup();
    await h.run('/settings collection=moon cats rescue network=devnet', chat, ADMIN);
    const settings = h.store.chat(`telegram:${chat.id}`);
    expect(settings.collection?.name).toBe('Moon Cats Rescue');
    expect(settings.network).toBe('devnet');
  });

  it('/watch add collection=moon cats sales THEN a rule for sales of Moon Cats (a subcommand keeps the words)', async () => {
    expect(h.text(await h.run('/watch add collection=moon cats sales', freshGroup(), ADMIN))).toContain(
      'sale of Moon Cats (devnet)',
    );
  });

  it('/alias set mc collection=moon cats THEN mc means Moon Cats', async () => {
    expect(h.text(await h.run('/alias set mc collection=moon cats', freshGroup(), ADMIN))).toContain(
      '"mc" now means Moon Cats',
    );
  });

  it('/watch add moon cats sold THEN kinds said the way people say them are the kinds (sold: sale; listed, burnt)', async () => {
    const chat = freshGroup();
    expect(h.text(await h.run('/watch add moon cats sold', chat, ADMIN))).toContain('sale of Moon Cats (devnet)');
    expect(h.text(await h.run('/watch add moon cats listed,burnt', chat, ADMIN))).toContain(
      'listing, burn of Moon Cats (devnet)',
    );
    expect(h.text(await h.run('/watch add moon cats sole', chat, ADMIN))).toContain('kinds must be one of');
  });

  it('/alias set mc for another collection THEN the answer says what mc meant before', async () => {
    const chat = freshGroup();
    expect(h.text(await h.run('/alias set mc moon cats', chat, ADMIN))).not.toContain('before');
    expect(h.text(await h.run('/alias set mc glitch gardens', chat, ADMIN))).toContain('"mc" now means Glitch Gardens');
    expect(h.text(await h.run('/alias set mc glitch gardens', chat, ADMIN))).not.toContain('before');
    expect(h.text(await h.run('/alias set mc moon cats', chat, ADMIN))).toContain('It meant Glitch Gardens before.');
  });

  it('/alias set devnet-l2 moon cats THEN a network name is refused as an alias', async () => {
    const chat = freshGroup();
    expect(h.text(await h.run('/alias set devnet-l2 moon cats', chat, ADMIN))).toContain(
      '"devnet-l2" is the name of a network; choose another alias.',
    );
    expect(h.store.chat(`${chat.platform}:${chat.id}`).aliases).toEqual({});
  });

  it('/floor collection=harbor gulls THEN the devnet-l2 collection is offered, as for /floor harbor gulls', async () => {
    const answer = await h.run('/floor collection=harbor gulls');
    expect(h.text(answer)).toContain('Harbor Gulls is on devnet-l2, not devnet:');
    expect((await h.run(buttons(answer)[0]?.action ?? '')).title).toBe('Floor of Harbor Gulls');
  });

  it('/floor collection=moon cats 2 THEN the floor of Moon Cats, two listings', async () => {
    const answer = await h.run('/floor collection=moon cats 2');
    expect(answer.title).toBe('Floor of Moon Cats');
    expect(answer.fields).toHaveLength(2);
  });
});

describe('GIVEN a collection whose name ends in a number (Area 51, on a platform stand-in)', () => {
  const AREA_51 = '0x5151515151515151515151515151515151515151';
  const AREA_RUGS = '0x7777777777777777777777777777777777777777';
  let server: RpcTestServer;
  let engine: CommandEngine;
  let store: StateStore;

  function search(request: RecordedRequest) {
    const body = request.body as { filter?: string; chainID?: string };
    const filter = (body.filter ?? '').toLowerCase();
    const contractInfo = [
      { address: AREA_51, name: 'Area 51' },
      { address: AREA_RUGS, name: 'Area Rugs' },
    ]
      .filter((c) => body.chainID === '137' && c.name.toLowerCase().includes(filter))
      .map((c) => ({ chainId: 137, type: 'ERC721', ...c }));
    return reply.json({ tokenMetadata: [], contractInfo });
  }

  beforeAll(async () => {
    server = await RpcTestServer.start();
    server.route('/meta/rpc/Metadata/SearchMetadata', { kind: 'dynamic', make: search });
    server.route(
      '/mk/polygon/rpc/Marketplace/ListCollectibles',
      reply.json({ collectibles: [], page: { page: 0, pageSize: 10, more: false } }),
    );
    store = await StateStore.open(`${h.dataDir}/area-51-state.json`);
    engine = new CommandEngine({
      platform: createTestClient(server),
      store,
      logger: pino({ level: 'silent' }),
      settings: {
        operators: [],
        projectId: undefined,
        allowlistAudience: undefined,
        defaultNetwork: 'polygon',
        version: 'test',
      },
      commands: await loadCommands(COMMANDS_DIR),
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  async function run(line: string): Promise<Reply> {
    const answer = await engine.runLine(line, CONSOLE, ADMIN);
    if (!answer) throw new Error(`not a command: ${line}`);
    return answer;
  }

  it('/floor area 51 THEN 51 is part of the name the platform knows, not an out-of-range count', async () => {
    const answer = await run('/floor area 51');
    expect(renderPlain(answer).text).not.toContain('count must be');
    expect(answer.title).toBe('Floor of Area 51');
  });

  it('/floor area 51 3 THEN the name is Area 51 and the count 3', async () => {
    const before = server.requestsTo('/mk/polygon/rpc/Marketplace/ListCollectibles').length;
    expect((await run('/floor area 51 3')).title).toBe('Floor of Area 51');
    const request = server.requestsTo('/mk/polygon/rpc/Marketplace/ListCollectibles')[before];
    expect(request?.body).toMatchObject({ contractAddress: AREA_51, page: { pageSize: 3 } });
  });

  it('/floor area 50 THEN no collection has that name: the count is refused', async () => {
    expect(renderPlain(await run('/floor area 50')).text).toContain('count must be between 1 and 10; got 50.');
  });
});

describe('GIVEN /alias set with a collection name of several words', () => {
  it('THEN the alias is the first word and the collection the rest', async () => {
    const chat = freshGroup();
    expect(h.text(await h.run('/alias set mc moon cats', chat, ADMIN))).toContain('"mc" now means Moon Cats');
    expect((await h.run('/floor mc count=1', chat, ADMIN)).title).toBe('Floor of Moon Cats');
    expect(h.text(await h.run('/alias set mcr moon cats rescue', chat, ADMIN))).toContain(
      '"mcr" now means Moon Cats Rescue',
    );
  });

  it('THEN free text that is the last option still takes the rest of the line', async () => {
    expect((await h.run('/help watch add')).title).toBe('/watch add');
  });
});

describe('GIVEN /unpublish asking for confirmation', () => {
  it('WHEN the operator presses Cancel THEN the question is replaced by "Cancelled" and nothing is unpublished', async () => {
    const target = h.devnet.collections['devnet-l2']?.at(-1);
    if (!target) throw new Error('no collection on devnet-l2');
    const ask = await h.run(`/unpublish ${target.id}`, GROUP, OPERATOR);
    const cancel = buttons(ask).find((b) => b.label === 'Cancel');
    expect(cancel?.replaces).toBe(true);
    expect(cancel?.action).not.toMatch(/^\/help/);
    const answer = await h.run(cancel?.action ?? '', GROUP, OPERATOR);
    expect(h.text(answer)).toBe(`Cancelled: collection ${target.id} stays published.`);
    expect(answer.tone).not.toBe('error');
    const { contractInfo } = await h.platform.metadata.searchMetadata({
      filter: target.name,
      network: 'devnet-l2',
      excludeTokenMetadata: true,
    });
    expect(contractInfo.map((c) => c.address.toLowerCase())).toContain(target.address.toLowerCase());
  });
});

describe('GIVEN a name that only another network has', () => {
  it('/floor harbor gulls club THEN the devnet-l2 collection is offered as a button, which runs the command there', async () => {
    const club = collectionNamed(h.devnet, 'Harbor Gulls Club', 'devnet-l2');
    const answer = await h.run('/floor harbor gulls club count=2');
    expect(answer.tone).toBe('warning');
    expect(h.text(answer)).toContain('Harbor Gulls Club is on devnet-l2, not devnet:');
    expect(buttons(answer).map((b) => b.label)).toEqual([
      `Harbor Gulls Club (devnet-l2 ${club.address.slice(0, 6)}…${club.address.slice(-4)})`,
    ]);
    const chosen = await h.run(buttons(answer)[0]?.action ?? '');
    expect(chosen.title).toBe('Floor of Harbor Gulls Club');
    expect(chosen.fields).toHaveLength(2);
  });

  it('/floor harbor THEN every match on the other network is a button', async () => {
    const answer = await h.run('/floor harbor');
    expect(h.text(answer)).toContain('Nothing matches "harbor" on devnet, but 2 collections on other networks do.');
    const labels = buttons(answer).map((b) => b.label);
    expect(labels).toHaveLength(2);
    expect(labels.every((l) => l.includes('(devnet-l2 '))).toBe(true);
  });

  it('/watch add harbor gulls network=devnet THEN the rule is only added, on devnet-l2, once chosen', async () => {
    const chat = freshGroup();
    const answer = await h.run('/watch add harbor gulls network=devnet listing', chat, ADMIN);
    expect(h.text(answer)).toContain('Harbor Gulls is on devnet-l2, not devnet:');
    expect(h.store.rules.filter((r) => r.destination.chatId === chat.id)).toHaveLength(0);
    const action = buttons(answer)[0]?.action ?? '';
    expect(action).not.toContain('network=devnet');
    expect(h.text(await h.run(action, chat, ADMIN))).toContain('listing of Harbor Gulls (devnet-l2)');
  });

  it('a name no network has is still "No collection matches"', async () => {
    expect(h.text(await h.run('/floor zzz nothing here'))).toContain(
      'No collection matches "zzz nothing here" on devnet.',
    );
  });
});

describe('GIVEN /search and names on several networks', () => {
  it('/search gull THEN the devnet-l2 collections are found, said to be elsewhere, with buttons that work', async () => {
    const answer = await h.run('/search gull');
    const text = h.text(answer);
    expect(text).toContain('Nothing on devnet matches; these are on other networks.');
    expect(text).toContain('Collections on devnet-l2 (2)');
    expect(text).toContain('Harbor Gulls Club');
    const floor = buttons(answer).find((b) => b.label === 'Floor of Harbor Gulls (devnet-l2)');
    expect(floor?.action).toMatch(/^\/floor collection=devnet-l2:0x[0-9a-f]{40}$/);
    expect((await h.run(floor?.action ?? '')).title).toBe('Floor of Harbor Gulls');
  });

  it('/search moon THEN the chat network’s matches come first', async () => {
    const fields = (await h.run('/search moon')).fields?.map((f) => f.name) ?? [];
    expect(fields[0]).toMatch(/^Collections on devnet \(/);
  });

  it('/search moon THEN a token list cut short says so, and each token names its collection', async () => {
    const tokens = (await h.run('/search moon')).fields?.find((f) => f.name.startsWith('Tokens on devnet'));
    expect(tokens?.name).toMatch(/^Tokens on devnet \(first 8 of \d+ found\)$/);
    const lines = plain(tokens?.value ?? '').split('\n');
    expect(lines).toHaveLength(8);
    for (const line of lines) expect(line).toMatch(/ · #\d+ · Moon Cats( Rescue)?$/);
  });

  it.each(['/search devnet-l2:harbor', '/search harbor network=devnet-l2'])(
    '%s THEN only that network is searched',
    async (line) => {
      const answer = await h.run(line);
      expect(answer.title).toBe('Search: harbor');
      expect(h.text(answer)).toContain('Collections (2)');
      expect(answer.footer).toBe('devnet-l2');
    },
  );

  it('/search with words nothing has THEN it says no network has them', async () => {
    expect(h.text(await h.run('/search zzz nothing here'))).toContain('Nothing on any network matches.');
  });

  it('/floor devnet-l2:harbor THEN each candidate is a button that runs the floor of that collection', async () => {
    const answer = await h.run('/floor devnet-l2:harbor');
    expect(buttons(answer)).toHaveLength(2);
    for (const button of buttons(answer)) {
      expect(button.action).toMatch(/^\/floor collection=devnet-l2:0x[0-9a-f]{40}$/);
      expect((await h.run(button.action ?? '')).title).toMatch(/^Floor of Harbor Gulls/);
    }
    const rule = await h.run('/watch add devnet-l2:harbor sales', freshGroup(), ADMIN);
    expect(buttons(rule)[0]?.action).toMatch(/^\/watch add collection=devnet-l2:0x[0-9a-f]{40} sales$/);
  });

  it('/floor devnet-l2:harbor gulls THEN the name is looked up on that network', async () => {
    expect((await h.run('/floor devnet-l2:harbor gulls 2')).title).toBe('Floor of Harbor Gulls');
    const rule = await h.run('/watch add devnet-l2:harbor gulls sale', freshGroup(), ADMIN);
    expect(h.text(rule)).toContain('sale of Harbor Gulls (devnet-l2)');
  });
});

describe('GIVEN a role to mention', () => {
  it('on Telegram THEN the rule is refused: Telegram has no roles', async () => {
    const chat = freshGroup();
    const answer = await h.run('/watch add moon cats sale mention=112233445566778899', chat, ADMIN);
    expect(h.text(answer)).toBe(
      'mention= (a role to ping) works on Discord only: this chat has nothing to pick it from.',
    );
    expect(await h.store.rulesOf(`telegram:${chat.id}`)).toHaveLength(0);
  });
});

describe('GIVEN a person without the permission a command needs', () => {
  const DISCORD: ChatRef = { platform: 'discord', id: '4242', guildId: '77', kind: 'group' };

  it('THEN on Telegram the answer says a group administrator may', async () => {
    expect(h.text(await h.run('/watch add moon cats', freshGroup(), MEMBER))).toBe(
      '/watch add needs a chat admin (Telegram: group administrator).',
    );
  });

  it('THEN on Discord it names the configured permission', async () => {
    expect(h.text(await h.run('/alias set mc moon cats', DISCORD, MEMBER))).toBe(
      '/alias set needs a chat admin (Discord: Manage Server permission).',
    );
    const channels = new CommandEngine({
      platform: h.platform,
      store: h.store,
      logger: pino({ level: 'silent' }),
      settings: {
        operators: [],
        projectId: undefined,
        allowlistAudience: undefined,
        defaultNetwork: 'devnet',
        version: 'test',
        discordManagePermission: 'ManageChannels',
      },
      commands: h.engine.commands,
    });
    const answer = await channels.runLine('/watch add moon cats', DISCORD, MEMBER);
    expect(renderPlain(answer ?? {}).text).toBe('/watch add needs a chat admin (Discord: Manage Channels permission).');
  });

  it('THEN operator commands say only the operators may run them', async () => {
    expect(h.text(await h.run('/project contracts', GROUP, ADMIN))).toBe("Only the bot's operators may run /project.");
    expect(h.text(await h.run('/unpublish 1', GROUP, ADMIN))).toBe("Only the bot's operators may run /unpublish.");
  });
});
