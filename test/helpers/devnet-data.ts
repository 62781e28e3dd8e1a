import type { Devnet, DevnetCollectionInfo } from '../../src/devnet/index.ts';
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
