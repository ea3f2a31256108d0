import { beforeAll, describe, expect, it } from "vitest";
import type { CacheEntry } from "../../src/cache/cacheEntry.js";
import { cacheKey } from "../../src/cache/cacheEntry.js";
import { BoundedMemo, CatalogMemo } from "../../src/catalog/catalogMemo.js";
import { createToolHasher, type ToolHasher } from "../../src/catalog/toolHash.js";
import { ToolCatalog, type ToolCatalogOptions } from "../../src/catalog/toolCatalog.js";
import type { CompactSchema } from "../../src/catalog/renderTools.js";
import type { RawTool } from "../../src/model/types.js";
import type { AdmittedExposedTool } from "../../src/catalog/types.js";
import { admitExposed } from "../../src/upstream/admitTool.js";
import { silentLogger } from "../../src/log/logger.js";
import { admitted } from "../helpers/admitted.js";
import { makeEntry } from "../helpers/cacheEntries.js";

let hasher: ToolHasher;
beforeAll(async () => {
  hasher = await createToolHasher();
});

function exposed(tool: RawTool, server = "s"): AdmittedExposedTool {
  return { server, name: `${server}_${tool.name}`, uri: `mcp://${server}/${tool.name}`, tool: admitted(tool) };
}

const issue = (properties: Record<string, unknown>): RawTool => ({
  name: "create_issue",
  description: "Creates an issue in a repository. The issue gets a number, which the answer carries, and it is open until closed.",
  inputSchema: { type: "object", properties, required: Object.keys(properties) },
});

/** A store holding `entries` by key (what the catalog reads of a SummaryStore). */
function storeOf(entries: CacheEntry[] = []): ToolCatalogOptions["store"] {
  const byKey = new Map(entries.map((e) => [e.key, e]));
  return { get: (key: string) => byKey.get(key) };
}

/** The list `mode` of a new catalog over `tools`, with `memo` (a fresh one when not given). */
function listed(
  tools: AdmittedExposedTool[],
  mode: "compact" | "summary" | "full",
  options: { memo?: CatalogMemo; store?: ToolCatalogOptions["store"]; compactSchema?: CompactSchema } = {},
): unknown {
  const catalog = new ToolCatalog({
    store: options.store ?? storeOf(),
    hasher,
    memo: options.memo ?? new CatalogMemo(),
    ...(options.compactSchema ? { compactSchema: options.compactSchema } : {}),
  });
  try {
    catalog.setTools(tools, { queue: false });
    // Through JSON: what a client receives, and a copy the next render cannot alter.
    return JSON.parse(JSON.stringify(catalog.list(mode)));
  } finally {
    catalog.close();
  }
}

describe("BoundedMemo", () => {
  it("never holds more than its limit and keeps what was used since the last turn", () => {
    const memo = new BoundedMemo<number>(4);
    for (let i = 0; i < 50; i++) {
      memo.set(`k${i}`, i);
      expect(memo.size).toBeLessThanOrEqual(4);
      // k0 is read after every write: it stays while the others come and go.
      expect(memo.get("k0")).toBe(0);
    }
    expect(memo.get("k49")).toBe(49);
    expect(memo.get("k1")).toBeUndefined();
    expect(() => new BoundedMemo(1)).toThrow(RangeError);
  });
});

/** {@link hasher}, recording the name of each tool whose schema it hashes in `hashed`. */
function countingHasher(hashed: string[]): ToolHasher {
  return {
    hash: (tool) => {
      hashed.push(tool.name);
      return hasher.hash(tool);
    },
    hashText: (text) => hasher.hashText(text),
  };
}

