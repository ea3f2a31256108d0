import { isDeepStrictEqual } from "node:util";
import { describe, expect, it } from "vitest";
import { loadRecordedResults } from "../../bench/recordedResults.js";
import type { CallToolResult } from "../../src/model/types.js";
import { shapeCallResult } from "../../src/result/shapeCallResult.js";
import { decodeResult, repeatsStructured, shapeResult, SHAPED_META_KEY, STRUCTURED_META_KEY } from "../../src/result/shapeResult.js";

const pretty = (value: unknown): string => JSON.stringify(value, null, 2);
const rows = [
  { name: "Ada", entityType: "person", observations: ["likes tea"] },
  { name: "Brook", entityType: "project", observations: [] },
  { name: "Cyril", entityType: "team", observations: ["owns cache"] },
];

describe("shapeResult", () => {
  it("rewrites JSON text blocks, keeps structuredContent, and names the blocks it rewrote in _meta", () => {
    const result: CallToolResult = {
      content: [
        { type: "text", text: "Here are the entities:" },
        { type: "text", text: pretty({ entities: rows }) },
      ],
      structuredContent: { entities: rows },
      _meta: { upstream: 1 },
    };
    const shaped = shapeResult(result, "compact");
    expect(shaped.content?.[0]).toBe(result.content?.[0]);
    expect((shaped.content?.[1] as { text: string }).text).toBe(
      '{"entities":{"@columns":["name","entityType","observations"],"@rows":[["Ada","person",["likes tea"]],["Brook","project",[]],["Cyril","team",["owns cache"]]]}}',
    );
    expect(shaped.structuredContent).toBe(result.structuredContent);
    expect(shaped._meta).toEqual({ upstream: 1, [SHAPED_META_KEY]: { format: "compact", blocks: [1] } });
    const decoded = decodeResult(shaped);
    expect(JSON.parse((decoded.content?.[1] as { text: string }).text)).toEqual({ entities: rows });
    expect(decoded._meta).toEqual({ upstream: 1 });
  });

  it("never touches images, audio, resources, resource links, non-JSON text or a block's other fields", () => {
    const json = pretty([
      { alpha: 1, beta: 2, gamma: 3 },
      { alpha: 4, beta: 5, gamma: 6 },
      { alpha: 7, beta: 8, gamma: 9 },
    ]);
    const result: CallToolResult = {
      content: [
        { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" },
        { type: "audio", data: "UklGRg==", mimeType: "audio/wav" },
        { type: "resource", resource: { uri: "file:///x.json", mimeType: "application/json", text: json } },
        { type: "resource_link", uri: "file:///y", name: "y" },
        { type: "text", text: "not json {" },
        { type: "text", text: json, annotations: { audience: ["assistant"] } },
      ],
    };
    const shaped = shapeResult(result, "compact");
    for (let i = 0; i < 5; i++) expect(shaped.content?.[i]).toBe(result.content?.[i]);
    expect(shaped.content?.[5]).toEqual({
      type: "text",
      text: '{"@columns":["alpha","beta","gamma"],"@rows":[[1,2,3],[4,5,6],[7,8,9]]}',
      annotations: { audience: ["assistant"] },
    });
  });

  it("as-is returns the very same result, and so does compact when nothing is JSON", () => {
    const result: CallToolResult = { content: [{ type: "text", text: pretty({ a: 1 }) }] };
    expect(shapeResult(result, "as-is")).toBe(result);
    const plain: CallToolResult = { content: [{ type: "text", text: "hello" }], structuredContent: { other: true } };
    expect(shapeResult(plain, "compact")).toBe(plain);
    expect(shapeResult(plain, "compact", { structured: "text-only" })).toBe(plain);
  });

  it("lean says in the result how many fields it left out", () => {
    const result: CallToolResult = { content: [{ type: "text", text: pretty({ a: null, b: [], c: "kept" }) }] };
    const shaped = shapeResult(result, "lean");
    expect(shaped.content).toEqual([
      { type: "text", text: '{"c":"kept"}' },
      { type: "text", text: '[abridge: result_format "lean": 2 null or empty fields left out]' },
    ]);
  });

  it('structured = "text-only" drops structuredContent only where a text block repeats it', () => {
    const memory: CallToolResult = { content: [{ type: "text", text: pretty(rows) }], structuredContent: { entities: rows } };
    const dropped = shapeResult(memory, "compact", { structured: "text-only" });
    expect(dropped.structuredContent).toBeUndefined();
    expect((dropped._meta as Record<string, unknown>)[STRUCTURED_META_KEY]).toBe("text-only");
    const filesystem: CallToolResult = { content: [{ type: "text", text: "[FILE] a.txt" }], structuredContent: { content: "[FILE] a.txt" } };
    expect(shapeResult(filesystem, "as-is", { structured: "text-only" }).structuredContent).toBeUndefined();
    const different: CallToolResult = { content: [{ type: "text", text: pretty({ a: 1 }) }], structuredContent: { a: 2 } };
    expect(shapeResult(different, "compact", { structured: "text-only" }).structuredContent).toEqual({ a: 2 });
    expect(shapeResult(memory, "compact", { structured: "both" }).structuredContent).toBe(memory.structuredContent);
  });

  it("a cycle in structuredContent, a throwing getter or a result that is not an object never throws", () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    const result: CallToolResult = { content: [{ type: "text", text: '{"a": 1}' }], structuredContent: cyclic };
    const shaped = shapeResult(result, "compact", { structured: "text-only" });
    expect(shaped.structuredContent).toBe(cyclic);
    expect(repeatsStructured('{"a":1}', cyclic)).toBe(false);
    const hostile = {
      get content(): unknown[] {
        throw new Error("boom");
      },
    } as unknown as CallToolResult;
    expect(shapeResult(hostile, "compact")).toBe(hostile);
    expect(shapeResult(null as unknown as CallToolResult, "compact")).toBe(null);
  });

  it("maxTextChars bounds the texts shaped; the call pipeline's is four times the server's max_output_bytes", () => {
    const text = pretty(rows);
    const result: CallToolResult = { content: [{ type: "text", text }] };
    expect(shapeResult(result, "compact", { maxTextChars: text.length - 1 })).toBe(result);
    expect(shapeResult(result, "compact", { maxTextChars: text.length })).not.toBe(result);
    const config = (max: number) => ({ servers: [{ name: "s", result_format: "compact" as const, max_output_bytes: max }] });
    expect(shapeCallResult(config(Math.floor((text.length - 1) / 4)), "s", "t", result)).toBe(result);
    expect(shapeCallResult(config(Math.ceil(text.length / 4)), "s", "t", result)).not.toBe(result);
  });

  it("a 100 MB text is passed on unchanged", () => {
    const text = `[${"1,".repeat(50 * 1024 * 1024)}1]`;
    const result: CallToolResult = { content: [{ type: "text", text }] };
    expect(shapeResult(result, "compact")).toBe(result);
  });
});

