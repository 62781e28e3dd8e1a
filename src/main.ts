/**
 * Composition root: configuration -> logger -> platform (the local one when none is configured)
 * -> deployment (files or the shared database) -> alerts, digests, command engine -> chat adapters.
 * Nothing else wires components together.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { Backfill } from './alerts/backfill.ts';
import { type Alerts, type AlertsStatus, createAlerts } from './alerts/index.ts';
import type { AlertStatus } from './bot/command.ts';
import { CommandEngine } from './bot/engine.ts';
import { RarityIndex } from './bot/rarity.ts';
import { loadCommands } from './bot/registry.ts';
import type { ConsoleChat } from './chat/console/console-chat.ts';
import { startChats, wantsConsole } from './chat/start.ts';
import { ChatStartError } from './chat/start-error.ts';
import { type Config, ConfigError, loadConfig, secretsOf } from './config.ts';
import type { JournalStats } from './core/deliveries.ts';
import type { DeliveryLog, RulesRepository } from './core/ports.ts';
import { destinationKey } from './core/types.ts';
import type { WalletStore } from './core/wallets.ts';
import { Dispatcher } from './delivery/dispatcher.ts';
import type { AlertSink } from './delivery/sink.ts';
import { pauseRulesOfUnreachable } from './delivery/unreachable.ts';
import { type Deployment, openDeployment } from './deployment/index.ts';
import type { Devnet } from './devnet/index.ts';
import { createDigests } from './digests/index.ts';
import type { HealthServer } from './health/http.ts';
import { startHealth } from './health/index.ts';
import { BotMetrics } from './health/metrics.ts';
import { createLogger } from './logger.ts';
import { CurrencyDirectory } from './market/currencies.ts';
import { Links, type LinkTemplates } from './market/links.ts';
import { PlatformClient } from './platform/client.ts';
import { discoverPlatform, type PlatformDescription, PlatformDiscoveryError } from './platform/discovery.ts';
import type { Network } from './platform/networks.ts';
import { HoldingsReader } from './roles/holdings.ts';
import { SignatureChecker } from './roles/siwe.ts';
import { RoleSync } from './roles/sync.ts';
import { WalletVerification } from './roles/verification.ts';
import { type PageServer, startPageServer } from './roles/web.ts';
import { DataDirError, lockDataDir } from './store/files/lock.ts';
import { StoreFileError } from './store/files/state.ts';
import { DatabaseError } from './store/pg/errors.ts';

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
  /** Verified wallets and verification links (the role rules read them). */
  wallets: WalletStore;
  verification: WalletVerification;
  /** The verification page's listener, when FLOORWATCH_PUBLIC_URL is set. */
  web: PageServer['address'] | undefined;
  /** Holder roles: rules, grants and their sync (its counters, for benchmarks and tests). */
  roles: RoleSync;
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
  const { logger, toFile } = openLogger(config, options.logDestination, stdin);
  const life = new Lifetime(logger);
  try {
    // First, so that a second process on the same directory changes nothing before it is refused.
    const lock = await lockDataDir(config.dataDir, {
      onLost: life.fatal,
      onRetaken: (unrenewedMs) =>
        logger.warn(
          { unrenewedMs: Math.round(unrenewedMs) },
          'this process was paused or stalled past its lease on the data directory; nobody took it over: it goes on',
        ),
    });
    life.onStop(() => lock.release());
    const metrics = config.http ? new BotMetrics() : undefined;
    const setup = await openPlatform(config, logger, life, metrics);
    warnOfNetworksWithoutMarketplace(setup.platform.networks.all, setup.marketplaceContracts, logger, toFile);
    const { platform } = setup;
    const deployment = await openDeployment(config, { lock, logger, onLeaseLost: life.fatal });
    life.onStop(() => deployment.close());
    const { rules, deliveries } = deployment;

    const sinks = new Map<AlertSink['platform'], AlertSink>();
    const deliveryLogger = logger.child({ component: 'delivery' });
    const dispatcher = new Dispatcher({
      journal: deliveries,
      sinks,
      logger: deliveryLogger,
      fence: deployment.sendFence,
      // A late alert's note shows its clock in the chat's digest time zone where readers' own cannot be used.
      timeZoneOf: (destination) => rules.chat(destinationKey(destination)).digest?.timeZone,
      onUnreachable: pauseRulesOfUnreachable(rules, logger.child({ component: 'alerts' })),
      onOutcome: (outcome, chatPlatform, count) => {
        metrics?.delivery(outcome, chatPlatform, count);
        deliveryLogger.debug({ outcome, platform: chatPlatform, count }, 'alert delivery');
      },
    });
    life.onStop(() => dispatcher.stop());
    const roles = deployment.roles(dispatcher, () => platform.networks.all.map((n) => n.name));
    life.onStop(() => roles.stop());

    // Holder roles: kept in sync from the verified wallets, the streams (a follower of the alert path)
    // and a full re-check run by the process the deployment says.
    const rolesLogger = logger.child({ component: 'roles' });
    const holderRoles = new RoleSync({
      wallets: deployment.wallets,
      store: deployment.holderRoles,
      holdings: new HoldingsReader(platform, { logger: rolesLogger }),
      logger: rolesLogger,
      graceMs: config.roles.graceHours * 3_600_000,
      recheckEveryMs: config.roles.recheckHours * 3_600_000,
      leads: () => roles.checksHolderRoles(),
    });

    const currencies = new CurrencyDirectory(platform, setup.nativeSymbols);
    const alerts = createAlerts({
      followers: [holderRoles],
      platform,
      rules,
      deliveries,
      queue: roles.queue,
      ingests: roles.ingests,
      currencies,
      links: setup.links,
      logger: logger.child({ component: 'alerts' }),
      marketplaceContracts: setup.marketplaceContracts,
      relistWindowMs: config.relistWindowHours * 60 * 60 * 1000,
      whaleUsd: config.whaleUsd,
      listingEditWindowMs: config.listingEditHours * 60 * 60 * 1000,
      listingExpiryCheckMs: config.listingExpiryCheckSeconds * 1000,
      market: deployment.market,
      backfill: await openBackfill(config, setup, deployment, logger),
      completeness: deployment.completeness,
    });
    const digests = createDigests({
      platform,
      rules,
      deliveries,
      queue: roles.queue,
      currencies,
      logger: logger.child({ component: 'digests' }),
      projectId: setup.projectId,
      market: deployment.market,
      chartWorkerUrl: new URL(`./digests/chart-worker.${SOURCE_EXTENSION}`, import.meta.url),
      posts: roles.postsDigests,
      completeness: deployment.completeness,
    });

    const verification = await walletVerification(config, deployment.wallets, setup, logger);

    const commands = await loadCommands(COMMANDS_DIR);
    const engine = new CommandEngine({
      platform,
      store: rules,
      logger: logger.child({ component: 'commands' }),
      settings: {
        operators: config.operators,
        projectId: setup.projectId,
        allowlistAudience: config.allowlistAudience,
        defaultNetwork: setup.defaultNetwork,
        version: VERSION,
        discordManagePermission: config.discord?.managePermission,
      },
      commands,
      links: setup.links,
      market: {
        history: deployment.market,
        rarity: new RarityIndex(platform, { logger: logger.child({ component: 'rarity' }) }),
      },
      currencies,
      digests,
      verification,
      roles: holderRoles,
      alerts: async () => {
        const today = new Date().toISOString().slice(0, 10);
        const [stats, completeness] = await Promise.all([
          deliveries.counts(),
          deployment.completeness.days(today, today).catch((error: unknown) => {
            logger.warn({ err: error }, 'could not read the completeness counts');
            return undefined;
          }),
        ]);
        return {
          ...alertStatus(alerts.status(), stats),
          ...(completeness ? { completeness: { day: today, networks: completeness } } : {}),
        };
      },
    });
    if (metrics) engine.onOutcome((name, outcome) => metrics.command(name, outcome));

    const chats = await startChats({
      config,
      engine,
      logger,
      stdin,
      stdout: options.stdout ?? process.stdout,
      platformUrls: Object.values(platform.endpoints),
      sinks,
      drawWorkerUrl: new URL(`./chat/images/draw-worker.${SOURCE_EXTENSION}`, import.meta.url),
      holderRoles: {
        useSink: (sink) => holderRoles.useSink(sink),
        joinRequest: (request) => holderRoles.joinRequest(request),
      },
    });
    life.onStop(() => chats.stop());
    // After the adapters (the re-check needs their sinks), before the streams (its collections join them);
    // stopped before the adapters, so changes under way finish while their sinks still work.
    life.onStop(() => holderRoles.stop());
    await holderRoles.start();
    await roles.startHolderRoleChecks(() => void holderRoles.recheckAll());

    // After the adapters: deliveries replayed from the journal need their sinks.
    life.onStop(() => alerts.stop());
    await roles.start(
      () => void alerts.replan().catch((error: unknown) => logger.error({ err: error }, 'could not open the streams')),
    );
    // Streams open in the background: a platform that is down must not hold the chat back.
    void alerts.start().catch((error: unknown) => logger.error({ err: error }, 'alert pipeline failed to start'));
    life.onStop(() => digests.stop());
    void digests
      .start()
      .then(() => roles.startDigests(() => void digests.catchUp()))
      .catch((error: unknown) => logger.error({ err: error }, 'digest scheduler failed to start'));

    const http =
      config.http && metrics
        ? await startHealth({
            ...config.http,
            metrics,
            logger: logger.child({ component: 'http' }),
            sources: {
              streams: () => alerts.status().streams,
              counters: () => alerts.status().counters,
              backlog: () => alerts.status().backlog,
              // Networks this process must have streams for: watched, and ingested here.
              watchedNetworks: () =>
                alerts.status().watchedNetworks.filter((n) => platform.networks.find(n) && roles.ingests(n)),
              queueDepth: () => dispatcher.depth(),
              journal: () => deliveries.counts(),
              isCommand: (name) => engine.find(name.split(' ')[0] ?? '') !== undefined,
              droppedRecords: () => platform.droppedRecords.snapshot().byOperation,
              chats: () => chats.ready,
              dataDir: config.dataDir,
            },
          })
        : undefined;
    if (http) life.onStop(() => http.close());
    const web = config.verification.publicUrl
      ? await startPageServer({
          ...config.verification.web,
          publicUrl: config.verification.publicUrl,
          verification,
          logger: logger.child({ component: 'verify-page' }),
        })
      : undefined;
    if (web) life.onStop(() => web.close());
    logger.info({ commands: commands.length, dataDir: config.dataDir }, 'floorwatch started');
    return {
      config,
      logger,
      platform,
      engine,
      store: rules,
      journal: deliveries,
      alerts,
      dispatcher,
      devnet: setup.devnet,
      console: chats.console,
      http: http?.address,
      wallets: deployment.wallets,
      verification,
      web: web?.address,
      roles: holderRoles,
      finished: chats.finished,
      stop: () => life.stop(),
      onFatal: (listener) => life.onFatal(listener),
    };
  } catch (error) {
    await life.stop();
    throw error;
  }
}

