/**
 * Role rules, grants and the full re-check's progress in PostgreSQL (tables `role_rules`,
 * `role_grants`, `role_recheck`; migration 1768000000000_roles.sql), shared by every process on the
 * database.
 *
 * Whatever the number of processes: a change of a grant is claimed once (the row is locked, the
 * claim decided on what it holds, and written in the same transaction), and finished only by the
 * claim's token. A rule change is announced on `floorwatch_roles`; this process tells its listeners
 * itself, the others when the notification arrives (and all communities after the listening
 * connection came back, when notifications may have been missed).
 */
import type pg from 'pg';
import type { Logger } from 'pino';
import * as v from 'valibot';
import {
  type ChangeResult,
  type ClaimOutcome,
  decideClaim,
  finishedGrant,
  type GrantAction,
  type GrantCount,
  type GrantKey,
  type RecheckProgress,
  type RoleGrant,
  type RoleRule,
  type RoleStore,
} from '../../core/roles.ts';
import { grantFailureSchema, recheckProgressSchema, roleRuleSchema } from '../schema.ts';
import { AnnouncedChanges } from './announced.ts';
import type { Database } from './database.ts';

export const ROLES_CHANNEL = 'floorwatch_roles';
/** Advisory lock space of a community's rules (two `/roles add` racing for the last place). */
const ROLES_LOCK_SPACE = 0x0f10_0027;

interface GrantRow {
  community: string;
  target: string;
  person: string;
  state: 'granted' | 'lapsed' | 'revoked';
  since: Date;
  lapsed_at: Date | null;
  pending_action: 'grant' | 'revoke' | null;
  pending_since: Date | null;
  pending_token: string | null;
  failure: unknown;
  recheck: boolean;
}

/** The columns of `role_grants`, in the order of {@link grantValues}. */
export const GRANT_COLUMNS =
  'community, target, person, state, since, lapsed_at, pending_action, pending_since, pending_token, failure, recheck';
const KEY_MATCH = 'community = $1 AND target = $2 AND person = $3';

function grantOf(row: GrantRow): RoleGrant {
  const failure = row.failure === null ? undefined : v.safeParse(grantFailureSchema, row.failure);
  return {
    community: row.community,
    target: row.target,
    person: row.person,
    state: row.state,
    since: row.since.toISOString(),
    ...(row.lapsed_at === null ? {} : { lapsedAt: row.lapsed_at.toISOString() }),
    ...(row.pending_action !== null && row.pending_since !== null && row.pending_token !== null
      ? { pending: { action: row.pending_action, since: row.pending_since.toISOString(), token: row.pending_token } }
      : {}),
    ...(failure?.success ? { failure: failure.output } : {}),
    ...(row.recheck ? { recheck: true } : {}),
  };
}

/** The values of a grant in {@link GRANT_COLUMNS} order (a row of `role_grants`). */
export function grantValues(grant: RoleGrant): unknown[] {
  return [
    grant.community,
    grant.target,
    grant.person,
    grant.state,
    grant.since,
    grant.lapsedAt ?? null,
    grant.pending?.action ?? null,
    grant.pending?.since ?? null,
    grant.pending?.token ?? null,
    grant.failure === undefined ? null : JSON.stringify(grant.failure),
    grant.recheck === true,
  ];
}

/** The role store on the shared database (see the module comment). */
export class PgRoleStore implements RoleStore {
  readonly #db: Database;
  readonly #logger: Logger;
  /** Rule changes, named by their community. */
  readonly #ruleChanges: AnnouncedChanges<string>;

  private constructor(db: Database, logger: Logger, ruleChanges: AnnouncedChanges<string>) {
    this.#db = db;
    this.#logger = logger;
    this.#ruleChanges = ruleChanges;
  }

  /** Listens for other processes' rule changes. */
  static async open(db: Database, logger: Logger): Promise<PgRoleStore> {
    const ruleChanges = await AnnouncedChanges.open(db, {
      channel: ROLES_CHANNEL,
      field: 'community',
      schema: v.string(),
      logger,
      what: 'role rule',
    });
    const store = new PgRoleStore(db, logger, ruleChanges);
    db.onResync(() => {
      void store
        .allRules()
        .then((rules) => {
          for (const community of new Set(rules.map((rule) => rule.community))) store.#ruleChanges.tell(community);
        })
        .catch((error: unknown) => logger.warn({ err: error }, 'could not read the role rules again'));
    });
    return store;
  }

  // ---- rules

