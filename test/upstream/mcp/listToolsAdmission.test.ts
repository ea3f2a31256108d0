import { describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { ListToolsRequestSchema, type ListToolsResult } from "@modelcontextprotocol/sdk/types.js";
import { listTools } from "../../../src/upstream/mcp/listTools.js";
import { admitTool } from "../../../src/upstream/admitTool.js";
import { MAX_SCHEMA_DEPTH } from "../../../src/upstream/schemaDepth.js";
import { memoryLogger } from "../../helpers/memoryLogger.js";

/** An input schema nested `levels` objects deep. */
function deepSchema(levels: number): Record<string, unknown> {
  let schema: Record<string, unknown> = { type: "string" };
  for (let i = 0; i < levels; i++) schema = { type: "object", properties: { next: schema } };
  return schema;
}

/** A real SDK client talking to a real SDK server whose `tools/list` answers `tools` as they are. */
async function connected(tools: unknown[]): Promise<{ client: Client; close: () => Promise<void> }> {
  const server = new Server({ name: "loose", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }) as unknown as ListToolsResult);
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: "test", version: "1.0.0" });
  await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
  return {
    client,
    close: async () => {
      await client.close();
      await server.close();
    },
  };
}

describe("an MCP server's tools/list goes through admitTool", () => {
  it("quarantines a deep tool, skips a malformed or repeated one, each with its warning, and serves the rest admitted", async () => {
    const { client, close } = await connected([
      { name: "b", title: null, inputSchema: { type: "object", properties: null } },
      { name: "a", inputSchema: { type: "object" } },
      { name: "noschema", inputSchema: null },
      { description: "no name", inputSchema: {} },
      "not a tool",
      { name: "deep", inputSchema: deepSchema(MAX_SCHEMA_DEPTH) },
      { name: "a", inputSchema: { type: "object", description: "again" } },
    ]);
    const { logger, lines } = memoryLogger();
    try {
      const tools = await listTools(client, logger, 5_000);
      expect(tools).toEqual([
        { name: "a", inputSchema: { type: "object" } },
        { name: "b", inputSchema: { type: "object" } },
      ]);
      for (const tool of tools) expect(admitTool(tool)).toEqual({ ok: true, tool });
      const warnings = lines.filter((l) => l.includes("warn"));
      // The quarantine is reported first, as before admission moved: nothing else reads the tool.
      expect(warnings[0]).toMatch(/tool quarantined.*deep.*nests deeper than/);
      expect(warnings.filter((l) => l.includes("skipping a malformed tool (no name or inputSchema)"))).toHaveLength(3);
      expect(warnings.some((l) => l.includes("skipping a malformed tool") && l.includes("noschema"))).toBe(true);
      expect(warnings.filter((l) => l.includes("skipping a duplicate tool"))).toHaveLength(1);
    } finally {
      await close();
    }
  });
});
