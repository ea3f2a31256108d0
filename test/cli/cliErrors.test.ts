import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ExitCode } from "../../src/cli/command.js";
import { fixtureServerToml, runAbridge, writeConfig } from "../helpers/cliHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

/** The first line of stderr: the error itself (a usage line may follow it). */
function errorLine(stderr: string): string {
  return stderr.split("\n").find((line) => line.startsWith("abridge")) ?? "";
}

describe("CLI errors end with their code", () => {
  const cases: { what: string; argv: string[]; env?: Record<string, string>; says: string }[] = [
    { what: "an unknown command", argv: ["tols"], says: 'unknown command "tols"; did you mean "tools"?' },
    { what: "an unknown option", argv: ["servers", "--jsn"], says: "--jsn" },
    { what: "an option missing its value", argv: ["tools", "--mode"], says: "--mode" },
    { what: "too few arguments", argv: ["call", "only-server"], says: "expected 2 argument(s) (<server> <tool>), got 1" },
    { what: "too many arguments", argv: ["servers", "extra"], says: "got 1: extra" },
    { what: "a bad --log-level", argv: ["servers", "--log-level", "loud"], says: '--log-level: expected one of debug, info, warn, error, silent, got "loud"' },
    { what: "a bad $ABRIDGE_LOG_LEVEL", argv: ["servers"], env: { ABRIDGE_LOG_LEVEL: "loud" }, says: "$ABRIDGE_LOG_LEVEL: expected one of" },
    { what: "a flag before any command", argv: ["--jsn"], says: 'expected a command before "--jsn"' },
    { what: "a bare group word", argv: ["cache"], says: "abridge cache: expected one of its commands" },
    { what: "no arguments at all", argv: [], says: "abridge: expected a command" },
  ];
  for (const c of cases) {
    it(`${c.what}: exit 2, the message ends with [USAGE]`, async () => {
      const r = await runAbridge(c.argv, c.env ? { env: c.env } : {});
      expect(r.code).toBe(ExitCode.USAGE);
      const line = errorLine(r.stderr);
      expect(line).toContain(c.says);
      expect(line).toMatch(/ \[USAGE\]$/);
    });
  }

  it("keeps the usage line after an argument error", async () => {
    const r = await runAbridge(["call", "only-server"]);
    expect(r.stderr.trim().split("\n")).toEqual([
      "abridge call: expected 2 argument(s) (<server> <tool>), got 1 [USAGE]",
      "Usage: abridge call <server> <tool> [options]",
    ]);
  });
});

describe("abridge call with an unknown server", () => {
  const temp = useTempDir();

  it("names the server and suggests one, without speaking of a --server option", async () => {
    const config = await writeConfig(temp.path, fixtureServerToml("memory", "echoServer.ts"));
    const r = await runAbridge(["call", "memx", "echo", "--config", config], { cwd: temp.path });
    expect(r.code).toBe(ExitCode.USAGE);
    const line = errorLine(r.stderr);
    expect(line).toContain('no server "memx"');
    expect(line).toContain("(servers: memory)");
    expect(line).not.toContain("--server");
    expect(line).toMatch(/ \[USAGE\]$/);
  });
});

describe("README exit codes", () => {
  it("documents every exit code the CLI returns", () => {
    const readme = readFileSync("README.md", "utf8");
    const section = /\nExit codes:([\s\S]*?)\n\n/.exec(readme)?.[1] ?? "";
    for (const [name, code] of Object.entries(ExitCode)) {
      expect(section, `${name} = ${code}`).toMatch(new RegExp(`(^|[^0-9])${code}([^0-9]|$)`));
    }
  });
});
