/**
 * What the CLI says about a wrong command line or a config it cannot use: a negative number is a
 * value (refused for its range, not taken for a flag), every value error is followed by the
 * command's usage line, the config hints work from where the user is, a config error names the
 * file where the user finds it, and help lists exactly the modes `--mode` accepts.
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { ExitCode } from "../../src/cli/command.js";
import { parseMode } from "../../src/cli/commands/toolsCommand.js";
import { MODES } from "../../src/config/schema.js";
import { runAbridge } from "../helpers/cliHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

/** Non-empty lines of stderr. */
function lines(text: string): string[] {
  return text.split("\n").filter((line) => line.trim() !== "");
}

const temp = useTempDir();
/** No config anywhere: the current folder is empty and the XDG folder has none. */
let noConfig: { cwd: string; env: Record<string, string> };
beforeEach(async () => {
  noConfig = { cwd: temp.path, env: { XDG_CONFIG_HOME: path.join(temp.path, "xdg") } };
});

describe("a negative number given as a value", () => {
  const cases: { argv: string[]; says: string; usage: string }[] = [
    {
      argv: ["render", "--budget", "-5"],
      says: "--budget: -5 is out of range: expected a positive integer (1 or more)",
      usage: "Usage: abridge render [options]",
    },
    { argv: ["render", "--budget", "-0.5"], says: '--budget: expected a positive integer, got "-0.5"', usage: "Usage: abridge render [options]" },
    {
      argv: ["search", "files", "--limit", "-3"],
      says: '--limit: expected an integer from 1 to 50, got "-3"',
      usage: "Usage: abridge search <query> [options]",
    },
    {
      argv: ["call", "fs", "read", "--timeout-ms", "-100"],
      says: "--timeout-ms: -100 is out of range",
      usage: "Usage: abridge call <server> <tool> [options]",
    },
  ];
  for (const c of cases) {
    it(`${c.argv.join(" ")}: taken as the value and refused for it, with the usage line`, async () => {
      const r = await runAbridge(c.argv, { ...noConfig, stdin: "[]" });
      expect(r.code).toBe(ExitCode.USAGE);
      const [message, usage, ...rest] = lines(r.stderr);
      expect(message).toMatch(/^abridge: .* \[USAGE\]$/);
      expect(message).toContain(c.says);
      expect(message).not.toContain("ambiguous");
      expect(message).not.toContain("did you mean");
      expect(usage).toBe(c.usage);
      expect(rest).toEqual([]);
    });
  }

  it("still ends a flag's value at a word that is a flag, and names the flag without suggesting itself", async () => {
    const r = await runAbridge(["tools", "--mode", "--json"], noConfig);
    expect(r.code).toBe(ExitCode.USAGE);
    const [message, usage] = lines(r.stderr);
    expect(message).toContain("--mode");
    expect(message).not.toContain("did you mean");
    expect(usage).toBe("Usage: abridge tools [options]");
  });
});

describe("value errors are followed by the command's usage line", () => {
  const cases: { argv: string[]; message: string; usage: string }[] = [
    {
      argv: ["serve", "--mode", "bogus"],
      message: 'abridge: --mode: expected one of full, summary, compact, lazy, auto, code, got "bogus" [USAGE]',
      usage: "Usage: abridge serve [options]",
    },
    {
      argv: ["tools", "--mode", "bogus"],
      message: 'abridge: --mode: expected one of full, summary, compact, lazy, auto, code, got "bogus" [USAGE]',
      usage: "Usage: abridge tools [options]",
    },
    {
      argv: ["search", "files", "--limit", "0"],
      message: 'abridge: --limit: expected an integer from 1 to 50, got "0" [USAGE]',
      usage: "Usage: abridge search <query> [options]",
    },
    {
      argv: ["serve", "--page-size", "0"],
      message: "abridge: --page-size: 0 is out of range: expected a positive integer (1 or more) [USAGE]",
      usage: "Usage: abridge serve [options]",
    },
    {
      argv: ["servers", "--log-level", "loud"],
      message: 'abridge: --log-level: expected one of debug, info, warn, error, silent, got "loud" [USAGE]',
      usage: "Usage: abridge servers [options]",
    },
  ];
  for (const c of cases) {
    it(c.argv.join(" "), async () => {
      const r = await runAbridge(c.argv, noConfig);
      expect(r.code).toBe(ExitCode.USAGE);
      expect(lines(r.stderr)).toEqual([c.message, c.usage]);
    });
  }

  it("after a value checked against the config too (an unknown server)", async () => {
    const config = path.join(temp.path, "abridge.toml");
    await writeFile(config, '[servers.memory]\ncommand = "x"\n');
    const r = await runAbridge(["call", "memx", "echo", "--config", config], { cwd: temp.path });
    expect(r.code).toBe(ExitCode.USAGE);
    const [message, usage, ...rest] = lines(r.stderr);
    expect(message).toContain('no server "memx"');
    expect(message).toMatch(/ \[USAGE\]$/);
    expect(usage).toBe("Usage: abridge call <server> <tool> [options]");
    expect(rest).toEqual([]);
  });

  it("but not after an error that is no command-line error", async () => {
    const config = path.join(temp.path, "abridge.toml");
    await writeFile(config, 'mode = "tiny"\n');
    const r = await runAbridge(["servers", "--config", config], { cwd: temp.path });
    expect(r.code).toBe(ExitCode.USAGE);
    expect(r.stderr).toContain("[CONFIG_INVALID]");
    expect(r.stderr).not.toContain("Usage:");
  });
});

