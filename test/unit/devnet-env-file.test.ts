import { describe, expect, it } from 'vitest';
import { devnetEnvBlock, ENV_BLOCK_HEADER, withEnvBlock } from '../../src/devnet/env-file.ts';

const devnet = { url: 'http://127.0.0.1:8777', accessKey: 'AQAAkey', secretToken: 'fwdev_secret' };

describe('the .env block of npm run devnet', () => {
  it('GIVEN a devnet THEN the block is its base address and credentials; 0.0.0.0 is written as 127.0.0.1', () => {
    expect(devnetEnvBlock(devnet)).toEqual([
      ENV_BLOCK_HEADER,
      'FLOORWATCH_PLATFORM_URL=http://127.0.0.1:8777',
      'FLOORWATCH_ACCESS_KEY=AQAAkey',
      'FLOORWATCH_SECRET_TOKEN=fwdev_secret',
    ]);
    expect(devnetEnvBlock({ ...devnet, url: 'http://0.0.0.0:8777' })[1]).toBe(
      'FLOORWATCH_PLATFORM_URL=http://127.0.0.1:8777',
    );
  });

  it('GIVEN no file THEN the file is the block alone', () => {
    expect(withEnvBlock('', devnetEnvBlock(devnet))).toEqual({
      text: `${devnetEnvBlock(devnet).join('\n')}\n`,
      commentedOut: [],
    });
  });

  it('GIVEN a .env with chat settings and an older platform set-up THEN the chat settings stay, the platform settings are commented out, and the block is added', () => {
    const existing = [
      '# my bot',
      'TELEGRAM_BOT_TOKEN=123:abc',
      'FLOORWATCH_METADATA_URL=http://127.0.0.1:9999/metadata',
      'export FLOORWATCH_NETWORKS=devnet:31337:DEV',
      'FLOORWATCH_OPERATORS=telegram:1',
      '',
    ].join('\n');
    const { text, commentedOut } = withEnvBlock(existing, devnetEnvBlock(devnet));
    expect(commentedOut).toEqual(['FLOORWATCH_METADATA_URL', 'FLOORWATCH_NETWORKS']);
    expect(text).toBe(
      [
        '# my bot',
        'TELEGRAM_BOT_TOKEN=123:abc',
        '# FLOORWATCH_METADATA_URL=http://127.0.0.1:9999/metadata    (replaced by npm run devnet)',
        '# export FLOORWATCH_NETWORKS=devnet:31337:DEV    (replaced by npm run devnet)',
        'FLOORWATCH_OPERATORS=telegram:1',
        '',
        ...devnetEnvBlock(devnet),
        '',
      ].join('\n'),
    );
  });

  it('GIVEN a file written by an earlier devnet (another port) THEN its block is replaced, not kept commented out', () => {
    const first = withEnvBlock('DISCORD_TOKEN=t\n', devnetEnvBlock({ ...devnet, url: 'http://127.0.0.1:1111' })).text;
    const { text, commentedOut } = withEnvBlock(first, devnetEnvBlock(devnet));
    expect(commentedOut).toEqual([]);
    expect(text).toBe(`DISCORD_TOKEN=t\n\n${devnetEnvBlock(devnet).join('\n')}\n`);
  });
});
