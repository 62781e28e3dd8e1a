/**
 * Watch rules and chat settings in PostgreSQL, shared by every process on the database.
 *
 * Each process keeps them all in memory, as the file store does, so that reads stay synchronous and
 * matching never waits for the database. A change is applied in memory, written in one transaction,
 * and announced with a notification (`floorwatch_state`) naming what changed; the other processes
 * read those rows again and tell their listeners. After the listening connection was lost, a process
 * reads everything again.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { RulesRepository } from '../../core/ports.ts';
import type { ChatSettings, DigestSettings, StoredButton } from '../../core/settings.ts';
import { type Destination, destinationKey, type WatchRule } from '../../core/types.ts';
import { type Dict, dict, own } from '../../records.ts';
import { RuleChecker, validateState } from '../schema.ts';
import { BUTTON_TTL_MS, MAX_STORED_BUTTONS, StoreFileError, StoreWriteError } from '../state.ts';
import type { Database } from './database.ts';

const CHANNEL = 'floorwatch_state';
/** Notifications carry at most 8,000 bytes; a change naming more keys asks for a full reload. */
const MAX_NOTIFIED_KEYS = 100;
/** Rules read per query when everything is read. */
const RULES_PAGE = 20_000;

interface StateNotice {
  /** The process that made the change (it already holds it). */
  origin: string;
  chats?: string[];
  rules?: string[];
  buttons?: string[];
  all?: boolean;
}

export interface PgRulesOptions {
  logger: Logger;
  buttonTtlMs?: number;
  maxButtons?: number;
  now?: () => Date;
}

type Sql = (query: string, values?: unknown[]) => Promise<unknown>;

export class PgRulesRepository implements RulesRepository {
  readonly #db: Database;
  readonly #logger: Logger;
  readonly #origin = randomUUID();
  readonly #buttonTtlMs: number;
  readonly #maxButtons: number;
  readonly #now: () => Date;
  readonly #ruleListeners: Array<() => void> = [];
  readonly #chatListeners: Array<(chatKey: string) => void> = [];
  #chats: Dict<ChatSettings> = dict();
  #buttons: Dict<StoredButton> = dict();
  #rules: WatchRule[] = [];
  readonly #destinations = new Map<string, Destination>();
  #writes = 0;
  #pending = new Set<Promise<unknown>>();
  /** Reloads run one at a time, in the order notifications came. */
  #reloading: Promise<void> = Promise.resolve();

  private constructor(db: Database, options: PgRulesOptions) {
    this.#db = db;
    this.#logger = options.logger;
    this.#buttonTtlMs = options.buttonTtlMs ?? BUTTON_TTL_MS;
    this.#maxButtons = options.maxButtons ?? MAX_STORED_BUTTONS;
    this.#now = options.now ?? (() => new Date());
  }

