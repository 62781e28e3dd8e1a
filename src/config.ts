/**
 * Configuration: the environment (and an optional `.env` file, loaded by main) parsed once into a
 * typed object. Every problem names its variable; all problems are reported together.
 */
import { resolve } from 'node:path';
import { EXPLORER_TX_URLS, type Network, WELL_KNOWN_NETWORKS } from './platform/networks.ts';
import type { PlatformEndpoints } from './platform/services/context.ts';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export interface Config {
  platform: {
    /**
     * All five addresses when all are set. Undefined, with no `discoveryUrl`: start the local
     * platform in-process and use it.
     */
    endpoints: PlatformEndpoints | undefined;
    /**
     * FLOORWATCH_PLATFORM_URL: the base address of a platform that describes itself (the local
     * platform run by `npm run devnet`); its addresses, networks, marketplace contracts, chain
     * JSON-RPC and project are read from it at start, and each variable set here wins over it.
     */
    discoveryUrl: string | undefined;
    /** The addresses that are set, over those a discovered platform gives. */
    endpointOverrides: Partial<PlatformEndpoints>;
    accessKey: string | undefined;
    secretToken: string | undefined;
    projectId: number | undefined;
    /** Empty with the local platform: its own networks are used. */
    networks: Network[];
    /** Native coin symbol by network, from `name:chainId:SYMBOL` entries of FLOORWATCH_NETWORKS. */
    nativeSymbols: Record<string, string>;
  };
  devnet: { seed: number; blockIntervalMs: number; port: number };
  /** `platform:id`, e.g. `discord:1234`, `telegram:5678`. */
  operators: string[];
  allowlistAudience: number | undefined;
  /** How long a listing is remembered to leave out identical relists; 0 shows them all. */
  relistWindowHours: number;
  defaultNetwork: string | undefined;
  dataDir: string;
  logLevel: LogLevel;
  discord:
    | {
        token: string;
        applicationId: string;
        /** Register commands in this guild only (instant, for development); global otherwise. */
        guildId: string | undefined;
        /** REST base for a proxy or a test stand-in (ends in /api). */
        apiRoot: string | undefined;
        /** Discord permission that lets a member manage the bot's settings in a channel. */
        managePermission: 'ManageGuild' | 'ManageChannels';
        /**
         * The gateway shards this process opens (DISCORD_SHARD_IDS of DISCORD_SHARD_COUNT); all
         * shards of discord.js's default (one) when undefined.
         */
        shards?: DiscordShards | undefined;
      }
    | undefined;
  telegram:
    | {
        token: string;
        apiRoot: string | undefined;
        /** Webhook mode when set (the public https URL Telegram posts updates to); long polling otherwise. */
        webhookUrl: string | undefined;
        /** Checked on every webhook request (X-Telegram-Bot-Api-Secret-Token). */
        webhookSecret: string | undefined;
        /** Local port of the webhook listener (0: any free port, for tests). */
        webhookPort: number;
      }
    | undefined;
  /** The platform's marketplace contracts per network (their Request* logs are the listings, offers and sales). */
  marketplaceContracts: Record<string, string[]>;
  /**
   * Link templates: the token page on the platform's marketplace (FLOORWATCH_TOKEN_URL) and transaction
   * pages per network (FLOORWATCH_EXPLORER_URLS over the built-in explorers of well-known networks).
   */
  links: { token: string | undefined; transaction: Record<string, string> };
  /** Open the terminal chat even when a chat platform is configured. */
  console: boolean;
  /**
   * The health and metrics listener (`/healthz`, `/readyz`, `/metrics`); off when undefined.
   * Binds to 127.0.0.1 unless FLOORWATCH_HTTP_HOST says otherwise (0.0.0.0 in a container).
   */
  http: { host: string; port: number } | undefined;
  /**
   * Reading back, after a restart or a stream reconnect, the blocks the streams did not show: over the
   * chain's JSON-RPC at `rpcUrl` (FLOORWATCH_RPC_URL, `{network}` standing for the network's name;
   * undefined: the local platform's own when it runs in-process, else no backfill), at most
   * `maxBlocks` blocks at once (FLOORWATCH_BACKFILL_MAX_BLOCKS; 0 turns it off), older ones reported
   * as a gap.
   */
  backfill: { rpcUrl: string | undefined; maxBlocks: number };
  /**
   * The shared PostgreSQL database (FLOORWATCH_DATABASE_URL): rules, settings and deliveries live
   * there instead of the data directory, and any number of processes may run on it. Undefined: the
   * files in the data directory, one process.
   */
  database: { url: string; poolSize: number } | undefined;
}

