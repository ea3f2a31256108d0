/**
 * Cache maintenance under a broken config: the config names its own cache, so an invalid
 * ./abridge.toml is reported (exit 2) and nothing is touched, rather than the command falling
 * back to another cache; without any config a named cache is still maintained.
 */
import { appendFile, mkdir, readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runAbridge, tempDir, writeConfig } from "../helpers/cliHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

describe("cache commands and an invalid config", () => {
  const temp = useTempDir();

  it("cache commands report an invalid ./abridge.toml (exit 2) instead of using another cache", async () => {
    // The config names its own cache; a typo elsewhere in it must not send `cache clear` to the
    // default cache (from a checkout, the repository's).
    await writeConfig(temp.path, ['cache_dir = "mine"', 'mode = "fast"'].join("\n"));
    const verify = await runAbridge(["cache", "verify"], { cwd: temp.path });
    expect(verify.stderr).toContain("[CONFIG_INVALID]");
    expect(verify.stderr).toContain('mode: expected one of "full", "summary", "compact", "lazy", "auto", "code", got "fast"');
    expect(verify.stdout).toBe("");
    expect(verify.code).toBe(2);

    // With --cache-dir the file is named, but the broken config is still reported, and nothing is cleared.
    const cacheDir = path.join(temp.path, "elsewhere");
    await mkdir(cacheDir);
    const line = `${JSON.stringify({ key: "a:b:0123456789abcdef", server: "a", tool: "b", hash: "0123456789abcdef", summary: "S.", params: {}, summarizer: "extractive@2", prompt: "none", tokensBefore: 2, tokensAfter: 1, createdAt: "2026-01-01T00:00:00.000Z" })}\n`;
    await appendFile(path.join(cacheDir, "summaries.jsonl"), line);
    const clear = await runAbridge(["cache", "clear", "--cache-dir", cacheDir], { cwd: temp.path });
    expect(clear.code).toBe(2);
    expect(clear.stderr).toContain("[CONFIG_INVALID]");
    expect(await readFile(path.join(cacheDir, "summaries.jsonl"), "utf8")).toBe(line);

    // Without a config at all, cache maintenance still works on the named cache.
    const empty = await tempDir();
    try {
      const ok = await runAbridge(["cache", "verify", "--cache-dir", cacheDir], { cwd: empty.dir, env: { XDG_CONFIG_HOME: path.join(empty.dir, "xdg") } });
      expect(ok.stderr).toBe("");
      expect(ok.code).toBe(0);
      expect(ok.stdout).toContain("lines 1, valid 1");
    } finally {
      await empty.cleanup();
    }
  });
});
