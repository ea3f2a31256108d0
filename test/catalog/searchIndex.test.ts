import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { getSchemaResult, searchResultText } from "../../src/catalog/metaTools.js";
import { SearchIndex, stem, tokenize } from "../../src/catalog/searchIndex.js";
import type { CatalogTool } from "../../src/catalog/types.js";
import { CORPUS_DIR, corpusCatalog } from "./corpusTools.js";
import { admitted } from "../helpers/admitted.js";

const catalog = corpusCatalog();

function synthetic(server: string, name: string, description: string, extra: { summary?: string; properties?: Record<string, unknown> } = {}): CatalogTool {
  return {
    name: `${server}_${name}`,
    server,
    uri: `mcp://${server}/${name}`,
    key: `${server}:${name}:0`,
    tool: admitted({ name, description, inputSchema: { type: "object", properties: extra.properties ?? {} } }),
    summary: { summary: extra.summary ?? description, params: {} },
  };
}

describe("tokenize", () => {
  it("splits snake, camel and kebab case, drops stopwords and stems", () => {
    expect(tokenize("create_issue listPullRequests get-file-contents the of a")).toEqual([
      "creat",
      "issu",
      "list",
      "pull",
      "request",
      "get",
      "file",
      "content",
    ]);
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
    const lines = readFileSync(path.join(CORPUS_DIR, "queries.jsonl"), "utf8")
      .split("\n")
      .filter((l) => l.trim() !== "");
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
    expect(first?.signature.startsWith("github_create_issue(owner: string, repo: string, title: string")).toBe(true);
    for (let i = 1; i < results.length; i++) expect(results[i - 1]!.score).toBeGreaterThanOrEqual(results[i]!.score);
    expect(new SearchIndex([...catalog].reverse()).search("create a github issue", 5)).toEqual(results);
    expect(index.search("the of a", 5)).toEqual([]);
    expect(index.search("issue", 1000).length).toBeLessThanOrEqual(50);
  });

  it("puts a tool asked for by name first: exact, then by the end of its name", () => {
    const near = ["get_page_history", "get_page_comments", "get_page_property"].map((n) => synthetic("wiki", n, `${n.replace(/_/g, " ")}.`));
    const exact = synthetic(
      "wiki",
      "get_page",
      "Returns one entry of the knowledge base with its revision number, author, creation and edit timestamps, labels, attachments, comment threads, watchers and the rendered body in markdown.",
    );
    const suffixed = synthetic(
      "blog",
      "v2_get_page",
      "Returns one post of the blog with its author, tags, and the rendered body in markdown, plus its comments and the list of people who liked it.",
    );
    const tools = [...near, exact, suffixed, ...catalog.slice(0, 40)];
    // Word scores alone rank the tool named exactly so last of these five: its long description
    // dilutes the name's words (BM25 length normalization), and the three `get_page_*` are short.
    const named = new SearchIndex(tools);
    expect(named.search("get_page", 2).map((r) => r.name)).toEqual(["wiki_get_page", "blog_v2_get_page"]);
    expect(named.search("Get-Page", 2).map((r) => r.name)).toEqual(["wiki_get_page", "blog_v2_get_page"]);
    expect(named.search("blog_v2_get_page", 1)[0]?.name).toBe("blog_v2_get_page");
    const scores = named.search("get page", 3).map((r) => r.score);
    expect(scores[0]).toBeGreaterThan(scores[1] as number);
    expect(scores[1]).toBeGreaterThan(scores[2] as number);
    // One word is not a name: "page" ends names too often to mean one, and ranks by words.
    expect(named.search("page", 1)[0]?.name).not.toBe("wiki_get_page");
    expect(index.search("echo", 1)[0]?.name).toBe("everything_echo");
  });

  it("finds a tool by words only its full description or its parameter descriptions say", () => {
    const tool = synthetic("store", "read_entry", "Reads an entry by key. Deleted entries come back as tombstones until compaction.", {
      summary: "Reads an entry by key.",
      properties: { key: { type: "string" }, include_old: { type: "boolean", description: "Also look in the cold archive" } },
    });
    const tools = [tool, ...catalog];
    for (const query of ["tombstones", "cold archive"]) {
      expect(new SearchIndex(tools).search(query, 1)[0]?.name, query).toBe("store_read_entry");
      expect(
        new SearchIndex(tools, { mode: "compact" }).search(query, 5).map((r) => r.name),
        query,
      ).not.toContain("store_read_entry");
    }
  });

  it("indexes each mode's own text", () => {
    for (const mode of ["full", "summary", "compact", "lazy"] as const) {
      const modeIndex = new SearchIndex(catalog, { mode });
      expect(modeIndex.size).toBe(catalog.length);
      expect(
        modeIndex.search("create a github issue", 3).map((r) => r.name),
        mode,
      ).toContain("github_create_issue");
    }
  });
});

describe("meta-tool results", () => {
  it("formats search results as name(sig) — summary lines", () => {
    const index = new SearchIndex(catalog);
    const text = searchResultText(index.search("create a github issue", 2));
    expect(text.split("\n")).toHaveLength(2);
    expect(text).toContain(
      "github_create_issue(owner: string, repo: string, title: string, body?: string, assignees?: string[], milestone?: number, labels?: string[]) — Create a new issue in a GitHub repository",
    );
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
