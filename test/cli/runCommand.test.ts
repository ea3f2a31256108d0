import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CodeRunResult } from "../../src/index.js";
import { fixtureServerToml, pidsWithMarker, runAbridge, writeConfig } from "../helpers/cliHarness.js";
import { waitFor } from "../helpers/waitFor.js";
import { useTempDir } from "../helpers/tempDir.js";

describe("abridge run", () => {
  const temp = useTempDir({ marker: "run" });
  let config: string;
  beforeEach(async () => {
    config = await writeConfig(
      temp.path,
      [`cache_dir = "cache"`, fixtureServerToml("echo", "echoServer.ts", ["--tools", "2", "--name", temp.marker])].join("\n"),
    );
  });
  afterEach(async () => {
    expect(pidsWithMarker(temp.marker)).toEqual([]);
  });

  it("runs -e CODE against the servers and prints the answer, exit 0", async () => {
    const code = 'const r = await echo.add({ a: 2, b: 3 });\nconsole.log("sum", r.sum);\nreturn { sum: r.sum };';
    const r = await runAbridge(["run", "-e", code, "--config", config], { cwd: temp.path });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^\[log\] sum 5\n\{"sum":5\}\n\(1 call, \d+ ms\)\n$/);
  });

  it("runs a file, and --json prints the whole run result", async () => {
    const file = path.join(temp.path, "program.ts");
    await writeFile(file, 'const text: string = await echo.echo({ text: "hi" });\nreturn text;\n');
    const r = await runAbridge(["run", "program.ts", "--json", "--config", config], { cwd: temp.path });
    expect(r.code).toBe(0);
    const result = JSON.parse(r.stdout) as CodeRunResult;
    expect(result).toMatchObject({ ok: true, returnJson: '"hi"', calls: [{ tool: "echo_echo", ok: true }] });
    expect(result.runId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("exits 1 with the error code on stderr when the program fails; --timeout-ms ends a loop with CODE_TIMEOUT", async () => {
    const thrown = await runAbridge(["run", "-e", "throw new Error('boom')", "--config", config], { cwd: temp.path });
    expect(thrown.code).toBe(1);
    expect(thrown.stdout).toMatch(/^error: .*boom.*\[CODE_ERROR\]\n\(0 calls, \d+ ms\)\n$/s);
    expect(thrown.stderr).toMatch(/^abridge: the program failed: .*boom.* \[CODE_ERROR\]\n$/s);
    const looped = await runAbridge(["run", "-e", "while (true) {}", "--timeout-ms", "300", "--config", config], { cwd: temp.path });
    expect(looped.code).toBe(1);
    expect(looped.stderr).toContain("[CODE_TIMEOUT]");
    const limited = await runAbridge(
      ["run", "-e", "for (let i = 0; i < 3; i++) await echo.echo({ text: 'x' }); return 1;", "--max-calls", "2", "--config", config],
      { cwd: temp.path },
    );
    expect(limited.code).toBe(1);
    expect(limited.stderr).toContain("[CODE_LIMIT]");
  });

  it("ends the run on Ctrl-C (exit 130) and leaves no upstream behind", async () => {
    const withSlow = await writeConfig(
      temp.path,
      [
        `cache_dir = "cache"`,
        `audit_log = "audit.jsonl"`,
        fixtureServerToml("echo", "echoServer.ts", ["--tools", "2", "--name", temp.marker]),
        fixtureServerToml("slow", "slowServer.ts", ["--marker", temp.marker]),
      ].join("\n"),
    );
    const controller = new AbortController();
    const run = runAbridge(["run", "-e", 'await echo.echo({ text: "first" }); await slow.sleep({ ms: 60000 }); return "never";', "--config", withSlow], {
      cwd: temp.path,
      signal: controller.signal,
    });
    // Interrupt once the program's first call is done (only the audit file tells: polled).
    await waitFor(async () => (await readFile(path.join(temp.path, "audit.jsonl"), "utf8").catch(() => "")).includes('"tool":"echo"'), {
      what: "the program's first call in the audit log",
    });
    controller.abort(new Error("SIGINT"));
    const interrupted = await run;
    expect(interrupted.code).toBe(130);
    expect(interrupted.stdout).toContain("[CANCELLED]");
    expect(interrupted.stdout).not.toContain("never");
  });

  it("is a usage error (exit 2) with both or neither of FILE and -e, an unreadable file named, or a bad limit", async () => {
    const both = await runAbridge(["run", "x.ts", "-e", "return 1", "--config", config], { cwd: temp.path });
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("not both [USAGE]");
    const neither = await runAbridge(["run", "--config", config], { cwd: temp.path });
    expect(neither.code).toBe(2);
    expect(neither.stderr).toContain("give a program: a file (abridge run FILE.ts) or -e CODE [USAGE]");
    const missing = await runAbridge(["run", "nothing-here.ts", "--config", config], { cwd: temp.path });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(`cannot read the program file ${path.join(temp.path, "nothing-here.ts")}: `);
    expect(missing.stderr).toContain("ENOENT");
    const badLimit = await runAbridge(["run", "-e", "return 1", "--memory-mb", "lots", "--config", config], { cwd: temp.path });
    expect(badLimit.code).toBe(2);
    expect(badLimit.stderr).toContain('--memory-mb: expected a positive integer, got "lots"');
    const tooBig = await runAbridge(["run", "-e", "return 1", "--memory-mb", "5000", "--config", config], { cwd: temp.path });
    expect(tooBig.code).toBe(2);
    expect(tooBig.stderr).toContain("memory_mb: expected an integer from 1 to 1024, got 5000 [INPUT_INVALID]");
  });
});
