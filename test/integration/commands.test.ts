import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CommandEngine } from '../../src/bot/engine.ts';
import { renderDiscord } from '../../src/chat/discord/render.ts';
import { renderTelegram, TELEGRAM_LIMITS } from '../../src/chat/telegram/render.ts';
import { plain, type Reply } from '../../src/core/reply.ts';
import type { DevnetCollectionInfo } from '../../src/devnet/index.ts';
import { ADMIN, CONSOLE, GROUP, type Harness, MEMBER, OPERATOR, startHarness } from '../helpers/bot-harness.ts';
import { collectionNamed, listedToken } from '../helpers/devnet-data.ts';

let h: Harness;
let moonCats: DevnetCollectionInfo;
let hostile: DevnetCollectionInfo;

function usdValues(reply: Reply): number[] {
  return h
    .text(reply)
    .split('\n')
    .flatMap((line) => [...line.matchAll(/\(\$([\d,]+\.?\d*)\)/g)].map((m) => Number((m[1] ?? '').replace(/,/g, ''))));
}

beforeAll(async () => {
  h = await startHarness();
  moonCats = collectionNamed(h.devnet, 'Moon Cats');
  const found = h.devnet.collections.devnet?.find((c) => c.hostile);
  if (!found) throw new Error('devnet has no hostile collection');
  hostile = found;
});
afterAll(async () => {
  await h?.close();
});

