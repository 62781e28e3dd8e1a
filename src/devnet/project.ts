import type { Audience, AudienceContact, Collection, Contract, ContractSource, GasSponsor } from '../platform/types.ts';
import type { CollectionState } from './collection.ts';
import { deriveAddress, keccakText } from './hex.ts';
import type { Accounts, Currency } from './model.ts';
import type { Prng } from './prng.ts';

const DAY_MS = 86_400_000;
const START_MS = Date.UTC(2024, 10, 1);

const iso = (ms: number) => new Date(ms).toISOString();

/** Builder, Relayer and Collections records of the devnet's one project. */
export interface ProjectData {
  projectId: number;
  contractSources: ContractSource[];
  /** Contracts with the Builder's link to a network contract; `source` is LINKED or DEPLOYED. */
  contracts: Contract[];
  audiences: Audience[];
  contacts: AudienceContact[];
  gasSponsors: GasSponsor[];
  /** Collections service records, one per NFT collection (same id). */
  collections: Collection[];
}

const SOURCES: ReadonlyArray<{
  uid: string;
  contractType: string;
  name: string;
  description: string;
  audited: boolean;
  disabled?: boolean;
  own?: boolean;
}> = [
  {
    uid: 'erc721-items-v2',
    contractType: 'ERC721',
    name: 'Collectible (ERC-721)',
    description: 'Standard NFT collection with royalties and a mint role.',
    audited: true,
  },
  {
    uid: 'erc1155-items-v2',
    contractType: 'ERC1155',
    name: 'Semi-fungible items (ERC-1155)',
    description: 'Items with supplies, for games and editions.',
    audited: true,
  },
  {
    uid: 'erc20-items-v1',
    contractType: 'ERC20',
    name: 'Currency (ERC-20)',
    description: 'Fungible token with a capped supply.',
    audited: true,
  },
  {
    uid: 'erc721-sale-v1',
    contractType: 'ERC721_SALE',
    name: 'Primary sale (ERC-721)',
    description: 'Sells new tokens of an ERC-721 collection, with an allowlist.',
    audited: true,
  },
  {
    uid: 'erc1155-sale-v1',
    contractType: 'ERC1155_SALE',
    name: 'Primary sale (ERC-1155)',
    description: 'Sells items of an ERC-1155 collection, with an allowlist.',
    audited: true,
  },
  {
    uid: 'marketplace-v2',
    contractType: 'MARKETPLACE',
    name: 'Orderbook marketplace',
    description: 'Listings and offers as on-chain requests.',
    audited: true,
  },
  {
    uid: 'payment-splitter-v1',
    contractType: 'PAYMENT_SPLITTER',
    name: 'Payment splitter',
    description: 'Splits incoming payments between recipients.',
    audited: false,
  },
  {
    uid: 'erc721-items-v1',
    contractType: 'ERC721',
    name: 'Collectible (ERC-721), legacy',
    description: 'Superseded by erc721-items-v2.',
    audited: true,
    disabled: true,
  },
  {
    uid: 'soulbound-wrapper-v1',
    contractType: 'ERC721',
    name: 'Soulbound wrapper',
    description: 'Non-transferable badges.',
    audited: false,
  },
  {
    uid: 'moon-cats-staking',
    contractType: 'CUSTOM',
    name: 'Moon Cats staking',
    description: 'Project-specific staking vault.',
    audited: false,
    own: true,
  },
];

const ABI = JSON.stringify([
  { type: 'function', name: 'name', inputs: [], outputs: [{ type: 'string' }], stateMutability: 'view' },
  { type: 'function', name: 'owner', inputs: [], outputs: [{ type: 'address' }], stateMutability: 'view' },
]);

/** What the project's records are drawn from, of each network of the dataset. */
export interface ProjectNetwork {
  name: string;
  chainId: number;
  currencies: readonly Currency[];
  marketplaceAddress: string;
  collections: readonly CollectionState[];
}