  addRule(rule: Omit<RoleRule, 'id'>, limit: number): Promise<RoleRule | undefined> {
    return this.#transaction(async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [ROLES_LOCK_SPACE, rule.community]);
      const counted = await client.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM role_rules WHERE community = $1',
        [rule.community],
      );
      if ((counted.rows[0]?.n ?? 0) >= limit) return { result: undefined };
      const numbered = await client.query<{ n: string }>(`SELECT nextval('role_rule_numbers') AS n`);
      const stored: RoleRule = { id: `h${numbered.rows[0]?.n}`, ...rule };
      const checked = v.parse(roleRuleSchema, stored);
      await client.query('INSERT INTO role_rules (id, community, rule) VALUES ($1, $2, $3)', [
        checked.id,
        checked.community,
        JSON.stringify(checked),
      ]);
      return { result: stored, community: rule.community };
    });
  }

  removeRule(community: string, id: string): Promise<RoleRule | undefined> {
    return this.#transaction(async (client) => {
      const { rows } = await client.query<{ rule: unknown }>(
        'DELETE FROM role_rules WHERE id = $1 AND community = $2 RETURNING rule',
        [id, community],
      );
      const row = rows[0];
      if (!row) return { result: undefined };
      return { result: this.#ruleOf(id, row.rule), community };
    });
  }

  async rulesOf(community: string): Promise<RoleRule[]> {
    const { rows } = await this.#db.pool.query<{ id: string; rule: unknown }>(
      'SELECT id, rule FROM role_rules WHERE community = $1 ORDER BY created_at, id',
      [community],
    );
    return rows.flatMap((row) => this.#ruleOf(row.id, row.rule) ?? []);
  }

  async allRules(): Promise<RoleRule[]> {
    const { rows } = await this.#db.pool.query<{ id: string; rule: unknown }>(
      'SELECT id, rule FROM role_rules ORDER BY created_at, id',
    );
    return rows.flatMap((row) => this.#ruleOf(row.id, row.rule) ?? []);
  }

  onRulesChanged(listener: (community: string) => void): void {
    this.#ruleChanges.onChange(listener);
  }

  // ---- grants

  async grantsOf(community: string, person: string): Promise<RoleGrant[]> {
    const { rows } = await this.#db.pool.query<GrantRow>(
      `SELECT ${GRANT_COLUMNS} FROM role_grants WHERE community = $1 AND person = $2`,
      [community, person],
    );
    return rows.map(grantOf);
  }

  async grantedPeople(community: string, after: string | undefined, limit: number): Promise<string[]> {
    const { rows } = await this.#db.pool.query<{ person: string }>(
      `SELECT DISTINCT person COLLATE "C" AS person FROM role_grants
       WHERE community = $1 AND state <> 'revoked' AND ($2::text IS NULL OR person COLLATE "C" > $2)
       ORDER BY 1 LIMIT $3`,
      [community, after ?? null, limit],
    );
    return rows.map((row) => row.person);
  }

  async grantCounts(community: string): Promise<GrantCount[]> {
    const { rows } = await this.#db.pool.query<{
      target: string;
      granted: number;
      lapsed: number;
      failed: number;
      last_failure: unknown;
    }>(
      `SELECT target,
              count(*) FILTER (WHERE state = 'granted')::int AS granted,
              count(*) FILTER (WHERE state = 'lapsed')::int AS lapsed,
              count(*) FILTER (WHERE failure IS NOT NULL)::int AS failed,
              (array_agg(failure ORDER BY failure->>'at' DESC) FILTER (WHERE failure IS NOT NULL))[1] AS last_failure
       FROM role_grants WHERE community = $1 GROUP BY target`,
      [community],
    );
    return rows.map((row) => {
      const failure = row.last_failure === null ? undefined : v.safeParse(grantFailureSchema, row.last_failure);
      return {
        target: row.target,
        granted: row.granted,
        lapsed: row.lapsed,
        failed: row.failed,
        ...(failure?.success ? { lastFailure: failure.output } : {}),
      };
    });
  }

  async lapsedBefore(before: Date, limit: number): Promise<RoleGrant[]> {
    const { rows } = await this.#db.pool.query<GrantRow>(
      `SELECT ${GRANT_COLUMNS} FROM role_grants WHERE state = 'lapsed' AND lapsed_at <= $1 ORDER BY lapsed_at LIMIT $2`,
      [before, limit],
    );
    return rows.map(grantOf);
  }

  async stalePending(before: Date, limit: number): Promise<RoleGrant[]> {
    const { rows } = await this.#db.pool.query<GrantRow>(
      `SELECT ${GRANT_COLUMNS} FROM role_grants WHERE pending_token IS NOT NULL AND pending_since <= $1 LIMIT $2`,
      [before, limit],
    );
    return rows.map(grantOf);
  }

  async forgetTarget(community: string, target: string): Promise<number> {
    const { rowCount } = await this.#db.pool.query('DELETE FROM role_grants WHERE community = $1 AND target = $2', [
      community,
      target,
    ]);
    return rowCount ?? 0;
  }

  claim(
    key: GrantKey,
    action: GrantAction,
    now: Date,
    staleMs: number,
    options: { again?: boolean } = {},
  ): Promise<ClaimOutcome> {
    return this.#transaction(async (client) => {
      const keyValues = [key.community, key.target, key.person];
      let current = await this.#locked(client, key);
      if (!current && (action === 'grant' || options.again === true)) {
        await client.query(
          `INSERT INTO role_grants (community, target, person, state, since) VALUES ($1, $2, $3, 'revoked', $4)
           ON CONFLICT DO NOTHING`,
          [...keyValues, now],
        );
        current = await this.#locked(client, key);
      }
      const decision = decideClaim(current, action, now, staleMs, options.again === true);
      if (decision.kind === 'busy') {
        await client.query(`UPDATE role_grants SET recheck = true WHERE ${KEY_MATCH}`, keyValues);
      } else if (decision.kind === 'claimed') {
        await client.query(
          `UPDATE role_grants SET pending_action = $4, pending_since = $5, pending_token = $6, recheck = false
           WHERE ${KEY_MATCH}`,
          [...keyValues, action, now, decision.token],
        );
      }
      return { result: decision };
    });
  }

  finish(key: GrantKey, token: string, result: ChangeResult, now: Date): Promise<{ recheck: boolean }> {
    return this.#transaction(async (client) => {
      const current = await this.#locked(client, key);
      if (!current?.pending || current.pending.token !== token) return { result: { recheck: false } };
      await this.#write(client, finishedGrant(current, result, now));
      return { result: { recheck: current.recheck === true } };
    });
  }

  async lapse(key: GrantKey, now: Date): Promise<boolean> {
    const { rowCount } = await this.#db.pool.query(
      `UPDATE role_grants SET state = 'lapsed', since = $4, lapsed_at = $4
       WHERE ${KEY_MATCH} AND state = 'granted' AND pending_token IS NULL`,
      [key.community, key.target, key.person, now],
    );
    return rowCount === 1;
  }

  async restore(key: GrantKey, now: Date): Promise<boolean> {
    const { rowCount } = await this.#db.pool.query(
      `UPDATE role_grants SET state = 'granted', since = $4, lapsed_at = NULL
       WHERE ${KEY_MATCH} AND state = 'lapsed' AND pending_token IS NULL`,
      [key.community, key.target, key.person, now],
    );
    return rowCount === 1;
  }

  // ---- the full re-check

  async recheckProgress(): Promise<RecheckProgress | undefined> {
    const { rows } = await this.#db.pool.query<{ progress: unknown }>('SELECT progress FROM role_recheck');
    const row = rows[0];
    if (!row) return undefined;
    const parsed = v.safeParse(recheckProgressSchema, row.progress);
    if (parsed.success) return parsed.output;
    this.#logger.warn('the role re-check progress could not be read; the re-check starts over');
    return undefined;
  }

  async saveRecheckProgress(progress: RecheckProgress | undefined): Promise<void> {
    if (progress === undefined) {
      await this.#db.pool.query('DELETE FROM role_recheck');
      return;
    }
    await this.#db.pool.query(
      `INSERT INTO role_recheck (id, progress) VALUES (true, $1)
       ON CONFLICT (id) DO UPDATE SET progress = EXCLUDED.progress`,
      [JSON.stringify(progress)],
    );
  }

  async flush(): Promise<void> {
    await this.#ruleChanges.flush();
  }

  async close(): Promise<void> {
    await this.flush();
  }

  async #locked(client: pg.PoolClient, key: GrantKey): Promise<RoleGrant | undefined> {
    const { rows } = await client.query<GrantRow>(
      `SELECT ${GRANT_COLUMNS} FROM role_grants WHERE ${KEY_MATCH} FOR UPDATE`,
      [key.community, key.target, key.person],
    );
    return rows[0] && grantOf(rows[0]);
  }

  async #write(client: pg.PoolClient, grant: RoleGrant): Promise<void> {
    await client.query(
      `UPDATE role_grants SET state = $4, since = $5, lapsed_at = $6, pending_action = $7, pending_since = $8,
         pending_token = $9, failure = $10, recheck = $11
       WHERE ${KEY_MATCH}`,
      grantValues(grant),
    );
  }

  #ruleOf(id: string, raw: unknown): RoleRule | undefined {
    const parsed = v.safeParse(roleRuleSchema, raw);
    if (parsed.success) return parsed.output;
    this.#logger.warn({ rule: id }, 'a role rule could not be read; skipped');
    return undefined;
  }

  /** One transaction; a rule change it made (its community) is announced with the commit. */
  #transaction<T>(work: (client: pg.PoolClient) => Promise<{ result: T; community?: string }>): Promise<T> {
    return this.#ruleChanges.transaction(async (client) => {
      const done = await work(client);
      return { result: done.result, change: done.community };
    });
  }
}
