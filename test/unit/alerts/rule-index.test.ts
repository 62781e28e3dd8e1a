import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  compareDecimals,
  matchDestinations,
  numberToDecimal,
  passesPrice,
  passesTraits,
  passesTraitsAny,
} from '../../../src/alerts/rule-filters.ts';
import { type MatchingRule, RuleIndex } from '../../../src/alerts/rule-index.ts';
import { ALERT_KINDS, NATIVE_COIN_ADDRESS, type WatchRule } from '../../../src/core/types.ts';
import { ALICE, addr, BOB, CAROL, COLLECTION, chainEvent, OTHER_COLLECTION, rule } from './fixtures.ts';

const event = chainEvent;
/** A currency other than the native coin (the local platform's Devnet Dollar stands in). */
const DUSD = '0x00000000000000000000000000000000000d05d0';

/** A rule as the index gives it back: what matching reads of it, its collection lower-case. */
function matching(r: WatchRule): MatchingRule {
  const { createdBy: _by, createdAt: _at, paused: _paused, ...rest } = r;
  return { ...rest, collection: r.collection.toLowerCase(), kinds: ALERT_KINDS.filter((k) => r.kinds.includes(k)) };
}

function ids(rules: ReadonlyArray<{ id: string }>): string[] {
  return rules.map((r) => r.id).sort();
}

