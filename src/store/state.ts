import { readFile, stat } from 'node:fs/promises';
import { Low } from 'lowdb';
import { JSONFile } from 'lowdb/node';
import { type Destination, destinationKey, type WatchRule } from '../alerts/types.ts';

/** A collection pinned to a network. */
export interface CollectionKey {
  network: string;
  address: string;
  /** Display name, remembered when it was set. */
  name?: string;
}

/** Market figures of a collection at the last digest, to show the change since. */
export interface MarketSnapshot {
  floorUsd?: number;
  bestOfferUsd?: number;
  listings?: number;
}

/** A chat's daily digest (`/digest set`). */
export interface DigestSettings {
  hour: number;
  minute: number;
  /** IANA name, validated when set. */
  timeZone: string;
  collections: CollectionKey[];
  /** Days the analytics cover. */
  days: number;
  /** When the schedule was set: a digest due before that is not "missed". */
  setAt: string;
  /** Due time of the last digest posted (never posted twice for the same due time). */
  lastPostedFor?: string;
  lastMarket?: Record<string, MarketSnapshot>;
}

/** What a chat has set with commands. */
export interface ChatSettings {
  /** Default network for commands in this chat. */
  network?: string;
  /** Default collection for commands that take one. */
  collection?: CollectionKey;
  /** Short names for collections (`/alias`), keyed by the lower-cased alias. */
  aliases: Record<string, CollectionKey & { alias: string }>;
  digest?: DigestSettings;
}

export interface StoredButton {
  action: string;
  createdAt: string;
}

/** The persisted state, version 1. */
export interface StateV1 {
  version: 1;
  chats: Record<string, ChatSettings>;
  /** Long button actions stored by hash (platforms limit button payloads). */
  buttons: Record<string, StoredButton>;
}

/** Version 2 adds watch rules. */
export interface StateV2 extends Omit<StateV1, 'version'> {
  version: 2;
  rules: WatchRule[];
  /** Next number for rule ids (`r1`, `r2`, ...); ids are never reused. */
  nextRuleNumber: number;
}

export type State = StateV2;
export const STATE_VERSION = 2;

const emptyState = (): State => ({ version: 2, chats: {}, buttons: {}, rules: [], nextRuleNumber: 1 });

/** The data file cannot be used; the bot must not start (and must not overwrite it). */
export class StoreFileError extends Error {
  override name = 'StoreFileError';
  readonly file: string;
  constructor(file: string, problem: string, options?: { cause?: unknown }) {
    super(`${file}: ${problem}. The file was left untouched; fix or move it, then start again.`, options);
    this.file = file;
  }
}

/**
 * A change could not be written (disk full, file size limit, read-only disk). The change was undone
 * in memory, and the file keeps its previous content (writes go to a temporary file, then rename).
 */
export class StoreWriteError extends Error {
  override name = 'StoreWriteError';
  readonly file: string;
  /** The system error code (ENOSPC, EFBIG, EACCES, ...), when there is one. */
  readonly code: string | undefined;
  constructor(file: string, cause: unknown) {
    const code = (cause as { code?: unknown } | null)?.code;
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(`${file}: a change could not be saved (${reason}); the file keeps its previous content`, { cause });
    this.file = file;
    this.code = typeof code === 'string' ? code : undefined;
  }
}

/**
 * Migrations from each older version to the next. A file of a newer version than this code knows
 * is refused rather than rewritten.
 */
const MIGRATIONS: Record<number, (data: Record<string, unknown>) => Record<string, unknown>> = {
  1: (v1) => ({ ...v1, version: 2, rules: [], nextRuleNumber: 1 }),
};

