import type { TokenOverride } from './collection.ts';

/** The largest uint256: a token id that overflows every naive renderer. */
export const MAX_UINT256_ID = ((1n << 256n) - 1n).toString();

const LONG_DESCRIPTION = `${'This description goes on. '.repeat(400).slice(0, 9_993)}THE END`;

/**
 * Metadata of the hostile collection, one problem per token: markdown and spoilers, HTML and
 * script tags, mass and role mentions, a 10,000-character description, bidi and zero-width
 * characters, empty and overlong names, broken or dangerous image URLs.
 */
export function hostileOverrides(brokenImageBase: string): TokenOverride[] {
  return [
    {
      name: '**Bold** __underline__ ~~strike~~ ||spoiler|| *italic*',
      description: 'Click [here](http://evil.example/phish) for a [free mint](javascript:alert(1)) || ||secret|| ||',
    },
    {
      name: "<script>alert('xss')</script>",
      description: '<b>bold</b> <img src=x onerror=alert(1)> <a href="http://evil.example">link</a> &amp; &lt;',
      image: 'javascript:alert(1)',
    },
    {
      name: '@everyone free mint',
      description: '@here <@123456789012345678> <@!123456789012345678> <@&987654321098765432> <#111111111111111111>',
    },
    { name: 'Very Long Description', description: LONG_DESCRIPTION },
    {
      name: 'Gremlin \u202Eevil\u202C\u200B\u200Bzero\u200Dwidth',
      description: 'Right-to-left override and zero-width characters.',
      image: `${brokenImageBase}/missing.png`,
    },
    {
      name: '`code` ```block``` # Heading > quote',
      description: '```js\nconsole.log("fence not closed")\n# Heading\n> quote\n- list\n1. item',
      image: 'ipfs://bafybeibrokenbrokenbrokenbrokenbrokenbrokenbroken/nope.png',
    },
    { name: '', description: '', image: '' },
    { name: `Overlong ${'name '.repeat(60)}`.trim(), description: 'A 300-character name.', image: 'not a url' },
    {
      name: 'Telegram <i>html</i> & *stars* _under_ [link](tg://user?id=1)',
      description: '<pre>pre</pre> <code>code</code> <tg-spoiler>spoiler</tg-spoiler> <u>u</u>',
      image: 'http://127.0.0.1:9/unreachable.png',
    },
    {
      name: 'Emoji 🐱‍👤🏴‍☠️ and combining z̷̢̛a̶l̸g̵o̷',
      description: 'Z̸̡̛̙a̷̧͠l̴̨̛g̶̢̛ǫ̵ text and 🧨 emoji.',
      imageData: '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>',
      image: `${brokenImageBase}/gremlin.gif`,
    },
    {
      name: 'Newlines\nin\nthe\nname',
      description: 'Line one\r\nLine two\n\n\nLine five',
      externalUrl: 'javascript:alert(document.cookie)',
      animationUrl: 'http://evil.example/autoplay.mp4',
    },
    {
      name: 'Gremlin #115792089237316195423570985484157260 (max uint256 id)',
      description: 'This token id is 2^256-1.',
      image: 'https://example.invalid/404.png',
    },
  ];
}

/**
 * SVG images built to break the bot's drawing, served at `/assets/hostile/{name}.svg`:
 * - `slow`: 20,000 blurred squares (1.3 MB), minutes of drawing at 100% of a core;
 * - `memory`: 1,000 nested translucent groups (22 kB), 1.6 GB of layers for resvg;
 * - `dev-zero`: a blue square with an image of `/dev/zero` behind a non-ASCII xlink prefix, which
 *   resvg reads until memory runs out.
 */
export const HOSTILE_IMAGES: Readonly<Record<string, () => string>> = {
  slow: () => {
    const squares = Array.from(
      { length: 20_000 },
      (_, i) => `<rect x="${i % 500}" y="${(i * 7) % 500}" width="300" height="300" filter="url(#b)"/>`,
    );
    return `<svg xmlns="http://www.w3.org/2000/svg" width="512" height="512"><filter id="b"><feGaussianBlur stdDeviation="40"/></filter>${squares.join('')}</svg>`;
  },
  memory: () =>
    `<svg xmlns="http://www.w3.org/2000/svg" width="512" height="512">${'<g opacity="0.99">'.repeat(1_000)}<rect width="512" height="512" fill="red"/>${'</g>'.repeat(1_000)}</svg>`,
  'dev-zero': () =>
    '<svg xmlns="http://www.w3.org/2000/svg" width="512" height="512"><rect width="512" height="512" fill="blue"/><image ж:href="/dev/zero" xmlns:ж="http://www.w3.org/1999/xlink" width="512" height="512"/></svg>',
};

/**
 * With the devnet's `hostileImages`, the hostile collection's tokens (by index) that show
 * {@link HOSTILE_IMAGES}; two show the slow one, each at an address of its own.
 */
export const HOSTILE_IMAGE_TOKENS: ReadonlyArray<readonly [index: number, image: string]> = [
  [0, 'slow'],
  [2, 'memory'],
  [3, 'dev-zero'],
  [10, 'slow'],
];