/** What /status shows of the alert path: its own status, and the delivery log's counts. */
function alertStatus(alerts: AlertsStatus, stats: JournalStats): AlertStatus {
  return {
    streams: alerts.streams,
    journal: { records: stats.records, pending: stats.pending + stats.sending, failed: stats.failed },
    counters: alerts.counters,
    backlog: alerts.backlog,
  };
}

/**
 * The logger: to stderr, or to the data directory's log file when the terminal chat runs on a
 * terminal (logs would mix with the prompt).
 */
function openLogger(
  config: Config,
  destination: StartOptions['logDestination'],
  stdin: Readable & { isTTY?: boolean },
): { logger: Logger; toFile: boolean } {
  const logFile =
    destination === undefined && wantsConsole(config) && stdin.isTTY === true
      ? join(config.dataDir, LOG_FILE)
      : undefined;
  try {
    const logger = createLogger(config.logLevel, secretsOf(config), destination ?? logFile ?? 2);
    if (logFile) process.stderr.write(`floorwatch: logs go to ${logFile}\n`);
    return { logger, toFile: logFile !== undefined };
  } catch (error) {
    // The data directory cannot take the log file: the checks below say why; log to stderr meanwhile.
    if (!logFile) throw error;
    return { logger: createLogger(config.logLevel, secretsOf(config), 2), toFile: false };
  }
}

