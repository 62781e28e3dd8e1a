// Standalone devnet: `npm run devnet -- --port 8777 --seed 1 --block-interval 3000`.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
// Test wallets: `npm run devnet -- wallets`, `npm run --silent devnet -- sign --wallet 1 '<message>'`.
import { parseArgs } from 'node:util';
import { devnetEnvBlock, withEnvBlock } from './env-file.ts';
import { startDevnet } from './index.ts';
import type { DevnetLogger, DevnetOptions } from './types.ts';
import { runWalletCommand } from './wallet-cli.ts';

const subcommand = process.argv[2];
if (subcommand === 'sign' || subcommand === 'wallets') {
  const code = await runWalletCommand(
    process.argv.slice(2),
    (line) => console.log(line),
    (line) => console.error(line),
  );
  process.exit(code);
}

const HELP = `Floorwatch devnet: a local platform with the real wire protocol, a seeded dataset and a simulated chain.

Usage: npm run devnet -- [options]
       npm run devnet -- wallets                               the test wallets (TEST ONLY)
       npm run --silent devnet -- sign --wallet <n> '<message>'  a test wallet's signature of a message

Options:                                                     environment                default
  --port <n>              TCP port, 0 = any free port        DEVNET_PORT                8777
  --host <addr>           interface to listen on             DEVNET_HOST                127.0.0.1
  --seed <n>              dataset and activity seed          DEVNET_SEED                1
  --block-interval <ms>   a random block every <ms>, 0 = off DEVNET_BLOCK_INTERVAL_MS   3000
  --heartbeat <ms>        stream heartbeat interval          DEVNET_HEARTBEAT_MS        10000
  --finality <n>          blocks until a receipt is final    DEVNET_FINALITY_DEPTH      3
  --scale <full|small>    dataset size                       DEVNET_SCALE               full
  --access-key <key>      the X-Access-Key to accept         DEVNET_ACCESS_KEY          derived from the seed
  --secret-token <token>  the bearer token to accept         DEVNET_SECRET_TOKEN        derived from the seed
  --project-id <n>        the project                        DEVNET_PROJECT_ID          16815
  --quiet                 do not print every mined block     DEVNET_QUIET=1
  --write-env <path>      write the bot's settings for this devnet into <path> (e.g. .env): other
                          lines are kept, older platform settings commented out
  -h, --help              this text

It prints the lines that point the bot at it (FLOORWATCH_PLATFORM_URL and the credentials): paste
them into .env, or let --write-env .env write them, then npm start in another terminal.

Control API on the same server (docs/local-platform.md has examples):
  GET    /devnet/info     networks, collections, credentials, base addresses (what the bot reads)
  POST   /devnet/mine     {"network":"devnet","activity":[{"kind":"sale","collection":"0x…"}]}
  POST   /devnet/reorg    {"network":"devnet","depth":2}
  POST   /devnet/faults   {"operation":"ListCollectibles","latencyMs":200,"errorRate":0.5}
  GET    /devnet/faults   the faults in force
  DELETE /devnet/faults
  POST   /devnet/pause    stop the background blocks (blocks asked for with /devnet/mine go on)
  POST   /devnet/resume   start them again; {"blockIntervalMs":1000} to change the interval
`;

function fail(message: string): never {
  console.error(`devnet: ${message}\n\nRun with --help for the options.`);
  process.exit(2);
}

function integer(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined || text === '') return fallback;
  if (!/^\d+$/.test(text.trim())) fail(`${name} must be a non-negative integer, got "${text}"`);
  return Number(text);
}

let parsed: ReturnType<typeof parseArgs>;
try {
  parsed = parseArgs({
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      seed: { type: 'string' },
      'block-interval': { type: 'string' },
      heartbeat: { type: 'string' },
      finality: { type: 'string' },
      scale: { type: 'string' },
      'access-key': { type: 'string' },
      'secret-token': { type: 'string' },
      'project-id': { type: 'string' },
      quiet: { type: 'boolean' },
      'write-env': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: false,
  });
} catch (error) {
  const message = (error as Error).message;
  // Node reads --env-file as its own option even after the script (and stops when the file is missing).
  if (message.includes("'--env-file'")) fail("to write the bot's settings into a file, use --write-env <path>");
  fail(message);
}

const flags = parsed.values as Record<string, string | boolean | undefined>;
const env = process.env;
const text = (flag: string, variable: string): string | undefined => {
  const value = flags[flag];
  return typeof value === 'string' ? value : env[variable];
};

if (flags.help) {
  console.log(HELP);
  process.exit(0);
}

const scale = text('scale', 'DEVNET_SCALE') ?? 'full';
if (scale !== 'full' && scale !== 'small') fail(`--scale must be full or small, got "${scale}"`);
const quiet = flags.quiet === true || env.DEVNET_QUIET === '1';

