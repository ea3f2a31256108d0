/**
 * The previous run beside this one, so a regression shows: every number of `latest.json` that
 * both runs measured, matched by its path (array elements by their `server`, `id`, `path`,
 * `target` or `upstreams` field, else their index), with the relative change.
 */
import { markdownTable } from "./markdownTable.js";
import { isObject } from "../src/model/json.js";

/** One figure both runs have. */
export interface FigureChange {
  path: string;
  before: number;
  after: number;
  /** (after - before) / |before|; Infinity when before is 0 and after is not. */
  change: number;
}

const KEY_FIELDS = ["server", "id", "path", "target", "upstreams", "entries", "view", "mode", "name"];

/** Fields that say when or on what a run ran, not what it measured. */
const NOT_FIGURES = new Set(["startedAt", "machine", "totalRuntimeMs"]);

function elementKey(element: unknown, index: number): string {
  if (isObject(element)) {
    const record = element;
    for (const field of KEY_FIELDS) {
      const value = record[field];
      if (typeof value === "string" || typeof value === "number") return `${field}=${value}`;
    }
  }
  return String(index);
}

/** Every finite number in `value`, by path. */
export function figures(value: unknown, prefix = "", out = new Map<string, number>()): Map<string, number> {
  if (typeof value === "number") {
    if (Number.isFinite(value)) out.set(prefix, value);
  } else if (Array.isArray(value)) {
    value.forEach((element, i) => {
      figures(element, `${prefix}[${elementKey(element, i)}]`, out);
    });
  } else if (value !== null && typeof value === "object") {
    for (const [key, child] of Object.entries(value)) {
      if (prefix === "" && NOT_FIGURES.has(key)) continue;
      figures(child, prefix === "" ? key : `${prefix}.${key}`, out);
    }
  }
  return out;
}

/** The figures both runs have, most changed first. */
export function compareRuns(previous: unknown, current: unknown): FigureChange[] {
  const before = figures(previous);
  const out: FigureChange[] = [];
  for (const [path, after] of figures(current)) {
    const was = before.get(path);
    if (was === undefined) continue;
    const change = was === 0 ? (after === 0 ? 0 : Infinity) : (after - was) / Math.abs(was);
    out.push({ path, before: was, after, change });
  }
  return out.sort((a, b) => Math.abs(b.change) - Math.abs(a.change) || a.path.localeCompare(b.path));
}

function formatNumber(value: number): string {
  return Number.isInteger(value) ? value.toLocaleString("en-US") : String(Math.round(value * 1000) / 1000);
}

/** The figures this run has and the previous one did not, by path. */
export function newFigures(previous: unknown, current: unknown): { path: string; after: number }[] {
  const before = figures(previous);
  return [...figures(current)].filter(([path]) => !before.has(path)).map(([path, after]) => ({ path, after }));
}

function formatChange(change: number): string {
  return change === Infinity ? "new" : `${change > 0 ? "+" : ""}${(change * 100).toFixed(1)}%`;
}

/**
 * Markdown: the figures that moved by at least `threshold` (relative), each with the previous
 * run's value; then, folded, every figure of this run with the previous run's beside it (by path;
 * "—" where the previous run did not measure it), so a small drift shows as well as a jump.
 */
export function comparisonMarkdown(
  changes: readonly FigureChange[],
  previousStartedAt: string,
  threshold = 0.05,
  added: readonly { path: string; after: number }[] = [],
): string {
  const moved = changes.filter((c) => Math.abs(c.change) >= threshold);
  const newNote = added.length > 0 ? ` ${added.length} figures are new in this run.` : "";
  const header = `## Against the previous run (${previousStartedAt})\n\n${changes.length} figures in both runs; ${moved.length} moved by ${Math.round(threshold * 100)}% or more, the rest by less.${newNote}`;
  const movedTable =
    moved.length === 0
      ? ""
      : `\n\n${markdownTable(
          ["figure", "previous", "this run", "change"],
          moved.map((c) => [`\`${c.path}\``, formatNumber(c.before), formatNumber(c.after), formatChange(c.change)]),
        )}`;
  const every = [
    ...changes.map((c) => ({ path: c.path, cells: [formatNumber(c.before), formatNumber(c.after), formatChange(c.change)] })),
    ...added.map((a) => ({ path: a.path, cells: ["—", formatNumber(a.after), "—"] })),
  ].sort((x, y) => x.path.localeCompare(y.path));
  if (every.length === 0) return header + movedTable;
  const all = markdownTable(
    ["figure", "previous", "this run", "change"],
    every.map((e) => [`\`${e.path}\``, ...e.cells]),
  );
  return `${header}${movedTable}\n\n<details><summary>Every figure of this run beside the previous run's (${every.length})</summary>\n\n${all}\n\n</details>`;
}
