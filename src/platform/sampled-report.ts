/**
 * Rate-limits reports of something that may happen a thousand times a second (bad stream lines,
 * dropped records): the first at once, then, at the end of each interval that saw more, how many
 * there were with the first of them as the sample. A steady flow costs one report per interval.
 * What is still pending is reported by {@link SampledReporter.close}.
 */
export class SampledReporter<S> {
  readonly #report: ((sample: S, count: number) => void) | undefined;
  readonly #intervalMs: number;
  #window: NodeJS.Timeout | undefined;
  #count = 0;
  #sample: S | undefined;

  /** `intervalMs` 0 reports every one. */
  constructor(report: ((sample: S, count: number) => void) | undefined, intervalMs: number) {
    this.#report = report;
    this.#intervalMs = intervalMs;
  }

  add(sample: S): void {
    if (!this.#report) return;
    if (this.#window === undefined) {
      this.#report(sample, 1);
      if (this.#intervalMs > 0) this.#window = this.#openWindow();
      return;
    }
    this.#count++;
    if (this.#count === 1) this.#sample = sample;
  }

  close(): void {
    clearTimeout(this.#window);
    this.#window = undefined;
    this.#flush();
  }

  #openWindow(): NodeJS.Timeout {
    const timer = setTimeout(() => {
      this.#window = undefined;
      // A window that saw more opens the next one, so a steady flow is summed per interval.
      if (this.#flush()) this.#window = this.#openWindow();
    }, this.#intervalMs);
    timer.unref();
    return timer;
  }

  #flush(): boolean {
    if (this.#count === 0) return false;
    const sample = this.#sample as S;
    const count = this.#count;
    this.#sample = undefined;
    this.#count = 0;
    this.#report?.(sample, count);
    return true;
  }
}