describe('market commands on the local platform', () => {
  it('/help lists every command of the registry', async () => {
    const text = h.text(await h.run('/help'));
    for (const command of h.engine.commands) expect(text).toContain(`/${command.name}`);
  });

  it('/help watch add explains the subcommand and its options; /help watch lists the subcommands', async () => {
    const add = h.text(await h.run('/help watch add'));
    expect(add).toContain("min: Minimum price: 1.5 (the collection's currency), 0.5 DUSD or $500");
    expect(add).toContain('Example: /watch add moon cats');
    const group = h.text(await h.run('/help watch'));
    expect(group).toContain('/watch remove <rule>');
    expect(group).toContain('Type /help watch add for its options.');
  });

  it('every example the help shows runs as written, placeholders aside', async () => {
    const examples = h.engine.commands.flatMap((c) =>
      ('subcommands' in c ? c.subcommands : [c]).flatMap((spec) => (spec.example ? [spec.example] : [])),
    );
    expect(examples.length).toBeGreaterThanOrEqual(15);
    let chats = 0;
    for (const example of examples.filter((e) => !/…|0xYour/.test(e))) {
      chats++;
      const chat = { ...GROUP, id: `-100777${chats}` };
      const reply = await h.run(example, chat, { ...OPERATOR, canManage: true });
      expect(reply.tone, `${example}: ${h.text(reply)}`).not.toBe('error');
    }
  });

  it('/floor names the cheapest listings, cheapest first, as the platform has them', async () => {
    const reply = await h.run('/floor moon cats count=4');
    expect(reply.title).toBe('Floor of Moon Cats');
    expect(reply.fields).toHaveLength(4);
    // Prices carry the currency's symbol, looked up on the platform, never a bare address.
    for (const field of reply.fields ?? [])
      expect(h.text({ lines: [field.value] })).toMatch(/^[\d.]+ (DEV|WDEV|DUSD) \(\$/);
    const prices = usdValues({ ...reply, lines: [] });
    expect(prices).toEqual([...prices].sort((a, b) => a - b));
    const { collectibles } = await h.platform.marketplace.listCollectibles({
      network: 'devnet',
      side: 'listing',
      contractAddress: moonCats.address,
      filter: { includeEmpty: false },
      page: { pageSize: 4 },
    });
    const cheapest = collectibles.map((c) => c.order?.priceUSD ?? Number.POSITIVE_INFINITY).sort((a, b) => a - b)[0];
    expect(prices[0]).toBeCloseTo(cheapest ?? 0, 1);
  });

  it('/floor with a trait filter shows only tokens with that trait, and a wrong trait lists the real ones', async () => {
    const filters = await h.platform.metadata.tokenCollectionFilters({
      network: 'devnet',
      contractAddress: moonCats.address,
    });
    const fur = filters.find((f) => f.name === 'Fur');
    const value = String(fur?.values[0]);
    const reply = await h.run(`/floor moon cats fur="${value}"`);
    expect(reply.title).toContain(`Fur=${value}`);
    const first = reply.fields?.[0]?.name.match(/#(\d+)/)?.[1];
    if (first) {
      const token = await h.platform.marketplace.getCollectible({
        network: 'devnet',
        contractAddress: moonCats.address,
        tokenId: first,
      });
      expect(token.attributes.some((a) => a.trait_type === 'Fur' && String(a.value) === value)).toBe(true);
    }
    const wrong = h.text(await h.run('/floor moon cats wings=gold'));
    expect(wrong).toContain('"wings" is not a trait filter of this collection. Traits: ');
    expect(wrong).toContain('Fur');
  });

  it('an ambiguous name offers the candidates, and choosing one runs the command on it', async () => {
    const reply = await h.run('/floor moon');
    expect(reply.title).toBe('Which collection?');
    const labels = reply.buttons?.flat().map((b) => b.label) ?? [];
    expect(labels.some((l) => l.startsWith('Moon Cats ('))).toBe(true);
    expect(labels.some((l) => l.startsWith('Moon Cats Rescue ('))).toBe(true);
    const choice = reply.buttons?.flat().find((b) => b.label.startsWith('Moon Cats Rescue'))?.action ?? '';
    const chosen = await h.run(choice);
    expect(chosen.title).toBe('Floor of Moon Cats Rescue');
  });

  it('/listings pages cheapest first and says when a page is past the end', async () => {
    const tokenId = await listedToken(h.platform, moonCats.address);
    const reply = await h.run(`/listings moon cats ${tokenId}`);
    expect(reply.title).toMatch(/^Listings of /);
    expect(reply.fields?.length).toBeGreaterThan(0);
    const prices = usdValues({ ...reply, lines: [] });
    expect(prices).toEqual([...prices].sort((a, b) => a - b));
    expect(h.text(reply)).toContain('Highest ask:');
    const last = h.text(await h.run(`/listings moon cats ${tokenId} page=20`));
    expect(last).toContain('There is no page 20');
  });

  it('/offers shows the highest offer first and the lowest offer', async () => {
    const { collectibles } = await h.platform.marketplace.listCollectibles({
      network: 'devnet',
      side: 'offer',
      contractAddress: moonCats.address,
      filter: { includeEmpty: false },
      page: { pageSize: 1 },
    });
    const tokenId = collectibles[0]?.metadata.tokenId ?? '1';
    const reply = await h.run(`/offers moon cats ${tokenId}`);
    const prices = usdValues({ ...reply, lines: [] });
    expect(prices.length).toBeGreaterThan(0);
    expect(prices).toEqual([...prices].sort((a, b) => b - a));
    expect(h.text(reply)).toContain('Lowest offer:');
  });

  it('/token shows the image, traits, description and both ends of the book', async () => {
    const tokenId = await listedToken(h.platform, moonCats.address);
    const reply = await h.run(`/token ${moonCats.address} ${tokenId}`);
    expect(reply.image).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
    const names = reply.fields?.map((f) => f.name) ?? [];
    expect(names).toEqual(expect.arrayContaining(['Fur', 'Best listing', 'Best offer']));
    const image = await fetch(reply.image ?? '');
    expect(image.status).toBe(200);
  });

  it('/token on a token that does not exist says so', async () => {
    const text = h.text(await h.run(`/token moon cats 99999999`));
    expect(text).toBe('Token 99999999 does not exist in Moon Cats.');
  });

  it('/search finds collections and tokens', async () => {
    const text = h.text(await h.run('/search rescue'));
    expect(text).toContain('Moon Cats Rescue');
  });

  it('/traits lists the traits and their values', async () => {
    const reply = await h.run('/traits moon cats');
    expect(reply.fields?.map((f) => f.name)).toEqual(expect.arrayContaining(['Fur', 'Eyes']));
  });

  it('/holders ranks holders, and /holdings shows what the top holder has', async () => {
    const holders = await h.run('/holders moon cats count=3');
    const lines = h.text(holders).split('\n');
    expect(lines.filter((l) => /^\d\. 0x/.test(l))).toHaveLength(3);
    const { balances } = await h.platform.indexer.getTokenBalancesByContract({
      network: 'devnet',
      filter: { contractAddresses: [moonCats.address], contractStatus: 'ALL' },
      page: { pageSize: 1 },
    });
    const holder = balances[0]?.accountAddress ?? '';
    const holdings = h.text(await h.run(`/holdings moon cats ${holder}`));
    expect(holdings).toMatch(/\d+ tokens? across \d+ ids?/);
  });

  it('/buy explains the checkout steps and attaches the raw transactions', async () => {
    const tokenId = await listedToken(h.platform, moonCats.address);
    const buyer = '0x1111111111111111111111111111111111111111';
    const reply = await h.run(`/buy moon cats ${tokenId} ${buyer}`);
    expect(reply.title).toMatch(/^Buy /);
    expect(reply.fields?.length).toBeGreaterThan(0);
    const attachment = reply.attachments?.[0];
    expect(attachment?.name).toBe('checkout-steps.json');
    const steps = JSON.parse(new TextDecoder().decode(attachment?.data)) as { steps: unknown[] };
    expect(steps.steps.length).toBe(reply.fields?.length);
  });

  it('/stats shows both analytics series', async () => {
    const reply = await h.run('/stats 7');
    expect(reply.fields?.map((f) => f.name)).toEqual(['Wallets that sent transactions', 'Daily conversion rate']);
    expect(h.text(reply)).toMatch(/latest \d/);
  });

  it('/status says every service is up', async () => {
    const text = h.text(await h.run('/status'));
    for (const service of ['Metadata', 'Marketplace', 'Indexer', 'Builder', 'Relayer', 'Analytics']) {
      expect(text).toContain(`✅ ${service}: up`);
    }
  });
});

describe('chat settings and aliases', () => {
  it('an alias names a collection in later commands, and can be removed', async () => {
    expect(h.text(await h.run(`/alias set cats ${moonCats.address}`))).toContain('"cats" now means Moon Cats');
    expect((await h.run('/floor cats count=1')).title).toBe('Floor of Moon Cats');
    expect(h.text(await h.run('/alias list'))).toContain('cats → Moon Cats');
    await h.run('/alias remove cats');
    // Without the alias, "cats" is a name again, and two collections have it.
    expect((await h.run('/floor cats')).title).toBe('Which collection?');
  });

  it('a default collection lets /floor go without one', async () => {
    expect(h.text(await h.run('/settings collection="moon cats rescue"'))).toContain(
      'Default collection is now Moon Cats Rescue',
    );
    expect((await h.run('/floor count=1')).title).toBe('Floor of Moon Cats Rescue');
    expect(h.text(await h.run('/settings collection=none'))).toContain('Default collection cleared');
  });

  it('a member of a group may read settings but not change them', async () => {
    expect(h.text(await h.run('/settings', GROUP, MEMBER))).toContain('Chat settings');
    expect(h.text(await h.run('/settings network=devnet-l2', GROUP, MEMBER))).toContain(
      'needs a chat admin (Telegram: group administrator).',
    );
    expect(h.text(await h.run('/settings network=devnet-l2', GROUP, ADMIN))).toContain(
      'Default network is now devnet-l2',
    );
  });
});

describe('project commands', () => {
  it('operators see contracts, sources, sponsors and audiences', async () => {
    expect(h.text(await h.run('/project contracts', GROUP, OPERATOR))).toContain('Contracts of project');
    expect(h.text(await h.run('/project sources', GROUP, OPERATOR))).toMatch(/audited/);
    expect(h.text(await h.run('/project sponsors network=devnet', GROUP, OPERATOR))).toMatch(
      /\d+ active, \d+ inactive/,
    );
    expect(h.text(await h.run('/project audience 1', GROUP, OPERATOR))).toContain('Contacts:');
  });

  it('others are refused, even chat admins', async () => {
    expect(h.text(await h.run('/project contracts', GROUP, ADMIN))).toBe("Only the bot's operators may run /project.");
  });

  it('/allowlist tells whether a wallet is on the allowlist audience', async () => {
    const { contacts } = await h.platform.builder.getAudience({ audienceId: 1 });
    const member = contacts[0]?.address ?? '';
    expect((await h.run(`/allowlist ${member}`, GROUP, MEMBER)).title).toBe('On the allowlist');
    expect((await h.run('/allowlist 0x000000000000000000000000000000000000dEaD', GROUP, MEMBER)).title).toBe(
      'Not on the allowlist',
    );
  });

  it('/unpublish asks for confirmation, then unpublishes', async () => {
    // A collection no other test uses: unpublishing hides it from search.
    const target = h.devnet.collections['devnet-l2']?.at(-1);
    if (!target) throw new Error('no collection on devnet-l2');
    const first = await h.run(`/unpublish ${target.id}`, GROUP, OPERATOR);
    expect(first.title).toMatch(new RegExp(`^Unpublish collection ${target.id} of project \\d+\\?$`));
    const confirm = first.buttons?.[0]?.[0]?.action ?? '';
    expect(confirm).toMatch(/confirm=[0-9a-f]{8}/);
    expect(h.text(await h.run(confirm, GROUP, ADMIN))).toBe("Only the bot's operators may run /unpublish.");
    const done = await h.run(confirm, GROUP, OPERATOR);
    expect(done.title).toBe('Collection unpublished');
    const wrong = h.text(await h.run(`/unpublish ${target.id} confirm`, GROUP, OPERATOR));
    expect(wrong).toContain(`"confirm" is not your confirmation code for collection ${target.id}.`);
    // The prompt shows the command to type, with the person's own code: typed, it unpublishes too.
    const typed = /\/unpublish \d+ confirm=[0-9a-f]{8}/.exec(wrong)?.[0] ?? '';
    expect(typed).toBe(`/unpublish ${target.id} ${/confirm=[0-9a-f]{8}/.exec(confirm)?.[0]}`);
    expect((await h.run(typed, GROUP, OPERATOR)).title).toBe('Collection unpublished');
  });
});

describe('/traits suggests a /floor line that runs as shown', () => {
  it('GIVEN every collection of both networks, asked about from a devnet chat THEN the suggested filter line answers with a floor', async () => {
    let suggested = 0;
    for (const [network, collections] of Object.entries(h.devnet.collections)) {
      for (const collection of collections) {
        const traits = await h.run(`/traits ${network}:${collection.address}`);
        if (traits.tone === 'error') continue;
        const hint = /Filter the floor by a trait: (.*)$/m.exec(h.text(traits))?.[1];
        if (hint === undefined) continue;
        suggested++;
        if (network !== 'devnet') expect(hint).toContain(`${network}:`);
        const floor = await h.run(hint);
        expect(floor.tone, `${hint}: ${h.text(floor)}`).not.toBe('error');
        expect(floor.title).toMatch(/^Floor of /);
      }
    }
    expect(suggested).toBeGreaterThanOrEqual(6);
  });
});

describe('untrusted names show as one plain line', () => {
  it('GIVEN token names with a direction override, zero-width characters or line breaks THEN /token and /search show each as one line without them', async () => {
    const overridden = await h.run('/token render 5');
    expect(overridden.title).toContain('Gremlin evilzero\u200dwidth');
    const broken = await h.run('/token render 11');
    expect(broken.title).toContain('Newlines in the name');
    // In lists too: each token of /search on one line, without the characters.
    for (const [query, shown] of [
      ['evil', 'Gremlin evilzero\u200dwidth'],
      ['newlines', 'Newlines in the name'],
    ]) {
      const found = (await h.run(`/search ${query}`)).fields?.find((f) => f.name.startsWith('Tokens'));
      const lines = plain(found?.value ?? '').split('\n');
      expect(lines.some((line) => line.startsWith(`${shown} · #`))).toBe(true);
      for (const line of lines) expect(line).not.toMatch(/[\u202a-\u202e\u2066-\u2069\u200b]/);
    }
  });
});

describe('bad input gets a clear answer', () => {
  it.each([
    ['/floor no such collection zzz', 'No collection matches "no such collection zzz" on devnet.'],
    ['/holdings moon cats 0x1234', '"0x1234" is not an address: expected 0x followed by 40 hexadecimal characters.'],
    ['/listings moon cats twelve', '"twelve" is not a token id: expected a whole number such as 1234.'],
    [`/token moon cats ${'9'.repeat(150)}`, 'is too large for a token id: they go up to 2^256 − 1.'],
    ['/floor moon cats count=50', 'count must be between 1 and 10; got 50.'],
    ['/frobnicate', 'Unknown command "frobnicate". Type /help for the list.'],
    [
      '/watch',
      '/watch needs one of: add, list, remove, pause, resume, test. Example: /watch add moon cats sale,listing min=0.5 background=aurora',
    ],
    ['/stats 7 extra', 'Too many arguments: "extra" was not expected.'],
    ['/floor "moon cats', 'A quote is not closed: close it'],
    ['/floor mars:0x1', 'Unknown network "mars". Known networks: devnet, devnet-l2.'],
    ['/floor moon cats network=mars', 'Unknown network "mars". Known networks: devnet, devnet-l2.'],
    [
      '/floor mainnet:moon cats',
      'No collection matches "mainnet:moon cats" on devnet, and "mainnet" is not a network of this bot. Known networks: devnet, devnet-l2.',
    ],
    [
      '/watch add moon cats sale tokens=1,2 tokens=3',
      'tokens is given twice ("1,2" and "3"): give it once, with the values separated by commas (tokens=1,2,3).',
    ],
    [
      '/floor moon cats background=aurora background=void',
      'background is given twice ("aurora" and "void"): give it once.',
    ],
    [`/floor ${'gr '.repeat(30)}`, 'Try /search with a word or two of the name, or give the contract address.'],
  ])('%s', async (line, message) => {
    const reply = await h.run(line);
    expect(reply.tone).toBe('error');
    expect(h.text(reply)).toContain(message);
  });

  it('a platform that fails gets a specific answer, and commands work again after', async () => {
    h.devnet.setFaults({ operation: 'ListCollectibles', errorRate: 1, errorStatus: 503 });
    try {
      expect(h.text(await h.run('/floor moon cats'))).toBe(
        "The platform's Marketplace service is having trouble (HTTP 503). Try again in a minute.",
      );
      h.devnet.setFaults({ operation: 'ListCollectibles', errorRate: 1 });
      expect(h.text(await h.run('/floor moon cats'))).toBe(
        "The platform's Marketplace service is having trouble (HTTP 500). Try again in a minute.",
      );
      h.devnet.setFaults({ operation: 'ListCollectibles', rateLimitRate: 1, retryAfterSeconds: 30 });
      expect(h.text(await h.run('/floor moon cats'))).toBe(
        'The platform is rate-limiting requests (Marketplace). Try again in 30 s.',
      );
    } finally {
      h.devnet.clearFaults();
    }
    expect((await h.run('/floor moon cats count=1')).title).toBe('Floor of Moon Cats');
  });

  it('a member cannot add a watch rule in a group; an admin can', async () => {
    expect(h.text(await h.run('/watch add moon cats network=devnet', GROUP, MEMBER))).toBe(
      '/watch add needs a chat admin (Telegram: group administrator).',
    );
    expect((await h.run('/watch add moon cats network=devnet', GROUP, ADMIN)).title).toBe('Watching');
  });
});

describe('choices and limits', () => {
  it('candidate buttons of a subcommand keep the subcommand and the other arguments', async () => {
    const reply = await h.run('/watch add moon network=devnet kinds=listing', GROUP, ADMIN);
    const action = reply.buttons?.flat().find((b) => b.label.startsWith('Moon Cats ('))?.action ?? '';
    expect(action).toMatch(/^\/watch add collection=devnet:0x[0-9a-f]{40} network=devnet kinds=listing$/);
    const added = await h.run(action, GROUP, ADMIN);
    expect(h.text(added)).toContain('listing of Moon Cats (devnet)');
  });

  it('a person who sends commands too fast is asked to slow down, and others are not', async () => {
    const engine = new CommandEngine({
      platform: h.platform,
      store: h.store,
      logger: pino({ level: 'silent' }),
      settings: {
        operators: [],
        projectId: undefined,
        allowlistAudience: undefined,
        defaultNetwork: 'devnet',
        version: 'test',
      },
      commands: h.engine.commands,
      userLimit: { capacity: 2, refillPerSecond: 0.01 },
    });
    const admissions = Array.from({ length: 4 }, () => engine.admit(GROUP, MEMBER));
    expect(admissions.map((a) => a.status)).toEqual(['ok', 'ok', 'notify', 'silent']);
    const notice = admissions[2]?.status === 'notify' ? admissions[2].reply : {};
    expect(h.text(notice)).toMatch(/^Slow down a little: try again in \d+ s\.$/);
    expect(engine.admit(GROUP, ADMIN).status).toBe('ok');
    // The terminal is the operator's own chat: never limited.
    expect(Array.from({ length: 10 }, () => engine.admit(CONSOLE, ADMIN).status)).toEqual(Array(10).fill('ok'));
  });

  it('GIVEN a watch rule with a wallet whose EIP-55 checksum is wrong THEN the answer names the checksum', async () => {
    const typo = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD';
    const reply = await h.run(`/watch add moon cats network=devnet wallets=${typo}`, GROUP, ADMIN);
    expect(h.text(reply)).toContain(
      `"${typo}" has a wrong checksum (EIP-55): check for a typo, or write it in lower case.`,
    );
    const lower = await h.run(`/watch add moon cats network=devnet wallets=${typo.toLowerCase()}`, GROUP, ADMIN);
    expect(lower.tone).not.toBe('error');
  });
});

describe('untrusted metadata', () => {
  it('renders safely and within limits on every platform', async () => {
    const { collectibles } = await h.platform.marketplace.listCollectibles({
      network: 'devnet',
      side: 'listing',
      contractAddress: hostile.address,
      filter: { includeEmpty: true },
      page: { pageSize: 5 },
    });
    expect(collectibles.length).toBeGreaterThan(0);
    for (const item of collectibles) {
      const reply = await h.run(`/token ${hostile.address} ${item.metadata.tokenId}`);
      const plain = h.text(reply);
      expect(plain.length).toBeLessThan(6_000);
      const telegram = renderTelegram(reply);
      expect(telegram.html.length).toBeLessThanOrEqual(
        telegram.photo ? TELEGRAM_LIMITS.caption : TELEGRAM_LIMITS.message,
      );
      for (const tag of telegram.html.match(/<[^>]*>/g) ?? [])
        expect(tag).toMatch(/^<\/?(b|i|code|a( href="https?:[^"]*")?)>$/);
      expect(telegram.html).not.toMatch(/@(everyone|here)/);
      const discord = renderDiscord([reply]);
      expect(discord.allowedMentions.parse).toEqual([]);
      const embed = discord.embeds[0];
      expect(`${embed?.title}${embed?.description}`).not.toMatch(/@(everyone|here)|(?<!\\)<@/);
      if (reply.image) expect(reply.image).toMatch(/^https?:/);
    }
  });
});
