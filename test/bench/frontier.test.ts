import { describe, expect, it } from "vitest";
import { loadCorpus } from "../../bench/corpus.js";
import { assignFolds, serverOfKey } from "../../bench/frontier/folds.js";
import { paretoFrontier } from "../../bench/frontier/pareto.js";
import { Bm25Proxy } from "../../bench/frontier/proxies.js";
import { compressorEntry, views } from "../../bench/frontier/views.js";
import { appendedWordList } from "../../bench/frontier/wordList.js";
import { admitted } from "../helpers/admitted.js";

describe("assignFolds", () => {
  const servers = loadCorpus().map((s) => s.server);

  it("puts every corpus server in exactly one test set and never in its own training set", () => {
    const folds = assignFolds(servers, 5);
    expect(folds).toHaveLength(5);
    const tested = folds.flatMap((f) => f.test);
    expect(tested.sort()).toEqual([...servers].sort());
    for (const fold of folds) {
      const train = new Set(fold.train);
      expect(fold.test.filter((s) => train.has(s))).toEqual([]);
      expect(fold.train.length + fold.test.length).toBe(servers.length);
    }
    const sizes = folds.map((f) => f.test.length);
    expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
  });

  it("is deterministic and independent of the order servers are given in", () => {
    const a = assignFolds(servers, 5);
    const b = assignFolds([...servers].reverse(), 5);
    expect(b).toEqual(a);
  });

  it("keeps a query's tools on its server's side: no key of a test server is reachable from training", () => {
    const folds = assignFolds(["github", "gitlab", "slack", "notion", "redis", "sentry"], 3);
    for (const fold of folds) {
      for (const key of fold.test.map((s) => `${s}:some_tool`)) expect(fold.train).not.toContain(serverOfKey(key));
    }
  });

  it("falls back to one server per fold when there are fewer servers than folds, and refuses nonsense", () => {
    expect(assignFolds(["a", "b", "c"], 5).map((f) => f.test.length)).toEqual([1, 1, 1]);
    expect(() => assignFolds(["a"], 5)).toThrow(/at least 2 servers/);
    expect(() => assignFolds(["a", "b"], 1)).toThrow(/k >= 2/);
  });
});

describe("paretoFrontier", () => {
  it("keeps the points no other point beats on both tokens and fidelity", () => {
    const points = [
      { id: "names", tokens: 10, fidelity: 0.2 },
      { id: "cheap-good", tokens: 20, fidelity: 0.6 },
      { id: "dominated", tokens: 30, fidelity: 0.5 },
      { id: "same-cost-worse", tokens: 20, fidelity: 0.55 },
      { id: "full", tokens: 100, fidelity: 0.7 },
      { id: "costly-no-gain", tokens: 120, fidelity: 0.7 },
      { id: "broken", tokens: Number.NaN, fidelity: 0.9 },
    ];
    expect([...paretoFrontier(points)].sort()).toEqual(["cheap-good", "full", "names"]);
  });

  it("keeps both of two identical points and handles an empty input", () => {
    expect(
      [
        ...paretoFrontier([
          { id: "a", tokens: 5, fidelity: 0.5 },
          { id: "b", tokens: 5, fidelity: 0.5 },
        ]),
      ].sort(),
    ).toEqual(["a", "b"]);
    expect(paretoFrontier([]).size).toBe(0);
  });
});

describe("appendedWordList", () => {
  it("flags trailing runs of single words without a verb", () => {
    expect(appendedWordList("Read the complete contents of a file as text. Lines.")).toBe("Lines.");
    expect(appendedWordList("Create a new directory or ensure a directory exists. Multiple nested, perfect, setting, structures, projects.")).toBe(
      "Multiple nested, perfect, setting, structures, projects.",
    );
    expect(appendedWordList("Cancel a subscription in Stripe. ID.")).toBe("ID.");
  });

  it("leaves prose alone", () => {
    expect(appendedWordList("Read the complete contents of a file as text.")).toBeUndefined();
    expect(appendedWordList("Read a file. Supports JSON, YAML, TOML.")).toBeUndefined();
    expect(appendedWordList("Search issues. Use a query to filter them by label.")).toBeUndefined();
    expect(appendedWordList("List open pull requests\n(owner, repo, state?)")).toBeUndefined();
  });
});

describe("Bm25Proxy", () => {
  it("ranks by shared words and honours a per-query restriction", async () => {
    const docs = [
      { key: "fs:read_file", text: "read file Read the contents of a file" },
      { key: "gh:create_issue", text: "create issue Open a new issue in a repository" },
    ];
    const proxy = new Bm25Proxy();
    expect(await proxy.rankAll(docs, ["open an issue", "read a file"])).toEqual([["gh:create_issue"], ["fs:read_file"]]);
    expect(await proxy.rankAll(docs, ["open an issue"], { restrict: [["fs:read_file"]] })).toEqual([[]]);
  });
});

describe("mcp-compressor renderings", () => {
  const tool = {
    name: "gh_create_issue",
    server: "gh",
    uri: "mcp://gh/create_issue",
    key: "gh:create_issue:0",
    tool: admitted({
      name: "create_issue",
      description: "Create a new issue. Needs write access.\nSecond line.",
      inputSchema: { type: "object", properties: { owner: { type: "string" }, title: { type: "string" } } },
    }),
  };

  it("lists a tool per level: whole description, first line to its first period, names only", () => {
    expect(compressorEntry(tool, "low")).toBe("<tool>create_issue(owner, title): Create a new issue. Needs write access.\nSecond line.</tool>");
    expect(compressorEntry(tool, "medium")).toBe("<tool>create_issue(owner, title): Create a new issue</tool>");
    expect(compressorEntry(tool, "high")).toBe("<tool>create_issue(owner, title)</tool>");
  });

  it("sends wrappers per server, and at max no listing but a list wrapper", () => {
    const all = views();
    const names = (id: string): string[] =>
      (all.find((v) => v.id === id)?.list([tool]) as { function: { name: string; description: string } }[]).map((f) => f.function.name);
    expect(names("compressor-medium")).toEqual(["gh_get_tool_schema", "gh_invoke_tool"]);
    expect(names("compressor-max")).toEqual(["gh_get_tool_schema", "gh_invoke_tool", "gh_list_tools"]);
    const medium = all.find((v) => v.id === "compressor-medium")?.list([tool]) as { function: { description: string } }[];
    expect(medium[0]?.function.description).toContain("<tool>create_issue(owner, title): Create a new issue</tool>");
  });
});
