/** One point of a tokens-vs-fidelity comparison. */
export interface TradeoffPoint {
  id: string;
  /** Cost: fewer is better. */
  tokens: number;
  /** Benefit: more is better. */
  fidelity: number;
}

/**
 * The ids of the points on the Pareto frontier: those no other point dominates, where a point
 * dominates another when it costs no more tokens and keeps at least as much fidelity, and is
 * strictly better in one of the two. Points with a non-finite coordinate are never on it. Two
 * identical points are both on the frontier (neither is strictly better).
 */
export function paretoFrontier(points: readonly TradeoffPoint[]): Set<string> {
  const valid = points.filter((p) => Number.isFinite(p.tokens) && Number.isFinite(p.fidelity));
  const out = new Set<string>();
  for (const p of valid) {
    const dominated = valid.some((q) => q !== p && q.tokens <= p.tokens && q.fidelity >= p.fidelity && (q.tokens < p.tokens || q.fidelity > p.fidelity));
    if (!dominated) out.add(p.id);
  }
  return out;
}
