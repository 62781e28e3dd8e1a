/**
 * Role rules, grants and the full re-check's progress in a file of their own in the data
 * directory (`roles.jsonl`): a grant's change appends a line instead of rewriting the state.
 *
 * ## File format
 *
 * JSON Lines (store/files/jsonl-file.ts), append-only, the first line a header; each later line sets or
 * drops one record, and the last line for a record wins:
 *
 * ```
 * {"op":"roles","v":1}
 * {"k":"rule","rule":{"id":"h1","community":"discord:1","target":"5",…}}
 * {"k":"unrule","id":"h1"}
 * {"k":"next","id":2}
 * {"k":"grant","grant":{"community":"discord:1","target":"5","person":"discord:2","state":"granted",…}}
 * {"k":"ungrant","community":"discord:1","target":"5","person":"discord:2"}
 * {"k":"progress","progress":{"startedAt":"…","communities":["discord:1"],"after":"discord:2","people":1}}
 * ```
 *
 * Changes are decided and applied in memory at once, in order, and resolve once their lines are
 * durable: lines of changes made while a write is in flight go together in the next append (one
 * `fdatasync` for all). A failed append rejects the changes it carried with {@link StoreWriteError}
 * and undoes them in memory. When the file holds more lines than twice its live records (plus a
 * thousand), it is rewritten between appends. One process at a time may use the file (the data
 * directory's lock): a change claimed and never finished was its last process's, so it is
 * forgotten at open (the re-check at start evaluates the person again).
 */
import * as v from 'valibot';
import {
  type ChangeResult,
  type ClaimOutcome,
  decideClaim,
  finishedGrant,
  type GrantAction,
  type GrantCount,
  type GrantKey,
  grantKeyText,
  type RecheckProgress,
  type RoleGrant,
  type RoleRule,
  type RoleStore,
} from '../../core/roles.ts';
import { StoreFileError, StoreWriteError } from '../../core/store-errors.ts';
import { recheckProgressSchema, roleGrantSchema, roleRuleSchema } from '../schema.ts';
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

const key = v.pipe(v.string(), v.regex(/^[a-z]+:[^\s]{1,100}$/, 'expected platform:id'));

const lineSchema = v.variant('k', [
  v.object({ k: v.literal('rule'), rule: roleRuleSchema }),
  v.object({ k: v.literal('unrule'), id: roleRuleSchema.entries.id }),
  v.object({ k: v.literal('next'), id: v.pipe(v.number(), v.integer(), v.minValue(1)) }),
  v.object({ k: v.literal('grant'), grant: roleGrantSchema }),
  v.object({ k: v.literal('ungrant'), community: key, target: roleGrantSchema.entries.target, person: key }),
  v.object({ k: v.literal('progress'), progress: v.nullable(recheckProgressSchema) }),
]);
type Line = v.InferOutput<typeof lineSchema>;
const FORMAT: JsonlFormat<Line> = { op: 'roles', version: 1, schema: lineSchema, record: 'a role record' };

/** What one change does: its lines (already applied in memory), how to undo them, its result. */
interface Decided<T> {
  lines: Line[];
  result: T;
}

interface Queued {
  lines: Line[];
  undo: Array<() => void>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** The role store of one bot in the data directory (see the module comment). */
export class FileRoleStore implements RoleStore {
  readonly file: string;
  readonly #rules = new Map<string, RoleRule>();
  readonly #grants = new Map<string, RoleGrant>();
  readonly #listeners: Array<(community: string) => void> = [];
  #next = 1;
  #progress: RecheckProgress | undefined;
  #lines = 0;
  #queue: Queued[] = [];
  #writing: Promise<void> | undefined;
  #closed = false;

  private constructor(file: string) {
    this.file = file;
  }

  /** Opens (or creates) the file; throws {@link StoreFileError} when it cannot be read. */
  static async open(file: string): Promise<FileRoleStore> {
    const { store, read } = await FileRoleStore.#load(file);
    await settleJsonl(file, read, store.#wasteful(), () => store.#rewrite());
    return store;
  }

  /**
   * What {@link FileRoleStore.open} would hold, read only: nothing is written, not even a torn last
   * line cut off (for `npm run migrate-data`, which leaves the files as they were). A missing file
   * holds nothing. `nextRuleNumber` is the number of the next rule's id (`h` and it).
   */
  static async read(file: string): Promise<{
    rules: RoleRule[];
    grants: RoleGrant[];
    nextRuleNumber: number;
    progress: RecheckProgress | undefined;
  }> {
    const { store } = await FileRoleStore.#load(file);
    return {
      rules: [...store.#rules.values()],
      grants: [...store.#grants.values()],
      nextRuleNumber: store.#next,
      progress: store.#progress,
    };
  }

  /** A store holding what the file says, changes claimed and never finished forgotten; the file untouched. */
  static async #load(file: string): Promise<{ store: FileRoleStore; read: JsonlRead<Line> }> {
    const store = new FileRoleStore(file);
    const read = await readJsonl(file, FORMAT);
    for (const line of read.lines) store.#apply(line);
    store.#lines = read.lines.length;
    for (const [k, grant] of store.#grants) {
      if (grant.pending) {
        const { pending: _dead, ...rest } = grant;
        store.#grants.set(k, rest);
      }
    }
    return { store, read };
  }

  // ---- rules

  addRule(rule: Omit<RoleRule, 'id'>, limit: number): Promise<RoleRule | undefined> {
    return this.#change(() => {
      const count = [...this.#rules.values()].filter((r) => r.community === rule.community).length;
      if (count >= limit) return { lines: [], result: undefined };
      const added: RoleRule = { id: `h${this.#next}`, ...rule };
      return {
        lines: [
          { k: 'next', id: this.#next + 1 },
          { k: 'rule', rule: added },
        ],
        result: added,
      };
    }).then((added) => {
      if (added) this.#tell(added.community);
      return added;
    });
  }

  removeRule(community: string, id: string): Promise<RoleRule | undefined> {
    return this.#change(() => {
      const rule = this.#rules.get(id);
      if (!rule || rule.community !== community) return { lines: [], result: undefined };
      return { lines: [{ k: 'unrule', id }], result: rule };
    }).then((removed) => {
      if (removed) this.#tell(community);
      return removed;
    });
  }