describe("the hint when no config is found", () => {
  it("does not suggest the example config where there is none", async () => {
    const r = await runAbridge(["servers"], noConfig);
    expect(r.code).toBe(ExitCode.USAGE);
    expect(r.stderr).toContain("[CONFIG_NOT_FOUND]");
    expect(r.stderr).not.toContain("examples/abridge.toml");
    // What works from this folder: the XDG file (found from anywhere), a local file, --config.
    expect(r.stderr).toContain(`Create ${path.join(temp.path, "xdg", "abridge", "abridge.toml")} (found from any folder)`);
    expect(r.stderr).toContain("--config <file>");
  });

  it("suggests the example config from a folder that has it", async () => {
    await mkdir(path.join(temp.path, "examples"));
    await writeFile(path.join(temp.path, "examples", "abridge.toml"), '[servers.memory]\ncommand = "x"\n');
    const r = await runAbridge(["servers"], noConfig);
    expect(r.code).toBe(ExitCode.USAGE);
    expect(r.stderr).toContain("[CONFIG_NOT_FOUND]");
    expect(r.stderr).toContain("--config examples/abridge.toml");
  });
});

describe("an error in the config found in the XDG folder", () => {
  it("names the file by its absolute path, not relative to the current folder", async () => {
    const file = path.join(temp.path, "xdg", "abridge", "abridge.toml");
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, "[servers.x]\ncommand = 5\n");
    const r = await runAbridge(["servers"], noConfig);
    expect(r.code).toBe(ExitCode.USAGE);
    expect(lines(r.stderr)[0]).toBe(`abridge: ${file}: servers.x.command: expected a non-empty string, got 5 [CONFIG_INVALID]`);
  });

  it("while ./abridge.toml is still named as it is in the current folder", async () => {
    await writeFile(path.join(temp.path, "abridge.toml"), "[servers.x]\ncommand = 5\n");
    const r = await runAbridge(["servers"], noConfig);
    expect(r.code).toBe(ExitCode.USAGE);
    expect(lines(r.stderr)[0]).toBe("abridge: abridge.toml: servers.x.command: expected a non-empty string, got 5 [CONFIG_INVALID]");
  });
});

describe("the modes help lists", () => {
  for (const command of ["tools", "serve", "render", "bus"]) {
    it(`${command} --help lists exactly the modes --mode accepts`, async () => {
      const r = await runAbridge([command, "--help"]);
      expect(r.code).toBe(ExitCode.OK);
      const line = lines(r.stdout).find((l) => l.trim().startsWith("--mode MODE"));
      expect(line, r.stdout).toBeDefined();
      const listed = /--mode MODE\s+(.*?)(?: \(default: .*\))?$/
        .exec(line!)![1]!
        .split(" | ")
        .map((m) => m.replace(/ \(default\)$/, ""));
      expect(listed).toEqual([...MODES]);
      for (const mode of listed) expect(parseMode(mode, "full")).toBe(mode);
    });
  }
});