/** Discord gateway shards of one process: `ids` (sorted, distinct, each below `count`) of `count` in all. */
export interface DiscordShards {
  ids: number[];
  count: number;
}

/** Discord documents no upper bound; this keeps a typo from expanding into millions of ids. */
const MAX_SHARD_COUNT = 65_536;

export class ConfigError extends Error {
  override name = 'ConfigError';
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(`Configuration is not valid:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.problems = problems;
  }
}

type Env = Readonly<Record<string, string | undefined>>;

const ENDPOINT_VARIABLES = {
  metadataUrl: { name: 'FLOORWATCH_METADATA_URL', template: false },
  marketplaceUrl: { name: 'FLOORWATCH_MARKETPLACE_URL', template: true },
  indexerUrl: { name: 'FLOORWATCH_INDEXER_URL', template: true },
  relayerUrl: { name: 'FLOORWATCH_RELAYER_URL', template: true },
  apiUrl: { name: 'FLOORWATCH_API_URL', template: false },
} as const;

function value(env: Env, name: string): string | undefined {
  const raw = env[name]?.trim();
  return raw ? raw : undefined;
}

function integer(env: Env, name: string, problems: string[], min: number, max: number): number | undefined {
  const raw = value(env, name);
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    problems.push(`${name} must be a whole number from ${min} to ${max}; got "${raw.slice(0, 40)}".`);
    return undefined;
  }
  return Number(raw);
}

function parseNetworks(
  raw: string,
  problems: string[],
): { networks: Network[]; nativeSymbols: Record<string, string> } {
  const networks: Network[] = [];
  const nativeSymbols: Record<string, string> = {};
  for (const entry of raw
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean)) {
    const custom = /^([a-z][a-z0-9-]{0,40}):(\d{1,12})(?::([A-Za-z0-9.]{1,12}))?$/i.exec(entry);
    if (custom) {
      const name = (custom[1] ?? '').toLowerCase();
      networks.push({ name, chainId: Number(custom[2]) });
      if (custom[3]) nativeSymbols[name] = custom[3];
      continue;
    }
    const known = WELL_KNOWN_NETWORKS.find((n) => n.name === entry.toLowerCase());
    if (known) networks.push(known);
    else {
      problems.push(
        `FLOORWATCH_NETWORKS: "${entry.slice(0, 40)}" is not a known network; write it as name:chainId or name:chainId:SYMBOL (e.g. mynet:12345:MYC, SYMBOL being its native coin) or use one of ${WELL_KNOWN_NETWORKS.map((n) => n.name).join(', ')}.`,
      );
    }
  }
  return { networks, nativeSymbols };
}

/**
 * DISCORD_SHARD_IDS (`0-3,8`: ids and inclusive ranges) with DISCORD_SHARD_COUNT; both or neither.
 *
 * @example parseShards({ DISCORD_SHARD_IDS: '0-1,3', DISCORD_SHARD_COUNT: '4' }, []) // { ids: [0, 1, 3], count: 4 }
 */
export function parseShards(env: Env, problems: string[]): DiscordShards | undefined {
  const rawIds = value(env, 'DISCORD_SHARD_IDS');
  const rawCount = value(env, 'DISCORD_SHARD_COUNT');
  if (rawIds === undefined && rawCount === undefined) return undefined;
  if (rawIds === undefined || rawCount === undefined) {
    const missing = rawIds === undefined ? 'DISCORD_SHARD_IDS' : 'DISCORD_SHARD_COUNT';
    problems.push(
      `${missing} is not set: DISCORD_SHARD_IDS and DISCORD_SHARD_COUNT go together (e.g. DISCORD_SHARD_IDS=0-1 with DISCORD_SHARD_COUNT=4), or leave both unset.`,
    );
    return undefined;
  }
  const count = integer(env, 'DISCORD_SHARD_COUNT', problems, 1, MAX_SHARD_COUNT);
  if (count === undefined) return undefined;
  const ids = new Set<number>();
  let valid = true;
  for (const entry of rawIds.split(',').map((e) => e.trim())) {
    const range = /^(\d{1,6})(?:\s*-\s*(\d{1,6}))?$/.exec(entry);
    const first = Number(range?.[1]);
    const last = range?.[2] === undefined ? first : Number(range[2]);
    if (!range || last < first) {
      problems.push(
        `DISCORD_SHARD_IDS: "${entry.slice(0, 20)}" must be a shard id or an ascending range, e.g. DISCORD_SHARD_IDS=0-3,8.`,
      );
      valid = false;
    } else if (last >= count) {
      problems.push(
        `DISCORD_SHARD_IDS: shard ${last} is not below DISCORD_SHARD_COUNT (${count}); shard ids run from 0 to ${count - 1}.`,
      );
      valid = false;
    } else {
      for (let id = first; id <= last; id++) ids.add(id);
    }
  }
  return valid ? { ids: [...ids].sort((a, b) => a - b), count } : undefined;
}

/**
 * A setting that has two names (`preferred` and an older `alias`): the one set, and the name it
 * was read from; both set to different values is a problem.
 */
function aliased(
  env: Env,
  preferred: string,
  alias: string,
  problems: string[],
): { value: string | undefined; name: string } {
  const first = value(env, preferred);
  const second = value(env, alias);
  if (first !== undefined && second !== undefined && first !== second) {
    problems.push(`${preferred} and ${alias} are two names of one setting and are set differently; set only one.`);
  }
  return first !== undefined || second === undefined
    ? { value: first, name: preferred }
    : { value: second, name: alias };
}

/** Parses the environment; throws {@link ConfigError} listing every problem. */
export function loadConfig(env: Env, cwd = process.cwd()): Config {
  const problems: string[] = [];

  const platformUrl = value(env, 'FLOORWATCH_PLATFORM_URL');
  if (platformUrl !== undefined && !isBaseUrl(platformUrl)) {
    problems.push(
      `FLOORWATCH_PLATFORM_URL must be the http(s) base address of the local platform, e.g. http://127.0.0.1:8777 (npm run devnet prints it); got "${platformUrl.slice(0, 80)}".`,
    );
  }
  const discoveryUrl =
    platformUrl !== undefined && isBaseUrl(platformUrl) ? platformUrl.replace(/\/+$/, '') : undefined;

  const given = Object.entries(ENDPOINT_VARIABLES).filter(([, v]) => value(env, v.name) !== undefined);
  let endpoints: PlatformEndpoints | undefined;
  const endpointOverrides: Partial<PlatformEndpoints> = {};
  if (given.length > 0) {
    const missing = Object.values(ENDPOINT_VARIABLES)
      .filter((v) => value(env, v.name) === undefined)
      .map((v) => v.name);
    // With a platform that describes itself, the addresses set replace some of those it gives.
    if (missing.length > 0 && platformUrl === undefined) {
      problems.push(
        `A real platform needs all five addresses; missing ${missing.join(', ')}. (For the local platform of npm run devnet, FLOORWATCH_PLATFORM_URL alone will do.)`,
      );
    }
    for (const [key, variable] of Object.entries(ENDPOINT_VARIABLES)) {
      const url = value(env, variable.name);
      if (url === undefined) continue;
      let parsed: URL | undefined;
      try {
        parsed = new URL(url.replaceAll('{network}', 'network'));
      } catch {
        problems.push(`${variable.name} is not a URL: "${url.slice(0, 80)}".`);
        continue;
      }
      if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
        problems.push(`${variable.name} must be an http(s) URL.`);
      } else if (parsed.search || parsed.username || parsed.password) {
        problems.push(`${variable.name} must not carry a query or credentials (keys go in FLOORWATCH_ACCESS_KEY).`);
      } else if (variable.template && !url.includes('{network}')) {
        problems.push(
          `${variable.name} must contain {network} where the network name goes, e.g. https://{network}-indexer.example.`,
        );
      }
      endpointOverrides[key as keyof PlatformEndpoints] = url.replace(/\/+$/, '');
    }
    if (missing.length === 0) endpoints = endpointOverrides as PlatformEndpoints;
  }
  const external = given.length > 0 || platformUrl !== undefined;

  const accessKey = value(env, 'FLOORWATCH_ACCESS_KEY');
  const secretToken = value(env, 'FLOORWATCH_SECRET_TOKEN');
  if (external && !accessKey) {
    problems.push(
      `FLOORWATCH_ACCESS_KEY is required with ${platformUrl === undefined ? 'a real platform' : 'FLOORWATCH_PLATFORM_URL (npm run devnet prints the key)'}.`,
    );
  }

  const networksRaw = value(env, 'FLOORWATCH_NETWORKS');
  const { networks, nativeSymbols } = networksRaw
    ? parseNetworks(networksRaw, problems)
    : { networks: [], nativeSymbols: {} };
  if (given.length > 0 && platformUrl === undefined && !networksRaw) {
    problems.push('FLOORWATCH_NETWORKS is required with a real platform, e.g. polygon,base.');
  }

  const operators: string[] = [];
  for (const entry of (value(env, 'FLOORWATCH_OPERATORS') ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean)) {
    if (/^(discord|telegram):[\w-]{1,40}$/.test(entry)) operators.push(entry);
    else
      problems.push(
        `FLOORWATCH_OPERATORS: "${entry.slice(0, 40)}" must look like discord:<user id> or telegram:<user id>.`,
      );
  }

  const logLevel = (value(env, 'LOG_LEVEL') ?? 'info').toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}; got "${logLevel.slice(0, 20)}".`);
  }

  const discordToken = value(env, 'DISCORD_TOKEN');
  const discordApp = value(env, 'DISCORD_APPLICATION_ID');
  if (discordToken && !discordApp) problems.push('DISCORD_APPLICATION_ID is required with DISCORD_TOKEN.');
  const telegramToken = value(env, 'TELEGRAM_BOT_TOKEN');
  if (telegramToken && !/^\d+:[\w-]{20,}$/.test(telegramToken)) {
    problems.push('TELEGRAM_BOT_TOKEN does not look like a BotFather token (digits:letters).');
  }

  const manage = value(env, 'DISCORD_MANAGE_PERMISSION');
  if (manage && manage !== 'ManageGuild' && manage !== 'ManageChannels') {
    problems.push('DISCORD_MANAGE_PERMISSION must be ManageGuild or ManageChannels.');
  }
  // The FLOORWATCH_ names are preferred; the shorter TELEGRAM_ names came first and still work.
  const hookUrl = aliased(env, 'FLOORWATCH_TELEGRAM_WEBHOOK_URL', 'TELEGRAM_WEBHOOK_URL', problems);
  const hookSecret = aliased(env, 'FLOORWATCH_TELEGRAM_WEBHOOK_SECRET', 'TELEGRAM_WEBHOOK_SECRET', problems);
  const hookPort = aliased(env, 'FLOORWATCH_TELEGRAM_WEBHOOK_PORT', 'TELEGRAM_WEBHOOK_PORT', problems);
  const webhookUrl = hookUrl.value;
  const webhookSecret = hookSecret.value;
  if (webhookUrl && !isHttpsUrl(webhookUrl)) {
    problems.push(`${hookUrl.name} must be the public https:// URL that Telegram posts updates to.`);
  }
  // The secret itself is never quoted: only its shape is described.
  if (webhookUrl && (!webhookSecret || !/^[A-Za-z0-9_-]{16,256}$/.test(webhookSecret))) {
    problems.push(
      `${hookSecret.name} (16-256 letters, digits, _ or -) is required with ${hookUrl.name}${webhookSecret ? '; the one set has another shape' : ''}.`,
    );
  }
  const webhookPort = integer(env, hookPort.name, problems, 0, 65_535) ?? 8443;
  const discordShards = parseShards(env, problems);

  const defaultNetwork = value(env, 'FLOORWATCH_DEFAULT_NETWORK')?.toLowerCase();
  if (defaultNetwork && networks.length > 0 && !networks.some((n) => n.name === defaultNetwork)) {
    problems.push(`FLOORWATCH_DEFAULT_NETWORK "${defaultNetwork}" is not in FLOORWATCH_NETWORKS.`);
  }

  const marketplaceContracts: Record<string, string[]> = {};
  for (const entry of (value(env, 'FLOORWATCH_MARKETPLACE_CONTRACTS') ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean)) {
    const match = /^([a-z][a-z0-9-]{0,40}):(0x[0-9a-fA-F]{40})$/i.exec(entry);
    if (!match) {
      problems.push(`FLOORWATCH_MARKETPLACE_CONTRACTS: "${entry.slice(0, 60)}" must look like network:0x<40 hex>.`);
      continue;
    }
    const network = (match[1] ?? '').toLowerCase();
    marketplaceContracts[network] = [...(marketplaceContracts[network] ?? []), (match[2] ?? '').toLowerCase()];
  }

  const tokenUrl = value(env, 'FLOORWATCH_TOKEN_URL');
  if (
    tokenUrl !== undefined &&
    !(isHttpUrl(tokenUrl) && tokenUrl.includes('{collection}') && tokenUrl.includes('{tokenId}'))
  ) {
    problems.push(
      `FLOORWATCH_TOKEN_URL must be an http(s) address with {collection} and {tokenId} (and optionally {network}, {chainId}); got "${tokenUrl.slice(0, 80)}".`,
    );
  }
  const transactionUrls: Record<string, string> = { ...EXPLORER_TX_URLS };
  for (const entry of (value(env, 'FLOORWATCH_EXPLORER_URLS') ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean)) {
    const match = /^([a-z][a-z0-9-]{0,40})=(.+)$/i.exec(entry);
    const template = match?.[2] ?? '';
    if (!match || !isHttpUrl(template) || !template.includes('{txnHash}')) {
      problems.push(
        `FLOORWATCH_EXPLORER_URLS: "${entry.slice(0, 80)}" must look like network=https://explorer.example/tx/{txnHash}.`,
      );
      continue;
    }
    transactionUrls[(match[1] ?? '').toLowerCase()] = template;
  }

  const httpPort = integer(env, 'FLOORWATCH_HTTP_PORT', problems, 0, 65_535);
  const httpHost = value(env, 'FLOORWATCH_HTTP_HOST');
  if (
    httpHost !== undefined &&
    !/^(?:[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*|[0-9A-Fa-f:.]{2,45})$/.test(httpHost)
  ) {
    problems.push(`FLOORWATCH_HTTP_HOST must be a host name or an IP address; got "${httpHost.slice(0, 40)}".`);
  }
  if (httpHost !== undefined && value(env, 'FLOORWATCH_HTTP_PORT') === undefined) {
    problems.push('FLOORWATCH_HTTP_HOST is set but FLOORWATCH_HTTP_PORT is not; set the port to enable the listener.');
  }

  const rpcUrl = value(env, 'FLOORWATCH_RPC_URL');
  if (rpcUrl !== undefined) {
    if (!isHttpUrl(rpcUrl)) {
      problems.push(
        `FLOORWATCH_RPC_URL must be an http(s) JSON-RPC address, e.g. https://{network}.rpc.example/KEY; got "${rpcUrl.slice(0, 12)}…".`,
      );
    } else if (networks.length > 1 && !rpcUrl.includes('{network}')) {
      problems.push(
        'FLOORWATCH_RPC_URL must contain {network} where the network name goes: FLOORWATCH_NETWORKS lists several networks.',
      );
    }
  }
  const backfillMaxBlocks = integer(env, 'FLOORWATCH_BACKFILL_MAX_BLOCKS', problems, 0, 1_000_000) ?? 5_000;
  const databaseUrl = value(env, 'FLOORWATCH_DATABASE_URL');
  if (databaseUrl !== undefined && !isPostgresUrl(databaseUrl)) {
    problems.push(
      'FLOORWATCH_DATABASE_URL must be a PostgreSQL address, e.g. postgres://floorwatch:PASSWORD@db.example:5432/floorwatch.',
    );
  }
  const databasePool = integer(env, 'FLOORWATCH_DATABASE_POOL', problems, 2, 200) ?? 10;

  const config: Config = {
    platform: {
      endpoints,
      discoveryUrl,
      endpointOverrides,
      accessKey,
      secretToken,
      projectId: integer(env, 'FLOORWATCH_PROJECT_ID', problems, 1, Number.MAX_SAFE_INTEGER),
      networks,
      nativeSymbols,
    },
    devnet: {
      seed: integer(env, 'FLOORWATCH_DEVNET_SEED', problems, 0, 2 ** 31) ?? 1,
      blockIntervalMs: integer(env, 'FLOORWATCH_DEVNET_BLOCK_MS', problems, 0, 3_600_000) ?? 5_000,
      port: integer(env, 'FLOORWATCH_DEVNET_PORT', problems, 0, 65_535) ?? 0,
    },
    operators,
    marketplaceContracts,
    links: { token: tokenUrl, transaction: transactionUrls },
    allowlistAudience: integer(env, 'FLOORWATCH_ALLOWLIST_AUDIENCE', problems, 1, Number.MAX_SAFE_INTEGER),
    relistWindowHours: integer(env, 'FLOORWATCH_RELIST_WINDOW_HOURS', problems, 0, 24 * 30) ?? 24,
    defaultNetwork,
    dataDir: resolve(cwd, value(env, 'FLOORWATCH_DATA_DIR') ?? 'data'),
    logLevel: logLevel as LogLevel,
    discord:
      discordToken && discordApp
        ? {
            token: discordToken,
            applicationId: discordApp,
            guildId: value(env, 'DISCORD_GUILD_ID'),
            apiRoot: value(env, 'DISCORD_API_ROOT'),
            managePermission: manage === 'ManageChannels' ? 'ManageChannels' : 'ManageGuild',
            shards: discordShards,
          }
        : undefined,
    telegram: telegramToken
      ? {
          token: telegramToken,
          apiRoot: value(env, 'TELEGRAM_API_ROOT'),
          webhookUrl,
          webhookSecret,
          webhookPort,
        }
      : undefined,
    console: value(env, 'FLOORWATCH_CONSOLE') === '1' || value(env, 'FLOORWATCH_CONSOLE') === 'true',
    http: httpPort === undefined ? undefined : { host: httpHost ?? '127.0.0.1', port: httpPort },
    backfill: { rpcUrl, maxBlocks: backfillMaxBlocks },
    database: databaseUrl === undefined ? undefined : { url: databaseUrl, poolSize: databasePool },
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

/** Secrets of a configuration, to scrub from anything printed. */
export function secretsOf(config: Config): string[] {
  return [
    config.platform.accessKey,
    config.platform.secretToken,
    config.discord?.token,
    config.telegram?.token,
    config.telegram?.webhookSecret,
    ...databasePasswords(config.database?.url),
  ].filter((s): s is string => typeof s === 'string' && s.length >= 4);
}

function isPostgresUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'postgres:' || url.protocol === 'postgresql:') && url.hostname !== '';
  } catch {
    return false;
  }
}

