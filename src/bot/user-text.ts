/**
 * The one place where failures become words for the person who typed the command.
 * Each message says what went wrong and what to do; none carries a secret or a stack.
 */

import { INVISIBLE, type Reply, withoutInvisible } from '../core/reply.ts';
import { StoreWriteError } from '../core/store-errors.ts';
import {
  PlatformAbortedError,
  PlatformApiError,
  PlatformBadRecordError,
  PlatformBadResponseError,
  PlatformError,
  PlatformNetworkError,
  PlatformTimeoutError,
  UnknownNetworkError,
} from '../platform/errors.ts';
import type { ChatPlatform, DiscordManagePermission } from './command.ts';
import { type AmbiguousCollectionError, ArgumentError, UserError } from './errors.ts';
import type { ArgError } from './options.ts';

/** Longest echo of user input in a message, in characters, ellipsis included. */
export const MAX_ECHO_CHARS = 60;

/** Longest wait shown as a number; beyond it (or when unreadable) the text says "later". */
export const MAX_SHOWN_WAIT_MS = 60 * 60 * 1000;

/**
 * Something the user typed, as a message may repeat it: each bidirectional or invisible formatting
 * character ({@link INVISIBLE}) shown as its code point (`<U+202E>`), so that it neither reorders the
 * answer nor hides why the input did not match; whitespace and control characters collapsed to one
 * space; cut to {@link MAX_ECHO_CHARS} characters with an ellipsis (never inside a surrogate pair),
 * so that a 10 kB argument yields a short answer. Escaping stays the renderers' job.
 */
export function echo(text: string | number | undefined): string {
  const flat = String(text ?? '')
    .replace(INVISIBLE, (char) => `<U+${(char.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}>`)
    .replace(/[\s\p{Cc}]+/gu, ' ')
    .trim();
  const chars = Array.from(flat);
  return chars.length > MAX_ECHO_CHARS ? `${chars.slice(0, MAX_ECHO_CHARS - 1).join('')}…` : flat;
}

const quote = (text: string | number | undefined): string => `"${echo(text)}"`;

/** "in 30 s" for a wait the platform or a limiter gave; "later" when it is absurd or unreadable. */
function waitText(ms: number): string {
  if (!Number.isFinite(ms) || ms > MAX_SHOWN_WAIT_MS) return 'later';
  return `in ${Math.max(1, Math.ceil(ms / 1000))} s`;
}

export function describeArgError(error: ArgError): string {
  const option = error.option ?? 'argument';
  switch (error.code) {
    case 'missing':
      return `Missing ${option}.`;
    case 'invalid_address':
      return `${quote(error.input)} is not an address: expected 0x followed by 40 hexadecimal characters.`;
    case 'bad_checksum':
      return `${quote(error.input)} has a wrong checksum (EIP-55): check for a typo, or write it in lower case.`;
    case 'invalid_token_id':
      // Only digits (shortened or not): a whole number, too large for uint256.
      return /^\d+…?$/.test(error.input ?? '')
        ? `${quote(error.input)} is too large for a token id: they go up to 2^256 − 1.`
        : `${quote(error.input)} is not a token id: expected a whole number such as 1234.`;
    case 'invalid_number':
      return `${option} must be a whole number; got ${quote(error.input)}.`;
    case 'out_of_range':
      if (error.min !== undefined && error.max !== undefined) {
        return `${option} must be between ${error.min} and ${error.max}; got ${echo(error.input)}.`;
      }
      return error.min !== undefined
        ? `${option} must be at least ${error.min}; got ${echo(error.input)}.`
        : `${option} must be at most ${error.max}; got ${echo(error.input)}.`;
    case 'invalid_choice':
      return `${option} must be one of ${(error.allowed ?? []).join(', ')}; got ${quote(error.input)}.`;
    case 'invalid_amount':
      return `${quote(error.input)} is not a price: use a number such as 1.5, 0.5 DUSD (a currency's symbol) or $500 for US dollars.`;
    case 'invalid_percent':
      return `${quote(error.input)} is not a percentage from 1 to 100: use for example ${option}=80%.`;
    case 'invalid_duration':
      return `${quote(error.input)} is not a duration: use for example 30m, 2h or 1d.`;
    case 'invalid_role':
      return `${quote(error.input)} is not a role: pick one in Discord's list, or give its numeric id.`;
    case 'invalid_time':
      return `${quote(error.input)} is not a time of day: use 24-hour HH:MM such as 09:00, or 9am.`;
    case 'invalid_time_zone':
      if (error.allowed && error.allowed.length > 0) {
        return `${quote(error.input)} is not a time zone the bot reads: an abbreviation does not say when daylight saving starts. Use the place's IANA name, such as ${error.allowed.join(' or ')}.`;
      }
      return `${quote(error.input)} is not a time zone: use an IANA name such as Europe/Paris, America/New_York or UTC.`;
    case 'unknown_network':
      return `Unknown network ${quote(error.input)}. Known networks: ${(error.allowed ?? []).join(', ')}.`;
    case 'invalid_collection':
      return `${quote(error.input)} is not a collection name or address.`;
    case 'too_long':
      return `${option} is too long (at most ${error.max} characters).`;
    case 'too_many_arguments':
      return `Too many arguments: ${quote(error.input)} was not expected.`;
    case 'unknown_option':
      return `Unknown option ${quote(error.input)}.`;
    case 'invalid_trait':
      return error.allowed && error.allowed.length > 0
        ? `${quote(error.input)} is not a trait filter of this collection. Traits: ${error.allowed.join(', ')}.`
        : `${quote(error.input)} is not a trait filter of this collection.`;
    case 'repeated_option': {
      const [first, second] = error.allowed ?? [];
      return `${echo(option)} is given twice (${quote(first)} and ${quote(second)}): give it once${option === 'tokens' || option === 'wallets' || option === 'ignore' ? `, with the values separated by commas (${echo(option)}=1,2,3)` : ''}.`;
    }
    case 'one_word': {
      const words = String(error.input ?? '').split(' ');
      return `${option} is one word; ${quote(error.input)} is ${words.length}. Join them (${echo(words.join('').toLowerCase())}) or pick another.`;
    }
    case 'unbalanced_quotes':
      return 'A quote is not closed: close it ("moon cats") or leave the quotes out.';
  }
}

