import { createHash } from 'node:crypto';
import type { RulesRepository } from '../core/ports.ts';

/** Marks a payload that is a stored action's hash rather than the action itself. */
const HASH_PREFIX = '#';

/**
 * Fits button actions into a platform's payload limit (Telegram callback data: 64 bytes; Discord
 * custom_id: 100 characters). Short actions travel as they are; long ones are stored in the state
 * file under a hash, so buttons keep working after a restart.
 */
export class ButtonCodec {
  readonly #store: RulesRepository;
  readonly #maxBytes: number;
  readonly #now: () => Date;

  constructor(store: RulesRepository, maxBytes: number, now: () => Date = () => new Date()) {
    this.#store = store;
    this.#maxBytes = maxBytes;
    this.#now = now;
  }

  async encode(action: string): Promise<string> {
    if (!action.startsWith(HASH_PREFIX) && Buffer.byteLength(action) <= this.#maxBytes) return action;
    const hash = createHash('sha256').update(action).digest('base64url').slice(0, 22);
    await this.#store.saveButton(hash, action, this.#now());
    return `${HASH_PREFIX}${hash}`;
  }

  /** The action of a payload; undefined for a hash that is not stored (anymore). */
  decode(payload: string): string | undefined {
    if (!payload.startsWith(HASH_PREFIX)) return payload;
    return this.#store.button(payload.slice(HASH_PREFIX.length))?.action;
  }
}
