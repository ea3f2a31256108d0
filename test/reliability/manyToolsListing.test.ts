/**
 * A large list while it changes. Summaries landing during a background pass are announced with
 * one `list_changed` when the pass is done (a 100k-tool pass sent 101, each making clients page
 * the whole list again). A client paging through the list reads one consistent list: the pages
 * after the first come from the list as it was at the first page, not re-read (and re-rendered,
 * which made 201 pages of 100k tools take 42.7 s) at every page, where a change between two pages
 * shifted the rest and skipped a tool. `bench/manyToolsPaging.ts` measures 100k tools.
 */
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { parseConfigText } from "../../src/config/parseConfigText.js";
import type { Bridge } from "../../src/core/bridge.js";
import { createMcpFrontend, type McpFrontend } from "../../src/serve/mcpFrontend.js";
import { fixtureToml, startBridge } from "../policy/bridgeHarness.js";
import { Watch } from "../helpers/waitFor.js";

const sessions: { client: Client; frontend: McpFrontend }[] = [];
afterEach(async () => {
  for (const { client, frontend } of sessions.splice(0)) {
    await client.close();
    frontend.dispose();
  }
});

async function connect(
  bridge: Bridge,
  pageSize?: number,
  mode: "compact" | "summary" = "compact",
): Promise<{ client: Client; listChanged: () => number; untilListChanged: (n: number) => Promise<void> }> {
  const frontend = createMcpFrontend(bridge, { mode, ...(pageSize !== undefined ? { pageSize } : {}) });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await frontend.server.connect(serverSide);
  const client = new Client({ name: "many-tools", version: "1" });
  let count = 0;
  const notified = new Watch();
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    count += 1;
    notified.changed();
  });
  await client.connect(clientSide);
  sessions.push({ client, frontend });
  return {
    client,
    listChanged: () => count,
    untilListChanged: (n) => notified.until(() => count >= n, { what: `list_changed number ${n}`, timeoutMs: 60_000 }),
  };
}

describe("a large tool list that changes", () => {
  it("summaries landing over a whole background pass make one list_changed", async () => {
    // A debounce far shorter than the pass: every pause between batches used to end it.
    const { bridge } = await startBridge(`mode = "compact"\n${fixtureToml("many", "echoServer.ts", ["--tools", "3000", "--page-size", "1000", "--long"])}`, {
      changeDebounceMs: 5,
    });
    // Summary mode: each summary replaces a long description, so every one that lands changes the
    // list (in compact mode a summary equal to the shown first sentence changes nothing).
    const { client, listChanged, untilListChanged } = await connect(bridge, undefined, "summary");
    // The client lists once, as clients do after initialize: a change is news only after that.
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    await bridge.drainSummaries();
    await untilListChanged(1);
    // A round trip after it: a notification sent before the answer (one per pause between
    // batches, during the pass) has arrived by then.
    await client.ping();
    expect(listChanged()).toBe(1);
  });

  it("a client paging through reads the list as it was at its first page", async () => {
    const toml = (deny: string) => `mode = "compact"\n${fixtureToml("many", "echoServer.ts", ["--tools", "30"], deny === "" ? [] : [`deny = ["${deny}"]`])}`;
    const { bridge, dir } = await startBridge(toml(""));
    await bridge.drainSummaries();
    const { client } = await connect(bridge, 10);
    const pageAll = async (): Promise<string[]> => {
      const all: string[] = [];
      let next: string | undefined;
      do {
        const page = await client.listTools(next === undefined ? {} : { cursor: next });
        all.push(...page.tools.map((t) => t.name));
        next = page.nextCursor;
      } while (next !== undefined);
      return all;
    };
    const whole = await pageAll();
    expect(whole).toContain("many_tool_002");
    const first = await client.listTools();
    // Between two pages a tool of the first page goes away (a hot reload denies it).
    await bridge.applyConfig(parseConfigText(toml("tool_002"), { file: path.join(dir, "abridge.toml"), env: {} }));
    expect(bridge.list("compact").some((t) => t.name === "many_tool_002")).toBe(false);
    const names = first.tools.map((t) => t.name);
    let cursor = first.nextCursor;
    while (cursor !== undefined) {
      const page = await client.listTools({ cursor });
      names.push(...page.tools.map((t) => t.name));
      cursor = page.nextCursor;
    }
    // Nothing skipped, nothing twice: the pages are one list.
    expect(names).toEqual(whole);
    // Paging again from the start reads the list as it is now.
    const now = await pageAll();
    expect(now).toHaveLength(whole.length - 1);
    expect(now).not.toContain("many_tool_002");
  });
});
