/**
 * Composition root: configuration -> logger -> platform (the local one when none is configured)
 * -> store -> command engine -> chat adapters. Nothing else wires components together.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { Backfill } from './alerts/backfill.ts';
import { type Alerts, createAlerts } from './alerts/index.ts';
import { MarketHistory } from './alerts/market-history.ts';
import { CommandEngine } from './bot/engine.ts';
import { Links, type LinkTemplates } from './bot/links.ts';
import { RarityIndex } from './bot/rarity.ts';
import { loadCommands } from './bot/registry.ts';
import { ConsoleChat } from './chat/console/console-chat.ts';
import { ConsoleSink } from './chat/console/console-sink.ts';
import type { ChatImages } from './chat/images/images.ts';
import { ChatStartError } from './chat/start-error.ts';
import { type Config, ConfigError, loadConfig, secretsOf } from './config.ts';
import type { DeliveryLog, RulesRepository } from './core/ports.ts';
import { ChatClaims } from './delivery/claims.ts';
import { Dispatcher } from './delivery/dispatcher.ts';
import type { AlertSink } from './delivery/sink.ts';
import { pauseRulesOfUnreachable } from './delivery/unreachable.ts';
import type { Devnet } from './devnet/index.ts';
import { ChartPool } from './digests/chart-pool.ts';
import { DigestService } from './digests/digest-service.ts';
import { DigestScheduler } from './digests/scheduler.ts';
import { type HealthServer, startHealthServer } from './health/http.ts';
import { BotMetrics } from './health/metrics.ts';
import { checkReadiness } from './health/readiness.ts';
import { createLogger } from './logger.ts';
import { PlatformClient } from './platform/client.ts';
import { FileCursorStore } from './store/cursors.ts';
import { DeliveryJournal } from './store/journal.ts';
import { DataDirError, lockDataDir } from './store/lock.ts';
import { DatabaseError } from './store/pg/errors.ts';
import type { Leadership, SharedDatabase } from './store/pg/index.ts';
import { StateStore, StoreFileError } from './store/state.ts';

export const VERSION = '0.1.0';
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const COMMANDS_DIR = join(ROOT, 'commands');
/** `ts` when run from the sources (tsx), `js` when run from the build in dist/. */
const SOURCE_EXTENSION = import.meta.url.endsWith('.ts') ? 'ts' : 'js';
/** Where logs go when the terminal chat runs on a terminal. */
export const LOG_FILE = 'floorwatch.log';

export interface RunningBot {
  config: Config;
  logger: Logger;
  platform: PlatformClient;
  engine: CommandEngine;
  store: RulesRepository;
  journal: DeliveryLog;
  alerts: Alerts;
  dispatcher: Dispatcher;
  devnet: Devnet | undefined;
  console: ConsoleChat | undefined;
  /** The health and metrics listener, when FLOORWATCH_HTTP_PORT is set. */
  http: HealthServer['address'] | undefined;
  /** Resolves when the bot has stopped by itself (end of piped input). */
  finished: Promise<void>;
  /** Stops everything, in reverse order of start. */
  stop: () => Promise<void>;
  /**
   * Called when the bot cannot go on safely and must stop at once (a LeaseLostError: it no longer
   * surely holds its data directory, or with a shared database one of its leases, so another process
   * may already do its work). Called at once for a listener added after it happened.
   */
  onFatal: (listener: (error: Error) => void) => void;
}

export interface StartOptions {
  env?: Readonly<Record<string, string | undefined>>;
  stdin?: Readable & { isTTY?: boolean };
  stdout?: Writable;
  /**
   * Log destination (file descriptor, stream or file path); stderr by default, and the data
   * directory's `floorwatch.log` when the terminal chat runs on a terminal (logs would mix with the prompt).
   */
  logDestination?: NodeJS.WritableStream | number | string;
  cwd?: string;
}

