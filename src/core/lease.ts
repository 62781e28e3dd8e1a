/**
 * Leases: every role a process holds (the data directory, a network's ingest, the digests, a chat's
 * claim) is held for a while and renewed every few seconds; one not renewed in time may be taken
 * over by another process. A holder that froze (SIGSTOP, a laptop asleep) or stalled may wake up
 * without its lease: before it records or sends, it checks. A lease renewed in time is used at once;
 * a late one is first taken again, which works only when its token is still the one in the lease
 * (nobody took it meanwhile); when another process took it, the holder stops.
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
 * A lease of this process was taken by another process (or its holding ended: the connection that
 * renews it closed). Whatever it guarded must not be recorded or sent by this process any more: the
 * process stops at once (exit 75, EX_TEMPFAIL), so that a supervisor starts it again.
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
 * Asked right before a write the lease guards: undefined when the lease is surely this process's
 * (renewed in time: a synchronous look at the monotonic clock, no round trip); when it was not
 * renewed in time (the process was paused or stalled), a promise that takes it again, resolved once
 * its token was found unchanged and renewed, rejected with {@link LeaseLostError} when another
 * process took it. Throws {@link LeaseLostError} once the lease is lost. Nothing may be written
 * before it settles.
 */
export type WriteFence = () => Promise<void> | undefined;

/**
 * Asked right before a message is sent to `destination`, as a {@link WriteFence} is before a write:
 * undefined when this process may send now, a promise while it takes a late lease again (send once
 * it resolves), a throw or a rejection ({@link LeaseLostError}) when it may not send there any more.
 */
export interface SendFence {
  assertMaySend(destination: Destination): Promise<void> | undefined;
}
