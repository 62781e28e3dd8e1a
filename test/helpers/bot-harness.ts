import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import type { Actor, AlertStatus, ChatRef } from '../../src/bot/command.ts';
import { CommandEngine, type EngineOptions } from '../../src/bot/engine.ts';
import { loadCommands } from '../../src/bot/registry.ts';
import { renderPlain } from '../../src/chat/console/render.ts';
import type { Reply } from '../../src/core/reply.ts';
import { type Devnet, type DevnetOptions, startDevnet } from '../../src/devnet/index.ts';
import { COMMANDS_DIR, devnetLinks, nativeSymbolsOf } from '../../src/main.ts';
import { Links } from '../../src/market/links.ts';
import { PlatformClient } from '../../src/platform/client.ts';
import type { CallReport } from '../../src/platform/index.ts';
import { StateStore } from '../../src/store/files/state.ts';

export const CONSOLE: ChatRef = { platform: 'console', id: 'terminal', kind: 'private' };
export const GROUP: ChatRef = { platform: 'telegram', id: '-100200', kind: 'group' };
export const ADMIN: Actor = { id: '1', name: 'admin', canManage: true };
export const MEMBER: Actor = { id: '2', name: 'member', canManage: false };
export const OPERATOR: Actor = { id: '99', name: 'operator', canManage: false };

/** A command engine on a real devnet, a real state file and the real commands, as the bot wires them. */
export interface Harness {
  devnet: Devnet;
  platform: PlatformClient;
  store: StateStore;
  engine: CommandEngine;
  dataDir: string;
  /** Runs a typed line; fails the test if the line is not a command. */
  run: (line: string, chat?: ChatRef, actor?: Actor) => Promise<Reply>;
  /** The terminal rendering of a reply (what a console user reads). */
  text: (reply: Reply) => string;
  /**
   * Another engine on the same platform, store and commands, with no operators and a silent logger
   * unless `options` say otherwise (a logger to read, a market context, rate limits under test).
   */
  engineWith: (options?: Partial<EngineOptions>) => CommandEngine;
  close: () => Promise<void>;
}

export async function startHarness(
  options: DevnetOptions = {},
  extra: { retries?: number; alerts?: () => Promise<AlertStatus>; onCall?: (report: CallReport) => void } = {},
): Promise<Harness> {
  const devnet = await startDevnet({ scale: 'small', ...options });
  const platform = new PlatformClient({
    endpoints: devnet.endpoints,
    networks: devnet.networks,
    accessKey: devnet.accessKey,
    secretToken: devnet.secretToken,
    projectId: devnet.projectId,
    retry: { retries: extra.retries ?? 1, baseDelayMs: 5, maxDelayMs: 50 },
    ...(extra.onCall ? { onCall: extra.onCall } : {}),
  });
  const dataDir = await mkdtemp(join(tmpdir(), 'floorwatch-test-'));
  const store = await StateStore.open(join(dataDir, 'state.json'));
  // What every engine of the harness shares; the main one adds an operator, links and generous limits.
  const base: EngineOptions = {
    platform,
    store,
    logger: pino({ level: 'silent' }),
    settings: {
      operators: [],
      projectId: devnet.projectId,
      allowlistAudience: 1,
      defaultNetwork: 'devnet',
      version: 'test',
    },
    commands: await loadCommands(COMMANDS_DIR),
    nativeSymbols: nativeSymbolsOf(devnet),
  };
  const engine = new CommandEngine({
    ...base,
    settings: { ...base.settings, operators: [`telegram:${OPERATOR.id}`] },
    links: new Links(devnetLinks(devnet), devnet.networks),
    ...(extra.alerts ? { alerts: extra.alerts } : {}),
    // Generous limits: tests that check rate limiting build their own engine.
    userLimit: { capacity: 1_000, refillPerSecond: 1_000 },
    chatLimit: { capacity: 1_000, refillPerSecond: 1_000 },
  });
  return {
    devnet,
    platform,
    store,
    engine,
    dataDir,
    async run(line, chat = CONSOLE, actor = ADMIN) {
      const reply = await engine.runLine(line, chat, actor);
      if (!reply) throw new Error(`not a command: ${line}`);
      return reply;
    },
    text: (reply) => renderPlain(reply).text,
    engineWith: (options = {}) => new CommandEngine({ ...base, ...options }),
    async close() {
      await platform.close();
      await devnet.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
