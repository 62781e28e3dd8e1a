/**
 * Blueprints of the devnet's collections: made-up names, traits with realistic rarity, sizes and
 * price levels. The dataset generator turns them into tokens, owners and orders.
 */
export type Standard = 'ERC721' | 'ERC1155';

export interface TraitBlueprint {
  name: string;
  /** `[value, weight]`: a value's share is its weight over the sum of weights. */
  values: ReadonlyArray<readonly [string, number]>;
}

export interface NumericTraitBlueprint {
  name: string;
  min: number;
  max: number;
}

export interface ItemBlueprint {
  name: string;
  supply: number;
}

export interface CollectionBlueprint {
  slug: string;
  name: string;
  symbol: string;
  standard: Standard;
  /** Tokens at start (ERC-721) or distinct ids (ERC-1155, when no `items`). */
  size: number;
  /** Upper bound the random miner respects; collections below it are "still minting". */
  maxSupply?: number;
  tokenName: string;
  description: string;
  traits: readonly TraitBlueprint[];
  numeric?: readonly NumericTraitBlueprint[];
  /** Named ERC-1155 ids with their supply. */
  items?: readonly ItemBlueprint[];
  /** Floor price level in USD. */
  floorUsd: number;
  /** Share of tokens listed, and share with offers. */
  listed: number;
  offered: number;
  verified: boolean;
  /** Metadata built to break renderers (markdown, HTML, mentions, huge text, broken images). */
  hostile?: boolean;
  /** Hue of the collection's artwork. */
  hue: number;
}

export interface NetworkBlueprint {
  name: string;
  chainId: number;
  /** Block number of the dataset's head. */
  headBlock: number;
  nativeSymbol: string;
  collections: readonly CollectionBlueprint[];
}

const BACKGROUNDS: TraitBlueprint = {
  name: 'Background',
  values: [
    ['Crater Grey', 22],
    ['Midnight', 18],
    ['Dusk', 16],
    ['Nebula', 14],
    ['Aurora', 10],
    ['Tide Pool', 9],
    ['Void', 6],
    ['Solar Gold', 2],
  ],
};

const MOON_CATS: CollectionBlueprint = {
  slug: 'moon-cats',
  name: 'Moon Cats',
  symbol: 'MCAT',
  standard: 'ERC721',
  size: 10_000,
  maxSupply: 10_000,
  tokenName: 'Moon Cat',
  description: 'Ten thousand cats that fell asleep on the moon and woke up on a devnet.',
  traits: [
    BACKGROUNDS,
    {
      name: 'Fur',
      values: [
        ['Tabby', 20],
        ['Calico', 16],
        ['Tuxedo', 15],
        ['Ginger', 14],
        ['Silver', 12],
        ['Midnight Black', 10],
        ['Cream', 8],
        ['Cosmic Static', 3],
        ['Moonlit Glow', 2],
      ],
    },
    {
      name: 'Eyes',
      values: [
        ['Round', 28],
        ['Sleepy', 20],
        ['Starry', 15],
        ['Heterochromia', 12],
        ['Squint', 12],
        ['Closed', 8],
        ['Laser', 4],
        ['Galaxy', 1],
      ],
    },
    {
      name: 'Hat',
      values: [
        ['None', 40],
        ['Beanie', 14],
        ['Propeller Cap', 12],
        ['Space Helmet', 10],
        ['Wizard Hat', 9],
        ['Party Hat', 8],
        ['Halo', 4],
        ['Crown', 3],
      ],
    },
    {
      name: 'Mouth',
      values: [
        ['Smile', 30],
        ['Neutral', 25],
        ['Tongue Out', 18],
        ['Frown', 12],
        ['Fangs', 10],
        ['Whistling', 5],
      ],
    },
  ],
  numeric: [{ name: 'Lives', min: 1, max: 9 }],
  floorUsd: 140,
  listed: 0.12,
  offered: 0.08,
  verified: true,
  hue: 250,
};

const MOON_CATS_RESCUE: CollectionBlueprint = {
  slug: 'moon-cats-rescue',
  name: 'Moon Cats Rescue',
  symbol: 'MCR',
  standard: 'ERC721',
  size: 1_200,
  maxSupply: 1_200,
  tokenName: 'Rescued Moon Cat',
  description: 'The cats that missed the last rocket home. Adopt one; they purr in low gravity.',
  traits: [
    BACKGROUNDS,
    {
      name: 'Fur',
      values: [
        ['Patchy Tabby', 30],
        ['Dusty Grey', 25],
        ['Orange', 20],
        ['Singed', 15],
        ['Glowing', 10],
      ],
    },
    {
      name: 'Collar',
      values: [
        ['None', 45],
        ['Red Bell', 20],
        ['Blue Tag', 18],
        ['Astronaut Patch', 12],
        ['Golden Bell', 5],
      ],
    },
  ],
  floorUsd: 38,
  listed: 0.15,
  offered: 0.1,
  verified: true,
  hue: 200,
};