const logger: DevnetLogger = {
  info: () => undefined,
  warn: (obj, msg) => console.error(`devnet: ${msg ?? 'warning'}`, obj),
  debug: (obj, msg) => {
    if (quiet || msg !== 'devnet block') return;
    const block = obj as { network?: string; block?: number; txns?: string[] };
    const kinds = block.txns && block.txns.length > 0 ? block.txns.join(', ') : 'empty';
    console.log(`block ${block.block} on ${block.network}: ${kinds}`);
  },
};

const options: DevnetOptions = {
  port: integer('--port', text('port', 'DEVNET_PORT'), 8777),
  host: text('host', 'DEVNET_HOST') ?? '127.0.0.1',
  seed: integer('--seed', text('seed', 'DEVNET_SEED'), 1),
  blockIntervalMs: integer('--block-interval', text('block-interval', 'DEVNET_BLOCK_INTERVAL_MS'), 3_000),
  heartbeatIntervalMs: integer('--heartbeat', text('heartbeat', 'DEVNET_HEARTBEAT_MS'), 10_000),
  finalityDepth: integer('--finality', text('finality', 'DEVNET_FINALITY_DEPTH'), 3),
  projectId: integer('--project-id', text('project-id', 'DEVNET_PROJECT_ID'), 16815),
  scale,
  logger,
};
const accessKey = text('access-key', 'DEVNET_ACCESS_KEY');
if (accessKey) options.accessKey = accessKey;
const secretToken = text('secret-token', 'DEVNET_SECRET_TOKEN');
if (secretToken) options.secretToken = secretToken;

try {
  const devnet = await startDevnet(options);
  const info = devnet.info();
  const lines = [
    `Floorwatch devnet listening on ${devnet.url}`,
    `  seed ${info.seed}, ${info.scale} dataset, ${info.blockIntervalMs > 0 ? `a block every ${info.blockIntervalMs} ms` : 'blocks on request only'}, finality ${info.finalityDepth} blocks`,
    '',
    'Base addresses:',
    ...Object.entries(devnet.endpoints).map(([name, url]) => `  ${name.padEnd(15)} ${url}`),
    `  ${'chain JSON-RPC'.padEnd(15)} ${devnet.chainRpcUrl}  (FLOORWATCH_RPC_URL)`,
    '',
    "Test wallets (TEST ONLY, public keys; sign with: npm run --silent devnet -- sign --wallet <n> '<message>'):",
    ...info.testWallets.map((w) => `  ${w.index}  ${w.address}  ${w.kind}`),
    '',
    `Access key (X-Access-Key):      ${devnet.accessKey}`,
    `Bearer token (Authorization):   ${devnet.secretToken}`,
    `Project id:                     ${devnet.projectId}`,
    '',
  ];
  for (const network of info.networks) {
    lines.push(
      `Network ${network.name} (chain ${network.chainId}), marketplace contract ${network.marketplaceContract}`,
    );
    for (const c of info.collections[network.name] ?? []) {
      lines.push(`  ${c.address}  ${c.standard.padEnd(7)} ${String(c.tokenCount).padStart(6)} tokens  ${c.name}`);
    }
  }
  lines.push(
    '',
    `Control: GET ${devnet.url}/devnet/info, POST /devnet/mine, /devnet/reorg, /devnet/pause, /devnet/resume, POST|DELETE /devnet/faults`,
    '',
  );
  const block = devnetEnvBlock(devnet);
  const envFile = typeof flags['write-env'] === 'string' ? flags['write-env'] : undefined;
  if (envFile === undefined) {
    lines.push(
      'To point the bot at this devnet, put these lines in .env (or start the devnet with --write-env .env),',
      'then run npm start in another terminal:',
      '',
      ...block,
      '',
    );
  } else {
    const path = resolve(envFile);
    const { text, commentedOut } = withEnvBlock(existsSync(path) ? readFileSync(path, 'utf8') : '', block);
    try {
      writeFileSync(path, text, { mode: 0o600 });
    } catch (error) {
      fail(`cannot write --write-env ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
    const note = commentedOut.length > 0 ? ` (commented out there: ${commentedOut.join(', ')})` : '';
    lines.push(
      `Wrote the bot's settings for this devnet to ${path}${note}; npm start in another terminal uses them.`,
      '',
    );
  }
  console.log(lines.join('\n'));
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`\n${signal}: stopping the devnet`);
    void devnet.close().then(() => process.exit(0));
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
} catch (error) {
  const code = (error as { code?: string }).code;
  if (code === 'EADDRINUSE') fail(`port ${options.port} is already in use; choose another with --port or DEVNET_PORT`);
  throw error;
}