/** Query parameters of a PostgreSQL URL that hold a password (pg reads both). */
const QUERY_PASSWORDS = new Set(['password', 'sslpassword']);

/** The database URL's passwords, in the userinfo or the query string, as written and as decoded. */
function databasePasswords(url: string | undefined): string[] {
  if (!url) return [];
  try {
    const parsed = new URL(url);
    const written = [parsed.password];
    for (const pair of parsed.search.slice(1).split('&')) {
      const at = pair.indexOf('=');
      if (at > 0 && QUERY_PASSWORDS.has(safeDecode(pair.slice(0, at)))) written.push(pair.slice(at + 1));
    }
    for (const key of QUERY_PASSWORDS) written.push(...parsed.searchParams.getAll(key));
    return [...new Set(written.flatMap((value) => [value, safeDecode(value)]))].filter((value) => value !== '');
  } catch {
    return [];
  }
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function isHttpsUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === 'https:' && !url.username && !url.password && !url.hash;
  } catch {
    return false;
  }
}

/** An http(s) address with nothing but a host, a port and perhaps a path. */
function isBaseUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (
      (url.protocol === 'https:' || url.protocol === 'http:') &&
      !url.username &&
      !url.password &&
      !url.search &&
      !url.hash
    );
  } catch {
    return false;
  }
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text.replace(/\{\w+\}/g, 'x'));
    return url.protocol === 'https:' || url.protocol === 'http:';
  } catch {
    return false;
  }
}
