import { afterEach, describe, expect, it } from "vitest";
import { clientPrefixedMatches } from "../../src/model/names.js";
import { fixtureServerToml, waitForNoMarkedPids, writeConfig } from "../helpers/cliHarness.js";
import { serveOverStdio, type ServeSession } from "../helpers/serveHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

type Result = { isError?: boolean; content: { type: string; text: string }[] };

/** The names the clients show the model for our `everything_echo`. */
const CLIENT_NAMES = [
  "mcp__abridge__everything_echo", // Claude Code
  "abridge__everything_echo", // mcp-hub
  "mcp_abridge_everything_echo", // Gemini CLI
  "mcp://abridge/everything_echo",
];

describe("clientPrefixedMatches", () => {
  it("finds our name behind each client's prefix", () => {
    for (const name of CLIENT_NAMES) expect(clientPrefixedMatches(name, ["everything_echo", "everything_add"]), name).toEqual(["everything_echo"]);
  });

  it("reports both readings when the client's prefix may hold the separator", () => {
    expect(clientPrefixedMatches("mcp_abridge_everything_echo", ["echo", "everything_echo"])).toEqual(["echo", "everything_echo"]);
    // `__` cannot split inside a name: only one reading.
    expect(clientPrefixedMatches("mcp__abridge__everything_echo", ["echo", "everything_echo"])).toEqual(["everything_echo"]);
  });

  it("does not match a name glued to something else, or the name itself", () => {
    expect(clientPrefixedMatches("xeverything_echo", ["everything_echo"])).toEqual([]);
    expect(clientPrefixedMatches("everything_echo", ["everything_echo"])).toEqual([]);
    expect(clientPrefixedMatches("_everything_echo", ["everything_echo"])).toEqual([]);
  });
});

describe("get_schema and call_tool take the names clients show", () => {
  const temp = useTempDir({ marker: "prefixed" });
  let session: ServeSession | undefined;
  afterEach(async () => {
    await session?.close();
    session = undefined;
    expect(await waitForNoMarkedPids(temp.marker)).toEqual([]);
  });

  const config = (extra = ""): Promise<string> =>
    writeConfig(temp.path, `cache_dir = "cache"\n${fixtureServerToml("everything", "echoServer.ts", ["--tools", "0", "--name", temp.marker])}${extra}`);

  it("compact: get_schema of each client's name is the schema of everything_echo", async () => {
    session = await serveOverStdio(await config(), ["--mode", "compact"]);
    for (const name of CLIENT_NAMES) {
      const result = (await session.client.callTool({ name: "get_schema", arguments: { tool: name } })) as Result;
      expect(result.isError, name).toBeFalsy();
      const schema = JSON.parse(result.content[0]?.text ?? "{}") as { name: string; inputSchema: { required: string[] } };
      expect(schema.name, name).toBe("everything_echo");
      expect(schema.inputSchema.required).toEqual(["text"]);
    }
  }, 60_000);

  it("lazy: call_tool with each client's name reaches everything_echo", async () => {
    session = await serveOverStdio(await config(), ["--mode", "lazy"]);
    for (const name of CLIENT_NAMES) {
      const result = (await session.client.callTool({ name: "call_tool", arguments: { tool: name, arguments: { text: name } } })) as Result;
      expect(result.isError, name).toBeFalsy();
      expect(JSON.stringify(result.content), name).toContain(name);
    }
  }, 60_000);

  it("an ambiguous name is the usual unknown-tool error, listing the tools it could mean", async () => {
    // A `prefix = false` server exposes `echo`: Gemini's name then reads as `echo` or `everything_echo`.
    const extra = fixtureServerToml("plain", "echoServer.ts", ["--tools", "0", "--name", temp.marker], "prefix = false");
    session = await serveOverStdio(await config(extra), ["--mode", "compact"]);
    const result = (await session.client.callTool({ name: "get_schema", arguments: { tool: "mcp_abridge_everything_echo" } })) as Result;
    expect(result.isError).toBe(true);
    expect(result.content[0]?.text).toBe(
      'unknown tool "mcp_abridge_everything_echo"; it ends with the names of several tools, use one of: echo, everything_echo',
    );
    // Claude Code's form is not ambiguous: `__` does not split inside a name.
    const claude = (await session.client.callTool({ name: "get_schema", arguments: { tool: "mcp__abridge__everything_echo" } })) as Result;
    expect(JSON.parse(claude.content[0]?.text ?? "{}")).toMatchObject({ name: "everything_echo" });
  }, 60_000);
});
