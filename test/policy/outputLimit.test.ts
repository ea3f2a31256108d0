import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfigText } from "../../src/config/parseConfigText.js";
import { CallGuard } from "../../src/policy/callGuard.js";
import { base64DecodedBytes, blockBytes, limitOutput, markUntrusted, resultBytes } from "../../src/policy/outputLimit.js";
import { SpillStore, spillOffsetOf, spillText } from "../../src/policy/spillStore.js";
import type { CallToolResult } from "../../src/model/types.js";
import { useTempDir } from "../helpers/tempDir.js";

const temp = useTempDir();
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

function textBlocks(...texts: string[]): CallToolResult {
  return { content: texts.map((text) => ({ type: "text", text })) };
}

const jsonBytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value));

describe("sizes", () => {
  it("counts blocks by their UTF-8 JSON, binary payloads by decoded bytes, and the rest of the result by its JSON", () => {
    expect(blockBytes({ type: "text", text: "é" })).toBe(jsonBytes({ type: "text", text: "é" }));
    expect(blockBytes({ type: "text", text: "é" })).toBe(27);
    const data = Buffer.alloc(1000).toString("base64");
    expect(base64DecodedBytes(data)).toBe(1000);
    expect(blockBytes({ type: "image", mimeType: "image/png", data })).toBe(1000 + jsonBytes({ type: "image", mimeType: "image/png", data: "" }));
    const blob = { type: "resource", resource: { uri: "x:y", blob: Buffer.alloc(7).toString("base64") } };
    expect(blockBytes(blob)).toBe(7 + jsonBytes({ type: "resource", resource: { uri: "x:y", blob: "" } }));
    // structuredContent, the upstream's _meta and unknown keys count; abridge's own _meta keys do not.
    const text = { type: "text", text: "abc" };
    expect(resultBytes({ content: [text], structuredContent: { a: 1 } })).toBe(jsonBytes(text) + jsonBytes("structuredContent") + 1 + jsonBytes({ a: 1 }));
    const marked = markUntrusted({ content: [text], _meta: { "up/k": "v" }, extra: [1, 2] }, "fs");
    expect(resultBytes(marked)).toBe(jsonBytes(text) + jsonBytes("up/k") + 1 + jsonBytes("v") + jsonBytes("extra") + 1 + jsonBytes([1, 2]));
  });
});

