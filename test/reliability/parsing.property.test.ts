import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isGroup } from '../../src/bot/command.ts';
import { parseCommandLine } from '../../src/bot/engine.ts';
import {
  type ArgError,
  type ArgErrorCode,
  type OptionSpec,
  type OptionType,
  type Parsed,
  parseAddress,
  parseAmount,
  parseChoice,
  parseChoiceList,
  parseCollection,
  parseDuration,
  parseInteger,
  parseNetwork,
  parseOption,
  parseText,
  parseTimeOfDay,
  parseTimeZone,
  parseTokenId,
  tokenize,
} from '../../src/bot/options.ts';
import type { Reply } from '../../src/core/reply.ts';
import { ADMIN, CONSOLE, GROUP, type Harness, MEMBER, startHarness } from '../helpers/bot-harness.ts';

/*
 * Issue 9: argument parsing is total. Whatever a user types (any unicode, quotes, `=`, control
 * characters, lone surrogates), the tokenizer and every option parser return a result, never
 * throw, and every error carries a code that user-text.ts knows. The engine, given arbitrary text
 * after each known command, always answers with a Reply within a bound.
 */

/** Every code of ArgErrorCode; `satisfies` keeps this list complete when a code is added. */
const KNOWN_CODES = new Set(
  Object.keys({
    missing: true,
    invalid_address: true,
    bad_checksum: true,
    invalid_token_id: true,
    invalid_number: true,
    out_of_range: true,
    invalid_choice: true,
    invalid_amount: true,
    invalid_percent: true,
    invalid_duration: true,
    invalid_role: true,
    invalid_time: true,
    invalid_time_zone: true,
    unknown_network: true,
    invalid_collection: true,
    too_long: true,
    too_many_arguments: true,
    unknown_option: true,
    invalid_trait: true,
    repeated_option: true,
    one_word: true,
    unbalanced_quotes: true,
  } satisfies Record<ArgErrorCode, true>),
);

const ctx = { networks: ['devnet', 'devnet-l2', 'polygon'] };
const RUNS = { numRuns: 300 };

/** Text as users send it, and as they should not: any code point, binary units, shell-ish words. */
const anyText = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 80 }),
  fc.string({ unit: 'binary', maxLength: 80 }),
  fc.string({
    unit: fc.constantFrom('"', "'", '“', '”', '=', ' ', '\t', '\n', 'a', '0', 'x', '$', '.', '-', ':', '/'),
    maxLength: 40,
  }),
  fc.string({ maxLength: 400 }),
);

function expectResult<T>(result: Parsed<T>): void {
  expect(typeof result.ok).toBe('boolean');
  if (!result.ok) expectKnown(result.error);
}

function expectKnown(error: ArgError): void {
  expect(KNOWN_CODES.has(error.code), `unknown code ${error.code}`).toBe(true);
  // What is echoed back to the user is shortened.
  if (error.input !== undefined) expect(error.input.length).toBeLessThanOrEqual(60);
}

