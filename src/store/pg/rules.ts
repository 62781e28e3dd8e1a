/**
 * Watch rules and chat settings in PostgreSQL, shared by every process on the database.
 *
 * Rules are not kept in memory: they are read from the database when asked for, one chat's at a
 * time or page by page, and checked as they are read (the rule index of the process that matches
 * events is the only copy in memory). Chat settings and buttons are few and read synchronously, so
 * each process keeps them in memory, applies a change there first, and undoes it when the write fails.
 *
 * A change is written in one transaction and announced with a notification (`floorwatch_state`)
 * naming what changed. This process tells its listeners itself, with the rules as written; the other
 * processes read the named rows again and tell theirs. After the listening connection was lost (or
 * when a change names too many keys for one notification) a process reads its settings again and
 * tells its rule listeners that every rule may have changed.
 *
 * A row that does not read as a rule or as chat settings (written by hand, or by a version that let a
 * bad value through) is skipped wherever rows are read, and named in a warning with its key and
 * field, once per process: it never stops the rules and alerts of every other chat, on any process.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Logger } from 'pino';
import type { RulesChange, RulesRepository } from '../../core/ports.ts';
import type { ChatSettings, DigestSettings, StoredButton } from '../../core/settings.ts';
import { StoreFileError, StoreWriteError } from '../../core/store-errors.ts';
import { type Destination, destinationKey, type WatchRule } from '../../core/types.ts';
import { type Dict, dict, own } from '../../records.ts';
import {
  assertValidChat,
  assertValidRule,
  BUTTON_TTL_MS,
  InvalidChangeError,
  MAX_STORED_BUTTONS,
  RuleChecker,
  type SchemaProblems,
  validateButtons,
  validateState,
} from '../schema.ts';
import type { Database } from './database.ts';

const CHANNEL = 'floorwatch_state';
/** Notifications carry at most 8,000 bytes; a change naming more keys asks for a full reload. */
const MAX_NOTIFIED_KEYS = 100;
/**
 * Rules read per query by {@link PgRulesRepository.allRules}. Small enough that a page's rows and
 * parsed JSON die young (before the collector moves them to the old generation, where a million
 * rules' worth of garbage would pile up before it is collected), big enough that a million rules
 * take a few hundred queries.
 */
const RULES_PER_PAGE = 2_000;
/**
 * The first key of the transaction lock that makes counting and adding a chat's rules one step
 * (the second is the chat key's hash). Next to the session locks' spaces in locks.ts.
 */
const RULES_LOCK_SPACE = 0x0f10_0010;
/** Unreadable rows remembered as named: past this many, they are named again rather than kept. */
const MAX_NAMED_ROWS = 1_000;

interface StateNotice {
  /** The process that made the change (it has told its own listeners). */
  origin: string;
  chats?: string[];
  rules?: string[];
  buttons?: string[];
  /** Everything may have changed: read it all again. */
  all?: boolean;
  /** With `all`: false when no rule was among the changes (absent: rules may have changed). */
  rulesChanged?: boolean;
}

/** What one write changed: the keys of chats and buttons, and each rule as it is now. */
interface Written {
  chats?: string[];
  rules?: Array<{ id: string; rule: WatchRule | undefined }>;
  buttons?: string[];
}

export interface PgRulesOptions {
  logger: Logger;
  buttonTtlMs?: number;
  maxButtons?: number;
  now?: () => Date;
  /** Rules per page of {@link PgRulesRepository.allRules} (default 2,000). */
  rulesPerPage?: number;
}

type Sql = <R extends pg.QueryResultRow = pg.QueryResultRow>(
  query: string,
  values?: unknown[],
) => Promise<pg.QueryResult<R>>;

/** An error of the caller's `change` function, passed on as it is (the transaction is rolled back). */
class ChangeFailed {
  constructor(readonly error: unknown) {}
}

