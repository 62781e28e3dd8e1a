import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startDiscord } from '../../src/chat/discord/adapter.ts';
import { ChatStartError } from '../../src/chat/start-error.ts';
import { FakeDiscord } from '../fakes/discord.ts';
import { FakeTelegram } from '../fakes/telegram.ts';
import { startHarness } from '../helpers/bot-harness.ts';
import { type EntryPointRun, runEntryPoint } from '../helpers/entry-point.ts';

/*
 * Issue 13, item 8c: a chat API that cannot be reached, or that refuses the token, at start gives
 * one clear line naming the platform and the address (never the token) and a non-zero exit, not a
 * stack trace. Unreachable exits 69 (EX_UNAVAILABLE: the supervisor restarts it), refused 78
 * (EX_CONFIG, like every configuration error). Runs the real entry point.
 */

const DISCORD_TOKEN = 'MTEwMDAwMDAwMDAwMDAwMDAwMQ.secret-discord-token.abcdefghijklmnop';
const DISCORD_APP = '1100000000000000001';
const TELEGRAM_TOKEN = '987654:SECRET-telegram-token-abcdefghijklmnop';

let dataDir: string;
beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'floorwatch-chat-start-'));
});
afterEach(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

/** The address of a port nobody listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Lines of stderr that are not the JSON log: what an operator reads. */
function plainLines(run: EntryPointRun): string[] {
  return run.stderr.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('{'));
}

function expectOneLine(run: EntryPointRun, code: number, line: RegExp, secret: string): void {
  expect(run.code, run.stderr).toBe(code);
  expect(plainLines(run)).toEqual([expect.stringMatching(line)]);
  expect(run.stderr).not.toMatch(/^\s+at /m);
  expect(run.stderr + run.stdout).not.toContain(secret);
}