function migrate(file: string, data: unknown): State {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw new StoreFileError(file, 'does not hold a JSON object');
  }
  let current = data as Record<string, unknown>;
  const found = current.version;
  if (typeof found !== 'number' || !Number.isInteger(found) || found < 1) {
    throw new StoreFileError(file, `has no valid "version" (found ${JSON.stringify(found)})`);
  }
  let version: number = found;
  if (version > STATE_VERSION) {
    throw new StoreFileError(
      file,
      `was written by a newer Floorwatch (version ${version}; this one reads up to ${STATE_VERSION})`,
    );
  }
  while (version < STATE_VERSION) {
    const step = MIGRATIONS[version];
    if (!step) throw new StoreFileError(file, `has version ${version}, which cannot be migrated`);
    current = step(current);
    version = Number(current.version);
  }
  const state = current as unknown as State;
  if (typeof state.chats !== 'object' || state.chats === null) state.chats = {};
  if (typeof state.buttons !== 'object' || state.buttons === null) state.buttons = {};
  if (!Array.isArray(state.rules)) throw new StoreFileError(file, '"rules" is not a list');
  if (typeof state.nextRuleNumber !== 'number') {
    state.nextRuleNumber = state.rules.reduce((n, r) => Math.max(n, Number(r.id.slice(1)) + 1 || 1), 1);
  }
  return state;
}

/**
 * The bot's configuration state (chat settings, aliases, stored buttons) in one JSON file,
 * written atomically by lowdb. A file that cannot be read or parsed is never overwritten:
 * {@link StateStore.open} throws {@link StoreFileError} naming the file and the problem.
 */
export class StateStore {
  readonly file: string;
  readonly #db: Low<State>;
  readonly #ruleListeners: Array<() => void> = [];
  readonly #chatListeners: Array<(chatKey: string) => void> = [];
  /** Changes run one at a time, so that a failed write can be undone without undoing another's. */
  #queue: Promise<unknown> = Promise.resolve();

  /** One destination object per chat, shared by its rules (see {@link StateStore.rules}). */
  readonly #destinations = new Map<string, Destination>();

  private constructor(file: string, db: Low<State>) {
    this.file = file;
    this.#db = db;
    this.#shareDestinations();
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

  /** Only for rules nobody else holds yet (just read from the file, or restored after a failed write). */
  #shareDestinations(): void {
    for (const rule of this.#db.data.rules) rule.destination = this.#sharedDestination(rule.destination);
  }

  static async open(file: string): Promise<StateStore> {
    const db = new Low<State>(new JSONFile<State>(file), emptyState());
    let exists = true;
    try {
      await stat(file);
    } catch {
      exists = false;
    }
    if (exists) {
      let text: string;
      try {
        text = await readFile(file, 'utf8');
      } catch (cause) {
        throw new StoreFileError(file, `cannot be read (${(cause as Error).message})`, { cause });
      }
      if (text.trim() === '') throw new StoreFileError(file, 'is empty (a truncated write?)');
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch (cause) {
        throw new StoreFileError(file, `is not valid JSON (${(cause as Error).message})`, { cause });
      }
      db.data = migrate(file, parsed);
    } else {
      await db.write();
    }
    return new StateStore(file, db);
  }

  get data(): Readonly<State> {
    return this.#db.data;
  }

  /** The settings of a chat (a fresh default object when it has none yet). */
  chat(chatKey: string): ChatSettings {
    return this.#db.data.chats[chatKey] ?? { aliases: {} };
  }

  /** Changes a chat's settings and writes the file. */
  async updateChat(chatKey: string, change: (settings: ChatSettings) => void): Promise<ChatSettings> {
    const settings = await this.#save(() => {
      const settings = this.#db.data.chats[chatKey] ?? { aliases: {} };
      change(settings);
      this.#db.data.chats[chatKey] = settings;
      return settings;
    });
    for (const listener of this.#chatListeners) listener(chatKey);
    return settings;
  }

  /**
   * All watch rules, in creation order. The objects are never changed in place (a change replaces
   * the rule), and the rules of one chat share one destination object, so that matching can group
   * a chat's rules without building keys.
   */
  get rules(): readonly WatchRule[] {
    return this.#db.data.rules;
  }

