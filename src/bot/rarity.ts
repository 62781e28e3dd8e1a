/**
 * Trait shares and rarity ranks of a collection's tokens.
 *
 * The platform gives a collection's trait names and values (TokenCollectionFilters) but no counts:
 * they need the metadata of every token, read with ListCollectibles (`includeEmpty`, paged). That is
 * tens of calls for a large collection, so it is done once per collection, in the background, and
 * kept an hour; a command asking meanwhile answers without rarity ("computing") instead of waiting.
 *
 * ## The score
 *
 * Statistical rarity, as rarity.tools popularised it: a token's score is the sum, over every trait
 * of the collection, of 1 / (share of the tokens that have the token's value for that trait). A
 * token without a trait counts as having the value "none" of it, so lacking a common trait is as
 * telling as having a rare one. Rank 1 is the highest score; tokens with equal scores share a rank.
 * Every value is compared as text (a numeric trait's values are categories too).
 */
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { traitsOf } from '../market/format.ts';
import { nextPage } from '../market/paging.ts';
import type { PlatformClient } from '../platform/client.ts';
import { PlatformAbortedError } from '../platform/errors.ts';

/** Most tokens read for one collection; a larger one has no rarity here. */
export const MAX_RARITY_TOKENS = 20_000;
/** How long a collection's counts are kept. */
export const RARITY_TTL_MS = 60 * 60 * 1000;
/** After a failed computation, how long before a command may start another. */
const RETRY_AFTER_MS = 60_000;
/** Tokens asked for per ListCollectibles page (servers may return fewer). */
const PAGE_SIZE = 250;
/** Collections kept (about 1 MB each at 10,000 tokens). */
const MAX_COLLECTIONS = 16;
/** Collections waiting for their turn; beyond, a command is told the bot is busy. */
const MAX_WAITING = 8;

/** The value a token has for a trait it lacks. */
const NONE = '\u0000none';

/** A collection's trait counts and its tokens' scores. */
export class RarityTable {
  /** Tokens read. */
  readonly tokens: number;
  /** Trait name -> value -> tokens that have it. */
  readonly #counts: ReadonlyMap<string, ReadonlyMap<string, number>>;
  readonly #scores: ReadonlyMap<string, number>;
  /** All scores, highest first. */
  readonly #sorted: Float64Array;

  constructor(tokens: ReadonlyArray<{ tokenId: string; traits: ReadonlyArray<{ name: string; value: string }> }>) {
    this.tokens = tokens.length;
    const counts = new Map<string, Map<string, number>>();
    for (const token of tokens) {
      for (const { name, value } of distinctTraits(token.traits)) {
        let values = counts.get(name);
        if (!values) {
          values = new Map();
          counts.set(name, values);
        }
        values.set(value, (values.get(value) ?? 0) + 1);
      }
    }
    for (const values of counts.values()) {
      const present = [...values.values()].reduce((a, b) => a + b, 0);
      if (present < tokens.length) values.set(NONE, tokens.length - present);
    }
    this.#counts = counts;
    const scores = new Map<string, number>();
    for (const token of tokens) {
      const own = new Map(distinctTraits(token.traits).map((t) => [t.name, t.value]));
      let score = 0;
      for (const [name, values] of counts) score += tokens.length / (values.get(own.get(name) ?? NONE) ?? 1);
      scores.set(token.tokenId, score);
    }
    this.#scores = scores;
    this.#sorted = Float64Array.from(scores.values()).sort().reverse();
  }

  /** The share (0 to 1) of the tokens that have `value` for trait `name`; undefined when the trait is unknown. */
  share(name: string, value: string): number | undefined {
    const values = this.#values(name);
    if (!values || this.tokens === 0) return undefined;
    const count = values.get(value) ?? [...values].find(([v]) => v.toLowerCase() === value.toLowerCase())?.[1] ?? 0;
    return count / this.tokens;
  }

  /** A token's rank (1 = rarest) among {@link tokens}, with its score; undefined for a token not read. */
  rank(tokenId: string): { rank: number; of: number; score: number } | undefined {
    const score = this.#scores.get(tokenId);
    if (score === undefined) return undefined;
    // Binary search for the first score not above this one (with room for floating-point noise).
    let low = 0;
    let high = this.#sorted.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((this.#sorted[mid] as number) > score * (1 + 1e-12)) low = mid + 1;
      else high = mid;
    }
    return { rank: low + 1, of: this.tokens, score };
  }

  #values(name: string): ReadonlyMap<string, number> | undefined {
    const exact = this.#counts.get(name);
    if (exact) return exact;
    const lower = name.toLowerCase();
    for (const [key, values] of this.#counts) if (key.toLowerCase() === lower) return values;
    return undefined;
  }
}

/** A trait listed twice on one token counts once (its first value). */
function distinctTraits(
  traits: ReadonlyArray<{ name: string; value: string }>,
): ReadonlyArray<{ name: string; value: string }> {
  const seen = new Set<string>();
  return traits.filter((t) => {
    if (seen.has(t.name)) return false;
    seen.add(t.name);
    return true;
  });
}

