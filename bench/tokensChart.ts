import type { TokenRow } from "./tokens.js";
import { MODES } from "../src/config/schema.js";

const COLORS: Record<string, string> = {
  full: "#5b6770",
  summary: "#3b82c4",
  compact: "#2a9d60",
  lazy: "#e0a030",
};

function escapeXml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/**
 * A grouped bar chart (SVG text) of o200k tokens per mode: one group per server plus the pooled
 * total, one bar per mode, on a log scale so a 17k-token server and a 300-token one both read.
 */
export function tokensSvg(rows: readonly TokenRow[], title: string): string {
  const groupWidth = 4 * 9 + 10;
  const left = 60;
  const top = 40;
  const plotHeight = 260;
  const bottom = 120;
  const width = left + rows.length * groupWidth + 20;
  const height = top + plotHeight + bottom;
  const max = Math.max(...rows.flatMap((r) => MODES.map((m) => r.modes[m])), 10);
  const logMax = Math.log10(max);
  const y = (v: number): number => top + plotHeight - (v <= 1 ? 0 : (Math.log10(v) / logMax) * plotHeight);
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="10">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="${left}" y="20" font-size="14" font-weight="bold">${escapeXml(title)}</text>`,
  ];
  for (let p = 0; p <= Math.ceil(logMax); p++) {
    const v = 10 ** p;
    if (v > max * 1.01) break;
    parts.push(
      `<line x1="${left}" x2="${width - 20}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" stroke="#ddd"/>`,
      `<text x="${left - 6}" y="${(y(v) + 3).toFixed(1)}" text-anchor="end">${v.toLocaleString("en-US")}</text>`,
    );
  }
  rows.forEach((row, g) => {
    const x0 = left + g * groupWidth + 5;
    MODES.forEach((mode, i) => {
      const v = row.modes[mode];
      const yTop = y(v);
      parts.push(
        `<rect x="${x0 + i * 9}" y="${yTop.toFixed(1)}" width="8" height="${(top + plotHeight - yTop).toFixed(1)}" fill="${COLORS[mode]}"><title>${escapeXml(`${row.server} ${mode}: ${v} tokens`)}</title></rect>`,
      );
    });
    const lx = x0 + 18;
    const ly = top + plotHeight + 8;
    parts.push(
      `<text x="${lx}" y="${ly}" transform="rotate(60 ${lx} ${ly})"${row.server === "total" ? ' font-weight="bold"' : ""}>${escapeXml(row.server)}</text>`,
    );
  });
  MODES.forEach((mode, i) => {
    const lx = left + i * 90;
    const ly = height - 14;
    parts.push(`<rect x="${lx}" y="${ly - 9}" width="10" height="10" fill="${COLORS[mode]}"/>`, `<text x="${lx + 14}" y="${ly}">${mode}</text>`);
  });
  parts.push(`<text x="${left + 380}" y="${height - 14}" fill="#555">o200k_base tokens, log scale</text>`, "</svg>");
  return `${parts.join("\n")}\n`;
}
