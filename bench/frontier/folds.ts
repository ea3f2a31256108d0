import { createHash } from "node:crypto";

/** Default number of folds of the leave-servers-out evaluation. */
export const DEFAULT_FOLDS = 5;

/** One fold: the servers held out and the servers the tuned settings are chosen on. */
export interface Fold {
  index: number;
  /** Held-out servers: scored, never seen while choosing settings. */
  test: string[];
  /** Every other server. */
  train: string[];
}

function digest(name: string): string {
  return createHash("sha256").update(name).digest("hex");
}

/**
 * Splits servers into `k` folds by server, deterministically: servers are ordered by the SHA-256
 * of their name (an order no one picked, independent of file names and of what else is in the
 * corpus) and dealt round-robin, so fold sizes differ by at most one. Every server is in exactly
 * one test set; a fold's training set is every other server. With fewer servers than `k`, there
 * are as many folds as servers (leave-one-server-out).
 */
export function assignFolds(servers: readonly string[], k: number = DEFAULT_FOLDS): Fold[] {
  if (!Number.isInteger(k) || k < 2) throw new RangeError(`folds: expected an integer k >= 2, got ${k}`);
  const unique = [...new Set(servers)];
  if (unique.length < 2) throw new RangeError(`folds: need at least 2 servers to hold one out, got ${unique.length}`);
  const count = Math.min(k, unique.length);
  const ordered = unique
    .map((name) => ({ name, key: digest(name) }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.name < b.name ? -1 : 1))
    .map((s) => s.name);
  const tests: string[][] = Array.from({ length: count }, () => []);
  ordered.forEach((name, i) => {
    tests[i % count]?.push(name);
  });
  return tests.map((test, index) => {
    const held = new Set(test);
    return { index, test: [...test].sort(), train: unique.filter((s) => !held.has(s)).sort() };
  });
}

/** The server of a `server:tool` key (servers never contain `:` in the corpus; tools may). */
export function serverOfKey(key: string): string {
  const i = key.indexOf(":");
  return i === -1 ? key : key.slice(0, i);
}
