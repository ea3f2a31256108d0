import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { parseConfigText } from "../../src/config/loadConfig.js";
import { Bridge } from "../../src/core/bridge.js";
import { startHttpServer, type HttpFrontend } from "../../src/serve/httpServer.js";
import { fixtureServerToml, pidsWithMarker } from "../helpers/cliHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

describe("HTTP sessions in process", () => {
  const temp = useTempDir({ marker: "sess" });
  let bridge: Bridge | undefined;
  let http: HttpFrontend | undefined;
  afterEach(async () => {
    await http?.close();
    await bridge?.close();
    http = undefined;
    bridge = undefined;
    expect(pidsWithMarker(temp.marker)).toEqual([]);
  });

  async function start(extra = ""): Promise<{ url: string; bridge: Bridge }> {
    const toml = `audit_log = "audit.jsonl"\n${extra}\n${fixtureServerToml("echo", "echoServer.ts", ["--tools", "0", "--name", temp.marker])}`;
    const config = parseConfigText(toml, { file: path.join(temp.path, "abridge.toml"), env: {} });
    bridge = await Bridge.open({ config, cacheFile: path.join(temp.path, "summaries.jsonl"), env: {}, stateDir: path.join(temp.path, "state") });
    await bridge.start();
    http = await startHttpServer(bridge, { port: 0 });
    return { url: http.url, bridge };
  }

  it("lets go of the front end of an initialize the SDK refuses before a session begins", async () => {
    const { url, bridge } = await start();
    const before = bridge.listenerCount("notification");
    for (let i = 0; i < 20; i++) {
      const res = await fetch(url, {
        method: "POST",
        // No text/event-stream in Accept: the SDK answers 406 and never starts a session.
        headers: { "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
        }),
      });
      expect(res.status).toBe(406);
    }
    expect(http!.sessions()).toBe(0);
    expect(bridge.listenerCount("notification")).toBe(before);
  });

  it("records which HTTP session called in the audit log", async () => {
    const { url } = await start();
    const client = new Client({ name: "t", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    await client.callTool({ name: "echo_echo", arguments: { text: "audited" } });
    await client.close();
    const lines = (await readFile(path.join(temp.path, "audit.jsonl"), "utf8")).trim().split("\n");
    const record = JSON.parse(lines.at(-1)!) as { client?: string; tool: string; outcome: string };
    expect(record).toMatchObject({ tool: "echo", outcome: "ok" });
    expect(record.client).toMatch(/^http:[0-9a-f-]{36}$/);
  });
});
