import { afterEach, describe, expect, it } from "vitest";
import { base64DecodedBytes, blockBytes, limitOutput, markUntrusted, resultBytes } from "../../src/policy/outputLimit.js";
import { SpillStore, spillOffsetOf, spillText } from "../../src/policy/spillStore.js";
import type { CallToolResult } from "../../src/upstream/types.js";
import { tempDir } from "../helpers/cliHarness.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

function textBlocks(...texts: string[]): CallToolResult {
  return { content: texts.map((text) => ({ type: "text", text })) };
}

describe("sizes", () => {
  it("counts text by UTF-8 bytes and binary by decoded bytes", () => {
    expect(blockBytes({ type: "text", text: "é" })).toBe(2);
    const data = Buffer.alloc(1000).toString("base64");
    expect(base64DecodedBytes(data)).toBe(1000);
    expect(blockBytes({ type: "image", mimeType: "image/png", data })).toBe(1000);
    expect(blockBytes({ type: "resource", resource: { uri: "x:y", blob: Buffer.alloc(7).toString("base64") } })).toBe(7);
    expect(resultBytes({ content: [{ type: "text", text: "abc" }], structuredContent: { a: 1 } })).toBe(3 + 7);
  });
});

describe("limitOutput", () => {
  it("passes a result within the limit untouched", () => {
    const result = textBlocks("a".repeat(10));
    expect(limitOutput(result, { maxBytes: 10 })).toMatchObject({ cut: false, result });
  });

  it("cuts at a block boundary with a marker saying how much was cut", () => {
    const result = { ...textBlocks("a".repeat(40), "b".repeat(40), "c".repeat(40)), structuredContent: { x: 1 } };
    const limited = limitOutput(result, { maxBytes: 100 });
    expect(limited.cut).toBe(true);
    const content = limited.result.content as { type: string; text: string }[];
    expect(content.slice(0, 2).map((b) => b.text)).toEqual(["a".repeat(40), "b".repeat(40)]);
    expect(content).toHaveLength(3);
    expect(content[2]!.text).toContain("output cut: 47 of 127 bytes left out (limit 100)");
    expect(content[2]!.text).toContain("kept 2 of 3 content blocks, structuredContent dropped");
    expect(limited.result.structuredContent).toBeUndefined();
    // A binary block is never cut in half: it goes whole.
    const image = { content: [{ type: "image", mimeType: "image/png", data: Buffer.alloc(500).toString("base64") }] };
    expect(limitOutput(image, { maxBytes: 100 }).result.content).toHaveLength(1);
  });

  it("marks results untrusted, keeping the upstream's own _meta but not its trust claim", () => {
    const marked = markUntrusted({ content: [], _meta: { "upstream/key": 1, "abridge/trust": "trusted" } }, "fs");
    expect(marked._meta).toEqual({ "upstream/key": 1, "abridge/trust": "untrusted-tool-output", "abridge/server": "fs" });
  });
});

describe("SpillStore", () => {
  it("pages through the whole output without splitting characters, offsets matching the marker", async () => {
    const { dir, cleanup } = await tempDir();
    cleanups.push(cleanup);
    const store = new SpillStore({ dir: `${dir}/outputs` });
    const result = textBlocks("héllo wörld ".repeat(50), "🙂".repeat(100), "tail");
    const handle = await store.save(result);
    expect(handle).toMatch(/^[0-9a-f]{32}$/);
    const full = spillText(result);
    let offset = 0;
    let rebuilt = "";
    for (let pages = 0; pages < 1000; pages++) {
      const page = await store.read(handle, offset, 37);
      expect(Buffer.byteLength(page.text)).toBeLessThanOrEqual(37);
      rebuilt += page.text;
      if (page.nextOffset === undefined) break;
      offset = page.nextOffset;
    }
    expect(rebuilt).toBe(full);
    const second = await store.read(handle, spillOffsetOf(result, 1), 8);
    expect(second.text).toBe("🙂🙂");
    await expect(store.read("../../etc/passwd", 0, 10)).rejects.toMatchObject({ code: "INPUT_INVALID" });
    await expect(store.read("0".repeat(32), 0, 10)).rejects.toMatchObject({ code: "INPUT_INVALID" });
    await expect(store.read(handle, Buffer.byteLength(full) + 1, 10)).rejects.toMatchObject({ code: "INPUT_INVALID" });
  });
});
