import { writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runAbridge } from "../helpers/cliHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

// Each kind of bad config file, run through the real CLI: the message names the file, the field
// path and what was wrong; the exit code is 2; nothing is started.
const CASES: { name: string; file: string; text: string; expect: string[]; env?: Record<string, string> }[] = [
  {
    name: "TOML syntax error with line and column",
    file: "abridge.toml",
    text: 'mode = "compact"\n[servers.a\ncommand = "x"\n',
    expect: ["abridge.toml:2:"],
  },
  {
    name: "JSON syntax error with line and column",
    file: "mcp.json",
    text: '{\n  "mcpServers": {\n    "a": { "command": "x", }\n    "b": 1\n  }\n}\n',
    expect: ["mcp.json:4:"],
  },
  {
    name: "wrong type",
    file: "abridge.toml",
    text: '[servers.gh]\ncommand = "x"\ntimeout_ms = "30s"\n',
    expect: ["abridge.toml: servers.gh.timeout_ms: expected", 'got "30s"'],
  },
  {
    name: "unknown key with a suggestion",
    file: "abridge.toml",
    text: '[servers.gh]\ncommand = "x"\ntimout_ms = 5\n',
    expect: ['servers.gh: unknown key "timout_ms"; did you mean "timeout_ms"?'],
  },
  {
    name: "unknown top-level key without a suggestion",
    file: "abridge.toml",
    text: "frobnicate = true\n",
    expect: ['abridge.toml: unknown key "frobnicate"'],
  },
  {
    name: "bad enum",
    file: "abridge.toml",
    text: 'mode = "tiny"\n',
    expect: ["abridge.toml: mode: expected", '"compact"', 'got "tiny"'],
  },
  {
    name: "stdio server without a command",
    file: "abridge.toml",
    text: '[servers.a]\nargs = ["x"]\n',
    expect: ["abridge.toml: servers.a.command: expected a command"],
  },
  {
    name: "bad url",
    file: "abridge.toml",
    text: '[servers.a]\nurl = "not a url"\n',
    expect: ["abridge.toml: servers.a.url:"],
  },
  {
    name: "missing environment variable",
    file: "abridge.toml",
    text: '[servers.a]\ncommand = "x"\nenv = { TOKEN = "${ABRIDGE_TEST_UNSET_VAR}" }\n',
    expect: ["servers.a.env.TOKEN", "ABRIDGE_TEST_UNSET_VAR"],
  },
  {
    name: "bad server name",
    file: "abridge.toml",
    text: '[servers."my server"]\ncommand = "x"\n',
    expect: ['abridge.toml: servers."my server": expected a name of'],
  },
  {
    name: "unknown key in an mcpServers entry",
    file: "mcp.json",
    text: '{"mcpServers": {"a": {"command": "x", "argz": []}}}\n',
    expect: ['mcpServers.a: unknown key "argz"; did you mean "args"?'],
  },
  {
    name: "several problems reported at once",
    file: "abridge.toml",
    text: 'mode = 3\nseparator = "::"\n[servers.a]\ncommand = "x"\nenabled = "yes"\n',
    expect: ["abridge.toml: mode:", "abridge.toml: separator:", "abridge.toml: servers.a.enabled:"],
  },
];

describe("config errors through the CLI", () => {
  const temp = useTempDir();

  it.each(CASES)("$name", async (c) => {
    const file = path.join(temp.path, c.file);
    await writeFile(file, c.text);
    const r = await runAbridge(["servers", "--config", file], { cwd: temp.path, env: c.env ?? {} });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("CONFIG_INVALID");
    for (const part of c.expect) expect(r.stderr).toContain(part);
    expect(r.stdout).toBe("");
  });

  it("never prints a secret from the environment, even when the file is invalid", async () => {
    const secret = "sk-test-abridge-secret-value-123456";
    const file = path.join(temp.path, "abridge.toml");
    await writeFile(file, '[servers.a]\ncommand = "x"\nenv = { TOKEN = "${SECRET_TOKEN}" }\nheaders = 5\ntimeout_ms = -1\n');
    const r = await runAbridge(["servers", "--config", file, "--log-level", "debug"], { cwd: temp.path, env: { SECRET_TOKEN: secret } });
    expect(r.code).toBe(2);
    expect(r.stderr + r.stdout).not.toContain(secret);
  });

  it("reports a --config path that does not exist with exit 2", async () => {
    const r = await runAbridge(["servers", "--config", path.join(temp.path, "nope.toml")], { cwd: temp.path });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("CONFIG_NOT_FOUND");
    expect(r.stderr).toContain("nope.toml");
  });
});
