/**
 * Verified wallets and verification links in PostgreSQL (tables `wallets` and `verify_links`,
 * migration 1766000000000_wallets.sql), shared by every process on the database.
 *
 * Whatever the number of processes and requests racing: a link binds to one browser (an UPDATE
 * that only sets an unset browser), a message is taken once (the row is locked and its challenge
 * cleared in the same statement), and a link completes once, its wallet moved in the same
 * transaction. A wallet change is announced on `floorwatch_wallets`; this process tells its
 * listeners itself after the commit, the others when the notification arrives.
 */
import type pg from 'pg';
import type { Logger } from 'pino';
import * as v from 'valibot';
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
import { AnnouncedChanges } from './announced.ts';
import type { Database } from './database.ts';

export const WALLETS_CHANNEL = 'floorwatch_wallets';
const PAGE_SIZE = 500;

interface LinkRow {
  id: string;
  community: string;
  community_name: string;
  person: string;
  channel: 'page' | 'chat';
  mini_app: boolean;
  page_token: string;
  created_at: Date;
  expires_at: Date;
  browser: string | null;
  challenge: Challenge | null;
  attempts: number;
  used_at: Date | null;
}

interface WalletRow {
  seq: string;
  community: string;
  address: string;
  person: string;
  kind: 'eoa' | 'contract';
  verified_at: Date;
}

const walletSchema = v.object({
  community: v.string(),
  person: v.string(),
  address: v.pipe(v.string(), v.regex(/^0x[0-9a-f]{40}$/)),
  kind: v.picklist(['eoa', 'contract']),
  verifiedAt: v.string(),
});
const walletChangeSchema = v.variant('type', [
  v.object({ type: v.literal('linked'), wallet: walletSchema, previousPerson: v.exactOptional(v.string()) }),
  v.object({ type: v.literal('removed'), wallet: walletSchema }),
]);

/** The columns of `verify_links`, in the order of {@link linkValues}. */
export const LINK_COLUMNS =
  'id, community, community_name, person, channel, mini_app, page_token, created_at, expires_at, browser, challenge, attempts, used_at';

/** The values of a link in {@link LINK_COLUMNS} order (a row of `verify_links`). */
export function linkValues(link: VerifyLink): unknown[] {
  return [
    link.id,
    link.community,
    link.communityName,
    link.person,
    link.channel,
    link.miniApp,
    link.pageToken,
    link.createdAt,
    link.expiresAt,
    link.browser ?? null,
    link.challenge === undefined ? null : JSON.stringify(link.challenge),
    link.attempts,
    link.usedAt ?? null,
  ];
}
const LINK_PLACEHOLDERS = LINK_COLUMNS.split(',')
  .map((_, i) => `$${i + 1}`)
  .join(', ');
const WALLET_COLUMNS = 'seq, community, address, person, kind, verified_at';

function linkOf(row: LinkRow): VerifyLink {
  return {
    id: row.id,
    community: row.community,
    communityName: row.community_name,
    person: row.person,
    channel: row.channel,
    miniApp: row.mini_app,
    pageToken: row.page_token,
    createdAt: row.created_at.toISOString(),
    expiresAt: row.expires_at.toISOString(),
    ...(row.browser === null ? {} : { browser: row.browser }),
    ...(row.challenge === null ? {} : { challenge: row.challenge }),
    attempts: row.attempts,
    ...(row.used_at === null ? {} : { usedAt: row.used_at.toISOString() }),
  };
}

function walletOf(row: WalletRow): VerifiedWallet {
  return {
    community: row.community,
    person: row.person,
    address: row.address,
    kind: row.kind,
    verifiedAt: row.verified_at.toISOString(),
  };
}

/** The wallet store on the shared database (see the module comment). */
export class PgWalletStore implements WalletStore {
  readonly #db: Database;
  readonly #changes: AnnouncedChanges<WalletChange>;

  private constructor(db: Database, changes: AnnouncedChanges<WalletChange>) {
    this.#db = db;
    this.#changes = changes;
  }

  /** Listens for other processes' wallet changes. */
  static async open(db: Database, logger: Logger): Promise<PgWalletStore> {
    const changes = await AnnouncedChanges.open<WalletChange>(db, {
      channel: WALLETS_CHANNEL,
      field: 'change',
      schema: walletChangeSchema,
      logger,
      what: 'wallet change',
    });
    return new PgWalletStore(db, changes);
  }

