import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';

const real = {
  FLOORWATCH_METADATA_URL: 'https://metadata.example',
  FLOORWATCH_MARKETPLACE_URL: 'https://market.example/{network}',
  FLOORWATCH_INDEXER_URL: 'https://{network}-indexer.example',
  FLOORWATCH_RELAYER_URL: 'https://{network}-relayer.example',
  FLOORWATCH_API_URL: 'https://api.example/',
  FLOORWATCH_ACCESS_KEY: 'AQAAAAAAAEGvyZiWA9FMslYeG_yayXaHnSI',
  FLOORWATCH_NETWORKS: 'polygon,mynet:777',
};

function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    loadConfig(env, '/srv/bot');
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe('loadConfig', () => {
  it('GIVEN an empty environment THEN the local platform and the terminal chat are used', () => {
    const config = loadConfig({}, '/srv/bot');
    expect(config.platform.endpoints).toBeUndefined();
    expect(config.discord).toBeUndefined();
    expect(config.telegram).toBeUndefined();
    expect(config.dataDir).toBe('/srv/bot/data');
    expect(config.logLevel).toBe('info');
    expect(config.relistWindowHours).toBe(24);
    expect(loadConfig({ FLOORWATCH_RELIST_WINDOW_HOURS: '0' }, '/srv/bot').relistWindowHours).toBe(0);
    expect(config.whaleUsd).toBe(10_000);
    expect(config.listingEditHours).toBe(24);
    expect(config.listingExpiryCheckSeconds).toBe(30);
    expect(loadConfig({ FLOORWATCH_LISTING_EDIT_HOURS: '0' }, '/srv/bot').listingEditHours).toBe(0);
    // Telegram limits the editing of some messages to 48 hours.
    expect(() => loadConfig({ FLOORWATCH_LISTING_EDIT_HOURS: '72' }, '/srv/bot')).toThrow(
      /FLOORWATCH_LISTING_EDIT_HOURS/,
    );
  });

  it('GIVEN a whale size in US dollars THEN it is read with or without its $, and anything else is refused by name', () => {
    expect(loadConfig({ FLOORWATCH_WHALE_USD: '$5000' }, '/srv/bot').whaleUsd).toBe(5_000);
    expect(loadConfig({ FLOORWATCH_WHALE_USD: '2500.50' }, '/srv/bot').whaleUsd).toBe(2_500.5);
    expect(loadConfig({ FLOORWATCH_WHALE_USD: '0' }, '/srv/bot').whaleUsd).toBe(0);
    for (const bad of ['5k', '-1', '$', '1e6', '5,000']) {
      expect(problemsOf({ FLOORWATCH_WHALE_USD: bad }).join('\n')).toMatch(
        /FLOORWATCH_WHALE_USD must be an amount of US dollars like 10000 or \$2500\.50/,
      );
    }
  });

  it('GIVEN networks written name:chainId:SYMBOL THEN their native coin is named by that symbol', async () => {
    const config = loadConfig({ ...real, FLOORWATCH_NETWORKS: 'polygon,mynet:777:MYC,other:778' }, '/srv/bot');
    expect(config.platform.networks.map((n) => [n.name, n.chainId])).toEqual([
      ['polygon', 137],
      ['mynet', 777],
      ['other', 778],
    ]);
    expect(config.platform.nativeSymbols).toEqual({ mynet: 'MYC' });
    const { CurrencyDirectory, NATIVE_CURRENCY } = await import('../../src/market/currencies.ts');
    const { PlatformClient } = await import('../../src/platform/client.ts');
    const platform = new PlatformClient({
      endpoints: {
        metadataUrl: 'http://127.0.0.1:1',
        marketplaceUrl: 'http://127.0.0.1:1/{network}',
        indexerUrl: 'http://127.0.0.1:1/{network}',
        relayerUrl: 'http://127.0.0.1:1/{network}',
        apiUrl: 'http://127.0.0.1:1',
      },
      networks: config.platform.networks,
      accessKey: 'k',
    });
    const currencies = new CurrencyDirectory(platform, config.platform.nativeSymbols);
    expect(await currencies.symbol('mynet', NATIVE_CURRENCY)).toBe('MYC');
    expect(await currencies.symbol('polygon', NATIVE_CURRENCY)).toBe('POL');
    await platform.close();
    expect(problemsOf({ ...real, FLOORWATCH_NETWORKS: 'mynet:777:$$' })[0]).toMatch(/name:chainId:SYMBOL/);
  });

  it('GIVEN a real platform THEN addresses, networks and key are read', () => {
    const config = loadConfig({
      ...real,
      FLOORWATCH_PROJECT_ID: '16815',
      FLOORWATCH_OPERATORS: 'discord:42, telegram:7',
    });
    expect(config.platform.endpoints).toEqual({
      metadataUrl: 'https://metadata.example',
      marketplaceUrl: 'https://market.example/{network}',
      indexerUrl: 'https://{network}-indexer.example',
      relayerUrl: 'https://{network}-relayer.example',
      apiUrl: 'https://api.example',
    });
    expect(config.platform.networks).toEqual([
      { name: 'polygon', chainId: 137 },
      { name: 'mynet', chainId: 777 },
    ]);
    expect(config.platform.projectId).toBe(16815);
    expect(config.operators).toEqual(['discord:42', 'telegram:7']);
  });

  it('GIVEN several mistakes THEN every one is reported with its variable', () => {
    const problems = problemsOf({
      FLOORWATCH_METADATA_URL: 'not a url',
      FLOORWATCH_INDEXER_URL: 'https://indexer.example',
      FLOORWATCH_PROJECT_ID: '-3',
      LOG_LEVEL: 'loud',
      DISCORD_TOKEN: 'x',
      FLOORWATCH_OPERATORS: 'bob',
      FLOORWATCH_NETWORKS: 'atlantis',
      FLOORWATCH_RELIST_WINDOW_HOURS: 'a day',
    });
    const text = problems.join('\n');
    expect(text).toMatch(/missing FLOORWATCH_MARKETPLACE_URL, FLOORWATCH_RELAYER_URL, FLOORWATCH_API_URL/);
    expect(text).toMatch(/FLOORWATCH_METADATA_URL is not a URL/);
    expect(text).toMatch(/FLOORWATCH_INDEXER_URL must contain \{network\}/);
    expect(text).toMatch(/FLOORWATCH_PROJECT_ID must be a whole number/);
    expect(text).toMatch(/LOG_LEVEL must be one of/);
    expect(text).toMatch(/DISCORD_APPLICATION_ID is required/);
    expect(text).toMatch(/FLOORWATCH_OPERATORS: "bob"/);
    expect(text).toMatch(/FLOORWATCH_NETWORKS: "atlantis"/);
    expect(text).toMatch(/FLOORWATCH_ACCESS_KEY is required/);
    expect(text).toMatch(/FLOORWATCH_RELIST_WINDOW_HOURS must be a whole number/);
  });

  it('GIVEN a key in a URL THEN it is refused and the key is not echoed', () => {
    const problems = problemsOf({ ...real, FLOORWATCH_API_URL: 'https://api.example/?key=SECRET123' });
    expect(problems.join('\n')).toMatch(/FLOORWATCH_API_URL must not carry a query/);
    expect(problems.join('\n')).not.toContain('SECRET123');
  });

  it('GIVEN read-back and database settings THEN they are checked, and the database password is a secret', async () => {
    expect(problemsOf({ ...real, FLOORWATCH_RPC_URL: 'ftp://rpc.example' })[0]).toMatch(
      /FLOORWATCH_RPC_URL must be an http\(s\) JSON-RPC address/,
    );
    // Two networks: one address for both would read one chain's logs for the other.
    expect(problemsOf({ ...real, FLOORWATCH_RPC_URL: 'https://rpc.example/KEY' })[0]).toMatch(
      /must contain \{network\}/,
    );
    expect(problemsOf({ ...real, FLOORWATCH_BACKFILL_MAX_BLOCKS: '-1' })[0]).toMatch(/FLOORWATCH_BACKFILL_MAX_BLOCKS/);
    const config = loadConfig(
      {
        ...real,
        FLOORWATCH_RPC_URL: 'https://{network}.rpc.example/KEY',
        FLOORWATCH_BACKFILL_MAX_BLOCKS: '0',
        FLOORWATCH_DATABASE_URL: 'postgres://bot:s3cret-pw@db.example:5432/floorwatch',
      },
      '/srv/bot',
    );
    expect(config.backfill).toEqual({ rpcUrl: 'https://{network}.rpc.example/KEY', maxBlocks: 0 });
    expect(config.database).toEqual({ url: 'postgres://bot:s3cret-pw@db.example:5432/floorwatch', poolSize: 10 });
    const { secretsOf } = await import('../../src/config.ts');
    expect(secretsOf(config)).toContain('s3cret-pw');
    expect(problemsOf({ ...real, FLOORWATCH_DATABASE_POOL: '1' })[0]).toMatch(/FLOORWATCH_DATABASE_POOL/);
  });

  it('GIVEN one of two variables that go together, itself malformed THEN both problems are reported at once', () => {
    expect(problemsOf({ DISCORD_SHARD_COUNT: 'y' })).toEqual([
      'DISCORD_SHARD_COUNT must be a whole number from 1 to 65536; got "y".',
      expect.stringMatching(/^DISCORD_SHARD_IDS is not set/),
    ]);
  });

  it('GIVEN malformed secrets THEN each problem names its variable and none quotes a secret', () => {
    const secrets = ['bot-token-not-botfather', 'hunter2secret', 'RPCKEY12345', 'short secret!'];
    const problems = problemsOf({
      TELEGRAM_BOT_TOKEN: secrets[0] as string,
      FLOORWATCH_DATABASE_URL: `mysql://bot:${secrets[1]}@db/floorwatch`,
      FLOORWATCH_RPC_URL: `ftp://rpc.example/${secrets[2]}`,
      FLOORWATCH_TELEGRAM_WEBHOOK_URL: 'https://bot.example/t',
      FLOORWATCH_TELEGRAM_WEBHOOK_SECRET: secrets[3] as string,
    });
    expect(problems.map((p) => p.split(' ')[0]).sort()).toEqual([
      'FLOORWATCH_DATABASE_URL',
      'FLOORWATCH_RPC_URL',
      'FLOORWATCH_TELEGRAM_WEBHOOK_SECRET',
      'TELEGRAM_BOT_TOKEN',
    ]);
    for (const secret of secrets) expect(problems.join('\n')).not.toContain(secret);
  });

  it('GIVEN FLOORWATCH_PLATFORM_URL and the key THEN nothing else is required: the rest is read from the platform at start', () => {
    const config = loadConfig(
      {
        FLOORWATCH_PLATFORM_URL: 'http://127.0.0.1:8777/',
        FLOORWATCH_ACCESS_KEY: 'AQAAAAAAAEGvyZiWA9FMslYeG_yayXaHnSI',
      },
      '/srv/bot',
    );
    expect(config.platform.discoveryUrl).toBe('http://127.0.0.1:8777');
    expect(config.platform.endpoints).toBeUndefined();
    expect(config.platform.endpointOverrides).toEqual({});
    expect(config.platform.networks).toEqual([]);
    // Addresses set beside it replace some of those the platform gives; no need for all five.
    const some = loadConfig(
      {
        FLOORWATCH_PLATFORM_URL: 'http://devnet:8777',
        FLOORWATCH_ACCESS_KEY: 'k',
        FLOORWATCH_API_URL: 'https://api.example',
      },
      '/srv/bot',
    );
    expect(some.platform.endpointOverrides).toEqual({ apiUrl: 'https://api.example' });
    expect(some.platform.endpoints).toBeUndefined();
    expect(problemsOf({ FLOORWATCH_PLATFORM_URL: 'http://127.0.0.1:8777' })).toEqual([
      'FLOORWATCH_ACCESS_KEY is required with FLOORWATCH_PLATFORM_URL (npm run devnet prints the key).',
    ]);
    expect(problemsOf({ FLOORWATCH_PLATFORM_URL: 'ftp://x', FLOORWATCH_ACCESS_KEY: 'k' })[0]).toMatch(
      /^FLOORWATCH_PLATFORM_URL must be the http\(s\) base address/,
    );
    expect(
      problemsOf({ FLOORWATCH_PLATFORM_URL: 'http://127.0.0.1:8777/?key=s3cret', FLOORWATCH_ACCESS_KEY: 'k' })[0],
    ).toMatch(/^FLOORWATCH_PLATFORM_URL must be/);
    // Without it, a real platform still needs the five addresses and its networks, and says how a devnet is set.
    const { FLOORWATCH_NETWORKS: _networks, FLOORWATCH_API_URL: _api, ...partial } = real;
    expect(problemsOf(partial)).toEqual([
      'A real platform needs all five addresses; missing FLOORWATCH_API_URL. (For the local platform of npm run devnet, FLOORWATCH_PLATFORM_URL alone will do.)',
      'FLOORWATCH_NETWORKS is required with a real platform, e.g. polygon,base.',
    ]);
  });
});
