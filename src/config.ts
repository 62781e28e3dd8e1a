/**
 * Configuration: the environment (and an optional `.env` file, loaded by main) parsed once into a
 * typed object by a valibot schema: one entry per variable ({@link VARIABLES}), then the rules
 * between variables. Every problem names its variable; all problems are reported together.
 */
import { resolve } from 'node:path';
import * as v from 'valibot';
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
  /** Sales worth at least this many US dollars are marked as a whale's in their alert; 0 marks none. */
  whaleUsd: number;
  /** How long after its alert a listing's message is edited to say sold, cancelled or expired; 0 never. */
  listingEditHours: number;
  /** How often the ingesting process looks for listings that expired (their messages say EXPIRED). */
  listingExpiryCheckSeconds: number;
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
        /** DISCORD_REQUESTS_PER_SECOND: the bot's global limit (Discord's 50 when unset). */
        requestsPerSecond: number | undefined;
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
        /** TELEGRAM_MESSAGES_PER_SECOND: the bot's messages a second across chats (Telegram's 30 when unset). */
        messagesPerSecond: number | undefined;
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
  /** Wallet verification: the page people sign on, and its listener. */
  verification: VerificationConfig;
  /**
   * Holder roles: `graceHours` (FLOORWATCH_GATE_GRACE_HOURS, default 24) a member of a gated Telegram
   * group who stopped holding keeps their place; `recheckHours` (FLOORWATCH_ROLES_RECHECK_HOURS,
   * default 6; 0: at start only) between two full re-checks of every verified member.
   */
  roles: { graceHours: number; recheckHours: number };
}

/**
 * The verification page: `publicUrl` (FLOORWATCH_PUBLIC_URL) is where people reach it, https (or
 * http to this machine, for a local demo), optionally with a path prefix; undefined: no page, and
 * /verify offers the terminal chat's paste path only. `web` is where its own listener binds
 * (FLOORWATCH_WEB_HOST, default 127.0.0.1 behind a TLS proxy; FLOORWATCH_WEB_PORT, default 8787).
 */
export interface VerificationConfig {
  publicUrl: URL | undefined;
  web: { host: string; port: number };
}

/** Default port of the verification page's listener. */
export const DEFAULT_WEB_PORT = 8787;

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

/**
 * Reads the text of one variable (trimmed, never blank) into its value, reporting what is wrong
 * with it through `problem`: a message that names the variable and never quotes a secret. A value
 * with problems is not used.
 */
type Reader<T> = (text: string, variable: { name: string; problem: (message: string) => void }) => T;

/**
 * One entry of the environment's schema: the variable `name`, unset when blank (undefined), else its
 * text (trimmed) and its value as `read` reads it. Adding a setting is adding one of these to
 * {@link VARIABLES}.
 */
function variable<const N extends string, T>(name: N, read: Reader<T>) {
  const schema = v.pipe(
    v.optional(v.string(`${name} must be text.`)),
    v.rawTransform(({ dataset, addIssue }): { text: string; value: T } | undefined => {
      const text = dataset.value?.trim();
      if (!text) return undefined;
      return { text, value: read(text, { name, problem: (message) => addIssue({ message }) }) };
    }),
  );
  return { [name]: schema } as { [K in N]: typeof schema };
}

/** Any text (names, ids, secrets: never quoted in a message). */
const plainText: Reader<string> = (value) => value;

/** US dollars, `5000`, `$5000` or `2500.50`, up to a trillion. */
const usdAmount: Reader<number> = (value, { name, problem }) => {
  const match = /^\$?(\d{1,13}(\.\d{1,2})?)$/.exec(value);
  const amount = Number(match?.[1]);
  if (!match || !(amount <= 1e12))
    problem(`${name} must be an amount of US dollars like 10000 or $2500.50; got "${value.slice(0, 40)}".`);
  return amount;
};

function wholeNumber(min: number, max: number): Reader<number> {
  return (value, { name, problem }) => {
    if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
      problem(`${name} must be a whole number from ${min} to ${max}; got "${value.slice(0, 40)}".`);
    }
    return Number(value);
  };
}

