/**
 * `npm run migrate-data`: moves a data directory (FLOORWATCH_DATA_DIR) into the database
 * (FLOORWATCH_DATABASE_URL): chat settings, watch rules (same ids; new ones continue the numbering),
 * stored buttons, the delivery journal (so nothing in flight is lost or sent twice) and the block
 * cursors. The bot must be stopped (the data directory's lock is taken), and the database must not
 * hold any of it yet: the move is one transaction, all or nothing. The files are left as they were.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { ConfigError, loadConfig } from '../../config.ts';
import { StoreFileError } from '../../core/store-errors.ts';
import { destinationKey } from '../../core/types.ts';
import { DeliveryJournal } from '../files/journal/journal.ts';
import { DataDirError, lockDataDir } from '../files/lock.ts';
import { StateStore } from '../files/state.ts';
import { Database, DatabaseError } from './database.ts';

export interface MigrateDataResult {
  chats: number;
  rules: number;
  buttons: number;
  deliveries: number;
  cursors: number;
}

/** Thrown when the database already holds settings, rules or deliveries. */
export class NotEmptyError extends Error {
  override name = 'NotEmptyError';
}

export async function migrateData(dataDir: string, databaseUrl: string): Promise<MigrateDataResult> {
  const lock = await lockDataDir(dataDir);
  const logger = pino({ level: 'silent' });
  let db: Database | undefined;
  try {
    // Read only: the files are left as they were, even when they are of an older version.
    const read = await StateStore.read(join(dataDir, 'state.json'));
    const journal = await DeliveryJournal.open(join(dataDir, 'deliveries.jsonl'));
    const records = journal.records();
    await journal.close();
    const cursors = await readCursors(join(dataDir, 'cursors.json'));
    db = await Database.open(databaseUrl, { logger, poolSize: 2 });
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      const held = await client.query<{ n: string }>(
        `SELECT (SELECT count(*) FROM chats) + (SELECT count(*) FROM rules) + (SELECT count(*) FROM deliveries) AS n`,
      );
      if (Number(held.rows[0]?.n) > 0) {
        throw new NotEmptyError(
          `${db.where} already holds settings, rules or deliveries: migrate-data only moves into an empty database`,
        );
      }
      const { state } = read;
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
      const { buttons } = read;
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
      await client.query('COMMIT');
      return {
        chats: chats.length,
        rules: state.rules.length,
        buttons: buttons.length,
        deliveries: records.length,
        cursors: cursors.length,
      };
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  } finally {
    await db?.close();
    await lock.release();
  }
}

async function readCursors(file: string): Promise<Array<[string, number]>> {
  if (!existsSync(file)) return [];
  const parsed = JSON.parse(await readFile(file, 'utf8')) as { networks?: Record<string, unknown> };
  return Object.entries(parsed.networks ?? {}).filter((e): e is [string, number] => Number.isSafeInteger(e[1]));
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
        `${moved.deliveries} deliveries, ${moved.cursors} cursors\n`,
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