/**
 * What runs until the bot stops: the steps that stop it, run in reverse order of start, and the one
 * error after which it cannot go on.
 */
class Lifetime {
  readonly #logger: Logger;
  readonly #stops: Array<() => Promise<void>> = [];
  readonly #fatalListeners: Array<(error: Error) => void> = [];
  #fatalError: Error | undefined;

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** The bot cannot go on safely (a lease lost): its listeners stop it at once. */
  readonly fatal = (error: Error): void => {
    if (this.#fatalError) return;
    this.#fatalError = error;
    this.#logger.error({ err: error }, 'cannot go on: stopping');
    for (const listener of this.#fatalListeners) listener(error);
  };

  onFatal(listener: (error: Error) => void): void {
    this.#fatalListeners.push(listener);
    if (this.#fatalError) listener(this.#fatalError);
  }

  onStop(step: () => Promise<void>): void {
    this.#stops.push(step);
  }

  async stop(): Promise<void> {
    for (const step of this.#stops.splice(0).reverse()) {
      try {
        await step();
      } catch (error) {
        this.#logger.warn({ err: error }, 'error while stopping');
      }
    }
  }
}

/** The platform the bot talks to, and what it says of itself. */
interface PlatformSetup {
  platform: PlatformClient;
  /** The local platform, when no platform is configured. */
  devnet: Devnet | undefined;
  projectId: number | undefined;
  nativeSymbols: Record<string, string>;
  marketplaceContracts: Record<string, string[]>;
  links: Links;
  defaultNetwork: string;
  /** The chains' JSON-RPC address (`{network}` for the network's name), for backfill. */
  rpcUrl: string | undefined;
}

/** The configured platform, or the local one started in-process when none is configured. */
async function openPlatform(
  config: Config,
  logger: Logger,
  life: Lifetime,
  metrics: BotMetrics | undefined,
): Promise<PlatformSetup> {
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
    life.onStop(() => running.close());
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
  const platformLogger = logger.child({ component: 'platform' });
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
  life.onStop(() => platform.close());
  const defaultNetwork = config.defaultNetwork ?? platform.networks.all[0]?.name;
  if (!defaultNetwork) throw new ConfigError(['FLOORWATCH_NETWORKS lists no network.']);
  // With the local platform the networks are known only now: the configuration could not check this.
  if (!platform.networks.all.some((n) => n.name === defaultNetwork)) {
    const known = platform.networks.all.map((n) => n.name).join(', ');
    throw new ConfigError([
      `FLOORWATCH_DEFAULT_NETWORK "${defaultNetwork}" is not a network of the platform (${known}).`,
    ]);
  }
  const linkTemplates = devnet
    ? devnetLinks(devnet, config.links)
    : discovered?.pages
      ? describedLinks(discovered.pages, platformOptions.networks, config.links)
      : config.links;
  return {
    platform,
    devnet,
    projectId: platformOptions.projectId,
    nativeSymbols,
    marketplaceContracts,
    links: new Links(linkTemplates, platform.networks.all),
    defaultNetwork,
    rpcUrl: config.backfill.rpcUrl ?? devnet?.chainRpcUrl ?? discovered?.chainRpcUrl,
  };
}

/** Backfill: the blocks missed while stopped or reconnecting, read back over JSON-RPC, when an address is known. */
async function openBackfill(
  config: Config,
  setup: PlatformSetup,
  deployment: Deployment,
  logger: Logger,
): Promise<Backfill | undefined> {
  const rpcUrl = setup.rpcUrl;
  if (!rpcUrl || config.backfill.maxBlocks <= 0) {
    logger.info('no FLOORWATCH_RPC_URL: blocks missed while stopped are not read back');
    return undefined;
  }
  const cursors = await deployment.cursors((error) => logger.warn({ err: error }, 'could not save the block cursors'));
  return new Backfill({
    settings: { rpcUrl, maxBlocks: config.backfill.maxBlocks, resumeOnActivate: deployment.takesOverNetworks },
    cursors,
    logger: logger.child({ component: 'backfill' }),
    chainId: (network) => setup.platform.networks.find(network)?.chainId,
  });
}

/**
 * Wallet verification over `store`: signatures checked on the default network (contract wallets
 * through the chains' JSON-RPC), Telegram Mini App data checked with the bot's token, and with the
 * local platform its test wallets and the command that signs with them.
 */
async function walletVerification(
  config: Config,
  store: WalletStore,
  setup: PlatformSetup,
  logger: Logger,
): Promise<WalletVerification> {
  const { defaultNetwork, devnet } = setup;
  const telegramToken = config.telegram?.token;
  const { checkInitData } = await import('./chat/telegram/web-app.ts');
  const testWallets = devnet ? await import('./devnet/wallets.ts') : undefined;
  return new WalletVerification({
    store,
    checker: new SignatureChecker(setup.rpcUrl?.replaceAll('{network}', defaultNetwork)),
    logger: logger.child({ component: 'verify' }),
    publicUrl: config.verification.publicUrl,
    chainId: setup.platform.networks.find(defaultNetwork)?.chainId ?? 1,
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
