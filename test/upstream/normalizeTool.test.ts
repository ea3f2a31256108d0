import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { createToolHasher } from "../../src/catalog/toolHash.js";
import { normalizeTool } from "../../src/upstream/normalizeTool.js";
import type { JsonObject, RawTool } from "../../src/model/types.js";
import { admitted } from "../helpers/admitted.js";

const recorded = JSON.parse(readFileSync(new URL("../fixtures/nullTools.json", import.meta.url), "utf8")) as { tools: JsonObject[] };

/** JSON paths of every null in `value`. */
function nullPaths(value: unknown, at = "$"): string[] {
  if (value === null) return [at];
  if (Array.isArray(value)) return value.flatMap((v, i) => nullPaths(v, `${at}[${i}]`));
  if (typeof value === "object") return Object.entries(value as JsonObject).flatMap(([k, v]) => nullPaths(v, `${at}.${k}`));
  return [];
}

describe("normalizeTool: null means absent", () => {
  it("drops every null member, annotation and schema keyword, keeping null data values", () => {
    const tools = recorded.tools.map((t) => normalizeTool(t));
    // Only `default: null` is left: a data value, not a missing member.
    expect(nullPaths(tools)).toEqual(["$[0].inputSchema.properties.lang.default", "$[2].inputSchema.properties.mode.default"]);
    expect(tools[0]).toEqual({
      name: "lookup",
      description: "Looks a word up in the dictionary and returns its definitions.",
      inputSchema: { type: "object", properties: { word: { type: "string" }, lang: { type: "string", default: null } }, required: ["word"] },
    });
    expect(tools[1]).toEqual({ name: "ping", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } });
    expect(tools[2]?.annotations).toEqual({});
    expect(tools[2]?.inputSchema).toEqual({
      type: "object",
      properties: {
        path: { type: "string", description: "Where to write" },
        mode: { type: "string", enum: ["append", "replace"], default: null },
        tags: { type: "array" },
      },
      required: ["path"],
    });
    expect(tools[2]?.outputSchema).toEqual({ type: "object", properties: { ok: { type: "boolean" } } });
  });

  it("walks nested schemas, lists and maps, and leaves enum and const values alone", () => {
    const tool = normalizeTool({
      name: "t",
      inputSchema: {
        type: "object",
        properties: { a: { anyOf: [{ type: "string", format: null }, null] }, b: null, c: { const: null, enum: [null, 1] } },
        $defs: { x: { type: "object", properties: null } },
        items: [{ type: null }],
      },
    });
    expect(tool.inputSchema).toEqual({
      type: "object",
      properties: { a: { anyOf: [{ type: "string" }] }, c: { const: null, enum: [null, 1] } },
      $defs: { x: { type: "object" } },
      items: [{}],
    });
  });

  it("returns a tool without nulls as it is, not a copy", () => {
    const tool: RawTool = {
      name: "t",
      description: "d",
      inputSchema: { type: "object", properties: { a: { type: "string" } } },
      annotations: { readOnlyHint: true },
    };
    expect(normalizeTool(tool)).toBe(tool);
  });

  it("hashes null as absent: a server that writes null and one that leaves the member out share one key", async () => {
    const hasher = await createToolHasher();
    const withNulls = recorded.tools[0] as RawTool;
    const without: RawTool = {
      name: "lookup",
      description: "Looks a word up in the dictionary and returns its definitions.",
      inputSchema: { type: "object", properties: { word: { type: "string" }, lang: { type: "string", default: null } }, required: ["word"] },
    };
    expect(hasher.hash(admitted(withNulls))).toBe(hasher.hash(admitted(without)));
    // The data null still counts: dropping `default: null` is another schema.
    const noDefault: RawTool = {
      ...without,
      inputSchema: { type: "object", properties: { word: { type: "string" }, lang: { type: "string" } }, required: ["word"] },
    };
    expect(hasher.hash(admitted(noDefault))).not.toBe(hasher.hash(admitted(without)));
  });
});