describe('RuleIndex.candidates', () => {
  it('matches on kinds', () => {
    const sales = rule({ kinds: ['sale'] });
    const listings = rule({ kinds: ['listing', 'offer'] });
    const index = new RuleIndex([sales, listings]);
    expect(ids(index.candidates(event({ kind: 'sale' })))).toEqual([sales.id]);
    expect(ids(index.candidates(event({ kind: 'offer' })))).toEqual([listings.id]);
    expect(index.candidates(event({ kind: 'mint' }))).toEqual([]);
  });

  it('matches token id filters, with canonical decimals', () => {
    const some = rule({ tokenIds: ['007', '8'] });
    const index = new RuleIndex([some]);
    expect(index.candidates(event({ tokens: [{ tokenId: '7', amount: '1' }] }))).toEqual([matching(some)]);
    expect(index.candidates(event({ tokens: [{ tokenId: '9', amount: '1' }] }))).toEqual([]);
    expect(index.candidates(event({ tokens: [] }))).toEqual([]);
  });

  it('matches wallet filters on any side: seller, buyer or another party', () => {
    const seller = rule({ wallets: [ALICE] });
    const buyer = rule({ wallets: [BOB.toUpperCase().replace('0X', '0x')] });
    const party = rule({ wallets: [CAROL] });
    const index = new RuleIndex([seller, buyer, party]);
    expect(ids(index.candidates(event()))).toEqual(ids([seller, buyer]));
    expect(ids(index.candidates(event({ accounts: [ALICE, BOB, CAROL] })))).toEqual(ids([seller, buyer, party]));
    expect(index.candidates(event({ from: CAROL, to: CAROL, accounts: [] }))).toEqual([matching(party)]);
  });

  it('leaves out a rule when the event involves a wallet it ignores, on any side, whatever its other filters', () => {
    const plain = rule({ ignoreWallets: [CAROL.toUpperCase().replace('0X', '0x')] });
    const byToken = rule({ tokenIds: ['1'], ignoreWallets: [ALICE] });
    const other = rule();
    const index = new RuleIndex([plain, byToken, other]);
    expect(ids(index.candidates(event()))).toEqual(ids([plain, other]));
    expect(ids(index.candidates(event({ accounts: [ALICE, BOB, CAROL] })))).toEqual(ids([other]));
    expect(ids(index.candidates(event({ from: BOB, to: CAROL, accounts: [] })))).toEqual(ids([byToken, other]));
    // Once the ignoring rules are gone, lookups skip the check; a paused one is not counted.
    index.remove(plain.id);
    index.add({ ...byToken, paused: true });
    expect(index.candidates(event({ accounts: [ALICE, CAROL] }))).toEqual([matching(other)]);
    index.add({ ...byToken, paused: false });
    expect(index.candidates(event({ accounts: [ALICE, CAROL] }))).toEqual([matching(other)]);
    expect(ids(index.candidates(event({ from: BOB, to: CAROL, accounts: [BOB, CAROL] })))).toEqual(
      ids([byToken, other]),
    );
  });

  it('checks the wallet of a rule that filters on tokens and wallets', () => {
    const both = rule({ tokenIds: ['1'], wallets: [CAROL] });
    const index = new RuleIndex([both]);
    expect(index.candidates(event())).toEqual([]);
    expect(index.candidates(event({ accounts: [ALICE, CAROL] }))).toEqual([matching(both)]);
    expect(index.candidates(event({ accounts: [CAROL], tokens: [{ tokenId: '2', amount: '1' }] }))).toEqual([]);
  });

  it('returns each rule once, however many tokens and wallets match it', () => {
    const tokens = rule({ tokenIds: ['1', '2', '3'] });
    const wallets = rule({ wallets: [ALICE, BOB] });
    const plain = rule({ kinds: ['sale', 'sale'] });
    const index = new RuleIndex([tokens, wallets, plain]);
    const sweep = event({
      tokens: ['1', '2', '3'].map((tokenId) => ({ tokenId, amount: '1' })),
      accounts: [ALICE, BOB, ALICE],
    });
    expect(ids(index.candidates(sweep))).toEqual(ids([tokens, wallets, plain]));
  });

  it('never matches paused rules, and matches them again when resumed', () => {
    const paused = rule({ paused: true });
    const index = new RuleIndex([paused]);
    expect(index.size).toBe(0);
    expect(index.candidates(event())).toEqual([]);
    expect(index.networks()).toEqual([]);
    const resumed = { ...paused, paused: false };
    index.add(resumed);
    expect(index.size).toBe(1);
    expect(index.candidates(event())).toEqual([matching(resumed)]);
    index.add({ ...resumed, paused: true });
    expect(index.candidates(event())).toEqual([]);
    expect(index.size).toBe(0);
    expect(index.get(resumed.id)).toBeUndefined();
  });

  it('keeps networks apart', () => {
    const polygon = rule({ network: 'polygon' });
    const base = rule({ network: 'base' });
    const index = new RuleIndex([polygon, base]);
    expect(index.candidates(event({ network: 'base' }))).toEqual([matching(base)]);
    expect(index.candidates(event({ network: 'arbitrum' }))).toEqual([]);
  });

  it('serves two chats with different rules on the same collection', () => {
    const one = rule({ destination: { platform: 'discord', chatId: 'a' }, kinds: ['sale'] });
    const two = rule({
      destination: { platform: 'telegram', chatId: 'b' },
      kinds: ['sale', 'listing'],
      tokenIds: ['5'],
    });
    const index = new RuleIndex([one, two]);
    expect(index.candidates(event())).toEqual([matching(one)]);
    expect(ids(index.candidates(event({ tokens: [{ tokenId: '5', amount: '1' }] })))).toEqual(ids([one, two]));
    expect(index.candidates(event({ kind: 'listing', tokens: [{ tokenId: '5', amount: '1' }] }))).toEqual([
      matching(two),
    ]);
  });

  it('matches collections case-insensitively', () => {
    const r = rule({ collection: COLLECTION.toUpperCase().replace('0X', '0x') });
    expect(new RuleIndex([r]).candidates(event())).toEqual([matching(r)]);
  });

  it('touches no rule that cannot match: 10,000 others + 1 match -> exactly 1', () => {
    let reads = 0;
    const counted = (r: WatchRule): WatchRule =>
      new Proxy(r, {
        get(target, key, receiver) {
          reads++;
          return Reflect.get(target, key, receiver);
        },
      });
    const others: WatchRule[] = [];
    for (let i = 0; i < 10_000; i++) {
      const bucket = i % 4;
      if (bucket === 0) others.push(counted(rule({ collection: addr(10_000 + i) })));
      else if (bucket === 1) others.push(counted(rule({ tokenIds: [String(100_000 + i)] })));
      else if (bucket === 2) others.push(counted(rule({ wallets: [addr(20_000 + i)] })));
      else others.push(counted(rule({ kinds: ['listing', 'mint', 'transfer'] })));
    }
    const match = rule({ tokenIds: ['1'] });
    const index = new RuleIndex([...others, match]);
    reads = 0;
    expect(index.candidates(event())).toEqual([matching(match)]);
    expect(reads).toBe(0);
  });
});

