import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ConsoleChat } from '../../src/chat/console/console-chat.ts';
import { ConsoleSink } from '../../src/chat/console/console-sink.ts';
import type { Reply } from '../../src/core/reply.ts';
import type { DevnetCollectionInfo } from '../../src/devnet/types.ts';
import { type Harness, startHarness } from '../helpers/bot-harness.ts';
import { runEntryPoint } from '../helpers/entry-point.ts';

/** The terminal chat on the real engine, typed into line by line as a person would. */
interface Terminal {
  sink: ConsoleSink;
  /** Types a line and resolves with the answer printed for it. */
  type: (line: string) => Promise<string>;
  /** Everything printed so far. */
  readonly output: string;
  end: () => Promise<void>;
}

function openTerminal(harness: Harness): Terminal {
  const input = new PassThrough();
  const output = new PassThrough();
  let printed = '';
  output.on('data', (chunk: Buffer) => {
    printed += chunk.toString();
  });
  const chat = new ConsoleChat({
    engine: harness.engine,
    input,
    output,
    interactive: false,
    attachmentsDir: join(harness.dataDir, 'attachments'),
    logger: pino({ level: 'silent' }),
  });
  const running = chat.run();
  return {
    sink: new ConsoleSink(chat),
    // Every answer to a line is printed in one write.
    type: (line) =>
      new Promise((resolve) => {
        output.once('data', (chunk: Buffer) => resolve(chunk.toString()));
        input.write(`${line}\n`);
      }),
    get output() {
      return printed;
    },
    async end() {
      input.end();
      await running;
    },
  };
}

let h: Harness;
let terminal: Terminal;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});
beforeEach(() => {
  terminal = openTerminal(h);
});
afterEach(async () => {
  await terminal.end();
});

/** A collection of devnet-l2 that only this file unpublishes, one per test. */
function collection(index: number): DevnetCollectionInfo {
  const found = h.devnet.collections['devnet-l2']?.filter((c) => !c.hostile).at(-1 - index);
  if (!found) throw new Error(`no collection ${index} on devnet-l2`);
  return found;
}

async function published(target: DevnetCollectionInfo): Promise<boolean> {
  const found = await h.platform.metadata.searchMetadata({ filter: target.name, excludeTokenMetadata: true });
  return found.contractInfo.some((c) => c.address.toLowerCase() === target.address.toLowerCase());
}

describe('the terminal chat: a typed number presses a button of the latest answer only', () => {
  it('GIVEN the unpublish prompt WHEN answers without buttons follow and 1 is typed THEN nothing is pressed and the collection stays published', async () => {
    const target = collection(0);
    expect(await terminal.type(`/unpublish ${target.id}`)).toContain('[1] Confirm unpublish');
    expect(await terminal.type('/offers moon cats 7')).not.toContain('[1]');
    expect(await terminal.type('/help')).toContain('Floorwatch commands');
    expect(await terminal.type('1')).toBe('There is nothing to choose.\n');
    expect(terminal.output).not.toContain('Collection unpublished');
    expect(await published(target)).toBe(true);
  });

  it('GIVEN an answer with buttons WHEN its number is typed THEN that button is pressed, and the answer to the press is the latest', async () => {
    const target = collection(1);
    await terminal.type(`/unpublish ${target.id}`);
    expect(await terminal.type('1')).toContain('Collection unpublished');
    expect(await published(target)).toBe(false);
    expect(await terminal.type('1')).toBe('There is nothing to choose.\n');
  });

  it('GIVEN a number outside the latest choices THEN it names the latest answer’s range, which stays open', async () => {
    const target = collection(2);
    await terminal.type('/watch add moon cats all');
    await terminal.type('/offers moon cats 7');
    expect(await terminal.type('0')).toBe('There is nothing to choose.\n');
    await terminal.type(`/unpublish ${target.id}`);
    expect(await terminal.type('3')).toBe('Choose 1 to 2.\n');
    expect(await terminal.type('2')).toContain(`Cancelled: collection ${target.id} stays published.`);
    expect(await published(target)).toBe(true);
  });

  it('GIVEN an answer with buttons WHEN text that is not a command follows THEN a number presses nothing', async () => {
    await terminal.type('/watch add moon cats listing');
    expect(await terminal.type('hello')).toBe('Commands start with /. Type /help for the list.\n');
    expect(await terminal.type('1')).toBe('There is nothing to choose.\n');
    expect(await terminal.type('/nosuchcommand')).toContain('Unknown command');
    expect(await terminal.type('1')).toBe('There is nothing to choose.\n');
  });

  it('GIVEN an alert with buttons printed after an answer THEN a number still picks the answer’s buttons, and the alert shows its commands to type', async () => {
    const target = collection(3);
    await terminal.type(`/unpublish ${target.id}`);
    const alert: Reply = {
      title: 'Listed: Moon Cat #1',
      buttons: [[{ label: 'Pause this rule', action: '/watch pause r1' }]],
      footer: 'Moon Cats · devnet',
    };
    const messageId = await terminal.sink.send('terminal', [alert]);
    await terminal.sink.edit('terminal', messageId, [alert]);
    expect(terminal.output).toContain('Listed: Moon Cat #1');
    expect(terminal.output).toContain('  Pause this rule: /watch pause r1');
    expect(terminal.output).not.toContain('[1] Pause this rule');
    expect(await terminal.type('2')).toContain(`Cancelled: collection ${target.id} stays published.`);
    expect(await published(target)).toBe(true);
  });
});

describe('npm start with piped input', () => {
  let dataDir: string;
  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'floorwatch-console-'));
  });
  afterEach(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('GIVEN the unpublish prompt, then /offers and /help WHEN 1 is typed THEN nothing is unpublished', async () => {
    const run = await runEntryPoint('/unpublish 5\n/offers moon cats 7\n/help\n1\n', { FLOORWATCH_DATA_DIR: dataDir });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Unpublish collection 5');
    expect(run.stdout.trimEnd().endsWith('There is nothing to choose.')).toBe(true);
    expect(run.stdout).not.toContain('Collection unpublished');
  });
});