describe("limitOutput", () => {
  it("passes a result within the limit untouched", () => {
    const result = textBlocks("a".repeat(10));
    expect(limitOutput(result, { maxBytes: 36 })).toMatchObject({ cut: false, result });
  });

  it("cuts at a block boundary with a marker saying how much was cut", () => {
    // Each block is 40 characters + 25 of JSON = 65 bytes; structuredContent is 27: 222 in all.
    const result = { ...textBlocks("a".repeat(40), "b".repeat(40), "c".repeat(40)), structuredContent: { x: 1 } };
    const limited = limitOutput(result, { maxBytes: 140 });
    expect(limited.cut).toBe(true);
    const content = limited.result.content as { type: string; text: string }[];
    expect(content.slice(0, 2).map((b) => b.text)).toEqual(["a".repeat(40), "b".repeat(40)]);
    expect(content).toHaveLength(3);
    expect(content[2]!.text).toContain("output cut: 92 of 222 bytes left out (limit 140)");
    expect(content[2]!.text).toContain("kept 2 of 3 content blocks; dropped structuredContent");
    expect(limited.result.structuredContent).toBeUndefined();
    // A binary block is never cut in half: it goes whole.
    const image = { content: [{ type: "image", mimeType: "image/png", data: Buffer.alloc(500).toString("base64") }] };
    expect(limitOutput(image, { maxBytes: 100 }).result.content).toHaveLength(1);
  });

  it("counts and cuts a huge annotations field: the text is kept without it, and the marker says so", () => {
    const huge = "x".repeat(5 * 1024 * 1024);
    const result = markUntrusted({ content: [{ type: "text", text: "the answer", annotations: { audience: ["user"], note: huge } }] }, "fs");
    expect(resultBytes(result)).toBeGreaterThan(5 * 1024 * 1024);
    const limited = limitOutput(result, { maxBytes: 1000 });
    expect(limited.cut).toBe(true);
    const content = limited.result.content as { type: string; text: string; annotations?: unknown }[];
    expect(content[0]).toEqual({ type: "text", text: "the answer" });
    expect(content[1]!.text).toContain("kept 1 of 1 content blocks; dropped annotations and extra fields of 1 block");
    expect(JSON.stringify(limited.result).length).toBeLessThan(2000);
    // abridge's trust marking survives the cut.
    expect(limited.result._meta).toEqual({ "abridge/trust": "untrusted-tool-output", "abridge/server": "fs" });
  });

  it("drops a huge upstream _meta key, a huge unknown top-level key and structuredContent, keeping what fits", () => {
    const huge = "y".repeat(1_000_000);
    const result = markUntrusted(
      {
        content: [{ type: "text", text: "ok" }],
        isError: true,
        _meta: { "up/small": 1, "up/huge": huge },
        bulk: huge,
        note: "short",
        structuredContent: { big: huge },
      },
      "fs",
    );
    const limited = limitOutput(result, { maxBytes: 500 });
    expect(limited.cut).toBe(true);
    expect(limited.result).toMatchObject({ isError: true, note: "short" });
    expect(limited.result.bulk).toBeUndefined();
    expect(limited.result.structuredContent).toBeUndefined();
    expect(limited.result._meta).toEqual({ "up/small": 1, "abridge/trust": "untrusted-tool-output", "abridge/server": "fs" });
    const marker = (limited.result.content as { text: string }[]).at(-1)!.text;
    expect(marker).toContain('dropped _meta "up/huge", field "bulk", structuredContent');
    expect(JSON.stringify(limited.result).length).toBeLessThan(1500);
    // A result whose only weight is outside content is measured too: within the limit it passes.
    expect(limitOutput({ content: [], bulk: "z".repeat(100) }, { maxBytes: 200 }).cut).toBe(false);
  });

  it("CallGuard.finish applies the limit to every part of a result", async () => {
    const config = parseConfigText('[servers.fs]\ncommand = "x"\nmax_output_bytes = 1000\n', { file: path.join(temp.path, "abridge.toml"), env: {} });
    const guard = await CallGuard.open({ config, env: {}, stateDir: path.join(temp.path, "state") });
    cleanups.push(() => guard.close());
    const big = "z".repeat(3 * 1024 * 1024);
    const viaAnnotations = await guard.finish("fs", { content: [{ type: "text", text: "hi", annotations: { x: big } }] });
    expect(JSON.stringify(viaAnnotations).length).toBeLessThan(2000);
    expect(viaAnnotations.content?.[0]).toEqual({ type: "text", text: "hi" });
    const viaMeta = await guard.finish("fs", { content: [{ type: "text", text: "hi" }], _meta: { "up/x": big } });
    expect(JSON.stringify(viaMeta).length).toBeLessThan(2000);
    const viaUnknownKey = await guard.finish("fs", { content: [{ type: "text", text: "hi" }], payload: big });
    expect(JSON.stringify(viaUnknownKey).length).toBeLessThan(2000);
  });

  it("marks results untrusted, keeping the upstream's own _meta but not its trust claim", () => {
    const marked = markUntrusted({ content: [], _meta: { "upstream/key": 1, "abridge/trust": "trusted" } }, "fs");
    expect(marked._meta).toEqual({ "upstream/key": 1, "abridge/trust": "untrusted-tool-output", "abridge/server": "fs" });
  });
});

describe("SpillStore", () => {
  it("pages through the whole output without splitting characters, offsets matching the marker", async () => {
    const store = new SpillStore({ dir: `${temp.path}/outputs` });
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
