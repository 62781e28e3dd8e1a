/**
 * A deployment: where the bot keeps what it knows and how it shares the work. Two of them, each
 * assembled in one place: single.ts (files in the data directory, one process) and shared.ts (a
 * PostgreSQL database, any number of processes, each role a lease). Everything above this seam sees
 * the same ports and decisions, whichever runs.
 */
import type { SendFence } from '../core/lease.ts';
import type { MarketHistory } from '../core/market.ts';
import type { CompletenessStore, CursorStore, DeliveryLog, RulesRepository } from '../core/ports.ts';
import type { RoleStore } from '../core/roles.ts';
import type { WalletStore } from '../core/wallets.ts';
import type { DeliveryQueue, Dispatcher } from '../delivery/dispatcher.ts';

export interface Deployment {
  readonly mode: 'single' | 'shared';
  /** Where the state is kept, for logs: the data directory, or the database without its password. */
  readonly where: string;
  /** Watch rules and chat settings. */
  readonly rules: RulesRepository;
  /** Deliveries, recorded before they are sent. */
  readonly deliveries: DeliveryLog;
  /** The bot's own record of sales and floors (commands, digests, alerts' last sales). */
  readonly market: MarketHistory;
  /** Verified wallets and verification links (/verify writes them, the role rules read them). */
  readonly wallets: WalletStore;
  /** Holder role rules, the grants made under them and the full re-check's progress. */
  readonly holderRoles: RoleStore;
  /**
   * How complete the record is per network and UTC day (events seen, blocks read back, blocks
   * missed): written by the process that ingests, read by /status and the digests. Flushed on close.
   */
  readonly completeness: CompletenessStore;
  /** Checked right before each send: this process may still send to the chat (its directory, or the chat's claim). */
  readonly sendFence: SendFence;
  /**
   * Whether a process may start ingesting a network that another process ingested until then: its
   * backfill then reads back from the last cursor, not only the blocks it missed itself.
   */
  readonly takesOverNetworks: boolean;
  /** The networks' block cursors for backfill; opened when first asked (only a bot that backfills reads them). */
  cursors(onWriteError: (error: unknown) => void): Promise<CursorStore>;
  /**
   * The roles this process plays, with its dispatcher: where recorded deliveries go, which networks it
   * ingests, whether it posts the digests. `networks` lists every network the platform has.
   */
  roles(dispatcher: Dispatcher, networks: () => readonly string[]): Roles;
  /** Closes the stores (after the roles and the dispatcher have stopped). */
  close(): Promise<void>;
}

/** What a process does, decided by its deployment: everything here (single), or what its leases say (shared). */
export interface Roles {
  /**
   * Where recorded deliveries go: this process's dispatcher, or the chat claims that decide which
   * process sends each chat's deliveries.
   */
  readonly queue: DeliveryQueue;
  /** Whether this process ingests a network's streams now. */
  ingests(network: string): boolean;
  /** Whether this process posts the digests now. */
  postsDigests(): boolean;
  /**
   * Resumes the deliveries left to send (after the sinks are in place), and takes the roles this
   * process can take; `onIngestChange` hears when it takes the ingestion of a network over.
   */
  start(onIngestChange: () => void): Promise<void>;
  /** Takes the digests when it can (once the schedule runs); `onAcquired` hears when it does. */
  startDigests(onAcquired: () => void): Promise<void>;
  /** Whether this process runs the holder roles' full re-check and sweeps now. */
  checksHolderRoles(): boolean;
  /** Takes the holder roles' checks when it can; `onAcquired` hears when it does. */
  startHolderRoleChecks(onAcquired: () => void): Promise<void>;
  /** Gives the roles back (before the dispatcher and the stores stop). */
  stop(): Promise<void>;
}