  /** Adds a rule, giving it the next id; `limit` bounds the rules of one destination. */
  async addRule(rule: Omit<WatchRule, 'id'>, limit: number): Promise<WatchRule | undefined> {
    const stored = await this.#save(() => {
      const same = this.#db.data.rules.filter(
        (r) => r.destination.platform === rule.destination.platform && r.destination.chatId === rule.destination.chatId,
      );
      if (same.length >= limit) return undefined;
      const stored: WatchRule = {
        ...rule,
        id: `r${this.#db.data.nextRuleNumber}`,
        destination: this.#sharedDestination(rule.destination),
      };
      this.#db.data.nextRuleNumber += 1;
      this.#db.data.rules.push(stored);
      return stored;
    });
    if (!stored) return undefined;
    for (const listener of this.#ruleListeners) listener();
    return stored;
  }

  /** Changes or removes (`change` returns null) a rule; false when there is no such rule. */
  async updateRule(id: string, change: (rule: WatchRule) => WatchRule | null): Promise<boolean> {
    const found = await this.#save(() => {
      const index = this.#db.data.rules.findIndex((r) => r.id === id);
      const current = this.#db.data.rules[index];
      if (!current) return false;
      const next = change({ ...current });
      if (next === null) this.#db.data.rules.splice(index, 1);
      else this.#db.data.rules[index] = { ...next, destination: this.#sharedDestination(next.destination) };
      return true;
    });
    if (!found) return false;
    for (const listener of this.#ruleListeners) listener();
    return true;
  }

  /** Changes several chats' settings with one write of the file. */
  async updateChats(changes: ReadonlyArray<readonly [string, (settings: ChatSettings) => void]>): Promise<void> {
    if (changes.length === 0) return;
    await this.#save(() => {
      for (const [chatKey, change] of changes) {
        const settings = this.#db.data.chats[chatKey] ?? { aliases: {} };
        change(settings);
        this.#db.data.chats[chatKey] = settings;
      }
    });
    for (const [chatKey] of changes) for (const listener of this.#chatListeners) listener(chatKey);
  }

  /** Called after every change of a chat's settings (digest schedules are rebuilt). */
  onChatsChanged(listener: (chatKey: string) => void): void {
    this.#chatListeners.push(listener);
  }

  /** The chats that have a digest, with it. */
  digests(): Array<[string, DigestSettings]> {
    return Object.entries(this.#db.data.chats).flatMap(([key, chat]) =>
      chat.digest ? [[key, chat.digest] as [string, DigestSettings]] : [],
    );
  }

  /** Called after every change of the rules (the alert planner re-plans). */
  onRulesChanged(listener: () => void): void {
    this.#ruleListeners.push(listener);
  }

  button(hash: string): StoredButton | undefined {
    return this.#db.data.buttons[hash];
  }

  async saveButton(hash: string, action: string, now: Date): Promise<void> {
    if (this.#db.data.buttons[hash]?.action === action) return;
    await this.#save(() => {
      this.#db.data.buttons[hash] = { action, createdAt: now.toISOString() };
    });
  }

  /**
   * Applies `change` to the data and writes the file, after the changes before it. When the write
   * fails, the data is put back as it was and {@link StoreWriteError} is thrown: the bot must not
   * act on (nor later persist) a change the user was told failed.
   */
  #save<T>(change: () => T): Promise<T> {
    const run = async (): Promise<T> => {
      const before = structuredClone(this.#db.data);
      let result: T;
      try {
        result = change();
      } catch (error) {
        this.#db.data = before;
        this.#shareDestinations();
        throw error;
      }
      try {
        await this.#db.write();
      } catch (cause) {
        this.#db.data = before;
        this.#shareDestinations();
        throw new StoreWriteError(this.file, cause);
      }
      return result;
    };
    const next = this.#queue.then(run, run);
    this.#queue = next.catch(() => undefined);
    return next;
  }
}
