import { appendFile, mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fixtureServerToml, pidsWithMarker, runAbridge, tempDir, writeConfig } from "../helpers/cliHarness.js";

describe("CLI: config errors, global options and exit codes", () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let marker: string;
  beforeEach(async () => {
    ({ dir, cleanup } = await tempDir());
    marker = `crf-${path.basename(dir)}`;
  });
  afterEach(async () => {
    expect(pidsWithMarker(marker)).toEqual([]);
    await cleanup();
  });

  it("cache commands report an invalid ./abridge.toml (exit 2) instead of using another cache", async () => {
    // The config names its own cache; a typo elsewhere in it must not send `cache clear` to the
    // default cache (from a checkout, the repository's).
    await writeConfig(dir, ['cache_dir = "mine"', 'mode = "fast"'].join("\n"));
    const verify = await runAbridge(["cache", "verify"], { cwd: dir });
    expect(verify.stderr).toContain("[CONFIG_INVALID]");
    expect(verify.stderr).toContain('mode: expected one of "full", "summary", "compact", "lazy", "auto", got "fast"');
    expect(verify.stdout).toBe("");
    expect(verify.code).toBe(2);

    // With --cache-dir the file is named, but the broken config is still reported, and nothing is cleared.
    const cacheDir = path.join(dir, "elsewhere");
    await mkdir(cacheDir);
    const line = `${JSON.stringify({ key: "a:b:0123456789abcdef", server: "a", tool: "b", hash: "0123456789abcdef", summary: "S.", params: {}, summarizer: "extractive@2", prompt: "none", tokensBefore: 2, tokensAfter: 1, createdAt: "2026-01-01T00:00:00.000Z" })}\n`;
    await appendFile(path.join(cacheDir, "summaries.jsonl"), line);
    const clear = await runAbridge(["cache", "clear", "--cache-dir", cacheDir], { cwd: dir });
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

  it("accepts global options before the command words", async () => {
    const config = await writeConfig(dir, "");
    const cacheDir = path.join(dir, "cache");
    for (const argv of [
      ["--config", config, "cache", "verify", "--cache-dir", cacheDir],
      [`--config=${config}`, "--log-json", "cache", "verify", "--cache-dir", cacheDir],
      ["-c", config, "--log-level", "error", "cache", "verify", "--cache-dir", cacheDir],
      // A flag's value that spells a command word is a value, not the command.
      ["--config", "tools", "cache", "verify", "--cache-dir", cacheDir],
    ]) {
      const r = await runAbridge(argv, { cwd: dir });
      expect(r.stderr, argv.join(" ")).not.toContain("unknown command");
      expect(r.code, `${argv.join(" ")}: ${r.stderr}`).toBe(0);
      expect(r.stdout).toContain(path.join(cacheDir, "summaries.jsonl"));
    }
    const none = await runAbridge(["--config", config], { cwd: dir });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("abridge: expected a command");
    const unknown = await runAbridge(["--config", config, "tols"], { cwd: dir });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown command "tols"; did you mean "tools"?');
    const group = await runAbridge(["--config", config, "cache", "--help"], { cwd: dir });
    expect(group.code).toBe(0);
    expect(group.stdout).toContain("cache verify");
  });

  it("uses the config's log_level unless --log-level or $ABRIDGE_LOG_LEVEL says otherwise", async () => {
    const cacheDir = path.join(dir, "cache");
    const verbose = await writeConfig(dir, 'log_level = "debug"\n');
    const fromConfig = await runAbridge(["cache", "verify", "--config", verbose, "--cache-dir", cacheDir], { cwd: dir });
    expect(fromConfig.code).toBe(0);
    // The loader's own lines wait for the level and are shown at it.
    expect(fromConfig.stderr).toContain("abridge debug config loaded");
    const flag = await runAbridge(["cache", "verify", "--config", verbose, "--cache-dir", cacheDir, "--log-level", "warn"], { cwd: dir });
    expect(flag.stderr).not.toContain("config loaded");
    const env = await runAbridge(["cache", "verify", "--config", verbose, "--cache-dir", cacheDir], { cwd: dir, env: { ABRIDGE_LOG_LEVEL: "error" } });
    expect(env.stderr).not.toContain("config loaded");

    // A quieter level in the file quiets the loader's warnings too ("config has no servers").
    const quiet = path.join(dir, "quiet.toml");
    await writeFile(quiet, 'log_level = "error"\n');
    const quietRun = await runAbridge(["cache", "verify", "--config", quiet, "--cache-dir", cacheDir], { cwd: dir });
    expect(quietRun.stderr).toBe("");
    const loud = await runAbridge(["cache", "verify", "--config", quiet, "--cache-dir", cacheDir, "--log-level", "warn"], { cwd: dir });
    expect(loud.stderr).toContain("config has no servers");
  });

  it("abridge tools exits 1 when a server failed to start, like abridge servers", async () => {
    const config = await writeConfig(
      dir,
      [
        'cache_dir = "cache"',
        fixtureServerToml("echo", "echoServer.ts", ["--tools", "1", "--name", marker]),
        '[servers.broken]\ncommand = "/nonexistent/abridge-no-such-binary"\nconnect_timeout_ms = 5000\n',
      ].join("\n"),
    );
    const text = await runAbridge(["tools", "--config", config], { cwd: dir });
    expect(text.stdout).toContain("echo_echo");
    expect(text.stderr).toContain("abridge: server broken failed");
    expect(text.code).toBe(1);
    const json = await runAbridge(["tools", "--config", config, "--json"], { cwd: dir });
    expect((JSON.parse(json.stdout) as { tools: unknown[] }).tools.length).toBe(3);
    expect(json.stderr).toContain("abridge: server broken failed");
    expect(json.code).toBe(1);
  });
});
