import { readFile } from 'node:fs/promises';

/**
 * Bytes this process has written through write calls so far (files, pipes, sockets): the kernel's
 * count in /proc/self/io (`wchar`), so that a test measures what reached the files, not what the
 * code says it wrote.
 */
export async function bytesWritten(): Promise<number> {
  const io = await readFile('/proc/self/io', 'utf8');
  const wchar = /^wchar: (\d+)$/m.exec(io)?.[1];
  if (wchar === undefined) throw new Error('no wchar in /proc/self/io');
  return Number(wchar);
}