export class PgRulesRepository implements RulesRepository {
  readonly #db: Database;
  readonly #logger: Logger;
  readonly #origin = randomUUID();
  readonly #buttonTtlMs: number;
  readonly #maxButtons: number;
  readonly #now: () => Date;
  readonly #rulesPerPage: number;
  readonly #ruleListeners: Array<(change: RulesChange) => void> = [];
  readonly #chatListeners: Array<(chatKey: string) => void> = [];
  #chats: Dict<ChatSettings> = dict();
  #buttons: Dict<StoredButton> = dict();
  #writes = 0;
  #pending = new Set<Promise<unknown>>();
  /**
   * Listeners are told one change at a time, in the order of commits here and of notifications from
   * other processes, so that a rule read for an older notice never overtakes a newer own change.
   */
  #telling: Promise<void> = Promise.resolve();
  /** Unreadable rows named already (see {@link #unreadable}). */
  readonly #named = new Set<string>();

  private constructor(db: Database, options: PgRulesOptions) {
    this.#db = db;
    this.#logger = options.logger;
    this.#buttonTtlMs = options.buttonTtlMs ?? BUTTON_TTL_MS;
    this.#maxButtons = options.maxButtons ?? MAX_STORED_BUTTONS;
    this.#now = options.now ?? (() => new Date());
    this.#rulesPerPage = options.rulesPerPage ?? RULES_PER_PAGE;
  }

  /** Reads every chat and button (not the rules: they are read when asked for), and listens for changes. */
  static async open(db: Database, options: PgRulesOptions): Promise<PgRulesRepository> {
    const repository = new PgRulesRepository(db, options);
    await db.listen(CHANNEL, (payload) => repository.#noticed(payload));
    db.onResync(() => repository.#reload({ origin: '', all: true }));
    // In turn with the notifications that came meanwhile: what they read is not overwritten with older rows.
    await repository.#inTurn(() => repository.#loadSettings());
    return repository;
  }

  // ---- reads ----

  chat(chatKey: string): ChatSettings {
    return own(this.#chats, chatKey) ?? emptyChat();
  }

  /** Read from the database; the chat's rules share one destination object within the result. */
  async rulesOf(chatKey: string): Promise<WatchRule[]> {
    const { rows } = await this.#db.pool.query<{ id: string; rule: unknown }>(
      'SELECT id, rule FROM rules WHERE chat_key = $1 ORDER BY seq',
      [chatKey],
    );
    const checker = new RuleChecker({ shareTexts: false });
    const destinations = new SharedDestinations();
    return readable(rows.map((row) => this.#readable(checker, destinations, row.id, row.rule)));
  }

  /**
   * Read from the database a page at a time, no connection held between pages; the rules of one
   * chat share one destination object within a page (not across pages: a million rules' chats would
   * otherwise stay in memory until the last page). A rule committed while the pages are read may be
   * missed (its number was taken before an earlier page was read): its change is told to the
   * listeners as well.
   */
  async *allRules(): AsyncIterable<readonly WatchRule[]> {
    const checker = new RuleChecker({ shareTexts: false });
    for (let after = '0'; ; ) {
      const destinations = new SharedDestinations();
      const { rows } = await this.#db.pool.query<{ seq: string; id: string; rule: unknown }>(
        'SELECT seq, id, rule FROM rules WHERE seq > $1 ORDER BY seq LIMIT $2',
        [after, this.#rulesPerPage],
      );
      const last = rows.at(-1);
      if (!last) return;
      yield readable(rows.map((row) => this.#readable(checker, destinations, row.id, row.rule)));
      if (rows.length < this.#rulesPerPage) return;
      after = last.seq;
    }
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

  onRulesChanged(listener: (change: RulesChange) => void): void {
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
      assertValidChat(chatKey, settings);
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
        return { chats: [...after.keys()] };
      },
      () => {
        for (const [chatKey, previous] of before) {
          if (previous) this.#chats[chatKey] = previous;
          else delete this.#chats[chatKey];
        }
      },
    );
  }

  /** Counts and adds under a lock on the chat, so that processes adding to one chat together keep its limit. */
  async addRule(rule: Omit<WatchRule, 'id'>, limit: number): Promise<WatchRule | undefined> {
    const destination: Destination = { platform: rule.destination.platform, chatId: rule.destination.chatId };
    const chatKey = destinationKey(destination);
    let stored: WatchRule | undefined;
    await this.#write(async (sql) => {
      await sql('SELECT pg_advisory_xact_lock($1, hashtext($2))', [RULES_LOCK_SPACE, chatKey]);
      const counted = await sql<{ n: number }>('SELECT count(*)::int AS n FROM rules WHERE chat_key = $1', [chatKey]);
      if ((counted.rows[0]?.n ?? 0) >= limit) return {};
      const numbered = await sql<{ n: string }>(`SELECT nextval('rule_numbers') AS n`);
      stored = { ...rule, id: `r${numbered.rows[0]?.n}`, destination };
      assertValidRule(stored);
      await sql('INSERT INTO rules (id, chat_key, rule) VALUES ($1, $2, $3)', [
        stored.id,
        chatKey,
        JSON.stringify(stored),
      ]);
      return { rules: [{ id: stored.id, rule: stored }] };
    });
    return stored;
  }

  /** Reads the rule locked for the transaction, so that `change` (called once) sees the latest one. */
  async updateRule(id: string, change: (rule: WatchRule) => WatchRule | null): Promise<boolean> {
    let found = false;
    await this.#write(async (sql) => {
      const { rows } = await sql<{ rule: unknown }>('SELECT rule FROM rules WHERE id = $1 FOR UPDATE', [id]);
      const row = rows[0];
      if (!row) return {};
      found = true;
      const current = this.#checked(new RuleChecker({ shareTexts: false }), new SharedDestinations(), id, row.rule);
      let next: WatchRule | null;
      try {
        next = change(current);
      } catch (error) {
        throw new ChangeFailed(error);
      }
      if (next === null) {
        await sql('DELETE FROM rules WHERE id = $1', [id]);
        return { rules: [{ id, rule: undefined }] };
      }
      const destination: Destination = { platform: next.destination.platform, chatId: next.destination.chatId };
      const changed: WatchRule = { ...next, id, destination };
      assertValidRule(changed);
      await sql('UPDATE rules SET rule = $2, chat_key = $3 WHERE id = $1', [
        id,
        JSON.stringify(changed),
        destinationKey(destination),
      ]);
      return { rules: [{ id, rule: changed }] };
    });
    return found;
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
        return { buttons: [hash] };
      },
      () => {
        delete this.#buttons[hash];
        if (existing) this.#buttons[hash] = existing;
      },
    );
    this.#pruneButtons();
  }