/** A comma-separated list, each entry read by `entry` (blank entries skipped unless `keepBlank`). */
function listOf<T>(entry: Reader<T>, keepBlank = false): Reader<T[]> {
  return (value, variable) =>
    value
      .split(',')
      .map((item) => item.trim())
      .filter((item) => keepBlank || item !== '')
      .map((item) => entry(item, variable));
}

/** One of the platform's five addresses; `template`: it must say where the network name goes. */
function endpoint(template: boolean): Reader<string> {
  return (url, { name, problem }) => {
    let parsed: URL | undefined;
    try {
      parsed = new URL(url.replaceAll('{network}', 'network'));
    } catch {
      problem(`${name} is not a URL: "${url.slice(0, 80)}".`);
    }
    if (parsed === undefined) {
      // Said above.
    } else if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
      problem(`${name} must be an http(s) URL.`);
    } else if (parsed.search || parsed.username || parsed.password) {
      problem(`${name} must not carry a query or credentials (keys go in FLOORWATCH_ACCESS_KEY).`);
    } else if (template && !url.includes('{network}')) {
      problem(`${name} must contain {network} where the network name goes, e.g. https://{network}-indexer.example.`);
    }
    return url.replace(/\/+$/, '');
  };
}

/** FLOORWATCH_PLATFORM_URL: an http(s) address with nothing but a host, a port and perhaps a path. */
const platformUrl: Reader<string> = (url, { problem }) => {
  if (!isBaseUrl(url)) {
    problem(
      `FLOORWATCH_PLATFORM_URL must be the http(s) base address of the local platform, e.g. http://127.0.0.1:8777 (npm run devnet prints it); got "${url.slice(0, 80)}".`,
    );
  }
  return url.replace(/\/+$/, '');
};

/** A FLOORWATCH_NETWORKS entry: `name:chainId`, `name:chainId:SYMBOL` (its native coin) or a well-known name. */
const networkEntry: Reader<{ network: Network; symbol?: string } | undefined> = (entry, { problem }) => {
  const custom = /^([a-z][a-z0-9-]{0,40}):(\d{1,12})(?::([A-Za-z0-9.]{1,12}))?$/i.exec(entry);
  if (custom) {
    const network = { name: (custom[1] ?? '').toLowerCase(), chainId: Number(custom[2]) };
    return custom[3] ? { network, symbol: custom[3] } : { network };
  }
  const known = WELL_KNOWN_NETWORKS.find((n) => n.name === entry.toLowerCase());
  if (known) return { network: known };
  problem(
    `FLOORWATCH_NETWORKS: "${entry.slice(0, 40)}" is not a known network; write it as name:chainId or name:chainId:SYMBOL (e.g. mynet:12345:MYC, SYMBOL being its native coin) or use one of ${WELL_KNOWN_NETWORKS.map((n) => n.name).join(', ')}.`,
  );
  return undefined;
};

const operatorEntry: Reader<string> = (entry, { problem }) => {
  if (!/^(discord|telegram):[\w-]{1,40}$/.test(entry)) {
    problem(`FLOORWATCH_OPERATORS: "${entry.slice(0, 40)}" must look like discord:<user id> or telegram:<user id>.`);
  }
  return entry;
};

const logLevel: Reader<LogLevel> = (value, { problem }) => {
  const level = value.toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(level)) {
    problem(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}; got "${level.slice(0, 20)}".`);
  }
  return level as LogLevel;
};

const telegramToken: Reader<string> = (token, { problem }) => {
  // The token itself is never quoted.
  if (!/^\d+:[\w-]{20,}$/.test(token))
    problem('TELEGRAM_BOT_TOKEN does not look like a BotFather token (digits:letters).');
  return token;
};

const managePermission: Reader<'ManageGuild' | 'ManageChannels'> = (value, { problem }) => {
  if (value === 'ManageGuild' || value === 'ManageChannels') return value;
  problem('DISCORD_MANAGE_PERMISSION must be ManageGuild or ManageChannels.');
  return 'ManageGuild';
};

const webhookUrl: Reader<string> = (url, { name, problem }) => {
  if (!isHttpsUrl(url)) problem(`${name} must be the public https:// URL that Telegram posts updates to.`);
  return url;
};

