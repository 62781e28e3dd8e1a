/**
 * Which process sends which chat's deliveries, when several share one database.
 *
 * A chat is sent to by the process that holds its claim (a lease, store/pg/leases.ts): it reads the
 * chat's open deliveries in recording order and hands them to its own dispatcher, so that a chat's
 * alerts keep their order and are never sent by two processes at once. A claim is tried when a
 * delivery for the chat is recorded (by this process, or announced by another) and by a sweep every
 * `sweepMs`, which also takes the chats of a process that died (its claims ended with its connection)
 * or froze (its claims expired): the deliveries it was sending come back as `sending`, to be sent
 * again under the same idempotency key.
 * A claim idle for `releaseAfterIdleMs` is given back, so that chats spread over the processes.
 */
import type { Logger } from 'pino';
import { type DeliveryRecord, needsEdit } from '../core/deliveries.ts';
import { byDestination, type Destination, destinationKey } from '../core/types.ts';
import type { DeliveryQueue } from './dispatcher.ts';

export interface ChatLeases {
  tryLock(space: 'chat', key: string): Promise<boolean>;
  unlock(space: 'chat', key: string): Promise<void>;
  holds(space: 'chat', key: string): boolean;
}

export interface OpenDeliveries {
  /** The chat's deliveries to send with seq > `afterSeq`, and all its edits to make, in order. */
  openFor(chatKey: string, afterSeq?: number): Promise<Array<{ seq: number; record: DeliveryRecord }>>;
  chatsWithWork(): Promise<string[]>;
}

export interface ChatClaimsOptions {
  leases: ChatLeases;
  log: OpenDeliveries;
  /** This process's dispatcher. */
  dispatcher: DeliveryQueue & { isIdle(destination: Destination): boolean };
  logger: Logger;
  /** How often chats with work are looked for (default 1 s). */
  sweepMs?: number;
  /** A claim with nothing to do for this long is given back (default 30 s). */
  releaseAfterIdleMs?: number;
}

interface Claim {
  destination: Destination;
  /** The highest recording sequence handed to the dispatcher. */
  seq: number;
  /**
   * Deliveries handed to the dispatcher and open when last read: never handed twice. A delivery whose
   * recording committed after a later one's is below `seq` when it appears; the sweep's full read
   * (from sequence 0) finds it, and this set keeps that read from handing out the others again.
   */
  handed: Set<string>;
  idleSince: number | undefined;
}

export class ChatClaims implements DeliveryQueue {
  readonly #o: ChatClaimsOptions;
  readonly #claims = new Map<string, Claim>();
  /** One piece of work per chat at a time, in order. */
  readonly #busy = new Map<string, Promise<void>>();
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(options: ChatClaimsOptions) {
    this.#o = options;
  }

  /** Sweeps once (taking the chats with work that nobody holds), then every `sweepMs`. */
  async start(): Promise<void> {
    await this.sweep();
    this.#schedule();
  }

  /** Chats announced to have new work (by this process or another). */
  noticed(chatKeys: readonly string[]): void {
    for (const chatKey of chatKeys) void this.#work(chatKey);
  }

  // DeliveryQueue, for the pipeline and the digests of this process.

  /**
   * This process's own new deliveries. A chat whose claim it holds, with no read of its deliveries
   * under way, gets them at once: reading back what was just written would cost a round trip on
   * every alert's way. Other chats are read (and claimed) as announced work is.
   */
  enqueue(records: readonly DeliveryRecord[]): void {
    const others: string[] = [];
    for (const [chatKey, list] of byDestination(records)) {
      const claim = this.#claims.get(chatKey);
      if (!claim || this.#busy.has(chatKey) || this.#stopped) {
        others.push(chatKey);
        continue;
      }
      // The claim's sequence is not moved: its next read still sees any earlier delivery recorded
      // meanwhile by another process, and skips these as handed.
      const sends = list.filter((record) => !record.reorged && !claim.handed.has(handedKey(record)));
      for (const record of sends) claim.handed.add(handedKey(record));
      if (sends.length) this.#o.dispatcher.enqueue(sends);
      claim.idleSince = undefined;
    }
    if (others.length) this.noticed(others);
  }

  /**
   * The chats with messages to edit (reorganised, or listing cards to show a fate) are read again
   * (their claims' holders edit them); unsent ones were dropped.
   */
  reorged(records: readonly DeliveryRecord[]): void {
    const edits = records.filter(needsEdit);
    this.noticed([...new Set(edits.map((r) => destinationKey(r.destination)))]);
  }

