/**
 * Failures as words (src/bot/user-text.ts), issue 13 items 2 and 8b: whatever a user typed is
 * echoed at most about 60 characters long, on one line, and stays inert in every chat's rendering;
 * a platform wait beyond an hour (or unreadable) reads "later", never a number of seconds.
 */
import { describe, expect, it } from 'vitest';
import { AmbiguousCollectionError, ArgumentError, permissionError, UserError } from '../../../src/bot/errors.ts';
import type { ArgError, ArgErrorCode } from '../../../src/bot/options.ts';
import { describeChoice, echo, errorReply, MAX_ECHO_CHARS } from '../../../src/bot/user-text.ts';
import { renderPlain } from '../../../src/chat/console/render.ts';
import { renderDiscord } from '../../../src/chat/discord/render.ts';
import { renderTelegram } from '../../../src/chat/telegram/render.ts';
import { plain } from '../../../src/core/reply.ts';
import { PlatformApiError, UnknownNetworkError } from '../../../src/platform/errors.ts';

const HUGE = 'x'.repeat(10_000);
/** The cut echo of {@link HUGE}. */
const CUT = `${'x'.repeat(MAX_ECHO_CHARS - 1)}…`;

function text(error: unknown): string {
  return (errorReply(error, 'ref').lines ?? []).map(plain).join('\n');
}

const CODES_WITH_INPUT: ArgErrorCode[] = [
  'invalid_address',
  'bad_checksum',
  'invalid_token_id',
  'invalid_number',
  'out_of_range',
  'invalid_choice',
  'invalid_amount',
  'invalid_percent',
  'invalid_duration',
  'invalid_role',
  'invalid_time',
  'invalid_time_zone',
  'unknown_network',
  'invalid_collection',
  'too_many_arguments',
  'unknown_option',
  'invalid_trait',
];

function rateLimited(retryAfterMs: number | undefined): PlatformApiError {
  return new PlatformApiError('Marketplace/ListListingsForCollectible', 'platform.test', {
    errorName: 'RateLimited',
    code: 1007,
    status: 429,
    detail: 'rate limited',
    retryAfterMs,
  });
}

describe('echo', () => {
  it('GIVEN short input THEN it is kept as typed', () => {
    expect(echo('azuki')).toBe('azuki');
    expect(echo('x'.repeat(MAX_ECHO_CHARS))).toBe('x'.repeat(MAX_ECHO_CHARS));
  });

  it('GIVEN 10 kB of input THEN it is cut to 60 characters, ellipsis included', () => {
    expect(echo(HUGE)).toBe(CUT);
    expect(Array.from(echo(HUGE))).toHaveLength(60);
  });

  it('GIVEN emoji (surrogate pairs) THEN the cut never splits one', () => {
    expect(echo('😀'.repeat(100))).toBe(`${'😀'.repeat(MAX_ECHO_CHARS - 1)}…`);
  });

  it('GIVEN newlines, tabs and control characters THEN they become single spaces', () => {
    expect(echo('a\n\n@everyone\tb\u0000\u0007c\r\n')).toBe('a @everyone b c');
  });
});

describe('bidirectional and invisible characters in an echo', () => {
  const RLO = '\u202e';

  it('GIVEN overrides, embeddings, isolates and marks THEN each shows as its code point and none is left raw', () => {
    expect(echo(`${RLO}moon\u202a \u202b\u202c\u202dcats`)).toBe('<U+202E>moon<U+202A> <U+202B><U+202C><U+202D>cats');
    expect(echo('a\u2066\u2067\u2068\u2069b')).toBe('a<U+2066><U+2067><U+2068><U+2069>b');
    expect(echo('a\u200e\u200f\u061c\u200b\ufeffb')).toBe('a<U+200E><U+200F><U+061C><U+200B><U+FEFF>b');
    // Cut to 60 characters as shown: a flood of overrides is a short answer too.
    const flood = echo(RLO.repeat(1_000));
    expect(Array.from(flood)).toHaveLength(MAX_ECHO_CHARS);
    expect(flood).not.toContain(RLO);
  });

  it('GIVEN joiners inside emoji THEN they are kept', () => {
    expect(echo('👩\u200d💻')).toBe('👩\u200d💻');
  });

  it('GIVEN an unknown collection typed with a right-to-left override THEN the answer shows the override and suggests a search without it', () => {
    const answer = text(new UserError('unknown_collection', { query: `${RLO}moon cats`, network: 'devnet' }));
    expect(answer).toBe(
      'No collection matches "<U+202E>moon cats" on devnet. Try /search moon cats, or give the contract address.',
    );
  });

  it.each(CODES_WITH_INPUT)('GIVEN %s with an override in the input THEN the answer carries none', (code) => {
    const error: ArgError = { code, option: 'x', input: `${RLO}abc`, min: 1, max: 2, allowed: ['a'] };
    const answer = text(new ArgumentError(error, '/x'));
    expect(answer).toContain('<U+202E>abc');
    expect(answer).not.toContain(RLO);
  });
});

