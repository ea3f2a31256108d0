import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { findPackageRoot, PACKAGE_NAME, resolveCacheDir, resolveCacheFile, resolveStateDir } from "../../src/cache/cachePaths.js";
import { useTempDir } from "../helpers/tempDir.js";

const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url)).replace(/\/$/, "");

const temp = useTempDir({ prefix: "abridge-paths-", realPath: true });

/** A fake package root named as abridge's package, optionally a git checkout. */
async function fakePackage(withGit: boolean): Promise<string> {
  const root = join(temp.path, "pkg");
  await mkdir(join(root, "dist", "cache"), { recursive: true });
  await writeFile(join(root, "package.json"), JSON.stringify({ name: PACKAGE_NAME }));
  if (withGit) await mkdir(join(root, ".git"));
  return root;
}

describe("resolveCacheFile", () => {
  const base = { cwd: "/work/here", home: "/home/me" };

  it("follows the precedence flag > ABRIDGE_CACHE_DIR > config > default", () => {
    const env = { ABRIDGE_CACHE_DIR: "/env/cache", XDG_CACHE_HOME: "/xdg" };
    expect(resolveCacheFile({ ...base, env, flag: "/flag/cache", configCacheDir: "/cfg" })).toBe("/flag/cache/summaries.jsonl");
    expect(resolveCacheFile({ ...base, env, configCacheDir: "/cfg" })).toBe("/env/cache/summaries.jsonl");
    expect(resolveCacheFile({ ...base, env: { XDG_CACHE_HOME: "/xdg" }, configCacheDir: "/cfg" })).toBe("/cfg/summaries.jsonl");
    expect(resolveCacheFile({ ...base, env: { XDG_CACHE_HOME: "/xdg" }, packageRoot: null })).toBe("/xdg/abridge/summaries.jsonl");
  });

  it("resolves relative and ~ paths, and ignores empty values", () => {
    expect(resolveCacheDir({ ...base, env: {}, flag: "rel/dir" })).toBe("/work/here/rel/dir");
    expect(resolveCacheDir({ ...base, env: { ABRIDGE_CACHE_DIR: "~/c" } })).toBe("/home/me/c");
    expect(resolveCacheDir({ ...base, env: { ABRIDGE_CACHE_DIR: "" }, flag: " ", configCacheDir: "cfg" })).toBe("/work/here/cfg");
  });

  it("defaults to ~/.cache/abridge outside a checkout and ignores a relative XDG_CACHE_HOME", () => {
    expect(resolveCacheDir({ ...base, env: {}, packageRoot: null })).toBe("/home/me/.cache/abridge");
    expect(resolveCacheDir({ ...base, env: { XDG_CACHE_HOME: "relative" }, packageRoot: null })).toBe("/home/me/.cache/abridge");
    expect(resolveCacheDir({ cwd: "/", env: { HOME: "/home/env" }, packageRoot: null })).toBe("/home/env/.cache/abridge");
  });

  it("uses <repo>/cache in a git checkout and the XDG default in an installed package", async () => {
    const installed = await fakePackage(false);
    expect(resolveCacheDir({ ...base, env: {}, packageRoot: installed })).toBe("/home/me/.cache/abridge");
    await mkdir(join(installed, ".git"));
    expect(resolveCacheDir({ ...base, env: {}, packageRoot: installed })).toBe(join(installed, "cache"));
    // A worktree has a .git file instead of a folder.
    await rm(join(installed, ".git"), { recursive: true });
    await writeFile(join(installed, ".git"), "gitdir: /elsewhere\n");
    expect(resolveCacheDir({ ...base, env: {}, packageRoot: installed })).toBe(join(installed, "cache"));
  });

  it("finds this checkout from the module's own location", () => {
    // The tests run from abridge's git checkout, so the default is <repo>/cache.
    expect(resolveCacheFile({ ...base, env: {} })).toBe(join(REPO_ROOT, "cache", "summaries.jsonl"));
  });
});

describe("findPackageRoot", () => {
  it("walks up to the package.json named as abridge's package", async () => {
    const root = await fakePackage(true);
    expect(findPackageRoot(join(root, "dist", "cache"))).toBe(root);
    // Unscoped "abridge" is an unrelated package on the registry, not this one.
    await writeFile(join(root, "dist", "package.json"), JSON.stringify({ name: "abridge" }));
    expect(findPackageRoot(join(root, "dist", "cache"))).toBe(root);
    await writeFile(join(root, "dist", "cache", "package.json"), "{ broken");
    expect(findPackageRoot(join(root, "dist", "cache"))).toBe(root);
    expect(findPackageRoot(temp.path)).toBeUndefined();
  });
});

describe("resolveStateDir", () => {
  const base = { cwd: "/work/here", home: "/home/me" };

  it("follows the precedence flag > ABRIDGE_STATE_DIR > config > XDG default", () => {
    const env = { ABRIDGE_STATE_DIR: "/env/state", XDG_STATE_HOME: "/xdg-state" };
    expect(resolveStateDir({ ...base, env, flag: "/flag", configStateDir: "/cfg" })).toBe("/flag");
    expect(resolveStateDir({ ...base, env, configStateDir: "/cfg" })).toBe("/env/state");
    expect(resolveStateDir({ ...base, env: { XDG_STATE_HOME: "/xdg-state" }, configStateDir: "state" })).toBe("/work/here/state");
    expect(resolveStateDir({ ...base, env: { XDG_STATE_HOME: "/xdg-state" } })).toBe("/xdg-state/abridge");
    expect(resolveStateDir({ ...base, env: {} })).toBe("/home/me/.local/state/abridge");
    expect(resolveStateDir({ ...base, env: { XDG_STATE_HOME: "rel" } })).toBe("/home/me/.local/state/abridge");
  });
});
