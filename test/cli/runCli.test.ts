import { describe, expect, it } from "vitest";
import { runAbridge } from "../helpers/cliHarness.js";
import { VERSION } from "../../src/model/version.js";

describe("runCli shell", () => {
  it("prints the version", async () => {
    const r = await runAbridge(["--version"]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(VERSION);
  });

  it("prints help listing every command", async () => {
    const r = await runAbridge(["--help"]);
    expect(r.code).toBe(0);
    for (const command of ["summarize warm", "summarize status", "render", "servers", "tools", "call", "cache verify"]) {
      expect(r.stdout).toContain(command);
    }
  });

  it("prints per-command help with its options", async () => {
    const r = await runAbridge(["summarize", "warm", "--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("Usage: abridge summarize warm");
    expect(r.stdout).toContain("--stale");
    expect(r.stdout).toContain("--config");
  });

  it("rejects an unknown command with a suggestion and exit 2", async () => {
    const r = await runAbridge(["sumarize", "warm"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('unknown command "sumarize warm"');
    expect(r.stderr).toContain('did you mean "summarize warm"');
  });

  it("rejects an unknown flag with the usage and exit 2", async () => {
    const r = await runAbridge(["servers", "--jsn"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--jsn");
    expect(r.stderr).toContain('did you mean "--json"');
    expect(r.stderr).toContain("Usage: abridge servers");
  });

  it("rejects a wrong number of arguments with exit 2", async () => {
    const r = await runAbridge(["call", "only-server"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("expected 2 argument(s) (<server> <tool>), got 1");
  });

  it("shows a group's commands for a bare group word and exits 2", async () => {
    const r = await runAbridge(["cache"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("cache verify");
    expect(r.stderr).toContain("cache compact");
  });

  it("rejects a bad --log-level", async () => {
    const r = await runAbridge(["servers", "--log-level", "loud"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--log-level: expected one of debug, info, warn, error, silent, got "loud"');
  });

  it("says where it looked when no config is found", async () => {
    const r = await runAbridge(["servers"], { cwd: "/", env: { XDG_CONFIG_HOME: "/nonexistent-abridge" } });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("CONFIG_NOT_FOUND");
    expect(r.stderr).toContain("/abridge.toml  (./abridge.toml)");
    expect(r.stderr).toContain("/nonexistent-abridge/abridge/abridge.toml");
    // There is no examples/ folder in /: the example is not suggested there.
    expect(r.stderr).not.toContain("examples/abridge.toml");
  });
});
