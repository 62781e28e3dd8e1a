/**
 * The stores the bot runs on, as narrow interfaces: what chats set (rules, settings, digests,
 * buttons), what was delivered, and the block cursors of backfill. Each has a file adapter (store/files/:
 * the embedded default) and a PostgreSQL one (store/pg/), which lets several processes share them;
 * both honour them alike. Everything above store/ depends on these, never on an adapter.
 */
import type { DeliveryRecord, JournalStats, ListingFateBody, NewDelivery } from './deliveries.ts';
import type { ChatSettings, DigestSettings, StoredButton } from './settings.ts';
import type { JournalWriteFailure } from './status.ts';
import type { Destination, WatchRule } from './types.ts';

/**
 * A change of watch rules: each changed rule as it is now (`rule` undefined: removed), or `all` when
 * everything may have changed (read them all again with {@link RulesRepository.allRules}).
 */
export type RulesChange =
  | { all: true }
  | { all?: false; rules: ReadonlyArray<{ id: string; rule: WatchRule | undefined }> };

/**
 * Watch rules and chat settings. Settings are read synchronously, from memory; rules are read per chat
 * or page by page, so that an adapter need not hold a million of them (the PostgreSQL one holds none:
 * the rule index of the process that matches events is the only copy in memory). A change resolves
 * once it is durable (and rejects, undone, when it could not be made so). Listeners hear of every
 * durable change, including (with a shared database) those made by other processes.
 */
export interface RulesRepository {
  /** The settings of a chat (a fresh default object when it has none yet). */
  chat(chatKey: string): ChatSettings;
  updateChat(chatKey: string, change: (settings: ChatSettings) => void): Promise<ChatSettings>;
  /** Changes several chats' settings at once. */
  updateChats(changes: ReadonlyArray<readonly [string, (settings: ChatSettings) => void]>): Promise<void>;
  /**
   * The rules of one chat (`platform:chatId`), in creation order. Rule objects are never changed in
   * place (a change replaces the rule).
   */
  rulesOf(chatKey: string): Promise<WatchRule[]>;
  /** Every rule, in creation order, a page at a time (rules of one chat in a page share one destination object). */
  allRules(): AsyncIterable<readonly WatchRule[]>;
  /** Adds a rule with the next id; `undefined` when its destination already has `limit` rules. */
  addRule(rule: Omit<WatchRule, 'id'>, limit: number): Promise<WatchRule | undefined>;
  /** Changes or removes (`change` returns null) a rule; false when there is no such rule. */
  updateRule(id: string, change: (rule: WatchRule) => WatchRule | null): Promise<boolean>;
  onRulesChanged(listener: (change: RulesChange) => void): void;
  onChatsChanged(listener: (chatKey: string) => void): void;
  /** The chats that have a digest, with it. */
  digests(): Array<[string, DigestSettings]>;
  /** A stored button action, unless unknown or expired. */
  button(hash: string): StoredButton | undefined;
  saveButton(hash: string, action: string, now: Date): Promise<void>;
  /** Resolves once every change made so far is durable (or has failed). */
  flush(): Promise<void>;
  /** Durable writes so far, and changes waiting for one. */
  readonly writeStats: { writes: number; pending: number };
}

/** What marking a reorganised transaction did (see {@link DeliveryLog.markReorged}). */
export interface ReorgOutcome {
  /** Deliveries of the transaction the log holds: 0 when none was recorded (nothing to reverse). */
  deliveries: number;
  /** Deliveries not sent yet, dropped now: they are never to be sent. */
  dropped: DeliveryRecord[];
  /**
   * Sent deliveries whose messages must still be edited (again on a repeated call until each is marked
   * edited): the transaction's own, and listing cards it had closed (sold, cancelled), open again.
   */
  edits: DeliveryRecord[];
}

/**
 * A sale or cancel, as it closes the listings whose alerts were recorded: a listing card is closed
 * when one of its orders is among `orderIds`, or (a sale) when one of its tokens is among `tokenIds`
 * and its seller is `seller`. Only cards of `collection` recorded since `since`, in a block up to
 * `blockNumber`, not reorganised away and not closed already are.
 */
export interface ListingClose {
  network: string;
  collection: string;
  orderIds: readonly string[];
  tokenIds: readonly string[];
  seller?: string | undefined;
  blockNumber: number;
  since: Date;
  fate: Extract<ListingFateBody, { state: 'sold' | 'cancelled' }>;
}

/** What must still be done after a restart, in recording order. */
export interface OutstandingDeliveries {
  /** Pending, and sending (possibly sent before a crash): to send, under their keys. */
  sends: DeliveryRecord[];
  /** Sent messages to edit: of reorganised transactions, or of listings whose fate they do not show yet. */
  edits: DeliveryRecord[];
}

