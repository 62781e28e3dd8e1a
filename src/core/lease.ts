/**
 * Leases: every role a process holds (the data directory, a network's ingest, the digests, a chat's
 * claim) is held for a while and renewed every few seconds; one not renewed in time may be taken
 * over by another process. A holder that froze (SIGSTOP, a stalled machine) or was cut off may wake
 * up without its lease: before it records or sends, it checks, and stops.
 */
import type { Destination } from './types.ts';

/** A lease not renewed for this long may be taken over by another process. */
export const LEASE_TTL_MS = 10_000;
/** How often a holder renews its leases. */
export const LEASE_RENEW_MS = 2_000;
/**
 * A holder counts its lease as valid only until this long before it expires (measured from the start
 * of its last successful renewal): room for clocks that run at slightly different rates, and for the
 * time between a check and the act it allows.
 */
export const LEASE_MARGIN_MS = 2_000;

/**
 * A lease of this process is no longer surely its own: it was not renewed in time, or another process
 * took it. Whatever it guarded must not be recorded or sent by this process any more: the process
 * stops at once (exit 75, EX_TEMPFAIL), so that a supervisor starts it again.
 */
export class LeaseLostError extends Error {
  override name = 'LeaseLostError';
  /** Which lease, e.g. `chat:discord:42` or `the data directory data`. */
  readonly lease: string;
  constructor(lease: string, reason: string, options?: { cause?: unknown }) {
    super(`lost the lease on ${lease}: ${reason}`, options);
    this.lease = lease;
  }
}

/**
 * Checked right before a message is sent (synchronously, against the monotonic clock: it costs no
 * round trip): throws {@link LeaseLostError} when this process may no longer send to `destination`.
 */
export interface SendFence {
  assertMaySend(destination: Destination): void;
}
