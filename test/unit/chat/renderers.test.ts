import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DISCORD_LIMITS, escapeMarkdown, renderDiscord } from '../../../src/chat/discord/render.ts';
import { escapeHtml, renderTelegram, TELEGRAM_LIMITS } from '../../../src/chat/telegram/render.ts';
import { inertCommands, oneLine, type Reply, type Rich, sliceUnits, truncate } from '../../../src/core/reply.ts';

const HOSTILE = [
  '**bold** __u__ ||spoiler|| [x](http://evil.example) `code`',
  '<b>html</b><script>alert(1)</script><a href="javascript:1">x</a>',
  '@everyone @here <@123456789012345678> <@&987654321098765432> <#555555555555555555>',
  '&amp; &lt; > " \' \\ \u202e \u0000',
  'x'.repeat(10_000),
];

const text = fc.oneof(
  fc.string({ maxLength: 1_200 }),
  // Emoji are two UTF-16 units: a cut at an odd place must not leave half of one.
  fc.string({ unit: fc.constantFrom('😀', '🐉', 'a', '👩‍👩‍👧', ' '), maxLength: 400 }),
  fc.constantFrom(...HOSTILE),
  fc.string({ unit: 'binary', maxLength: 200 }),
);
const rich: fc.Arbitrary<Rich> = fc.oneof(
  text,
  fc.array(
    fc.oneof(
      text,
      text.map((t) => ({ bold: t })),
      text.map((t) => ({ code: t })),
      fc
        .tuple(text, fc.constantFrom('https://ok.example/a', 'javascript:alert(1)', 'not a url'))
        .map(([t, href]) => ({ link: t, href })),
    ),
    { maxLength: 5 },
  ),
);
const reply: fc.Arbitrary<Reply> = fc.record(
  {
    title: text,
    url: fc.constantFrom('https://ok.example', 'javascript:alert(1)', ''),
    lines: fc.array(rich, { maxLength: 6 }),
    fields: fc.array(fc.record({ name: text, value: rich, inline: fc.boolean() }), { maxLength: 30 }),
    image: fc.constantFrom('https://img.example/1.png', 'data:image/png;base64,AAAA', 'not a url'),
    footer: text,
    buttons: fc.array(fc.array(fc.record({ label: text, action: fc.constant('/floor x') }), { maxLength: 7 }), {
      maxLength: 7,
    }),
  },
  { requiredKeys: [] },
);

/** No half of a surrogate pair (in Unicode mode a whole pair is one code point, never Cs). */
const wellFormed = (text: string): boolean => !/\p{Cs}/u.test(text);