/**
 * The record of deliveries: written before a send, updated after it (see store/files/journal.ts for
 * the sending protocol). Every read is asynchronous and sees what every process recorded: the file
 * journal of one process and the shared table of several answer alike. A change resolves with the
 * delivery as recorded; whoever sends keeps that record (the log is not asked again).
 */
export interface DeliveryLog {
  /** Records new deliveries durably; known ids are skipped. Resolves with the new ones. */
  record(deliveries: readonly NewDelivery[]): Promise<DeliveryRecord[]>;
  markSending(id: string, key?: string): Promise<DeliveryRecord>;
  markSent(id: string, messageId: string): Promise<DeliveryRecord>;
  markFailed(id: string, error: string, options?: { final?: boolean }): Promise<DeliveryRecord>;
  /**
   * The sent message was edited: to say its transaction was reorganised away, and (`fateRev`) to show
   * its listing's fate of that revision.
   */
  markEdited(id: string, fateRev?: number): Promise<DeliveryRecord>;
  /**
   * Drops the unsent deliveries of a reorganised transaction; the sent ones come back to be edited, and
   * so do listing cards it had closed (their fate becomes `listed`).
   */
  markReorged(network: string, txnHash: string): Promise<ReorgOutcome>;
  /**
   * Gives the listing cards a sale or cancel closes their fate (see {@link ListingClose}); resolves
   * with those whose sent messages must now be edited. The ones not sent yet are edited once sent.
   */
  markListingsClosed(close: ListingClose): Promise<DeliveryRecord[]>;
  /**
   * Listing cards of `network` recorded since `since` whose listing expired by `now` and that nothing
   * closed: their fate becomes `expired`. Resolves with those whose messages must now be edited.
   */
  markListingsExpired(network: string, now: Date, since: Date): Promise<DeliveryRecord[]>;
  /** The transaction is final: its deliveries may be forgotten sooner. Advisory. */
  markFinal(network: string, txnHash: string): Promise<void>;
  /** The deliveries of a transaction, in recording order. */
  deliveriesOf(network: string, txnHash: string): Promise<DeliveryRecord[]>;
  /** The deliveries sent as one message (a merged burst). */
  sentTogether(destination: Destination, messageId: string): Promise<DeliveryRecord[]>;
  /** The deliveries to a destination recorded since `since`. */
  deliveredTo(destination: Destination, since: Date): Promise<DeliveryRecord[]>;
  /** What must still be sent or edited (after a restart). */
  outstanding(): Promise<OutstandingDeliveries>;
  /** Deliveries kept, by state. */
  counts(): Promise<JournalStats>;
  /** Why this process's writes fail, from the first failure until a write succeeds again. */
  writeFailure(): JournalWriteFailure | undefined;
  close(): Promise<void>;
}

/** The last block of each network whose events were all processed (alerts recorded). */
export interface CursorStore {
  get(network: string): Promise<number | undefined>;
  /** Moves the cursor forward (never back); may be written lazily, see {@link CursorStore.flush}. */
  advance(network: string, block: number): Promise<void>;
  flush(): Promise<void>;
}

/** How complete the bot's record of a network's chain is, over some span. */
export interface CompletenessCounts {
  /** Chain events the bot classified (live from the streams, or read back). */
  events: number;
  /** Blocks read back over the chain's JSON-RPC because the streams did not show them (a restart, a broken stream). */
  blocksReadBack: number;
  /**
   * Blocks whose events the bot did not see and will not: older than the backfill's limit
   * (FLOORWATCH_BACKFILL_MAX_BLOCKS), or lost while a stream was down without a backfill.
   */
  blocksMissed: number;
}

/** One network's counts of one UTC day (`YYYY-MM-DD`, the day the bot counted them). */
export interface CompletenessDay extends CompletenessCounts {
  network: string;
  day: string;
}

/**
 * The record's completeness, counted per network per UTC day by the process that ingests the
 * network and read by /status and the digests of any process. Counting is cheap enough for the
 * alert path: it adds in memory, and the adapter writes what was added every few seconds (and on
 * {@link CompletenessStore.flush}); reads include what is not written yet.
 */
export interface CompletenessStore {
  /** Adds to a network's counts of the UTC day of `at` (default now). Never throws; writes later. */
  add(network: string, counts: Partial<CompletenessCounts>, at?: Date): void;
  /** The counts of the days `fromDay`..`toDay` (inclusive, `YYYY-MM-DD`), per network and day. */
  days(fromDay: string, toDay: string): Promise<CompletenessDay[]>;
  /** Writes what was added so far. */
  flush(): Promise<void>;
}
