/**
 * Verified wallets and verification links in a file of their own in the data directory
 * (`wallets.jsonl`), never in state.json: a verification appends a line or two instead of
 * rewriting the state of every chat.
 *
 * ## File format
 *
 * JSON Lines, append-only, the first line a header; each later line sets or drops one record, and
 * the last line for a record wins:
 *
 * ```
 * {"op":"wallets","v":1}
 * {"k":"link","link":{"id":"…","community":"discord:1","person":"discord:2",…}}
 * {"k":"wallet","wallet":{"community":"discord:1","person":"discord:2","address":"0x…","kind":"eoa","verifiedAt":"…"}}
 * {"k":"drop","community":"discord:1","address":"0x…"}
 * {"k":"unlink","id":"…"}
 * ```
 *
 * Changes run one at a time: each is checked against the records in memory, appended and synced
 * (`fdatasync`), and only then applied in memory and resolved; a failed write rejects with
 * {@link StoreWriteError} and changes nothing. When the file holds more lines than twice its live
 * records (plus a thousand), it is rewritten: temporary file, sync, rename, directory sync. Links
 * that expired a day ago are left out then and at open.
 *
 * ## Recovery on open
 *
 * A last line torn by a crash (no newline, or not JSON) is cut off: its change never resolved.
 * Anything else that cannot be read throws {@link StoreFileError} naming the file and the line,
 * and leaves the file untouched. One process at a time may use the file (the data directory's lock).
 */
import * as v from 'valibot';
import { StoreFileError, StoreWriteError } from '../../core/store-errors.ts';
import type {
  BindOutcome,
  Challenge,
  CompleteOutcome,
  NewVerifyLink,
  PersonWallets,
  VerifiedWallet,
  VerifyLink,
  WalletChange,
  WalletStore,
} from '../../core/wallets.ts';
import {
  appendDurably,
  headerLine,
  type JsonlFormat,
  type JsonlRead,
  readJsonl,
  rewriteAtomically,
  settleJsonl,
} from './jsonl-file.ts';

/** Lines beyond twice the live records tolerated before a rewrite. */
const MIN_DEAD_LINES = 1_000;
/** Links are kept this long after they expired (a late page load says "expired", not "unknown"). */
export const EXPIRED_LINK_KEEP_MS = 24 * 60 * 60 * 1000;
/** Wallets handed out per page by `walletsIn`. */
const PAGE_SIZE = 500;

const isoTime = v.pipe(v.string(), v.isoTimestamp('expected an ISO time'));
const address = v.pipe(v.string(), v.regex(/^0x[0-9a-f]{40}$/, 'expected a lower-case address'));
const key = v.pipe(v.string(), v.regex(/^[a-z]+:[^\s]{1,100}$/, 'expected platform:id'));
const text = (max: number) => v.pipe(v.string(), v.maxLength(max));

const challengeSchema = v.object({
  nonce: v.pipe(v.string(), v.regex(/^[A-Za-z0-9]{8,96}$/)),
  address,
  message: text(4_000),
  issuedAt: isoTime,
  expiresAt: isoTime,
});

const linkSchema = v.object({
  id: v.pipe(v.string(), v.regex(/^[0-9a-f]{64}$/, 'expected a SHA-256 hex id')),
  community: key,
  communityName: text(200),
  person: key,
  channel: v.picklist(['page', 'chat']),
  miniApp: v.boolean(),
  pageToken: text(100),
  createdAt: isoTime,
  expiresAt: isoTime,
  browser: v.exactOptional(v.pipe(v.string(), v.regex(/^[0-9a-f]{64}$/))),
  challenge: v.exactOptional(challengeSchema),
  attempts: v.pipe(v.number(), v.integer(), v.minValue(0)),
  usedAt: v.exactOptional(isoTime),
});

const walletSchema = v.object({
  community: key,
  person: key,
  address,
  kind: v.picklist(['eoa', 'contract']),
  verifiedAt: isoTime,
});