describe('a line whose quote is not closed', () => {
  it('GIVEN the usage the tokenizer knows (the bare command) THEN the answer points to its help rather than a usage line cut short', () => {
    const answer = text(new ArgumentError({ code: 'unbalanced_quotes', input: '"moon cats' }, '/floor'));
    expect(answer).toBe(
      'A quote is not closed: close it ("moon cats") or leave the quotes out.\nType /help floor for how to write it.',
    );
  });

  it('GIVEN a full usage THEN it is shown', () => {
    const answer = text(new ArgumentError({ code: 'unbalanced_quotes' }, '/floor <collection> [count]'));
    expect(answer).toContain('Usage: /floor <collection> [count]');
  });
});

describe('a collection address the platform does not know', () => {
  it('GIVEN the answer THEN it names the address and network and what to do, and the error keeps the platform words for the log', () => {
    const cause = new PlatformApiError('Marketplace/ListCollectibles', 'platform.test', {
      errorName: 'NotFound',
      code: 2000,
      status: 400,
      detail: 'contractAddress: no collection 0x11 on devnet',
    });
    const error = new UserError('unknown_collection_address', { address: '0x11', network: 'devnet' }, { cause });
    expect(text(error)).toBe(
      'No collection at 0x11 on devnet. Check the address (another network: network:0x…), or find the collection by name with /search.',
    );
    expect(error.message).toContain('contractAddress: no collection 0x11 on devnet');
    expect(error.cause).toBe(cause);
  });
});

describe('every echo of user input is cut', () => {
  it.each(CODES_WITH_INPUT)('GIVEN %s with 10 kB of input WHEN described THEN the echo is cut', (code) => {
    const error: ArgError = { code, option: 'value', input: HUGE, min: 1, max: 10, allowed: ['a', 'b'] };
    const message = text(new ArgumentError(error, '/cmd <value>'));
    expect(message).toContain(CUT);
    expect(message).not.toContain('x'.repeat(MAX_ECHO_CHARS));
    expect(message.length).toBeLessThan(400);
  });

  it('GIVEN "Too many arguments" with 10 kB of extra arguments WHEN described THEN the answer is short', () => {
    const error = new ArgumentError({ code: 'too_many_arguments', input: HUGE }, '/stats [days]');
    expect(errorReply(error, 'ref').lines).toEqual([
      `Too many arguments: "${CUT}" was not expected.`,
      'Usage: /stats [days]',
    ]);
  });

  it('GIVEN an unknown command of 10 kB WHEN described THEN it is cut', () => {
    expect(text(new UserError('unknown_command', { command: HUGE }))).toBe(
      `Unknown command "${CUT}". Type /help for the list.`,
    );
  });

  it('GIVEN an unknown collection query of 10 kB WHEN described THEN its echo is cut, and no cut command is suggested', () => {
    const message = text(new UserError('unknown_collection', { query: HUGE, network: 'polygon' }));
    expect(message).toBe(
      `No collection matches "${CUT}" on polygon. Try /search with a word or two of the name, or give the contract address.`,
    );
  });

  it('GIVEN a token id of 78 digits WHEN it does not exist THEN it is cut', () => {
    const tokenId = '9'.repeat(78);
    const message = text(new UserError('token_not_found', { tokenId, collection: 'Azuki' }));
    expect(message).toBe(`Token ${'9'.repeat(MAX_ECHO_CHARS - 1)}… does not exist in Azuki.`);
  });

  it('GIVEN an unknown network of 10 kB WHEN described THEN it is cut', () => {
    expect(text(new UnknownNetworkError(HUGE, ['polygon']))).toBe(`Unknown network "${CUT}". Known networks: polygon.`);
  });
});

describe('an echo stays inert in every chat', () => {
  const hostile = '<b>@everyone</b> **bold** [x](https://evil.example) &amp;';

  it('GIVEN markup in the input WHEN rendered for Telegram THEN it is escaped HTML', () => {
    const html = renderTelegram(errorReply(new UserError('unknown_command', { command: hostile }), 'ref')).html;
    expect(html).toContain('&lt;b&gt;@');
    expect(html).toContain('everyone&lt;/b&gt;');
    expect(html).toContain('&amp;amp;');
    expect(html).not.toMatch(/<b>@|<\/b>|<a /);
  });

  it('GIVEN markup in the input WHEN rendered for Discord THEN markdown, mentions and links stay text', () => {
    const message = renderDiscord([errorReply(new UserError('unknown_command', { command: hostile }), 'ref')]);
    const description = message.embeds[0]?.description ?? '';
    expect(description).toContain('\\*\\*bold\\*\\*');
    expect(description).toContain('@\u200beveryone');
    expect(description).toContain('\\[x\\]\\(https');
    expect(message.allowedMentions.parse).toEqual([]);
  });

  it('GIVEN a 10 kB input WHEN rendered for the console THEN the line is short', () => {
    const rendered = renderPlain(errorReply(new UserError('unknown_command', { command: HUGE }), 'ref'));
    expect(JSON.stringify(rendered).length).toBeLessThan(400);
  });
});

