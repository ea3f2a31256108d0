import path from "node:path";
import { Client as V2Client, StreamableHTTPClientTransport as V2HttpTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport as V2StdioTransport } from "@modelcontextprotocol/client/stdio";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fixtureServerToml, pidsWithMarker, TEST_STARTUP_GRACE, writeConfig } from "../helpers/cliHarness.js";
import { BIN, serveOverHttp, type HttpServeProcess } from "../helpers/serveHarness.js";
import { useTempDir } from "../helpers/tempDir.js";

/**
 * The SDK's own client of revision 2026-07-28 (the v2 `@modelcontextprotocol/client`) in front of
 * `abridge serve`: it probes with `server/discover`, picks the stateless revision, and fulfils
 * `input_required` rounds with its elicitation handler, all without knowing abridge.
 */
function v2Client(): V2Client {
  const client = new V2Client({ name: "v2-client", version: "1.0.0" }, { capabilities: { elicitation: {} }, versionNegotiation: { mode: "auto" } });
  client.setRequestHandler("elicitation/create", async () => ({ action: "accept", content: { name: "V2" } }));
  return client;
}

describe("a 2026-07-28 client of the v2 SDK through abridge serve", () => {
  const temp = useTempDir();
  let marker: string;
  let config: string;
  let serve: HttpServeProcess | undefined;
  beforeEach(async () => {
    marker = path.basename(temp.path);
    config = await writeConfig(
      temp.path,
      [`cache_dir = "cache"`, 'mode = "full"', TEST_STARTUP_GRACE, fixtureServerToml("c", "conformanceServer.ts", [marker], "prefix = false")].join("\n"),
    );
  });
  afterEach(async () => {
    await serve?.stop();
    serve = undefined;
    expect(pidsWithMarker(marker)).toEqual([]);
  });

  it("over HTTP: negotiates 2026-07-28, lists with caching hints and answers an elicitation through input_required", async () => {
    serve = await serveOverHttp(config);
    const client = v2Client();
    await client.connect(new V2HttpTransport(new URL(serve.url)));
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe("2026-07-28");
      const listed = await client.listTools();
      expect(listed.tools.map((t) => t.name)).toContain("test_input_required_result_elicitation");
      expect(listed).toMatchObject({ cacheScope: "public" });
      const called = await client.callTool({ name: "test_input_required_result_elicitation", arguments: {} });
      expect(called.content).toEqual([{ type: "text", text: "Hello, V2!" }]);
    } finally {
      await client.close();
    }
    // No session was made for it.
    expect(serve.stderr()).not.toContain("HTTP session opened");
  });

  it("over stdio: negotiates 2026-07-28 and calls", async () => {
    const client = v2Client();
    await client.connect(
      new V2StdioTransport({
        command: process.execPath,
        args: ["--import", "tsx", BIN, "serve", "--config", config],
        env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" },
      }),
    );
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe("2026-07-28");
      const called = await client.callTool({ name: "test_simple_text", arguments: {} });
      expect(called.content).toEqual([{ type: "text", text: "This is a simple text response for testing." }]);
      const elicited = await client.callTool({ name: "test_input_required_result_elicitation", arguments: {} });
      expect(elicited.content).toEqual([{ type: "text", text: "Hello, V2!" }]);
    } finally {
      await client.close();
    }
  });
});
