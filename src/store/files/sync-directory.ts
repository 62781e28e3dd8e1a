import { open, rename } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * Makes a rename or a new file in `directory` durable (fsync of the directory). Some file systems
 * cannot sync a directory: there the rename is still atomic, and the error is ignored.
 */
export async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, 'r');
  try {
    await handle.sync();
  } catch {
    // Not supported here: nothing more can be done, and the rename itself was atomic.
  } finally {
    await handle.close();
  }
}

/**
 * Replaces `file` with `text` so that a crash leaves the old file or the new one, never a part:
 * written to `temp`, synced, renamed over `file`, and the rename made durable.
 */
export async function replaceFile(file: string, temp: string, text: string): Promise<void> {
  const handle = await open(temp, 'w');
  try {
    await handle.writeFile(text, 'utf8');
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temp, file);
  await syncDirectory(dirname(file));
}
