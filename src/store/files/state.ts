import { type FileHandle, open, readFile, rename } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { type Adapter, Low } from 'lowdb';
import type { Logger } from 'pino';
import type { WriteFence } from '../../core/lease.ts';
import type { RulesChange, RulesRepository } from '../../core/ports.ts';
import type { ChatSettings, DigestSettings, StoredButton } from '../../core/settings.ts';
import { type Destination, destinationKey, type WatchRule } from '../../core/types.ts';
import { createLogger } from '../../logger.ts';
import { type Dict, dict, own } from '../../records.ts';
import { ButtonFile, type ButtonFileOptions } from './buttons.ts';

export { BUTTON_TTL_MS, MAX_STORED_BUTTONS } from '../schema.ts';

import { StoreFileError, StoreWriteError } from '../../core/store-errors.ts';
import {
  assertValidChat,
  assertValidRule,
  type CheckedRules,
  RuleChecker,
  validateButtons,
  validateState,
} from '../schema.ts';
import { syncDirectory } from './sync-directory.ts';

export { StoreFileError, StoreWriteError } from '../../core/store-errors.ts';

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

/**
 * Version 3 moves the button actions to a file of their own (see {@link ButtonFile}): storing one
 * no longer rewrites every rule.
 */
export interface StateV3 extends Omit<StateV2, 'version' | 'buttons'> {
  version: 3;
}

export type State = StateV3;
export const STATE_VERSION = 3;
/** The first version whose rules are as this one's: they are checked as the file is read (see readState). */
const RULES_SINCE_VERSION = 2;

/**
 * Changes made within this time of each other are written together: one write of the file for
 * all of them, each confirmed once that write is durable.
 */
export const WRITE_COALESCE_MS = 25;

const emptyState = (): State => ({ version: 3, chats: dict(), rules: [], nextRuleNumber: 1 });
const emptyChat = (): ChatSettings => ({ aliases: dict() });

/** The buttons file beside a state file: `state.json` keeps its buttons in `state.buttons.jsonl`. */
export function buttonsFileOf(stateFile: string): string {
  return join(dirname(stateFile), `${basename(stateFile, '.json')}.buttons.jsonl`);
}

/**
 * Migrations from each older version to the next. A file of a newer version than this code knows
 * is refused rather than rewritten.
 */
const MIGRATIONS: Record<number, (data: Record<string, unknown>) => Record<string, unknown>> = {
  1: (v1) => ({ ...v1, version: 2, rules: [], nextRuleNumber: 1 }),
  // The buttons go to the buttons file (see migrate).
  2: ({ buttons: _, ...v2 }) => ({ ...v2, version: 3 }),
};

const rulesAreCurrent = (version: unknown): boolean =>
  typeof version === 'number' && version >= RULES_SINCE_VERSION && version <= STATE_VERSION;

/** A state file's content as this version holds it, and the buttons an older file held in it. */
interface Migrated {
  state: State;
  /** Set when the file is of an older version (empty when it held no buttons). */
  carried?: Array<[string, StoredButton]>;
}

function migrate(file: string, data: unknown, checkedRules?: CheckedRules): Migrated {
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
  const buttons = current.buttons;
  while (version < STATE_VERSION) {
    const step = own(MIGRATIONS, String(version));
    if (!step) throw new StoreFileError(file, `has version ${version}, which cannot be migrated`);
    current = step(current);
    version = Number(current.version);
  }
  // Rules checked while the file was read belong to a file whose rules are as this version's (see readState).
  const checked = validateState(current, rulesAreCurrent(found) ? checkedRules : undefined);
  if (!checked.ok) throw new StoreFileError(file, `has invalid content (${checked.problems.join('; ')})`);
  const state: State = { ...checked.state, nextRuleNumber: checked.state.nextRuleNumber ?? 1 };
  // Ids are never reused, even when the counter was lost.
  for (const rule of state.rules) state.nextRuleNumber = Math.max(state.nextRuleNumber, Number(rule.id.slice(1)) + 1);
  if (found === STATE_VERSION) return { state };
  const carried = validateButtons(buttons);
  if (!carried.ok) throw new StoreFileError(file, `has invalid content (${carried.problems.join('; ')})`);
  return { state, carried: Object.entries(carried.buttons) };
}

