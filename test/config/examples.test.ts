import { existsSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/loadConfig.js";
import type { Config } from "../../src/config/schema.js";

const REPO = path.resolve(import.meta.dirname, "../..");

function summary(config: Config): unknown[] {
  return config.servers.map((s) => ({ name: s.name, transport: s.transport, command: s.command, args: s.args, env: s.env, enabled: s.enabled }));
}

describe("bundled examples", () => {
  it("examples/abridge.toml and examples/mcp.json load and describe the same servers", async () => {
    const toml = await loadConfig({ configPath: "examples/abridge.toml", cwd: REPO, env: {} });
    const json = await loadConfig({ configPath: "examples/mcp.json", cwd: REPO, env: {} });
    expect(toml.servers.map((s) => s.name)).toEqual(["everything", "filesystem", "memory", "sequential-thinking"]);
    expect(summary(json)).toEqual(summary(toml));
    expect(json.mode).toBe(toml.mode);
    expect(toml.summary.summarizer).toBe("extractive");
    // Without ABRIDGE_EXAMPLE_DIR the filesystem server gets ".", its working directory: the
    // examples folder, the same under serve, the CLI and a daemon started anywhere.
    const filesystem = toml.servers.find((s) => s.name === "filesystem");
    expect(filesystem?.args.at(-1)).toBe(".");
    expect(filesystem?.cwd).toBe(path.join(REPO, "examples"));
    expect(json.servers.find((s) => s.name === "filesystem")?.cwd).toBe(path.join(REPO, "examples"));
    const withDir = await loadConfig({ configPath: "examples/abridge.toml", cwd: REPO, env: { ABRIDGE_EXAMPLE_DIR: "/tmp" } });
    expect(withDir.servers.find((s) => s.name === "filesystem")?.args.at(-1)).toBe("/tmp");
  });

  it("only uses packages that are installed locally, so npx needs no network here", async () => {
    const config = await loadConfig({ configPath: "examples/abridge.toml", cwd: REPO, env: {} });
    for (const server of config.servers) {
      expect(server.command).toBe("npx");
      const pkg = server.args.find((a) => a.startsWith("@modelcontextprotocol/"));
      expect(pkg, server.name).toBeDefined();
      const manifest = path.join(REPO, "node_modules", pkg ?? "", "package.json");
      expect(existsSync(manifest), `${pkg} is not installed (npm install)`).toBe(true);
    }
  });
});
