import { describe, expect, it } from "vitest";
import { globToRegExp } from "../../src/model/glob.js";
import { createToolFilter } from "../../src/policy/toolFilter.js";

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
