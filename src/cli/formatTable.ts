/** Column alignment of {@link formatTable}. */
export type Align = "left" | "right";

/** A plain-text table: header, a rule, rows; numbers right-aligned where asked. */
export function formatTable(headers: string[], rows: string[][], align: Align[] = []): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]): string =>
    cells
      .map((cell, i) => (align[i] === "right" ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(headers), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}

/** `12345` -> `12,345`. */
export function formatCount(n: number): string {
  return n.toLocaleString("en-US");
}

/** `0.0834` -> `8.3%`. */
export function formatShare(ratio: number): string {
  return `${(ratio * 100).toFixed(1)}%`;
}
