import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import type { Logger } from 'pino';
import type { Actor, ChatRef } from '../../bot/command.ts';
import type { CommandEngine } from '../../bot/engine.ts';
import type { Reply } from '../../core/reply.ts';
import { type PlainRender, renderPlain } from './render.ts';

export interface ConsoleChatOptions {
  engine: CommandEngine;
  input: Readable;
  output: Writable;
  /** Show a prompt (a terminal); off for piped input. */
  interactive: boolean;
  /** Where attachments (images, JSON) are written. */
  attachmentsDir: string;
  logger: Logger;
}

/** The terminal chat: one private chat with the person at the keyboard, who is its operator. */
export const CONSOLE_CHAT: ChatRef = {
  platform: 'console',
  id: 'terminal',
  kind: 'private',
  // The terminal is a community of its own (wallet verification in the demo).
  community: { id: 'terminal', name: 'the terminal chat' },
};
const CONSOLE_ACTOR: Actor = { id: 'local', name: 'you', canManage: true };

const PROMPT = 'floorwatch> ';

/**
 * Reads commands line by line and prints the rendered answers. Lines are answered in order; at
 * the end of piped input, `run` resolves once every answer is printed. A number picks a numbered
 * button of the latest answer, and only of that one.
 */
export class ConsoleChat {
  readonly #options: ConsoleChatOptions;
  /**
   * Actions of the numbered buttons of the latest answer to a typed line; empty when it had none.
   * Alerts and digests leave them alone: they arrive on their own schedule, and one printed while
   * the person reads an answer must not change what the number they type presses. Their buttons
   * show the command to type instead of a number.
   */
  #choices: readonly string[] = [];
  #closed = false;
  #outputClosed = false;
  #lines: Interface | undefined;

  constructor(options: ConsoleChatOptions) {
    this.#options = options;
    // A reader that goes away (`npm start | head`) is the end of the conversation, not a crash:
    // without a listener the write error is thrown from the stream and kills the process.
    options.output.on('error', (error: NodeJS.ErrnoException) => this.#outputFailed(error));
  }

  /**
   * Whether the chat ended because its output was closed (the reader of a pipe went away) rather
   * than because its input ended.
   */
  get outputClosed(): boolean {
    return this.#outputClosed;
  }

  async run(): Promise<void> {
    const { input, interactive } = this.#options;
    const lines = createInterface({ input, terminal: false, crlfDelay: Number.POSITIVE_INFINITY });
    this.#lines = lines;
    if (this.#outputClosed) lines.close();
    if (interactive) {
      this.#write('Floorwatch is ready. Type /help for the commands, Ctrl+D to quit.\n');
      this.#prompt();
    }
    for await (const raw of lines) {
      if (this.#closed) break;
      const line = raw.trim();
      if (line) await this.#handle(line);
      if (interactive) this.#prompt();
    }
    lines.close();
  }

  /** Shows a message that was not asked for (an alert, a digest). */
  async post(reply: Reply): Promise<void> {
    const { text } = await this.#render(reply, false);
    this.#write(`\n${text}\n`);
    if (this.#options.interactive && !this.#closed) this.#prompt();
  }

  close(): void {
    this.#closed = true;
  }

  async #handle(line: string): Promise<void> {
    const admission = this.#options.engine.admit(CONSOLE_CHAT, CONSOLE_ACTOR);
    if (admission.status === 'notify') this.#write(`${(await this.#render(admission.reply, false)).text}\n\n`);
    if (admission.status !== 'ok') return;
    let commandLine = line;
    if (/^\d{1,2}$/.test(line)) {
      const action = this.#choices[Number(line) - 1];
      if (!action) {
        // Asks again about the same choices: they stay open.
        this.#write(this.#choices.length ? `Choose 1 to ${this.#choices.length}.\n` : 'There is nothing to choose.\n');
        return;
      }
      commandLine = action;
    } else if (!line.startsWith('/')) {
      this.#answer('Commands start with /. Type /help for the list.\n');
      return;
    }
    const reply = await this.#options.engine.runLine(commandLine, CONSOLE_CHAT, CONSOLE_ACTOR);
    if (!reply) {
      this.#answer('That is not a command. Type /help for the list.\n');
      return;
    }
    const { text, choices } = await this.#render(reply, true);
    this.#answer(`${text}\n\n`, choices);
  }

  /** Prints the answer to a typed line, whose numbered buttons are from now on the ones a number picks. */
  #answer(text: string, choices: readonly string[] = []): void {
    this.#choices = choices;
    this.#write(text);
  }

  async #render(reply: Reply, numbered: boolean): Promise<PlainRender> {
    const rendered = renderPlain(reply, { numbered });
    const saved: string[] = [];
    for (const attachment of reply.attachments ?? []) {
      try {
        await mkdir(this.#options.attachmentsDir, { recursive: true });
        const name = `${Date.now()}-${attachment.name.replace(/[^\w.-]/g, '_').slice(0, 80)}`;
        const path = join(this.#options.attachmentsDir, name);
        await writeFile(path, attachment.data);
        saved.push(`attachment: ${path}`);
      } catch (error) {
        this.#options.logger.warn({ err: error }, 'could not write an attachment');
        saved.push(`attachment ${attachment.name} could not be written`);
      }
    }
    return { text: [rendered.text, ...saved].join('\n'), choices: rendered.choices };
  }

  #prompt(): void {
    this.#write(PROMPT);
  }

  #write(text: string): void {
    if (this.#outputClosed) return;
    this.#options.output.write(text);
  }

  #outputFailed(error: NodeJS.ErrnoException): void {
    if (this.#outputClosed) return;
    this.#outputClosed = true;
    this.#closed = true;
    const closed = error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED';
    this.#options.logger.info(
      { code: error.code },
      closed ? 'the terminal output was closed: stopping' : 'cannot write to the terminal: stopping',
    );
    // Ends `run`: no more lines are read, since no answer could be shown.
    this.#lines?.close();
  }
}
