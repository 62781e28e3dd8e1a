import { errors, type RpcError, type ServiceName } from './errors.ts';
import { Prng } from './prng.ts';
import { In } from './validate.ts';

/** One injected fault. Every field is optional; absent effects do not apply. */
export interface FaultRule {
  /** `ListCollectibles` or `Marketplace/ListCollectibles`; absent or `*`: every operation. */
  operation?: string;
  /** Added before the answer. */
  latencyMs?: number;
  /** Share of answers (0..1) replaced by a server error. */
  errorRate?: number;
  /** 500 (a webrpc error body, the default) or 502/503/504 (a proxy's plain-text page). */
  errorStatus?: number;
  /** Share of answers (0..1) replaced by 429 RateLimited with `Retry-After`. */
  rateLimitRate?: number;
  /** Seconds in `Retry-After`. Default 1. */
  retryAfterSeconds?: number;
  /** Streams end after this many records. */
  dropStreamAfterMessages?: number;
  /** Streams end after this long. */
  dropStreamAfterMs?: number;
  /** `reset` (default): the connection is cut. `error`: a WebrpcStreamLost line, then the end. */
  dropMode?: 'reset' | 'error';
  /** How many requests the rule applies to; absent: all. */
  times?: number;
}

export type FaultSpec = FaultRule | readonly FaultRule[];

export interface StreamDrop {
  afterMessages: number | undefined;
  afterMs: number | undefined;
  mode: 'reset' | 'error';
}

/** What to do to one request. */
export interface FaultDecision {
  latencyMs: number;
  error: RpcError | undefined;
  /** A non-JSON 5xx page, as a proxy sends. */
  proxyStatus: number | undefined;
  drop: StreamDrop | undefined;
}

interface ActiveRule extends FaultRule {
  remaining: number;
}

/** Reads a fault spec (one rule, a list, or `{rules: [...]}`); errors name the field. */
export function parseFaultSpec(value: unknown): FaultRule[] {
  let items: unknown[] = [value];
  let pathOf = (_: number) => '';
  if (Array.isArray(value)) {
    items = value;
    pathOf = (i) => `[${i}]`;
  } else if (value && typeof value === 'object' && Array.isArray((value as { rules?: unknown }).rules)) {
    items = (value as { rules: unknown[] }).rules;
    pathOf = (i) => `rules[${i}]`;
  }
  return items.map((item, i) => {
    const input = new In(item, pathOf(i));
    const rule: FaultRule = {};
    const operation = input.optString('operation');
    if (operation) rule.operation = operation;
    const latency = input.optInt('latencyMs', { min: 0, max: 120_000 });
    if (latency !== undefined) rule.latencyMs = latency;
    const errorRate = input.optNumber('errorRate');
    if (errorRate !== undefined) rule.errorRate = share(errorRate, input.at('errorRate'));
    const errorStatus = input.optInt('errorStatus', { min: 500, max: 599 });
    if (errorStatus !== undefined) rule.errorStatus = errorStatus;
    const rateLimitRate = input.optNumber('rateLimitRate');
    if (rateLimitRate !== undefined) rule.rateLimitRate = share(rateLimitRate, input.at('rateLimitRate'));
    const retryAfter = input.optInt('retryAfterSeconds', { min: 0, max: 3_600 });
    if (retryAfter !== undefined) rule.retryAfterSeconds = retryAfter;
    const afterMessages = input.optInt('dropStreamAfterMessages', { min: 0 });
    if (afterMessages !== undefined) rule.dropStreamAfterMessages = afterMessages;
    const afterMs = input.optInt('dropStreamAfterMs', { min: 0 });
    if (afterMs !== undefined) rule.dropStreamAfterMs = afterMs;
    const mode = input.optString('dropMode');
    if (mode !== undefined) {
      if (mode !== 'reset' && mode !== 'error')
        throw errors.invalidArgument(
          `${input.at('dropMode')}: expected "reset" or "error", got ${JSON.stringify(mode)}`,
        );
      rule.dropMode = mode;
    }
    const times = input.optInt('times', { min: 1 });
    if (times !== undefined) rule.times = times;
    return rule;
  });
}

function share(value: number, path: string): number {
  if (value < 0 || value > 1) throw errors.invalidArgument(`${path}: expected a share from 0 to 1, got ${value}`);
  return value;
}

/** The injected faults of a devnet, applied per operation. Shares are drawn from a seeded generator. */
export class Faults {
  #rules: ActiveRule[] = [];
  readonly #prng: Prng;

  constructor(seed: number) {
    this.#prng = new Prng(`floorwatch-devnet:${seed}:faults`);
  }

  set(rules: readonly FaultRule[]): void {
    this.#rules = rules.map((rule) => ({ ...rule, remaining: rule.times ?? Number.POSITIVE_INFINITY }));
  }

  clear(): void {
    this.#rules = [];
  }

  list(): FaultRule[] {
    return this.#rules.map(({ remaining, ...rule }) =>
      Number.isFinite(remaining) ? { ...rule, times: remaining } : rule,
    );
  }

  /** Decides the faults of one request to `service/method`; `stream` for the subscription operations. */
  decide(service: ServiceName, method: string, stream: boolean): FaultDecision {
    const decision: FaultDecision = { latencyMs: 0, error: undefined, proxyStatus: undefined, drop: undefined };
    for (const rule of this.#rules) {
      if (rule.remaining <= 0 || !matches(rule.operation, service, method)) continue;
      let applied = false;
      if (rule.latencyMs) {
        decision.latencyMs += rule.latencyMs;
        applied = true;
      }
      if (!decision.error && !decision.proxyStatus && rule.rateLimitRate && this.#prng.next() < rule.rateLimitRate) {
        decision.error = errors.rateLimited(service, rule.retryAfterSeconds ?? 1);
        applied = true;
      }
      if (!decision.error && !decision.proxyStatus && rule.errorRate && this.#prng.next() < rule.errorRate) {
        const status = rule.errorStatus ?? 500;
        if (status === 500) decision.error = errors.internal('injected fault');
        else decision.proxyStatus = status;
        applied = true;
      }
      if (
        stream &&
        !decision.drop &&
        (rule.dropStreamAfterMessages !== undefined || rule.dropStreamAfterMs !== undefined)
      ) {
        decision.drop = {
          afterMessages: rule.dropStreamAfterMessages,
          afterMs: rule.dropStreamAfterMs,
          mode: rule.dropMode ?? 'reset',
        };
        applied = true;
      }
      if (applied) rule.remaining--;
    }
    return decision;
  }
}

function matches(operation: string | undefined, service: string, method: string): boolean {
  if (operation === undefined || operation === '*' || operation === '') return true;
  return operation === method || operation === `${service}/${method}`;
}