/** A DISCORD_SHARD_IDS entry: a shard id or an inclusive range (`0-3`). */
const shardRange: Reader<{ first: number; last: number }> = (entry, { problem }) => {
  const range = /^(\d{1,6})(?:\s*-\s*(\d{1,6}))?$/.exec(entry);
  const first = Number(range?.[1]);
  const last = range?.[2] === undefined ? first : Number(range[2]);
  if (!range || last < first) {
    problem(
      `DISCORD_SHARD_IDS: "${entry.slice(0, 20)}" must be a shard id or an ascending range, e.g. DISCORD_SHARD_IDS=0-3,8.`,
    );
  }
  return { first, last };
};

const defaultNetwork: Reader<string> = (value) => value.toLowerCase();

const marketplaceContract: Reader<{ network: string; address: string }> = (entry, { problem }) => {
  const match = /^([a-z][a-z0-9-]{0,40}):(0x[0-9a-fA-F]{40})$/i.exec(entry);
  if (!match) {
    problem(`FLOORWATCH_MARKETPLACE_CONTRACTS: "${entry.slice(0, 60)}" must look like network:0x<40 hex>.`);
  }
  return { network: (match?.[1] ?? '').toLowerCase(), address: (match?.[2] ?? '').toLowerCase() };
};

const tokenUrl: Reader<string> = (url, { problem }) => {
  if (!(isHttpUrl(url) && url.includes('{collection}') && url.includes('{tokenId}'))) {
    problem(
      `FLOORWATCH_TOKEN_URL must be an http(s) address with {collection} and {tokenId} (and optionally {network}, {chainId}); got "${url.slice(0, 80)}".`,
    );
  }
  return url;
};

const explorerUrl: Reader<{ network: string; template: string }> = (entry, { problem }) => {
  const match = /^([a-z][a-z0-9-]{0,40})=(.+)$/i.exec(entry);
  const template = match?.[2] ?? '';
  if (!match || !isHttpUrl(template) || !template.includes('{txnHash}')) {
    problem(
      `FLOORWATCH_EXPLORER_URLS: "${entry.slice(0, 80)}" must look like network=https://explorer.example/tx/{txnHash}.`,
    );
  }
  return { network: (match?.[1] ?? '').toLowerCase(), template };
};

/** The address a listener of ours binds (FLOORWATCH_HTTP_HOST, FLOORWATCH_WEB_HOST). */
const hostName: Reader<string> = (host, { name, problem }) => {
  if (!/^(?:[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*|[0-9A-Fa-f:.]{2,45})$/.test(host)) {
    problem(`${name} must be a host name or an IP address; got "${host.slice(0, 40)}".`);
  }
  return host;
};

/** FLOORWATCH_PUBLIC_URL: https, or http to this machine for a local demo; no credentials, query or fragment. */
const publicUrl: Reader<URL | undefined> = (url, { problem }) => {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    problem(`FLOORWATCH_PUBLIC_URL is not a URL: "${url.slice(0, 80)}".`);
    return undefined;
  }
  const local = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/.test(parsed.hostname);
  if (parsed.protocol !== 'https:' && !(parsed.protocol === 'http:' && local)) {
    problem(
      'FLOORWATCH_PUBLIC_URL must be an https:// address (http only for localhost or 127.0.0.1, for a local demo), e.g. https://bot.example.',
    );
  } else if (parsed.username || parsed.password || parsed.search || parsed.hash) {
    problem('FLOORWATCH_PUBLIC_URL must not carry credentials, a query or a fragment.');
  }
  return parsed;
};

const rpcUrl: Reader<string> = (url, { problem }) => {
  // A key may follow the host: only the scheme is quoted.
  if (!isHttpUrl(url)) {
    problem(
      `FLOORWATCH_RPC_URL must be an http(s) JSON-RPC address, e.g. https://{network}.rpc.example/KEY; got "${url.slice(0, 12)}…".`,
    );
  }
  return url;
};