/** Starts the bot with its configuration; used by the CLI entry point and by end-to-end tests. */
export async function startBot(options: StartOptions = {}): Promise<RunningBot> {
  const config = loadConfig(options.env ?? process.env, options.cwd);
  const stdin = options.stdin ?? process.stdin;
  const consoleWanted = config.console || (!config.discord && !config.telegram);
  const logFile =
    options.logDestination === undefined && consoleWanted && stdin.isTTY === true
      ? join(config.dataDir, LOG_FILE)
      : undefined;
  let logger: Logger;
  try {
    logger = createLogger(config.logLevel, secretsOf(config), options.logDestination ?? logFile ?? 2);
    if (logFile) process.stderr.write(`floorwatch: logs go to ${logFile}\n`);
  } catch (error) {
    // The data directory cannot take the log file: the checks below say why; log to stderr meanwhile.
    if (!logFile) throw error;
    logger = createLogger(config.logLevel, secretsOf(config), 2);
  }
  const stops: Array<() => Promise<void>> = [];
  const fatalListeners: Array<(error: Error) => void> = [];
  let fatalError: Error | undefined;
  const fatal = (error: Error) => {
    if (fatalError) return;
    fatalError = error;
    logger.error({ err: error }, 'cannot go on: stopping');
    for (const listener of fatalListeners) listener(error);
  };
  const stop = async () => {
    for (const step of stops.reverse()) {
      try {
        await step();
      } catch (error) {
        logger.warn({ err: error }, 'error while stopping');
      }
    }
    stops.length = 0;
  };

  try {
    // First, so that a second process on the same directory changes nothing before it is refused.
    const lock = await lockDataDir(config.dataDir, { onLost: fatal });
    stops.push(() => lock.release());
    const fence = () => lock.check();
    let devnet: Devnet | undefined;
    let nativeSymbols: Record<string, string> = config.platform.nativeSymbols;
    let marketplaceContracts: Record<string, string[]> = config.marketplaceContracts;
    let endpoints = config.platform.endpoints;
    let platformOptions = {
      accessKey: config.platform.accessKey,
      secretToken: config.platform.secretToken,
      projectId: config.platform.projectId,
      networks: config.platform.networks,
    };
    if (!endpoints) {
      const { startDevnet } = await import('./devnet/index.ts');
      devnet = await startDevnet({
        seed: config.devnet.seed,
        blockIntervalMs: config.devnet.blockIntervalMs,
        port: config.devnet.port,
        logger: logger.child({ component: 'devnet' }),
      });
      const running = devnet;
      stops.push(() => running.close());
      endpoints = devnet.endpoints;
      platformOptions = {
        accessKey: devnet.accessKey,
        secretToken: devnet.secretToken,
        projectId: config.platform.projectId ?? devnet.projectId,
        networks: devnet.networks,
      };
      nativeSymbols = nativeSymbolsOf(devnet);
      marketplaceContracts = Object.fromEntries(devnet.info().networks.map((n) => [n.name, [n.marketplaceContract]]));
      logger.info({ url: devnet.url, networks: devnet.networks.map((n) => n.name) }, 'using the local platform');
    }

    const metrics = config.http ? new BotMetrics() : undefined;
    const platformLogger = logger.child({ component: 'platform' });
    const linkTemplates = devnet ? devnetLinks(devnet, config.links) : config.links;
    const platform = new PlatformClient({
      ...platformOptions,
      endpoints,
      userAgent: `floorwatch/${VERSION}`,
      onDroppedRecords: (sample, dropped) =>
        platformLogger.warn({ ...sample, dropped }, 'dropped platform records that failed their checks'),
      onCall: (report) => {
        metrics?.platformCall(report);
        platformLogger.debug(
          {
            operation: report.operation,
            attempt: report.attempt,
            status: report.outcome,
            ms: Math.round(report.durationMs),
            requestId: report.requestId,
          },
          'platform call',
        );
      },
    });
    stops.push(() => platform.close());
    const links = new Links(linkTemplates, platform.networks.all);
    const defaultNetwork = config.defaultNetwork ?? platform.networks.all[0]?.name;
    if (!defaultNetwork) throw new ConfigError(['FLOORWATCH_NETWORKS lists no network.']);
    // With the local platform the networks are known only now: the configuration could not check this.
    if (!platform.networks.all.some((n) => n.name === defaultNetwork)) {
      const known = platform.networks.all.map((n) => n.name).join(', ');
      throw new ConfigError([
        `FLOORWATCH_DEFAULT_NETWORK "${defaultNetwork}" is not a network of the platform (${known}).`,
      ]);
    }

    // The stores: files in the data directory (one process), or the shared database (any number).
    let store: RulesRepository;
    let journal: DeliveryLog;
    let shared: SharedDatabase | undefined;
    // Loaded only when used: the database driver and migrations cost start-up time.
    const pgStore = config.database ? await import('./store/pg/index.ts') : undefined;
    if (config.database && pgStore) {
      shared = await pgStore.openSharedDatabase(config.database, logger, (error) => fatal(error));
      const opened = shared;
      stops.push(() => opened.close());
      store = shared.rules;
      journal = shared.deliveries;
      logger.info({ database: shared.db.where }, 'using the shared database');
    } else {
      store = await StateStore.open(join(config.dataDir, 'state.json'), { fence });
      journal = await DeliveryJournal.open(join(config.dataDir, 'deliveries.jsonl'), {
        onCompactionError: (error) => logger.error({ err: error }, 'journal compaction failed'),
        fence,
      });
    }
    const stores = { store, journal };
    stops.push(() => stores.store.flush());
    stops.push(() => stores.journal.close());
    const marketHistory = await MarketHistory.open(join(config.dataDir, 'market-history.jsonl'), {
      platform,
      logger: logger.child({ component: 'market-history' }),
    });
    stops.push(() => marketHistory.close());
    const sinks = new Map<AlertSink['platform'], AlertSink>();
    let pipeline: Alerts | undefined;
    const deliveryLogger = logger.child({ component: 'delivery' });
    const dispatcher = new Dispatcher({
      journal,
      sinks,
      logger: deliveryLogger,
      // Who may send: the holder of a chat's claim with a shared database, of the directory otherwise.
      fence: shared?.leases ?? lock,
      onUnreachable: pauseRulesOfUnreachable(store, logger.child({ component: 'alerts' })),
      onOutcome: (outcome, platform, count) => {
        metrics?.delivery(outcome, platform, count);
        deliveryLogger.debug({ outcome, platform, count }, 'alert delivery');
      },
    });
    stops.push(() => dispatcher.stop());
    // With a shared database, a chat's deliveries are sent by the process that holds its claim.
    let claims: ChatClaims | undefined;
    if (shared && pgStore) {
      const opened = shared;
      claims = new ChatClaims({
        leases: shared.leases,
        log: shared.deliveries,
        dispatcher,
        logger: deliveryLogger,
      });
      const chatClaims = claims;
      await shared.db.listen(pgStore.DELIVERIES_CHANNEL, (payload) =>
        chatClaims.noticed(pgStore.chatsOf(payload, opened.deliveries.origin)),
      );
      opened.db.onResync(() => void chatClaims.sweep());
      stops.push(async () => chatClaims.stop());
    }
    const deliveryQueue = claims ?? dispatcher;

    let digests: DigestService | undefined;
    let scheduler: DigestScheduler | undefined;
    const commands = await loadCommands(COMMANDS_DIR);
    const engine = new CommandEngine({
      platform,
      store,
      logger: logger.child({ component: 'commands' }),
      settings: {
        operators: config.operators,
        projectId: platformOptions.projectId,
        allowlistAudience: config.allowlistAudience,
        defaultNetwork,
        version: VERSION,
        discordManagePermission: config.discord?.managePermission,
      },
      commands,
      links,
      market: {
        history: marketHistory,
        rarity: new RarityIndex(platform, { logger: logger.child({ component: 'rarity' }) }),
      },
      nativeSymbols,
      digests: {
        preview: async (chatKey, digest) => {
          if (!digests) throw new Error('digests are not running');
          return (await digests.build(chatKey, digest, new Date())).reply;
        },
        nextRun: (digest) => scheduler?.nextRun(digest.hour, digest.minute, digest.timeZone) ?? null,
      },
      alerts: () => {
        const stats = journal.stats();
        const status = pipeline?.status();
        return {
          streams: status?.streams ?? [],
          journal: { records: stats.records, pending: stats.pending + stats.sending, failed: stats.failed },
          counters: status?.counters ?? { logs: 0, events: 0, matched: 0, deliveries: 0, reorged: 0, dropped: 0 },
          backlog: status?.backlog,
        };
      },
    });
    if (metrics) engine.onOutcome((name, outcome) => metrics.command(name, outcome));
    // Begin backfill: the blocks missed while stopped or reconnecting, read back over JSON-RPC.
    const rpcUrl = config.backfill.rpcUrl ?? devnet?.chainRpcUrl;
    let backfill: Backfill | undefined;
    if (rpcUrl && config.backfill.maxBlocks > 0) {
      const onWriteError = (error: unknown) => logger.warn({ err: error }, 'could not save the block cursors');
      const cursors =
        shared && pgStore
          ? new pgStore.PgCursorStore(shared.db, { onWriteError })
          : await FileCursorStore.open(join(config.dataDir, 'cursors.json'), { onWriteError });
      backfill = new Backfill({
        settings: { rpcUrl, maxBlocks: config.backfill.maxBlocks, resumeOnActivate: shared !== undefined },
        cursors,
        logger: logger.child({ component: 'backfill' }),
        chainId: (network) => platform.networks.find(network)?.chainId,
      });
    } else {
      logger.info('no FLOORWATCH_RPC_URL: blocks missed while stopped are not read back');
    }
    // End backfill.
    // With a shared database one process at a time ingests each network's streams.
    let ingest: Leadership | undefined;
    if (shared && pgStore) {
      ingest = new pgStore.Leadership({
        leases: shared.leases,
        space: 'ingest',
        keys: () => platform.networks.all.map((n) => n.name),
        onAcquired: () =>
          void pipeline?.replan().catch((error: unknown) => logger.error({ err: error }, 'could not open the streams')),
        logger: logger.child({ component: 'leadership' }),
      });
      const leadership = ingest;
      stops.push(async () => leadership.stop());
    }
    const alertPipeline = createAlerts({
      backfill,
      platform,
      rules: store,
      deliveries: journal,
      queue: deliveryQueue,
      ...(ingest ? { ingests: (network: string) => ingest?.leads(network) ?? false } : {}),
      currencies: engine.currencies,
      links,
      logger: logger.child({ component: 'alerts' }),
      marketplaceContracts,
      relistWindowMs: config.relistWindowHours * 60 * 60 * 1000,
      market: marketHistory,
    });
    pipeline = alertPipeline;
    // Closed after the digest scheduler has stopped (stops run in reverse), so a run in progress keeps its charts.
    const charts = new ChartPool({ workerUrl: new URL(`./digests/chart-worker.${SOURCE_EXTENSION}`, import.meta.url) });
    stops.push(() => charts.close());
    digests = new DigestService({
      platform,
      store,
      journal,
      dispatcher: deliveryQueue,
      currencies: engine.currencies,
      logger: logger.child({ component: 'digests' }),
      projectId: platformOptions.projectId,
      charts,
      market: marketHistory,
    });
    const digestService = digests;
    const digestScheduler = new DigestScheduler({
      store,
      logger: logger.child({ component: 'digests' }),
      // With a shared database one process posts the digests (each due digest is also recorded once).
      run: async (chatKeys, dueAt) => {
        if (digestLeader && pgStore && !digestLeader.leads(pgStore.DIGESTS_LEASE_KEY)) return;
        await digestService.run(chatKeys, dueAt);
      },
    });
    scheduler = digestScheduler;
    let digestLeader: Leadership | undefined;
    if (shared && pgStore) {
      digestLeader = new pgStore.Leadership({
        leases: shared.leases,
        space: 'digests',
        keys: () => [pgStore.DIGESTS_LEASE_KEY],
        onAcquired: () => void digestScheduler.catchUp(),
        logger: logger.child({ component: 'leadership' }),
      });
      const leadership = digestLeader;
      stops.push(async () => leadership.stop());
    }

    const chats: Array<{ platform: string; ready: () => boolean }> = [];
    let consoleChat: ConsoleChat | undefined;
    let finished: Promise<void> = new Promise(() => undefined);
    if (consoleWanted) {
      consoleChat = new ConsoleChat({
        engine,
        input: stdin,
        output: options.stdout ?? process.stdout,
        interactive: stdin.isTTY === true,
        attachmentsDir: join(config.dataDir, 'attachments'),
        logger,
      });
      const chat = consoleChat;
      stops.push(async () => chat.close());
      sinks.set('console', new ConsoleSink(chat));
      chats.push({ platform: 'console', ready: () => true });
      finished = chat.run();
    }
    // Chat platforms load only when configured: their libraries cost start-up time.
    let images: ChatImages | undefined;
    if (config.discord || config.telegram) {
      const chatImages = await import('./chat/images/images.ts');
      // Token images come from the platform's own hosts, which may be internal (the local platform).
      const created = new chatImages.ChatImages({
        logger: logger.child({ component: 'images' }),
        allowHosts: chatImages.imageHostsOf(Object.values(endpoints)),
        drawing: { workerUrl: new URL(`./chat/images/draw-worker.${SOURCE_EXTENSION}`, import.meta.url), warm: 1 },
      });
      images = created;
      stops.push(() => created.close());
    }
    if (config.discord) {
      const { startDiscord } = await import('./chat/discord/adapter.ts');
      const discord = await startDiscord({
        config: config.discord,
        engine,
        store,
        logger: logger.child({ component: 'discord' }),
        networks: platform.networks.all.map((n) => n.name),
        defaultNetwork,
        ...(images ? { images } : {}),
      });
      stops.push(() => discord.stop());
      sinks.set('discord', discord.sink);
      chats.push({ platform: 'discord', ready: discord.ready });
    }
    if (config.telegram) {
      const { startTelegram } = await import('./chat/telegram/adapter.ts');
      const telegram = await startTelegram({
        config: config.telegram,
        engine,
        store,
        logger: logger.child({ component: 'telegram' }),
        ...(images ? { images } : {}),
      });
      stops.push(() => telegram.stop());
      sinks.set('telegram', telegram.sink);
      chats.push({ platform: 'telegram', ready: telegram.ready });
    }
    // After the adapters: deliveries replayed from the journal need their sinks.
    // Streams open in the background: a platform that is down must not hold the chat back.
    stops.push(() => alertPipeline.stop());
    if (ingest) await ingest.start();
    if (claims) await claims.start();
    else await dispatcher.resume();
    void alertPipeline
      .start()
      .catch((error: unknown) => logger.error({ err: error }, 'alert pipeline failed to start'));
    stops.push(() => digestScheduler.stop());
    void digestScheduler
      .start()
      .then(() => digestLeader?.start())
      .catch((error: unknown) => logger.error({ err: error }, 'digest scheduler failed to start'));
    let http: HealthServer | undefined;
    if (config.http && metrics) {
      metrics.watch({
        streams: () => alertPipeline.status().streams,
        counters: () => alertPipeline.status().counters,
        queueDepth: () => dispatcher.depth(),
        journal: () => journal.stats(),
        backlog: () => alertPipeline.status().backlog,
        isCommand: (name) => engine.find(name.split(' ')[0] ?? '') !== undefined,
        droppedRecords: () => platform.droppedRecords.snapshot().byOperation,
      });
      const server = await startHealthServer({
        ...config.http,
        registry: metrics.registry,
        logger: logger.child({ component: 'http' }),
        readiness: () =>
          checkReadiness({
            watchedNetworks: () =>
              alertPipeline
                .status()
                .watchedNetworks.filter(
                  (network) => platform.networks.find(network) && (ingest?.leads(network) ?? true),
                ),
            streams: () => alertPipeline.status().streams,
            chats: () => chats,
            dataDir: config.dataDir,
            journal: () => alertPipeline.status().backlog,
          }),
      });
      http = server;
      stops.push(() => server.close());
    }
    logger.info({ commands: commands.length, dataDir: config.dataDir }, 'floorwatch started');
    return {
      config,
      logger,
      platform,
      engine,
      store,
      journal,
      alerts: alertPipeline,
      dispatcher,
      devnet,
      console: consoleChat,
      http: http?.address,
      finished,
      stop,
      onFatal: (listener) => {
        fatalListeners.push(listener);
        if (fatalError) listener(fatalError);
      },
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Links to the local platform's own pages: its marketplace's token pages and its explorer. */
export function devnetLinks(devnet: Devnet, configured?: LinkTemplates): LinkTemplates {
  return {
    token: configured?.token ?? `${devnet.url}/market/{network}/{collection}/{tokenId}`,
    transaction: {
      ...configured?.transaction,
      ...Object.fromEntries(devnet.networks.map((n) => [n.name, `${devnet.url}/explorer/{network}/tx/{txnHash}`])),
    },
  };
}

/** The local platform's native coin per network (the zero address among its currencies). */
export function nativeSymbolsOf(devnet: Devnet): Record<string, string> {
  const out: Record<string, string> = {};
  for (const network of devnet.info().networks) {
    const native = network.currencies.find((c) => /^0x0{40}$/.test(c.address));
    if (native) out[network.name] = native.symbol;
  }
  return out;
}

/** CLI entry: start, stop on SIGINT/SIGTERM or at the end of piped input, exit with a clear message on bad setup. */
async function cli(): Promise<void> {
  if (existsSync('.env')) process.loadEnvFile('.env');
  let bot: RunningBot;
  try {
    bot = await startBot();
  } catch (error) {
    if (error instanceof DatabaseError) {
      process.stderr.write(`floorwatch: the database cannot be used: ${error.message}\n`);
      process.exit(69);
    }
    if (error instanceof ConfigError || error instanceof StoreFileError || error instanceof DataDirError) {
      process.stderr.write(`floorwatch: ${error.message}\n`);
      process.exit(78);
    }
    if (error instanceof ChatStartError) {
      process.stderr.write(`floorwatch: ${error.message}\n`);
      process.exit(error.exitCode);
    }
    // Only the stack (name, message, frames): Node's own report of an uncaught error would print the
    // error's properties and causes too, where a library may keep what it sent, secrets included.
    process.stderr.write(`floorwatch: could not start: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  }
  let stopping = false;
  const shutdown = async (reason: string, code: number) => {
    if (stopping) return;
    stopping = true;
    bot.logger.info({ reason }, 'stopping');
    const timer = setTimeout(() => {
      bot.logger.error('shutdown took too long; exiting');
      process.exit(1);
    }, 10_000);
    timer.unref();
    await bot.stop();
    process.exit(code);
  };
  // Another process may already do this one's work: it stops at once, as a crash would, writing and
  // sending nothing more (a graceful stop would flush state); 75 (EX_TEMPFAIL) asks a supervisor to
  // start it again.
  bot.onFatal((error) => {
    process.stderr.write(`floorwatch: ${error.message}; stopping at once (exit 75)\n`);
    process.exit(75);
  });
  process.on('SIGINT', () => void shutdown('SIGINT', 0));
  process.on('SIGTERM', () => void shutdown('SIGTERM', 0));
  if (bot.console) {
    const chat = bot.console;
    await bot.finished;
    // A closed output (`npm start | head`) ends the bot as the end of input does: cleanly, code 0.
    await shutdown(chat.outputClosed ? 'output closed' : 'end of input', 0);
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await cli();
}