describe('RuleIndex bookkeeping', () => {
  it('adds, replaces and removes rules, moving the version each time', () => {
    const index = new RuleIndex();
    const r = rule({ tokenIds: ['1'] });
    const v0 = index.version;
    index.add(r);
    expect(index.version).not.toBe(v0);
    expect(index.get(r.id)).toEqual(matching(r));
    const v1 = index.version;
    index.add({ ...r, tokenIds: ['2'] });
    expect(index.version).not.toBe(v1);
    expect(index.size).toBe(1);
    expect(index.candidates(event())).toEqual([]);
    const v2 = index.version;
    expect(index.remove(r.id)).toBe(true);
    expect(index.version).not.toBe(v2);
    const v3 = index.version;
    expect(index.remove(r.id)).toBe(false);
    expect(index.version).toBe(v3);
    expect(index.size).toBe(0);
    expect(index.candidates(event({ tokens: [{ tokenId: '2', amount: '1' }] }))).toEqual([]);
  });

  it('replaces all rules at once', () => {
    const index = new RuleIndex([rule(), rule()]);
    const fresh = rule({ kinds: ['mint'] });
    const v = index.version;
    index.replaceAll([fresh]);
    expect(index.size).toBe(1);
    expect(index.version).not.toBe(v);
    expect(index.candidates(event())).toEqual([]);
    expect(index.candidates(event({ kind: 'mint' }))).toEqual([matching(fresh)]);
  });

  it('lists the watched collections per network, without paused rules', () => {
    const index = new RuleIndex([
      rule({ network: 'polygon', collection: COLLECTION }),
      rule({ network: 'polygon', collection: COLLECTION, kinds: ['mint'] }),
      rule({ network: 'polygon', collection: OTHER_COLLECTION, paused: true }),
      rule({ network: 'base', collection: OTHER_COLLECTION.toUpperCase().replace('0X', '0x') }),
    ]);
    expect(index.networks()).toEqual(['polygon', 'base']);
    expect([...index.collections('polygon')]).toEqual([COLLECTION]);
    expect([...index.collections('base')]).toEqual([OTHER_COLLECTION]);
    expect([...index.collections('arbitrum')]).toEqual([]);
    expect(index.collectionCount('polygon')).toBe(1);
    expect(index.watches('polygon', COLLECTION)).toBe(true);
    expect(index.watches('polygon', OTHER_COLLECTION)).toBe(false);
  });

  it("gives candidates the rule's filters, its chat's one destination object and its collection's first name", () => {
    const destination = { platform: 'telegram' as const, chatId: '-100' };
    const filtered = rule({
      destination,
      kinds: ['listing', 'sale'],
      minPrice: { value: '2', usd: true },
      floorPercent: 80,
      traits: [{ name: 'Fur', value: 'Gold' }],
      mentionRole: '123',
      showRelists: true,
      ignoreWallets: [CAROL],
    });
    const plain = rule({ destination: { ...destination }, collectionName: 'Renamed Cats' });
    const index = new RuleIndex([filtered, plain]);
    const [a, b] = index.candidates(event());
    expect(a).toEqual({ ...matching(filtered), kinds: ['sale', 'listing'] });
    expect(b).toEqual({ ...matching(plain), collectionName: 'Moon Cats' });
    expect(a?.destination).toBe(b?.destination);
    // Removing every rule of a collection and chat frees them: a new rule starts afresh.
    index.remove(filtered.id);
    index.remove(plain.id);
    expect(index.networks()).toEqual([]);
    const later = rule({ destination, collectionName: 'Renamed Cats' });
    index.add(later);
    expect(index.candidates(event())).toEqual([matching(later)]);
  });

  it('refuses ids that are not rule ids', () => {
    expect(() => new RuleIndex([rule({ id: 'x1' })])).toThrow(/not a rule id: x1/);
  });
});