export function generateProject(
  prng: Prng,
  projectId: number,
  networks: readonly ProjectNetwork[],
  accounts: Accounts,
): ProjectData {
  const contractSources: ContractSource[] = SOURCES.map((source, i) => {
    const bytecode = `0x6080604052${prng.hex(48)}`;
    return {
      id: i + 1,
      uid: source.uid,
      contractType: source.contractType,
      name: source.name,
      description: source.description,
      author: source.own ? 'Project team' : 'Devnet Labs',
      license: source.own ? 'UNLICENSED' : 'Apache-2.0',
      audited: source.audited,
      moreInfoUrl: `https://docs.example.invalid/contracts/${source.uid}`,
      disabled: source.disabled ?? false,
      factorySourceUid: source.contractType.endsWith('_SALE') ? `${source.uid}-factory` : '',
      abi: ABI,
      bytecode,
      bytecodeHash: keccakText(bytecode),
      createdAt: iso(START_MS + i * 9 * DAY_MS),
      updatedAt: iso(START_MS + i * 9 * DAY_MS + 3 * DAY_MS),
      projectId: source.own ? projectId : null,
    };
  });

  const contracts: Contract[] = [];
  const add = (fields: Omit<Contract, 'id' | 'projectId' | 'createdAt' | 'updatedAt' | 'abi' | 'bytecode'>) => {
    const created = START_MS + contracts.length * 2 * DAY_MS;
    const bytecode = `0x6080604052${prng.hex(32)}`;
    contracts.push({
      id: contracts.length + 1,
      projectId,
      ...fields,
      abi: ABI,
      bytecode,
      bytecodeHash: keccakText(bytecode),
      createdAt: iso(created),
      updatedAt: iso(created + DAY_MS),
    });
  };
  for (const network of networks) {
    for (const collection of network.collections) {
      add({
        contractName: collection.name,
        contractAddress: collection.address,
        contractType: collection.standard,
        chainId: network.chainId,
        audienceId: null,
        source: collection.blueprint.hostile ? 'LINKED' : 'DEPLOYED',
        symbol: collection.blueprint.symbol,
      });
      if ((collection.blueprint.maxSupply ?? collection.size) > collection.size) {
        add({
          contractName: `${collection.name} Sale`,
          contractAddress: deriveAddress(`${collection.address}:sale`),
          contractType: `${collection.standard}_SALE`,
          chainId: network.chainId,
          itemsContractAddress: collection.address,
          audienceId: 1,
          source: 'DEPLOYED',
        });
      }
    }
    add({
      contractName: 'Marketplace',
      contractAddress: network.marketplaceAddress,
      contractType: 'MARKETPLACE',
      chainId: network.chainId,
      audienceId: null,
      source: 'LINKED',
    });
    const dollar = network.currencies[2];
    if (dollar) {
      add({
        contractName: dollar.name,
        contractAddress: dollar.address,
        contractType: 'ERC20',
        chainId: network.chainId,
        audienceId: null,
        source: 'LINKED',
        symbol: dollar.symbol,
        decimals: dollar.decimals,
      });
    }
  }

  const audienceDefs = [
    { name: 'Genesis Allowlist', contacts: Math.min(300, Math.floor(accounts.size / 4)), deleted: false },
    { name: 'Moon Cats Holders Snapshot', contacts: Math.min(120, Math.floor(accounts.size / 8)), deleted: false },
    { name: 'Retired Test List', contacts: 5, deleted: true },
  ];
  const audiences: Audience[] = [];
  const contacts: AudienceContact[] = [];
  audienceDefs.forEach((def, i) => {
    const id = i + 1;
    const created = START_MS + (20 + i * 30) * DAY_MS;
    audiences.push({
      id,
      projectId,
      name: def.name,
      contactCount: def.contacts,
      createdAt: iso(created),
      updatedAt: iso(created + 5 * DAY_MS),
      deletedAt: def.deleted ? iso(created + 60 * DAY_MS) : null,
    });
    const picked = new Set<number>();
    while (picked.size < def.contacts) picked.add(prng.int(0, accounts.size - 1));
    for (const account of [...picked].sort((a, b) => a - b)) {
      const n = contacts.length + 1;
      const address = accounts.at(account);
      contacts.push({
        id: n,
        audienceId: id,
        address,
        name: prng.chance(0.7) ? `collector-${address.slice(2, 8)}` : '',
        email: prng.chance(0.4) ? `collector${n}@example.invalid` : '',
        createdAt: iso(created + prng.int(0, 4) * DAY_MS),
        updatedAt: iso(created + 5 * DAY_MS),
      });
    }
  });

  const sponsorDefs = [
    { name: 'Checkout sponsor', active: true },
    { name: 'Mint sponsor', active: true },
    { name: 'Airdrop relayer', active: true },
    { name: 'Legacy sponsor', active: false },
    { name: 'Team wallet', active: true },
    { name: 'Paused campaign', active: false },
  ];
  const gasSponsors: GasSponsor[] = [];
  networks.forEach((network, n) => {
    for (const def of sponsorDefs) {
      const created = START_MS + (10 + gasSponsors.length * 4) * DAY_MS;
      gasSponsors.push({
        id: gasSponsors.length + 1,
        gasTankId: n + 1,
        projectId,
        chainId: network.chainId,
        address: accounts.at(prng.int(0, accounts.size - 1)),
        name: def.name,
        active: def.active,
        createdAt: iso(created),
        updatedAt: iso(created + (def.active ? 1 : 40) * DAY_MS),
      });
    }
  });

  const collections: Collection[] = networks.flatMap((network) =>
    network.collections.map((collection) => ({
      id: collection.id,
      projectId,
      metadata: {
        name: collection.name,
        description: collection.blueprint.description,
        image: `/assets/${network.name}/${collection.address}/logo.svg`,
        externalLink: `https://example.invalid/${collection.blueprint.slug}`,
        properties: {
          funCollection: collection.standard === 'ERC1155',
          maxNfts: collection.blueprint.maxSupply ?? collection.size,
          minNfts: 1,
        },
      },
      private: false,
      tokenCount: collection.size,
      createdAt: iso(collection.createdAt),
      updatedAt: iso(collection.createdAt + DAY_MS),
    })),
  );

  return { projectId, contractSources, contracts, audiences, contacts, gasSponsors, collections };
}
