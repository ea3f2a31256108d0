import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { configFileSchema, type Config } from "../../src/config/schema.js";
import { Bridge } from "../../src/core/bridge.js";
import { createMcpFrontend } from "../../src/serve/mcpFrontend.js";
import { pidsWithMarker } from "../helpers/cliHarness.js";
import { startFakeOpenAi, type FakeOpenAi } from "../helpers/fakeOpenAi.js";
import { fixtureServer } from "../helpers/processes.js";
import { Watch } from "../helpers/waitFor.js";
import { useTempDir } from "../helpers/tempDir.js";

describe("summaries arriving while serving", () => {
  const temp = useTempDir({ marker: "lc" });
  let llm: FakeOpenAi;
  let bridge: Bridge | undefined;
  beforeEach(async () => {
    llm = await startFakeOpenAi();
  });
  afterEach(async () => {
    await bridge?.close();
    bridge = undefined;
    await llm.close();
    expect(pidsWithMarker(temp.marker)).toEqual([]);
  });

  it("serves originals at once, then changes the list once with one debounced list_changed", async () => {
    // The LLM answers slowly: discovery must not wait for it.
    llm.setDefault({ kind: "ok", delayMs: 1500 });
    const file = configFileSchema.parse({ summary: { summarizer: "openai", base_url: llm.baseUrl, batch_size: 50 } });
    const config: Config = {
      ...file,
      source: path.join(temp.path, "abridge.toml"),
      servers: [fixtureServer("echo", "echoServer.ts", ["--tools", "3", "--name", temp.marker])],
    };
    bridge = await Bridge.open({ config, cacheFile: path.join(temp.path, "summaries.jsonl"), env: {}, changeDebounceMs: 200 });
    await bridge.start();

    const frontend = createMcpFrontend(bridge, { mode: "summary" });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await frontend.server.connect(serverSide);
    const client = new Client({ name: "t", version: "1" });
    let notifications = 0;
    const notified = new Watch();
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      notifications += 1;
      notified.changed();
    });
    await client.connect(clientSide);

    const before = await client.listTools();
    const echoBefore = before.tools.find((t) => t.name === "echo_echo")!;
    expect(echoBefore.description).toBe("Returns the text it is given.");

    await bridge.drainSummaries();
    await notified.until(() => notifications > 0, { what: "list_changed after the summaries landed" });
    // A request after it: a notification sent before its answer has arrived by then. Exactly one
    // for the whole batch of five summaries.
    const after = await client.listTools();
    expect(notifications).toBe(1);
    expect(after.tools.find((t) => t.name === "echo_echo")!.description).not.toBe(echoBefore.description);
    expect(llm.requests).toHaveLength(1);

    // The same list again in a later process: every summary is a hit, no LLM request, same bytes.
    const served = JSON.stringify(bridge.list("summary"));
    await bridge.close();
    bridge = await Bridge.open({ config, cacheFile: path.join(temp.path, "summaries.jsonl"), env: {} });
    await bridge.start();
    expect(JSON.stringify(bridge.list("summary"))).toBe(served);
    expect(llm.requests).toHaveLength(1);
    await client.close();
  });
});
