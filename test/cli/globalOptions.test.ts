/**
 * Global options (`--config`, `--log-json`, `--log-level`) anywhere before the command words, and
 * the log level's precedence: flag, then $ABRIDGE_LOG_LEVEL, then the config's `log_level`.
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runAbridge, writeConfig } from "../helpers/cliHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

describe("CLI global options and the log level", () => {
  const temp = useTempDir();

  it("accepts global options before the command words", async () => {
    const config = await writeConfig(temp.path, "");
    const cacheDir = path.join(temp.path, "cache");
    for (const argv of [
      ["--config", config, "cache", "verify", "--cache-dir", cacheDir],
      [`--config=${config}`, "--log-json", "cache", "verify", "--cache-dir", cacheDir],
      ["-c", config, "--log-level", "error", "cache", "verify", "--cache-dir", cacheDir],
      // A flag's value that spells a command word is a value, not the command.
      ["--config", "tools", "cache", "verify", "--cache-dir", cacheDir],
    ]) {
      const r = await runAbridge(argv, { cwd: temp.path });
      expect(r.stderr, argv.join(" ")).not.toContain("unknown command");
      expect(r.code, `${argv.join(" ")}: ${r.stderr}`).toBe(0);
      expect(r.stdout).toContain(path.join(cacheDir, "summaries.jsonl"));
    }
    const none = await runAbridge(["--config", config], { cwd: temp.path });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("abridge: expected a command");
    const unknown = await runAbridge(["--config", config, "tols"], { cwd: temp.path });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown command "tols"; did you mean "tools"?');
    const group = await runAbridge(["--config", config, "cache", "--help"], { cwd: temp.path });
    expect(group.code).toBe(0);
    expect(group.stdout).toContain("cache verify");
  });

  it("uses the config's log_level unless --log-level or $ABRIDGE_LOG_LEVEL says otherwise", async () => {
    const cacheDir = path.join(temp.path, "cache");
    const verbose = await writeConfig(temp.path, 'log_level = "debug"\n');
    const fromConfig = await runAbridge(["cache", "verify", "--config", verbose, "--cache-dir", cacheDir], { cwd: temp.path });
    expect(fromConfig.code).toBe(0);
    // The loader's own lines wait for the level and are shown at it.
    expect(fromConfig.stderr).toContain("abridge debug config loaded");
    const flag = await runAbridge(["cache", "verify", "--config", verbose, "--cache-dir", cacheDir, "--log-level", "warn"], { cwd: temp.path });
    expect(flag.stderr).not.toContain("config loaded");
    const env = await runAbridge(["cache", "verify", "--config", verbose, "--cache-dir", cacheDir], { cwd: temp.path, env: { ABRIDGE_LOG_LEVEL: "error" } });
    expect(env.stderr).not.toContain("config loaded");

    // A quieter level in the file quiets the loader's warnings too ("config has no servers").
    const quiet = path.join(temp.path, "quiet.toml");
    await writeFile(quiet, 'log_level = "error"\n');
    const quietRun = await runAbridge(["cache", "verify", "--config", quiet, "--cache-dir", cacheDir], { cwd: temp.path });
    expect(quietRun.stderr).toBe("");
    const loud = await runAbridge(["cache", "verify", "--config", quiet, "--cache-dir", cacheDir, "--log-level", "warn"], { cwd: temp.path });
    expect(loud.stderr).toContain("config has no servers");
  });
});