  async rulesOf(community: string): Promise<RoleRule[]> {
    return [...this.#rules.values()].filter((r) => r.community === community);
  }

  async allRules(): Promise<RoleRule[]> {
    return [...this.#rules.values()];
  }

  onRulesChanged(listener: (community: string) => void): void {
    this.#listeners.push(listener);
  }

  // ---- grants

  async grantsOf(community: string, person: string): Promise<RoleGrant[]> {
    return [...this.#grants.values()].filter((g) => g.community === community && g.person === person);
  }

  async grantedPeople(community: string, after: string | undefined, limit: number): Promise<string[]> {
    const people = new Set<string>();
    for (const grant of this.#grants.values()) {
      if (grant.community !== community || grant.state === 'revoked') continue;
      if (after === undefined || grant.person > after) people.add(grant.person);
    }
    return [...people].sort(byCodeUnit).slice(0, limit);
  }

  async grantCounts(community: string): Promise<GrantCount[]> {
    const counts = new Map<string, GrantCount>();
    for (const grant of this.#grants.values()) {
      if (grant.community !== community) continue;
      const count = counts.get(grant.target) ?? { target: grant.target, granted: 0, lapsed: 0, failed: 0 };
      if (grant.state === 'granted') count.granted++;
      if (grant.state === 'lapsed') count.lapsed++;
      if (grant.failure) {
        count.failed++;
        if (!count.lastFailure || grant.failure.at > count.lastFailure.at) count.lastFailure = grant.failure;
      }
      counts.set(grant.target, count);
    }
    return [...counts.values()];
  }

  async lapsedBefore(before: Date, limit: number): Promise<RoleGrant[]> {
    const at = before.getTime();
    return [...this.#grants.values()]
      .filter((g) => g.state === 'lapsed' && g.lapsedAt !== undefined && Date.parse(g.lapsedAt) <= at)
      .sort((a, b) => Date.parse(a.lapsedAt ?? '') - Date.parse(b.lapsedAt ?? ''))
      .slice(0, limit);
  }

  async stalePending(before: Date, limit: number): Promise<RoleGrant[]> {
    const at = before.getTime();
    return [...this.#grants.values()].filter((g) => g.pending && Date.parse(g.pending.since) <= at).slice(0, limit);
  }

  forgetTarget(community: string, target: string): Promise<number> {
    return this.#change(() => {
      const lines: Line[] = [];
      for (const grant of this.#grants.values()) {
        if (grant.community === community && grant.target === target) {
          lines.push({ k: 'ungrant', community, target, person: grant.person });
        }
      }
      return { lines, result: lines.length };
    });
  }

  claim(
    grantKey: GrantKey,
    action: GrantAction,
    now: Date,
    staleMs: number,
    options: { again?: boolean } = {},
  ): Promise<ClaimOutcome> {
    return this.#change((): Decided<ClaimOutcome> => {
      const current = this.#grants.get(grantKeyText(grantKey));
      const decision = decideClaim(current, action, now, staleMs, options.again === true);
      if (decision.kind === 'settled') return { lines: [], result: decision };
      const base: RoleGrant = current ?? { ...grantKey, state: 'revoked', since: now.toISOString() };
      if (decision.kind === 'busy') {
        if (base.recheck) return { lines: [], result: decision };
        return { lines: [{ k: 'grant', grant: { ...base, recheck: true } }], result: decision };
      }
      const { recheck: _asked, ...rest } = base;
      const claimed: RoleGrant = { ...rest, pending: { action, since: now.toISOString(), token: decision.token } };
      return { lines: [{ k: 'grant', grant: claimed }], result: decision };
    });
  }

  finish(grantKey: GrantKey, token: string, result: ChangeResult, now: Date): Promise<{ recheck: boolean }> {
    return this.#change((): Decided<{ recheck: boolean }> => {
      const current = this.#grants.get(grantKeyText(grantKey));
      if (!current?.pending || current.pending.token !== token) return { lines: [], result: { recheck: false } };
      const next = finishedGrant(current, result, now);
      return { lines: [{ k: 'grant', grant: next }], result: { recheck: current.recheck === true } };
    });
  }

