import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { type Dispatcher, request } from 'undici';
import { safeUrl } from '../../core/reply.ts';
import { DrawingError, DrawingPool, type DrawingPoolOptions } from './drawing.ts';
import { BlockedAddressError, imageDispatcher } from './network.ts';
import { looksLikeSvg } from './sniff.ts';
import type { SvgFonts } from './svg.ts';

/**
 * How a chat shows an image of a Reply: by its address, which the chat platform fetches itself
 * (PNG, JPEG, GIF, WebP), or as a PNG the bot drew from an SVG and uploads with the message
 * (neither Discord nor Telegram shows SVG). `name` is the upload's file name, the same for the
 * same address, so a message that repeats an image uploads it once.
 */
export type ChatImage =
  | { kind: 'url'; url: string }
  | { kind: 'png'; url: string; name: string; data: Uint8Array; width: number; height: number };

/** What adapters need of {@link ChatImages}. */
export interface ImageSource {
  show(url: string | undefined): Promise<ChatImage | undefined>;
}

/** Every image by its address, as the chats fetch them: no SVG is drawn, no address is checked. */
export const IMAGES_BY_URL: ImageSource = {
  show: async (url) => {
    const address = safeUrl(url);
    return address ? { kind: 'url', url: address } : undefined;
  },
};

/**
 * The hosts and ports of the platform's endpoint URLs (templates such as
 * `http://127.0.0.1:8545/indexer/{network}`), as `host:port`, for {@link ChatImagesOptions.allowHosts}:
 * the platform serves token images from its own hosts. The port is the URL's, or its scheme's
 * default. A host that is itself a template (`https://{network}-indexer.example`) names no host yet
 * and is left out.
 */
export function imageHostsOf(endpoints: readonly string[]): string[] {
  const hosts = new Set<string>();
  for (const template of endpoints) {
    if (/^[a-z][\w+.-]*:\/\/[^/]*\{/i.test(template)) continue;
    const filled = template.replace(/\{[^}]*\}/g, 'x');
    if (!URL.canParse(filled)) continue;
    const url = new URL(filled);
    const port = url.port || DEFAULT_PORTS[url.protocol];
    if (port) hosts.add(`${url.hostname}:${port}`);
  }
  return [...hosts];
}

const DEFAULT_PORTS: Readonly<Record<string, string>> = { 'http:': '80', 'https:': '443' };

/** Defaults of {@link ChatImagesOptions}. */
export const CHAT_IMAGE_DEFAULTS = {
  /** Largest SVG fetched (token images are a few kB; this still fits detailed art). */
  maxBytes: 5 * 1024 * 1024,
  /** Fetching and drawing one image, together. */
  timeoutMs: 4_000,
  /** Pixels of the longer side of a drawn image: what the chats show at full width. */
  size: 512,
  /** Drawn PNGs kept in memory (about 100 to 300 token images). */
  cacheBytes: 32 * 1024 * 1024,
  /** How long a drawn image or a verdict on an address is reused. */
  ttlMs: 6 * 60 * 60 * 1000,
  /** How long a failure is remembered: not retried (nor logged again) before then. */
  failureTtlMs: 10 * 60 * 1000,
  /** The same after a time-out or a network failure, which may pass sooner. */
  transientFailureTtlMs: 60 * 1000,
  maxRedirections: 3,
} as const;

export interface ChatImagesOptions {
  logger: Logger;
  /**
   * Hosts fetched even though they are internal (loopback, private networks), each with its port
   * (`127.0.0.1:8545`, `[::1]:8545`; see {@link imageHostsOf}): the platform's own image host when
   * it runs beside the bot, as the local devnet does. Every other internal address, and every
   * other port of these hosts, is refused, since token metadata, which anyone can write, chooses
   * the addresses.
   */
  allowHosts?: readonly string[];
  maxBytes?: number;
  timeoutMs?: number;
  size?: number;
  cacheBytes?: number;
  /** Fonts for text in SVGs; default: DejaVu Sans alone when installed. */
  fonts?: SvgFonts;
  /** The processes that draw SVGs (their number, limits and module). */
  drawing?: DrawingPoolOptions;
}