  /** Reads every chat, rule and button, and listens for the changes of other processes. */
  static async open(db: Database, options: PgRulesOptions): Promise<PgRulesRepository> {
    const repository = new PgRulesRepository(db, options);
    await db.listen(CHANNEL, (payload) => repository.#noticed(payload));
    db.onResync(() => repository.#reload({ origin: '', all: true }));
    await repository.#loadAll();
    return repository;
  }

  // ---- reads ----

  chat(chatKey: string): ChatSettings {
    return own(this.#chats, chatKey) ?? emptyChat();
  }

  get rules(): readonly WatchRule[] {
    return this.#rules;
  }

  digests(): Array<[string, DigestSettings]> {
    return Object.entries(this.#chats).flatMap(([key, chat]) =>
      chat.digest ? [[key, chat.digest] as [string, DigestSettings]] : [],
    );
  }

  button(hash: string): StoredButton | undefined {
    const stored = own(this.#buttons, hash);
    if (!stored || this.#now().getTime() - Date.parse(stored.createdAt) > this.#buttonTtlMs) return undefined;
    return stored;
  }

  get writeStats(): { writes: number; pending: number } {
    return { writes: this.#writes, pending: this.#pending.size };
  }

  onRulesChanged(listener: () => void): void {
    this.#ruleListeners.push(listener);
  }

  onChatsChanged(listener: (chatKey: string) => void): void {
    this.#chatListeners.push(listener);
  }

  async flush(): Promise<void> {
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
  }

  // ---- changes ----

  async updateChat(chatKey: string, change: (settings: ChatSettings) => void): Promise<ChatSettings> {
    let settings: ChatSettings | undefined;
    await this.updateChats([
      [
        chatKey,
        (s) => {
          change(s);
          settings = s;
        },
      ],
    ]);
    return settings as ChatSettings;
  }

  async updateChats(changes: ReadonlyArray<readonly [string, (settings: ChatSettings) => void]>): Promise<void> {
    if (changes.length === 0) return;
    const before = new Map<string, ChatSettings | undefined>();
    const after = new Map<string, ChatSettings>();
    for (const [chatKey, change] of changes) {
      if (!before.has(chatKey)) before.set(chatKey, own(this.#chats, chatKey));
      const settings = copyChat(after.get(chatKey) ?? own(this.#chats, chatKey) ?? emptyChat());
      change(settings);
      after.set(chatKey, settings);
    }
    for (const [chatKey, settings] of after) this.#chats[chatKey] = settings;
    await this.#write(
      async (sql) => {
        for (const [chatKey, settings] of after) {
          await sql(
            `INSERT INTO chats (chat_key, settings, updated_at) VALUES ($1, $2, now())
             ON CONFLICT (chat_key) DO UPDATE SET settings = EXCLUDED.settings, updated_at = now()`,
            [chatKey, JSON.stringify(settings)],
          );
        }
      },
      () => {
        for (const [chatKey, previous] of before) {
          if (previous) this.#chats[chatKey] = previous;
          else delete this.#chats[chatKey];
        }
      },
      { chats: [...after.keys()] },
    );
  }

  async addRule(rule: Omit<WatchRule, 'id'>, limit: number): Promise<WatchRule | undefined> {
    const destination = this.#sharedDestination(rule.destination);
    let same = 0;
    for (const r of this.#rules) if (r.destination === destination) same++;
    if (same >= limit) return undefined;
    let stored: WatchRule | undefined;
    await this.#write(
      async (sql, notice) => {
        const numbered = (await sql(`SELECT nextval('rule_numbers') AS n`)) as { rows: Array<{ n: string }> };
        stored = { ...rule, id: `r${numbered.rows[0]?.n}`, destination };
        await sql('INSERT INTO rules (id, chat_key, rule) VALUES ($1, $2, $3)', [
          stored.id,
          destinationKey(destination),
          JSON.stringify(stored),
        ]);
        this.#insertInOrder(stored);
        notice.rules = [stored.id];
      },
      () => {
        if (!stored) return;
        const at = this.#rules.lastIndexOf(stored);
        if (at >= 0) this.#rules.splice(at, 1);
      },
    );
    return stored;
  }

  async updateRule(id: string, change: (rule: WatchRule) => WatchRule | null): Promise<boolean> {
    const index = this.#rules.findIndex((r) => r.id === id);
    const current = this.#rules[index];
    if (!current) return false;
    const next = change({ ...current });
    if (next === null) this.#rules.splice(index, 1);
    else this.#rules[index] = { ...next, id, destination: this.#sharedDestination(next.destination) };
    await this.#write(
      async (sql) => {
        if (next === null) await sql('DELETE FROM rules WHERE id = $1', [id]);
        else await sql('UPDATE rules SET rule = $2 WHERE id = $1', [id, JSON.stringify(this.#rules[index])]);
      },
      () => {
        const at = this.#rules.findIndex((r) => r.id === id);
        if (next === null) this.#insertInOrder(current);
        else if (at >= 0) this.#rules[at] = current;
      },
      { rules: [id] },
    );
    return true;
  }

  async saveButton(hash: string, action: string, now: Date): Promise<void> {
    const existing = own(this.#buttons, hash);
    if (existing?.action === action && now.getTime() - Date.parse(existing.createdAt) < 60 * 60 * 1000) return;
    const stored = { action, createdAt: now.toISOString() };
    delete this.#buttons[hash];
    this.#buttons[hash] = stored;
    await this.#write(
      async (sql) => {
        await sql(
          `INSERT INTO buttons (hash, action, created_at) VALUES ($1, $2, $3)
           ON CONFLICT (hash) DO UPDATE SET action = EXCLUDED.action, created_at = EXCLUDED.created_at`,
          [hash, action, stored.createdAt],
        );
        // Expired ones, and the oldest beyond the cap.
        await sql(
          `DELETE FROM buttons WHERE created_at < $1 OR hash IN (
             SELECT hash FROM buttons ORDER BY created_at DESC OFFSET $2)`,
          [new Date(now.getTime() - this.#buttonTtlMs).toISOString(), this.#maxButtons],
        );
      },
      () => {
        delete this.#buttons[hash];
        if (existing) this.#buttons[hash] = existing;
      },
      { buttons: [hash] },
    );
    this.#pruneButtons();
  }

  // ---- internals ----

  /**
   * Runs `work` in one transaction with the notification of what changed; on failure runs `undo`
   * and rejects with {@link StoreWriteError}. `work` may add keys to the notice.
   */
  async #write(
    work: (sql: Sql, notice: Omit<StateNotice, 'origin'>) => Promise<unknown>,
    undo: () => void,
    notice: Omit<StateNotice, 'origin'> = {},
  ): Promise<void> {
    const run = (async () => {
      const client = await this.#db.pool.connect();
      try {
        await client.query('BEGIN');
        await work((query, values) => client.query(query, values), notice);
        const announced = merge({ origin: this.#origin, ...notice });
        await client.query('SELECT pg_notify($1, $2)', [CHANNEL, JSON.stringify(announced)]);
        await client.query('COMMIT');
        return announced;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    })();
    this.#pending.add(run);
    try {
      const announced = await run;
      this.#writes += 1;
      this.#tell(announced);
    } catch (cause) {
      undo();
      throw new StoreWriteError(this.#db.where, cause);
    } finally {
      this.#pending.delete(run);
    }
  }

  #tell(notice: StateNotice): void {
    if (notice.all || notice.rules?.length) for (const listener of this.#ruleListeners) listener();
    const chats = notice.all ? Object.keys(this.#chats) : (notice.chats ?? []);
    for (const chatKey of chats) for (const listener of this.#chatListeners) listener(chatKey);
  }

  #noticed(payload: string): void {
    let notice: StateNotice;
    try {
      notice = JSON.parse(payload) as StateNotice;
    } catch {
      return;
    }
    if (notice.origin === this.#origin) return;
    this.#reload(notice);
  }

  #reload(notice: StateNotice): void {
    this.#reloading = this.#reloading
      .then(async () => {
        if (notice.all) await this.#loadAll();
        else await this.#loadSome(notice);
        this.#tell(notice);
      })
      .catch((error: unknown) => {
        this.#logger.error({ err: error }, 'could not read changes made by another process; reading everything again');
        setTimeout(() => this.#reload({ origin: '', all: true }), 1_000).unref();
      });
  }

  /**
   * Reads everything again. Rules are read in pages and checked one by one, so that a million of
   * them never exist as rows, parsed JSON and checked copies all at once.
   */
  async #loadAll(): Promise<void> {
    const [chats, buttons] = await Promise.all([
      this.#db.pool.query<{ chat_key: string; settings: unknown }>('SELECT chat_key, settings FROM chats'),
      this.#db.pool.query<{ hash: string; action: string; created_at: Date }>(
        'SELECT hash, action, created_at FROM buttons ORDER BY created_at',
      ),
    ]);
    const state = this.#validated(
      chats.rows.map((r) => [r.chat_key, r.settings]),
      [],
      buttons.rows.map((r) => [r.hash, { action: r.action, createdAt: r.created_at.toISOString() }]),
    );
    const checker = new RuleChecker();
    const rules: WatchRule[] = [];
    for (let after = 0; ; ) {
      const { rows } = await this.#db.pool.query<{ seq: string; rule: unknown }>(
        'SELECT seq, rule FROM rules WHERE seq > $1 ORDER BY seq LIMIT $2',
        [after, RULES_PAGE],
      );
      for (const row of rows) rules.push(this.#checked(checker, row.rule, rules.length));
      const last = rows.at(-1);
      if (!last || rows.length < RULES_PAGE) break;
      after = Number(last.seq);
    }
    this.#chats = state.chats;
    this.#buttons = state.buttons;
    this.#rules = rules;
  }

  /** A stored rule, checked, its texts shared, its destination the chat's one object. */
  #checked(checker: RuleChecker, raw: unknown, index: number): WatchRule {
    const checked = checker.check(raw, index);
    if (!checked.ok) throw new StoreFileError(this.#db.where, `holds an invalid rule (${checked.problems.join('; ')})`);
    const rule = checked.rule as WatchRule;
    rule.destination = this.#sharedDestination(rule.destination);
    return rule;
  }

  async #loadSome(notice: StateNotice): Promise<void> {
    const pool = this.#db.pool;
    if (notice.chats?.length) {
      const { rows } = await pool.query<{ chat_key: string; settings: unknown }>(
        'SELECT chat_key, settings FROM chats WHERE chat_key = ANY($1)',
        [notice.chats],
      );
      const state = this.#validated(
        rows.map((r) => [r.chat_key, r.settings]),
        [],
        [],
      );
      for (const key of notice.chats) {
        const settings = own(state.chats, key);
        if (settings) this.#chats[key] = settings;
        else delete this.#chats[key];
      }
    }
    if (notice.rules?.length) {
      const { rows } = await pool.query<{ rule: unknown }>('SELECT rule FROM rules WHERE id = ANY($1)', [notice.rules]);
      const checker = new RuleChecker();
      const ids = new Set(notice.rules);
      this.#rules = this.#rules.filter((r) => !ids.has(r.id));
      rows.forEach((row, i) => {
        this.#insertInOrder(this.#checked(checker, row.rule, i));
      });
    }
    if (notice.buttons?.length) {
      const { rows } = await pool.query<{ hash: string; action: string; created_at: Date }>(
        'SELECT hash, action, created_at FROM buttons WHERE hash = ANY($1)',
        [notice.buttons],
      );
      for (const hash of notice.buttons) delete this.#buttons[hash];
      for (const r of rows) this.#buttons[r.hash] = { action: r.action, createdAt: r.created_at.toISOString() };
      this.#pruneButtons();
    }
  }

  /** Rows checked as the file store checks its file: a bad row stops the load with its key and field. */
  #validated(
    chats: Array<[string, unknown]>,
    rules: unknown[],
    buttons: Array<[string, StoredButton]>,
  ): { chats: Dict<ChatSettings>; rules: WatchRule[]; buttons: Dict<StoredButton> } {
    const checked = validateState({
      version: 2,
      chats: Object.fromEntries(chats),
      buttons: Object.fromEntries(buttons),
      rules,
      nextRuleNumber: 1,
    });
    if (!checked.ok)
      throw new StoreFileError(this.#db.where, `holds invalid settings (${checked.problems.join('; ')})`);
    return {
      chats: checked.state.chats as Dict<ChatSettings>,
      rules: checked.state.rules as WatchRule[],
      buttons: checked.state.buttons as Dict<StoredButton>,
    };
  }

  /** Rules stay in creation order, which is the order of their numbers (`r12` before `r13`). */
  #insertInOrder(rule: WatchRule): void {
    const number = ruleNumber(rule.id);
    const last = this.#rules.at(-1);
    if (!last || ruleNumber(last.id) < number) {
      this.#rules.push(rule);
      return;
    }
    let low = 0;
    let high = this.#rules.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (ruleNumber((this.#rules[mid] as WatchRule).id) < number) low = mid + 1;
      else high = mid;
    }
    this.#rules.splice(low, 0, rule);
  }

  #sharedDestination(destination: Destination): Destination {
    const key = destinationKey(destination);
    let shared = this.#destinations.get(key);
    if (!shared) {
      shared = { platform: destination.platform, chatId: destination.chatId };
      this.#destinations.set(key, shared);
    }
    return shared;
  }

  #pruneButtons(): void {
    const nowMs = this.#now().getTime();
    let excess = Object.keys(this.#buttons).length - this.#maxButtons;
    for (const key in this.#buttons) {
      const button = this.#buttons[key] as StoredButton;
      if (excess <= 0 && nowMs - Date.parse(button.createdAt) <= this.#buttonTtlMs) break;
      delete this.#buttons[key];
      excess--;
    }
  }
}

/** The notice as sent: a change naming too many keys for one notification asks for a full reload. */
function ruleNumber(id: string): number {
  return Number(id.slice(1));
}

function merge(notice: StateNotice): StateNotice {
  const out: StateNotice = { origin: notice.origin };
  for (const key of ['chats', 'rules', 'buttons'] as const) {
    const keys = notice[key] ?? [];
    if (keys.length) out[key] = keys;
  }
  const total = (out.chats?.length ?? 0) + (out.rules?.length ?? 0) + (out.buttons?.length ?? 0);
  return total > MAX_NOTIFIED_KEYS ? { origin: notice.origin, all: true } : out;
}

function emptyChat(): ChatSettings {
  return { aliases: dict() };
}

function copyChat(settings: ChatSettings): ChatSettings {
  const copy = structuredClone(settings);
  copy.aliases = dict(copy.aliases);
  if (copy.digest?.lastMarket) copy.digest.lastMarket = dict(copy.digest.lastMarket);
  return copy;
}
