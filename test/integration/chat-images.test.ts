import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type ChatImage, ChatImages } from '../../src/chat/images/images.ts';
import { type Devnet, startDevnet } from '../../src/devnet/index.ts';
import { collectionNamed } from '../helpers/devnet-data.ts';

const SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" width="200" height="100"><rect width="200" height="100" fill="teal"/></svg>';

let devnet: Devnet;
let server: Server;
let base: string;
const requests: string[] = [];
const logs: Array<{ msg: string; image?: string; reason?: string }> = [];
const logger = pino({ level: 'debug' }, { write: (line: string) => void logs.push(JSON.parse(line)) });

/** Images for the test server's routes (`/name`). */
const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {
  '/plain.svg': (_, res) => res.writeHead(200, { 'content-type': 'image/svg+xml' }).end(SVG),
  '/unlabelled.svg': (_, res) => res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(SVG),
  '/photo.png': (_, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.alloc(300_000, 1)),
  '/page.html': (_, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html><svg/></html>'),
  '/broken.svg': (_, res) =>
    res
      .writeHead(200, { 'content-type': 'image/svg+xml' })
      .end('<svg xmlns="http://www.w3.org/2000/svg" width="9" height="9"><rect width=</svg>'),
  '/huge.svg': (_, res) => {
    // No content-length: the cap must hold while reading.
    res.writeHead(200, { 'content-type': 'image/svg+xml' });
    res.write('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10">');
    const chunk = `<!-- ${'x'.repeat(64 * 1024)} -->`;
    for (let i = 0; i < 100; i++) res.write(chunk);
    res.end('</svg>');
  },
  '/slow.svg': (_, res) => {
    setTimeout(() => res.writeHead(200, { 'content-type': 'image/svg+xml' }).end(SVG), 1_500);
  },
  '/missing.svg': (_, res) => res.writeHead(404, { 'content-type': 'text/plain' }).end('no'),
  '/to-internal.svg': (_, res) => res.writeHead(302, { location: `${base}/plain.svg` }).end(),
};

/** The chat images of a bot whose platform is the devnet, with the test server allowed as the platform's too. */
function images(extra: Partial<ConstructorParameters<typeof ChatImages>[0]> = {}): ChatImages {
  return new ChatImages({ logger, allowHosts: [new URL(devnet.url).host, new URL(base).host], ...extra });
}

function png(image: ChatImage | undefined): Extract<ChatImage, { kind: 'png' }> {
  if (image?.kind !== 'png') throw new Error(`expected a drawn image, got ${JSON.stringify(image)}`);
  return image;
}

function failures(path: string): string[] {
  return logs.filter((l) => l.msg === 'image not shown' && l.image?.endsWith(path)).map((l) => l.reason ?? '');
}

beforeAll(async () => {
  devnet = await startDevnet({ scale: 'small' });
  server = createServer((req, res) => {
    requests.push(req.url ?? '');
    const route = routes[req.url ?? ''];
    if (route) route(req, res);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await devnet?.close();
});

beforeEach(() => {
  requests.length = 0;
  logs.length = 0;
});

describe('token images made showable in chats', () => {
  it('GIVEN a token image the local platform serves as SVG THEN it is a 512×512 PNG, drawn once for all who ask', async () => {
    const chat = images();
    try {
      const moonCats = collectionNamed(devnet, 'Moon Cats');
      const url = `${devnet.url}/assets/devnet/${moonCats.address}/1.svg`;
      const [first, second] = await Promise.all([chat.show(url), chat.show(url)]);
      const drawn = png(first);
      expect(second).toBe(first);
      expect(await chat.show(url)).toBe(first);
      expect(drawn).toMatchObject({ url, width: 512, height: 512 });
      expect(drawn.name).toMatch(/^image-[0-9a-f]{16}\.png$/);
      const bytes = Buffer.from(drawn.data);
      expect(bytes.subarray(1, 4).toString()).toBe('PNG');
      expect([bytes.readUInt32BE(16), bytes.readUInt32BE(20)]).toEqual([512, 512]);
    } finally {
      await chat.close();
    }
  });

  it('GIVEN an SVG served without its type THEN it is recognised and drawn, fit to the size', async () => {
    const chat = images({ size: 128 });
    try {
      expect(png(await chat.show(`${base}/unlabelled.svg`))).toMatchObject({ width: 128, height: 64 });
    } finally {
      await chat.close();
    }
  });

  it('GIVEN a PNG image THEN it keeps going by its address, without downloading it', async () => {
    const chat = images();
    try {
      expect(await chat.show(`${base}/photo.png`)).toEqual({ kind: 'url', url: `${base}/photo.png` });
      expect(await chat.show(`${base}/photo.png`)).toEqual({ kind: 'url', url: `${base}/photo.png` });
      expect(requests).toEqual(['/photo.png']);
    } finally {
      await chat.close();
    }
  });

  it.each([
    ['/page.html', /not an image \(text\/html\)/],
    ['/broken.svg', /not well-formed XML/],
    ['/huge.svg', /too big/],
    ['/missing.svg', /HTTP 404/],
  ])('GIVEN %s THEN no image, one debug line, and no second try', async (path, reason) => {
    const chat = images({ maxBytes: 1024 * 1024 });
    try {
      expect(await chat.show(`${base}${path}`)).toBeUndefined();
      expect(await chat.show(`${base}${path}`)).toBeUndefined();
      expect(failures(path)).toEqual([expect.stringMatching(reason)]);
      expect(requests).toEqual([path]);
    } finally {
      await chat.close();
    }
  });

  it('GIVEN an image slower than the time limit THEN no image, once the limit has passed', async () => {
    const chat = images({ timeoutMs: 300 });
    try {
      const started = Date.now();
      expect(await chat.show(`${base}/slow.svg`)).toBeUndefined();
      expect(Date.now() - started).toBeLessThan(1_200);
      expect(failures('/slow.svg')).toEqual([expect.stringMatching(/timed out|abort/i)]);
    } finally {
      await chat.close();
    }
  });

  it('GIVEN an internal address that is not the platform’s THEN nothing is fetched from it, redirects included', async () => {
    const port = new URL(base).port;
    const chat = new ChatImages({ logger, allowHosts: [`localhost:${port}`] });
    try {
      expect(await chat.show(`${base}/plain.svg`)).toBeUndefined();
      expect(requests).toEqual([]);
      expect(failures('/plain.svg')).toEqual(['127.0.0.1 is not a public address']);
      // localhost is allowed; the address it redirects to is not.
      expect(await chat.show(`http://localhost:${port}/to-internal.svg`)).toBeUndefined();
      expect(requests).toEqual(['/to-internal.svg']);
      expect(failures('/to-internal.svg')).toEqual(['127.0.0.1 is not a public address']);
    } finally {
      await chat.close();
    }
  });

  it('GIVEN no address or one that is not http(s) THEN no image and no request', async () => {
    const chat = images();
    try {
      for (const url of [undefined, '', 'javascript:alert(1)', 'ipfs://bafy/1.svg', 'not a url']) {
        expect(await chat.show(url)).toBeUndefined();
      }
      expect(requests).toEqual([]);
    } finally {
      await chat.close();
    }
  });
});
