import { describe, expect, it } from "vitest";
import { parseConfigText } from "../../src/config/parseConfigText.js";
import { AbridgeError, ErrorCode } from "../../src/model/errors.js";

interface BadCase {
  name: string;
  /** File name; its extension picks the format. */
  file: string;
  text: string;
  env?: Record<string, string>;
  /** The error message, line by line, exactly. */
  lines: string[];
}

const cases: BadCase[] = [
  {
    name: "TOML syntax error",
    file: "abridge.toml",
    text: 'mode = "compact"\n[servers.a]\ncommand = "x\n',
    lines: ["abridge.toml:3:13: control characters are not allowed in strings"],
  },
  {
    name: "JSON syntax error (missing value)",
    file: "mcp.json",
    text: '{\n  "mcpServers": {\n    "a": { "command": }\n  }\n}\n',
    lines: ['mcp.json:3:23: expected a value (string, number, object, array, true, false or null), got "}"'],
  },
  {
    name: "JSON syntax error (unclosed object)",
    file: "mcp.json",
    text: '{\n  "mcpServers": {}\n',
    lines: ['mcp.json:3:1: expected "," or "}" after a property value, got the end of the file'],
  },
  {
    name: "JSON top level not an object",
    file: "mcp.json",
    text: "[1, 2]",
    lines: ["mcp.json: expected an object at the top level, got an array"],
  },
  {
    name: "wrong type",
    file: "abridge.toml",
    text: '[servers.github]\ncommand = "npx"\ntimeout_ms = "30s"\n',
    lines: ['abridge.toml: servers.github.timeout_ms: expected a positive integer, got "30s"'],
  },
  {
    name: "number out of range and not an integer",
    file: "abridge.toml",
    text: "[summary]\nmax_concurrency = 100\nword_budget = 1.5\n",
    lines: [
      "abridge.toml: summary.max_concurrency: expected an integer from 1 to 64, got 100",
      "abridge.toml: summary.word_budget: expected an integer from 4 to 200, got 1.5",
    ],
  },
  {
    name: "unknown key with suggestion",
    file: "abridge.toml",
    text: '[servers.github]\ncommand = "npx"\ntimout_ms = 5000\n',
    lines: ['abridge.toml: servers.github: unknown key "timout_ms"; did you mean "timeout_ms"?'],
  },
  {
    name: "unknown key in camelCase gets the snake_case suggestion",
    file: "abridge.toml",
    text: "idleTimeoutMinutes = 3\n",
    lines: ['abridge.toml: unknown key "idleTimeoutMinutes"; did you mean "idle_timeout_minutes"?'],
  },
  {
    name: "unknown key without suggestion",
    file: "abridge.toml",
    text: 'colour = "blue"\n',
    lines: ['abridge.toml: unknown key "colour"'],
  },
  {
    name: "bad enum",
    file: "abridge.toml",
    text: 'mode = "fast"\n',
    lines: ['abridge.toml: mode: expected one of "full", "summary", "compact", "lazy", "auto", "code", got "fast"'],
  },
  {
    name: "missing command",
    file: "abridge.toml",
    text: '[servers.a]\nargs = ["x"]\n',
    lines: ["abridge.toml: servers.a.command: expected a command for a stdio server, got nothing"],
  },
  {
    name: "url and command both",
    file: "abridge.toml",
    text: '[servers.a]\ncommand = "x"\nurl = "http://127.0.0.1:1/mcp"\n',
    lines: ["abridge.toml: servers.a: expected either command (a stdio server) or url (an HTTP/SSE server), got both"],
  },
  {
    name: "sse server without url",
    file: "abridge.toml",
    text: '[servers.a]\ntype = "sse"\n',
    lines: ["abridge.toml: servers.a.url: expected a url for an sse server, got nothing"],
  },
  {
    name: "bad url",
    file: "abridge.toml",
    text: '[servers.a]\nurl = "not a url"\n[servers.b]\nurl = "file:///etc/passwd"\n',
    lines: [
      'abridge.toml: servers.a.url: expected an http:// or https:// URL, got "not a url"',
      'abridge.toml: servers.b.url: expected an http:// or https:// URL, got "file:///etc/passwd"',
    ],
  },
  {
    name: "missing env var",
    file: "abridge.toml",
    text: '[servers.a]\ncommand = "x"\nargs = ["--root", "${ROOT_DIR}"]\n',
    lines: ['abridge.toml: servers.a.args[1]: environment variable "ROOT_DIR" is not set (write ${ROOT_DIR:-default} to give a default)'],
  },
  {
    name: "missing env var in a url is reported once",
    file: "abridge.toml",
    text: '[servers.docs]\nurl = "${DOCS_URL}"\n',
    lines: ['abridge.toml: servers.docs.url: environment variable "DOCS_URL" is not set (write ${DOCS_URL:-default} to give a default)'],
  },
  {
    name: "malformed and unterminated references",
    file: "abridge.toml",
    text: '[servers.a]\ncommand = "x"\nargs = ["${1X}", "${OPEN"]\n',
    lines: [
      'abridge.toml: servers.a.args[0]: malformed variable reference "${1X}" (expected ${NAME} or ${NAME:-default})',
      'abridge.toml: servers.a.args[1]: unterminated variable reference "${OPEN"',
    ],
  },
  {
    name: "bad server name",
    file: "abridge.toml",
    text: '[servers."my server"]\ncommand = "x"\n',
    lines: ['abridge.toml: servers."my server": expected a name of A-Z a-z 0-9 _ . - starting with a letter or digit, got "my server"'],
  },
  {
    name: "bad separator",
    file: "abridge.toml",
    text: 'separator = "::"\n',
    lines: ['abridge.toml: separator: expected 1 to 3 of A-Z a-z 0-9 _ -, got "::"'],
  },
  {
    name: "several problems in one error",
    file: "abridge.toml",
    text: 'mode = "fast"\nspill = "yes"\n[servers.a]\nenabled = 1\n',
    lines: [
      'abridge.toml: mode: expected one of "full", "summary", "compact", "lazy", "auto", "code", got "fast"',
      'abridge.toml: spill: expected true or false, got "yes"',
      "abridge.toml: servers.a.enabled: expected true or false, got 1",
    ],
  },
  {
    name: "mcpServers file with an unknown key",
    file: "mcp.json",
    text: JSON.stringify({ mcpServers: { github: { command: "npx", comand: "npx" } } }),
    lines: ['mcp.json: mcpServers.github: unknown key "comand"; did you mean "command"?'],
  },
  {
    name: "mcpServers file with abridge settings at the top level",
    file: "mcp.json",
    text: JSON.stringify({ mcpServers: {}, mode: "lazy", mcpServer: {} }),
    lines: [
      'mcp.json: unknown key "mode"; in an MCP client file abridge\'s own settings go in the "abridge" object',
      'mcp.json: unknown key "mcpServer"; did you mean "mcpServers"?',
    ],
  },
  {
    name: "mcpServers file: errors name the client's keys",
    file: "mcp.json",
    text: JSON.stringify({
      mcpServers: {
        a: { command: "x", disabled: "yes" },
        b: { type: "websocket", url: "http://127.0.0.1:1/" },
        c: { serverUrl: "nope" },
      },
      abridge: { mode: "tiny" },
    }),
    lines: [
      'mcp.json: mcpServers.a.disabled: expected true or false, got "yes"',
      'mcp.json: mcpServers.b.type: expected one of "stdio", "http", "streamable-http", "streamableHttp", "streamable_http", "sse", got "websocket"',
      'mcp.json: abridge.mode: expected one of "full", "summary", "compact", "lazy", "auto", "code", got "tiny"',
      'mcp.json: mcpServers.c.serverUrl: expected an http:// or https:// URL, got "nope"',
    ],
  },
  {
    name: "VS Code file with an input prompt reference",
    file: "mcp.json",
    text: JSON.stringify({
      inputs: [{ type: "promptString", id: "token", description: "Token", password: true }],
      servers: { gh: { type: "stdio", command: "npx", env: { TOKEN: "${input:token}" } } },
    }),
    lines: ['mcp.json: servers.gh.env.TOKEN: "${input:token}" is a VS Code input prompt, which abridge cannot ask for; use ${ENV_VAR} instead'],
  },
  {
    name: "abridge JSON shape with a wrong type",
    file: "abridge.json",
    text: JSON.stringify({ mode: "compact", servers: { a: { command: "x", args: "--flag" } } }),
    lines: ['abridge.json: servers.a.args: expected an array of strings, got "--flag"'],
  },
];

describe("parseConfigText rejects bad files", () => {
  it.each(cases)("$name", ({ file, text, env, lines }) => {
    let caught: unknown;
    try {
      parseConfigText(text, { file: `/etc/abridge-test/${file}`, displayName: file, env: env ?? {} });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(AbridgeError);
    const error = caught as AbridgeError;
    expect(error.code).toBe(ErrorCode.CONFIG_INVALID);
    expect(error.message.split("\n")).toEqual(lines);
    const problems = error.details?.["problems"];
    expect(Array.isArray(problems) ? problems.length : -1).toBe(lines.length);
  });

  it("keeps the parser's error as the cause of a syntax error", () => {
    let caught: unknown;
    try {
      parseConfigText("a = = 1", { file: "x.toml", env: {} });
    } catch (err) {
      caught = err;
    }
    expect((caught as AbridgeError).cause).toBeInstanceOf(Error);
    expect((caught as AbridgeError).details?.["problems"]).toEqual([expect.objectContaining({ file: "x.toml", line: 1 })]);
  });
});