/** Rules turned into text and written at a time: the state file is never held whole in memory. */
const RULES_PER_WRITE = 1_000;
/** Rules in a page of {@link StateStore.allRules}. */
const RULES_PER_PAGE = 20_000;

/**
 * lowdb's storage port for the state file: the state is taken when the write starts (the rules list
 * copied, the rest turned into text; rules are never changed in place, so that the copy holds them
 * as they are now), written to a temporary file a thousand rules at a time, synced, and renamed over
 * the file, so the file is always one whole state and a confirmed change survives a power cut.
 */
class DurableJsonFile implements Adapter<State> {
  readonly #file: string;
  readonly #temp: string;
  readonly #fence: WriteFence | undefined;

  constructor(file: string, fence?: WriteFence) {
    this.#file = file;
    this.#temp = join(dirname(file), `.${basename(file)}.tmp`);
    this.#fence = fence;
  }

  async read(): Promise<State | null> {
    return null;
  }

  async write(data: State): Promise<void> {
    const pieces = snapshot(data);
    const handle = await open(this.#temp, 'w');
    try {
      // writeFile on a handle writes at the current position, all of it (write alone may stop short).
      for (const piece of pieces) await handle.writeFile(piece(), 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    const retaking = this.#fence?.();
    if (retaking) await retaking;
    await rename(this.#temp, this.#file);
    await syncDirectory(dirname(this.#file));
  }
}

/**
 * The JSON text of `data` as JSON.stringify writes it, in pieces made on demand. Everything but the
 * rules is turned into text now; the rules list is copied now and turned into text piece by piece.
 */
function snapshot(data: State): Array<() => string> {
  const pieces: Array<() => string> = [];
  let head = '{';
  for (const [key, value] of Object.entries(data)) {
    if (value === undefined) continue;
    const name = `${head === '{' ? '' : ','}${JSON.stringify(key)}:`;
    if (key !== 'rules' || !Array.isArray(value)) {
      head += name + JSON.stringify(value);
      continue;
    }
    const rules: readonly WatchRule[] = value.slice();
    const before = `${head}${name}[`;
    pieces.push(() => before);
    for (let at = 0; at < rules.length; at += RULES_PER_WRITE) {
      pieces.push(() => {
        let text = at === 0 ? '' : ',';
        const end = Math.min(rules.length, at + RULES_PER_WRITE);
        for (let i = at; i < end; i++) text += (i === at ? '' : ',') + JSON.stringify(rules[i]);
        return text;
      });
    }
    head = ']';
  }
  const tail = `${head}}`;
  pieces.push(() => tail);
  return pieces;
}

function sharedDestination(shared: Map<string, Destination>, destination: Destination): Destination {
  const key = destinationKey(destination);
  let known = shared.get(key);
  if (!known) {
    known = { platform: destination.platform, chatId: destination.chatId };
    shared.set(key, known);
  }
  return known;
}

/** A change applied in memory and waiting for the write that makes it durable. */
interface PendingChange {
  /** Puts the data back as it was before this change. */
  undo: () => void;
  resolve: () => void;
  reject: (error: unknown) => void;
  chats: readonly string[];
  /** Ids of the rules changed. */
  rules: readonly string[];
}

export interface StateStoreOptions {
  /** Changes within this time share one write (default {@link WRITE_COALESCE_MS}). */
  coalesceMs?: number;
  /** Where the button actions are kept (default {@link buttonsFileOf} the state file). */
  buttonsFile?: string;
  /** How long stored button actions work (default {@link BUTTON_TTL_MS}). */
  buttonTtlMs?: number;
  /** Most stored button actions (default {@link MAX_STORED_BUTTONS}). */
  maxButtons?: number;
  now?: () => Date;
  /**
   * Asked right before the file is replaced and before each write of the buttons file (the write
   * waits while it takes a late lease again): when it fails (LeaseLostError: this process no longer
   * holds the data directory), the write fails as any failed write does.
   */
  fence?: WriteFence;
  /**
   * Where a listener's failure is logged (the store goes on, and so do the other listeners); by
   * default warnings and errors on stderr.
   */
  logger?: Logger;
}

/**
 * The bot's configuration state (chat settings, aliases, watch rules, digests) in one JSON file,
 * validated when read and written atomically through lowdb; and the long button actions, which
 * come and go with every answer that shows one, in a small append-only file beside it (see
 * {@link ButtonFile}). A file that cannot be read, parsed or validated is never overwritten:
 * {@link StateStore.open} throws {@link StoreFileError} naming the file and the field.
 *
 * Changes apply in memory at once and are written together: one write for all the changes made
 * while the previous one ran (or within {@link WRITE_COALESCE_MS}), so that many people changing
 * rules at once do not each rewrite the whole file. A change's promise settles once the write that
 * holds it is durable; when that write fails, every change not yet durable is undone and rejected
 * with {@link StoreWriteError}. Listeners hear of changes once they are durable; one that throws is
 * logged, and the others still hear.
 *
 * Keys that come from users (aliases) live in prototype-less records: see {@link Dict}.
 */
export class StateStore implements RulesRepository {
  readonly file: string;
  readonly #db: Low<State>;
  readonly #buttons: ButtonFile;
  readonly #ruleListeners: Array<(change: RulesChange) => void> = [];
  readonly #chatListeners: Array<(chatKey: string) => void> = [];
  readonly #coalesceMs: number;
  readonly #logger: Logger;

  /** Changes applied since the last write started. */
  #waiting: PendingChange[] = [];
  /** Changes in the write that is running. */
  #writing: PendingChange[] | undefined;
  #timer: NodeJS.Timeout | undefined;
  #writes = 0;
  #idle: Promise<void> = Promise.resolve();
  #settleIdle: (() => void) | undefined;

  /** One destination object per chat, shared by its rules (see {@link StateStore.rules}). */
  readonly #destinations: Map<string, Destination>;

  private constructor(
    file: string,
    db: Low<State>,
    buttons: ButtonFile,
    options: StateStoreOptions,
    destinations = new Map<string, Destination>(),
  ) {
    this.file = file;
    this.#destinations = destinations;
    this.#db = db;
    this.#buttons = buttons;
    this.#coalesceMs = options.coalesceMs ?? WRITE_COALESCE_MS;
    this.#logger = options.logger ?? createLogger('warn');
    for (const rule of db.data.rules) rule.destination = this.#sharedDestination(rule.destination);
  }

  #sharedDestination(destination: Destination): Destination {
    return sharedDestination(this.#destinations, destination);
  }

  /**
   * Opens the state file and its buttons file, creating them when missing. A state file of an
   * older version is migrated and written back as this version before this resolves (its buttons
   * moved into the buttons file first, so that a crash between the two loses none).
   */
  static async open(file: string, options: StateStoreOptions = {}): Promise<StateStore> {
    const db = new Low<State>(new DurableJsonFile(file, options.fence), emptyState());
    const loaded = await loadState(file);
    const buttons = await ButtonFile.open(
      options.buttonsFile ?? buttonsFileOf(file),
      buttonOptions(options),
      loaded?.carried,
    );
    if (!loaded) {
      try {
        await db.write();
      } catch (cause) {
        throw new StoreFileError(file, `cannot be created (${(cause as Error).message})`, { cause });
      }
      return new StateStore(file, db, buttons, options);
    }
    db.data = loaded.state;
    if (loaded.carried) {
      try {
        await db.write();
      } catch (cause) {
        throw new StoreFileError(file, `cannot be migrated (${(cause as Error).message})`, { cause });
      }
    }
    return new StateStore(file, db, buttons, options, loaded.destinations);
  }

  /**
   * The state and the button actions that {@link StateStore.open} would open, read and migrated in
   * memory only: nothing is written, whatever the version (for `npm run migrate-data`, which leaves
   * the files as they were). With no state file, the empty state that open would create.
   */
  static async read(
    file: string,
    options: StateStoreOptions = {},
  ): Promise<{ state: State; buttons: Array<[string, StoredButton]> }> {
    const loaded = await loadState(file);
    const buttonsFile = options.buttonsFile ?? buttonsFileOf(file);
    return {
      state: loaded?.state ?? emptyState(),
      buttons: await ButtonFile.read(buttonsFile, buttonOptions(options), loaded?.carried),
    };
  }

  get data(): Readonly<State> {
    return this.#db.data;
  }

  /** The settings of a chat (a fresh default object when it has none yet). */
  chat(chatKey: string): ChatSettings {
    return own(this.#db.data.chats, chatKey) ?? emptyChat();
  }

  /** Changes a chat's settings and writes the file. */
  async updateChat(chatKey: string, change: (settings: ChatSettings) => void): Promise<ChatSettings> {
    const [settings] = await this.#change([chatKey], [], () => this.#changeChat(chatKey, change));
    return settings as ChatSettings;
  }

  /** Changes several chats' settings with one write of the file. */
  async updateChats(changes: ReadonlyArray<readonly [string, (settings: ChatSettings) => void]>): Promise<void> {
    if (changes.length === 0) return;
    await this.#change(
      changes.map(([chatKey]) => chatKey),
      [],
      () => {
        const undos: Array<() => void> = [];
        try {
          for (const [chatKey, change] of changes) undos.push(this.#changeChat(chatKey, change)[1]);
        } catch (error) {
          for (const undo of undos.reverse()) undo();
          throw error;
        }
        return [
          undefined,
          () => {
            for (const undo of undos.reverse()) undo();
          },
        ];
      },
    );
  }

  /** Works on a copy of the chat's settings, so that a change that throws leaves nothing behind. */
  #changeChat(chatKey: string, change: (settings: ChatSettings) => void): [ChatSettings, () => void] {
    const chats = this.#db.data.chats;
    const previous = own(chats, chatKey);
    const settings = previous ? copyChat(previous) : emptyChat();
    change(settings);
    assertValidChat(chatKey, settings);
    chats[chatKey] = settings;
    return [
      settings,
      () => {
        if (previous) chats[chatKey] = previous;
        else delete chats[chatKey];
      },
    ];
  }

  /**
   * All watch rules, in creation order (this adapter holds them all). The objects are never changed
   * in place (a change replaces the rule), and the rules of one chat share one destination object, so
   * that matching can group a chat's rules without building keys.
   */
  get rules(): readonly WatchRule[] {
    return this.#db.data.rules;
  }

  async rulesOf(chatKey: string): Promise<WatchRule[]> {
    const destination = this.#destinations.get(chatKey);
    return destination ? this.#db.data.rules.filter((r) => r.destination === destination) : [];
  }

  async *allRules(): AsyncIterable<readonly WatchRule[]> {
    const rules = this.#db.data.rules.slice();
    for (let at = 0; at < rules.length; at += RULES_PER_PAGE) yield rules.slice(at, at + RULES_PER_PAGE);
  }

  /** Adds a rule, giving it the next id; `limit` bounds the rules of one destination. */
  async addRule(rule: Omit<WatchRule, 'id'>, limit: number): Promise<WatchRule | undefined> {
    const data = this.#db.data;
    const destination = this.#sharedDestination(rule.destination);
    let same = 0;
    for (const r of data.rules) if (r.destination === destination) same++;
    if (same >= limit) return undefined;
    const id = `r${data.nextRuleNumber}`;
    const [stored] = await this.#change([], [id], () => {
      const stored: WatchRule = { ...rule, id, destination };
      assertValidRule(stored);
      data.nextRuleNumber += 1;
      data.rules.push(stored);
      return [
        stored,
        () => {
          const at = data.rules.lastIndexOf(stored);
          if (at >= 0) data.rules.splice(at, 1);
          data.nextRuleNumber -= 1;
        },
      ];
    });
    return stored;
  }

  /** Changes or removes (`change` returns null) a rule; false when there is no such rule. */
  async updateRule(id: string, change: (rule: WatchRule) => WatchRule | null): Promise<boolean> {
    const rules = this.#db.data.rules;
    const index = rules.findIndex((r) => r.id === id);
    const current = rules[index];
    if (!current) return false;
    const next = change({ ...current });
    await this.#change([], [id], () => {
      if (next === null) {
        rules.splice(index, 1);
        return [true, () => rules.splice(index, 0, current)];
      }
      assertValidRule(next);
      rules[index] = { ...next, destination: this.#sharedDestination(next.destination) };
      return [
        true,
        () => {
          rules[index] = current;
        },
      ];
    });
    return true;
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

  /** Called after every durable change of the rules, with the changed rules as they are now. */
  onRulesChanged(listener: (change: RulesChange) => void): void {
    this.#ruleListeners.push(listener);
  }

  /** A stored button action, unless it is unknown or has expired. */
  button(hash: string): StoredButton | undefined {
    return this.#buttons.button(hash);
  }

  /**
   * Stores a long button action under its hash, in the buttons file (the state file is not
   * written). Saving it again makes it the most recent (buttons are dropped oldest first, beyond
   * {@link MAX_STORED_BUTTONS} or after {@link BUTTON_TTL_MS}).
   */
  saveButton(hash: string, action: string, now: Date): Promise<void> {
    return this.#buttons.save(hash, action, now);
  }

  /** The stored button actions that still work, the least recently saved first. */
  storedButtons(): Array<[string, StoredButton]> {
    return this.#buttons.entries();
  }

  /** Writes of the file since it was opened, and changes waiting for one (for tests, benchmarks and metrics). */
  get writeStats(): { writes: number; pending: number } {
    return { writes: this.#writes, pending: this.#waiting.length + (this.#writing?.length ?? 0) };
  }

  /** Resolves once every change made so far, and every button saved, is written (or has failed). */
  async flush(): Promise<void> {
    while (this.#waiting.length > 0 || this.#writing) {
      if (!this.#writing) this.#startWrite();
      await this.#idle;
    }
    await this.#buttons.flush();
  }

  /**
   * Applies `apply` (which returns its result and how to undo it) to the data now, and settles
   * once the write that holds it is durable.
   */
  #change<T>(chats: readonly string[], rules: readonly string[], apply: () => [T, () => void]): Promise<[T]> {
    let result: T;
    let undo: () => void;
    try {
      [result, undo] = apply();
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise<[T]>((resolve, reject) => {
      this.#waiting.push({ undo, resolve: () => resolve([result]), reject, chats, rules });
      if (this.#waiting.length === 1 && !this.#writing) this.#idle = new Promise((r) => (this.#settleIdle = r));
      if (!this.#writing && !this.#timer) this.#timer = setTimeout(() => this.#startWrite(), this.#coalesceMs);
    });
  }

  #startWrite(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#writing || this.#waiting.length === 0) return;
    const batch = this.#waiting;
    this.#waiting = [];
    this.#writing = batch;
    // lowdb's adapter takes the JSON text before its first await: later changes wait for the next write.
    this.#db.write().then(
      () => this.#written(batch),
      (cause: unknown) => this.#failed(cause),
    );
  }

  #written(batch: PendingChange[]): void {
    this.#writing = undefined;
    this.#writes += 1;
    for (const change of batch) change.resolve();
    this.#notify(batch);
    this.#next();
  }

  /** Undoes every change not yet durable, newest first, and rejects them all. */
  #failed(cause: unknown): void {
    const lost = [...(this.#writing ?? []), ...this.#waiting];
    this.#writing = undefined;
    this.#waiting = [];
    for (const change of [...lost].reverse()) change.undo();
    const error = new StoreWriteError(this.file, cause);
    for (const change of lost) change.reject(error);
    this.#next();
  }

  #next(): void {
    if (this.#waiting.length > 0) {
      this.#startWrite();
      return;
    }
    this.#settleIdle?.();
    this.#settleIdle = undefined;
  }

  #notify(batch: readonly PendingChange[]): void {
    const ids = new Set(batch.flatMap((change) => change.rules));
    if (ids.size > 0) {
      const now = new Map<string, WatchRule>();
      for (const rule of this.#db.data.rules) if (ids.has(rule.id)) now.set(rule.id, rule);
      const change: RulesChange = { rules: [...ids].map((id) => ({ id, rule: now.get(id) })) };
      for (const listener of this.#ruleListeners) {
        // A listener's failure is its own: the change is durable, the others still hear of it, and
        // the writes go on (thrown here, it would end the process as an unhandled rejection).
        try {
          listener(change);
        } catch (error) {
          this.#logger.error({ err: error }, 'a listener of rule changes failed');
        }
      }
    }
    const chats = new Set(batch.flatMap((change) => change.chats));
    for (const chatKey of chats) {
      for (const listener of this.#chatListeners) {
        try {
          listener(chatKey);
        } catch (error) {
          this.#logger.error({ err: error, chat: chatKey }, 'a listener of chat changes failed');
        }
      }
    }
  }
}

function buttonOptions(options: StateStoreOptions): ButtonFileOptions {
  return {
    ...(options.buttonTtlMs === undefined ? {} : { ttlMs: options.buttonTtlMs }),
    ...(options.maxButtons === undefined ? {} : { max: options.maxButtons }),
    ...(options.now === undefined ? {} : { now: options.now }),
    ...(options.fence === undefined ? {} : { fence: options.fence }),
  };
}

/**
 * The state file read, checked and migrated in memory, with one destination object per chat;
 * undefined when there is none. Throws {@link StoreFileError} when it cannot be used.
 */
async function loadState(file: string): Promise<(Migrated & { destinations: Map<string, Destination> }) | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(file, 'r');
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new StoreFileError(file, `cannot be read (${(cause as Error).message})`, { cause });
  }
  const destinations = new Map<string, Destination>();
  let read: { top: Record<string, unknown>; rules: CheckedRules | undefined } | undefined;
  try {
    read = await readState(handle, (rule) => {
      rule.destination = sharedDestination(destinations, rule.destination);
    });
  } catch (cause) {
    throw new StoreFileError(file, `cannot be read (${(cause as Error).message})`, { cause });
  } finally {
    await handle.close();
  }
  if (read) return { ...migrate(file, read.top, read.rules), destinations };
  // Not a plain state file: read whole, so that the problem is told as JSON.parse tells it.
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
  text = '';
  return { ...migrate(file, parsed), destinations };
}

/** A chat's settings to change without touching the stored object. */
function copyChat(settings: ChatSettings): ChatSettings {
  const copy = structuredClone(settings);
  copy.aliases = dict(copy.aliases);
  if (copy.digest?.lastMarket) copy.digest.lastMarket = dict(copy.digest.lastMarket);
  return copy;
}

/** Bytes read from the state file at a time. */
const READ_CHUNK = 256 * 1024;

// What the reader expects next, outside a value.
const BEFORE_OBJECT = 0;
const BEFORE_KEY = 1;
const AFTER_KEY = 2;
const BEFORE_VALUE = 3;
const AFTER_VALUE = 4;
const BEFORE_ELEMENT = 5;
const AFTER_ELEMENT = 6;
const DONE = 7;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

const isJsonSpace = (byte: number): boolean => byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;

/** The file does not have the shape {@link readState} reads: read it whole instead. */
class NotPlain extends Error {}

/**
 * Reads a state file whose rules are as this version's (version 2 on) without ever holding its
 * whole text or its whole parsed tree: the file is read in chunks, each top-level value is parsed
 * on its own, and each watch rule is parsed, checked and kept (or dropped) as soon as its text is
 * complete, so that only the rules themselves stay. `onRule` sees each rule that passes.
 *
 * Returns the top-level object (with an empty `rules` list standing for the rules checked), or
 * undefined when the file is anything else (empty, not JSON, not an object, version 1,
 * a version given after the rules): the caller then reads it whole, as JSON.parse reads it, which
 * also tells the problem in JSON.parse's words. It throws only when the file cannot be read.
 */
async function readState(
  handle: FileHandle,
  onRule: (rule: WatchRule) => void,
): Promise<{ top: Record<string, unknown>; rules: CheckedRules | undefined } | undefined> {
  const reader = new StateReader(onRule);
  const chunk = Buffer.allocUnsafeSlow(READ_CHUNK);
  try {
    for (;;) {
      const { bytesRead } = await handle.read(chunk, 0, READ_CHUNK, null);
      if (bytesRead === 0) return reader.end();
      reader.feed(chunk, bytesRead);
    }
  } catch (error) {
    if (error instanceof NotPlain) return undefined;
    throw error;
  }
}

/**
 * The byte-level scanner behind {@link readState} (see there), fed the file's bytes in chunks of any
 * size; `feed` and `end` throw when the file is not one it reads. JSON's structural bytes are ASCII,
 * never part of a UTF-8 sequence, so that values are cut at byte boundaries that are also
 * character boundaries. Exported for tests.
 */
export class StateReader {
  readonly #onRule: (rule: WatchRule) => void;
  readonly #top: Record<string, unknown> = {};
  #mode = BEFORE_OBJECT;
  /** A comma was read: a key or an element must follow. */
  #required = false;
  #key = '';

  // The value being read: since `#start` in the current chunk, after `#pieces` from earlier chunks.
  #inValue = false;
  #pieces: Buffer[] = [];
  #start = 0;
  /** 0: a string, 1: an object or a list, 2: a number or a literal. */
  #kind = 0;
  #depth = 0;
  #inString = false;
  #escaped = false;

  // The rules list, while it is read.
  #inRules = false;
  #index = 0;
  #checker: RuleChecker | undefined;
  #checked: CheckedRules | undefined;
  #raw: unknown[] | undefined;

  constructor(onRule: (rule: WatchRule) => void) {
    this.#onRule = onRule;
  }

  feed(chunk: Buffer, length: number): void {
    let i = 0;
    this.#start = 0;
    while (i < length) {
      if (this.#inValue) {
        i = this.#scanValue(chunk, i, length);
        continue;
      }
      const byte = chunk[i] as number;
      if (isJsonSpace(byte)) {
        i++;
        continue;
      }
      switch (this.#mode) {
        case BEFORE_OBJECT:
          if (byte !== 0x7b) throw new NotPlain();
          this.#mode = BEFORE_KEY;
          break;
        case BEFORE_KEY:
          if (byte === 0x7d && !this.#required) this.#mode = DONE;
          else if (byte === QUOTE) this.#begin(chunk, i);
          else throw new NotPlain();
          break;
        case AFTER_KEY:
          if (byte !== 0x3a) throw new NotPlain();
          this.#mode = BEFORE_VALUE;
          break;
        case BEFORE_VALUE:
          if (this.#key === 'rules' && byte === 0x5b) this.#beginRules();
          else this.#begin(chunk, i);
          break;
        case AFTER_VALUE:
          if (byte === 0x2c) {
            this.#mode = BEFORE_KEY;
            this.#required = true;
          } else if (byte === 0x7d) this.#mode = DONE;
          else throw new NotPlain();
          break;
        case BEFORE_ELEMENT:
          if (byte === 0x5d && !this.#required) this.#endRules();
          else this.#begin(chunk, i);
          break;
        case AFTER_ELEMENT:
          if (byte === 0x2c) {
            this.#mode = BEFORE_ELEMENT;
            this.#required = true;
          } else if (byte === 0x5d) this.#endRules();
          else throw new NotPlain();
          break;
        default:
          throw new NotPlain();
      }
      if (!this.#inValue) i++;
    }
    // A value that goes on in the next chunk: keep its bytes so far (the chunk is reused).
    if (this.#inValue) this.#pieces.push(Buffer.from(chunk.subarray(this.#start, length)));
  }

  end(): { top: Record<string, unknown>; rules: CheckedRules | undefined } {
    if (this.#mode !== DONE || this.#inValue) throw new NotPlain();
    const top = this.#top;
    if (this.#raw) top.rules = this.#raw;
    // Rules are checked as they come only in a file that said first that its rules are as this version's.
    else if (this.#checked && !rulesAreCurrent(top.version)) throw new NotPlain();
    return { top, rules: this.#checked };
  }

  #begin(chunk: Buffer, at: number): void {
    const byte = chunk[at] as number;
    this.#inValue = true;
    this.#start = at;
    this.#pieces.length = 0;
    this.#kind = byte === QUOTE ? 0 : byte === 0x7b || byte === 0x5b ? 1 : 2;
    this.#depth = 0;
    this.#inString = false;
    this.#escaped = false;
  }

  /** Reads on in the value from `i`; returns where to go on (past the value's end, when it ends). */
  #scanValue(chunk: Buffer, i: number, length: number): number {
    if (this.#kind === 2) {
      while (i < length) {
        const byte = chunk[i] as number;
        if (byte === 0x2c || byte === 0x7d || byte === 0x5d || isJsonSpace(byte)) {
          this.#finish(chunk, i);
          return i;
        }
        i++;
      }
      return i;
    }
    if (this.#kind === 0 && !this.#inString) {
      // The opening quote.
      this.#inString = true;
      i++;
    }
    while (i < length) {
      if (this.#inString) {
        const quote = chunk.indexOf(QUOTE, i);
        const stop = quote < 0 || quote >= length ? length : quote;
        // Backslashes just before the quote (or the chunk's end): an odd number escapes it.
        let run = 0;
        while (stop - run - 1 >= i && chunk[stop - run - 1] === BACKSLASH) run++;
        const escaping = (run + (stop - run === i && this.#escaped ? 1 : 0)) % 2 === 1;
        if (stop === length) {
          this.#escaped = escaping;
          return length;
        }
        this.#escaped = false;
        i = stop + 1;
        if (escaping) continue;
        this.#inString = false;
        if (this.#kind === 0) {
          this.#finish(chunk, i);
          return i;
        }
        continue;
      }
      const byte = chunk[i] as number;
      i++;
      if (byte === QUOTE) this.#inString = true;
      else if (byte === 0x7b || byte === 0x5b) this.#depth++;
      else if (byte === 0x7d || byte === 0x5d) {
        this.#depth--;
        if (this.#depth === 0) {
          this.#finish(chunk, i);
          return i;
        }
      }
    }
    return i;
  }

  /** The value ends before `end`: parses it and hands it on. */
  #finish(chunk: Buffer, end: number): void {
    this.#inValue = false;
    this.#required = false;
    let text: string;
    if (this.#pieces.length === 0) text = chunk.toString('utf8', this.#start, end);
    else {
      this.#pieces.push(chunk.subarray(this.#start, end));
      text = Buffer.concat(this.#pieces).toString('utf8');
      this.#pieces.length = 0;
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new NotPlain();
    }
    if (this.#mode === BEFORE_KEY) {
      this.#key = value as string;
      this.#mode = AFTER_KEY;
    } else if (this.#mode === BEFORE_VALUE) {
      this.#set(this.#key, value);
      this.#mode = AFTER_VALUE;
    } else {
      this.#element(value);
      this.#mode = AFTER_ELEMENT;
    }
  }

  /** As JSON.parse sets a key: an own property (even `__proto__`), the last of duplicates winning. */
  #set(key: string, value: unknown): void {
    Object.defineProperty(this.#top, key, { value, enumerable: true, writable: true, configurable: true });
    if (key === 'rules' && !this.#inRules) {
      this.#checked = undefined;
      this.#raw = undefined;
    }
  }

  #beginRules(): void {
    this.#inRules = true;
    this.#index = 0;
    this.#set('rules', []);
    if (rulesAreCurrent(this.#top.version)) {
      this.#checker = new RuleChecker();
      this.#checked = { rules: [], problems: undefined };
      this.#raw = undefined;
    } else {
      // A file of an older version (or that says its version later): its rules are read as they are.
      this.#checker = undefined;
      this.#checked = undefined;
      this.#raw = [];
    }
    this.#mode = BEFORE_ELEMENT;
  }

  #element(value: unknown): void {
    const index = this.#index++;
    if (this.#raw) {
      this.#raw.push(value);
      return;
    }
    const checked = this.#checked as CheckedRules;
    // After a bad rule, the others are only parsed: a JSON error further on is told first.
    if (checked.problems || !this.#checker) return;
    const result = this.#checker.check(value, index);
    if (!result.ok) {
      checked.problems = result.problems;
      checked.rules = [];
      this.#checker = undefined;
      return;
    }
    const rule = result.rule as WatchRule;
    this.#onRule(rule);
    checked.rules.push(rule);
  }

  #endRules(): void {
    this.#inRules = false;
    this.#checker = undefined;
    this.#required = false;
    this.#mode = AFTER_VALUE;
  }
}