describe('waits', () => {
  it.each([
    [30_000, 'in 30 s'],
    [1, 'in 1 s'],
    [3_600_000, 'in 3600 s'],
  ])('GIVEN Retry-After of %d ms WHEN rate limited THEN the text says "Try again %s"', (ms, wait) => {
    expect(text(rateLimited(ms))).toBe(`The platform is rate-limiting requests (Marketplace). Try again ${wait}.`);
  });

  it.each([3_600_001, 251_606_819_987_000, Number.POSITIVE_INFINITY, Number.NaN])(
    'GIVEN Retry-After of %d ms WHEN rate limited THEN the text says "later"',
    (ms) => {
      expect(text(rateLimited(ms))).toBe('The platform is rate-limiting requests (Marketplace). Try again later.');
    },
  );

  it('GIVEN no Retry-After WHEN rate limited THEN the text says "in a minute"', () => {
    expect(text(rateLimited(undefined))).toBe(
      'The platform is rate-limiting requests (Marketplace). Try again in a minute.',
    );
  });

  it('GIVEN the bot own limiter WHEN it asks to wait 5 s THEN the text says so', () => {
    expect(text(new UserError('rate_limited', { seconds: 5 }))).toBe('Slow down a little: try again in 5 s.');
  });
});

describe('refusals name what is needed (issue 15, item 5)', () => {
  const refusal = (error: UserError, context: Parameters<typeof errorReply>[2]) =>
    (errorReply(error, 'ref', context).lines ?? []).map(plain).join('\n');

  it('GIVEN a manage command refused on Telegram THEN a group administrator is named', () => {
    expect(refusal(permissionError('manage', { command: '/watch add' }), { platform: 'telegram' })).toBe(
      '/watch add needs a chat admin (Telegram: group administrator).',
    );
  });

  it('GIVEN Discord THEN the configured permission is named, Manage Server by default', () => {
    const error = permissionError('manage', { command: '/alias set' });
    expect(refusal(error, { platform: 'discord' })).toBe(
      '/alias set needs a chat admin (Discord: Manage Server permission).',
    );
    expect(refusal(error, { platform: 'discord', discordManage: 'ManageChannels' })).toBe(
      '/alias set needs a chat admin (Discord: Manage Channels permission).',
    );
  });

  it('GIVEN no platform THEN both are named; GIVEN an action THEN it is the subject', () => {
    expect(
      refusal(permissionError('manage', { action: "Changing this chat's settings" }), { command: '/settings' }),
    ).toBe(
      "Changing this chat's settings needs a chat admin (Telegram: group administrator; Discord: Manage Server permission).",
    );
  });

  it('GIVEN an operator command THEN only the operators may run it, named by the engine when the command did not say', () => {
    expect(refusal(permissionError('operator', { command: '/project' }), { command: '/project contracts' })).toBe(
      "Only the bot's operators may run /project.",
    );
    expect(refusal(permissionError('operator'), { command: '/unpublish' })).toBe(
      "Only the bot's operators may run /unpublish.",
    );
    expect(refusal(permissionError('operator'), {})).toBe("Only the bot's operators may do this.");
  });
});

describe('choosing a collection (issue 15, item 4)', () => {
  const gulls = { network: 'devnet-l2', address: '0x1111111111111111111111111111111111111111', name: 'Harbor Gulls' };
  const club = { ...gulls, name: 'Harbor Gulls Club' };

  it('GIVEN one match on another network THEN it says where the collection is', () => {
    expect(describeChoice(new AmbiguousCollectionError('harbor gulls', [gulls], 'collection', 'devnet'))).toBe(
      'Harbor Gulls is on devnet-l2, not devnet:',
    );
  });

  it('GIVEN several THEN it says the name matches nothing here but those elsewhere', () => {
    expect(describeChoice(new AmbiguousCollectionError('harbor', [gulls, club], 'collection', 'devnet'))).toBe(
      'Nothing matches "harbor" on devnet, but 2 collections on other networks do. Choose one:',
    );
    expect(describeChoice(new AmbiguousCollectionError(HUGE, [gulls, club], 'collection'))).toBe(
      `"${CUT}" matches 2 collections. Choose one:`,
    );
  });
});