  // ---- WalletRegistry

  async walletsOf(community: string, person: string): Promise<VerifiedWallet[]> {
    const { rows } = await this.#db.pool.query<WalletRow>(
      `SELECT ${WALLET_COLUMNS} FROM wallets WHERE community = $1 AND person = $2 ORDER BY seq`,
      [community, person],
    );
    return rows.map(walletOf);
  }

  async walletsOfPerson(person: string): Promise<VerifiedWallet[]> {
    const { rows } = await this.#db.pool.query<WalletRow>(
      `SELECT ${WALLET_COLUMNS} FROM wallets WHERE person = $1 ORDER BY seq`,
      [person],
    );
    return rows.map(walletOf);
  }

  async byAddress(address: string): Promise<VerifiedWallet[]> {
    const { rows } = await this.#db.pool.query<WalletRow>(
      `SELECT ${WALLET_COLUMNS} FROM wallets WHERE address = $1 ORDER BY seq`,
      [address.toLowerCase()],
    );
    return rows.map(walletOf);
  }

  async *walletsIn(community: string): AsyncIterable<readonly VerifiedWallet[]> {
    let after = '0';
    for (;;) {
      const { rows } = await this.#db.pool.query<WalletRow>(
        `SELECT ${WALLET_COLUMNS} FROM wallets WHERE community = $1 AND seq > $2 ORDER BY seq LIMIT ${PAGE_SIZE}`,
        [community, after],
      );
      if (rows.length === 0) return;
      yield rows.map(walletOf);
      after = (rows[rows.length - 1] as WalletRow).seq;
      if (rows.length < PAGE_SIZE) return;
    }
  }

  async peopleIn(community: string, after: string | undefined, limit: number): Promise<PersonWallets[]> {
    const { rows } = await this.#db.pool.query<WalletRow>(
      `WITH people AS (
         SELECT DISTINCT person COLLATE "C" AS person FROM wallets
         WHERE community = $1 AND ($2::text IS NULL OR person COLLATE "C" > $2)
         ORDER BY 1 LIMIT $3)
       SELECT ${WALLET_COLUMNS} FROM wallets JOIN people USING (person)
       WHERE community = $1 ORDER BY person COLLATE "C", seq`,
      [community, after ?? null, limit],
    );
    const out: PersonWallets[] = [];
    for (const row of rows) {
      const last = out[out.length - 1];
      if (last?.person === row.person) last.wallets.push(walletOf(row));
      else out.push({ person: row.person, wallets: [walletOf(row)] });
    }
    return out;
  }

  async removeWallet(community: string, person: string, address: string): Promise<VerifiedWallet | undefined> {
    return this.#transaction(async (client) => {
      const { rows } = await client.query<WalletRow>(
        `DELETE FROM wallets WHERE community = $1 AND address = $2 AND person = $3 RETURNING ${WALLET_COLUMNS}`,
        [community, address.toLowerCase(), person],
      );
      const row = rows[0];
      if (!row) return { result: undefined };
      const wallet = walletOf(row);
      return { result: wallet, change: { type: 'removed', wallet } };
    });
  }

  onWalletsChanged(listener: (change: WalletChange) => void): void {
    this.#changes.onChange(listener);
  }

  // ---- VerificationLinks

  async createLink(link: NewVerifyLink): Promise<void> {
    await this.#transaction(async (client) => {
      await client.query(
        'DELETE FROM verify_links WHERE community = $1 AND person = $2 AND channel = $3 AND used_at IS NULL',
        [link.community, link.person, link.channel],
      );
      await client.query(
        `INSERT INTO verify_links (${LINK_COLUMNS}) VALUES (${LINK_PLACEHOLDERS})`,
        linkValues({ ...link, attempts: 0 }),
      );
      return { result: undefined };
    });
  }

  async link(id: string): Promise<VerifyLink | undefined> {
    const { rows } = await this.#db.pool.query<LinkRow>(`SELECT ${LINK_COLUMNS} FROM verify_links WHERE id = $1`, [id]);
    return rows[0] && linkOf(rows[0]);
  }

  async openChatLink(community: string, person: string, now: Date): Promise<VerifyLink | undefined> {
    const { rows } = await this.#db.pool.query<LinkRow>(
      `SELECT ${LINK_COLUMNS} FROM verify_links
       WHERE community = $1 AND person = $2 AND channel = 'chat' AND used_at IS NULL AND expires_at > $3
       ORDER BY created_at DESC LIMIT 1`,
      [community, person, now],
    );
    return rows[0] && linkOf(rows[0]);
  }

  async bindBrowser(id: string, browser: string, now: Date): Promise<BindOutcome> {
    const bound = await this.#db.pool.query(
      `UPDATE verify_links SET browser = $2
       WHERE id = $1 AND browser IS NULL AND used_at IS NULL AND expires_at > $3`,
      [id, browser, now],
    );
    if (bound.rowCount === 1) return 'bound';
    const { rows } = await this.#db.pool.query<Pick<LinkRow, 'browser' | 'used_at' | 'expires_at'>>(
      'SELECT browser, used_at, expires_at FROM verify_links WHERE id = $1',
      [id],
    );
    const row = rows[0];
    if (!row || row.used_at !== null || row.expires_at.getTime() <= now.getTime()) return 'gone';
    return row.browser === browser ? 'bound' : 'other';
  }

  async setChallenge(id: string, challenge: Challenge, now: Date): Promise<boolean> {
    const { rowCount } = await this.#db.pool.query(
      'UPDATE verify_links SET challenge = $2 WHERE id = $1 AND used_at IS NULL AND expires_at > $3',
      [id, JSON.stringify(challenge), now],
    );
    return rowCount === 1;
  }

  async takeChallenge(id: string, nonce: string, _now: Date): Promise<Challenge | undefined> {
    // The row is locked by the sub-select: of two racing requests, the second sees the cleared challenge.
    const { rows } = await this.#db.pool.query<{ taken: Challenge | null }>(
      `UPDATE verify_links AS l
       SET attempts = l.attempts + 1,
           challenge = NULL
       FROM (SELECT id, challenge FROM verify_links WHERE id = $1 AND used_at IS NULL FOR UPDATE) AS old
       WHERE l.id = old.id
       RETURNING CASE WHEN old.challenge->>'nonce' = $2 THEN old.challenge ELSE NULL END AS taken`,
      [id, nonce],
    );
    return rows[0]?.taken ?? undefined;
  }

  async completeLink(
    id: string,
    wallet: { address: string; kind: 'eoa' | 'contract' },
    now: Date,
  ): Promise<CompleteOutcome> {
    return this.#transaction<CompleteOutcome>(async (client) => {
      const { rows } = await client.query<LinkRow>(
        `SELECT ${LINK_COLUMNS} FROM verify_links WHERE id = $1 FOR UPDATE`,
        [id],
      );
      const row = rows[0];
      if (!row) return { result: { ok: false, reason: 'gone' } };
      if (row.used_at !== null) return { result: { ok: false, reason: 'used' } };
      await client.query('UPDATE verify_links SET used_at = $2 WHERE id = $1', [id, now]);
      const address = wallet.address.toLowerCase();
      const previous = await client.query<{ person: string }>(
        'DELETE FROM wallets WHERE community = $1 AND address = $2 RETURNING person',
        [row.community, address],
      );
      const inserted = await client.query<WalletRow>(
        `INSERT INTO wallets (community, address, person, kind, verified_at) VALUES ($1, $2, $3, $4, $5)
         RETURNING ${WALLET_COLUMNS}`,
        [row.community, address, row.person, wallet.kind, now],
      );
      const stored = walletOf(inserted.rows[0] as WalletRow);
      const previousPerson = previous.rows[0]?.person;
      const moved = previousPerson !== undefined && previousPerson !== row.person;
      const change: WalletChange = moved
        ? { type: 'linked', wallet: stored, previousPerson }
        : { type: 'linked', wallet: stored };
      return { result: { ok: true, wallet: stored, moved }, change };
    });
  }

  async pruneLinks(now: Date, keepMs: number): Promise<number> {
    const { rowCount } = await this.#db.pool.query('DELETE FROM verify_links WHERE expires_at < $1', [
      new Date(now.getTime() - keepMs),
    ]);
    return rowCount ?? 0;
  }

  async flush(): Promise<void> {
    await this.#changes.flush();
  }

  async close(): Promise<void> {
    await this.flush();
  }

  /** One transaction; a wallet change it made is announced with the commit. */
  #transaction<T>(work: (client: pg.PoolClient) => Promise<{ result: T; change?: WalletChange }>): Promise<T> {
    return this.#changes.transaction(work);
  }
}
