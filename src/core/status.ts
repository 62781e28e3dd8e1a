/** What /status, /readyz and the metrics show of the alert streams and the delivery log. */

/** Blocks that went by while a stream was down: their events were not seen. */
export interface StreamGap {
  network: string;
  /** First and last block not seen (inclusive). */
  fromBlock: number;
  toBlock: number;
  at: string;
}

/** What /status and /readyz show of one network's streams. */
export interface StreamHealth {
  network: string;
  events: 'idle' | 'connecting' | 'connected' | 'reconnecting' | 'failed';
  receipts: 'idle' | 'connecting' | 'connected' | 'reconnecting' | 'failed';
  contracts: number;
  reconnects: number;
  lastEventAt: string | undefined;
  lastBlock: number | undefined;
  lastError: string | undefined;
  gaps: StreamGap[];
}

/** Why and since when the journal's writes fail; see {@link DeliveryJournal.writeFailure}. */
export interface JournalWriteFailure {
  /** When the first of the failing writes failed (ISO 8601). */
  readonly since: string;
  /** When the last one failed (ISO 8601). */
  readonly at: string;
  /** The system error code of the last failure, e.g. `ENOSPC`, `EFBIG`, `EIO`. */
  readonly code: string | undefined;
  readonly message: string;
  /** Writes that failed since the last one that succeeded. */
  readonly failures: number;
  /** A partial write could not be undone: nothing more is written until a restart repairs the file. */
  readonly broken: boolean;
}

/** Alerts waiting in memory for the journal, for /status, /readyz and metrics. */
export interface JournalBacklog {
  /** Deliveries kept in memory until the journal accepts them. */
  queued: number;
  /** Reorgs kept with them. */
  reorgs: number;
  /**
   * Why the journal does not take writes: its own failure (from a failed write until one succeeds
   * again), or, while alerts still wait, the failure that made them wait.
   */
  failure: JournalWriteFailure | undefined;
}

/** What the alert path counted since start, for /status and metrics. */
export interface AlertCounters {
  /** Event logs received from the indexer streams. */
  logs: number;
  /** Chain events classified from those logs. */
  events: number;
  /** Events that matched at least one watch rule. */
  matched: number;
  /** Listings that repeat one seen within the relist window. */
  relists: number;
  /** Deliveries recorded (one per matched destination). */
  deliveries: number;
  /** Reorganised transactions whose deliveries were marked. */
  reorged: number;
  /** Deliveries dropped unrecorded (the journal could not take them in time). */
  dropped: number;
}
