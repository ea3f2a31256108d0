import { open, writeFile } from "node:fs/promises";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { readLines } from "../../src/cache/readLines.js";
import type { ReadLine, ReadLinesOptions, ReadLinesResult } from "../../src/cache/readLines.js";
import { useTempDir } from "../helpers/tempDir.js";

const temp = useTempDir({ prefix: "abridge-lines-" });

async function readAll(content: string, options: Partial<ReadLinesOptions> = {}): Promise<{ lines: ReadLine[]; oversized: number[]; result: ReadLinesResult }> {
  const file = join(temp.path, "f.jsonl");
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
    const texts = ['{"a":"é😀ﬀ"}', "x", "a longer line with ünïcödé 😀😀😀 in it", "", "last"];
    const content = `${texts.join("\n")}\n`;
    for (const chunkBytes of [1, 2, 3, 7, 64, 1 << 20]) {
      const { lines, result } = await readAll(content, { chunkBytes });
      expect(
        lines.map((line) => line.text),
        `chunk ${chunkBytes}`,
      ).toEqual(['{"a":"é😀ﬀ"}', "x", texts[2], "last"]);
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

  it("matches a line-by-line reference on mixed ASCII and non-ASCII content at any chunk size", async () => {
    // Chunks of ASCII lines are decoded whole and cut; others line by line: both must give the
    // same texts, numbers, offsets, oversized lines and tail as splitting the bytes one line at a time.
    const piece = fc.oneof(
      { weight: 4, arbitrary: fc.string({ maxLength: 30 }).map((t) => t.replace(/\n/g, "")) },
      { weight: 1, arbitrary: fc.string({ maxLength: 12, unit: "grapheme" }).map((t) => t.replace(/\n/g, "")) },
      { weight: 1, arbitrary: fc.constantFrom("", " ", "\t \r", "z".repeat(24), "x".repeat(25), "é".repeat(12), "é".repeat(13)) },
    );
    const input = fc.record({
      lines: fc.array(piece, { maxLength: 12 }),
      terminated: fc.boolean(),
      chunkBytes: fc.integer({ min: 1, max: 90 }),
      maxLineBytes: fc.constantFrom(24, 1 << 20),
    });
    await fc.assert(
      fc.asyncProperty(input, async ({ lines, terminated, chunkBytes, maxLineBytes }) => {
        const content = lines.join("\n") + (terminated && lines.length > 0 ? "\n" : "");
        const bytes = Buffer.from(content);
        if (bytes.length === 0) return;
        const got = await readAll(content, { chunkBytes, maxLineBytes });
        expect(got).toEqual(referenceLines(bytes, maxLineBytes));
      }),
      { seed: 20261122, numRuns: 150 },
    );
  });
});

/** Splits `bytes` one line at a time, decoding each line on its own: what {@link readLines} must match. */
function referenceLines(bytes: Buffer, maxLineBytes: number): { lines: ReadLine[]; oversized: number[]; result: ReadLinesResult } {
  const lines: ReadLine[] = [];
  const oversized: number[] = [];
  let offset = 0;
  let lineNumber = 1;
  for (;;) {
    const newline = bytes.indexOf(0x0a, offset);
    if (newline === -1) break;
    if (newline - offset > maxLineBytes) oversized.push(lineNumber);
    else {
      const text = bytes.toString("utf8", offset, newline);
      if (text.trim() !== "") lines.push({ text, lineNumber, offset });
    }
    offset = newline + 1;
    lineNumber += 1;
  }
  const result: ReadLinesResult = { nextOffset: offset, nextLineNumber: lineNumber };
  if (offset < bytes.length) {
    const text = bytes.length - offset > maxLineBytes ? undefined : bytes.toString("utf8", offset);
    if (text === undefined || text.trim() !== "") result.tail = { text, lineNumber, offset };
  }
  return { lines, oversized, result };
}
