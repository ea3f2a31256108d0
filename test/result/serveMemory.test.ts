import path from "node:path";
import { createRequire } from "node:module";
import { afterEach, describe, expect, it } from "vitest";
import type { CallToolResult } from "../../src/model/types.js";
import { decodeResult } from "../../src/result/shapeResult.js";
import { waitForNoMarkedPids, writeConfig } from "../helpers/cliHarness.js";
import { serveOverStdio, type ServeSession } from "../helpers/serveHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

const require = createRequire(import.meta.url);
const memoryBin = require.resolve("@modelcontextprotocol/server-memory/dist/index.js");

const entities = [
  { name: "Ada", entityType: "person", observations: ["reviews the cache"] },
  { name: "Brook", entityType: "project", observations: ["started in week 1", "owns the bridge"] },
  { name: "Cyril", entityType: "person", observations: [] },
];

/**
 * The published memory server behind `abridge serve`, called by the official SDK client, which
 * checks `structuredContent` against a listed `outputSchema`: what a real client gets from
 * `compact` and `structured = "text-only"`.
 */
describe("result shaping seen by the SDK client through serve (published memory server)", () => {
  const temp = useTempDir({ marker: "shaping" });
  let session: ServeSession | undefined;
  afterEach(async () => {
    await session?.close();
    session = undefined;
    expect(await waitForNoMarkedPids(temp.marker)).toEqual([]);
  });

  const config = (extra: string): Promise<string> =>
    writeConfig(
      temp.path,
      `cache_dir = "cache"\n[servers.memory]\ncommand = ${JSON.stringify(process.execPath)}\nargs = [${JSON.stringify(memoryBin)}, ${JSON.stringify(temp.marker)}]\n` +
        `env = { MEMORY_FILE_PATH = ${JSON.stringify(path.join(temp.path, "memory.jsonl"))} }\n${extra}`,
    );

  it("full mode: the client validates structuredContent against the outputSchema and reads the compact text as tables", async () => {
    session = await serveOverStdio(await config(""), ["--mode", "full"]);
    const { tools } = await session.client.listTools();
    expect(tools.find((t) => t.name === "memory_read_graph")?.outputSchema).toBeDefined();
    await session.client.callTool({ name: "memory_create_entities", arguments: { entities } });
    const graph = (await session.client.callTool({ name: "memory_read_graph", arguments: {} })) as CallToolResult;
    const text = (graph.content?.[0] as { text: string }).text;
    expect(text.startsWith('{"entities":{"@columns":["name","entityType","observations"],"@rows":[["Ada","person",["reviews the cache"]]')).toBe(true);
    expect(graph.structuredContent).toEqual({ entities, relations: [] });
    const decoded = decodeResult(graph);
    expect(JSON.parse((decoded.content?.[0] as { text: string }).text)).toEqual(graph.structuredContent);
  });

  it('compact mode with structured = "text-only": the repeated structuredContent is left out and the client takes the result', async () => {
    session = await serveOverStdio(await config(`structured = "text-only"\n`));
    await session.client.listTools();
    await session.client.callTool({ name: "memory_create_entities", arguments: { entities } });
    const graph = (await session.client.callTool({ name: "memory_read_graph", arguments: {} })) as CallToolResult;
    expect(graph.structuredContent).toBeUndefined();
    expect(graph._meta).toMatchObject({ "abridge/structured": "text-only" });
    expect(JSON.parse((decodeResult(graph).content?.[0] as { text: string }).text)).toEqual({ entities, relations: [] });
  });
});
