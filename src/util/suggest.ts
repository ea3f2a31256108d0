/**
 * "Did you mean" hints, shared by the config loader (unknown keys), the CLI (unknown commands and
 * flags) and the serving layer (unknown tool names).
 */

/** Edit distance with adjacent transpositions (optimal string alignment). */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[] = new Array<number>(rows * cols).fill(0);
  const at = (i: number, j: number): number => d[i * cols + j] ?? 0;
  for (let i = 0; i < rows; i++) d[i * cols] = i;
  for (let j = 0; j < cols; j++) d[j] = j;
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, at(i - 2, j - 2) + 1);
      d[i * cols + j] = best;
    }
  }
  return at(a.length, b.length);
}

/**
 * The candidate `key` was most likely meant as, if one is close: same letters ignoring case and
 * `_`/`-` (catches `timeoutMs` for `timeout_ms`), or within an edit distance of a third of its
 * length (at least 1), so `timout_ms` finds `timeout_ms` but `foo` does not find `mode`.
 */
export function didYouMean(key: string, candidates: readonly string[]): string | undefined {
  const squash = (s: string): string => s.toLowerCase().replace(/[_-]/g, "");
  const exact = candidates.find((c) => squash(c) === squash(key));
  if (exact !== undefined) return exact;
  const limit = Math.max(1, Math.floor(key.length / 3));
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const distance = editDistance(key.toLowerCase(), candidate.toLowerCase());
    if (distance <= limit && distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/**
 * Up to `limit` candidates closest to `input`, best first: those containing it (or contained in
 * it) first, then by edit distance. For "unknown tool" errors, where a model benefits from a short
 * list of real names more than from one guess.
 */
export function closestNames(input: string, candidates: readonly string[], limit = 3): string[] {
  const needle = input.toLowerCase();
  return candidates
    .map((candidate) => {
      const lower = candidate.toLowerCase();
      const contains = lower.includes(needle) || needle.includes(lower);
      return { candidate, score: (contains ? 0 : 1000) + editDistance(needle, lower) };
    })
    .sort((a, b) => a.score - b.score || (a.candidate < b.candidate ? -1 : 1))
    .slice(0, limit)
    .map((s) => s.candidate);
}
