/**
 * Match: which watch rules an event concerns. The rules are read into the index (rule-index.ts) and
 * follow the store's changes; each event is looked up once, and that one match is finished once the
 * event is enriched (price, floor and traits, the tokens of a cancel), without a second look-up.
 */
import type { Logger } from 'pino';
import type { RulesChange, RulesRepository } from '../core/ports.ts';
import type { EnrichedEvent } from './enrich.ts';
import { type MatchedDestination, matchDestinations } from './rule-filters.ts';
import { admitsTokens, type MatchingRule, RuleIndex } from './rule-index.ts';
import type { ChainEvent } from './types.ts';

/**
 * The match of one event: its candidate rules, found from what the chain says, and what finishing it
 * needs. Made by {@link Matcher.match}; finished by {@link EventMatch.destinations}.
 */
export class EventMatch {
  readonly event: ChainEvent;
  #rules: MatchingRule[];

  constructor(event: ChainEvent, rules: MatchingRule[]) {
    this.event = event;
    this.#rules = rules;
  }

  /** What the alert calls the collection: the name its first rule gave it. */
  get collectionName(): string {
    return this.#rules[0]?.collectionName ?? this.event.collection;
  }

  /** Some candidate has a floor percentage: enrichment waits for a fresh floor. */
  get wantsFloor(): boolean {
    return this.#rules.some((rule) => rule.floorPercent !== undefined);
  }

  /**
   * The event repeats a listing seen lately (see relists.ts): only the rules that show relists stay.
   * False when none does (the event alerts nobody).
   */
  onlyRelists(): boolean {
    this.#rules = this.#rules.filter((rule) => rule.showRelists === true);
    return this.#rules.length > 0;
  }

  /**
   * Finishes the match with what enrichment found: the rules whose token (a cancel's tokens are
   * learnt from its order), price, floor and trait conditions hold, grouped by destination (one
   * message per chat, with the roles its rules ping). A rule with a minimum price or a floor
   * percentage is not served when the price is unknown: `onUnpriced` hears of it.
   */
  destinations(enriched: EnrichedEvent, onUnpriced?: (rule: MatchingRule) => void): MatchedDestination[] {
    const tokens = enriched.details.event.tokens;
    const event = this.event;
    const admitted =
      event.kind === 'cancel' && event.tokens.length === 0
        ? this.#rules.filter((rule) => admitsTokens(rule, event, tokens))
        : this.#rules;
    return matchDestinations(admitted, enriched.price, enriched.traits, onUnpriced);
  }
}

/**
 * The rule index of this process and how it follows the store. A process that ingests no network
 * (another process leads them all, with a shared database) keeps no index: it matches nothing.
 */
export class Matcher {
  readonly #store: Pick<RulesRepository, 'allRules' | 'onRulesChanged'>;
  readonly #logger: Logger;
  #index = new RuleIndex();
  /** Whether the index holds the rules (it does in a process that ingests some network). */
  #indexed = false;
  /** Index loads, one at a time. */
  #indexing: Promise<void> = Promise.resolve();
  /** The load that has not finished yet, if any (asking again while it runs waits for it). */
  #loading: Promise<void> | undefined;
  /** Rule changes heard while the index loads, applied once it has. */
  #heldChanges: RulesChange[] | undefined;
  #onChange: (() => void) | undefined;

  constructor(store: Pick<RulesRepository, 'allRules' | 'onRulesChanged'>, logger: Logger) {
    this.#store = store;
    this.#logger = logger;
  }

  /** The index as it is now (a reload replaces it): what the streams are planned from. */
  get index(): RuleIndex {
    return this.#index;
  }

  /** Resolves once the index load under way, if any, has ended (failed or not). */
  loaded(): Promise<void> {
    return this.#indexing;
  }

  /** Follows the store's changes from now on; `onChange` hears of each (the streams are planned again). */
  follow(onChange: () => void): void {
    this.#onChange = onChange;
    this.#store.onRulesChanged((change) => this.#changed(change));
  }

  /** Loads the index when `wanted` and not loaded yet; drops it when not wanted. Resolves once loaded. */
  refresh(wanted: boolean): Promise<void> {
    if (wanted && !this.#indexed) return this.#loading ?? this.#reload();
    if (!wanted && this.#indexed) {
      this.#indexed = false;
      this.#index = new RuleIndex();
    }
    return this.#indexing;
  }

  /** Whether an active rule watches this collection (lower case) on this network. */
  watches(network: string, collection: string): boolean {
    return this.#index.watches(network, collection);
  }

  /** Networks with active watch rules, as this process's index has them. */
  networks(): string[] {
    return this.#index.networks();
  }

  /** The event's match, or undefined when no rule may concern it. */
  match(event: ChainEvent): EventMatch | undefined {
    const rules = this.#index.candidates(event);
    return rules.length === 0 ? undefined : new EventMatch(event, rules);
  }

  /** Reads every rule into a new index, then applies the changes heard meanwhile, and uses it. */
  #reload(): Promise<void> {
    const load = this.#indexing.then(async () => {
      if (this.#indexed) return;
      this.#heldChanges = [];
      try {
        const index = new RuleIndex();
        for await (const page of this.#store.allRules()) for (const rule of page) index.add(rule);
        const held = this.#heldChanges;
        this.#heldChanges = undefined;
        for (const change of held) if (!change.all) applyChange(index, change);
        this.#index = index;
        this.#indexed = true;
        // Everything changed meanwhile (the store lost its feed of changes): read it all once more.
        if (held.some((change) => change.all)) this.#changed({ all: true });
      } finally {
        this.#heldChanges = undefined;
      }
    });
    this.#loading = load;
    this.#indexing = load
      .catch((error: unknown) => {
        this.#logger.error({ err: error }, 'could not read the watch rules');
      })
      .finally(() => {
        if (this.#loading === load) this.#loading = undefined;
      });
    return load;
  }

  #changed(change: RulesChange): void {
    if (this.#heldChanges) this.#heldChanges.push(change);
    else if (change.all) {
      if (this.#indexed) {
        this.#indexed = false;
        this.#reload().catch(() => {});
      }
    } else if (this.#indexed) applyChange(this.#index, change);
    this.#onChange?.();
  }
}

function applyChange(index: RuleIndex, change: Exclude<RulesChange, { all: true }>): void {
  for (const { id, rule } of change.rules) {
    if (rule) index.add(rule);
    else index.remove(id);
  }
}
