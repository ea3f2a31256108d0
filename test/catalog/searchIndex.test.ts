import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { getSchemaResult, searchResultText } from "../../src/catalog/metaTools.js";
import { SearchIndex, stem, tokenize } from "../../src/catalog/searchIndex.js";
import { CORPUS_DIR, corpusCatalog } from "./corpusTools.js";

const catalog = corpusCatalog();

describe("tokenize", () => {
  it("splits snake, camel and kebab case, drops stopwords and stems", () => {
    expect(tokenize("create_issue listPullRequests get-file-contents the of a")).toEqual(["creat", "issu", "list", "pull", "request", "get", "file", "content"]);
    expect(tokenize("Creating created creates")).toEqual(["creat", "creat", "creat"]);
    expect(stem("branches")).toBe("branch");
    expect(stem("queries")).toBe("query");
    expect(stem("status")).toBe("status");
  });
});

describe("SearchIndex", () => {
  const index = new SearchIndex(catalog);

  it("finds obvious tools near the top", () => {
    const top = (query: string, n = 3): string[] => index.search(query, n).map((r) => r.name);
    expect(top("create a github issue")).toContain("github_create_issue");
    expect(top("take a screenshot of the page", 5)).toContain("playwright_browser_take_screenshot");
    expect(top("show pod logs in kubernetes")).toContain("kubernetes_kubectl_logs");
    expect(top("send a message to a slack channel")).toContain("slack_slack_post_message");
  });

  it("puts the labelled tool in the top 10 for most corpus queries (compact view)", () => {
    const lines = readFileSync(path.join(CORPUS_DIR, "queries.jsonl"), "utf8").split("\n").filter((l) => l.trim() !== "");
    let hits = 0;
    for (const line of lines) {
      const q = JSON.parse(line) as { query: string; expect: string; also_ok: string[] };
      const ok = new Set([q.expect, ...q.also_ok]);
      if (index.search(q.query, 10).some((r) => ok.has(`${r.server}:${r.tool}`))) hits++;
    }
    expect(hits / lines.length).toBeGreaterThan(0.5);
  });

  it("returns results with name, server, tool, score, summary and signature, deterministically", () => {
    const results = index.search("create a github issue", 5);
    expect(results.length).toBe(5);
    const first = results.find((r) => r.name === "github_create_issue");
    expect(first).toMatchObject({ server: "github", tool: "create_issue", summary: "Create a new issue in a GitHub repository" });
    expect(first?.signature.startsWith("github_create_issue(owner, repo, title")).toBe(true);
    for (let i = 1; i < results.length; i++) expect(results[i - 1]!.score).toBeGreaterThanOrEqual(results[i]!.score);
    expect(new SearchIndex([...catalog].reverse()).search("create a github issue", 5)).toEqual(results);
    expect(index.search("the of a", 5)).toEqual([]);
    expect(index.search("issue", 1000).length).toBeLessThanOrEqual(50);
  });

  it("indexes each mode's own text", () => {
    for (const mode of ["full", "summary", "compact", "lazy"] as const) {
      const modeIndex = new SearchIndex(catalog, { mode });
      expect(modeIndex.size).toBe(catalog.length);
      expect(modeIndex.search("create a github issue", 3).map((r) => r.name), mode).toContain("github_create_issue");
    }
  });
});

describe("meta-tool results", () => {
  it("formats search results as name(sig) — summary lines", () => {
    const index = new SearchIndex(catalog);
    const text = searchResultText(index.search("create a github issue", 2));
    expect(text.split("\n")).toHaveLength(2);
    expect(text).toContain("github_create_issue(owner, repo, title, body?, assignees?: string[], milestone?: number, labels?: string[]) — Create a new issue in a GitHub repository");
    expect(searchResultText([])).toBe("No matching tools.");
  });

  it("get_schema returns the original description and full schemas", () => {
    const tool = catalog.find((t) => t.name === "filesystem_read_text_file");
    if (tool === undefined) throw new Error("filesystem_read_text_file missing");
    const result = getSchemaResult(tool);
    expect(result).toEqual({
      name: "filesystem_read_text_file",
      server: "filesystem",
      uri: "mcp://filesystem/read_text_file",
      description: tool.tool.description,
      inputSchema: tool.tool.inputSchema,
      outputSchema: tool.tool.outputSchema,
      annotations: tool.tool.annotations,
    });
    const github = catalog.find((t) => t.name === "github_create_issue");
    if (github === undefined) throw new Error("github_create_issue missing");
    expect(Object.keys(getSchemaResult(github))).toEqual(["name", "server", "uri", "description", "inputSchema"]);
  });
});
