import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { cacheKey } from "../../src/cache/cacheEntry.js";
import { canonicalJson, createToolHasher, HASHED_TOOL_FIELDS, toolKey } from "../../src/catalog/toolHash.js";
import type { ToolHasher } from "../../src/catalog/toolHash.js";
import { isAbridgeError } from "../../src/model/errors.js";
import type { RawTool } from "../../src/model/types.js";
import { admitted } from "../helpers/admitted.js";

const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));
const CORPUS_DIR = resolve(REPO_ROOT, "bench/corpus/servers");

const echo: RawTool = { name: "echo", inputSchema: { type: "object" } };

function createIssue(): RawTool {
  return {
    name: "create_issue",
    title: "Create issue",
    description: "Create a new issue in a GitHub repository.",
    inputSchema: {
      type: "object",
      properties: {
        owner: { type: "string", description: "Repository owner" },
        repo: { type: "string" },
        title: { type: "string" },
        state: { type: "string", enum: ["open", "closed"] },
        labels: { type: "array", items: { type: "string" } },
      },
      required: ["owner", "repo", "title"],
    },
    outputSchema: {
      type: "object",
      properties: { number: { type: "integer" }, url: { type: "string", format: "uri" } },
      required: ["number"],
    },
    annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: true },
  };
}

const unicodeKeys: RawTool = {
  name: "sort_keys",
  description: "Keys outside ASCII: é, ﬀ, 😀",
  inputSchema: { type: "object", properties: { "😀": { type: "string" }, ﬀ: { type: "number" }, é: { type: "boolean" }, Z: {}, a: {} } },
};

/** A deep copy with every object's keys in reverse order. */
function reverseKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reverseKeys);
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).reverse()) out[key] = reverseKeys((value as Record<string, unknown>)[key]);
  return out;
}

let hasher: ToolHasher;
beforeAll(async () => {
  hasher = await createToolHasher();
});

describe("canonicalJson", () => {
  it("sorts keys recursively, drops whitespace and undefined members, keeps array order", () => {
    const value = { b: 1, a: { d: [3, 1, { z: true, y: null }], c: "x" }, u: undefined };
    expect(canonicalJson(value)).toBe('{"a":{"c":"x","d":[3,1,{"y":null,"z":true}]},"b":1}');
  });

  it("matches JSON.stringify for what JSON cannot hold", () => {
    expect(canonicalJson([undefined, Number.NaN, () => 1])).toBe(JSON.stringify([undefined, Number.NaN, () => 1]));
    expect(canonicalJson({ when: new Date(0) })).toBe('{"when":"1970-01-01T00:00:00.000Z"}');
    expect(canonicalJson('line\n"quoted"')).toBe(JSON.stringify('line\n"quoted"'));
  });

  it("orders keys by code point, not by UTF-16 code unit", () => {
    // U+FB00 sorts before U+1F600 by code point; by code unit the surrogate 0xD83D would come first.
    expect(canonicalJson({ "😀": 1, ﬀ: 2, é: 3, Z: 4, a: 5 })).toBe('{"Z":4,"a":5,"é":3,"ﬀ":2,"😀":1}');
  });

  it("refuses cycles and bigints with INPUT_INVALID", () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    for (const bad of [cyclic, { n: 1n }, undefined]) {
      let caught: unknown;
      try {
        canonicalJson(bad);
      } catch (err) {
        caught = err;
      }
      expect(isAbridgeError(caught, "INPUT_INVALID")).toBe(true);
    }
  });

  it("allows the same object twice when it is not a cycle", () => {
    const shared = { type: "string" };
    expect(canonicalJson({ a: shared, b: shared })).toBe('{"a":{"type":"string"},"b":{"type":"string"}}');
  });
});

