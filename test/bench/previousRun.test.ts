import { describe, expect, it } from "vitest";
import { compareRuns, comparisonMarkdown, figures, newFigures } from "../../bench/previousRun.js";

describe("the previous bench run beside this one", () => {
  it("matches figures by path, array rows by their key field, and skips when and where a run ran", () => {
    const run = {
      startedAt: "2026-01-01",
      machine: { cpus: 2 },
      totalRuntimeMs: 1000,
      tokens: {
        rows: [
          { server: "github", full: 100 },
          { server: "memory", full: 50 },
        ],
      },
      latency: { p50: 0.5, ok: true, label: "x" },
    };
    expect([...figures(run)]).toEqual([
      ["tokens.rows[server=github].full", 100],
      ["tokens.rows[server=memory].full", 50],
      ["latency.p50", 0.5],
    ]);
  });

  it("reports what moved, most first, and matches rows that changed places", () => {
    const before = {
      tokens: {
        rows: [
          { server: "github", full: 100 },
          { server: "memory", full: 50 },
        ],
      },
      latency: { p50: 0.5 },
      gone: 3,
    };
    const after = {
      tokens: {
        rows: [
          { server: "memory", full: 50 },
          { server: "github", full: 110 },
        ],
      },
      latency: { p50: 1 },
      added: 4,
    };
    const changes = compareRuns(before, after);
    expect(changes.map((c) => [c.path, c.before, c.after, c.change])).toEqual([
      ["latency.p50", 0.5, 1, 1],
      ["tokens.rows[server=github].full", 100, 110, 0.1],
      ["tokens.rows[server=memory].full", 50, 50, 0],
    ]);
    const markdown = comparisonMarkdown(changes, "2026-01-01", 0.05);
    expect(markdown).toContain("3 figures in both runs; 2 moved by 5% or more");
    expect(markdown).toContain("| `latency.p50` | 0.5 | 1 | +100.0% |");
    const [moved, every] = markdown.split("<details>");
    expect(moved).not.toContain("server=memory");
    expect(every).toContain("Every figure of this run beside the previous run's (3)");
    expect(every).toContain("| `tokens.rows[server=memory].full` | 50 | 50 | 0.0% |");
    expect(every).toContain("| `latency.p50` | 0.5 | 1 | +100.0% |");
  });

  it("lists a figure the previous run did not have as new, with no previous value", () => {
    const before = { a: 1 };
    const after = { a: 1, b: 7 };
    const markdown = comparisonMarkdown(compareRuns(before, after), "t", 0.05, newFigures(before, after));
    expect(markdown).toContain("1 figures are new in this run.");
    expect(markdown).toContain("| `b` | — | 7 | — |");
  });

  it("says a figure that was zero and is not any more is new", () => {
    const [change] = compareRuns({ a: 0 }, { a: 2 });
    expect(change?.change).toBe(Infinity);
    expect(comparisonMarkdown([change!], "t")).toContain("| new |");
  });
});