const databaseUrl: Reader<string> = (url, { problem }) => {
  if (!isPostgresUrl(url)) {
    problem(
      'FLOORWATCH_DATABASE_URL must be a PostgreSQL address, e.g. postgres://floorwatch:PASSWORD@db.example:5432/floorwatch.',
    );
  }
  return url;
};

const flag: Reader<boolean> = (value) => value === '1' || value === 'true';

/** Every variable the bot reads, each with its reader; defaults are applied in {@link configOf}. */
const VARIABLES = {
  ...variable('FLOORWATCH_PLATFORM_URL', platformUrl),
  ...variable('FLOORWATCH_METADATA_URL', endpoint(false)),
  ...variable('FLOORWATCH_MARKETPLACE_URL', endpoint(true)),
  ...variable('FLOORWATCH_INDEXER_URL', endpoint(true)),
  ...variable('FLOORWATCH_RELAYER_URL', endpoint(true)),
  ...variable('FLOORWATCH_API_URL', endpoint(false)),
  ...variable('FLOORWATCH_ACCESS_KEY', plainText),
  ...variable('FLOORWATCH_SECRET_TOKEN', plainText),
  ...variable('FLOORWATCH_NETWORKS', listOf(networkEntry)),
  ...variable('FLOORWATCH_OPERATORS', listOf(operatorEntry)),
  ...variable('LOG_LEVEL', logLevel),
  ...variable('DISCORD_TOKEN', plainText),
  ...variable('DISCORD_APPLICATION_ID', plainText),
  ...variable('DISCORD_GUILD_ID', plainText),
  ...variable('DISCORD_API_ROOT', plainText),
  ...variable('DISCORD_MANAGE_PERMISSION', managePermission),
  ...variable('DISCORD_SHARD_IDS', listOf(shardRange, true)),
  ...variable('DISCORD_SHARD_COUNT', wholeNumber(1, MAX_SHARD_COUNT)),
  ...variable('DISCORD_REQUESTS_PER_SECOND', wholeNumber(1, 10_000)),
  ...variable('TELEGRAM_BOT_TOKEN', telegramToken),
  ...variable('TELEGRAM_API_ROOT', plainText),
  ...variable('TELEGRAM_MESSAGES_PER_SECOND', wholeNumber(1, 10_000)),
  // The FLOORWATCH_ names are preferred; the shorter TELEGRAM_ names came first and still work.
  ...variable('FLOORWATCH_TELEGRAM_WEBHOOK_URL', webhookUrl),
  ...variable('TELEGRAM_WEBHOOK_URL', webhookUrl),
  ...variable('FLOORWATCH_TELEGRAM_WEBHOOK_SECRET', plainText),
  ...variable('TELEGRAM_WEBHOOK_SECRET', plainText),
  ...variable('FLOORWATCH_TELEGRAM_WEBHOOK_PORT', wholeNumber(0, 65_535)),
  ...variable('TELEGRAM_WEBHOOK_PORT', wholeNumber(0, 65_535)),
  ...variable('FLOORWATCH_DEFAULT_NETWORK', defaultNetwork),
  ...variable('FLOORWATCH_MARKETPLACE_CONTRACTS', listOf(marketplaceContract)),
  ...variable('FLOORWATCH_TOKEN_URL', tokenUrl),
  ...variable('FLOORWATCH_EXPLORER_URLS', listOf(explorerUrl)),
  ...variable('FLOORWATCH_HTTP_PORT', wholeNumber(0, 65_535)),
  ...variable('FLOORWATCH_HTTP_HOST', hostName),
  ...variable('FLOORWATCH_RPC_URL', rpcUrl),
  ...variable('FLOORWATCH_BACKFILL_MAX_BLOCKS', wholeNumber(0, 1_000_000)),
  ...variable('FLOORWATCH_DATABASE_URL', databaseUrl),
  ...variable('FLOORWATCH_DATABASE_POOL', wholeNumber(2, 200)),
  ...variable('FLOORWATCH_PROJECT_ID', wholeNumber(1, Number.MAX_SAFE_INTEGER)),
  ...variable('FLOORWATCH_DEVNET_SEED', wholeNumber(0, 2 ** 31)),
  ...variable('FLOORWATCH_DEVNET_BLOCK_MS', wholeNumber(0, 3_600_000)),
  ...variable('FLOORWATCH_DEVNET_PORT', wholeNumber(0, 65_535)),
  ...variable('FLOORWATCH_ALLOWLIST_AUDIENCE', wholeNumber(1, Number.MAX_SAFE_INTEGER)),
  ...variable('FLOORWATCH_RELIST_WINDOW_HOURS', wholeNumber(0, 24 * 30)),
  ...variable('FLOORWATCH_WHALE_USD', usdAmount),
  // Telegram documents a 48-hour edit limit for some messages; the cards are kept this long at most.
  ...variable('FLOORWATCH_LISTING_EDIT_HOURS', wholeNumber(0, 48)),
  ...variable('FLOORWATCH_LISTING_EXPIRY_CHECK_SECONDS', wholeNumber(1, 3_600)),
  ...variable('FLOORWATCH_DATA_DIR', plainText),
  ...variable('FLOORWATCH_CONSOLE', flag),
  ...variable('FLOORWATCH_PUBLIC_URL', publicUrl),
  ...variable('FLOORWATCH_WEB_HOST', hostName),
  ...variable('FLOORWATCH_WEB_PORT', wholeNumber(0, 65_535)),
  ...variable('FLOORWATCH_GATE_GRACE_HOURS', wholeNumber(0, 24 * 90)),
  ...variable('FLOORWATCH_ROLES_RECHECK_HOURS', wholeNumber(0, 24 * 30)),
};