type Entry = { kind: 'url'; url: string } | Extract<ChatImage, { kind: 'png' }> | { kind: 'none' };

/** A failure to show an image; `transient` ones are retried sooner. */
class ImageFailure extends Error {
  readonly transient: boolean;
  constructor(message: string, transient = false, options?: ErrorOptions) {
    super(message, options);
    this.transient = transient;
  }
}

/** Types a server may give an SVG that it does not label as such. */
const UNLABELLED = new Set(['', 'application/octet-stream', 'text/plain', 'text/xml', 'application/xml']);

/**
 * Images of Replies made showable in chats. An image's address is fetched once (size cap, time
 * limit, content-type check, internal addresses refused): an SVG is drawn as a PNG (fit into
 * `size` pixels) and the PNG kept in a cache bounded in bytes; any other image keeps going by its
 * address. An address that fails (too big, too slow, not an image, unreadable SVG, unreachable) is
 * shown as no image, logged once at debug level and remembered for a while. Drawing runs in a
 * {@link DrawingPool}: sanitized, in processes killed at the time limit (what is left of it after
 * the fetch) and at their memory limit, several at once.
 *
 * @example
 * const images = new ChatImages({ logger, allowHosts: ['127.0.0.1'] });
 * const image = await images.show(reply.image); // undefined: send the message without it
 */
export class ChatImages implements ImageSource {
  readonly #logger: Logger;
  readonly #dispatcher: Dispatcher;
  readonly #maxBytes: number;
  readonly #timeoutMs: number;
  readonly #size: number;
  readonly #fonts: SvgFonts | undefined;
  readonly #cache: LRUCache<string, Entry>;
  readonly #pending = new Map<string, Promise<Entry>>();
  readonly #drawing: DrawingPool;

