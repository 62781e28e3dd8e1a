/**
 * How close a typed word or name is to a known one, for "did you mean" answers: command names
 * (`/flor`), subcommands, and collection names typed without their spaces or punctuation
 * (`mooncats`, `render gremlins` for "Render **Gremlins**") or with a small typo (`moon cts`).
 * Edit distance comes from fastest-levenshtein (a small, well-kept package) rather than our own.
 */
import { distance } from 'fastest-levenshtein';

/** The letters and digits of a name, lower case and without accents, as words. */
export function nameWords(text: string): string[] {
  return text
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
}

/** Edits a word of this many letters may be away from a known one and still be suggested. */
function allowedEdits(length: number): number {
  if (length < 4) return length === 3 ? 1 : 0;
  return length <= 8 ? 2 : 3;
}

/**
 * How close a typed collection name is to a collection's name, lower is closer: 0 the same letters
 * and digits (`mooncats`, `Moon-Cats`), 1 its first words (`render gremlins` for `Render **Gremlins**
 * || @everyone`), 2 + the number of edits for a typo (`moon cts`); undefined when not close. Under
 * three letters nothing is close: every name would be.
 */
export function nameCloseness(typed: string, name: string): number | undefined {
  const typedWords = nameWords(typed);
  const compact = typedWords.join('');
  if (compact.length < 3) return undefined;
  const words = nameWords(name);
  if (compact === words.join('')) return 0;
  if (typedWords.length <= words.length && typedWords.every((word, i) => word === words[i])) return 1;
  // Against the whole name, and against as many of its first words as were typed (`moon cts` for "Moon Cats Rescue").
  const edits = Math.min(
    distance(compact, words.join('')),
    distance(compact, words.slice(0, typedWords.length).join('')),
  );
  return edits > 0 && edits <= Math.min(allowedEdits(compact.length), 3) ? 2 + edits : undefined;
}

/**
 * The known words closest to `typed` (a command's or subcommand's name), closest first: at most two
 * edits away (one for words of three or four letters), or a prefix of at least three letters.
 */
export function closestWords(typed: string, known: readonly string[], most = 3): string[] {
  const word = typed.toLowerCase();
  if (word.length < 2) return [];
  const scored: Array<{ name: string; edits: number }> = [];
  for (const name of known) {
    const edits = distance(word, name.toLowerCase());
    const prefix = word.length >= 3 && name.toLowerCase().startsWith(word);
    if (prefix || (edits > 0 && edits <= Math.min(2, allowedEdits(word.length) || 1))) {
      scored.push({ name, edits: prefix ? 0.5 : edits });
    }
  }
  return scored
    .sort((a, b) => a.edits - b.edits || a.name.localeCompare(b.name))
    .slice(0, most)
    .map((s) => s.name);
}

/**
 * What to search for to find the collections a name may be a misspelling of: its longest words of
 * three letters or more, and the first four letters of the name run together (`moon` for
 * `mooncats`). At most four searches.
 */
export function searchesFor(typed: string): string[] {
  const words = nameWords(typed);
  const compact = words.join('');
  const longest = words
    .filter((w) => w.length >= 3)
    .sort((a, b) => b.length - a.length)
    .slice(0, 3);
  const out = new Set(longest);
  if (compact.length >= 4) out.add(compact.slice(0, 4));
  return [...out].slice(0, 4);
}