describe('passesPrice', () => {
  it('passes without a minimum', () => {
    expect(passesPrice(rule(), undefined)).toBe(true);
  });

  it('compares the amount in the order currency, exactly', () => {
    const r = rule({ minPrice: { value: '1.5', usd: false, currency: DUSD } });
    const inDusd = (amount: string, usd: number | undefined) => ({ amount, usd, currency: DUSD });
    expect(passesPrice(r, inDusd('1.5', 1))).toBe(true);
    expect(passesPrice(r, inDusd('1.50000', 1))).toBe(true);
    expect(passesPrice(r, inDusd('1.4999999999999999999', 10_000))).toBe(false);
    expect(passesPrice(r, inDusd('12', undefined))).toBe(true);
    expect(passesPrice(r, undefined)).toBe(false);
    expect(passesPrice(r, inDusd('n/a', 5))).toBe(false);
    const tiny = rule({ minPrice: { value: '1.0000000000000000002', usd: false, currency: DUSD } });
    expect(passesPrice(tiny, inDusd('1.0000000000000000001', undefined))).toBe(false);
  });

  it('compares an order in another currency through US dollars, and never by its bare number', () => {
    // 0.1 of the native coin at $2,450 is $245: a 95 DUSD sale ($95) is below it, 300 DUSD above.
    const r = rule({ minPrice: { value: '0.1', usd: false, currency: NATIVE_COIN_ADDRESS } });
    const rates = (currency: string) => (currency === NATIVE_COIN_ADDRESS ? 2_450 : undefined);
    expect(passesPrice(r, { amount: '95', usd: 95, currency: DUSD, usdRate: rates })).toBe(false);
    expect(passesPrice(r, { amount: '300', usd: 300, currency: DUSD, usdRate: rates })).toBe(true);
    expect(passesPrice(r, { amount: '245', usd: 245, currency: DUSD, usdRate: rates })).toBe(true);
    // Without a rate for the rule's currency, or a USD value of the order, nothing to compare: no match.
    expect(passesPrice(r, { amount: '300', usd: 300, currency: DUSD, usdRate: () => undefined })).toBe(false);
    expect(passesPrice(r, { amount: '300', usd: undefined, currency: DUSD, usdRate: rates })).toBe(false);
    // The rule's own currency compares amounts, whatever the rate.
    expect(passesPrice(r, { amount: '0.1', usd: undefined, currency: NATIVE_COIN_ADDRESS })).toBe(true);
    // A rule stored before units (no currency) is in the native coin.
    const legacy = rule({ minPrice: { value: '0.1', usd: false } });
    expect(passesPrice(legacy, { amount: '95', usd: 95, currency: DUSD, usdRate: rates })).toBe(false);
    expect(passesPrice(legacy, { amount: '0.2', usd: 490, currency: NATIVE_COIN_ADDRESS })).toBe(true);
  });

  it('compares the USD value when the minimum is in dollars', () => {
    const r = rule({ minPrice: { value: '500', usd: true } });
    expect(passesPrice(r, { amount: '0.01', usd: 500 })).toBe(true);
    expect(passesPrice(r, { amount: '1000', usd: 499.99 })).toBe(false);
    expect(passesPrice(r, { amount: '1000', usd: undefined })).toBe(false);
    expect(passesPrice(rule({ minPrice: { value: '0.0000001', usd: true } }), { amount: '0', usd: 1e-7 })).toBe(true);
    expect(passesPrice(rule({ minPrice: { value: 'lots', usd: true } }), { amount: '0', usd: 5000 })).toBe(false);
  });

  it('compares decimal spellings exactly', () => {
    expect(compareDecimals('-0', '0')).toBe(0);
    expect(compareDecimals('.5', '0.50')).toBe(0);
    expect(compareDecimals('3.', '3')).toBe(0);
    expect(compareDecimals('-1.5', '-1.25')).toBe(-1);
    expect(compareDecimals('10', '9.999')).toBe(1);
    expect(compareDecimals('0.1', '0.09')).toBe(1);
    expect(compareDecimals('1e3', '1')).toBeUndefined();
    expect(compareDecimals('', '1')).toBeUndefined();
  });

  it('GIVEN decimals that one float stands for, or beyond the floats THEN they are still ordered exactly', () => {
    expect(compareDecimals('0.30000000000000001', '0.3')).toBe(1);
    expect(compareDecimals('123456789.123456789123456789', '123456789.123456789123456788')).toBe(1);
    const huge = `1${'0'.repeat(400)}`;
    expect(compareDecimals(huge, `${huge.slice(0, -1)}1`)).toBe(-1);
    const tiny = `0.${'0'.repeat(400)}`;
    expect(compareDecimals(`${tiny}2`, `${tiny}1`)).toBe(1);
    expect(compareDecimals(`-${tiny}1`, '0')).toBe(-1);
    // A minimum in dollars just above what a price's float reads as.
    const r = rule({ minPrice: { value: '0.10000000000000001', usd: true } });
    expect(passesPrice(r, { amount: '1', usd: 0.1 })).toBe(false);
    expect(passesPrice(rule({ minPrice: { value: '0.1', usd: true } }), { amount: '1', usd: 0.1 })).toBe(true);
  });

  it('writes numbers as plain decimals', () => {
    expect(numberToDecimal(1.5e-7)).toBe('0.00000015');
    expect(numberToDecimal(1e21)).toBe('1000000000000000000000');
    expect(numberToDecimal(-2.5e22)).toBe('-25000000000000000000000');
    expect(numberToDecimal(12.25)).toBe('12.25');
    expect(numberToDecimal(Number.NaN)).toBeUndefined();
  });

  it('compares decimals like a scaled BigInt reference (property)', () => {
    const decimal = fc
      .record({ units: fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }), scale: fc.integer({ min: 0, max: 24 }) })
      .map(({ units, scale }) => {
        const negative = units < 0n;
        const digits = (negative ? -units : units).toString().padStart(scale + 1, '0');
        const text = scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
        return { units, scale, text: negative ? `-${text}` : text };
      });
    fc.assert(
      fc.property(decimal, decimal, (a, b) => {
        const scale = Math.max(a.scale, b.scale);
        const x = a.units * 10n ** BigInt(scale - a.scale);
        const y = b.units * 10n ** BigInt(scale - b.scale);
        const expected = x < y ? -1 : x > y ? 1 : 0;
        expect(compareDecimals(a.text, b.text)).toBe(expected);
        const r = rule({ minPrice: { value: b.text, usd: false, currency: DUSD } });
        expect(passesPrice(r, { amount: a.text, usd: undefined, currency: DUSD })).toBe(expected >= 0);
      }),
      { numRuns: 500 },
    );
  });
});