/**
 * Where a failure is answered, for words that depend on it: the chat's platform, the command as
 * typed (`/watch add`), and the Discord permission that makes a chat admin.
 */
export interface AnswerContext {
  platform?: ChatPlatform | undefined;
  command?: string | undefined;
  discordManage?: DiscordManagePermission | undefined;
}

const DISCORD_PERMISSION_NAMES: Readonly<Record<DiscordManagePermission, string>> = {
  ManageGuild: 'Manage Server',
  ManageChannels: 'Manage Channels',
};

/** Who is a chat admin on the platform of the chat, or on each platform when it is not known. */
function chatAdmin(context: AnswerContext): string {
  const telegram = 'Telegram: group administrator';
  const discord = `Discord: ${DISCORD_PERMISSION_NAMES[context.discordManage ?? 'ManageGuild']} permission`;
  if (context.platform === 'telegram') return telegram;
  if (context.platform === 'discord') return discord;
  return `${telegram}; ${discord}`;
}

function describePermission(error: UserError, context: AnswerContext): string {
  const { needed, command, action } = error.params;
  const what = typeof command === 'string' ? command : context.command;
  if (needed === 'operator') {
    return `Only the bot's operators may ${what ? `run ${what}` : 'do this'}.`;
  }
  const subject = typeof action === 'string' ? action : (what ?? 'This');
  if (needed === 'manageRoles') {
    const who =
      context.platform === 'telegram'
        ? 'a group administrator'
        : context.platform === 'discord'
          ? 'the Manage Roles permission'
          : 'a community: Discord, the Manage Roles permission; Telegram, a group administrator';
    return `${subject} needs ${who}, in the server or group whose roles it changes.`;
  }
  return `${subject} needs a chat admin (${chatAdmin(context)}).`;
}

/**
 * The line above the buttons of {@link AmbiguousCollectionError}: the candidates of a name on
 * this network, or, when it matched nothing here, where it is instead.
 */
export function describeChoice(error: AmbiguousCollectionError): string {
  const only = error.candidates.length === 1 ? error.candidates[0] : undefined;
  if (error.similar) {
    return only
      ? `No collection is called ${quote(error.query)}. Did you mean ${echo(only.name)}?`
      : `No collection is called ${quote(error.query)}. Did you mean one of these?`;
  }
  if (error.searched === undefined) {
    return `${quote(error.query)} matches ${error.candidates.length} collections. Choose one:`;
  }
  if (only) return `${echo(only.name)} is on ${only.network}, not ${error.searched}:`;
  return `Nothing matches ${quote(error.query)} on ${error.searched}, but ${error.candidates.length} collections on other networks do. Choose one:`;
}