describe("ToolHasher", () => {
  it("produces pinned golden hashes (a change here means every cached summary is invalidated)", () => {
    expect(hasher.hash(admitted(echo))).toBe("b2693245afe8339f");
    expect(hasher.hash(admitted(createIssue()))).toBe("bcfebd0e5db68143");
    expect(hasher.hash(admitted(unicodeKeys))).toBe("472279feaf8600b0");
  });

  it("hashes the canonical form of exactly the model-visible fields", () => {
    expect(canonicalJson(createIssue())).toBe(
      '{"annotations":{"destructiveHint":false,"openWorldHint":true,"readOnlyHint":false},' +
        '"description":"Create a new issue in a GitHub repository.",' +
        '"inputSchema":{"properties":{"labels":{"items":{"type":"string"},"type":"array"},' +
        '"owner":{"description":"Repository owner","type":"string"},"repo":{"type":"string"},' +
        '"state":{"enum":["open","closed"],"type":"string"},"title":{"type":"string"}},' +
        '"required":["owner","repo","title"],"type":"object"},"name":"create_issue",' +
        '"outputSchema":{"properties":{"number":{"type":"integer"},"url":{"format":"uri","type":"string"}},' +
        '"required":["number"],"type":"object"},"title":"Create issue"}',
    );
  });

  it("gives 16 lowercase hex characters", () => {
    for (let i = 0; i < 50; i++) {
      expect(hasher.hash(admitted({ name: `t${i}`, inputSchema: { type: "object" } }))).toMatch(/^[0-9a-f]{16}$/);
    }
  });

  it("does not depend on key order at any depth", () => {
    const tool = createIssue();
    expect(hasher.hash(admitted(reverseKeys(tool) as RawTool))).toBe(hasher.hash(admitted(tool)));
  });

  it("changes when anything the model sees changes", () => {
    const base = hasher.hash(admitted(createIssue()));
    const props = (tool: RawTool): Record<string, Record<string, unknown>> => tool.inputSchema.properties as Record<string, Record<string, unknown>>;
    const variants: Array<[string, (tool: RawTool) => void]> = [
      ["name", (t) => (t.name = "create_issue2")],
      ["title", (t) => (t.title = "Open issue")],
      ["title removed", (t) => delete t.title],
      ["description", (t) => (t.description = "Create a new issue in a repository.")],
      ["property type", (t) => (props(t).title!.type = "number")],
      ["property description", (t) => (props(t).owner!.description = "Owner login")],
      ["required entry", (t) => (t.inputSchema.required = ["owner", "repo"])],
      ["required order", (t) => (t.inputSchema.required = ["repo", "owner", "title"])],
      ["enum value", (t) => (props(t).state!.enum = ["open", "closed", "all"])],
      ["outputSchema", (t) => (t.outputSchema!.required as string[]).push("url")],
      ["outputSchema removed", (t) => delete t.outputSchema],
      ["annotations", (t) => (t.annotations!.readOnlyHint = true)],
      ["annotation added", (t) => (t.annotations!.idempotentHint = true)],
    ];
    const seen = new Set([base]);
    for (const [label, change] of variants) {
      const tool = createIssue();
      change(tool);
      const hash = hasher.hash(admitted(tool));
      expect(hash, label).not.toBe(base);
      seen.add(hash);
    }
    expect(seen.size).toBe(variants.length + 1);
  });

  it("ignores _meta, execution and other keys the model does not see", () => {
    const base = hasher.hash(admitted(createIssue()));
    const tool = { ...createIssue(), _meta: { "io.example/trace": "abc" }, execution: { taskSupport: "optional" }, icons: [] };
    expect(hasher.hash(admitted(tool))).toBe(base);
  });

  it("treats an explicit undefined field like a missing one", () => {
    expect(hasher.hash(admitted({ ...echo, title: undefined, outputSchema: undefined }))).toBe(hasher.hash(admitted(echo)));
  });

  it("shares one wasm instance: a second hasher agrees", async () => {
    const second = await createToolHasher();
    expect(second.hash(admitted(createIssue()))).toBe(hasher.hash(admitted(createIssue())));
  });

  it("builds keys with cacheKey", () => {
    expect(toolKey("github", "create_issue", "bcfebd0e5db68143")).toBe("github:create_issue:bcfebd0e5db68143");
    expect(toolKey("a", "b", "c")).toBe(cacheKey("a", "b", "c"));
  });
});

describe("hashes of the real corpus", () => {
  it("are unique per server:tool and stable", async () => {
    if (!existsSync(CORPUS_DIR)) {
      throw new Error(`corpus missing: expected ${CORPUS_DIR} (bench/corpus/servers in the repository)`);
    }
    const files = (await readdir(CORPUS_DIR)).filter((name) => name.endsWith(".json")).sort();
    expect(files.length).toBeGreaterThan(0);
    const byHash = new Map<string, { id: string; content: string }>();
    let tools = 0;
    for (const name of files) {
      const data = JSON.parse(await readFile(join(CORPUS_DIR, name), "utf8")) as { server: string; tools: RawTool[] };
      for (const tool of data.tools) {
        const hash = hasher.hash(admitted(tool));
        expect(hash).toMatch(/^[0-9a-f]{16}$/);
        expect(hasher.hash(admitted(tool)), `${data.server}:${tool.name} hashed twice`).toBe(hash);
        expect(hasher.hash(admitted(reverseKeys(tool) as RawTool))).toBe(hash);
        // Two servers may ship the very same tool (a fork of another server): the same hash is
        // right then, and the cache key still tells them apart by server. Different content with
        // the same hash is a collision.
        const content = canonicalJson(Object.fromEntries(HASHED_TOOL_FIELDS.map((f) => [f, tool[f]])));
        const id = `${data.server}:${tool.name}`;
        const seen = byHash.get(hash);
        expect(seen === undefined || seen.content === content, `hash collision between ${seen?.id} and ${id}`).toBe(true);
        byHash.set(hash, { id, content });
        tools += 1;
      }
    }
    // The corpus README's table (written by bench/corpus/capture.ts) counts the same tools.
    const total = /\| total: (\d+) servers \| \| \| ([\d,]+) \|/.exec(await readFile(join(CORPUS_DIR, "../README.md"), "utf8"));
    expect(Number(total?.[1])).toBe(files.length);
    expect(Number(total?.[2]?.replace(/,/g, ""))).toBe(tools);
  });
});
