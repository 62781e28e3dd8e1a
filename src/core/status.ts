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

/** Counts of events and blocks, per network, for /status and the digests. */
interface CompletenessFigures {
  network: string;
  events: number;
  blocksReadBack: number;
  blocksMissed: number;
}

const plural = (n: number, one: string, many: string) => `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;

/**
 * The record's completeness per network, days added up, for `networks` (those without counts say
 * none) and every network counted: `devnet: 12 events seen, 50 blocks read back, 0 blocks missed`.
 */
export function completenessLines(days: readonly CompletenessFigures[], networks: readonly string[] = []): string[] {
  const sums = new Map<string, CompletenessFigures>();
  for (const network of networks) sums.set(network, { network, events: 0, blocksReadBack: 0, blocksMissed: 0 });
  for (const day of days) {
    const sum = sums.get(day.network) ?? { network: day.network, events: 0, blocksReadBack: 0, blocksMissed: 0 };
    sum.events += day.events;
    sum.blocksReadBack += day.blocksReadBack;
    sum.blocksMissed += day.blocksMissed;
    sums.set(day.network, sum);
  }
  return [...sums.values()]
    .sort((a, b) => a.network.localeCompare(b.network))
    .map(
      (s) =>
        `${s.blocksMissed > 0 ? '⚠️' : '✅'} ${s.network}: ${plural(s.events, 'event', 'events')} seen, ${plural(s.blocksReadBack, 'block', 'blocks')} read back, ${plural(s.blocksMissed, 'block', 'blocks')} missed`,
    );
}
