/**
 * Records keyed by text from outside: what people type (aliases), what a platform answers
 * (marketplace names), what a file holds (chat ids). Plain objects inherit `constructor`,
 * `toString` and a `__proto__` setter, so such a key can read a function or replace the
 * prototype; these helpers never do.
 */

/** A record keyed by outside text: it has no prototype, so every key is a plain missing key until set. */
export type Dict<T> = Record<string, T>;

/** An empty {@link Dict}, or one holding the own entries of `from`. */
export function dict<T>(from?: Readonly<Record<string, T>>): Dict<T> {
  const out = Object.create(null) as Dict<T>;
  if (from) for (const key of Object.keys(from)) out[key] = from[key] as T;
  return out;
}

/** The value under `key` when `record` holds it itself (never an inherited member). */
export function own<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}