/**
 * What a command can say about a collection's rarity now:
 * - `ready`: the counts.
 * - `computing`: started (by this call or an earlier one); ask again shortly.
 * - `too_many_tokens`: more than `limit` tokens; no rarity here.
 * - `failed`: reading the tokens failed; a later call tries again.
 * - `busy`: too many collections are waiting; a later call tries again.
 */
export type RarityLookup =
  | { status: 'ready'; table: RarityTable }
  | { status: 'computing' }
  | { status: 'too_many_tokens'; limit: number }
  | { status: 'failed' }
  | { status: 'busy' };

export interface RarityOptions {
  logger?: Logger;
  /** Default {@link MAX_RARITY_TOKENS}. */
  maxTokens?: number;
  /** Default {@link RARITY_TTL_MS}. */
  ttlMs?: number;
}

type Settled = Extract<RarityLookup, { status: 'ready' | 'too_many_tokens' | 'failed' }>;

/**
 * Computes and keeps each collection's {@link RarityTable}: one collection at a time, in the
 * background, the work bounded by `maxTokens`. A table older than `ttlMs` is computed again on the
 * next lookup and answered meanwhile; a failure is kept a minute.
 */
export class RarityIndex {
  readonly #platform: PlatformClient;
  readonly #options: RarityOptions;
  readonly #maxTokens: number;
  readonly #ttlMs: number;
  readonly #done = new LRUCache<string, { result: Settled; at: number }>({ max: MAX_COLLECTIONS });
  readonly #running = new Map<string, Promise<Settled>>();
  #queue: Promise<unknown> = Promise.resolve();

  constructor(platform: PlatformClient, options: RarityOptions = {}) {
    this.#platform = platform;
    this.#options = options;
    this.#maxTokens = options.maxTokens ?? MAX_RARITY_TOKENS;
    this.#ttlMs = options.ttlMs ?? RARITY_TTL_MS;
  }

  /** The rarity of a collection as known now; starts computing it when it is not known. Never waits. */
  lookup(network: string, collection: string): RarityLookup {
    const key = `${network}:${collection.toLowerCase()}`;
    const done = this.#done.get(key);
    const ready = done?.result.status === 'ready' ? done.result : undefined;
    if (done && Date.now() - done.at < (done.result.status === 'failed' ? RETRY_AFTER_MS : this.#ttlMs)) {
      return done.result;
    }
    if (!this.#running.has(key)) {
      if (this.#running.size >= MAX_WAITING) return ready ?? { status: 'busy' };
      this.#start(key, network, collection);
    }
    return ready ?? { status: 'computing' };
  }

  /** Resolves once the collection's computation (started by {@link lookup}) ends; for tests and warm-up. */
  async settled(network: string, collection: string): Promise<RarityLookup> {
    const key = `${network}:${collection.toLowerCase()}`;
    const running = this.#running.get(key);
    if (running) return running;
    const now = this.lookup(network, collection);
    return now.status === 'computing' ? (this.#running.get(key) ?? now) : now;
  }

  #start(key: string, network: string, collection: string): void {
    const run = this.#queue.then(() => this.#compute(network, collection));
    this.#queue = run.catch(() => undefined);
    const settled = run
      .catch((error: unknown): Settled => {
        // The bot is stopping (its platform client closed): nothing to report.
        if (!(error instanceof PlatformAbortedError)) {
          this.#options.logger?.warn(
            { network, collection, err: error },
            'could not compute the rarity of a collection',
          );
        }
        return { status: 'failed' };
      })
      .then((result) => {
        this.#done.set(key, { result, at: Date.now() });
        this.#running.delete(key);
        return result;
      });
    this.#running.set(key, settled);
  }

  async #compute(network: string, collection: string): Promise<Settled> {
    const tokens = new Map<string, Array<{ name: string; value: string }>>();
    let page: number | undefined;
    let more = true;
    // Pages are bounded too, in case a server returns fewer tokens per page than asked.
    const maxPages = Math.ceil(this.#maxTokens / 10) + 1;
    for (let pages = 0; more && pages < maxPages; pages++) {
      const result = await this.#platform.marketplace.listCollectibles({
        network,
        side: 'listing',
        contractAddress: collection,
        filter: { includeEmpty: true },
        page: page === undefined ? { pageSize: PAGE_SIZE } : { page, pageSize: PAGE_SIZE },
      });
      // A token may come twice when the book changes between pages; it counts once.
      for (const { metadata } of result.collectibles) tokens.set(metadata.tokenId, traitsOf(metadata));
      if (tokens.size > this.#maxTokens) return { status: 'too_many_tokens', limit: this.#maxTokens };
      more = result.page.more === true && result.collectibles.length > 0;
      page = nextPage(result.page, page);
    }
    if (more) return { status: 'too_many_tokens', limit: this.#maxTokens };
    const table = new RarityTable([...tokens].map(([tokenId, traits]) => ({ tokenId, traits })));
    this.#options.logger?.debug({ network, collection, tokens: table.tokens }, 'rarity computed');
    return { status: 'ready', table };
  }
}
