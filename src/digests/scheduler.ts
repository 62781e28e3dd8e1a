import cron, { type ScheduledTask } from 'node-cron';
import type { Logger } from 'pino';
import type { RulesRepository } from '../core/ports.ts';
import type { DigestSettings } from '../core/settings.ts';
import { lastDue } from './zoned-time.ts';

/** A digest missed while the bot was down is posted at start-up if it is at most this late. */
export const MISSED_DIGEST_WINDOW_MS = 3 * 3_600_000;

export interface DigestSchedulerOptions {
  store: RulesRepository;
  logger: Logger;
  /** Builds and posts the digests of these chats, due at `dueAt`. */
  run: (chatKeys: string[], dueAt: Date) => Promise<void>;
  now?: () => Date;
  missedWindowMs?: number;
}

interface Group {
  hour: number;
  minute: number;
  timeZone: string;
  chatKeys: string[];
}

function groupKey(d: DigestSettings): string {
  return `${d.hour}:${d.minute}@${d.timeZone}`;
}

/**
 * Daily digest schedules: one node-cron task per distinct time of day and time zone (so chats
 * that share a schedule share one run and its platform calls), rebuilt from the store at start-up
 * and whenever a digest changes. Wall-clock times follow the zone across daylight-saving changes.
 */
export class DigestScheduler {
  readonly #options: DigestSchedulerOptions;
  readonly #tasks = new Map<string, ScheduledTask>();
  #groups = new Map<string, Group>();
  #running = new Set<Promise<void>>();
  #stopped = false;

  constructor(options: DigestSchedulerOptions) {
    this.#options = options;
  }

  /** Schedules every digest and posts, once, those missed by at most the window. */
  async start(): Promise<void> {
    this.rebuild();
    this.#options.store.onChatsChanged(() => this.rebuild());
    await this.catchUp();
  }

  /** Posts digests whose last due time passed without a posting, when not too late. */
  async catchUp(): Promise<void> {
    const now = (this.#options.now ?? (() => new Date()))();
    const window = this.#options.missedWindowMs ?? MISSED_DIGEST_WINDOW_MS;
    const late = new Map<number, string[]>();
    for (const [chatKey, digest] of this.#options.store.digests()) {
      const due = lastDue(now, digest.hour, digest.minute, digest.timeZone);
      const posted = digest.lastPostedFor ? Date.parse(digest.lastPostedFor) : Number.NEGATIVE_INFINITY;
      const since = Date.parse(digest.setAt);
      if (posted >= due.getTime() || since > due.getTime()) continue;
      if (now.getTime() - due.getTime() > window) {
        this.#options.logger.info({ chat: chatKey, due }, 'digest missed by more than the catch-up window: skipped');
        continue;
      }
      late.set(due.getTime(), [...(late.get(due.getTime()) ?? []), chatKey]);
    }
    for (const [due, chatKeys] of late) {
      this.#options.logger.info(
        { chats: chatKeys.length, due: new Date(due) },
        'posting digests missed while the bot was down',
      );
      await this.#fire(chatKeys, new Date(due));
    }
  }

  /** Replaces the tasks with one per distinct schedule of the stored digests. */
  rebuild(): void {
    if (this.#stopped) return;
    const groups = new Map<string, Group>();
    for (const [chatKey, digest] of this.#options.store.digests()) {
      const key = groupKey(digest);
      const group = groups.get(key) ?? {
        hour: digest.hour,
        minute: digest.minute,
        timeZone: digest.timeZone,
        chatKeys: [],
      };
      group.chatKeys.push(chatKey);
      groups.set(key, group);
    }
    for (const [key, task] of this.#tasks) {
      if (!groups.has(key)) {
        void task.destroy();
        this.#tasks.delete(key);
      }
    }
    for (const [key, group] of groups) {
      if (this.#tasks.has(key)) continue;
      try {
        const task = cron.createTask(`${group.minute} ${group.hour} * * *`, () => this.#due(key), {
          name: `digest ${key}`,
          timezone: group.timeZone,
          noOverlap: true,
          logger: this.#cronLogger(),
        });
        void task.start();
        this.#tasks.set(key, task);
      } catch (error) {
        this.#options.logger.error({ schedule: key, err: error }, 'could not schedule a digest');
      }
    }
    this.#groups = groups;
  }

  /** Next run of each schedule (for /digest show and tests). */
  nextRun(hour: number, minute: number, timeZone: string): Date | null {
    return this.#tasks.get(`${hour}:${minute}@${timeZone}`)?.getNextRun() ?? null;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    for (const task of this.#tasks.values()) await task.destroy();
    this.#tasks.clear();
    await Promise.all([...this.#running]);
  }

  #due(key: string): Promise<void> {
    const group = this.#groups.get(key);
    if (!group) return Promise.resolve();
    const now = (this.#options.now ?? (() => new Date()))();
    return this.#fire([...group.chatKeys], lastDue(now, group.hour, group.minute, group.timeZone));
  }

  #fire(chatKeys: string[], dueAt: Date): Promise<void> {
    const run = this.#options
      .run(chatKeys, dueAt)
      .catch((error: unknown) =>
        this.#options.logger.error({ err: error, chats: chatKeys.length }, 'digest run failed'),
      );
    this.#running.add(run);
    void run.finally(() => this.#running.delete(run));
    return run;
  }

  #cronLogger() {
    const logger = this.#options.logger.child({ component: 'cron' });
    return {
      info: (message: string) => logger.debug(message),
      warn: (message: string) => logger.warn(message),
      error: (message: string | Error, err?: Error) => logger.error({ err: err ?? message }, String(message)),
      debug: (message: string | Error) => logger.debug(String(message)),
    };
  }
}
