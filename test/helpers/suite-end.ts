import { rm } from 'node:fs/promises';

/**
 * Ends what an end-to-end suite started, each part only if it was started: the bot first (it uses the
 * others), then the chat stand-ins and the platform in the order given, then the data directory.
 */
export async function endSuite(parts: {
  bot: { stop(): Promise<void> } | undefined;
  closing: ReadonlyArray<{ close(): Promise<void> } | undefined>;
  dataDir: string | undefined;
}): Promise<void> {
  await parts.bot?.stop();
  for (const part of parts.closing) await part?.close();
  if (parts.dataDir) await rm(parts.dataDir, { recursive: true, force: true });
}
