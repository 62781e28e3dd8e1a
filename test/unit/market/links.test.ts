import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config.ts';
import { Links } from '../../../src/market/links.ts';
import { WELL_KNOWN_NETWORKS } from '../../../src/platform/networks.ts';

const real = {
  FLOORWATCH_METADATA_URL: 'https://metadata.example',
  FLOORWATCH_MARKETPLACE_URL: 'https://market.example/{network}',
  FLOORWATCH_INDEXER_URL: 'https://{network}-indexer.example',
  FLOORWATCH_RELAYER_URL: 'https://{network}-relayer.example',
  FLOORWATCH_API_URL: 'https://api.example/',
  FLOORWATCH_ACCESS_KEY: 'AQAAAAAAAEGvyZiWA9FMslYeG_yayXaHnSI',
  FLOORWATCH_NETWORKS: 'polygon,mainnet,mynet:777',
};
const moonbirds = '0x23581767a106ae21c074b2276d25e5c3e136a68b';

describe('links', () => {
  it('GIVEN a real platform without link settings THEN well-known networks link their explorer, and orders their marketplace page where it has one', () => {
    const config = loadConfig(real, '/srv/bot');
    const links = new Links(config.links, WELL_KNOWN_NETWORKS);
    expect(links.transaction('polygon', '0xabc')).toBe('https://polygonscan.com/tx/0xabc');
    expect(links.transaction('mynet', '0xabc')).toBeUndefined();
    expect(links.token('polygon', moonbirds, '7')).toBeUndefined();
    expect(links.order('polygon', moonbirds, '7', { marketplace: 'opensea' })).toEqual({
      label: 'OpenSea',
      url: `https://opensea.io/assets/matic/${moonbirds}/7`,
    });
    expect(links.order('polygon', moonbirds, '7', { marketplace: 'blur' })).toBeUndefined();
    expect(links.order('mainnet', moonbirds, '7', { marketplace: 'blur' })?.url).toBe(
      `https://blur.io/asset/${moonbirds}/7`,
    );
    expect(links.order('polygon', moonbirds, '7', { marketplace: 'magic_eden' })).toEqual({
      label: 'Magic Eden',
      url: `https://magiceden.io/item-details/polygon/${moonbirds}/7`,
    });
    // The platform's own marketplace has a page only when FLOORWATCH_TOKEN_URL names it.
    expect(links.order('polygon', moonbirds, '7', { marketplace: 'sequence_marketplace_v2' })).toBeUndefined();
  });

  it('GIVEN an order on Magic Eden THEN its page names the network as Magic Eden does, and a network Magic Eden does not list gets no link', () => {
    const links = new Links(loadConfig(real, '/srv/bot').links, WELL_KNOWN_NETWORKS);
    const page = (network: string) => links.order(network, moonbirds, '7', { marketplace: 'magic_eden' })?.url;
    expect(page('mainnet')).toBe(`https://magiceden.io/item-details/ethereum/${moonbirds}/7`);
    expect(page('polygon')).toBe(`https://magiceden.io/item-details/polygon/${moonbirds}/7`);
    expect(page('base')).toBe(`https://magiceden.io/item-details/base/${moonbirds}/7`);
    expect(page('arbitrum')).toBe(`https://magiceden.io/item-details/arbitrum/${moonbirds}/7`);
    expect(page('arbitrum-nova')).toBeUndefined();
    expect(page('amoy')).toBeUndefined();
    // OpenSea keeps its own names.
    expect(links.order('arbitrum-nova', moonbirds, '7', { marketplace: 'opensea' })?.url).toBe(
      `https://opensea.io/assets/arbitrum_nova/${moonbirds}/7`,
    );
  });

  it('GIVEN FLOORWATCH_TOKEN_URL and FLOORWATCH_EXPLORER_URLS THEN their templates are filled in, escaped', () => {
    const config = loadConfig(
      {
        ...real,
        FLOORWATCH_TOKEN_URL: 'https://shop.example/{chainId}/{collection}/{tokenId}',
        FLOORWATCH_EXPLORER_URLS:
          'mynet=https://scan.mynet.example/tx/{txnHash},polygon=https://other.example/t/{txnHash}',
      },
      '/srv/bot',
    );
    const links = new Links(config.links, [...WELL_KNOWN_NETWORKS, { name: 'mynet', chainId: 777 }]);
    expect(links.token('mynet', moonbirds, '7')).toBe(`https://shop.example/777/${moonbirds}/7`);
    expect(links.token('mynet', moonbirds, '7/../x')).toBe(`https://shop.example/777/${moonbirds}/7%2F..%2Fx`);
    expect(links.transaction('mynet', '0xabc')).toBe('https://scan.mynet.example/tx/0xabc');
    expect(links.transaction('polygon', '0xabc')).toBe('https://other.example/t/0xabc');
    expect(links.order('mynet', moonbirds, '7', { marketplace: 'sequence_marketplace_v2' })).toEqual({
      label: 'Sequence Market v2',
      url: `https://shop.example/777/${moonbirds}/7`,
    });
  });

  it('GIVEN link templates that cannot work THEN the configuration is refused, naming them', () => {
    let problems: readonly string[] = [];
    try {
      loadConfig(
        {
          ...real,
          FLOORWATCH_TOKEN_URL: 'ftp://x/{tokenId}',
          FLOORWATCH_EXPLORER_URLS: 'mynet=https://scan.example/tx/',
        },
        '/srv/bot',
      );
    } catch (error) {
      if (error instanceof ConfigError) problems = error.problems;
    }
    expect(problems).toEqual([
      expect.stringContaining('FLOORWATCH_TOKEN_URL must be an http(s) address with {collection} and {tokenId}'),
      expect.stringContaining('FLOORWATCH_EXPLORER_URLS: "mynet=https://scan.example/tx/" must look like'),
    ]);
  });
});
