import { open, writeFile } from "node:fs/promises";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatCacheLine, quickLineKey } from "../../src/cache/cacheLineKey.js";
import { readLines } from "../../src/cache/readLines.js";
import { scanLineBytes } from "../../src/cache/scanLineBytes.js";
import { isAbridgeError } from "../../src/model/errors.js";
import { makeEntry } from "../helpers/cacheEntries.js";
import { useTempDir } from "../helpers/tempDir.js";

const temp = useTempDir({ prefix: "abridge-scan-" });

interface Seen {
  lines: { text: string; lineNumber: number; offset: number }[];
  oversized: number[][];
  result: unknown;
}

/** What scanLineBytes and readLines hand on for the same file, in one shape. */
async function both(content: string, maxLineBytes: number, chunkBytes: number, start = 0): Promise<{ bytes: Seen; text: Seen }> {
  const file = join(temp.path, "f.jsonl");
  await writeFile(file, content);
  const end = Buffer.byteLength(content);
  const handle = await open(file, "r");
  try {
    const bytes: Seen = { lines: [], oversized: [], result: undefined };
    const scanned = await scanLineBytes(handle, {
      start,
      end,
      firstLineNumber: 1,
      maxLineBytes,
      chunkBytes,
      onLine: (buffer, from, to, lineNumber, offset) => bytes.lines.push({ text: buffer.toString("utf8", from, to), lineNumber, offset }),
      onOversized: (lineNumber, offset) => bytes.oversized.push([lineNumber, offset]),
    });
    bytes.result = { ...scanned, tail: scanned.tail && { ...scanned.tail, bytes: scanned.tail.bytes?.toString("utf8") } };
    const text: Seen = { lines: [], oversized: [], result: undefined };
    const read = await readLines(handle, {
      start,
      end,
      firstLineNumber: 1,
      maxLineBytes,
      chunkBytes,
      onLine: (line) => text.lines.push(line),
      onOversized: (lineNumber, offset) => text.oversized.push([lineNumber, offset]),
    });
    text.result = { ...read, tail: read.tail && { bytes: read.tail.text, lineNumber: read.tail.lineNumber, offset: read.tail.offset } };
    return { bytes, text };
  } finally {
    await handle.close();
  }
}

describe("scanLineBytes", () => {
  it("hands on the same lines, oversized lines and tail as readLines, for any content and read size", async () => {
    const piece = fc.constantFrom("a", "{", "}", " ", "\t", "\n", "\n", "\r", "é", "😀", "\u00a0", '"');
    await fc.assert(
      fc.asyncProperty(
        fc.array(piece, { maxLength: 80 }),
        fc.integer({ min: 1, max: 24 }),
        fc.integer({ min: 1, max: 64 }),
        async (pieces, maxLineBytes, chunkBytes) => {
          const { bytes, text } = await both(pieces.join(""), maxLineBytes, chunkBytes);
          expect(bytes).toEqual(text);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("reads a line cut by the end of a read again whole, and skips an oversized one without holding it", async () => {
    const content = `${"x".repeat(30)}\nshort\n${"y".repeat(9)}\nend`;
    const { bytes } = await both(content, 10, 4);
    expect(bytes.lines).toEqual([
      { text: "short", lineNumber: 2, offset: 31 },
      { text: "y".repeat(9), lineNumber: 3, offset: 37 },
    ]);
    expect(bytes.oversized).toEqual([[1, 0]]);
    expect(bytes.result).toEqual({ nextOffset: 47, nextLineNumber: 4, tail: { bytes: "end", lineNumber: 4, offset: 47 } });
  });

  it("stops with CANCELLED when its signal is aborted", async () => {
    const file = join(temp.path, "f.jsonl");
    await writeFile(file, "a\nb\n");
    const handle = await open(file, "r");
    try {
      const controller = new AbortController();
      controller.abort();
      const err = await scanLineBytes(handle, {
        start: 0,
        end: 4,
        firstLineNumber: 1,
        signal: controller.signal,
        onLine: () => {},
        onOversized: () => {},
      }).catch((e: unknown) => e);
      expect(isAbridgeError(err, "CANCELLED")).toBe(true);
    } finally {
      await handle.close();
    }
  });
});

describe("quickLineKey", () => {
  const key = (line: string): string | undefined => {
    const bytes = Buffer.from(line);
    return quickLineKey(bytes, 0, bytes.length);
  };

  it("reads the key of a line as the store writes it", () => {
    const entry = makeEntry("github", "create_issue", "Crée un ticket.");
    expect(key(formatCacheLine(entry).trimEnd())).toBe(entry.key);
    expect(key('{"key":"a:b:c","x":1}')).toBe("a:b:c");
  });

  it("leaves every other layout to a full parse", () => {
    for (const line of [
      '{"server":"a","key":"a:b:c"}',
      '{ "key":"a:b:c","x":1}',
      '{"key":"a:\\"b\\":c","x":1}',
      '{"key":"","x":1}',
      '{"key":"a:b:c"}',
      '{"key":"a:b:c","x":1',
      '{"key":"a:b:c","x":1} ',
      '{"key":"a:b\tc","x":1}',
      '{"key":"gïthub:créer:0","x":1}',
      '{"key":1,"x":1}',
      "[1,2,3]",
      '{"key":"a:b:c',
    ]) {
      expect(key(line), line).toBeUndefined();
    }
  });
});
