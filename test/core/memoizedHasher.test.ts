/** The hash memo the catalog's discoveries use: same answers as the real hasher, each tool object hashed once. */
import { describe, expect, it } from "vitest";
import { createToolHasher, type ToolHasher } from "../../src/catalog/toolHash.js";
import { memoizedHasher } from "../../src/core/memoizedHasher.js";
import type { RawTool } from "../../src/model/types.js";

describe("memoizedHasher", () => {
  it("answers as the real hasher does and hashes each tool object once", async () => {
    const real = await createToolHasher();
    const hashed: RawTool[] = [];
    const counting: ToolHasher = { hash: (tool) => (hashed.push(tool), real.hash(tool)), hashText: (text) => real.hashText(text) };
    const memo = memoizedHasher(counting);
    const tool: RawTool = { name: "t", description: "Does a thing.", inputSchema: { type: "object", properties: { a: { type: "string" } } } };
    expect(memo.hash(tool)).toBe(real.hash(tool));
    expect(memo.hash(tool)).toBe(real.hash(tool));
    expect(hashed).toEqual([tool]);
    // A re-listed tool is a new object: hashed afresh, so a changed schema gets its new hash.
    const relisted: RawTool = { ...tool, inputSchema: { type: "object", properties: { a: { type: "number" } } } };
    expect(memo.hash(relisted)).toBe(real.hash(relisted));
    expect(memo.hash(relisted)).not.toBe(memo.hash(tool));
    expect(hashed).toEqual([tool, relisted]);
  });
});
