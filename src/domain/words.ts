/**
 * Small pieces of English used wherever the fabric talks to a person: counts that agree with
 * their noun ("1 step", "2 steps"), and the "did you mean" suggestion for a mistyped name.
 */

/** `count` and its noun, singular for exactly one: `plural(1, 'test')` is "1 test". */
export function plural(count: number, singular: string, pluralForm = `${singular}s`): string {
  return `${count} ${count === 1 ? singular : pluralForm}`;
}

/**
 * The known name closest to `input` by edit distance (case-insensitive; a transposition counts
 * as one edit), or undefined when none is close enough to be what was meant: at most a third of
 * the longer name, and at least one edit allowed (`--max-step` → `--max-steps`, `mdoel` → `model`).
 */
export function closestName(input: string, known: readonly string[]): string | undefined {
  const wanted = input.toLowerCase();
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const name of known) {
    const distance = editDistance(wanted, name.toLowerCase());
    const limit = Math.max(1, Math.floor(Math.max(wanted.length, name.length) / 3));
    if (distance <= limit && distance < bestDistance) {
      best = name;
      bestDistance = distance;
    }
  }
  return best;
}

/** ` Did you mean "x"?` for a close match, else the empty string: ready to append to a message. */
export function didYouMean(
  input: string,
  known: readonly string[],
  quote = (name: string) => `"${name}"`,
): string {
  const name = closestName(input, known);
  return name === undefined ? '' : ` Did you mean ${quote(name)}?`;
}

/** Optimal string alignment distance (Levenshtein plus adjacent transpositions). */
function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[] = new Array(rows * cols).fill(0);
  for (let i = 0; i < rows; i++) d[i * cols] = i;
  for (let j = 0; j < cols; j++) d[j] = j;
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(
        (d[(i - 1) * cols + j] ?? 0) + 1,
        (d[i * cols + j - 1] ?? 0) + 1,
        (d[(i - 1) * cols + j - 1] ?? 0) + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        value = Math.min(value, (d[(i - 2) * cols + j - 2] ?? 0) + 1);
      d[i * cols + j] = value;
    }
  }
  return d[rows * cols - 1] ?? 0;
}
