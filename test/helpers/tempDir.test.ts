/**
 * useTempDir: a fresh folder per test (or one per block with scope "all"), its marker, and its
 * removal after the test whatever it left inside.
 */
import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { useTempDir } from "./tempDir.js";

describe("useTempDir per test", () => {
  const temp = useTempDir({ prefix: "abridge-tempdir-test-", marker: "td" });
  const seen: string[] = [];
  afterAll(() => {
    // Each test's folder is gone once its test has ended, contents and all.
    expect(seen).toHaveLength(2);
    for (const dir of seen) expect(existsSync(dir)).toBe(false);
  });

  it("makes a folder under the temp dir, named by the prefix, with a marker from its name", async () => {
    expect(path.dirname(temp.path)).toBe(os.tmpdir());
    expect(path.basename(temp.path)).toMatch(/^abridge-tempdir-test-/);
    expect(temp.marker).toBe(`td-${path.basename(temp.path)}`);
    await mkdir(path.join(temp.path, "nested", "deeper"), { recursive: true });
    await writeFile(path.join(temp.path, "nested", "deeper", "file"), "x");
    seen.push(temp.path);
  });

  it("gives the next test a folder of its own", () => {
    expect(existsSync(temp.path)).toBe(true);
    expect(seen).not.toContain(temp.path);
    seen.push(temp.path);
  });
});

describe("useTempDir once for a block", () => {
  const temp = useTempDir({ scope: "all" });
  let first: string | undefined;

  it("is made before the first test", async () => {
    first = temp.path;
    await writeFile(path.join(temp.path, "kept"), "x");
  });

  it("is the same folder, contents kept, in the next test", () => {
    expect(temp.path).toBe(first);
    expect(existsSync(path.join(temp.path, "kept"))).toBe(true);
  });
});

describe("useTempDir outside a test", () => {
  const temp = useTempDir();
  it("exists during the test; read after its removal, it throws", () => {
    expect(existsSync(temp.path)).toBe(true);
  });
  afterAll(() => {
    expect(() => temp.path).toThrow("no temp dir (abridge-test-*) outside a test and its hooks");
  });
});
