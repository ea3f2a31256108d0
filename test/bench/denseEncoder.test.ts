import { appendFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CachedEmbedder, DENSE_MAX_WORDS, denseInput, loadUseLite, USE_LITE_ID } from "../../bench/frontier/denseEncoder.js";
import { DenseProxy } from "../../bench/frontier/proxies.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempCache(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "abridge-dense-"));
  dirs.push(dir);
  return path.join(dir, "embeddings.jsonl");
}

const dot = (a: Float32Array, b: Float32Array): number => a.reduce((s, x, i) => s + x * (b[i] ?? 0), 0);

describe("dense proxy (Universal Sentence Encoder Lite from npm, offline)", () => {
  it("embeds with the real model, ranks by meaning, and serves a rerun from the disk cache", async () => {
    const cacheFile = tempCache();
    const first = new CachedEmbedder({ id: USE_LITE_ID, cacheFile, load: loadUseLite });
    const texts = ["read the contents of a file", "open a new issue in a repository", "read the contents of a file"];
    const vectors = await first.embed(texts);
    expect(first.embedded).toBe(2);
    for (const v of vectors) expect(dot(v, v)).toBeCloseTo(1, 4);
    const [file, issue] = await first.embed(["show me what is in notes.txt", "report a bug to the project"]);
    expect(dot(file as Float32Array, vectors[0] as Float32Array)).toBeGreaterThan(dot(file as Float32Array, vectors[1] as Float32Array));
    expect(dot(issue as Float32Array, vectors[1] as Float32Array)).toBeGreaterThan(dot(issue as Float32Array, vectors[0] as Float32Array));

    // A torn last line (an interrupted run) is skipped, not fatal.
    appendFileSync(cacheFile, '{"h":"abc","v":"AAAA');
    const second = new CachedEmbedder({
      id: USE_LITE_ID,
      cacheFile,
      load: () => Promise.reject(new Error("the cache should have answered")),
    });
    const again = await second.embed(texts);
    expect(second.embedded).toBe(0);
    expect(Array.from(again[1] as Float32Array)).toEqual(Array.from(vectors[1] as Float32Array));
    expect(readFileSync(cacheFile, "utf8").trim().split("\n")).toHaveLength(5);

    const ranked = await new DenseProxy(second).rankAll(
      [
        { key: "fs:read_file", text: texts[0] as string },
        { key: "gh:create_issue", text: texts[1] as string },
      ],
      ["read the contents of a file"],
    );
    expect(ranked).toEqual([["fs:read_file", "gh:create_issue"]]);
  });

  it("cuts what the encoder sees to a fixed number of words and never sends an empty text", () => {
    const long = Array.from({ length: DENSE_MAX_WORDS + 10 }, (_, i) => `w${i}`).join(" ");
    expect(denseInput(long).split(" ")).toHaveLength(DENSE_MAX_WORDS);
    expect(denseInput("  \n ")).toBe(".");
  });
});
