import type { ChatRef, Permission, ResolvedCollection } from './command.ts';
import type { ArgError } from './options.ts';

/** Failures a user can act on; user-text.ts turns each code into words. */
export type UserErrorCode =
  | 'unknown_command'
  | 'unknown_subcommand'
  | 'unknown_collection'
  | 'unknown_collection_address'
  | 'no_collection'
  | 'token_not_found'
  | 'permission'
  | 'rate_limited'
  | 'not_configured'
  | 'discord_only'
  | 'role_mention'
  | 'cannot_post'
  | 'needs_bot_here'
  | 'button_expired'
  | 'not_found';

/**
 * A failure the user can act on. Its message is the code, followed by the message of `cause` when
 * one is given: the answer says it in the user's words, the log line (which prints the message)
 * keeps what the platform said.
 */
export class UserError extends Error {
  override name = 'UserError';
  readonly code: UserErrorCode;
  readonly params: Readonly<Record<string, string | number | undefined>>;
  constructor(
    code: UserErrorCode,
    params: Record<string, string | number | undefined> = {},
    options: { cause?: unknown } = {},
  ) {
    super(options.cause instanceof Error ? `${code}: ${options.cause.message}` : code, options);
    this.code = code;
    this.params = params;
  }
}

/** A command argument was malformed. */
export class ArgumentError extends Error {
  override name = 'ArgumentError';
  readonly error: ArgError;
  /** Usage line of the command, for the answer. */
  readonly usage: string;
  constructor(error: ArgError, usage: string) {
    super(error.code);
    this.error = error;
    this.usage = usage;
  }
}

/**
 * A name matched several collections, or none on the network asked but some on other networks;
 * the user chooses (a collection on another network is never taken silently: the network decides
 * what a watch rule follows).
 */
export class AmbiguousCollectionError extends Error {
  override name = 'AmbiguousCollectionError';
  readonly query: string;
  readonly candidates: readonly ResolvedCollection[];
  /** The option that held the name, so a choice can replace it. */
  readonly option: string;
  /** Set when nothing matched on this network and the candidates are on others. */
  readonly searched: string | undefined;
  /**
   * The words of the command as read when the name was looked up, and where the name's words are
   * among them (set by the engine): each choice re-runs the command with the name replaced.
   */
  typed:
    | { positional: readonly string[]; named: ReadonlyMap<string, string>; nameAt?: number; nameLength?: number }
    | undefined;
  /** Set when nothing is called that and the candidates are names close to it ("did you mean"). */
  readonly similar: boolean;
  constructor(
    query: string,
    candidates: readonly ResolvedCollection[],
    option: string,
    searched?: string,
    options: { similar?: boolean } = {},
  ) {
    super(
      options.similar
        ? `"${query}" matches nothing; ${candidates.length} collections have names close to it`
        : searched === undefined
          ? `"${query}" matches ${candidates.length} collections`
          : `"${query}" matches nothing on ${searched} but ${candidates.length} collections on other networks`,
    );
    this.similar = options.similar ?? false;
    this.query = query;
    this.candidates = candidates;
    this.option = option;
    this.searched = searched;
  }
}

/**
 * No collection is called what was typed (code `unknown_collection`). `similar` offers the
 * collections whose names are close to it, for when no other reading of the words explains the
 * miss: it is not thrown itself, as a closer reading (`/holders moon cats 3 extra`) may stand.
 */
export class UnknownCollectionError extends UserError {
  readonly similar: AmbiguousCollectionError | undefined;
  constructor(params: Record<string, string | number | undefined>, similar?: AmbiguousCollectionError) {
    super('unknown_collection', params);
    this.similar = similar;
  }
}

/**
 * A refusal for want of a permission. `command` (`/watch add`) or `action` (a phrase such as
 * "Changing this chat's settings") names what was refused; the engine adds the command when a
 * command's own code throws without saying, and the chat's platform, so that the answer can say
 * who may do it there.
 */
export function permissionError(needed: Permission, what: { command?: string; action?: string } = {}): UserError {
  return new UserError('permission', { needed, command: what.command, action: what.action });
}

/**
 * Refuses what would post to a chat later (a watch rule, a digest) where the bot cannot post: the
 * permissions it lacks are named, so that an admin can grant them.
 */
export function assertBotCanPost(chat: ChatRef): void {
  const missing = chat.botMissing ?? [];
  if (missing.length > 0) {
    throw new UserError('cannot_post', { missing: missing.map((name) => `"${name}"`).join(' and ') });
  }
}