const lineSchema = v.variant('k', [
  v.object({ k: v.literal('link'), link: linkSchema }),
  v.object({ k: v.literal('unlink'), id: linkSchema.entries.id }),
  v.object({ k: v.literal('wallet'), wallet: walletSchema }),
  v.object({ k: v.literal('drop'), community: key, address }),
]);
type Line = v.InferOutput<typeof lineSchema>;
const FORMAT: JsonlFormat<Line> = { op: 'wallets', version: 1, schema: lineSchema, record: 'a wallet record' };

const walletKey = (community: string, walletAddress: string) => `${community}\n${walletAddress}`;

/** What one change does: the lines it appends and what it resolves with (only once they are durable). */
interface Change<T> {
  lines: Line[];
  result: T;
  /** Wallet changes to announce once durable. */
  changes?: WalletChange[];
}

/** The wallet store of one bot in the data directory (see the module comment). */
export class FileWalletStore implements WalletStore {
  readonly file: string;
  readonly #links = new Map<string, VerifyLink>();
  /** By community and address, in verification order. */
  readonly #wallets = new Map<string, VerifiedWallet>();
  readonly #listeners: Array<(change: WalletChange) => void> = [];
  #lines = 0;
  #queue: Promise<unknown> = Promise.resolve();
  #closed = false;

  private constructor(file: string) {
    this.file = file;
  }

  /** Opens (or creates) the file; throws {@link StoreFileError} when it cannot be read. */
  static async open(file: string, now: Date = new Date()): Promise<FileWalletStore> {
    const { store, read } = await FileWalletStore.#load(file, now);
    await settleJsonl(file, read, store.#wasteful(), () => store.#rewrite());
    return store;
  }

  /**
   * The wallets (in verification order) and links that {@link FileWalletStore.open} would hold, read
   * only: nothing is written, not even a torn last line cut off (for `npm run migrate-data`, which
   * leaves the files as they were). A missing file holds nothing.
   */
  static async read(file: string, now: Date = new Date()): Promise<{ wallets: VerifiedWallet[]; links: VerifyLink[] }> {
    const { store } = await FileWalletStore.#load(file, now);
    return { wallets: [...store.#wallets.values()], links: [...store.#links.values()] };
  }

  /** A store holding what the file says, links that expired a day ago left out; the file untouched. */
  static async #load(file: string, now: Date): Promise<{ store: FileWalletStore; read: JsonlRead<Line> }> {
    const store = new FileWalletStore(file);
    const read = await readJsonl(file, FORMAT);
    for (const line of read.lines) store.#apply(line);
    store.#lines = read.lines.length;
    store.#dropExpired(now);
    return { store, read };
  }

  // ---- WalletRegistry

  async walletsOf(community: string, person: string): Promise<VerifiedWallet[]> {
    return [...this.#wallets.values()].filter((w) => w.community === community && w.person === person);
  }

  async walletsOfPerson(person: string): Promise<VerifiedWallet[]> {
    return [...this.#wallets.values()].filter((w) => w.person === person);
  }

  async byAddress(walletAddress: string): Promise<VerifiedWallet[]> {
    const lowered = walletAddress.toLowerCase();
    return [...this.#wallets.values()].filter((w) => w.address === lowered);
  }

  async *walletsIn(community: string): AsyncIterable<readonly VerifiedWallet[]> {
    const all = [...this.#wallets.values()].filter((w) => w.community === community);
    for (let at = 0; at < all.length; at += PAGE_SIZE) yield all.slice(at, at + PAGE_SIZE);
  }

  async peopleIn(community: string, after: string | undefined, limit: number): Promise<PersonWallets[]> {
    const byPerson = new Map<string, VerifiedWallet[]>();
    for (const wallet of this.#wallets.values()) {
      if (wallet.community !== community || (after !== undefined && wallet.person <= after)) continue;
      const list = byPerson.get(wallet.person);
      if (list) list.push(wallet);
      else byPerson.set(wallet.person, [wallet]);
    }
    return [...byPerson.keys()]
      .sort(byCodePoint)
      .slice(0, limit)
      .map((person) => ({ person, wallets: byPerson.get(person) ?? [] }));
  }

  removeWallet(community: string, person: string, walletAddress: string): Promise<VerifiedWallet | undefined> {
    const lowered = walletAddress.toLowerCase();
    return this.#change(() => {
      const wallet = this.#wallets.get(walletKey(community, lowered));
      if (!wallet || wallet.person !== person) return { lines: [], result: undefined };
      return {
        lines: [{ k: 'drop', community, address: lowered }],
        result: wallet,
        changes: [{ type: 'removed', wallet }],
      };
    });
  }

  onWalletsChanged(listener: (change: WalletChange) => void): void {
    this.#listeners.push(listener);
  }

  // ---- VerificationLinks

  createLink(link: NewVerifyLink): Promise<void> {
    return this.#change(() => {
      const lines: Line[] = [];
      for (const other of this.#links.values()) {
        const replaced =
          other.community === link.community &&
          other.person === link.person &&
          other.channel === link.channel &&
          other.usedAt === undefined;
        if (replaced) lines.push({ k: 'unlink', id: other.id });
      }
      lines.push({ k: 'link', link: { ...link, attempts: 0 } });
      return { lines, result: undefined };
    });
  }

  async link(id: string): Promise<VerifyLink | undefined> {
    return this.#links.get(id);
  }

  async openChatLink(community: string, person: string, now: Date): Promise<VerifyLink | undefined> {
    let newest: VerifyLink | undefined;
    for (const link of this.#links.values()) {
      if (link.community !== community || link.person !== person || link.channel !== 'chat') continue;
      if (link.usedAt !== undefined || Date.parse(link.expiresAt) <= now.getTime()) continue;
      if (!newest || link.createdAt >= newest.createdAt) newest = link;
    }
    return newest;
  }

  bindBrowser(id: string, browser: string, now: Date): Promise<BindOutcome> {
    return this.#change(() => {
      const link = this.#links.get(id);
      if (!link || !usable(link, now)) return { lines: [], result: 'gone' as const };
      if (link.browser !== undefined) return { lines: [], result: link.browser === browser ? 'bound' : 'other' };
      return { lines: [{ k: 'link', link: { ...link, browser } }], result: 'bound' as const };
    });
  }