  constructor(options: ChatImagesOptions) {
    this.#logger = options.logger;
    this.#maxBytes = options.maxBytes ?? CHAT_IMAGE_DEFAULTS.maxBytes;
    this.#timeoutMs = options.timeoutMs ?? CHAT_IMAGE_DEFAULTS.timeoutMs;
    this.#size = options.size ?? CHAT_IMAGE_DEFAULTS.size;
    this.#fonts = options.fonts;
    this.#cache = new LRUCache<string, Entry>({
      maxSize: options.cacheBytes ?? CHAT_IMAGE_DEFAULTS.cacheBytes,
      sizeCalculation: (entry, key) => key.length + (entry.kind === 'png' ? entry.data.byteLength : 64),
      ttl: CHAT_IMAGE_DEFAULTS.ttlMs,
    });
    this.#drawing = new DrawingPool(options.drawing);
    this.#dispatcher = imageDispatcher({
      allowHosts: options.allowHosts ?? [],
      connectTimeoutMs: this.#timeoutMs,
      maxRedirections: CHAT_IMAGE_DEFAULTS.maxRedirections,
    });
  }

  /**
   * How to show the image at `url`; undefined when the message goes without it (no usable
   * address, or a failure). Never rejects.
   */
  async show(url: string | undefined): Promise<ChatImage | undefined> {
    const address = safeUrl(url);
    if (!address) return undefined;
    let entry = this.#cache.get(address);
    if (!entry) {
      let pending = this.#pending.get(address);
      if (!pending) {
        pending = this.#resolve(address).finally(() => this.#pending.delete(address));
        this.#pending.set(address, pending);
      }
      entry = await pending;
    }
    return entry.kind === 'none' ? undefined : entry;
  }

  /** Closes the connections kept open to image hosts and kills the drawing processes (drawings in progress fail). */
  async close(): Promise<void> {
    await Promise.all([this.#drawing.close(), this.#dispatcher.close()]);
  }

  async #resolve(url: string): Promise<Entry> {
    const deadline = AbortSignal.timeout(this.#timeoutMs);
    let entry: Entry;
    try {
      const fetched = await this.#fetch(url, deadline);
      if (fetched.kind === 'raster') {
        entry = { kind: 'url', url };
      } else {
        const image = await this.#drawing.draw(
          fetched.svg,
          { size: this.#size, ...(this.#fonts ? { fonts: this.#fonts } : {}) },
          deadline,
        );
        entry = { kind: 'png', url, name: fileNameOf(url), data: image.png, width: image.width, height: image.height };
      }
      this.#cache.set(url, entry);
    } catch (error) {
      const failure = asFailure(error, deadline);
      this.#logger.debug({ image: shownUrl(url), reason: failure.message }, 'image not shown');
      entry = { kind: 'none' };
      this.#cache.set(url, entry, {
        ttl: failure.transient ? CHAT_IMAGE_DEFAULTS.transientFailureTtlMs : CHAT_IMAGE_DEFAULTS.failureTtlMs,
      });
    }
    return entry;
  }

  async #fetch(url: string, signal: AbortSignal): Promise<{ kind: 'raster' } | { kind: 'svg'; svg: string }> {
    const response = await request(url, {
      dispatcher: this.#dispatcher,
      method: 'GET',
      headers: { accept: 'image/svg+xml, image/*;q=0.8', 'user-agent': 'Floorwatch (token images)' },
      signal,
    });
    const body = response.body;
    try {
      if (response.statusCode < 200 || response.statusCode > 299) {
        throw new ImageFailure(
          `HTTP ${response.statusCode}`,
          response.statusCode >= 500 || response.statusCode === 429,
        );
      }
      const header = response.headers['content-type'];
      const type = (Array.isArray(header) ? header[0] : header)?.split(';')[0]?.trim().toLowerCase() ?? '';
      const svgLabelled = type === 'image/svg+xml';
      if (!svgLabelled && type.startsWith('image/')) return { kind: 'raster' };
      if (!svgLabelled && !UNLABELLED.has(type)) throw new ImageFailure(`not an image (${type})`);
      const length = Number(response.headers['content-length']);
      if (length > this.#maxBytes) throw new ImageFailure(`too big (${length} bytes)`);
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of body) {
        size += (chunk as Buffer).length;
        if (size > this.#maxBytes) throw new ImageFailure(`too big (over ${this.#maxBytes} bytes)`);
        chunks.push(chunk as Buffer);
      }
      const svg = Buffer.concat(chunks).toString('utf8');
      if (!svgLabelled && !looksLikeSvg(svg)) {
        throw new ImageFailure(`not an image (${type || 'no content type'})`);
      }
      return { kind: 'svg', svg };
    } finally {
      // Only what was read: the rest of an image the chat fetches itself is not downloaded.
      if (!body.destroyed) body.on('error', () => undefined).destroy();
    }
  }
}

function asFailure(error: unknown, deadline: AbortSignal): ImageFailure {
  if (error instanceof ImageFailure) return error;
  if (error instanceof DrawingError) {
    // The SVG is at fault when refused or over the memory limit; a time-out or a crash may pass.
    const transient = error.reason !== 'refused' && !(error.reason === 'limit' && !deadline.aborted);
    return new ImageFailure(error.message, transient, { cause: error });
  }
  if (deadline.aborted) return new ImageFailure('timed out', true, { cause: error });
  const code = (error as { code?: unknown } | undefined)?.code;
  const reason = error instanceof Error ? error.message : String(error);
  if (error instanceof BlockedAddressError) {
    return new ImageFailure(reason, false, { cause: error });
  }
  return new ImageFailure(typeof code === 'string' ? `${code}: ${reason}` : reason, true, { cause: error });
}

/** An address as logs show it: no credentials, no query string. */
function shownUrl(url: string): string {
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname}`.slice(0, 200);
}

/** A stable upload name per address (Discord refers to uploads by name). */
function fileNameOf(url: string): string {
  return `image-${createHash('sha256').update(url).digest('hex').slice(0, 16)}.png`;
}