type Values = { [K in keyof typeof VARIABLES]?: NonNullable<v.InferOutput<(typeof VARIABLES)[K]>>['value'] };
type Name = keyof Values;

/** The platform's five addresses and their variables. */
const ENDPOINT_VARIABLES = {
  metadataUrl: 'FLOORWATCH_METADATA_URL',
  marketplaceUrl: 'FLOORWATCH_MARKETPLACE_URL',
  indexerUrl: 'FLOORWATCH_INDEXER_URL',
  relayerUrl: 'FLOORWATCH_RELAYER_URL',
  apiUrl: 'FLOORWATCH_API_URL',
} as const satisfies Record<keyof PlatformEndpoints, Name>;

/**
 * What rules between variables see: the text of each variable set, and the values of those read
 * without a problem (a variable with problems has reported them already).
 */
interface Settings {
  texts: Partial<Record<Name, string>>;
  values: Values;
}

const given = (settings: Settings, name: Name): boolean => settings.texts[name] !== undefined;

/**
 * The settings in what the variables' schemas give: a text and a value for each variable set, but
 * the raw text for those in `failed` (whose problems were reported).
 */
function settingsOf(read: unknown, failed: ReadonlySet<unknown>): Settings {
  const entries = (read ?? {}) as Record<string, { text: string; value: unknown } | string | undefined>;
  const texts: Partial<Record<string, string>> = {};
  const values: Record<string, unknown> = {};
  for (const [name, entry] of Object.entries(entries)) {
    if (typeof entry === 'string') texts[name] = entry.trim() || undefined;
    else if (entry !== undefined) {
      texts[name] = entry.text;
      if (!failed.has(name)) values[name] = entry.value;
    }
  }
  return { texts, values: values as Values };
}

/**
 * A setting with two names (`preferred` and an older `alias`): the name it is read from (the
 * preferred one unless only the alias is set) and its value.
 */
function aliased<N extends Name>(settings: Settings, preferred: N, alias: N): { name: N; value: Values[N] } {
  const name = given(settings, preferred) || !given(settings, alias) ? preferred : alias;
  return { name, value: settings.values[name] };
}

const WEBHOOK = {
  url: ['FLOORWATCH_TELEGRAM_WEBHOOK_URL', 'TELEGRAM_WEBHOOK_URL'],
  secret: ['FLOORWATCH_TELEGRAM_WEBHOOK_SECRET', 'TELEGRAM_WEBHOOK_SECRET'],
  port: ['FLOORWATCH_TELEGRAM_WEBHOOK_PORT', 'TELEGRAM_WEBHOOK_PORT'],
} as const;