describe('argument parsing never throws (fast-check)', () => {
  it('GIVEN any text THEN tokenize returns words, unbalanced_quotes or repeated_option', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const result = tokenize(text);
        expectResult(result);
        if (result.ok) {
          for (const word of result.value.positional) expect(typeof word).toBe('string');
          for (const [key] of result.value.named) expect(key).toBe(key.trim().toLowerCase());
        } else {
          expect(['unbalanced_quotes', 'repeated_option']).toContain(result.error.code);
        }
      }),
      RUNS,
    );
  });

  it('GIVEN any line THEN parseCommandLine returns a command (with the words it refused, if any) or undefined', () => {
    const line = fc.oneof(
      anyText,
      fc.tuple(fc.constantFrom('/floor', '/watch', '/x@Bot', ' /help', '/'), anyText).map(([c, t]) => `${c} ${t}`),
    );
    fc.assert(
      fc.property(line, (text) => {
        const parsed = parseCommandLine(text);
        if (parsed === undefined) return;
        expect(parsed.command).toMatch(/^[a-z][\w-]{0,31}$/);
        if (parsed.refused) expectKnown(parsed.refused);
      }),
      RUNS,
    );
  });

  it('GIVEN any text THEN each option parser returns a value or a known error code', () => {
    const parsers: Array<(input: string) => Parsed<unknown>> = [
      (s) => parseAddress(s),
      (s) => parseTokenId(s),
      (s) => parseInteger(s, 'count', 1, 100),
      (s) => parseInteger(s, 'n'),
      (s) => parseChoice(s, 'kind', ['sale', 'listing']),
      (s) => parseChoiceList(s, 'kinds', ['sale', 'listing', 'all']),
      (s) => parseNetwork(s, ctx),
      (s) => parseAmount(s),
      (s) => parseDuration(s),
      (s) => parseTimeOfDay(s),
      (s) => parseTimeZone(s),
      (s) => parseCollection(s, ctx),
      (s) => parseText(s, 'text'),
    ];
    const types: OptionType[] = [
      'text',
      'collection',
      'network',
      'tokenId',
      'address',
      'amount',
      'integer',
      'choice',
      'choiceList',
      'duration',
      'timeOfDay',
      'timeZone',
    ];
    const specs: OptionSpec[] = types.map((type) => ({
      name: type,
      type,
      description: type,
      ...(type === 'integer' ? { min: 0, max: 50 } : {}),
      ...(type.startsWith('choice') ? { choices: ['a', 'b'] } : {}),
    }));
    fc.assert(
      fc.property(anyText, (text) => {
        for (const parse of parsers) expectResult(parse(text));
        for (const spec of specs) expectResult(parseOption(spec, text, ctx));
      }),
      RUNS,
    );
  });
});

describe('the engine answers any text after a known command (fast-check, devnet)', () => {
  let h: Harness;
  /** `/watch add`, `/floor`, ...: every command and subcommand of the registry. */
  let prefixes: string[];

  beforeAll(async () => {
    h = await startHarness({ blockIntervalMs: 0 });
    prefixes = h.engine.commands.flatMap((c) =>
      isGroup(c) ? [`/${c.name}`, ...c.subcommands.map((s) => `/${c.name} ${s.name}`)] : [`/${c.name}`],
    );
  });
  afterAll(async () => {
    await h?.close();
  });

  it('GIVEN /<command> <arbitrary text> THEN runLine resolves with a Reply within 10 s, never throws', async () => {
    let answered = 0;
    let errors = 0;
    let slowest = 0;
    const started = Date.now();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...prefixes),
        fc.oneof(
          fc.string({ unit: 'grapheme', maxLength: 60 }),
          fc.string({ unit: 'binary', maxLength: 60 }),
          fc.string({
            unit: fc.constantFrom('"', "'", '=', ' ', 'moon', 'cats', '0x', '1', 'count', '$'),
            maxLength: 12,
          }),
        ),
        fc.constantFrom(CONSOLE, GROUP),
        fc.constantFrom(ADMIN, MEMBER),
        async (prefix, text, chat, actor) => {
          const t0 = Date.now();
          let timer: NodeJS.Timeout | undefined;
          const reply = await Promise.race([
            h.engine.runLine(`${prefix} ${text}`, chat, actor),
            new Promise<'hang'>((resolve) => {
              timer = setTimeout(() => resolve('hang'), 10_000);
            }),
          ]).finally(() => clearTimeout(timer));
          slowest = Math.max(slowest, Date.now() - t0);
          expect(reply, `${prefix} ${JSON.stringify(text)} hung`).not.toBe('hang');
          const answer = reply as Reply | undefined;
          expect(answer, `${prefix} ${JSON.stringify(text)} gave no reply`).toBeDefined();
          expect(typeof answer).toBe('object');
          answered++;
          if (answer?.tone === 'error') {
            errors++;
            // An error names the problem; an unexpected crash would say "Something went wrong".
            expect(h.text(answer), `${prefix} ${JSON.stringify(text)}`).not.toMatch(/Something went wrong/);
          }
        },
      ),
      { numRuns: 100 },
    );
    console.log(
      `parsing property: ${answered} arbitrary command lines over ${prefixes.length} commands answered ` +
        `(${errors} with an error reply, 0 crashes), slowest ${slowest} ms, ${Date.now() - started} ms in all`,
    );
  }, 60_000);
});
