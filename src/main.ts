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
import { Enricher } from './alerts/enrich.ts';
import { MarketHistory } from './alerts/market-history.ts';
import { AlertPipeline } from './alerts/pipeline.ts';
import { CommandEngine } from './bot/engine.ts';
import { RarityIndex } from './bot/rarity.ts';
import { loadCommands } from './bot/registry.ts';
import { ConsoleChat } from './chat/console/console-chat.ts';
import { ConsoleSink } from './chat/console/console-sink.ts';
import type { ChatImages } from './chat/images/images.ts';
import { ChatStartError } from './chat/start-error.ts';
import { type Config, ConfigError, loadConfig, secretsOf } from './config.ts';
import type { DeliveryLog, RulesRepository } from './core/ports.ts';
import type { WalletStore } from './core/wallets.ts';
import { ChatClaims } from './delivery/claims.ts';
import { Dispatcher } from './delivery/dispatcher.ts';
import type { AlertSink } from './delivery/sink.ts';
import type { Devnet } from './devnet/index.ts';
import { ChartPool } from './digests/chart-pool.ts';
import { DigestService } from './digests/digest-service.ts';
import { DigestScheduler } from './digests/scheduler.ts';
import { type HealthServer, startHealthServer } from './health/http.ts';
import { BotMetrics } from './health/metrics.ts';
import { checkReadiness } from './health/readiness.ts';
import { createLogger } from './logger.ts';
import { Links, type LinkTemplates } from './market/links.ts';
import { PlatformClient } from './platform/client.ts';
import { discoverPlatform, type PlatformDescription, PlatformDiscoveryError } from './platform/discovery.ts';
import type { Network } from './platform/networks.ts';
import { SignatureChecker } from './roles/siwe.ts';
import { WalletVerification } from './roles/verification.ts';
import { type PageServer, startPageServer } from './roles/web.ts';
import { FileCursorStore } from './store/cursors.ts';
import { DeliveryJournal } from './store/journal.ts';
import { DataDirError, lockDataDir } from './store/lock.ts';
import { DatabaseError } from './store/pg/errors.ts';
import type { Leadership, SharedDatabase } from './store/pg/index.ts';
import { StateStore, StoreFileError } from './store/state.ts';
import { FileWalletStore } from './store/wallets.ts';

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
  pipeline: AlertPipeline;
  dispatcher: Dispatcher;
  devnet: Devnet | undefined;
  console: ConsoleChat | undefined;
  /** The health and metrics listener, when FLOORWATCH_HTTP_PORT is set. */
  http: HealthServer['address'] | undefined;
  /** Verified wallets and verification links (the role rules read them). */
  wallets: WalletStore;
  verification: WalletVerification;
  /** The verification page's listener, when FLOORWATCH_PUBLIC_URL is set. */
  web: PageServer['address'] | undefined;
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
    const lock = await lockDataDir(config.dataDir, {
      onLost: fatal,
      onRetaken: (unrenewedMs) =>
        logger.warn(
          { unrenewedMs: Math.round(unrenewedMs) },
          'this process was paused or stalled past its lease on the data directory; nobody took it over: it goes on',
        ),
    });
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
    let discovered: PlatformDescription | undefined;
    if (config.platform.discoveryUrl) {
      // A platform that describes itself: what the configuration does not say is read from it.
      discovered = await discoverPlatform(config.platform.discoveryUrl);
      endpoints = { ...discovered.endpoints, ...config.platform.endpointOverrides };
      platformOptions = {
        ...platformOptions,
        projectId: config.platform.projectId ?? discovered.projectId,
        networks: config.platform.networks.length > 0 ? config.platform.networks : discovered.networks,
      };
      nativeSymbols = { ...discovered.nativeSymbols, ...config.platform.nativeSymbols };
      marketplaceContracts = { ...discovered.marketplaceContracts, ...config.marketplaceContracts };
      logger.info(
        { url: config.platform.discoveryUrl, networks: platformOptions.networks.map((n) => n.name) },
        'using the platform described at FLOORWATCH_PLATFORM_URL',
      );
    }
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
    const linkTemplates = devnet
      ? devnetLinks(devnet, config.links)
      : discovered?.pages
        ? describedLinks(discovered.pages, platformOptions.networks, config.links)
        : config.links;
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
    warnOfNetworksWithoutMarketplace(platform.networks.all, marketplaceContracts, logger, logFile !== undefined);
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
      store = await StateStore.open(join(config.dataDir, 'state.json'), {
        fence,
        logger: logger.child({ component: 'state' }),
      });
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
    let pipeline: AlertPipeline | undefined;
    const deliveryLogger = logger.child({ component: 'delivery' });
    const dispatcher = new Dispatcher({
      journal,
      sinks,
      logger: deliveryLogger,
      // Who may send: the holder of a chat's claim with a shared database, of the directory otherwise.
      fence: shared?.leases ?? lock,
      onUnreachable: (destination, reason) => void pipeline?.destinationUnreachable(destination, reason),
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

    // Begin wallet verification.
    const wallets: WalletStore = shared
      ? await (await import('./store/pg/wallets.ts')).PgWalletStore.open(
          shared.db,
          logger.child({ component: 'wallets' }),
        )
      : await FileWalletStore.open(join(config.dataDir, 'wallets.jsonl'));
    stops.push(() => wallets.close());
    const verification = await walletVerification(config, wallets, {
      chainId: platform.networks.find(defaultNetwork)?.chainId ?? 1,
      rpcUrl: (config.backfill.rpcUrl ?? devnet?.chainRpcUrl)?.replaceAll('{network}', defaultNetwork),
      devnet,
      logger: logger.child({ component: 'verify' }),
    });
    // End wallet verification.
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
      verification,
      digests: {
        preview: async (chatKey, digest) => {
          if (!digests) throw new Error('digests are not running');
          return (await digests.build(chatKey, digest, new Date())).reply;
        },
        nextRun: (digest) => scheduler?.nextRun(digest.hour, digest.minute, digest.timeZone) ?? null,
      },
      alerts: () => {
        const stats = journal.stats();
        return {
          streams: pipeline?.health() ?? [],
          journal: { records: stats.records, pending: stats.pending + stats.sending, failed: stats.failed },
          counters: pipeline?.counters ?? { logs: 0, events: 0, matched: 0, deliveries: 0, reorged: 0, dropped: 0 },
          backlog: pipeline?.backlog(),
        };
      },
    });
    if (metrics) engine.onOutcome((name, outcome) => metrics.command(name, outcome));
    // Begin backfill: the blocks missed while stopped or reconnecting, read back over JSON-RPC.
    const rpcUrl = config.backfill.rpcUrl ?? devnet?.chainRpcUrl ?? discovered?.chainRpcUrl;
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
    const alertPipeline = new AlertPipeline({
      ...(backfill ? { backfill } : {}),
      platform,
      store,
      journal,
      dispatcher: deliveryQueue,
      ...(ingest ? { ingests: (network: string) => ingest?.leads(network) ?? false } : {}),
      enricher: new Enricher(platform, engine.currencies, logger.child({ component: 'enrich' }), links),
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
        logger: logger.child({ component: 'discord' }),
        ...(images ? { images } : {}),
        // Set with /settings crosspost=on, which only announcement channels accept.
        crosspostIn: (channelId) => store.chat(`discord:${channelId}`).crosspost === true,
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
        streams: () => alertPipeline.health(),
        counters: () => alertPipeline.counters,
        queueDepth: () => dispatcher.depth(),
        journal: () => journal.stats(),
        backlog: () => alertPipeline.backlog(),
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
                .watchedNetworks()
                .filter((network) => platform.networks.find(network) && (ingest?.leads(network) ?? true)),
            streams: () => alertPipeline.health(),
            chats: () => chats,
            dataDir: config.dataDir,
            journal: () => alertPipeline.backlog(),
          }),
      });
      http = server;
      stops.push(() => server.close());
    }
    let web: PageServer | undefined;
    if (config.verification.publicUrl) {
      const server = await startPageServer({
        ...config.verification.web,
        publicUrl: config.verification.publicUrl,
        verification,
        logger: logger.child({ component: 'verify-page' }),
      });
      web = server;
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
      pipeline: alertPipeline,
      dispatcher,
      devnet,
      console: consoleChat,
      http: http?.address,
      wallets,
      verification,
      web: web?.address,
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

/**
 * Wallet verification over `store`: signatures checked on the default network (contract wallets
 * through its JSON-RPC), Telegram Mini App data checked with the bot's token, and with the local
 * platform its test wallets and the command that signs with them.
 */
async function walletVerification(
  config: Config,
  store: WalletStore,
  chain: { chainId: number; rpcUrl: string | undefined; devnet: Devnet | undefined; logger: Logger },
): Promise<WalletVerification> {
  const telegramToken = config.telegram?.token;
  const { checkInitData } = await import('./chat/telegram/web-app.ts');
  const testWallets = chain.devnet ? await import('./devnet/wallets.ts') : undefined;
  return new WalletVerification({
    store,
    checker: new SignatureChecker(chain.rpcUrl),
    logger: chain.logger,
    publicUrl: config.verification.publicUrl,
    chainId: chain.chainId,
    ...(telegramToken
      ? {
          miniAppIdentity: (initData: string, now: Date) => {
            const checked = checkInitData(initData, telegramToken, now);
            return checked.ok ? { ok: true as const, person: `telegram:${checked.userId}` } : { ok: false as const };
          },
        }
      : {}),
    ...(testWallets
      ? {
          testWallets: testWallets.TEST_WALLETS.map(({ index, kind, address }) => ({ index, kind, address })),
          signHint: (address: string, message: string) => {
            const wallet = testWallets.testWallet(address);
            return wallet
              ? `npm run --silent devnet -- sign --wallet ${wallet.index} ${shellQuote(message)}`
              : undefined;
          },
        }
      : {}),
  });
}

/** A text as one POSIX shell word (single quotes; a quote inside becomes '\''). */
export function shellQuote(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
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

/** Links to the pages of a platform that described itself, under those the configuration sets. */
function describedLinks(
  pages: { token: string; transaction: string },
  networks: readonly Network[],
  configured: LinkTemplates,
): LinkTemplates {
  return {
    token: configured.token ?? pages.token,
    transaction: { ...Object.fromEntries(networks.map((n) => [n.name, pages.transaction])), ...configured.transaction },
  };
}

/**
 * Listings, offers and sales are logs of the platform's marketplace contracts: a network without
 * them gets no such alert, which must not go unnoticed. Logged, and said on the terminal too when
 * the logs go to a file.
 */
function warnOfNetworksWithoutMarketplace(
  networks: readonly Network[],
  marketplaceContracts: Record<string, string[]>,
  logger: Logger,
  toTerminal: boolean,
): void {
  const without = networks.filter((n) => (marketplaceContracts[n.name] ?? []).length === 0).map((n) => n.name);
  if (without.length === 0) return;
  const message = `no marketplace contract for ${without.join(', ')}: listing, offer and sale alerts cannot start there (mint, transfer and burn alerts can). Set FLOORWATCH_MARKETPLACE_CONTRACTS, e.g. ${without[0]}:0x<the marketplace contract>.`;
  logger.warn({ networks: without }, message);
  if (toTerminal) process.stderr.write(`floorwatch: warning: ${message}\n`);
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

export const NO_CHAT_PLATFORM =
  'no chat platform is configured (set DISCORD_TOKEN and DISCORD_APPLICATION_ID, or TELEGRAM_BOT_TOKEN), and the terminal chat got no input: standard input is not a terminal and ended without a command (/dev/null, closed, or an empty pipe). For the terminal chat, run it on a terminal (docker run -it) or pipe commands in.';

/** Standard input that is not a terminal and ended without a byte: /dev/null, closed, an empty pipe or file. */
function gaveNothing(stdin: NodeJS.ReadStream): boolean {
  return stdin.isTTY !== true && ((stdin as { bytesRead?: number }).bytesRead ?? 0) === 0;
}

/**
 * CLI entry: start, stop on SIGINT/SIGTERM or at the end of piped input, exit with a clear message on bad
 * setup. Runs when this file is the script node was given, or when `npm start` (scripts/start.mjs) calls it.
 */
export async function cli(): Promise<void> {
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
    if (error instanceof PlatformDiscoveryError) {
      process.stderr.write(`floorwatch: ${error.message}\n`);
      process.exit(error.exitCode);
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
    if (!chat.outputClosed && !bot.config.discord && !bot.config.telegram && gaveNothing(process.stdin)) {
      // Run detached (`docker run -d`, a service manager): the terminal chat cannot be the chat meant.
      process.stderr.write(`floorwatch: ${NO_CHAT_PLATFORM}\n`);
      await shutdown('no chat platform configured and no input', 78);
      return;
    }
    // A closed output (`npm start | head`) ends the bot as the end of input does: cleanly, code 0.
    await shutdown(chat.outputClosed ? 'output closed' : 'end of input', 0);
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await cli();
}