describe("every recorded result of the published servers (bench/corpus/results)", () => {
  const calls = loadRecordedResults();

  it("has at least 300 calls over filesystem, memory, everything and sequential-thinking", () => {
    expect(calls.length).toBeGreaterThanOrEqual(300);
    expect(new Set(calls.map((c) => c.server))).toEqual(new Set(["filesystem", "memory", "everything", "sequential-thinking"]));
  });

  it("decodes back to the original values: 0 values lost", () => {
    let rewritten = 0;
    for (const call of calls) {
      const original = call.result as CallToolResult;
      const decoded = decodeResult(shapeResult(original, "compact"));
      const where = `${call.server}/${call.tool} ${JSON.stringify(call.arguments)}`;
      expect(decoded.structuredContent, where).toStrictEqual(original.structuredContent);
      expect(decoded._meta, where).toStrictEqual(original._meta);
      const before = original.content ?? [];
      const after = decoded.content ?? [];
      expect(after.length, where).toBe(before.length);
      before.forEach((block, i) => {
        const a = block as { type: string; text?: string };
        const b = after[i] as { type: string; text?: string };
        if (a.type === "text" && a.text !== b.text) {
          rewritten += 1;
          expect(isDeepStrictEqual(JSON.parse(b.text!), JSON.parse(a.text!)), where).toBe(true);
          expect({ ...b, text: "" }, where).toStrictEqual({ ...a, text: "" });
        } else {
          expect(b, where).toStrictEqual(a);
        }
      });
    }
    expect(rewritten).toBeGreaterThan(100);
  });
});