  // ---- internals ----

  /**
   * Runs `work` in one transaction with the notification of what it changed (none when it changed
   * nothing), then tells this process's listeners. On failure runs `undo` and rejects with
   * {@link StoreWriteError}, or with the error of an invalid row or of the caller's change.
   */
  async #write(work: (sql: Sql) => Promise<Written>, undo: () => void = () => {}): Promise<void> {
    const run = this.#db.inTransaction(async (client) => {
      const written = await work(<R extends pg.QueryResultRow>(query: string, values?: unknown[]) =>
        client.query<R>(query, values),
      );
      const notice = merge(this.#origin, written);
      const changed = !isEmpty(notice);
      if (changed) await client.query('SELECT pg_notify($1, $2)', [CHANNEL, JSON.stringify(notice)]);
      return { written, changed };
    });
    this.#pending.add(run);
    let written: Written;
    try {
      const done = await run;
      written = done.written;
      if (done.changed) this.#writes += 1;
    } catch (cause) {
      undo();
      if (cause instanceof ChangeFailed) throw cause.error;
      if (cause instanceof StoreFileError || cause instanceof InvalidChangeError) throw cause;
      throw new StoreWriteError(this.#db.where, cause);
    } finally {
      this.#pending.delete(run);
    }
    await this.#inTurn(async () => {
      if (written.rules?.length) this.#tellRules({ rules: written.rules });
      this.#tellChats(written.chats ?? []);
    });
  }

  /** Runs `step` after the listeners were told of everything before it. */
  #inTurn(step: () => Promise<void>): Promise<void> {
    const done = this.#telling.then(step);
    this.#telling = done.catch(() => {});
    return done;
  }

  #tellRules(change: RulesChange): void {
    for (const listener of this.#ruleListeners) {
      try {
        listener(change);
      } catch (error) {
        this.#logger.error({ err: error }, 'a listener of rule changes failed');
      }
    }
  }

  #tellChats(chatKeys: readonly string[]): void {
    for (const chatKey of chatKeys) {
      for (const listener of this.#chatListeners) {
        try {
          listener(chatKey);
        } catch (error) {
          this.#logger.error({ err: error, chat: chatKey }, 'a listener of chat changes failed');
        }
      }
    }
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

  /** Reads again what another process changed (everything, for `all`) and tells the listeners. */
  #reload(notice: StateNotice): void {
    this.#inTurn(async () => {
      if (notice.all) {
        await this.#loadSettings();
        if (notice.rulesChanged !== false) this.#tellRules({ all: true });
        this.#tellChats(Object.keys(this.#chats));
        return;
      }
      const rules = await this.#loadSome(notice);
      if (rules) this.#tellRules(rules);
      this.#tellChats(notice.chats ?? []);
    }).catch((error: unknown) => {
      this.#logger.error({ err: error }, 'could not read changes made by another process; trying again');
      setTimeout(() => this.#reload(notice), 1_000).unref();
    });
  }

  /** Reads every chat's settings and every button. */
  async #loadSettings(): Promise<void> {
    const [chats, buttons] = await Promise.all([
      this.#db.pool.query<{ chat_key: string; settings: unknown }>('SELECT chat_key, settings FROM chats'),
      this.#db.pool.query<{ hash: string; action: string; created_at: Date }>(
        'SELECT hash, action, created_at FROM buttons ORDER BY created_at',
      ),
    ]);
    const state = this.#validated(
      chats.rows.map((r) => [r.chat_key, r.settings]),
      buttons.rows.map((r) => [r.hash, { action: r.action, createdAt: r.created_at.toISOString() }]),
    );
    this.#chats = state.chats;
    this.#buttons = state.buttons;
  }

  /** Reads the chats and buttons the notice names; the rules it names, as they are now. */
  async #loadSome(notice: StateNotice): Promise<RulesChange | undefined> {
    const pool = this.#db.pool;
    let rules: RulesChange | undefined;
    if (notice.rules?.length) {
      const { rows } = await pool.query<{ id: string; rule: unknown }>(
        'SELECT id, rule FROM rules WHERE id = ANY($1)',
        [notice.rules],
      );
      const checker = new RuleChecker({ shareTexts: false });
      const destinations = new SharedDestinations();
      // A row that no longer reads as a rule is told as gone: the rule index drops what it held of it.
      const found = new Map(rows.map((row) => [row.id, this.#readable(checker, destinations, row.id, row.rule)]));
      rules = { rules: notice.rules.map((id) => ({ id, rule: found.get(id) })) };
    }
    if (notice.chats?.length) {
      const { rows } = await pool.query<{ chat_key: string; settings: unknown }>(
        'SELECT chat_key, settings FROM chats WHERE chat_key = ANY($1)',
        [notice.chats],
      );
      const state = this.#validated(
        rows.map((r) => [r.chat_key, r.settings]),
        [],
      );
      for (const key of notice.chats) {
        const settings = own(state.chats, key);
        if (settings) this.#chats[key] = settings;
        else delete this.#chats[key];
      }
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
    return rules;
  }

  /** A stored rule, checked (a bad one is named with its field), its texts shared, its chat's destination. */
  #checked(checker: RuleChecker, destinations: SharedDestinations, id: string, raw: unknown): WatchRule {
    const checked = checker.check(raw, 0);
    if (!checked.ok) {
      throw new StoreFileError(this.#db.where, `holds an invalid rule ${id} (${ruleProblems(checked.problems)})`);
    }
    const rule = checked.rule as WatchRule;
    rule.destination = destinations.share(rule.destination);
    return rule;
  }

  /** {@link #checked}, or undefined for a row that is no rule: skipped, and named once (see {@link #unreadable}). */
  #readable(checker: RuleChecker, destinations: SharedDestinations, id: string, raw: unknown): WatchRule | undefined {
    const checked = checker.check(raw, 0);
    if (!checked.ok) {
      this.#unreadable('rules', id, ruleProblems(checked.problems));
      return undefined;
    }
    const rule = checked.rule as WatchRule;
    rule.destination = destinations.share(rule.destination);
    return rule;
  }

  /**
   * Names a row that is skipped because it does not read: a warning per row and problem, once per
   * process (a chat's rules are read on every /watch list; the row is the same each time).
   */
  #unreadable(table: string, key: string, problems: string): void {
    const named = `${table}\u0000${key}\u0000${problems}`;
    if (this.#named.has(named)) return;
    if (this.#named.size >= MAX_NAMED_ROWS) this.#named.clear();
    this.#named.add(named);
    this.#logger.warn(
      { database: this.#db.where, table, key, problems },
      `skipped an unreadable ${table === 'rules' ? 'rule' : 'chat settings'} row: ${key} (${problems}); fix or delete it`,
    );
  }

  /**
   * Rows checked as the file store checks its file, one by one: a chat whose settings do not read is
   * skipped and named, the others are kept.
   */
  #validated(
    chats: Array<[string, unknown]>,
    buttons: Array<[string, StoredButton]>,
  ): { chats: Dict<ChatSettings>; buttons: Dict<StoredButton> } {
    const good: Array<[string, unknown]> = [];
    for (const [chatKey, settings] of chats) {
      const one = validateState({ version: 3, chats: { [chatKey]: settings }, rules: [] });
      if (one.ok) good.push([chatKey, settings]);
      else this.#unreadable('chats', chatKey, one.problems.join('; '));
    }
    const checked = validateState({ version: 3, chats: Object.fromEntries(good), rules: [], nextRuleNumber: 1 });
    if (!checked.ok)
      throw new StoreFileError(this.#db.where, `holds invalid settings (${checked.problems.join('; ')})`);
    const stored = validateButtons(Object.fromEntries(buttons));
    if (!stored.ok) throw new StoreFileError(this.#db.where, `holds invalid buttons (${stored.problems.join('; ')})`);
    return { chats: checked.state.chats as Dict<ChatSettings>, buttons: stored.buttons };
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

/**
 * One destination object per chat for the rules of one result, kept no longer than the result (the
 * rules read by another call have their own). Keyed by the chat id the object holds: no key is built.
 */
class SharedDestinations {
  readonly #byPlatform = new Map<string, Map<string, Destination>>();

  share(destination: Destination): Destination {
    let chats = this.#byPlatform.get(destination.platform);
    if (!chats) {
      chats = new Map();
      this.#byPlatform.set(destination.platform, chats);
    }
    let shared = chats.get(destination.chatId);
    if (!shared) {
      shared = { platform: destination.platform, chatId: destination.chatId };
      chats.set(shared.chatId, shared);
    }
    return shared;
  }
}

/** The rules of rows that read as rules. */
function readable(rules: Array<WatchRule | undefined>): WatchRule[] {
  return rules.filter((rule): rule is WatchRule => rule !== undefined);
}

/** A rule's problems with the paths of its fields (they were checked as `rules[0]`). */
function ruleProblems(problems: SchemaProblems): string {
  return problems
    .map((problem) => problem.replace(/^rules\[0\](?:\.|(?=:))/, '').replace(/^:/, 'the rule:'))
    .join('; ');
}

/**
 * The notice as sent: a change naming too many keys for one notification asks for a full reload,
 * saying whether rules were among them (so that the others read every rule again only then).
 */
function merge(origin: string, written: Written): StateNotice {
  const out: StateNotice = { origin };
  if (written.chats?.length) out.chats = written.chats;
  if (written.rules?.length) out.rules = written.rules.map((r) => r.id);
  if (written.buttons?.length) out.buttons = written.buttons;
  const total = (out.chats?.length ?? 0) + (out.rules?.length ?? 0) + (out.buttons?.length ?? 0);
  return total > MAX_NOTIFIED_KEYS ? { origin, all: true, rulesChanged: (out.rules?.length ?? 0) > 0 } : out;
}

function isEmpty(notice: StateNotice): boolean {
  return !notice.all && !notice.chats && !notice.rules && !notice.buttons;
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
