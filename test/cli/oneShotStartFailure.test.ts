/**
 * A server that fails to start, seen from the commands that run once (`tools`, `search`,
 * `record`, `call`) and from `serve`. A one-shot command tries once: it names the failure once on
 * stderr, with how the server's process ended and its stderr, promises no retry, and exits 1.
 * `serve` keeps running, so it does retry in the background, and says so.
 */
import { spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { ExitCode } from "../../src/cli/command.js";
import { abridgeCommand } from "../helpers/abridgeCommand.js";
import { fixtureServerToml, runAbridge, writeConfig } from "../helpers/cliHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

/** Non-empty lines of `text`. */
function lines(text: string): string[] {
  return text.split("\n").filter((line) => line.trim() !== "");
}

describe("a one-shot command whose server fails to start", () => {
  const temp = useTempDir();
  let gate: string;
  beforeEach(async () => {
    // Never created: the server exits with code 3 at every start.
    gate = path.join(temp.path, "gate");
  });

  const commands: { name: string; argv: string[] }[] = [
    { name: "tools", argv: ["tools"] },
    { name: "search", argv: ["search", "echo some text"] },
    { name: "record", argv: ["record", "gated"] },
    { name: "call", argv: ["call", "gated", "echo", "--args", '{"text":"x"}'] },
  ];
  for (const command of commands) {
    it(`${command.name}: one line with the exit code and the server's stderr, no retry promised, exit 1`, async () => {
      const config = await writeConfig(temp.path, fixtureServerToml("gated", "gatedServer.ts", ["--gate", gate]));
      const r = await runAbridge([...command.argv, "--config", config], { cwd: temp.path });
      expect(r.code).toBe(ExitCode.FAILURE);
      expect(lines(r.stderr)).toEqual([
        "abridge: server gated failed to start: the server process exited with code 3 before it was ready (stderr: gated fixture: gate closed) [UPSTREAM_START_FAILED]",
      ]);
    });
  }

  it("summarize warm: the failure is shown once, in its table row, with the exit code and the error code; exit 1", async () => {
    const config = await writeConfig(temp.path, fixtureServerToml("gated", "gatedServer.ts", ["--gate", gate]));
    const r = await runAbridge(["summarize", "warm", "--config", config], { cwd: temp.path, env: { ABRIDGE_CACHE_DIR: path.join(temp.path, "cache") } });
    expect(r.code).toBe(ExitCode.FAILURE);
    const said = `${r.stdout}\n${r.stderr}`.split("exited with code 3").length - 1;
    expect(said, `${r.stdout}\n${r.stderr}`).toBe(1);
    const row = lines(r.stdout).find((line) => line.startsWith("gated "));
    expect(row).toMatch(/failed: the server process exited with code 3 before it was ready \(stderr: gated fixture: gate closed\) \[UPSTREAM_START_FAILED\]$/);
    expect(r.stderr).not.toContain("retrying");
  });

  it("logs the failure once and without a retry when the log says more", async () => {
    const config = await writeConfig(temp.path, fixtureServerToml("gated", "gatedServer.ts", ["--gate", gate]));
    const r = await runAbridge(["tools", "--config", config, "--log-level", "debug"], { cwd: temp.path });
    expect(r.code).toBe(ExitCode.FAILURE);
    const failed = lines(r.stderr).filter((line) => line.includes("upstream failed to start"));
    expect(failed).toHaveLength(1);
    expect(failed[0]).toContain("exited with code 3");
    expect(r.stderr).not.toContain("retrying");
    expect(r.stderr).not.toContain("in the background");
  });

  it("names the signal that ended a server's process", async () => {
    const config = await writeConfig(temp.path, fixtureServerToml("gated", "gatedServer.ts", ["--gate", gate, "--signal", "SIGKILL"]));
    const r = await runAbridge(["tools", "--config", config], { cwd: temp.path });
    expect(r.code).toBe(ExitCode.FAILURE);
    expect(lines(r.stderr)).toEqual([
      "abridge: server gated failed to start: the server process was ended by SIGKILL before it was ready (stderr: gated fixture: gate closed) [UPSTREAM_START_FAILED]",
    ]);
  });
});

describe("serve with a server that fails to start", () => {
  const temp = useTempDir();

  it("says it retries in the background, and brings the server up once it can start", async () => {
    const gate = path.join(temp.path, "gate");
    const config = await writeConfig(temp.path, fixtureServerToml("gated", "gatedServer.ts", ["--gate", gate]));
    const { command, args } = abridgeCommand(["serve", "--config", config, "--log-level", "info"]);
    const child = spawn(command, args, { cwd: temp.path, env: { PATH: process.env.PATH, HOME: process.env.HOME }, stdio: ["pipe", "ignore", "pipe"] });
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    let stderr = "";
    const checks = new Set<() => void>();
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
      for (const check of [...checks]) check();
    });
    /** The first stderr line containing `text`, once abridge has written it (or its exit, first). */
    const lineWith = (text: string): Promise<string> =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          const line = lines(stderr).find((l) => l.includes(text));
          if (line === undefined) return;
          checks.delete(check);
          resolve(line);
        };
        checks.add(check);
        check();
        void exited.then((code) => reject(new Error(`abridge serve exited (${code}) before writing "${text}":\n${stderr}`)));
      });
    try {
      const failed = await lineWith("upstream failed to start");
      expect(failed).toContain('retrying="in the background"');
      expect(failed).toContain("exited with code 3");
      await writeFile(gate, "open");
      await lineWith("upstream started after failing at first");
    } finally {
      child.stdin.end();
    }
    expect(await exited).toBe(0);
  });
});
