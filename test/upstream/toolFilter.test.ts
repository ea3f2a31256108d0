import { describe, expect, it } from "vitest";
import { backoffDelayMs, DEFAULT_BACKOFF } from "../../src/upstream/backoff.js";
import { createToolFilter, globToRegExp } from "../../src/upstream/toolFilter.js";

describe("globs", () => {
  it("supports * and ?, literal otherwise, case-sensitive", () => {
    expect(globToRegExp("delete_*").test("delete_repo")).toBe(true);
    expect(globToRegExp("delete_*").test("Delete_repo")).toBe(false);
    expect(globToRegExp("get?").test("gets")).toBe(true);
    expect(globToRegExp("get?").test("get")).toBe(false);
    expect(globToRegExp("a.b").test("axb")).toBe(false);
    expect(globToRegExp("a.b").test("a.b")).toBe(true);
    expect(globToRegExp("(x)+[y]").test("(x)+[y]")).toBe(true);
    // Dashes are common in tool names (notion's `API-get-user`).
    expect(globToRegExp("API-get-*").test("API-get-user")).toBe(true);
    expect(globToRegExp("a/b-c").test("a/b-c")).toBe(true);
  });

  it("deny wins over allow; no allow means everything", () => {
    const filter = createToolFilter(["read_*", "list_*"], ["read_secret*"]);
    expect(filter("read_file")).toBe(true);
    expect(filter("list_dir")).toBe(true);
    expect(filter("write_file")).toBe(false);
    expect(filter("read_secret_key")).toBe(false);
    const denyOnly = createToolFilter(undefined, ["rm"]);
    expect(denyOnly("anything")).toBe(true);
    expect(denyOnly("rm")).toBe(false);
  });
});

describe("backoffDelayMs", () => {
  it("grows by the factor up to the cap, with full jitter", () => {
    const top = () => 0.999999;
    expect(backoffDelayMs(0, DEFAULT_BACKOFF, top)).toBe(249);
    expect(backoffDelayMs(1, DEFAULT_BACKOFF, top)).toBe(499);
    expect(backoffDelayMs(3, DEFAULT_BACKOFF, top)).toBe(1999);
    expect(backoffDelayMs(20, DEFAULT_BACKOFF, top)).toBe(29_999);
    expect(backoffDelayMs(5, DEFAULT_BACKOFF, () => 0)).toBe(0);
    expect(backoffDelayMs(2, DEFAULT_BACKOFF, () => 0.5)).toBe(500);
  });
});
