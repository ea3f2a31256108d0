/** One cell: text as is, numbers with thousands separators, undefined/NaN as an em dash. */
export type Cell = string | number | undefined;

function cellText(cell: Cell): string {
  if (cell === undefined) return "—";
  if (typeof cell === "number") {
    if (!Number.isFinite(cell)) return "—";
    return Number.isInteger(cell) ? cell.toLocaleString("en-US") : cell.toLocaleString("en-US", { maximumFractionDigits: 2 });
  }
  return cell.replace(/\|/g, "\\|").replace(/\n/g, " ");
}

/**
 * A GitHub-flavoured markdown table. Columns whose header ends in `>` are right-aligned (the `>`
 * is dropped), which is how numeric columns are marked.
 */
export function markdownTable(headers: readonly string[], rows: readonly (readonly Cell[])[]): string {
  const right = headers.map((h) => h.endsWith(">"));
  const names = headers.map((h) => (h.endsWith(">") ? h.slice(0, -1) : h));
  const lines = [
    `| ${names.join(" | ")} |`,
    `|${right.map((r) => (r ? "--:" : "---")).join("|")}|`,
    ...rows.map((row) => `| ${names.map((_, i) => cellText(row[i])).join(" | ")} |`),
  ];
  return lines.join("\n");
}

/** `value` as a percentage with one decimal, e.g. `9.7%`. */
export function pct(value: number | undefined): string | undefined {
  if (value === undefined || !Number.isFinite(value)) return undefined;
  return `${(value * 100).toFixed(1)}%`;
}
