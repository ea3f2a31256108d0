import { describe, expect, it } from "vitest";
import { toolResultValue } from "../../../src/code/runtime/toolResultValue.js";

describe("toolResultValue", () => {
  it("takes structuredContent when there is one", () => {
    expect(toolResultValue({ content: [{ type: "text", text: "ignored" }], structuredContent: { n: 1 } })).toEqual({ n: 1 });
  });

  it("parses a single text block as JSON when it parses, else keeps the text", () => {
    expect(toolResultValue({ content: [{ type: "text", text: '{"a":[1,2]}' }] })).toEqual({ a: [1, 2] });
    expect(toolResultValue({ content: [{ type: "text", text: "42" }] })).toBe(42);
    expect(toolResultValue({ content: [{ type: "text", text: "hello world" }] })).toBe("hello world");
    expect(toolResultValue({ content: [{ type: "text", text: "" }] })).toBe("");
    expect(toolResultValue({ content: [{ type: "text", text: "" }], structuredContent: null })).toBe("");
  });

  it("gives the blocks for anything else, and null for no content", () => {
    const image = { type: "image", data: "AAAA", mimeType: "image/png" };
    expect(toolResultValue({ content: [image] })).toEqual([image]);
    const two = [
      { type: "text", text: "a" },
      { type: "text", text: "b" },
    ];
    expect(toolResultValue({ content: two })).toEqual(two);
    expect(toolResultValue({ content: [] })).toBeNull();
    expect(toolResultValue({})).toBeNull();
  });

  it("keeps a __proto__ key of parsed text a plain key", () => {
    const value = toolResultValue({ content: [{ type: "text", text: '{"__proto__": {"polluted": true}}' }] }) as object;
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.hasOwn(value, "__proto__")).toBe(true);
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
  });
});
