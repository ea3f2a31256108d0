import { describe, expect, it } from "vitest";
import { parseConfigText } from "../../src/config/parseConfigText.js";
import { AbridgeError, ErrorCode } from "../../src/model/errors.js";
import { createLogger } from "../../src/log/logger.js";

/** A `claude_desktop_config.json` as Claude Desktop leaves it: servers plus the app's own settings. */
const CLAUDE_DESKTOP = {
  globalShortcut: "Ctrl+Space",
  preferences: { menuBarEnabled: false },
  mcpServers: {
    memory: { command: "npx", args: ["-y", "@modelcontextprotocol/server-memory"] },
  },
};

function parse(doc: unknown): { servers: string[]; warnings: string[] } {
  const warnings: string[] = [];
  const logger = createLogger({ level: "warn", sink: (line) => warnings.push(line) });
  const config = parseConfigText(JSON.stringify(doc), {
    file: "/home/u/claude_desktop_config.json",
    displayName: "claude_desktop_config.json",
    env: {},
    logger,
  });
  return { servers: config.servers.map((s) => s.name), warnings };
}

function problems(doc: unknown): string[] {
  try {
    parse(doc);
  } catch (err) {
    expect(err).toBeInstanceOf(AbridgeError);
    expect((err as AbridgeError).code).toBe(ErrorCode.CONFIG_INVALID);
    return (err as AbridgeError).message.split("\n");
  }
  throw new Error("expected the file to be rejected");
}

describe("top-level keys of MCP client files", () => {
  it("loads an unchanged Claude Desktop file, warning once per key it does not read", () => {
    const { servers, warnings } = parse(CLAUDE_DESKTOP);
    expect(servers).toEqual(["memory"]);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toContain('claude_desktop_config.json: ignored top-level key "globalShortcut"');
    expect(warnings[1]).toContain('ignored top-level key "preferences"');
  });

  it("stays strict inside server entries, about abridge's own settings and about near misses", () => {
    expect(problems({ ...CLAUDE_DESKTOP, mcpServers: { memory: { command: "npx", comand: "npx" } } })).toEqual([
      'claude_desktop_config.json: mcpServers.memory: unknown key "comand"; did you mean "command"?',
    ]);
    expect(problems({ ...CLAUDE_DESKTOP, mode: "lazy", mcpServer: {} })).toEqual([
      'claude_desktop_config.json: unknown key "mode"; in an MCP client file abridge\'s own settings go in the "abridge" object',
      'claude_desktop_config.json: unknown key "mcpServer"; did you mean "mcpServers"?',
    ]);
  });

  it("keeps abridge's own format strict about unknown top-level keys", () => {
    const warnings: string[] = [];
    const logger = createLogger({ level: "warn", sink: (line) => warnings.push(line) });
    expect(() => parseConfigText('globalShortcut = "x"\n', { file: "abridge.toml", env: {}, logger })).toThrow('unknown key "globalShortcut"');
  });
});