describe("the catalog memo", () => {
  it("belongs to whoever makes the catalogs: catalogs without one share nothing through the process", () => {
    const hashed: string[] = [];
    const counting = countingHasher(hashed);
    for (let round = 0; round < 2; round++) {
      const catalog = new ToolCatalog({ store: storeOf(), hasher: counting });
      catalog.setTools([exposed(issue({ title: { type: "string" } }))], { queue: false });
      catalog.setTools([exposed(issue({ title: { type: "string" } }))], { queue: false });
      catalog.close();
    }
    // Once per catalog: a relist within one reuses its record, a second catalog has its own memo.
    expect(hashed).toEqual(["create_issue", "create_issue"]);
  });

  it("hashes each tool's schema once: a relist of the same tools as new objects walks none of them", () => {
    const hashed: string[] = [];
    const counting = countingHasher(hashed);
    const memo = new CatalogMemo();
    const relist = (): AdmittedExposedTool[] => [exposed(issue({ title: { type: "string" } })), exposed({ ...issue({}), name: "close_issue" })];
    for (let round = 0; round < 3; round++) {
      const catalog = new ToolCatalog({ store: storeOf(), hasher: counting, memo });
      catalog.setTools(relist(), { queue: false });
      catalog.setTools(relist(), { queue: false });
      catalog.close();
    }
    expect(hashed.sort()).toEqual(["close_issue", "create_issue"]);
    // A changed schema is new content: hashed afresh.
    const catalog = new ToolCatalog({ store: storeOf(), hasher: counting, memo });
    catalog.setTools([exposed(issue({ title: { type: "number" } }))], { queue: false });
    catalog.close();
    expect(hashed.sort()).toEqual(["close_issue", "create_issue", "create_issue"]);
  });

  it("does not serve a changed schema under the same name from what was kept for the old one", () => {
    const memo = new CatalogMemo();
    const before = listed([exposed(issue({ owner: { type: "string" }, repo: { type: "string" } }))], "compact", { memo });
    const changed = [exposed(issue({ owner: { type: "string" }, repo: { type: "string" }, title: { type: "string" } }))];
    const after = listed(changed, "compact", { memo });
    expect(after).not.toEqual(before);
    expect(JSON.stringify(after)).toContain("title");
    expect(after).toEqual(listed(changed, "compact"));
    // `execution` is left out of the schema hash but shown by compact: it is part of the content key.
    const task = [exposed({ ...issue({ owner: { type: "string" } }), execution: { taskSupport: "required" } })];
    listed([exposed(issue({ owner: { type: "string" } }))], "compact", { memo });
    expect(JSON.stringify(listed(task, "compact", { memo }))).toContain('"taskSupport":"required"');
  });

  it("keeps modes, compact schemas, names and summaries apart", () => {
    const memo = new CatalogMemo();
    const tools = [exposed(issue({ owner: { type: "string" }, state: { type: "string", enum: ["open", "closed"] } }))];
    for (const mode of ["summary", "compact", "full"] as const) {
      for (const compactSchema of ["none", "names", "types"] as const) {
        expect(listed(tools, mode, { memo, compactSchema })).toEqual(listed(tools, mode, { compactSchema }));
      }
    }
    const renamed = [exposed(tools[0]!.tool, "t")];
    expect(listed(renamed, "compact", { memo })).toEqual(listed(renamed, "compact"));
    const key = cacheKey("s", "create_issue", hasher.hash(tools[0]!.tool));
    const entry: CacheEntry = { ...makeEntry("s", "create_issue", "Opens an issue."), key, params: { owner: "Who owns it." } };
    const store = storeOf([entry]);
    const summarized = listed(tools, "summary", { memo, store });
    expect(JSON.stringify(summarized)).toContain("Opens an issue.");
    expect(summarized).toEqual(listed(tools, "summary", { store }));
    const other = storeOf([{ ...entry, params: { owner: "Whoever owns it." } }]);
    expect(listed(tools, "summary", { memo, store: other })).toEqual(listed(tools, "summary", { store: other }));
  });

  it("stays within its limit over more tools than it keeps, and lists them as a fresh memo does", () => {
    const memo = new CatalogMemo({ tools: 6 });
    const many = Array.from({ length: 40 }, (_, i) => exposed(issue({ [`p${i}`]: { type: "number" } }), `s${String(i).padStart(2, "0")}`));
    const first = listed(many, "compact", { memo });
    expect(memo.tools.size).toBeLessThanOrEqual(6);
    expect(listed(many, "compact", { memo })).toEqual(first);
    expect(first).toEqual(listed(many, "compact"));
  });

  it("never meets a tool with a cycle: admission quarantines it before a catalog does", () => {
    const cyclic: Record<string, unknown> = { type: "object" };
    cyclic.properties = { self: cyclic };
    const memo = new CatalogMemo();
    const catalog = new ToolCatalog({ store: storeOf(), hasher, memo });
    try {
      const loop = { server: "s", name: "s_loop", uri: "mcp://s/loop", tool: { name: "loop", inputSchema: cyclic } };
      catalog.setTools(admitExposed([loop, exposed(issue({ a: { type: "string" } }))], silentLogger), { queue: false });
      expect(catalog.names()).toEqual(["s_create_issue"]);
      expect(memo.tools.size).toBe(1);
    } finally {
      catalog.close();
    }
  });
});
