import { describe, expect, it } from "vitest";
import { guardSummary, isDestructiveTool } from "../../src/summarize/guard.js";
import type { RawTool } from "../../src/model/types.js";
import { corpusTool, loadCorpusTools } from "./corpus.js";

const corpus = loadCorpusTools();
const tool = (server: string, name: string): RawTool => corpusTool(corpus, server, name);

/** mongodb:find with a description long enough that length is not what the test is about. */
function longFind(): RawTool {
  const find = tool("mongodb", "find");
  return { ...find, description: `${find.description ?? ""}. ${"Returns the matching documents as EJSON. ".repeat(3)}` };
}

function reasons(t: RawTool, summary: string, params: Record<string, string> = {}): string[] {
  const verdict = guardSummary(t, { summary, params });
  return verdict.ok ? [] : verdict.reasons;
}

describe("guardSummary", () => {
  it("accepts a faithful summary", () => {
    const findTool = tool("mongodb", "find");
    expect(guardSummary(findTool, { summary: "Runs a find query on a collection.", params: { filter: "Query filter" } })).toEqual({
      ok: true,
    });
  });

  it("rejects an empty summary and one longer than the original", () => {
    const merge = tool("github", "merge_pull_request"); // "Merge a pull request"
    expect(reasons(merge, "   ")).toEqual(["summary is empty"]);
    expect(reasons(merge, "Merges an open pull request into its base branch")[0]).toMatch(/longer than the original/);
    expect(reasons(merge, "Merge a pull request")).toEqual([]);
  });

  it("rejects parameter names the schema does not have, in the summary and in params", () => {
    const findTool = longFind();
    expect(reasons(findTool, "Runs a find query; pass `collectionName` and the sortOrder.")).toEqual([
      'mentions "collectionName", which is not a parameter of the tool',
      'mentions "sortOrder", which is not a parameter of the tool',
    ]);
    expect(reasons(findTool, "Runs a find query using max_docs.")).toEqual([
      'mentions "max_docs", which is not a parameter of the tool',
    ]);
    expect(reasons(findTool, "Runs a find query.", { collection: "Name; see `batch_size`" })).toEqual([
      'mentions "batch_size", which is not a parameter of the tool',
    ]);
    expect(reasons(findTool, "Runs a find query.", { maxDocs: "Limit" })).toEqual([
      "params.maxDocs is not a property of the input schema",
    ]);
  });

  it("does not reject ordinary words, real parameters or identifiers from the tool's own text", () => {
    const findTool = longFind();
    expect(reasons(findTool, "Runs a find query in MongoDB on macOS or iOS, in JavaScript; uses `connectionId`.")).toEqual([]);
    // `firecrawl_search` is not a parameter, but the original description names it.
    const feedback = tool("firecrawl", "firecrawl_search_feedback");
    expect(reasons(feedback, "Sends feedback on a firecrawl_search result by searchId.")).toEqual([]);
    // Nested property names are real names too.
    expect(reasons(feedback, "Rates a search; valuableSources lists each url.")).toEqual([]);
  });

  it("rejects a required parameter described as optional", () => {
    const search = tool("github", "search_repositories"); // query is required
    expect(reasons(search, "Search GitHub repositories", { query: "Search query (optional)" })).toEqual([
      "required parameter query is described as optional",
    ]);
    expect(reasons(search, "Search GitHub repositories", { query: "Search text, used if provided" })).toEqual([
      "required parameter query is described as optional",
    ]);
    expect(reasons(search, "Search GitHub repositories", { page: "Page number, optional" })).toEqual([]);
  });

  it("rejects a destructive tool described as harmless", () => {
    const write = tool("filesystem", "write_file");
    expect(reasons(write, "Safely writes a file.")).toEqual(['destructive tool described as harmless ("Safely")']);
    expect(reasons(write, "Writes a file; read-only.")).toHaveLength(1);
    expect(reasons(write, "Overwrites a file with new content.")).toEqual([]);
    const del = tool("memory", "delete_entities");
    expect(reasons(del, "Deletes entities, no side effects")[0]).toMatch(/harmless/);
    // A read-only tool may say it is read-only.
    expect(reasons(tool("mongodb", "find"), "Read-only find query.")).toEqual([]);
  });
});

describe("isDestructiveTool", () => {
  it("follows annotations first, then verbs in the name and description", () => {
    expect(isDestructiveTool(tool("filesystem", "write_file"))).toBe(true); // destructiveHint
    expect(isDestructiveTool(tool("mongodb", "find"))).toBe(false); // readOnlyHint
    expect(isDestructiveTool(tool("redis", "delete"))).toBe(true); // no annotations, name verb
    expect(isDestructiveTool(tool("github", "create_issue"))).toBe(false);
    const unannotated: RawTool = { name: "cleanup_cache", description: "Purges stale entries.", inputSchema: { type: "object" } };
    expect(isDestructiveTool(unannotated)).toBe(true);
    expect(isDestructiveTool({ name: "dropDatabase", inputSchema: { type: "object" } })).toBe(true);
  });
});
