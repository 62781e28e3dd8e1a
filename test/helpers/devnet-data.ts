import type { Devnet, DevnetCollectionInfo } from '../../src/devnet/index.ts';
import type { MineResult } from '../../src/devnet/miner.ts';
import type { PlatformClient } from '../../src/platform/client.ts';

/** A collection of the local platform by name. */
export function collectionNamed(devnet: Devnet, name: string, network = 'devnet'): DevnetCollectionInfo {
  const found = devnet.collections[network]?.find((c) => c.name === name);
  if (!found) throw new Error(`devnet has no collection ${name} on ${network}`);
  return found;
}

/** A listed token of a collection, as the platform itself reports it. */
export async function listedToken(platform: PlatformClient, address: string, network = 'devnet'): Promise<string> {
  const { collectibles } = await platform.marketplace.listCollectibles({
    network,
    side: 'listing',
    contractAddress: address,
    filter: { includeEmpty: false },
    page: { pageSize: 1 },
  });
  const tokenId = collectibles[0]?.metadata.tokenId;
  if (!tokenId) throw new Error('no listed token');
  return tokenId;
}

/**
 * The environment that points the bot at a local platform as at a real one: its endpoints, keys,
 * project, first network, marketplace contract and JSON-RPC (for backfill).
 */
export function platformEnv(devnet: Devnet): Record<string, string> {
  const network = devnet.info().networks[0];
  if (!network) throw new Error('the local platform has no network');
  return {
    FLOORWATCH_METADATA_URL: devnet.endpoints.metadataUrl,
    FLOORWATCH_MARKETPLACE_URL: devnet.endpoints.marketplaceUrl,
    FLOORWATCH_INDEXER_URL: devnet.endpoints.indexerUrl,
    FLOORWATCH_RELAYER_URL: devnet.endpoints.relayerUrl,
    FLOORWATCH_API_URL: devnet.endpoints.apiUrl,
    FLOORWATCH_ACCESS_KEY: devnet.accessKey,
    FLOORWATCH_SECRET_TOKEN: devnet.secretToken,
    FLOORWATCH_PROJECT_ID: String(devnet.projectId),
    FLOORWATCH_NETWORKS: `${network.name}:${network.chainId}`,
    FLOORWATCH_MARKETPLACE_CONTRACTS: `${network.name}:${network.marketplaceContract}`,
    FLOORWATCH_RPC_URL: devnet.chainRpcUrl,
  };
}

/** Mines one block of `activity` through the local platform's control API (POST /devnet/mine). */
export async function mineBlock(
  devnet: Devnet,
  activity: ReadonlyArray<Record<string, unknown>>,
  network = 'devnet',
): Promise<MineResult> {
  const response = await fetch(`${devnet.url}/devnet/mine`, {
    method: 'POST',
    body: JSON.stringify({ network, activity }),
  });
  if (!response.ok) throw new Error(`mine: ${response.status} ${await response.text()}`);
  return (await response.json()) as MineResult;
}
