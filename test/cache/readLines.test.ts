import { mkdtemp, open, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readLines } from "../../src/cache/readLines.js";
import type { ReadLine, ReadLinesOptions, ReadLinesResult } from "../../src/cache/readLines.js";

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "abridge-lines-"));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function readAll(
  content: string,
  options: Partial<ReadLinesOptions> = {},
): Promise<{ lines: ReadLine[]; oversized: number[]; result: ReadLinesResult }> {
  const file = join(dir, "f.jsonl");
  await writeFile(file, content);
  const handle = await open(file, "r");
  try {
    const lines: ReadLine[] = [];
    const oversized: number[] = [];
    const result = await readLines(handle, {
      start: 0,
      end: Buffer.byteLength(content),
      firstLineNumber: 1,
      onLine: (line) => lines.push(line),
      onOversized: (lineNumber) => oversized.push(lineNumber),
      ...options,
    });
    return { lines, oversized, result };
  } finally {
    await handle.close();
  }
}

describe("readLines", () => {
  it("splits lines across read boundaries, multi-byte characters included", async () => {
    const texts = ["{\"a\":\"é😀ﬀ\"}", "x", "a longer line with ünïcödé 😀😀😀 in it", "", "last"];
    const content = `${texts.join("\n")}\n`;
    for (const chunkBytes of [1, 2, 3, 7, 64, 1 << 20]) {
      const { lines, result } = await readAll(content, { chunkBytes });
      expect(lines.map((line) => line.text), `chunk ${chunkBytes}`).toEqual(["{\"a\":\"é😀ﬀ\"}", "x", texts[2], "last"]);
      expect(lines.map((line) => line.lineNumber)).toEqual([1, 2, 3, 5]);
      expect(lines[2]!.offset).toBe(Buffer.byteLength(`${texts[0]}\n${texts[1]}\n`));
      expect(result).toEqual({ nextOffset: Buffer.byteLength(content), nextLineNumber: 6 });
    }
  });

  it("returns an unterminated fragment as the tail without consuming it", async () => {
    const { lines, result } = await readAll("one\ntwo\nthr", { chunkBytes: 3 });
    expect(lines.map((line) => line.text)).toEqual(["one", "two"]);
    expect(result).toEqual({ nextOffset: 8, nextLineNumber: 3, tail: { text: "thr", lineNumber: 3, offset: 8 } });
  });

  it("skips lines over the limit without buffering them, at any position", async () => {
    const long = "y".repeat(40);
    const { lines, oversized, result } = await readAll(`ok\n${long}\nfine\n${long}`, { maxLineBytes: 10, chunkBytes: 4 });
    expect(lines.map((line) => line.text)).toEqual(["ok", "fine"]);
    expect(oversized).toEqual([2]);
    expect(result.tail).toEqual({ text: undefined, lineNumber: 4, offset: 49 });
  });

  it("accepts a line of exactly the limit", async () => {
    const { lines, oversized } = await readAll(`${"z".repeat(10)}\n${"z".repeat(11)}\n`, { maxLineBytes: 10, chunkBytes: 3 });
    expect(lines.map((line) => line.text.length)).toEqual([10]);
    expect(oversized).toEqual([2]);
  });
});
