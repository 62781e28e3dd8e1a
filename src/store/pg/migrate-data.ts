/**
 * `npm run migrate-data`: moves a data directory (FLOORWATCH_DATA_DIR) into the database
 * (FLOORWATCH_DATABASE_URL): chat settings, watch rules (same ids; new ones continue the numbering),
 * stored buttons, the delivery journal (so nothing in flight is lost or sent twice), the block
 * cursors, the verified wallets and their verification links, the holder role rules (same ids; new
 * ones continue the numbering) with what they granted and a re-check in progress, the market history
 * (when it began, sales, floor samples, listings seen) and the completeness counts. The bot must be
 * stopped (the data directory's lock is taken), and the database must hold none of it yet: the move
 * is one transaction, all or nothing. The files are read by their stores' own readers and left as
 * they were, whatever their version; a missing file is nothing to move.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import pino from 'pino';
import { ConfigError, loadConfig } from '../../config.ts';
import { StoreFileError } from '../../core/store-errors.ts';
import { destinationKey } from '../../core/types.ts';
import { FileCompletenessStore } from '../files/completeness.ts';
import { FileCursorStore } from '../files/cursors.ts';
import { DeliveryJournal } from '../files/journal/journal.ts';
import { DataDirError, lockDataDir } from '../files/lock.ts';
import { FileMarketHistory } from '../files/market-history.ts';
import { FileRoleStore } from '../files/roles.ts';
import { StateStore } from '../files/state.ts';
import { FileWalletStore } from '../files/wallets.ts';
import { Database, DatabaseError } from './database.ts';
import { GRANT_COLUMNS, grantValues } from './roles.ts';
import { LINK_COLUMNS, linkValues } from './wallets.ts';

/** What was moved: how many of each. */
export interface MigrateDataResult {
  /** Chats with settings. */
  chats: number;
  /** Watch rules. */
  rules: number;
  buttons: number;
  deliveries: number;
  cursors: number;
  /** Verified wallets. */
  wallets: number;
  /** Verification links (open ones, and used or expired ones kept a day to answer a late page load). */
  verifyLinks: number;
  roleRules: number;
  /** What the role rules gave (or took back), per community, target and person. */
  roleGrants: number;
  /** Sales of the market history (a transaction's tokens of one collection). */
  sales: number;
  floors: number;
  /** Listings seen lately (relists are recognised by them). */
  listings: number;
  /** Completeness counts, per network and day. */
  completenessDays: number;
}

/** Thrown when the database already holds some of what migrate-data moves; the message says what. */
export class NotEmptyError extends Error {
  override name = 'NotEmptyError';
}

/** The tables migrate-data fills, and what they hold in words. */
const FILLED_TABLES: ReadonlyArray<readonly [table: string, holds: string]> = [
  ['chats', 'chat settings'],
  ['rules', 'watch rules'],
  ['buttons', 'stored buttons'],
  ['deliveries', 'deliveries'],
  ['cursors', 'block cursors'],
  ['wallets', 'verified wallets'],
  ['verify_links', 'verification links'],
  ['role_rules', 'holder role rules'],
  ['role_grants', 'role grants'],
  ['role_recheck', 'a role re-check in progress'],
  ['market_sales', 'market sales'],
  ['market_floors', 'floor samples'],
  ['market_listings', 'listings seen'],
  ['completeness', 'completeness counts'],
];

/** Rows per statement where a data directory may hold very many (market history, wallets). */
const BATCH_ROWS = 1_000;

