import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { parseConfigText } from "../../src/config/loadConfig.js";
import { Bridge } from "../../src/core/bridge.js";
import { startHttpServer, type HttpFrontend } from "../../src/serve/httpServer.js";
import { fixtureServerToml, pidsWithMarker, tempDir } from "../helpers/cliHarness.js";

describe("HTTP sessions in process", () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let marker: string;
  let bridge: Bridge | undefined;
  let http: HttpFrontend | undefined;
  beforeEach(async () => {
    ({ dir, cleanup } = await tempDir());
    marker = `sess-${path.basename(dir)}`;
  });
  afterEach(async () => {
    await http?.close();
    await bridge?.close();
    http = undefined;
    bridge = undefined;
    expect(pidsWithMarker(marker)).toEqual([]);
    await cleanup();
  });

  async function start(extra = ""): Promise<{ url: string; bridge: Bridge }> {
    const toml = `audit_log = "audit.jsonl"\n${extra}\n` + fixtureServerToml("echo", "echoServer.ts", ["--tools", "0", "--name", marker]);
    const config = parseConfigText(toml, { file: path.join(dir, "abridge.toml"), env: {} });
    bridge = await Bridge.open({ config, cacheFile: path.join(dir, "summaries.jsonl"), env: {}, stateDir: path.join(dir, "state") });
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
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } }),
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
    const lines = (await readFile(path.join(dir, "audit.jsonl"), "utf8")).trim().split("\n");
    const record = JSON.parse(lines.at(-1)!) as { client?: string; tool: string; outcome: string };
    expect(record).toMatchObject({ tool: "echo", outcome: "ok" });
    expect(record.client).toMatch(/^http:[0-9a-f-]{36}$/);
  });
});
