import { createRequire } from "node:module";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fixtureServerToml, waitForNoMarkedPids, writeConfig } from "../helpers/cliHarness.js";
import { serveOverStdio, type ServeSession } from "../helpers/serveHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

const require = createRequire(import.meta.url);
const everythingBin = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");
const filesystemBin = require.resolve("@modelcontextprotocol/server-filesystem/dist/index.js");

type Text = { type: string; text: string };

describe("abridge serve over stdio, every mode", () => {
  const temp = useTempDir({ marker: "serve" });
  let config: string;
  let session: ServeSession | undefined;
  beforeEach(async () => {
    config = await writeConfig(
      temp.path,
      [
        `cache_dir = "cache"`,
        fixtureServerToml("echo", "echoServer.ts", ["--tools", "4", "--name", temp.marker]),
        `[servers.everything]\ncommand = ${JSON.stringify(process.execPath)}\nargs = [${JSON.stringify(everythingBin)}, "stdio", ${JSON.stringify(temp.marker)}]\n`,
        `[servers.fs]\ncommand = ${JSON.stringify(process.execPath)}\nargs = [${JSON.stringify(filesystemBin)}, ${JSON.stringify(temp.path)}, ${JSON.stringify(temp.marker)}]\n`,
      ].join("\n"),
    );
  });
  afterEach(async () => {
    await session?.close();
    session = undefined;
    expect(await waitForNoMarkedPids(temp.marker)).toEqual([]);
  });

  it("full: upstream tools only renamed, calls forwarded to fixture and published servers", async () => {
    session = await serveOverStdio(config, ["--mode", "full"]);
    const { tools } = await session.client.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toContain("echo_echo");
    expect(names).toContain("everything_echo");
    expect(names).toContain("fs_list_directory");
    expect(names).not.toContain("get_schema");
    expect([...names].sort()).toEqual(names.slice().sort((a, b) => (a < b ? -1 : 1)));
    const echo = tools.find((t) => t.name === "echo_echo")!;
    expect(echo.description).toBe("Returns the text it is given.");
    expect(echo.inputSchema.properties).toEqual({ text: { type: "string", description: "Text to echo" } });

    const r1 = await session.client.callTool({ name: "echo_echo", arguments: { text: "hi" } });
    expect((r1.content as Text[])[0]!.text).toBe("hi");
    const r2 = await session.client.callTool({ name: "everything_echo", arguments: { message: "round trip" } });
    expect((r2.content as Text[])[0]!.text).toContain("round trip");
    const r3 = await session.client.callTool({ name: "fs_list_directory", arguments: { path: temp.path } });
    expect((r3.content as Text[])[0]!.text).toContain("abridge.toml");
  });

  it("summary: summaries as descriptions, schemas kept without $schema", async () => {
    session = await serveOverStdio(config, ["--mode", "summary"]);
    const { tools } = await session.client.listTools();
    for (const tool of tools) expect(tool.inputSchema).not.toHaveProperty("$schema");
    const add = tools.find((t) => t.name === "echo_add")!;
    expect(add.inputSchema.required).toEqual(["a", "b"]);
    const r = await session.client.callTool({ name: "echo_add", arguments: { a: 2, b: 3 } });
    expect(r.isError ?? false).toBe(false);
  });

  it("compact: signature in the description, minimal schema, get_schema, validation with the full schema", async () => {
    session = await serveOverStdio(config);
    const { tools } = await session.client.listTools();
    const names = tools.map((t) => t.name);
    expect(names.at(-1)).toBe("get_schema");
    const echo = tools.find((t) => t.name === "echo_echo")!;
    expect(echo.description).toContain("(text: string)");
    expect(echo.inputSchema).toEqual({ type: "object" });
    expect(JSON.stringify(echo.inputSchema)).not.toContain("description");

    const schema = await session.client.callTool({ name: "get_schema", arguments: { tool: "echo_echo" } });
    const full = JSON.parse((schema.content as Text[])[0]!.text) as { inputSchema: unknown; description: string };
    expect(full.description).toBe("Returns the text it is given.");
    expect(full.inputSchema).toEqual({ type: "object", properties: { text: { type: "string", description: "Text to echo" } }, required: ["text"] });

    const bad = await session.client.callTool({ name: "echo_add", arguments: { a: "x" } });
    expect(bad.isError).toBe(true);
    expect((bad.content as Text[])[0]!.text).toContain("not forwarded");
    const good = await session.client.callTool({ name: "echo_add", arguments: { a: 1, b: 2 } });
    expect(good.isError ?? false).toBe(false);
    expect(good.structuredContent).toEqual({ sum: 3 });
  });

  it("lazy: only meta-tools; search, schema and call work", async () => {
    session = await serveOverStdio(config, ["--mode", "lazy"]);
    const { tools } = await session.client.listTools();
    expect(tools.map((t) => t.name)).toEqual(["search_tools", "get_schema", "call_tool"]);
    expect(tools[0]!.description).toContain("echo");
    const found = await session.client.callTool({ name: "search_tools", arguments: { query: "list the files in a directory" } });
    expect((found.content as Text[])[0]!.text).toContain("fs_list_directory");
    const called = await session.client.callTool({ name: "call_tool", arguments: { tool: "echo_echo", arguments: { text: "lazy" } } });
    expect((called.content as Text[])[0]!.text).toBe("lazy");
    const unknown = await session.client.callTool({ name: "call_tool", arguments: { tool: "echo_ecoh", arguments: {} } });
    expect(unknown.isError).toBe(true);
    expect((unknown.content as Text[])[0]!.text).toContain("echo_echo");
  });

  it("answers an unknown tool with -32602 and the closest names", async () => {
    session = await serveOverStdio(config);
    await expect(session.client.callTool({ name: "echo_ecoh", arguments: {} })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining("echo_echo"),
    });
  });

  it("paginates tools/list for the client", async () => {
    session = await serveOverStdio(config, ["--mode", "full", "--page-size", "5"]);
    const first = await session.client.listTools();
    expect(first.tools).toHaveLength(5);
    expect(first.nextCursor).toBeDefined();
    const all = [...first.tools];
    let cursor = first.nextCursor;
    while (cursor) {
      const page = await session.client.listTools({ cursor });
      all.push(...page.tools);
      cursor = page.nextCursor;
    }
    expect(new Set(all.map((t) => t.name)).size).toBe(all.length);
    expect(all.length).toBeGreaterThan(20);
  });

  it("aggregates resources and prompts of the upstreams with the server prefix", async () => {
    session = await serveOverStdio(config, ["--mode", "full"]);
    const { prompts } = await session.client.listPrompts();
    expect(prompts.some((p) => p.name.startsWith("everything_"))).toBe(true);
    const simple = prompts.find((p) => p.name.startsWith("everything_") && (p.arguments ?? []).every((a) => !a.required))!;
    const got = await session.client.getPrompt({ name: simple.name });
    expect(got.messages.length).toBeGreaterThan(0);
    const { resources } = await session.client.listResources();
    expect(resources.length).toBeGreaterThan(0);
    const read = await session.client.readResource({ uri: resources[0]!.uri });
    expect(read.contents.length).toBeGreaterThan(0);
  });
});