describe('passesTraits', () => {
  const traits = [
    { name: 'Background', value: 'Blue' },
    { name: 'Eyes', value: 'Laser' },
    { name: 'Level', value: 3 },
  ];

  it('passes without conditions', () => {
    expect(passesTraits(rule(), [])).toBe(true);
    expect(passesTraitsAny(rule(), [])).toBe(true);
  });

  it('needs every condition, compared case-insensitively', () => {
    expect(passesTraits(rule({ traits: [{ name: 'background', value: 'BLUE' }] }), traits)).toBe(true);
    expect(
      passesTraits(
        rule({
          traits: [
            { name: 'Background', value: 'Blue' },
            { name: 'level', value: '3' },
          ],
        }),
        traits,
      ),
    ).toBe(true);
    expect(
      passesTraits(
        rule({
          traits: [
            { name: 'Background', value: 'Blue' },
            { name: 'Eyes', value: 'Sleepy' },
          ],
        }),
        traits,
      ),
    ).toBe(false);
    expect(passesTraits(rule({ traits: [{ name: 'Hat', value: 'Blue' }] }), traits)).toBe(false);
  });

  it('passes a sweep when one of its tokens passes', () => {
    const r = rule({ traits: [{ name: 'Eyes', value: 'laser' }] });
    expect(passesTraitsAny(r, [[{ name: 'Eyes', value: 'Sleepy' }], traits])).toBe(true);
    expect(passesTraitsAny(r, [[{ name: 'Eyes', value: 'Sleepy' }], []])).toBe(false);
    expect(passesTraitsAny(r, [])).toBe(false);
    expect(passesTraitsAny(r, [undefined, traits])).toBe(true);
    expect(passesTraitsAny(r, [undefined])).toBe(false);
  });
});

