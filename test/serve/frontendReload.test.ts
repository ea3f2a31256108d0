/**
 * A session that was open before a hot reload sees the config after it: prompt and resource names
 * follow a `prefix` edit, and reads of a URI go to the server that serves it now, not to one the
 * reload removed.
 */
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { parseConfigText } from "../../src/config/parseConfigText.js";
import { createMcpFrontend, type McpFrontend } from "../../src/serve/mcpFrontend.js";
import { fixtureToml, startBridge } from "../policy/bridgeHarness.js";

const sessions: { client: Client; frontend: McpFrontend }[] = [];
afterEach(async () => {
  for (const { client, frontend } of sessions.splice(0)) {
    await client.close();
    frontend.dispose();
  }
});

describe("an open session across a hot reload", () => {
  it("follows prefix edits and routes reads away from removed servers", async () => {
    const conf = (name: string, extra: string[] = []): string => fixtureToml(name, "conformanceServer.ts", [], extra);
    const { bridge, dir } = await startBridge(`mode = "full"\n${conf("conf")}`);
    const frontend = createMcpFrontend(bridge);
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await frontend.server.connect(serverSide);
    const client = new Client({ name: "reload-test", version: "1" });
    await client.connect(clientSide);
    sessions.push({ client, frontend });
    const reload = (toml: string) => bridge.applyConfig(parseConfigText(`mode = "full"\n${toml}`, { file: path.join(dir, "abridge.toml"), env: {} }));
    const promptNames = async (): Promise<string[]> => (await client.listPrompts()).prompts.map((p) => p.name);
    const resourceNames = async (): Promise<string[]> => (await client.listResources()).resources.map((r) => r.name);
    const readText = async (uri: string): Promise<string> => {
      const contents = (await client.readResource({ uri })).contents[0] as { text?: string };
      return contents.text ?? "";
    };

    expect(await promptNames()).toContain("conf_test_simple_prompt");
    expect(await resourceNames()).toContain("conf_static-text");
    expect(await readText("test://static-text")).toContain("static text resource");

    // prefix = false: names lose the prefix in this session too, and the old names stop resolving.
    expect(await reload(conf("conf", ["prefix = false"]))).toMatchObject({ updated: ["conf"], changed: [] });
    expect(await promptNames()).toContain("test_simple_prompt");
    expect(await promptNames()).not.toContain("conf_test_simple_prompt");
    expect(await resourceNames()).toContain("static-text");
    const prompt = await client.getPrompt({ name: "test_simple_prompt" });
    expect(prompt.messages[0]?.content).toMatchObject({ type: "text", text: "This is a simple prompt for testing." });
    await expect(client.getPrompt({ name: "conf_test_simple_prompt" })).rejects.toThrow(/unknown prompt/);

    // The server that served the URI is removed and another takes its place: reads follow.
    expect(await reload(conf("other"))).toMatchObject({ added: ["other"], removed: ["conf"] });
    expect(await readText("test://static-text")).toContain("static text resource");
    expect(await promptNames()).toContain("other_test_simple_prompt");
    const other = await client.getPrompt({ name: "other_test_simple_prompt" });
    expect(other.messages).toHaveLength(1);
  });
});
