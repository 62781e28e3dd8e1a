import { open } from 'node:fs/promises';

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