  setChallenge(id: string, challenge: Challenge, now: Date): Promise<boolean> {
    return this.#change(() => {
      const link = this.#links.get(id);
      if (!link || !usable(link, now)) return { lines: [], result: false };
      return { lines: [{ k: 'link', link: { ...link, challenge } }], result: true };
    });
  }

  takeChallenge(id: string, nonce: string, _now: Date): Promise<Challenge | undefined> {
    return this.#change(() => {
      const link = this.#links.get(id);
      if (!link || link.usedAt !== undefined) return { lines: [], result: undefined };
      const challenge = link.challenge?.nonce === nonce ? link.challenge : undefined;
      const { challenge: _taken, ...rest } = link;
      const next: VerifyLink = { ...rest, attempts: link.attempts + 1 };
      return { lines: [{ k: 'link', link: next }], result: challenge };
    });
  }

  completeLink(id: string, wallet: { address: string; kind: 'eoa' | 'contract' }, now: Date): Promise<CompleteOutcome> {
    return this.#change((): Change<CompleteOutcome> => {
      const link = this.#links.get(id);
      if (!link) return { lines: [], result: { ok: false, reason: 'gone' } };
      if (link.usedAt !== undefined) return { lines: [], result: { ok: false, reason: 'used' } };
      const lowered = wallet.address.toLowerCase();
      const previous = this.#wallets.get(walletKey(link.community, lowered));
      const stored: VerifiedWallet = {
        community: link.community,
        person: link.person,
        address: lowered,
        kind: wallet.kind,
        verifiedAt: now.toISOString(),
      };
      const moved = previous !== undefined && previous.person !== link.person;
      const lines: Line[] = [];
      // Dropped first: the wallet then counts as the newest of its person.
      if (previous) lines.push({ k: 'drop', community: link.community, address: lowered });
      lines.push({ k: 'wallet', wallet: stored }, { k: 'link', link: { ...link, usedAt: now.toISOString() } });
      const change: WalletChange = moved
        ? { type: 'linked', wallet: stored, previousPerson: previous.person }
        : { type: 'linked', wallet: stored };
      return { lines, result: { ok: true, wallet: stored, moved }, changes: [change] };
    });
  }

  pruneLinks(now: Date, keepMs: number): Promise<number> {
    return this.#change(() => {
      const lines: Line[] = [];
      for (const link of this.#links.values()) {
        if (Date.parse(link.expiresAt) + keepMs < now.getTime()) lines.push({ k: 'unlink', id: link.id });
      }
      return { lines, result: lines.length };
    });
  }

  async flush(): Promise<void> {
    await this.#queue.catch(() => undefined);
  }

  async close(): Promise<void> {
    await this.flush();
    this.#closed = true;
  }

  /** Runs one change after the ones before it: decide, write, then apply and resolve. */
  #change<T>(decide: () => Change<T>): Promise<T> {
    const run = this.#queue.then(async () => {
      if (this.#closed) throw new StoreWriteError(this.file, new Error('the wallet store is closed'));
      const change = decide();
      if (change.lines.length > 0) {
        try {
          if (this.#wasteful(change.lines.length)) {
            const links = new Map(this.#links);
            const wallets = new Map(this.#wallets);
            for (const line of change.lines) this.#apply(line);
            await this.#rewrite().catch((error: unknown) => {
              restore(this.#links, links);
              restore(this.#wallets, wallets);
              throw error;
            });
          } else {
            await appendDurably(this.file, change.lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
            for (const line of change.lines) this.#apply(line);
            this.#lines += change.lines.length;
          }
        } catch (cause) {
          throw cause instanceof StoreWriteError ? cause : new StoreWriteError(this.file, cause);
        }
      }
      for (const walletChange of change.changes ?? []) {
        for (const listener of this.#listeners) listener(walletChange);
      }
      return change.result;
    });
    this.#queue = run.catch(() => undefined);
    return run;
  }

  #apply(line: Line): void {
    switch (line.k) {
      case 'link':
        this.#links.set(line.link.id, line.link);
        return;
      case 'unlink':
        this.#links.delete(line.id);
        return;
      case 'wallet': {
        const k = walletKey(line.wallet.community, line.wallet.address);
        this.#wallets.delete(k);
        this.#wallets.set(k, line.wallet);
        return;
      }
      case 'drop':
        this.#wallets.delete(walletKey(line.community, line.address));
        return;
    }
  }

  #dropExpired(now: Date): void {
    for (const link of [...this.#links.values()]) {
      if (Date.parse(link.expiresAt) + EXPIRED_LINK_KEEP_MS < now.getTime()) this.#links.delete(link.id);
    }
  }

  #wasteful(adding = 0): boolean {
    const live = this.#links.size + this.#wallets.size;
    return this.#lines + adding > 2 * live + MIN_DEAD_LINES;
  }

  async #rewrite(): Promise<void> {
    let body = headerLine(FORMAT);
    let count = 0;
    for (const wallet of this.#wallets.values()) {
      body += `${JSON.stringify({ k: 'wallet', wallet })}\n`;
      count++;
    }
    for (const link of this.#links.values()) {
      body += `${JSON.stringify({ k: 'link', link })}\n`;
      count++;
    }
    await rewriteAtomically(this.file, body);
    this.#lines = count;
  }
}

/** Code-unit order: for keys (ASCII) the order of PostgreSQL's `COLLATE "C"`, as the PostgreSQL store sorts people. */
function byCodePoint(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function restore<K, V>(target: Map<K, V>, saved: ReadonlyMap<K, V>): void {
  target.clear();
  for (const [k, value] of saved) target.set(k, value);
}

/** A link that may still take a browser or a message: not used, not expired. */
function usable(link: VerifyLink, now: Date): boolean {
  return link.usedAt === undefined && Date.parse(link.expiresAt) > now.getTime();
}
