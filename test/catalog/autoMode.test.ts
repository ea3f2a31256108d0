import { describe, expect, it } from "vitest";
import { CALL_TOOL, GET_SCHEMA, SEARCH_TOOLS } from "../../src/catalog/metaTools.js";
import { autoChoice, DEFAULT_TOKEN_BUDGET, listedToolTokens, renderTools, tokenReport } from "../../src/catalog/renderTools.js";
import { ToolCatalog } from "../../src/catalog/toolCatalog.js";
import { JsonlStore } from "../../src/cache/jsonlStore.js";
import { createToolHasher } from "../../src/catalog/toolHash.js";
import { tempDir } from "../helpers/cliHarness.js";
import path from "node:path";
import { corpusCatalog, loadCorpus } from "./corpusTools.js";

const catalog = corpusCatalog(loadCorpus());
const report = tokenReport(catalog);

describe("mode auto", () => {
  it("serves the richest view that fits the budget", () => {
    const at = (tokenBudget: number) => autoChoice(catalog, { auto: { tokenBudget } });
    expect(at(report.full.openAiTokens).view).toBe("full");
    expect(at(report.full.openAiTokens - 1).view).toBe("summary");
    expect(at(report.summary.openAiTokens).view).toBe("summary");
    expect(at(report.summary.openAiTokens - 1).view).toBe("compact");
    expect(at(report.compact.openAiTokens).view).toBe("compact");
    expect(at(report.compact.openAiTokens - 1).view).toBe("lazy");
    const compact = at(report.compact.openAiTokens);
    expect(JSON.stringify(compact.listed)).toBe(JSON.stringify(renderTools(catalog, "compact")));
    expect(compact.tokens).toBe(report.compact.openAiTokens);
    // The default budget is below the pooled corpus' compact list: lazy plus what fits.
    expect(DEFAULT_TOKEN_BUDGET).toBeLessThan(report.compact.openAiTokens);
    expect(renderTools(catalog, "auto")[0]?.name).toBe(SEARCH_TOOLS);
  });

  it("beside lazy lists pinned tools first, then the most called, within the budget", () => {
    const lazyTokens = report.lazy.openAiTokens;
    const callCounts = new Map([
      ["github:create_issue", 40],
      ["slack:slack_post_message", 90],
      ["filesystem:read_text_file", 7],
    ]);
    const pins = ["notion_API-post-search", "stripe_*_customer*"];
    const roomy = autoChoice(catalog, { auto: { tokenBudget: lazyTokens + 2_000, pins, callCounts } });
    expect(roomy.view).toBe("lazy");
    expect(roomy.listed.slice(0, 3).map((t) => t.name)).toEqual([SEARCH_TOOLS, GET_SCHEMA, CALL_TOOL]);
    // Listed in server and tool order, so the list changes only when the set does.
    expect(roomy.extra).toEqual([
      "filesystem_read_text_file",
      "github_create_issue",
      "notion_API-post-search",
      "slack_slack_post_message",
      "stripe_create_customer",
      "stripe_list_customers",
    ]);
    expect(roomy.tokens).toBeLessThanOrEqual(lazyTokens + 2_000);
    // Each extra tool in its compact form.
    const compact = new Map(renderTools(catalog, "compact").map((t) => [t.name, t]));
    for (const tool of roomy.listed.slice(3)) expect(tool).toEqual(compact.get(tool.name));

    // A tight budget keeps the pins, then the most called that still fit.
    const pinnedCost = roomy.listed
      .slice(3)
      .filter((t) => t.name.startsWith("notion_") || t.name.startsWith("stripe_"))
      .reduce((sum, t) => sum + listedToolTokens(t) + 1, 0);
    const slack = compact.get("slack_slack_post_message");
    if (slack === undefined) throw new Error("slack_slack_post_message missing");
    const tight = autoChoice(catalog, { auto: { tokenBudget: lazyTokens + pinnedCost + listedToolTokens(slack) + 3, pins, callCounts } });
    expect(tight.extra).toEqual(["notion_API-post-search", "slack_slack_post_message", "stripe_create_customer", "stripe_list_customers"]);
    // Lazy is the floor: below it, it is served alone.
    expect(autoChoice(catalog, { auto: { tokenBudget: 10, pins, callCounts } })).toMatchObject({ view: "lazy", extra: [] });
  });

  it("is byte-stable: same tools, pins and counts give the same bytes whatever the input order", () => {
    const options = { auto: { tokenBudget: 3_000, pins: ["github_*"], callCounts: new Map([["memory:read_graph", 3]]) } };
    const a = JSON.stringify(renderTools(catalog, "auto", options));
    expect(JSON.stringify(renderTools([...catalog].reverse(), "auto", options))).toBe(a);
    expect(JSON.stringify(renderTools(catalog, "auto", options))).toBe(a);
  });

  it("in a catalog, changes the list only when new counts are handed over, and says so only if its bytes differ", async () => {
    const { dir, cleanup } = await tempDir();
    const store = await JsonlStore.open({ file: path.join(dir, "summaries.jsonl") });
    const tools = catalog.map((t) => ({ server: t.server, tool: t.tool, name: t.name, uri: t.uri }));
    const small = new ToolCatalog({ store, hasher: await createToolHasher(), changeDebounceMs: 1, auto: { tokenBudget: 1_500 } });
    try {
      small.setTools(tools);
      let changes = 0;
      small.onChange(() => changes++);
      const before = JSON.stringify(small.list("auto"));
      expect(small.list("auto").map((t) => t.name)).toEqual([SEARCH_TOOLS, GET_SCHEMA, CALL_TOOL]);
      // Counts handed over that change nothing: same bytes, no notification.
      expect(small.setCallCounts(new Map())).toBe(false);
      expect(JSON.stringify(small.list("auto"))).toBe(before);
      expect(small.setCallCounts(new Map([["github:create_issue", 5]]))).toBe(true);
      expect(small.list("auto").map((t) => t.name)).toContain("github_create_issue");
      await expect.poll(() => changes, { timeout: 5_000 }).toBe(1);
    } finally {
      small.close();
      await store.close();
      await cleanup();
    }
  });
});
