import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseConfigText } from "../../src/config/parseConfigText.js";
import { DEFAULT_MAX_OUTPUT_BYTES } from "../../src/config/schema.js";
import type { Config, ServerConfig } from "../../src/config/schema.js";
import { SecretSet } from "../../src/log/logger.js";

const DIR = path.resolve("/srv/abridge-conf");

function parse(file: string, text: string, env: Record<string, string | undefined> = {}): Config {
  return parseConfigText(text, { file: path.join(DIR, file), env, homeDir: "/home/tester" });
}

function server(config: Config, name: string): ServerConfig {
  const found = config.servers.find((s) => s.name === name);
  if (found === undefined) throw new Error(`no server ${name} in ${config.servers.map((s) => s.name).join(", ")}`);
  return found;
}

describe("parseConfigText accepts good files", () => {
  it("reads a TOML file with defaults filled in and servers in name order", () => {
    const config = parse(
      "abridge.toml",
      [
        'mode = "lazy"',
        "[summary]",
        'summarizer = "openai"',
        'base_url = "http://127.0.0.1:11434/v1"',
        "[servers.zeta]",
        'url = "http://127.0.0.1:9000/mcp"',
        "[servers.alpha]",
        'command = "node"',
        'args = ["server.js"]',
        "[servers.mid]",
        'type = "sse"',
        'url = "https://example.com/sse"',
      ].join("\n"),
    );
    expect(config.source).toBe(path.join(DIR, "abridge.toml"));
    expect(config.mode).toBe("lazy");
    expect(config.separator).toBe("_");
    expect(config.summary).toMatchObject({ summarizer: "openai", base_url: "http://127.0.0.1:11434/v1", model: "gpt-4o-mini" });
    expect(config.servers.map((s) => [s.name, s.transport])).toEqual([
      ["alpha", "stdio"],
      ["mid", "sse"],
      ["zeta", "http"],
    ]);
    expect(server(config, "alpha")).toMatchObject({
      command: "node",
      args: ["server.js"],
      env: {},
      timeout_ms: 30_000,
      enabled: true,
      prefix: true,
      lifecycle: "persistent",
    });
    expect(server(config, "alpha")).not.toHaveProperty("type");
  });

  it("reads a Claude Desktop mcp.json, mapping disabled and ignoring client-only keys", () => {
    const config = parse(
      "claude_desktop_config.json",
      JSON.stringify({
        mcpServers: {
          github: {
            command: "npx",
            args: ["-y", "@modelcontextprotocol/server-github"],
            env: { GITHUB_PERSONAL_ACCESS_TOKEN: "${GH:-none}" },
            disabled: true,
            autoApprove: ["get_issue"],
            alwaysAllow: ["list_issues"],
            description: "GitHub",
          },
          remote: { url: "https://example.com/mcp", headers: { "X-Team": "core" }, transport: "sse" },
          windsurf: { serverUrl: "http://127.0.0.1:7000/mcp" },
        },
      }),
    );
    expect(server(config, "github")).toMatchObject({ transport: "stdio", enabled: false, env: { GITHUB_PERSONAL_ACCESS_TOKEN: "none" } });
    expect(server(config, "github")).not.toHaveProperty("autoApprove");
    expect(server(config, "remote")).toMatchObject({ transport: "sse", url: "https://example.com/mcp", headers: { "X-Team": "core" } });
    expect(server(config, "windsurf")).toMatchObject({ transport: "http", url: "http://127.0.0.1:7000/mcp" });
  });

  it("reads a VS Code servers file with inputs, comments and trailing commas", () => {
    const text = `{
  // VS Code writes JSONC
  "inputs": [{ "type": "promptString", "id": "key", "description": "API key", "password": true }],
  "servers": {
    "fs": { "type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "\${env:DATA_DIR}"], "envFile": "\${workspaceFolder}/.env", },
    /* a remote one */
    "docs": { "type": "streamable-http", "url": "https://example.com/mcp", "dev": { "watch": "src/**" } },
  },
}`;
    const config = parse("mcp.json", text, { DATA_DIR: "/data" });
    expect(server(config, "fs")).toMatchObject({ transport: "stdio", args: ["-y", "@modelcontextprotocol/server-filesystem", "/data"] });
    expect(server(config, "docs")).toMatchObject({ transport: "http", url: "https://example.com/mcp" });
  });

  it("takes abridge's global keys from an abridge block in a client file", () => {
    const config = parse(
      "mcp.json",
      JSON.stringify({
        mcpServers: { a: { command: "x" } },
        abridge: { mode: "summary", separator: "--", read_only: true, summary: { word_budget: 12 } },
      }),
    );
    expect(config).toMatchObject({ mode: "summary", separator: "--", summary: { word_budget: 12 } });
    expect(server(config, "a").read_only).toBe(true);
  });

  it("reads abridge's own shape from a .json file", () => {
    const config = parse("abridge.json", JSON.stringify({ mode: "full", servers: { a: { command: "x", deny: ["rm*"] } } }));
    expect(config.mode).toBe("full");
    expect(server(config, "a").deny).toEqual(["rm*"]);
  });

  it("detects the format from the content when the extension says nothing", () => {
    expect(parse("config", 'mode = "full"').mode).toBe("full");
    expect(parse("config", '{"mode": "lazy"}').mode).toBe("lazy");
  });

  it("expands ${VAR}, ${VAR:-default}, nested defaults and the $${ escape", () => {
    const config = parse(
      "abridge.toml",
      [
        "[servers.a]",
        'command = "${TOOL_BIN}"',
        'args = ["${PORT:-8080}", "${EMPTY:-fallback}", "${UNSET:-${TOOL_BIN}}", "$${LITERAL}", "cost: $5", "${EMPTY}"]',
      ].join("\n"),
      { TOOL_BIN: "/usr/bin/tool", EMPTY: "" },
    );
    expect(server(config, "a").command).toBe("/usr/bin/tool");
    expect(server(config, "a").args).toEqual(["8080", "fallback", "/usr/bin/tool", "${LITERAL}", "cost: $5", ""]);
  });

  it("lets servers inherit the top-level policy unless they set their own", () => {
    const config = parse(
      "abridge.toml",
      [
        "read_only = true",
        'destructive = "deny"',
        "max_output_bytes = 1000",
        "[servers.inherits]",
        'command = "x"',
        "[servers.own]",
        'command = "x"',
        "read_only = false",
        'sandbox = "bwrap"',
        "spill = true",
        "max_output_bytes = 50",
      ].join("\n"),
    );
    expect(server(config, "inherits")).toMatchObject({ read_only: true, destructive: "deny", sandbox: "none", max_output_bytes: 1000, spill: false });
    expect(server(config, "own")).toMatchObject({ read_only: false, destructive: "deny", sandbox: "bwrap", max_output_bytes: 50, spill: true });

    const bare = parse("abridge.toml", '[servers.a]\ncommand = "x"\n');
    expect(server(bare, "a")).toMatchObject({
      read_only: false,
      destructive: "allow",
      sandbox: "none",
      max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
      spill: false,
    });
  });

  it("resolves relative paths against the config file's folder and ~ against home", () => {
    const config = parse(
      "abridge.toml",
      [
        'cache_dir = "cache"',
        'state_dir = "~/state"',
        'audit_log = "/var/log/abridge.jsonl"',
        "[servers.a]",
        'command = "x"',
        'cwd = "../work"',
        'sandbox_write = ["out"]',
        'sandbox_read = ["tools"]',
        "[servers.b]",
        'command = "x"',
      ].join("\n"),
    );
    expect(config.cache_dir).toBe(path.join(DIR, "cache"));
    expect(config.state_dir).toBe(path.join("/home/tester", "state"));
    expect(config.audit_log).toBe("/var/log/abridge.jsonl");
    expect(server(config, "a").cwd).toBe(path.resolve(DIR, "../work"));
    expect(server(config, "a").sandbox_write).toEqual([path.join(DIR, "out")]);
    expect(server(config, "a").sandbox_read).toEqual([path.join(DIR, "tools")]);
    // A stdio server without `cwd` runs in the config's folder, as it does under an auto-started daemon.
    expect(server(config, "b").cwd).toBe(DIR);
  });

  it("adds values expanded into env and headers to the SecretSet, not other values", () => {
    const secrets = new SecretSet();
    parseConfigText(
      [
        "[servers.a]",
        'command = "${TOOL_BIN}"',
        'env = { TOKEN = "${GH_TOKEN}", PLAIN = "not-a-secret" }',
        "[servers.b]",
        'url = "https://example.com/mcp"',
        'headers = { Authorization = "Bearer ${DOCS_TOKEN}" }',
      ].join("\n"),
      { file: "/x/abridge.toml", env: { GH_TOKEN: "ghp_abcdef123456", DOCS_TOKEN: "docs-secret-9876", TOOL_BIN: "/usr/bin/tool" }, secrets },
    );
    const line = "ghp_abcdef123456 | Bearer docs-secret-9876 | /usr/bin/tool | not-a-secret";
    expect(secrets.redact(line)).toBe("*** | *** | /usr/bin/tool | not-a-secret");
  });

  it("accepts an empty file as a config without servers", () => {
    const config = parse("abridge.toml", "");
    expect(config.servers).toEqual([]);
    expect(config.mode).toBe("compact");
  });
});