const realPlatform = (settings: Settings) => Object.values(ENDPOINT_VARIABLES).some((name) => given(settings, name));

/** A platform that describes itself: the addresses set beside it replace some of those it gives. */
const discovered = (settings: Settings) => given(settings, 'FLOORWATCH_PLATFORM_URL');

/** Rules between variables, each giving its problems. */
const RULES: ReadonlyArray<(settings: Settings) => readonly string[]> = [
  (settings) => {
    const missing = Object.values(ENDPOINT_VARIABLES).filter((name) => !given(settings, name));
    return realPlatform(settings) && !discovered(settings) && missing.length > 0
      ? [
          `A real platform needs all five addresses; missing ${missing.join(', ')}. (For the local platform of npm run devnet, FLOORWATCH_PLATFORM_URL alone will do.)`,
        ]
      : [];
  },
  (settings) =>
    (realPlatform(settings) || discovered(settings)) && !given(settings, 'FLOORWATCH_ACCESS_KEY')
      ? [
          `FLOORWATCH_ACCESS_KEY is required with ${discovered(settings) ? 'FLOORWATCH_PLATFORM_URL (npm run devnet prints the key)' : 'a real platform'}.`,
        ]
      : [],
  (settings) =>
    realPlatform(settings) && !discovered(settings) && !given(settings, 'FLOORWATCH_NETWORKS')
      ? ['FLOORWATCH_NETWORKS is required with a real platform, e.g. polygon,base.']
      : [],
  (settings) =>
    given(settings, 'DISCORD_TOKEN') && !given(settings, 'DISCORD_APPLICATION_ID')
      ? ['DISCORD_APPLICATION_ID is required with DISCORD_TOKEN.']
      : [],
  ({ texts }) =>
    Object.values(WEBHOOK).flatMap(([preferred, alias]) => {
      const [first, second] = [texts[preferred], texts[alias]];
      return first !== undefined && second !== undefined && first !== second
        ? [`${preferred} and ${alias} are two names of one setting and are set differently; set only one.`]
        : [];
    }),
  (settings) => {
    const url = aliased(settings, ...WEBHOOK.url);
    const secret = aliased(settings, ...WEBHOOK.secret);
    // The secret itself is never quoted: only its shape is described.
    if (!given(settings, url.name) || (secret.value && /^[A-Za-z0-9_-]{16,256}$/.test(secret.value))) return [];
    return [
      `${secret.name} (16-256 letters, digits, _ or -) is required with ${url.name}${secret.value ? '; the one set has another shape' : ''}.`,
    ];
  },
  (settings) => {
    const ids = given(settings, 'DISCORD_SHARD_IDS');
    if (ids === given(settings, 'DISCORD_SHARD_COUNT')) return [];
    const missing = ids ? 'DISCORD_SHARD_COUNT' : 'DISCORD_SHARD_IDS';
    return [
      `${missing} is not set: DISCORD_SHARD_IDS and DISCORD_SHARD_COUNT go together (e.g. DISCORD_SHARD_IDS=0-1 with DISCORD_SHARD_COUNT=4), or leave both unset.`,
    ];
  },
  ({ values }) => {
    const count = values.DISCORD_SHARD_COUNT;
    if (count === undefined) return [];
    return (values.DISCORD_SHARD_IDS ?? [])
      .filter(({ last }) => last >= count)
      .map(
        ({ last }) =>
          `DISCORD_SHARD_IDS: shard ${last} is not below DISCORD_SHARD_COUNT (${count}); shard ids run from 0 to ${count - 1}.`,
      );
  },
  ({ values }) => {
    const wanted = values.FLOORWATCH_DEFAULT_NETWORK;
    const networks = networksOf(values).networks;
    return wanted && networks.length > 0 && !networks.some((n) => n.name === wanted)
      ? [`FLOORWATCH_DEFAULT_NETWORK "${wanted}" is not in FLOORWATCH_NETWORKS.`]
      : [];
  },
  (settings) =>
    given(settings, 'FLOORWATCH_HTTP_HOST') && !given(settings, 'FLOORWATCH_HTTP_PORT')
      ? ['FLOORWATCH_HTTP_HOST is set but FLOORWATCH_HTTP_PORT is not; set the port to enable the listener.']
      : [],
  ({ values }) =>
    values.FLOORWATCH_RPC_URL !== undefined &&
    networksOf(values).networks.length > 1 &&
    !values.FLOORWATCH_RPC_URL.includes('{network}')
      ? [
          'FLOORWATCH_RPC_URL must contain {network} where the network name goes: FLOORWATCH_NETWORKS lists several networks.',
        ]
      : [],
  (settings) =>
    !given(settings, 'FLOORWATCH_PUBLIC_URL') &&
    (given(settings, 'FLOORWATCH_WEB_PORT') || given(settings, 'FLOORWATCH_WEB_HOST'))
      ? [
          'FLOORWATCH_WEB_PORT or FLOORWATCH_WEB_HOST is set but FLOORWATCH_PUBLIC_URL is not: set the public address of the verification page.',
        ]
      : [],
];