/**
 * The answer to a name that needs a choice: the candidates of {@link AmbiguousCollectionError} as
 * buttons, each running its command line (`lines`, one per candidate, in order).
 */
export function choiceReply(error: AmbiguousCollectionError, lines: readonly string[]): Reply {
  return {
    tone: 'warning',
    ephemeral: true,
    title: error.similar ? 'Did you mean?' : error.searched === undefined ? 'Which collection?' : 'On another network',
    lines: [describeChoice(error)],
    buttons: error.candidates.map((c, i) => [
      {
        label: `${c.name} (${c.network} ${c.address.slice(0, 6)}…${c.address.slice(-4)})`,
        action: lines[i] ?? '',
      },
    ]),
  };
}

function describeUserError(error: UserError, context: AnswerContext): string {
  const p = error.params;
  switch (error.code) {
    case 'unknown_command':
      if (typeof p.suggestions === 'string') {
        const names = p.suggestions.split(' ').map((name) => `/${name}`);
        const last = names.pop();
        return `Unknown command ${quote(p.command)}. Did you mean ${names.length ? `${names.join(', ')} or ${last}` : last}? Type /help for the list.`;
      }
      return `Unknown command ${quote(p.command)}. Type /help for the list.`;
    case 'unknown_subcommand':
      if (typeof p.suggestion === 'string') {
        return `Did you mean /${p.command} ${p.suggestion}? /${p.command} needs one of: ${p.allowed}.`;
      }
      return `/${p.command} needs one of: ${p.allowed}. Example: ${p.example ?? `/${p.command} ${String(p.allowed).split(', ')[0]}`}`;
    case 'unknown_collection': {
      const unmatched = `No collection matches ${quote(p.query)} on ${echo(p.network)}`;
      if (p.prefix !== undefined) {
        return `${unmatched}, and ${quote(p.prefix)} is not a network of this bot. Known networks: ${p.networks}.`;
      }
      // A query too long to quote whole would make the suggested command one that cannot be run.
      const query = withoutInvisible(String(p.query ?? ''));
      const search =
        echo(query) === query.replace(/[\s\p{Cc}]+/gu, ' ').trim()
          ? `/search ${echo(query)}`
          : '/search with a word or two of the name';
      return `${unmatched}. Try ${search}, or give the contract address.`;
    }
    case 'unknown_collection_address':
      return `No collection at ${echo(p.address)} on ${echo(p.network)}. Check the address (another network: network:0x…), or find the collection by name with /search.`;
    case 'role_mention':
      switch (p.reason) {
        case 'everyone':
          return "That is the server's everyone role: a rule cannot ping everyone.";
        case 'unknown_role':
          return `This server has no role ${echo(p.role)}: pick one in Discord's list.`;
        default:
          return `Only members with the permission to mention all roles may ping role ${echo(p.role)}, and you do not have it: a rule cannot ping it for you.`;
      }
    case 'needs_bot_here':
      return `${p.command} is for the bot's operators and runs only where the bot itself is: a server that added the bot, or your DM with it. Here the app is installed to your account only, and acts for you alone.`;
    case 'cannot_post':
      return `I cannot post in this channel: it does not give me ${p.missing}. Ask a server admin to allow it for the bot, then try again.`;
    case 'discord_only':
      return `${p.what} works on Discord only: this chat has nothing to pick it from.`;
    case 'no_collection':
      return 'Which collection? Name one, or set a default with /settings collection=<name or address>.';
    case 'token_not_found':
      return `Token ${echo(p.tokenId)} does not exist in ${p.collection}.`;
    case 'not_found':
      return String(p.what);
    case 'permission':
      return describePermission(error, context);
    case 'rate_limited':
      return `Slow down a little: try again ${typeof p.seconds === 'number' ? waitText(p.seconds * 1000) : 'in a moment'}.`;
    case 'not_configured':
      return String(p.what);
    case 'button_expired':
      return 'This button no longer works. Run the command again.';
  }
}

function serviceOf(error: PlatformError): string {
  return error.operation.split('/')[0] ?? 'platform';
}