export async function migrateData(dataDir: string, databaseUrl: string): Promise<MigrateDataResult> {
  const lock = await lockDataDir(dataDir);
  const logger = pino({ level: 'silent' });
  let db: Database | undefined;
  try {
    const file = (name: string) => join(dataDir, name);
    const { state, buttons } = await StateStore.read(file('state.json'));
    const records = await DeliveryJournal.read(file('deliveries.jsonl'));
    const cursors = [...(await FileCursorStore.read(file('cursors.json')))];
    const { wallets, links } = await FileWalletStore.read(file('wallets.jsonl'));
    const roles = await FileRoleStore.read(file('roles.jsonl'));
    const market = await FileMarketHistory.read(file('market-history.jsonl'), { logger });
    const completeness = await FileCompletenessStore.read(file('completeness.json'));
    db = await Database.open(databaseUrl, { logger, poolSize: 2 });
    const where = db.where;
    return await db.inTransaction(async (client) => {
      await refuseUnlessEmpty(client, where);
      const chats = Object.entries(state.chats);
      for (const [chatKey, settings] of chats) {
        await client.query('INSERT INTO chats (chat_key, settings) VALUES ($1, $2)', [
          chatKey,
          JSON.stringify(settings),
        ]);
      }
      for (const rule of state.rules) {
        await client.query('INSERT INTO rules (id, chat_key, rule) VALUES ($1, $2, $3)', [
          rule.id,
          destinationKey(rule.destination),
          JSON.stringify(rule),
        ]);
      }
      // New rules continue the numbering: ids are never reused.
      await client.query(`SELECT setval('rule_numbers', $1, false)`, [Math.max(1, state.nextRuleNumber)]);
      for (const [hash, button] of buttons) {
        await client.query('INSERT INTO buttons (hash, action, created_at) VALUES ($1, $2, $3)', [
          hash,
          button.action,
          button.createdAt,
        ]);
      }
      for (const r of records) {
        await client.query(
          `INSERT INTO deliveries (id, event_id, chat_key, network, txn_hash, block_number, kind, usd, state, attempts,
                                   send_key, message_id, last_error, reorged, edited_at, final, created_at, updated_at, payload,
                                   listing, listing_collection, listing_expires_at, fate, fate_rev, fate_shown)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19,
                   $20::jsonb, $21, $22, $23::jsonb, $24, $25)`,
          [
            r.id,
            r.eventId,
            destinationKey(r.destination),
            r.network,
            r.txnHash,
            r.blockNumber,
            r.kind ?? null,
            r.usd ?? null,
            r.state,
            r.attempts,
            r.sendKey ?? null,
            r.messageId ?? null,
            r.lastError ?? null,
            r.reorged,
            r.editedAt ?? null,
            r.final,
            r.createdAt,
            r.updatedAt,
            r.payloadJson,
            r.listing === undefined ? null : JSON.stringify(r.listing),
            r.listing?.collection ?? null,
            r.listing?.expiresAt ?? null,
            r.fate === undefined ? null : JSON.stringify(r.fate),
            r.fate?.rev ?? 0,
            r.fateShown ?? 0,
          ],
        );
      }
      for (const [network, block] of cursors) {
        await client.query('INSERT INTO cursors (network, block) VALUES ($1, $2)', [network, block]);
      }

      // In verification order: the table's sequence keeps it.
      await insertBatches(
        client,
        'wallets',
        { community: 'text', address: 'text', person: 'text', kind: 'text', verified_at: 'timestamptz' },
        wallets.map((w) => [w.community, w.address, w.person, w.kind, w.verifiedAt]),
      );
      for (const link of links) {
        const values = linkValues(link);
        await client.query(
          `INSERT INTO verify_links (${LINK_COLUMNS}) VALUES (${values.map((_, i) => `$${i + 1}`).join(', ')})`,
          values,
        );
      }

      // A community's rules are listed by creation time, as they were added.
      for (const rule of roles.rules) {
        await client.query('INSERT INTO role_rules (id, community, rule, created_at) VALUES ($1, $2, $3, $4)', [
          rule.id,
          rule.community,
          JSON.stringify(rule),
          rule.createdAt,
        ]);
      }
      // New role rules continue the numbering: ids are never reused.
      let nextRoleNumber = Math.max(1, roles.nextRuleNumber);
      for (const rule of roles.rules) {
        nextRoleNumber = Math.max(nextRoleNumber, Number(/^h(\d+)$/.exec(rule.id)?.[1] ?? 0) + 1);
      }
      await client.query(`SELECT setval('role_rule_numbers', $1, false)`, [nextRoleNumber]);
      for (const grant of roles.grants) {
        const values = grantValues(grant);
        await client.query(
          `INSERT INTO role_grants (${GRANT_COLUMNS}) VALUES (${values.map((_, i) => `$${i + 1}`).join(', ')})`,
          values,
        );
      }
      if (roles.progress) {
        await client.query('INSERT INTO role_recheck (id, progress) VALUES (true, $1)', [
          JSON.stringify(roles.progress),
        ]);
      }

      // A process that opened the database began a record of its own, with nothing in it (checked
      // above): the record moved here began when the file's did.
      if (market.since !== undefined) {
        await client.query(
          `INSERT INTO market_record (since) VALUES ($1) ON CONFLICT (one) DO UPDATE SET since = EXCLUDED.since`,
          [market.since],
        );
      }
      await insertBatches(
        client,
        'market_sales',
        {
          network: 'text',
          collection: 'text',
          txn_hash: 'text',
          position: 'int',
          token_id: 'text',
          amount: 'text',
          usd: 'float8',
          at: 'bigint',
          buyer: 'text',
          paid_amount: 'text',
          paid_currency: 'text',
          paid_decimals: 'int',
        },
        market.sales.flatMap((sale) =>
          sale.tokens.map((token, position) => [
            sale.network,
            sale.collection,
            sale.txnHash,
            position,
            token.tokenId,
            token.amount,
            token.usd ?? null,
            sale.at,
            sale.buyer ?? null,
            token.paid?.amount ?? null,
            token.paid?.currency ?? null,
            token.paid?.decimals ?? null,
          ]),
        ),
      );
      // Two samples of one time (the file may keep both): the later one, as the table keeps one.
      const floors = new Map<string, unknown[]>();
      for (const f of market.floors)
        floors.set(`${f.network}\n${f.collection}\n${f.at}`, [f.network, f.collection, f.at, f.usd]);
      await insertBatches(
        client,
        'market_floors',
        { network: 'text', collection: 'text', at: 'bigint', usd: 'float8' },
        [...floors.values()],
      );
      await insertBatches(
        client,
        'market_listings',
        { network: 'text', key: 'text', txn_hash: 'text', at: 'bigint' },
        market.listings.map((l) => [l.network, l.key, l.txnHash, l.at]),
      );

      await insertBatches(
        client,
        'completeness',
        { network: 'text', day: 'date', events: 'bigint', blocks_read_back: 'bigint', blocks_missed: 'bigint' },
        completeness.map((d) => [d.network, d.day, d.events, d.blocksReadBack, d.blocksMissed]),
      );

      return {
        chats: chats.length,
        rules: state.rules.length,
        buttons: buttons.length,
        deliveries: records.length,
        cursors: cursors.length,
        wallets: wallets.length,
        verifyLinks: links.length,
        roleRules: roles.rules.length,
        roleGrants: roles.grants.length,
        sales: market.sales.length,
        floors: floors.size,
        listings: market.listings.length,
        completenessDays: completeness.length,
      };
    });
  } finally {
    await db?.close();
    await lock.release();
  }
}