/** Tags the Telegram HTML may contain; anything else would be untrusted markup getting through. */
const ALLOWED_TAG = /^<\/?(b|i|code|a( href="[^"<>]*")?)>$/;

describe('Telegram HTML renderer', () => {
  it('escapes markup and neutralises mentions in untrusted text', () => {
    expect(escapeHtml('<b>@everyone</b> & co')).toBe('&lt;b&gt;@\u2060everyone&lt;/b&gt; &amp; co');
  });

  it('renders hostile metadata as text, within the limits, never an unescaped tag', () => {
    fc.assert(
      fc.property(reply, (r) => {
        const message = renderTelegram(r);
        const limit = message.photo ? TELEGRAM_LIMITS.caption : TELEGRAM_LIMITS.message;
        expect(message.html.length).toBeLessThanOrEqual(limit);
        expect(wellFormed(message.html)).toBe(true);
        for (const row of message.keyboard) for (const button of row) expect(wellFormed(button.text)).toBe(true);
        for (const tag of message.html.match(/<[^>]*>/g) ?? []) expect(tag).toMatch(ALLOWED_TAG);
        expect(message.html).not.toMatch(/@(everyone|here)/);
        expect(message.html).not.toMatch(/href="(?!https?:)/);
        expect(message.keyboard.length).toBeLessThanOrEqual(TELEGRAM_LIMITS.rows);
      }),
      { numRuns: 150 },
    );
  });
});

describe('Discord embed renderer', () => {
  it('escapes markdown and mentions', () => {
    expect(escapeMarkdown('**x** <@123> @everyone')).toBe('\\*\\*x\\*\\* \\<@\u200b123\\> @\u200beveryone');
  });

  it('renders hostile metadata within every limit and pings nobody', () => {
    fc.assert(
      fc.property(fc.array(reply, { minLength: 1, maxLength: 11 }), (replies) => {
        const message = renderDiscord(replies);
        expect(message.allowedMentions).toEqual({ parse: [], roles: [], users: [], repliedUser: false });
        expect(message.embeds.length).toBeLessThanOrEqual(DISCORD_LIMITS.embedsPerMessage);
        let total = 0;
        for (const embed of message.embeds) {
          expect(embed.title?.length ?? 0).toBeLessThanOrEqual(DISCORD_LIMITS.title);
          expect(JSON.stringify(embed)).not.toMatch(
            /\\ud[89ab][0-9a-f]{2}(?!\\ud[c-f])|(?<!\\ud[89ab][0-9a-f]{2})\\ud[c-f]/,
          );
          expect(embed.description?.length ?? 0).toBeLessThanOrEqual(DISCORD_LIMITS.description);
          expect(embed.fields?.length ?? 0).toBeLessThanOrEqual(DISCORD_LIMITS.fields);
          for (const field of embed.fields ?? []) {
            expect(field.name.length).toBeLessThanOrEqual(DISCORD_LIMITS.fieldName);
            expect(field.value.length).toBeLessThanOrEqual(DISCORD_LIMITS.fieldValue);
            expect(field.value).not.toMatch(/@(everyone|here)|(?<!\\)<[@#]/);
          }
          expect(embed.description ?? '').not.toMatch(/@(everyone|here)|(?<!\\)<[@#]/);
          expect(embed.description ?? '').not.toMatch(/\]\((?!https?:)/);
          if (embed.url) expect(embed.url).toMatch(/^https:/);
          total +=
            (embed.title?.length ?? 0) +
            (embed.description?.length ?? 0) +
            (embed.footer?.text.length ?? 0) +
            (embed.fields ?? []).reduce((n, f) => n + f.name.length + f.value.length, 0);
        }
        expect(total).toBeLessThanOrEqual(DISCORD_LIMITS.embedTotal);
        for (const row of message.buttons) expect(row.length).toBeLessThanOrEqual(DISCORD_LIMITS.buttonsPerRow);
        for (const row of message.buttons) for (const button of row) expect(wellFormed(button.label)).toBe(true);
        expect(message.buttons.length).toBeLessThanOrEqual(DISCORD_LIMITS.rows);
      }),
      { numRuns: 80 },
    );
  });

  it('keeps link syntax inert inside code, and never cuts a link in two when the embed budget is tight', () => {
    const code = renderDiscord([{ lines: [[{ code: '](' }]] }]);
    expect(code.embeds[0]?.description).not.toMatch(/\]\((?!https?:)/);
    const link = { link: 'site', href: 'https://ok.example/a-long-path' };
    const tight = renderDiscord([{ title: 'x'.repeat(250), lines: [Array.from({ length: 400 }, () => link)] }]);
    for (const embed of tight.embeds) expect(embed.description ?? '').not.toMatch(/\]\((?!https?:)|\]\(https?:[^)]*$/);
  });

  it('escapes Markdown in titles, which Discord renders', () => {
    const message = renderDiscord([{ title: '**FREE MINT** ||click|| ~~x~~ @everyone: #1 (a-b)' }]);
    expect(message.embeds[0]?.title).toBe(
      '\\*\\*FREE MINT\\*\\* \\|\\|click\\|\\| \\~\\~x\\~\\~ @\u200beveryone: #1 (a-b)',
    );
    const long = renderDiscord([{ title: `${'_'.repeat(200)}x` }]).embeds[0]?.title ?? '';
    expect(long.length).toBeLessThanOrEqual(DISCORD_LIMITS.title);
    expect(long).toMatch(/^(\\_)+…$/);
  });

  it('GIVEN a name or a description with /commands THEN Telegram gets them inert, paths and links untouched', () => {
    const name = oneLine('/watch remove r1 (see /help) a/b https://x.example/c', 200);
    expect(name).toBe('/\u2060watch remove r1 (see /\u2060help) a/b https://x.example/c');
    const html = renderTelegram({ title: name, lines: [inertCommands('Tap /unpublish 5 now')] }).html;
    expect(html).not.toMatch(/(^|[\s(>])\/[A-Za-z]/);
  });

  it('cuts between characters as people see them: a flag pair, a family, a skin tone stay whole', () => {
    expect(truncate('🇫🇷🇫🇷', 5)).toBe('🇫🇷…');
    expect(truncate('🇫🇷🇫🇷', 7)).toBe('🇫🇷…');
    expect(truncate('ab👩‍👩‍👧c', 9)).toBe('ab…');
    expect(truncate('👍🏽👍🏽', 5)).toBe('👍🏽…');
    expect(sliceUnits('e\u0301te\u0301', 4)).toBe('e\u0301t');
  });

  it('cuts names between characters, never inside an emoji', () => {
    const name = `${'a'.repeat(DISCORD_LIMITS.buttonLabel - 2)}🐉🐉`;
    const label = renderDiscord([{ buttons: [[{ label: name, action: '/floor x' }]] }]).buttons[0]?.[0]?.label ?? '';
    expect(label).toBe(`${'a'.repeat(DISCORD_LIMITS.buttonLabel - 2)}…`);
    const telegram = renderTelegram({ buttons: [[{ label: name, action: '/floor x' }]] }).keyboard[0]?.[0]?.text ?? '';
    expect(wellFormed(telegram)).toBe(true);
  });

  it('lets a configured role ping and nothing else', () => {
    const message = renderDiscord([{ title: 'Sold', mentionRoles: ['123456789012'] }]);
    expect(message.content).toBe('<@&123456789012>');
    expect(message.allowedMentions.roles).toEqual(['123456789012']);
  });
});