  /**
   * Deliveries to a chat this process holds, idle and with no read under way, are sent by this
   * process as soon as they are recorded (see {@link ChatClaims.enqueue}), alone when its dispatcher
   * would send them alone: they may be recorded as sending, which saves a write before the send.
   * Any other chat's may be sent by another process, merged or not: they are recorded as pending.
   */
  sendsAlone(destination: Destination, together: number): boolean {
    const chatKey = destinationKey(destination);
    return (
      !this.#stopped &&
      this.#claims.has(chatKey) &&
      !this.#busy.has(chatKey) &&
      this.#o.dispatcher.sendsAlone(destination, together)
    );
  }

  /** Chats whose claim this process holds. */
  held(): string[] {
    return [...this.#claims.keys()];
  }

  async sweep(): Promise<void> {
    if (this.#stopped) return;
    let chats: string[];
    try {
      chats = await this.#o.log.chatsWithWork();
    } catch (error) {
      this.#o.logger.warn({ err: error }, 'could not look for chats with deliveries to send');
      return;
    }
    // Chats nobody holds are taken; the held ones with open work are read whole, for deliveries that
    // committed out of sequence order (or whose notice was lost on a reconnect). One statement for all.
    await Promise.all(chats.map((chatKey) => this.#work(chatKey, true)));
    await this.#releaseIdle();
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      void this.sweep().finally(() => this.#schedule());
    }, this.#o.sweepMs ?? 1_000);
    this.#timer.unref();
  }

  #work(chatKey: string, full = false): Promise<void> {
    const previous = this.#busy.get(chatKey) ?? Promise.resolve();
    const next = previous
      .then(() => this.#load(chatKey, full))
      .catch((error: unknown) =>
        this.#o.logger.warn({ err: error, chat: chatKey }, 'could not take a chat’s deliveries'),
      );
    this.#busy.set(chatKey, next);
    void next.finally(() => {
      if (this.#busy.get(chatKey) === next) this.#busy.delete(chatKey);
    });
    return next;
  }

  async #load(chatKey: string, full: boolean): Promise<void> {
    if (this.#stopped) return;
    let claim = this.#claims.get(chatKey);
    if (!claim) {
      if (!(await this.#o.leases.tryLock('chat', chatKey))) return;
      claim = { destination: destinationOf(chatKey), seq: 0, handed: new Set(), idleSince: undefined };
      this.#claims.set(chatKey, claim);
    }
    const open = await this.#o.log.openFor(chatKey, full ? 0 : claim.seq);
    const sends: DeliveryRecord[] = [];
    const edits: DeliveryRecord[] = [];
    // A full read lists every open delivery: the ones handed earlier and closed since leave the set.
    if (full) {
      const stillOpen = new Set(open.map((o) => handedKey(o.record)));
      for (const key of claim.handed) if (!stillOpen.has(key)) claim.handed.delete(key);
    }
    for (const { seq, record } of open) {
      const edit = needsEdit(record);
      if (seq > claim.seq && !edit) claim.seq = seq;
      const key = handedKey(record);
      if (claim.handed.has(key)) continue;
      claim.handed.add(key);
      if (edit) edits.push(record);
      else sends.push(record);
    }
    if (sends.length) this.#o.dispatcher.enqueue(sends);
    if (edits.length) this.#o.dispatcher.reorged(edits);
    if (open.length) claim.idleSince = undefined;
  }

  /** Gives back claims with nothing to do for a while (checked again under the chat's turn). */
  async #releaseIdle(): Promise<void> {
    const after = this.#o.releaseAfterIdleMs ?? 30_000;
    const now = Date.now();
    for (const [chatKey, claim] of this.#claims) {
      if (!this.#o.dispatcher.isIdle(claim.destination)) {
        claim.idleSince = undefined;
        continue;
      }
      claim.idleSince ??= now;
      if (now - claim.idleSince < after) continue;
      await this.#work(chatKey);
      const turn = (this.#busy.get(chatKey) ?? Promise.resolve()).then(async () => {
        if (!this.#o.dispatcher.isIdle(claim.destination) || this.#claims.get(chatKey) !== claim) return;
        this.#claims.delete(chatKey);
        await this.#o.leases.unlock('chat', chatKey);
      });
      this.#busy.set(chatKey, turn);
      await turn.catch((error: unknown) =>
        this.#o.logger.warn({ err: error, chat: chatKey }, 'could not give back a chat'),
      );
      if (this.#busy.get(chatKey) === turn) this.#busy.delete(chatKey);
    }
  }
}

/**
 * A delivery to send and each edit of the same delivery (once reorganised, and each fate of its
 * listing) are pieces of work of their own.
 */
function handedKey(record: DeliveryRecord): string {
  if (!needsEdit(record)) return `send:${record.id}`;
  return record.reorged ? `edit:${record.id}` : `fate:${record.fate?.rev ?? 0}:${record.id}`;
}

function destinationOf(chatKey: string): Destination {
  const colon = chatKey.indexOf(':');
  return { platform: chatKey.slice(0, colon) as Destination['platform'], chatId: chatKey.slice(colon + 1) };
}
