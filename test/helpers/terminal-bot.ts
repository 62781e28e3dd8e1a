import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { type RunningBot, startBot } from '../../src/main.ts';

export { sleep, until } from './waiting.ts';

/** The real bot (src/main.ts, in this process) with its terminal chat on streams the test holds. */
export interface TerminalBot {
  bot: RunningBot;
  /** Everything the terminal chat printed so far. */
  out: () => string;
  /** What the terminal chat reads: write a command line to it. */
  input: PassThrough;
  /** The log file (level info). */
  log: string;
}

/**
 * Starts the bot in a fresh data directory (its path is handed to `keep`, to be removed by the test)
 * with `env` over the defaults of the terminal chat.
 */
export async function startTerminalBot(
  env: Record<string, string>,
  keep: (dataDir: string) => void,
): Promise<TerminalBot> {
  const dataDir = await mkdtemp(join(tmpdir(), 'floorwatch-terminal-bot-'));
  keep(dataDir);
  let text = '';
  const stdout = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  const input = new PassThrough();
  const log = join(dataDir, 'test.log');
  const bot = await startBot({
    env: { FLOORWATCH_DATA_DIR: dataDir, FLOORWATCH_LOG_LEVEL: 'info', ...env },
    stdin: input,
    stdout,
    logDestination: log,
  });
  return { bot, out: () => text, input, log };
}