const PIXEL_POTIONS: CollectionBlueprint = {
  slug: 'pixel-potions',
  name: 'Pixel Potions',
  symbol: 'POTION',
  standard: 'ERC1155',
  size: 8,
  tokenName: 'Pixel Potion',
  description: 'Bottled effects for 8-bit heroes. Shake before use.',
  items: [
    { name: 'Potion of Haste', supply: 500 },
    { name: 'Elixir of Focus', supply: 250 },
    { name: 'Phial of Night', supply: 120 },
    { name: 'Draught of Luck', supply: 60 },
    { name: 'Tonic of Giants', supply: 30 },
    { name: 'Vial of Echoes', supply: 12 },
    { name: 'Philter of Stars', supply: 5 },
    { name: 'Essence of Dawn', supply: 1 },
  ],
  traits: [
    {
      name: 'Element',
      values: [
        ['Fire', 1],
        ['Water', 1],
        ['Air', 1],
        ['Earth', 1],
      ],
    },
    {
      name: 'Rarity',
      values: [
        ['Common', 4],
        ['Rare', 2],
        ['Legendary', 1],
      ],
    },
  ],
  floorUsd: 6,
  listed: 0.6,
  offered: 0.5,
  verified: true,
  hue: 320,
};

const GLITCH_GARDENS: CollectionBlueprint = {
  slug: 'glitch-gardens',
  name: 'Glitch Gardens',
  symbol: 'GLITCH',
  standard: 'ERC721',
  size: 640,
  maxSupply: 1_000,
  tokenName: 'Glitch Garden',
  description: 'Procedural gardens that grow a little wrong. Still minting.',
  traits: [
    {
      name: 'Soil',
      values: [
        ['Loam', 35],
        ['Sand', 25],
        ['Clay', 20],
        ['Static', 15],
        ['Void Dust', 5],
      ],
    },
    {
      name: 'Bloom',
      values: [
        ['Tulip', 25],
        ['Fern', 22],
        ['Cactus', 18],
        ['Orchid', 15],
        ['Moss', 12],
        ['Pixel Rose', 8],
      ],
    },
  ],
  numeric: [{ name: 'Glitch Level', min: 1, max: 10 }],
  floorUsd: 22,
  listed: 0.18,
  offered: 0.1,
  verified: true,
  hue: 120,
};

const RENDER_GREMLINS: CollectionBlueprint = {
  slug: 'render-gremlins',
  name: 'Render **Gremlins** || @everyone <b>',
  symbol: 'GREM',
  standard: 'ERC721',
  size: 12,
  maxSupply: 12,
  tokenName: 'Gremlin',
  description:
    'Metadata built to break renderers: **markdown**, ||spoilers||, [a link](http://evil.example/phish), <b>HTML</b>, <script>alert(1)</script>, @everyone, @here, <@123456789012345678>.',
  traits: [
    {
      name: '**Mood**',
      values: [
        ['@here', 1],
        ['<i>sneaky</i>', 1],
        ['||hidden||', 1],
      ],
    },
  ],
  floorUsd: 3,
  listed: 0.5,
  offered: 0.3,
  verified: false,
  hostile: true,
  hue: 0,
};

const HARBOR_GULLS: CollectionBlueprint = {
  slug: 'harbor-gulls',
  name: 'Harbor Gulls',
  symbol: 'GULL',
  standard: 'ERC721',
  size: 3_333,
  maxSupply: 3_333,
  tokenName: 'Harbor Gull',
  description: 'Loud, hungry, and on layer two. Each gull has stolen at least one chip.',
  traits: [
    {
      name: 'Sky',
      values: [
        ['Overcast', 30],
        ['Clear', 25],
        ['Sunset', 20],
        ['Storm', 15],
        ['Northern Lights', 10],
      ],
    },
    {
      name: 'Feathers',
      values: [
        ['White', 35],
        ['Grey', 30],
        ['Speckled', 20],
        ['Oil Slick', 10],
        ['Golden', 5],
      ],
    },
    {
      name: 'Beak',
      values: [
        ['Yellow', 50],
        ['Orange', 30],
        ['Holding Chip', 15],
        ['Holding Fish', 5],
      ],
    },
    {
      name: 'Accessory',
      values: [
        ['None', 50],
        ['Sailor Hat', 18],
        ['Eye Patch', 14],
        ['Life Ring', 12],
        ['Tiny Anchor', 6],
      ],
    },
  ],
  floorUsd: 55,
  listed: 0.1,
  offered: 0.07,
  verified: true,
  hue: 190,
};

