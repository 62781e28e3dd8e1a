import { open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { JournalBacklog, StreamHealth } from '../core/status.ts';

/** What the readiness check looks at; every function is cheap and side-effect free. */
export interface ReadinessSources {
  /** Networks that have active (not paused) watch rules and that the platform client knows. */
  watchedNetworks: () => Iterable<string>;
  streams: () => readonly StreamHealth[];
  /** Chat adapters running, each with its own readiness. */
  chats: () => ReadonlyArray<{ platform: string; ready: () => boolean }>;
  /**
   * Probed by writing a small file, syncing it to disk and removing it: permissions alone
   * (`access()`) say nothing of a full disk.
   */
  dataDir: string;
  /** Alerts waiting for the delivery journal (the alert path's status): not ready while the journal cannot write. */
  journal?: () => JournalBacklog;
}

export interface ReadinessReport {
  ready: boolean;
  /** One line per failed check, naming what is not ready. */
  reasons: string[];
  streams: Record<string, { events: StreamHealth['events']; receipts: StreamHealth['receipts'] }>;
  chats: Record<string, boolean>;
  /** The data directory's probe; `code` is the system error of a failed one (`ENOSPC`, `EACCES`, ...). */
  store: { writable: boolean; code?: string };
  /**
   * The delivery journal: `writable` is false from a failed write until one succeeds again and
   * nothing waits any more; `failingSince` and `code` say since when and why; `queued` alerts wait
   * in memory meanwhile (not ready either, until they are written).
   */
  journal: { writable: boolean; queued: number; failingSince?: string; code?: string };
}

const PROBE_TEXT = 'floorwatch readiness probe\n';
let probes = 0;

/**
 * Ready when the alert streams of every network with rules are connected (no rules: nothing to
 * wait for), every chat adapter receives updates, the data directory takes a synced write, and the
 * delivery journal's last write succeeded.
 */
export async function checkReadiness(sources: ReadinessSources): Promise<ReadinessReport> {
  const reasons: string[] = [];
  const byNetwork = new Map(sources.streams().map((h) => [h.network, h]));
  const streams: ReadinessReport['streams'] = {};
  for (const network of new Set(sources.watchedNetworks())) {
    const health = byNetwork.get(network);
    const events = health?.events ?? 'idle';
    const receipts = health?.receipts ?? 'idle';
    streams[network] = { events, receipts };
    if (events !== 'connected') reasons.push(`alert events stream of ${network} is ${events}`);
    if (receipts !== 'connected') reasons.push(`alert receipts stream of ${network} is ${receipts}`);
  }
  const chats: Record<string, boolean> = {};
  for (const chat of sources.chats()) {
    const ready = chat.ready();
    chats[chat.platform] = ready;
    if (!ready) reasons.push(`${chat.platform} chat is not connected`);
  }
  const probeError = await probeDirectory(sources.dataDir);
  const store: ReadinessReport['store'] = { writable: probeError === undefined };
  if (probeError !== undefined) {
    store.code = probeError;
    reasons.push('data directory is not writable');
  }
  const backlog = sources.journal?.();
  const failure = backlog?.failure;
  const journal: ReadinessReport['journal'] = { writable: failure === undefined, queued: backlog?.queued ?? 0 };
  const kept = journal.queued > 0 ? `; ${journal.queued} alerts wait in memory` : '';
  if (failure) {
    journal.failingSince = failure.since;
    if (failure.code !== undefined) journal.code = failure.code;
    const restart = failure.broken ? '; a restart is needed to repair it' : '';
    reasons.push(
      `delivery journal cannot be written since ${failure.since} (${failure.code ?? failure.message})${kept}${restart}`,
    );
  } else if (journal.queued > 0) {
    reasons.push(`delivery journal is catching up${kept}`);
  }
  return { ready: reasons.length === 0, reasons, streams, chats, store, journal };
}

/** Writes, syncs and removes a small file in `directory`; the error code (or message) when that fails. */
async function probeDirectory(directory: string): Promise<string | undefined> {
  const file = join(directory, `.readiness-probe-${process.pid}-${++probes}`);
  try {
    const handle = await open(file, 'wx');
    try {
      await handle.writeFile(PROBE_TEXT);
      await handle.datasync();
    } finally {
      await handle.close();
    }
    await rm(file);
    return undefined;
  } catch (error) {
    await rm(file, { force: true }).catch(() => undefined);
    if (error instanceof Error && 'code' in error && typeof error.code === 'string') return error.code;
    return error instanceof Error ? error.message : String(error);
  }
}