describe('matchDestinations', () => {
  it('GIVEN a floor percentage THEN a chat is reached only at or below that share of the floor, per token, and never when either is unknown', () => {
    const snipes = rule({
      destination: { platform: 'discord', chatId: 'snipes' },
      kinds: ['listing'],
      floorPercent: 80,
    });
    const reach = (price: Parameters<typeof matchDestinations>[1]) =>
      matchDestinations([snipes], price, []).map((m) => m.destination.chatId);
    expect(reach({ amount: '1', usd: 800, usdPerToken: 800, floorUsd: 1_000 })).toEqual(['snipes']);
    expect(reach({ amount: '1', usd: 800.01, usdPerToken: 800.01, floorUsd: 1_000 })).toEqual([]);
    expect(reach({ amount: '3', usd: 2_100, usdPerToken: 700, floorUsd: 1_000 })).toEqual(['snipes']); // a sweep: per token
    expect(reach({ amount: '1', usd: 500, usdPerToken: 500, floorUsd: undefined })).toEqual([]);
    expect(reach({ amount: '1', usd: undefined, usdPerToken: undefined, floorUsd: 1_000 })).toEqual([]);
    const unpriced: string[] = [];
    expect(matchDestinations([snipes], undefined, [], (r) => unpriced.push(r.id))).toEqual([]);
    expect(unpriced).toEqual([snipes.id]);
  });

  const chat = (chatId: string, platform: 'discord' | 'telegram' = 'discord') => ({ platform, chatId });
  const price = { amount: '2', usd: 5_000 };

  it('GIVEN several rules of one chat, as separate objects or shared THEN one entry per chat with each role once, in first-match order', () => {
    const rules = [
      rule({ destination: chat('1') }),
      rule({ destination: chat('2'), mentionRole: '222' }),
      rule({ destination: chat('1'), mentionRole: '111' }),
      rule({ destination: chat('1', 'telegram') }),
      rule({ destination: chat('2'), mentionRole: '222' }),
      rule({ destination: chat('1'), mentionRole: '112' }),
    ];
    const expected = [
      { destination: chat('1'), roles: ['111', '112'] },
      { destination: chat('2'), roles: ['222'] },
      { destination: chat('1', 'telegram'), roles: [] },
    ];
    expect(matchDestinations(rules, price, [])).toEqual(expected);
    // As the store holds them: one destination object per chat.
    const objects = new Map<string, { platform: 'discord' | 'telegram'; chatId: string }>();
    const shared = rules.map((r) => {
      const key = `${r.destination.platform}:${r.destination.chatId}`;
      const destination = objects.get(key) ?? {
        ...(r.destination as { platform: 'discord' | 'telegram'; chatId: string }),
      };
      objects.set(key, destination);
      return { ...r, destination };
    });
    expect(matchDestinations(shared, price, [])).toEqual(expected);
  });

  it('GIVEN price and trait conditions THEN a chat is reached only through a rule that passes them, and an unknown price is reported', () => {
    const unpriced: string[] = [];
    const rules = [
      rule({ destination: chat('1'), minPrice: { value: '3', usd: false }, mentionRole: '111' }),
      rule({ destination: chat('1'), traits: [{ name: 'Hat', value: 'Crown' }] }),
      rule({ destination: chat('2'), minPrice: { value: '1000', usd: true } }),
    ];
    expect(matchDestinations(rules, price, [[{ name: 'hat', value: 'crown' }]])).toEqual([
      { destination: chat('1'), roles: [] },
      { destination: chat('2'), roles: [] },
    ]);
    expect(matchDestinations(rules, undefined, [[]], (r) => unpriced.push(r.id))).toEqual([]);
    expect(unpriced).toEqual([rules[0]?.id, rules[2]?.id]);
  });
});

