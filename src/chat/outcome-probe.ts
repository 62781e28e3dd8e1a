import { AsyncLocalStorage } from 'node:async_hooks';
import type { CommandEngine, Outcome } from '../bot/engine.ts';

/**
 * The engine's verdict on one command it ran (`denied`, `user_error`, ...), for an adapter that
 * shows some verdicts differently (a refused button press as a popup, not a message). The engine
 * reports outcomes to listeners only, without saying which run they belong to; the probe ties each
 * report to its run through the async context the run executes in, so concurrent runs never mix.
 *
 * @example
 * const probe = new OutcomeProbe(engine);
 * const { value: reply, outcome } = await probe.observe(() => engine.runLine(line, chat, actor));
 * if (outcome === 'denied') showPopup(reply);
 */
export class OutcomeProbe {
  readonly #runs = new AsyncLocalStorage<{ outcome?: Outcome }>();

  constructor(engine: Pick<CommandEngine, 'onOutcome'>) {
    engine.onOutcome((_name, outcome) => {
      const run = this.#runs.getStore();
      if (run) run.outcome = outcome;
    });
  }

  /** Runs `work` and returns its value with the outcome of the command it ran (none if none ran). */
  async observe<T>(work: () => Promise<T>): Promise<{ value: T; outcome: Outcome | undefined }> {
    const run: { outcome?: Outcome } = {};
    const value = await this.#runs.run(run, work);
    return { value, outcome: run.outcome };
  }
}