function describePlatformError(error: PlatformError): string {
  const service = serviceOf(error);
  if (error instanceof PlatformApiError) {
    if (error.isRateLimited) {
      const wait = error.retryAfterMs === undefined ? 'in a minute' : waitText(error.retryAfterMs);
      return `The platform is rate-limiting requests (${service}). Try again ${wait}.`;
    }
    if (error.isUnauthorized) {
      return `The platform refused the bot's credentials (${error.errorName}). An operator must check FLOORWATCH_ACCESS_KEY and FLOORWATCH_SECRET_TOKEN.`;
    }
    if (error.isPermissionDenied) {
      return `The platform denied this request (${error.errorName}): the bot's key is not allowed to do it.`;
    }
    if (error.status >= 500) {
      return `The platform's ${service} service is having trouble (HTTP ${error.status}). Try again in a minute.`;
    }
    if (/NotFound/.test(error.errorName)) return `The platform found nothing for this request: ${error.detail}.`;
    return `The platform rejected the request (${error.errorName}): ${error.detail}.`;
  }
  if (error instanceof PlatformTimeoutError) {
    return `The platform's ${service} service did not answer in time. Try again in a minute.`;
  }
  if (error instanceof PlatformNetworkError) {
    return `The platform's ${service} service cannot be reached right now. Try again in a minute.`;
  }
  if (error instanceof PlatformBadRecordError) {
    const fields = error.fields.length > 0 ? ` (${error.fields.slice(0, 3).join(', ')})` : '';
    return `The platform's ${service} service sent ${error.record} with impossible values${fields}, so the bot did not use it. It was logged for the operators.`;
  }
  if (error instanceof PlatformBadResponseError) {
    if (error.status !== undefined && error.status >= 500) {
      return `The platform's ${service} service is having trouble (HTTP ${error.status}). Try again in a minute.`;
    }
    return `The platform's ${service} service sent an answer the bot cannot read. It was logged for the operators.`;
  }
  if (error instanceof PlatformAbortedError) return 'The request was cancelled.';
  return `The platform's ${service} service failed. Try again in a minute.`;
}

function describeWriteFailure(code: string | undefined): string {
  switch (code) {
    case 'ENOSPC':
    case 'EDQUOT':
      return "the bot's disk is full";
    case 'EFBIG':
      return "the bot's data file reached its size limit";
    case 'EROFS':
    case 'EACCES':
    case 'EPERM':
      return "the bot's data file cannot be written";
    default:
      return `the bot's data file could not be written${code ? ` (${code})` : ''}`;
  }
}

/**
 * `Usage: /floor <collection> [count] [trait=value ...]`. A line that cannot be split into words
 * fails before its command is looked up, so its usage is the bare command name: rather than a usage
 * line that reads as cut short, the answer points to the command's help.
 */
function usageLine(error: ArgumentError): string {
  const bare = /^\/([\w-]+)$/.exec(error.usage);
  if (error.error.code === 'unbalanced_quotes' && bare) return `Type /help ${bare[1]} for how to write it.`;
  return `Usage: ${error.usage}`;
}

/**
 * The answer for a failed command. `reference` ties an unexpected failure to its log line;
 * `context` says where it is answered (a refusal names who may do it there).
 */
export function errorReply(error: unknown, reference: string, context: AnswerContext = {}): Reply {
  let lines: string[];
  if (error instanceof ArgumentError) {
    lines = [describeArgError(error.error), usageLine(error)];
  } else if (error instanceof UserError) {
    lines = [describeUserError(error, context)];
  } else if (error instanceof UnknownNetworkError) {
    lines = [`Unknown network ${quote(error.network)}. Known networks: ${error.known.join(', ')}.`];
  } else if (error instanceof PlatformError) {
    lines = [describePlatformError(error)];
  } else if (error instanceof StoreWriteError) {
    lines = [
      `Your change was not saved: ${describeWriteFailure(error.code)}. Nothing was changed.`,
      `Tell the bot's operator (reference ${reference}).`,
    ];
  } else {
    lines = [`Something went wrong on our side. It was logged with reference ${reference}.`];
  }
  return { tone: 'error', ephemeral: true, lines };
}

/** Whether a failure is the user's or the platform's (expected) rather than a bug of ours. */
export function isExpectedFailure(error: unknown): boolean {
  return (
    error instanceof ArgumentError ||
    error instanceof UserError ||
    error instanceof UnknownNetworkError ||
    error instanceof PlatformError
  );
}
