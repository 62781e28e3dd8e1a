/**
 * The settings that point the bot at a devnet run on its own (`npm run devnet`): printed as a block
 * to paste into `.env`, or written there (`--write-env`; not `--env-file`, which Node 20 and 22 take as their own option even after the script and exit on a missing file). The bot reads the rest (addresses, networks,
 * marketplace contracts, chain JSON-RPC, project) from the devnet's own description.
 */

/** The block's first line; a block written before is found by it and replaced. */
export const ENV_BLOCK_HEADER = '# The local platform of `npm run devnet` (the bot reads the rest from it):';

/**
 * Platform settings that a devnet's block makes wrong if left as they are (they would win over what
 * the devnet describes): commented out when the block is written into a file.
 */
const SUPERSEDED = [
  'FLOORWATCH_PLATFORM_URL',
  'FLOORWATCH_ACCESS_KEY',
  'FLOORWATCH_SECRET_TOKEN',
  'FLOORWATCH_METADATA_URL',
  'FLOORWATCH_MARKETPLACE_URL',
  'FLOORWATCH_INDEXER_URL',
  'FLOORWATCH_RELAYER_URL',
  'FLOORWATCH_API_URL',
  'FLOORWATCH_PROJECT_ID',
  'FLOORWATCH_NETWORKS',
  'FLOORWATCH_MARKETPLACE_CONTRACTS',
  'FLOORWATCH_RPC_URL',
  'FLOORWATCH_TOKEN_URL',
];

/** The lines that point the bot at the devnet at `url` (`0.0.0.0` becomes `127.0.0.1`: reachable here). */
export function devnetEnvBlock(devnet: { url: string; accessKey: string; secretToken: string }): string[] {
  const url = devnet.url.replace('//0.0.0.0:', '//127.0.0.1:').replace('//[::]:', '//[::1]:');
  return [
    ENV_BLOCK_HEADER,
    `FLOORWATCH_PLATFORM_URL=${url}`,
    `FLOORWATCH_ACCESS_KEY=${devnet.accessKey}`,
    `FLOORWATCH_SECRET_TOKEN=${devnet.secretToken}`,
  ];
}

/**
 * `existing` (a .env file's text, empty for a new file) with `block` at its end: an earlier block is
 * removed, and the lines that set a superseded platform setting are commented out, so the file keeps
 * every other setting (chat tokens, operators) as it was.
 */
export function withEnvBlock(existing: string, block: readonly string[]): { text: string; commentedOut: string[] } {
  const blockNames = new Set(block.map(nameOf).filter((name) => name !== undefined));
  const commentedOut: string[] = [];
  const kept: string[] = [];
  let inOldBlock = false;
  for (const line of existing.split(/\r?\n/)) {
    if (line === ENV_BLOCK_HEADER) {
      inOldBlock = true;
      continue;
    }
    const name = nameOf(line);
    if (inOldBlock && name !== undefined && blockNames.has(name)) continue;
    inOldBlock = false;
    if (name !== undefined && SUPERSEDED.includes(name)) {
      commentedOut.push(name);
      kept.push(`# ${line}    (replaced by npm run devnet)`);
    } else {
      kept.push(line);
    }
  }
  while (kept.length > 0 && kept[kept.length - 1]?.trim() === '') kept.pop();
  const text = `${kept.length > 0 ? `${kept.join('\n')}\n\n` : ''}${block.join('\n')}\n`;
  return { text, commentedOut };
}

/** The variable a dotenv line sets (`NAME=value`, `export NAME=value`); undefined for comments and blanks. */
function nameOf(line: string): string | undefined {
  return /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=/.exec(line)?.[1];
}
