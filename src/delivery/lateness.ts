/**
 * Late alerts say when. Whether an alert is late is known only when it goes out (it may wait in its
 * chat's lane, or in the journal over a restart), so the note is added at send time from what the
 * payload recorded ({@link Reply.happened}: the block's time, how the event was read) and what the
 * journal and the dispatcher know of the delivery.
 */
import type { DeliveryRecord } from '../core/deliveries.ts';
import type { Happened, Inline, Reply } from '../core/reply.ts';

/** An alert sent later than this after its block says when the event happened. */
export const LATE_AFTER_MS = 60_000;

/** What the sender knows of one delivery beyond its record. */
export interface SendContext {
  now: number;
  /** When this process started sending: a delivery recorded before waited for it (a restart). */
  startedAt: number;
  /** When this process queued the delivery, if it did. */
  queuedAt: number | undefined;
  /** The chat's time zone (its digest's), for the clock shown where the platform cannot show the reader's. */
  timeZone: string | undefined;
}

const READ_BACK_REASONS: Record<NonNullable<Happened['readBack']>, string> = {
  restart: 'read back after a restart',
  reconnect: 'read back after the stream broke',
};

/** `12 min ago`, `3 h 5 min ago`, `2 days ago`. */
export function agoText(ms: number): string {
  const minutes = Math.max(1, Math.floor(ms / 60_000));
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return minutes % 60 ? `${hours} h ${minutes % 60} min ago` : `${hours} h ago`;
  return `${Math.floor(hours / 24)} days ago`;
}

/**
 * Why a late alert is late, when the bot knows: read back from the chain (the payload says how), or
 * recorded in time and then held: by failed sends, by a restart, or in its chat's lane (the chat's
 * rate limit). Undefined when it does not know (the event reached the bot late: indexer lag).
 */
export function lateReason(happenedAt: number, happened: Happened, record: DeliveryRecord, context: SendContext) {
  if (happened.readBack) return READ_BACK_REASONS[happened.readBack];
  const recordedAt = Date.parse(record.createdAt);
  if (Number.isNaN(recordedAt) || recordedAt - happenedAt > LATE_AFTER_MS) return undefined;
  if (record.lastError !== undefined) return 'held back by failed sends to this chat';
  if (recordedAt < context.startedAt) return 'held over a restart';
  if (context.queuedAt !== undefined && context.queuedAt - happenedAt <= LATE_AFTER_MS)
    return "held back by the chat's rate limit";
  return undefined;
}

/**
 * The reply as it goes out: unchanged when it is on time or does not say when its event happened
 * (digests, payloads recorded before it was kept); otherwise with a first line such as
 * `⏱ 12 min ago (2026-11-28 14:03 UTC), read back after a restart`.
 */
export function withLateness(reply: Reply, record: DeliveryRecord, context: SendContext): Reply {
  const happened = reply.happened;
  if (happened === undefined || typeof happened.at !== 'string') return reply;
  const happenedAt = Date.parse(happened.at);
  if (Number.isNaN(happenedAt) || context.now - happenedAt <= LATE_AFTER_MS) return reply;
  const reason = lateReason(happenedAt, happened, record, context);
  const note: Inline[] = [
    '⏱ ',
    {
      time: happened.at,
      ago: agoText(context.now - happenedAt),
      ...(context.timeZone ? { timeZone: context.timeZone } : {}),
    },
    ...(reason ? [`, ${reason}`] : []),
  ];
  return { ...reply, lines: [note, ...(reply.lines ?? [])] };
}
