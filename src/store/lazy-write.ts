/**
 * Writes gathered in time: {@link LazyWrite.schedule} asks for a write within `delayMs` (changes made
 * meanwhile share it), {@link LazyWrite.flush} writes now. Writes run one at a time; a scheduled
 * write that fails goes to `onError` (the next schedule or flush tries again), a flush's rejects.
 */
export class LazyWrite {
  readonly #delayMs: number;
  readonly #write: () => Promise<void>;
  readonly #onError: ((error: unknown) => void) | undefined;
  #timer: NodeJS.Timeout | undefined;
  #writing: Promise<void> = Promise.resolve();

  constructor(delayMs: number, write: () => Promise<void>, onError?: (error: unknown) => void) {
    this.#delayMs = delayMs;
    this.#write = write;
    this.#onError = onError;
  }

  schedule(): void {
    this.#timer ??= setTimeout(() => {
      this.#timer = undefined;
      this.#run().catch((error: unknown) => this.#onError?.(error));
    }, this.#delayMs);
    this.#timer.unref();
  }

  flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    return this.#run();
  }

  #run(): Promise<void> {
    this.#writing = this.#writing.catch(() => undefined).then(this.#write);
    return this.#writing;
  }
}