describe('RuleIndex against a plain scan (property)', () => {
  const COLLECTIONS = [COLLECTION, OTHER_COLLECTION, COLLECTION.toUpperCase().replace('0X', '0x')];
  const WALLETS = [ALICE, BOB, CAROL];
  const KINDS = ['sale', 'listing', 'mint'] as const;
  const ruleArb = fc.record({
    id: fc.constantFrom('r1', 'r2', 'r3', 'r4', 'r5', 'r6'),
    network: fc.constantFrom('polygon', 'base'),
    collection: fc.constantFrom(...COLLECTIONS),
    kinds: fc.array(fc.constantFrom(...KINDS), { minLength: 1, maxLength: 3 }),
    tokenIds: fc.option(fc.array(fc.constantFrom('1', '01', '2'), { maxLength: 2 }), { nil: undefined }),
    wallets: fc.option(fc.array(fc.constantFrom(...WALLETS), { maxLength: 2 }), { nil: undefined }),
    ignoreWallets: fc.option(fc.array(fc.constantFrom(...WALLETS), { maxLength: 1 }), { nil: undefined }),
    paused: fc.boolean(),
  });
  const step = fc.oneof(
    ruleArb.map((r) => ({ add: r })),
    fc.constantFrom('r1', 'r2', 'r3', 'r4', 'r5', 'r6').map((id) => ({ remove: id })),
  );
  const events = KINDS.flatMap((kind) =>
    ['polygon', 'base'].flatMap((network) =>
      [COLLECTION, OTHER_COLLECTION].flatMap((collection) =>
        [
          { tokens: [{ tokenId: '1', amount: '1' }], from: ALICE, to: BOB, accounts: [ALICE, BOB] },
          { tokens: [{ tokenId: '2', amount: '1' }], from: CAROL, to: BOB, accounts: [] },
        ].map((rest) => event({ kind, network, collection, ...rest })),
      ),
    ),
  );

  const involves = (wallets: readonly string[] | undefined, e: ReturnType<typeof event>) =>
    (wallets ?? []).some((w) => [...e.accounts, e.from, e.to].includes(w.toLowerCase()));
  const scan = (rules: Iterable<WatchRule>, e: ReturnType<typeof event>) =>
    [...rules]
      .filter(
        (r) =>
          !r.paused &&
          r.network === e.network &&
          r.collection.toLowerCase() === e.collection &&
          r.kinds.includes(e.kind) &&
          (r.tokenIds?.length
            ? e.tokens.some((t) => r.tokenIds?.some((id) => BigInt(id).toString() === t.tokenId)) &&
              (!r.wallets?.length || involves(r.wallets, e))
            : !r.wallets?.length || involves(r.wallets, e)) &&
          !involves(r.ignoreWallets, e),
      )
      .map((r) => r.id)
      .sort();

  it('GIVEN any sequence of adds, replacements and removals THEN candidates and watched collections are what a scan of the rules finds', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 25 }), (steps) => {
        const index = new RuleIndex();
        const held = new Map<string, WatchRule>();
        for (const s of steps) {
          if ('add' in s) {
            const { tokenIds, wallets, ignoreWallets, ...rest } = s.add;
            const r = rule({
              ...rest,
              ...(tokenIds ? { tokenIds } : {}),
              ...(wallets ? { wallets } : {}),
              ...(ignoreWallets ? { ignoreWallets } : {}),
            });
            index.add(r);
            held.set(r.id, r);
          } else {
            // Paused rules are not held: removing one finds nothing.
            const active = held.get(s.remove)?.paused === false;
            held.delete(s.remove);
            expect(index.remove(s.remove)).toBe(active);
          }
          expect(index.size).toBe([...held.values()].filter((r) => !r.paused).length);
          for (const e of events) expect(ids(index.candidates(e))).toEqual(scan(held.values(), e));
          const watched = new Map<string, Set<string>>();
          for (const r of held.values()) {
            if (r.paused) continue;
            const set = watched.get(r.network) ?? new Set<string>();
            set.add(r.collection.toLowerCase());
            watched.set(r.network, set);
          }
          expect(new Map(index.networks().map((n) => [n, new Set(index.collections(n))]))).toEqual(watched);
        }
      }),
      { numRuns: 300 },
    );
  });
});