const HARBOR_GULLS_CLUB: CollectionBlueprint = {
  slug: 'harbor-gulls-club',
  name: 'Harbor Gulls Club',
  symbol: 'GULLC',
  standard: 'ERC721',
  size: 250,
  maxSupply: 250,
  tokenName: 'Club Gull',
  description: 'Membership cards of the most exclusive pier on layer two.',
  traits: [
    {
      name: 'Tier',
      values: [
        ['Deckhand', 60],
        ['Bosun', 25],
        ['Captain', 12],
        ['Admiral', 3],
      ],
    },
  ],
  floorUsd: 310,
  listed: 0.08,
  offered: 0.12,
  verified: true,
  hue: 30,
};

const RUNE_SHARDS: CollectionBlueprint = {
  slug: 'rune-shards',
  name: 'Rune Shards',
  symbol: 'RUNE',
  standard: 'ERC1155',
  size: 12,
  tokenName: 'Rune Shard',
  description: 'Fragments of a broken keyboard of the old gods. Collect the whole alphabet.',
  items: [
    { name: 'Shard of Ash', supply: 900 },
    { name: 'Shard of Brine', supply: 700 },
    { name: 'Shard of Cinder', supply: 500 },
    { name: 'Shard of Dew', supply: 400 },
    { name: 'Shard of Ember', supply: 300 },
    { name: 'Shard of Frost', supply: 200 },
    { name: 'Shard of Gale', supply: 120 },
    { name: 'Shard of Hollow', supply: 80 },
    { name: 'Shard of Iron', supply: 40 },
    { name: 'Shard of Jade', supply: 20 },
    { name: 'Shard of Kindling', supply: 8 },
    { name: 'Shard of Lumen', supply: 2 },
  ],
  traits: [
    {
      name: 'School',
      values: [
        ['Elemental', 2],
        ['Arcane', 1],
        ['Primal', 1],
      ],
    },
  ],
  floorUsd: 2.5,
  listed: 0.7,
  offered: 0.6,
  verified: true,
  hue: 280,
};

const TINY_TRACTORS: CollectionBlueprint = {
  slug: 'tiny-tractors',
  name: 'Tiny Tractors',
  symbol: 'TRAC',
  standard: 'ERC721',
  size: 5,
  maxSupply: 5,
  tokenName: 'Tiny Tractor',
  description: 'Five hand-drawn tractors. That is the whole collection.',
  traits: [
    {
      name: 'Paint',
      values: [
        ['Red', 1],
        ['Green', 1],
        ['Rust', 1],
      ],
    },
  ],
  floorUsd: 900,
  listed: 0.4,
  offered: 0.6,
  verified: true,
  hue: 10,
};

const STATIC_LANTERNS: CollectionBlueprint = {
  slug: 'static-lanterns',
  name: 'Static Lanterns',
  symbol: 'LANTERN',
  standard: 'ERC1155',
  size: 40,
  maxSupply: 64,
  tokenName: 'Static Lantern',
  description: 'Lanterns that glow with television snow. New ones are lit every week.',
  traits: [
    {
      name: 'Glow',
      values: [
        ['Warm', 3],
        ['Cold', 3],
        ['Flicker', 2],
        ['Blinding', 1],
      ],
    },
    {
      name: 'Frame',
      values: [
        ['Brass', 3],
        ['Iron', 3],
        ['Paper', 2],
      ],
    },
  ],
  floorUsd: 4,
  listed: 0.5,
  offered: 0.4,
  verified: true,
  hue: 50,
};

/** The two networks and their collections. */
export const NETWORK_BLUEPRINTS: readonly NetworkBlueprint[] = [
  {
    name: 'devnet',
    chainId: 31337,
    headBlock: 18_400_000,
    nativeSymbol: 'DEV',
    collections: [MOON_CATS, MOON_CATS_RESCUE, PIXEL_POTIONS, GLITCH_GARDENS, RENDER_GREMLINS],
  },
  {
    name: 'devnet-l2',
    chainId: 31338,
    headBlock: 5_200_000,
    nativeSymbol: 'DEV',
    collections: [HARBOR_GULLS, HARBOR_GULLS_CLUB, RUNE_SHARDS, TINY_TRACTORS, STATIC_LANTERNS],
  },
];

/** Third-party marketplaces of the dataset, with their share of orders (positions of MARKETPLACE_KINDS). */
export const MARKETPLACE_WEIGHTS: ReadonlyArray<readonly [number, number]> = [
  [2, 60], // sequence_marketplace_v2
  [5, 18], // opensea
  [11, 8], // magic_eden
  [6, 7], // looks_rare
  [3, 7], // blur
];

/** The platform's own marketplace: its orders emit RequestCreated/Accepted/Cancelled. */
export const OWN_MARKETPLACE = 2;
