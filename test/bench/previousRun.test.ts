import { describe, expect, it } from "vitest";
import { compareRuns, comparisonMarkdown, figures } from "../../bench/previousRun.js";

describe("the previous bench run beside this one", () => {
  it("matches figures by path, array rows by their key field, and skips when and where a run ran", () => {
    const run = {
      startedAt: "2026-01-01",
      machine: { cpus: 2 },
      totalRuntimeMs: 1000,
      tokens: { rows: [{ server: "github", full: 100 }, { server: "memory", full: 50 }] },
      latency: { p50: 0.5, ok: true, label: "x" },
    };
    expect([...figures(run)]).toEqual([
      ["tokens.rows[server=github].full", 100],
      ["tokens.rows[server=memory].full", 50],
      ["latency.p50", 0.5],
    ]);
  });

  it("reports what moved, most first, and matches rows that changed places", () => {
    const before = { tokens: { rows: [{ server: "github", full: 100 }, { server: "memory", full: 50 }] }, latency: { p50: 0.5 }, gone: 3 };
    const after = { tokens: { rows: [{ server: "memory", full: 50 }, { server: "github", full: 110 }] }, latency: { p50: 1 }, added: 4 };
    const changes = compareRuns(before, after);
    expect(changes.map((c) => [c.path, c.before, c.after, c.change])).toEqual([
      ["latency.p50", 0.5, 1, 1],
      ["tokens.rows[server=github].full", 100, 110, 0.1],
      ["tokens.rows[server=memory].full", 50, 50, 0],
    ]);
    const markdown = comparisonMarkdown(changes, "2026-01-01", 0.05);
    expect(markdown).toContain("3 figures in both runs; 2 moved by 5% or more");
    expect(markdown).toContain("| `latency.p50` | 0.5 | 1 | +100.0% |");
    expect(markdown).not.toContain("server=memory");
  });

  it("says a figure that was zero and is not any more is new", () => {
    const [change] = compareRuns({ a: 0 }, { a: 2 });
    expect(change?.change).toBe(Infinity);
    expect(comparisonMarkdown([change!], "t")).toContain("| new |");
  });
});
