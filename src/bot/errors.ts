import type { Permission, ResolvedCollection } from './command.ts';
import type { ArgError } from './options.ts';

/** Failures a user can act on; user-text.ts turns each code into words. */
export type UserErrorCode =
  | 'unknown_command'
  | 'unknown_subcommand'
  | 'unknown_collection'
  | 'no_collection'
  | 'token_not_found'
  | 'permission'
  | 'rate_limited'
  | 'not_configured'
  | 'button_expired'
  | 'not_found';

export class UserError extends Error {
  override name = 'UserError';
  readonly code: UserErrorCode;
  readonly params: Readonly<Record<string, string | number | undefined>>;
  constructor(code: UserErrorCode, params: Record<string, string | number | undefined> = {}) {
    super(code);
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

/** A name matched several collections; the user chooses. */
export class AmbiguousCollectionError extends Error {
  override name = 'AmbiguousCollectionError';
  readonly query: string;
  readonly candidates: readonly ResolvedCollection[];
  /** The option that held the name, so a choice can replace it. */
  readonly option: string;
  constructor(query: string, candidates: readonly ResolvedCollection[], option: string) {
    super(`"${query}" matches ${candidates.length} collections`);
    this.query = query;
    this.candidates = candidates;
    this.option = option;
  }
}

export function permissionError(needed: Permission): UserError {
  return new UserError('permission', { needed });
}