/** Throws {@link NotEmptyError}, naming what the database holds, unless it holds none of what is moved. */
async function refuseUnlessEmpty(client: pg.PoolClient, where: string): Promise<void> {
  const { rows } = await client.query<Record<string, boolean>>(
    `SELECT ${FILLED_TABLES.map(([table], i) => `EXISTS (SELECT 1 FROM ${table}) AS held${i}`).join(', ')}`,
  );
  const row = rows[0] ?? {};
  const held = FILLED_TABLES.filter((_, i) => row[`held${i}`] === true).map(([, holds]) => holds);
  if (held.length === 0) return;
  const list = held.length === 1 ? held[0] : `${held.slice(0, -1).join(', ')} and ${held.at(-1)}`;
  throw new NotEmptyError(`${where} already holds ${list}: migrate-data only moves into an empty database`);
}

/**
 * Inserts rows (values in the order of `columns`, whose values are the columns' types) a batch per
 * statement, in the order given: a table's sequence numbers them so.
 */
async function insertBatches(
  client: pg.PoolClient,
  table: string,
  columns: Readonly<Record<string, string>>,
  rows: readonly unknown[][],
): Promise<void> {
  const names = Object.keys(columns);
  const arrays = Object.values(columns).map((type, i) => `$${i + 1}::${type}[]`);
  const sql =
    `INSERT INTO ${table} (${names.join(', ')}) ` +
    `SELECT ${names.join(', ')} FROM unnest(${arrays.join(', ')}) WITH ORDINALITY AS given(${names.join(', ')}, n) ORDER BY n`;
  for (let at = 0; at < rows.length; at += BATCH_ROWS) {
    const batch = rows.slice(at, at + BATCH_ROWS);
    await client.query(
      sql,
      names.map((_, i) => batch.map((row) => row[i])),
    );
  }
}

async function cli(): Promise<void> {
  if (existsSync('.env')) process.loadEnvFile('.env');
  try {
    const config = loadConfig(process.env);
    if (!config.database)
      throw new ConfigError(['FLOORWATCH_DATABASE_URL must name the database to move the data into.']);
    const moved = await migrateData(config.dataDir, config.database.url);
    process.stdout.write(
      `moved ${config.dataDir} into the database: ${moved.chats} chats, ${moved.rules} rules, ${moved.buttons} buttons, ` +
        `${moved.deliveries} deliveries, ${moved.cursors} cursors, ${moved.wallets} wallets, ` +
        `${moved.verifyLinks} verification links, ${moved.roleRules} role rules, ${moved.roleGrants} role grants, ` +
        `${moved.sales} sales, ${moved.floors} floor samples, ${moved.listings} listings, ` +
        `${moved.completenessDays} completeness days\n`,
    );
  } catch (error) {
    const known =
      error instanceof ConfigError ||
      error instanceof StoreFileError ||
      error instanceof DataDirError ||
      error instanceof DatabaseError ||
      error instanceof NotEmptyError;
    process.stderr.write(`migrate-data: ${known ? (error as Error).message : String(error)}\n`);
    process.exit(known && !(error instanceof DatabaseError) ? 78 : 69);
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await cli();
}