/**
 * The environment's schema: each variable read on its own, then the rules between them, every
 * problem reported; its output is the values. A rule sees the values of the variables read without
 * a problem only.
 */
const ENVIRONMENT = v.pipe(
  v.object(VARIABLES),
  v.rawCheck(({ dataset, addIssue }) => {
    const settings = settingsOf(dataset.value, new Set(dataset.issues?.map((issue) => issue.path?.[0]?.key)));
    for (const rule of RULES) for (const message of rule(settings)) addIssue({ message });
  }),
  v.transform((read) => settingsOf(read, new Set()).values),
);

function networksOf(values: Values): { networks: Network[]; nativeSymbols: Record<string, string> } {
  const entries = (values.FLOORWATCH_NETWORKS ?? []).filter((entry) => entry !== undefined);
  const nativeSymbols: Record<string, string> = {};
  for (const { network, symbol } of entries) if (symbol) nativeSymbols[network.name] = symbol;
  return { networks: entries.map((entry) => entry.network), nativeSymbols };
}

/** The configuration of variables that were all read without a problem. */
function configOf(values: Values, cwd: string): Config {
  const endpoints = Object.entries(ENDPOINT_VARIABLES).map(([key, name]) => [key, values[name]] as const);
  const endpointsSet = endpoints.filter(([, url]) => url !== undefined);
  const marketplaceContracts: Record<string, string[]> = {};
  for (const { network, address } of values.FLOORWATCH_MARKETPLACE_CONTRACTS ?? []) {
    marketplaceContracts[network] = [...(marketplaceContracts[network] ?? []), address];
  }
  const transaction: Record<string, string> = { ...EXPLORER_TX_URLS };
  for (const { network, template } of values.FLOORWATCH_EXPLORER_URLS ?? []) transaction[network] = template;
  const shardIds = new Set((values.DISCORD_SHARD_IDS ?? []).flatMap(({ first, last }) => range(first, last)));
  const discordToken = values.DISCORD_TOKEN;
  const discordApp = values.DISCORD_APPLICATION_ID;
  const telegramToken = values.TELEGRAM_BOT_TOKEN;
  const databaseUrl = values.FLOORWATCH_DATABASE_URL;
  const httpPort = values.FLOORWATCH_HTTP_PORT;
  return {
    platform: {
      endpoints:
        endpointsSet.length === endpoints.length
          ? (Object.fromEntries(endpointsSet) as unknown as PlatformEndpoints)
          : undefined,
      discoveryUrl: values.FLOORWATCH_PLATFORM_URL,
      endpointOverrides: Object.fromEntries(endpointsSet) as Partial<PlatformEndpoints>,
      accessKey: values.FLOORWATCH_ACCESS_KEY,
      secretToken: values.FLOORWATCH_SECRET_TOKEN,
      projectId: values.FLOORWATCH_PROJECT_ID,
      ...networksOf(values),
    },
    devnet: {
      seed: values.FLOORWATCH_DEVNET_SEED ?? 1,
      blockIntervalMs: values.FLOORWATCH_DEVNET_BLOCK_MS ?? 5_000,
      port: values.FLOORWATCH_DEVNET_PORT ?? 0,
    },
    operators: values.FLOORWATCH_OPERATORS ?? [],
    marketplaceContracts,
    links: { token: values.FLOORWATCH_TOKEN_URL, transaction },
    allowlistAudience: values.FLOORWATCH_ALLOWLIST_AUDIENCE,
    relistWindowHours: values.FLOORWATCH_RELIST_WINDOW_HOURS ?? 24,
    whaleUsd: values.FLOORWATCH_WHALE_USD ?? 10_000,
    listingEditHours: values.FLOORWATCH_LISTING_EDIT_HOURS ?? 24,
    listingExpiryCheckSeconds: values.FLOORWATCH_LISTING_EXPIRY_CHECK_SECONDS ?? 30,
    defaultNetwork: values.FLOORWATCH_DEFAULT_NETWORK,
    dataDir: resolve(cwd, values.FLOORWATCH_DATA_DIR ?? 'data'),
    logLevel: values.LOG_LEVEL ?? 'info',
    discord:
      discordToken && discordApp
        ? {
            token: discordToken,
            applicationId: discordApp,
            guildId: values.DISCORD_GUILD_ID,
            apiRoot: values.DISCORD_API_ROOT,
            managePermission: values.DISCORD_MANAGE_PERMISSION ?? 'ManageGuild',
            shards:
              values.DISCORD_SHARD_COUNT === undefined
                ? undefined
                : { ids: [...shardIds].sort((a, b) => a - b), count: values.DISCORD_SHARD_COUNT },
            requestsPerSecond: values.DISCORD_REQUESTS_PER_SECOND,
          }
        : undefined,
    telegram: telegramToken
      ? {
          token: telegramToken,
          apiRoot: values.TELEGRAM_API_ROOT,
          webhookUrl: values.FLOORWATCH_TELEGRAM_WEBHOOK_URL ?? values.TELEGRAM_WEBHOOK_URL,
          webhookSecret: values.FLOORWATCH_TELEGRAM_WEBHOOK_SECRET ?? values.TELEGRAM_WEBHOOK_SECRET,
          webhookPort: values.FLOORWATCH_TELEGRAM_WEBHOOK_PORT ?? values.TELEGRAM_WEBHOOK_PORT ?? 8443,
          messagesPerSecond: values.TELEGRAM_MESSAGES_PER_SECOND,
        }
      : undefined,
    console: values.FLOORWATCH_CONSOLE ?? false,
    http: httpPort === undefined ? undefined : { host: values.FLOORWATCH_HTTP_HOST ?? '127.0.0.1', port: httpPort },
    backfill: { rpcUrl: values.FLOORWATCH_RPC_URL, maxBlocks: values.FLOORWATCH_BACKFILL_MAX_BLOCKS ?? 5_000 },
    database:
      databaseUrl === undefined ? undefined : { url: databaseUrl, poolSize: values.FLOORWATCH_DATABASE_POOL ?? 10 },
    verification: {
      publicUrl: values.FLOORWATCH_PUBLIC_URL,
      web: { host: values.FLOORWATCH_WEB_HOST ?? '127.0.0.1', port: values.FLOORWATCH_WEB_PORT ?? DEFAULT_WEB_PORT },
    },
    roles: {
      graceHours: values.FLOORWATCH_GATE_GRACE_HOURS ?? 24,
      recheckHours: values.FLOORWATCH_ROLES_RECHECK_HOURS ?? 6,
    },
  };
}

function range(first: number, last: number): number[] {
  return Array.from({ length: last - first + 1 }, (_, i) => first + i);
}

/** Parses the environment; throws {@link ConfigError} listing every problem. */
export function loadConfig(env: Env, cwd = process.cwd()): Config {
  const result = v.safeParse(ENVIRONMENT, env);
  if (!result.success) throw new ConfigError(result.issues.map((issue) => issue.message));
  return configOf(result.output, cwd);
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
