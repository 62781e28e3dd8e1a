/**
 * The chat adapters the configuration asks for: the terminal chat (when asked, or when no chat
 * platform is configured), Discord, Telegram, and the sandboxed drawing of images they share. The
 * platforms' libraries load only when configured: they cost start-up time.
 */
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import type { Logger } from 'pino';
import type { CommandEngine } from '../bot/engine.ts';
import type { JoinRequest, MembershipSink } from '../core/roles.ts';
import type { AlertSink } from '../delivery/sink.ts';
import { ConsoleChat } from './console/console-chat.ts';
import { ConsoleSink } from './console/console-sink.ts';
import type { DiscordConfig } from './discord/adapter.ts';
import type { TelegramConfig } from './telegram/adapter.ts';

/** The chats the configuration asks for (its sections, as the adapters read them). */
export interface ChatSettings {
  /** Run the terminal chat even when a chat platform is configured. */
  console: boolean;
  discord: DiscordConfig | undefined;
  telegram: TelegramConfig | undefined;
  /** Where the terminal chat writes attachments (`attachments/`). */
  dataDir: string;
}

export interface ChatsOptions {
  config: ChatSettings;
  engine: CommandEngine;
  logger: Logger;
  stdin: Readable & { isTTY?: boolean };
  stdout: Writable;
  /** The platform's own addresses: token images may come from its hosts, internal or not. */
  platformUrls: readonly string[];
  /** Where each adapter's sink goes, for the dispatcher. */
  sinks: Map<AlertSink['platform'], AlertSink>;
  /** `file:` URL of the drawing worker's script (`.ts` from the sources, `.js` from the build). */
  drawWorkerUrl: URL;
  /** Whether a Discord channel's alerts are crossposted (an announcement channel with /settings crosspost=on). */
  crosspostIn?: (channelId: string) => boolean;
  /** Holder roles: where each adapter's membership changes go, and who answers Telegram join requests. */
  holderRoles?: {
    useSink: (sink: MembershipSink) => void;
    joinRequest: (request: JoinRequest) => Promise<unknown>;
  };
}

export interface Chats {
  /** Each adapter running, with its readiness. */
  readonly ready: ReadonlyArray<{ platform: string; ready: () => boolean }>;
  /** The terminal chat, when it runs. */
  readonly console: ConsoleChat | undefined;
  /** Resolves when the chats end by themselves (the terminal chat's input ended); never otherwise. */
  readonly finished: Promise<void>;
  /** Stops every adapter, the last started first. */
  stop(): Promise<void>;
}

/** Whether the terminal chat runs: asked for, or no chat platform is configured. */
export function wantsConsole(config: Pick<ChatSettings, 'console' | 'discord' | 'telegram'>): boolean {
  return config.console || (!config.discord && !config.telegram);
}

/** Starts the chat adapters; on a failure, stops those already started and throws. */
export async function startChats(options: ChatsOptions): Promise<Chats> {
  const { config, engine, logger, sinks } = options;
  const stops: Array<() => Promise<void>> = [];
  const ready: Array<{ platform: string; ready: () => boolean }> = [];
  const stop = async () => {
    for (const step of stops.splice(0).reverse()) {
      try {
        await step();
      } catch (error) {
        logger.warn({ err: error }, 'error while stopping');
      }
    }
  };
  try {
    let consoleChat: ConsoleChat | undefined;
    let finished: Promise<void> = new Promise(() => undefined);
    if (wantsConsole(config)) {
      const chat = new ConsoleChat({
        engine,
        input: options.stdin,
        output: options.stdout,
        interactive: options.stdin.isTTY === true,
        attachmentsDir: join(config.dataDir, 'attachments'),
        logger,
      });
      consoleChat = chat;
      stops.push(async () => chat.close());
      sinks.set('console', new ConsoleSink(chat));
      ready.push({ platform: 'console', ready: () => true });
      finished = chat.run();
    }
    const images = config.discord || config.telegram ? await startImages(options, stops) : undefined;
    if (config.discord) {
      const { startDiscord } = await import('./discord/adapter.ts');
      const discord = await startDiscord({
        config: config.discord,
        engine,
        logger: logger.child({ component: 'discord' }),
        ...(images ? { images } : {}),
        ...(options.crosspostIn ? { crosspostIn: options.crosspostIn } : {}),
      });
      stops.push(() => discord.stop());
      options.holderRoles?.useSink(discord.membership);
      sinks.set('discord', discord.sink);
      ready.push({ platform: 'discord', ready: discord.ready });
    }
    if (config.telegram) {
      const { startTelegram } = await import('./telegram/adapter.ts');
      const telegram = await startTelegram({
        config: config.telegram,
        engine,
        logger: logger.child({ component: 'telegram' }),
        ...(images ? { images } : {}),
        ...(options.holderRoles ? { joinRequests: options.holderRoles.joinRequest } : {}),
      });
      stops.push(() => telegram.stop());
      options.holderRoles?.useSink(telegram.membership);
      sinks.set('telegram', telegram.sink);
      ready.push({ platform: 'telegram', ready: telegram.ready });
    }
    return { ready, console: consoleChat, finished, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The images of answers and alerts, drawn in killable processes (one started at once). */
async function startImages(options: ChatsOptions, stops: Array<() => Promise<void>>) {
  const { ChatImages, imageHostsOf } = await import('./images/images.ts');
  // Token images come from the platform's own hosts, which may be internal (the local platform).
  const images = new ChatImages({
    logger: options.logger.child({ component: 'images' }),
    allowHosts: imageHostsOf(options.platformUrls),
    drawing: { workerUrl: options.drawWorkerUrl, warm: 1 },
  });
  stops.push(() => images.close());
  return images;
}
