import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import type { StreamHealth } from '../alerts/streams.ts';

/** What the readiness check looks at; every function is cheap and side-effect free. */
export interface ReadinessSources {
  /** Networks that have active (not paused) watch rules and that the platform client knows. */
  watchedNetworks: () => Iterable<string>;
  streams: () => readonly StreamHealth[];
  /** Chat adapters running, each with its own readiness. */
  chats: () => ReadonlyArray<{ platform: string; ready: () => boolean }>;
  /** Checked for write permission (no file is written). */
  dataDir: string;
}

export interface ReadinessReport {
  ready: boolean;
  /** One line per failed check, naming what is not ready. */
  reasons: string[];
  streams: Record<string, { events: StreamHealth['events']; receipts: StreamHealth['receipts'] }>;
  chats: Record<string, boolean>;
  store: { writable: boolean };
}

/**
 * Ready when the alert streams of every network with rules are connected (no rules: nothing to
 * wait for), every chat adapter receives updates, and the data directory is writable.
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
  let writable = true;
  try {
    await access(sources.dataDir, constants.W_OK);
  } catch {
    writable = false;
    reasons.push('data directory is not writable');
  }
  return { ready: reasons.length === 0, reasons, streams, chats, store: { writable } };
}