describe('a chat API at start', () => {
  it('GIVEN DISCORD_API_ROOT on a closed port THEN one line names Discord and the address, and the exit code is 69', async () => {
    const api = `http://127.0.0.1:${await closedPort()}/api`;
    const run = await runEntryPoint('', {
      FLOORWATCH_DATA_DIR: dataDir,
      DISCORD_TOKEN,
      DISCORD_APPLICATION_ID: DISCORD_APP,
      DISCORD_API_ROOT: api,
    });
    expectOneLine(
      run,
      69,
      new RegExp(`^floorwatch: Discord: cannot reach the API at ${api} \\(ECONNREFUSED\\)\\.$`),
      DISCORD_TOKEN,
    );
  }, 60_000);

  it('GIVEN TELEGRAM_API_ROOT on a closed port THEN one line names Telegram and the address, and the exit code is 69', async () => {
    const api = `http://127.0.0.1:${await closedPort()}`;
    const run = await runEntryPoint('', {
      FLOORWATCH_DATA_DIR: dataDir,
      TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN,
      TELEGRAM_API_ROOT: api,
    });
    expectOneLine(
      run,
      69,
      new RegExp(`^floorwatch: Telegram: cannot reach the Bot API at ${api} \\(getMe: ECONNREFUSED\\)\\.$`),
      TELEGRAM_TOKEN,
    );
  }, 60_000);

  it('GIVEN a Discord token the API refuses THEN one line says so, and the exit code is 78', async () => {
    const discord = await FakeDiscord.start();
    try {
      const run = await runEntryPoint('', {
        FLOORWATCH_DATA_DIR: dataDir,
        DISCORD_TOKEN,
        DISCORD_APPLICATION_ID: discord.applicationId,
        DISCORD_API_ROOT: discord.api,
      });
      expectOneLine(
        run,
        78,
        /^floorwatch: Discord: the API at http:\/\/127\.0\.0\.1:\d+\/api refused DISCORD_TOKEN /,
        DISCORD_TOKEN,
      );
    } finally {
      await discord.close();
    }
  }, 60_000);

  it('GIVEN a Telegram token the Bot API refuses THEN one line says so, and the exit code is 78', async () => {
    const telegram = await FakeTelegram.start();
    try {
      const run = await runEntryPoint('', {
        FLOORWATCH_DATA_DIR: dataDir,
        TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN,
        TELEGRAM_API_ROOT: telegram.url,
      });
      expectOneLine(
        run,
        78,
        /^floorwatch: Telegram: the Bot API at http:\/\/127\.0\.0\.1:\d+ refused TELEGRAM_BOT_TOKEN \(getMe: 401 Unauthorized\)/,
        TELEGRAM_TOKEN,
      );
      expect(telegram.callsOf('getMe')).toHaveLength(1);
    } finally {
      await telegram.close();
    }
  }, 60_000);

  /** The real entry point in webhook mode, against a Bot API that answers setWebhook with `failure` (`times` over). */
  async function startRefusedWebhook(
    failure: { code: number; description: string },
    times: number,
    check: (run: EntryPointRun, telegram: FakeTelegram) => void,
  ): Promise<void> {
    const telegram = await FakeTelegram.start();
    const secret = 'webhook-SECRET-0123456789abcdef';
    telegram.fail('setWebhook', failure, times);
    try {
      const run = await runEntryPoint('', {
        FLOORWATCH_DATA_DIR: dataDir,
        TELEGRAM_BOT_TOKEN: telegram.token,
        TELEGRAM_API_ROOT: telegram.url,
        FLOORWATCH_TELEGRAM_WEBHOOK_URL: 'https://bot.example.test/telegram',
        FLOORWATCH_TELEGRAM_WEBHOOK_SECRET: secret,
        FLOORWATCH_TELEGRAM_WEBHOOK_PORT: '0',
      });
      check(run, telegram);
      expect(run.stderr + run.stdout).not.toContain(secret);
    } finally {
      await telegram.close();
    }
  }

  it('GIVEN a webhook address the Bot API rejects THEN one line says so, exit 78, and neither the token nor the webhook secret is printed', async () => {
    await startRefusedWebhook(
      { code: 400, description: 'Bad Request: bad webhook: Failed to resolve host' },
      1,
      (run, telegram) => {
        expectOneLine(
          run,
          78,
          /^floorwatch: Telegram: the Bot API at http:\/\/127\.0\.0\.1:\d+ refused setWebhook: 400 Bad Request: bad webhook: Failed to resolve host\.$/,
          telegram.token,
        );
        expect(telegram.callsOf('setWebhook')).toHaveLength(1);
      },
    );
  }, 60_000);

  it('GIVEN a Bot API that answers setWebhook with 429 THEN it counts as unreachable for now: exit 69, for the supervisor to retry', async () => {
    await startRefusedWebhook({ code: 429, description: 'Too Many Requests: retry after 1' }, 10, (run, telegram) => {
      expectOneLine(
        run,
        69,
        /^floorwatch: Telegram: cannot reach the Bot API at http:\/\/127\.0\.0\.1:\d+ \(setWebhook: /,
        telegram.token,
      );
      expect(telegram.callsOf('setWebhook').length).toBeGreaterThanOrEqual(1);
    });
  }, 60_000);
});

describe('a Discord gateway that cannot be reached at start', () => {
  // In-process, in a file of its own: once its first connection failed, discord.js keeps
  // retrying the gateway after the client is destroyed (the CLI exits right after, so it stops).
  it('GIVEN the gateway address from the API on a closed port THEN startDiscord fails within its deadline, naming the gateway', async () => {
    const gateway = `ws://127.0.0.1:${await closedPort()}/gateway`;
    const discord = await FakeDiscord.start({ gatewayUrl: gateway });
    const h = await startHarness();
    try {
      const started = Date.now();
      const failed = await startDiscord({
        config: {
          token: discord.token,
          applicationId: discord.applicationId,
          guildId: discord.guildId,
          apiRoot: discord.api,
          managePermission: 'ManageGuild',
        },
        engine: h.engine,
        logger: pino({ level: 'silent' }),
        registerCommands: false,
        readyTimeoutMs: 1_500,
      }).catch((e: unknown) => e);
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(failed).toBeInstanceOf(ChatStartError);
      expect(failed).toMatchObject({ platform: 'discord', failure: 'unreachable', address: gateway, exitCode: 69 });
      expect((failed as Error).message).toBe(
        `Discord: cannot reach the gateway at ${gateway} (no session within 2 s).`,
      );
    } finally {
      await discord.close();
      await h.close();
    }
  });
});