  lapse(grantKey: GrantKey, now: Date): Promise<boolean> {
    return this.#change((): Decided<boolean> => {
      const current = this.#grants.get(grantKeyText(grantKey));
      if (current?.state !== 'granted' || current.pending) return { lines: [], result: false };
      const next: RoleGrant = { ...current, state: 'lapsed', since: now.toISOString(), lapsedAt: now.toISOString() };
      return { lines: [{ k: 'grant', grant: next }], result: true };
    });
  }

  restore(grantKey: GrantKey, now: Date): Promise<boolean> {
    return this.#change((): Decided<boolean> => {
      const current = this.#grants.get(grantKeyText(grantKey));
      if (current?.state !== 'lapsed' || current.pending) return { lines: [], result: false };
      const { lapsedAt: _gone, ...rest } = current;
      return { lines: [{ k: 'grant', grant: { ...rest, state: 'granted', since: now.toISOString() } }], result: true };
    });
  }

  // ---- the full re-check

  async recheckProgress(): Promise<RecheckProgress | undefined> {
    return this.#progress;
  }

  saveRecheckProgress(progress: RecheckProgress | undefined): Promise<void> {
    return this.#change(() => ({ lines: [{ k: 'progress', progress: progress ?? null }], result: undefined }));
  }

  async flush(): Promise<void> {
    while (this.#writing) await this.#writing;
  }

  async close(): Promise<void> {
    await this.flush();
    this.#closed = true;
  }

  // ---- writing

  /** Decides and applies a change now; resolves once its lines are durable (see the module comment). */
  #change<T>(decide: () => Decided<T>): Promise<T> {
    if (this.#closed) return Promise.reject(new StoreWriteError(this.file, new Error('the role store is closed')));
    const { lines, result } = decide();
    if (lines.length === 0) return Promise.resolve(result);
    const undo = lines.map((line) => this.#apply(line));
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ lines, undo, resolve: () => resolve(result), reject });
      this.#writing ??= this.#drain();
    });
  }

  /**
   * Writes the queue until it is empty. `#writing` is cleared in the same turn as the last look at
   * the queue, so a change queued after that look starts a new drain instead of waiting on this one.
   */
  async #drain(): Promise<void> {
    for (;;) {
      const batch = this.#queue.splice(0);
      if (batch.length === 0) {
        this.#writing = undefined;
        return;
      }
      const lines = batch.flatMap((queued) => queued.lines);
      try {
        await appendDurably(this.file, lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
        this.#lines += lines.length;
        for (const queued of batch) queued.resolve();
      } catch (cause) {
        for (const queued of [...batch].reverse()) for (const undo of [...queued.undo].reverse()) undo();
        const error = new StoreWriteError(this.file, cause);
        for (const queued of batch) queued.reject(error);
        continue;
      }
      // Between appends only: the memory holds nothing that is not in the file.
      if (this.#queue.length === 0 && this.#wasteful()) await this.#rewrite().catch(() => undefined);
    }
  }

  /** Applies a line in memory; returns how to undo it. */
  #apply(line: Line): () => void {
    switch (line.k) {
      case 'rule':
        return setIn(this.#rules, line.rule.id, line.rule);
      case 'unrule':
        return setIn(this.#rules, line.id, undefined);
      case 'next': {
        const before = this.#next;
        this.#next = Math.max(this.#next, line.id);
        return () => {
          this.#next = before;
        };
      }
      case 'grant':
        return setIn(this.#grants, grantKeyText(line.grant), line.grant);
      case 'ungrant':
        return setIn(this.#grants, grantKeyText(line), undefined);
      case 'progress': {
        const before = this.#progress;
        this.#progress = line.progress ?? undefined;
        return () => {
          this.#progress = before;
        };
      }
    }
  }

  #wasteful(): boolean {
    return this.#lines > 2 * (this.#rules.size + this.#grants.size + 2) + MIN_DEAD_LINES;
  }

  async #rewrite(): Promise<void> {
    const lines: Line[] = [{ k: 'next', id: this.#next }];
    for (const rule of this.#rules.values()) lines.push({ k: 'rule', rule });
    for (const grant of this.#grants.values()) lines.push({ k: 'grant', grant });
    if (this.#progress) lines.push({ k: 'progress', progress: this.#progress });
    await rewriteAtomically(this.file, headerLine(FORMAT) + lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
    this.#lines = lines.length;
  }

  #tell(community: string): void {
    for (const listener of this.#listeners) listener(community);
  }
}

/** Sets (or, with `undefined`, deletes) a map entry; returns how to put back what was there. */
function setIn<V>(map: Map<string, V>, k: string, value: V | undefined): () => void {
  const had = map.has(k);
  const before = map.get(k);
  if (value === undefined) map.delete(k);
  else map.set(k, value);
  return () => {
    if (had) map.set(k, before as V);
    else map.delete(k);
  };
}

/** Code-unit order: for keys (ASCII) the order of PostgreSQL's `COLLATE "C"`. */
function byCodeUnit(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
