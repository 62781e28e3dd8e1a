import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rename, rm, stat, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StoreFileError, StoreWriteError } from '../../../src/core/store-errors.ts';
import { ButtonFile } from '../../../src/store/files/buttons.ts';
import { bytesWritten } from '../../helpers/written.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
let dir: string;
let file: string;
const HEADER = '{"op":"buttons","v":1}\n';
const line = (hash: string, action: string, at = new Date()) =>
  `${JSON.stringify({ h: hash, a: action, t: at.toISOString() })}\n`;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'floorwatch-buttons-'));
  file = join(dir, 'state.buttons.jsonl');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('ButtonFile', () => {
  it('GIVEN saves WHEN each resolves THEN its line is in the file, and a restart reads them back in save order, a hash saved again last', async () => {
    const buttons = await ButtonFile.open(file);
    await buttons.save('a', '/floor a', new Date('2026-01-01T00:00:00.000Z'));
    await buttons.save('b', '/floor b', new Date());
    expect((await readFile(file, 'utf8')).split('\n')).toHaveLength(4);
    await buttons.save('a', '/floor a', new Date());
    const reopened = await ButtonFile.open(file);
    expect(reopened.entries().map(([hash, button]) => [hash, button.action])).toEqual([
      ['b', '/floor b'],
      ['a', '/floor a'],
    ]);
  });

  it('GIVEN 200 saves made at once THEN they share a few writes and all are durable', async () => {
    const buttons = await ButtonFile.open(file);
    const writes = buttons.writeStats.writes;
    await Promise.all(Array.from({ length: 200 }, (_, i) => buttons.save(`h${i}`, `/floor ${i}`, new Date())));
    expect(buttons.writeStats.writes - writes).toBeLessThanOrEqual(3);
    expect((await ButtonFile.open(file)).entries()).toHaveLength(200);
  });

  it('GIVEN 3,000 buttons saved one by one, 100 kept WHEN the dropped ones pile up THEN the file is rewritten with the kept ones, stays small, and each save wrote a few lines worth', async () => {
    const buttons = await ButtonFile.open(file, { max: 100 });
    const written = await bytesWritten();
    let largest = 0;
    for (let i = 0; i < 3_000; i++) {
      await buttons.save(`h${i}`, `/floor collection=devnet:0x${'ab'.repeat(20)} token=${i}`, new Date());
      largest = Math.max(largest, (await stat(file)).size);
    }
    const lineBytes = line('h1000', `/floor collection=devnet:0x${'ab'.repeat(20)} token=1000`).length;
    // Dropped lines are at most 1,000 (or as many as the kept ones) before a rewrite.
    expect(largest).toBeLessThan(1_200 * lineBytes);
    expect(((await bytesWritten()) - written) / 3_000).toBeLessThan(2 * lineBytes);
    const reopened = await ButtonFile.open(file, { max: 100 });
    expect(reopened.entries().map(([hash]) => hash)).toEqual(Array.from({ length: 100 }, (_, i) => `h${2_900 + i}`));
  });

  it('GIVEN a last line torn by a crash WHEN opened THEN it is cut off and the rest is read', async () => {
    await writeFile(file, `${HEADER}${line('a', '/floor a')}{"h":"b","a":"/flo`);
    const buttons = await ButtonFile.open(file);
    expect(buttons.entries().map(([hash]) => hash)).toEqual(['a']);
    expect(await readFile(file, 'utf8')).toBe(
      `${HEADER}${line('a', '/floor a', new Date(buttons.button('a')?.createdAt ?? 0))}`,
    );
    await buttons.save('c', '/floor c', new Date());
    expect((await ButtonFile.open(file)).entries().map(([hash]) => hash)).toEqual(['a', 'c']);
  });

  it.each([
    ['a line that is not JSON', `${HEADER}{oops\n${line('a', '/floor a')}`, /line 2 is not valid JSON/],
    [
      'a line that is not a button',
      `${HEADER}${line('a', '/floor a')}{"h":"b","a":1,"t":"x"}\n{}\n`,
      /line 3 is not a stored button \(a: /,
    ],
    [
      'a button without a time',
      `${HEADER}{"h":"b","a":"/floor b","t":"soon"}\n{}\n`,
      /line 2 is not a stored button \(t: expected an ISO time/,
    ],
    ['a file of a newer version', '{"op":"buttons","v":9}\n', /written by a newer Floorwatch/],
    ['another file', '{"op":"journal","v":1}\n', /line 1 is not a buttons file header/],
  ])(
    'GIVEN %s WHEN opened THEN it refuses, names the file and the line, and leaves it untouched',
    async (_, content, problem) => {
      await writeFile(file, content);
      const error = await ButtonFile.open(file).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreFileError);
      expect((error as Error).message).toContain(file);
      expect((error as Error).message).toMatch(problem);
      expect(await readFile(file, 'utf8')).toBe(content);
    },
  );

  it('GIVEN a disk that refuses the write (the file is /dev/full) WHEN a button is saved THEN the save is rejected and the button not stored; the next save works', async () => {
    const buttons = await ButtonFile.open(file);
    await buttons.save('a', '/floor a', new Date());
    await rename(file, `${file}.kept`);
    await symlink('/dev/full', file);
    const failed = await buttons.save('b', '/floor b', new Date()).catch((e: unknown) => e);
    await unlink(file);
    await rename(`${file}.kept`, file);
    expect(failed).toBeInstanceOf(StoreWriteError);
    expect((failed as StoreWriteError).code).toBe('ENOSPC');
    expect(buttons.button('b')).toBeUndefined();
    await buttons.save('c', '/floor c', new Date());
    expect((await ButtonFile.open(file)).entries().map(([hash]) => hash)).toEqual(['a', 'c']);
  });

  it('GIVEN an append cut short by the file size limit WHEN the save is rejected THEN the part of its line that was written is cut off again', async () => {
    const buttons = await ButtonFile.open(file);
    await buttons.save('a', '/floor a', new Date());
    const before = await readFile(file, 'utf8');
    // Another process whose files may not grow past 512 bytes: its 2 kB line is written in part, then EFBIG.
    const script = [
      `const { ButtonFile } = await import('./src/store/files/buttons.ts');`,
      `const buttons = await ButtonFile.open(${JSON.stringify(file)});`,
      `const error = await buttons.save('big', '/floor ' + 'x'.repeat(2048), new Date()).catch((e) => e);`,
      'process.stdout.write(String(error?.code));',
    ].join('\n');
    const limited = spawnSync(
      'sh',
      ['-c', `ulimit -f 1 && exec "$0" --import tsx --input-type=module -e "$1"`, process.execPath, script],
      { cwd: ROOT, encoding: 'utf8' },
    );
    expect(limited.stdout).toBe('EFBIG');
    expect(await readFile(file, 'utf8')).toBe(before);
  });
});
