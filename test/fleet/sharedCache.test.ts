import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { createMcpFrontend } from "../../src/serve/mcpFrontend.js";
import { ExtractiveSummarizer } from "../../src/summarize/extractiveSummarizer.js";
import type { Summarizer } from "../../src/summarize/types.js";
import { runAbridge, writeConfig } from "../helpers/cliHarness.js";
import type { FakeOpenAi } from "../helpers/fakeOpenAi.js";
import type { RedisServer } from "../helpers/redisServer.js";
import { Watch } from "../helpers/waitFor.js";
import { fleetToml, openHost, useFleet } from "./fleetHarness.js";

/** The extractive summarizer, counting its calls. */
function countingSummarizer(): Summarizer & { calls: number } {
  const inner = new ExtractiveSummarizer();
  const counting = {
    id: inner.id,
    promptId: inner.promptId,
    maxBatch: inner.maxBatch,
    calls: 0,
    summarize: (batch: Parameters<Summarizer["summarize"]>[0], options?: Parameters<Summarizer["summarize"]>[1]) => {
      counting.calls += 1;
      return inner.summarize(batch, options);
    },
  };
  return counting;
}

describe("fleet: bridges sharing one summary cache on Redis", () => {
  let redis: RedisServer;
  let llm: FakeOpenAi;
  let dir: string;
  let marker: string;
  useFleet("fleet", (setup) => ({ redis, dir, marker, llm } = setup));

  it("summarize warm on one host makes another serve every summary with no generation", async () => {
    const tools = 6;
    const toml = fleetToml({
      cacheUrl: redis.url(1),
      marker,
      tools,
      summary: ['summarizer = "openai"', `base_url = ${JSON.stringify(llm.baseUrl)}`, "batch_size = 3"],
    });
    const config = await writeConfig(dir, toml);
    const warm = await runAbridge(["summarize", "warm", "--config", config], { cwd: dir, env: { ABRIDGE_STATE_DIR: path.join(dir, "state") } });
    expect(warm.stderr).not.toContain("failed");
    expect(warm.code).toBe(0);
    // echo + add + the generated tools, every one asked of the LLM once.
    const total = tools + 2;
    expect(llm.requests.flatMap((r) => r.tools).sort()).toHaveLength(total);

    const counting = countingSummarizer();
    const other = await openHost(toml, { summarizer: counting });
    const discovery = await other.bridge.start();
    expect(discovery).toEqual([{ server: "echo", tools: total, hits: total, queued: 0 }]);
    await other.bridge.drainSummaries();
    expect(counting.calls).toBe(0);
    expect(other.bridge.stats().queue).toMatchObject({ requests: 0, generated: 0, fallbacks: 0 });
    expect(other.bridge.stats().catalog).toMatchObject({ tools: total, summarized: total });
    expect(llm.requests.flatMap((r) => r.tools)).toHaveLength(total);
    // What it serves is what the LLM wrote (the fake's summaries are the first words of each description).
    const echo = other.bridge.list("summary").find((t) => t.name === "echo_echo");
    expect(echo?.description).toBe("Returns the text it is");
  });

  it("a serving bridge learns summaries another host writes and tells its client once", async () => {
    // The LLM's summaries differ from the descriptions, so the list a client sees changes.
    const toml = fleetToml({ cacheUrl: redis.url(2), marker, tools: 4, summary: ['summarizer = "openai"', `base_url = ${JSON.stringify(llm.baseUrl)}`] });
    // A debounce that takes in the whole burst of six writes even on a loaded machine.
    const serving = await openHost(toml, { changeDebounceMs: 500 });
    // Looks only: its misses are left to the other host.
    await serving.bridge.start(undefined, { queue: false });
    const frontend = createMcpFrontend(serving.bridge, { mode: "summary" });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await frontend.server.connect(serverSide);
    const client = new Client({ name: "t", version: "1" });
    let notifications = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      notifications += 1;
    });
    await client.connect(clientSide);
    // Registered after the front end's: called in the same debounced change, once the front end
    // has sent (or found nothing to send for) it. The change that finds all six summaries there
    // is the last of the burst.
    let changedWithAll = false;
    const listChanged = new Watch();
    serving.bridge.onListChanged(() => {
      if (serving.bridge.stats().catalog.summarized === 6) changedWithAll = true;
      listChanged.changed();
    });
    const before = await client.listTools();
    expect(before.tools.find((t) => t.name === "echo_echo")?.description).toBe("Returns the text it is given.");

    const warming = await openHost(toml);
    await warming.bridge.start();
    await warming.bridge.drainSummaries();
    expect(warming.bridge.stats().queue.generated).toBe(6);

    await listChanged.until(() => changedWithAll, { what: "the list change after the sixth summary reached the serving bridge" });
    // The front end's notification for that change was sent before this request: its answer comes after it.
    const after = await client.listTools();
    const expected = warming.bridge.list("summary").find((t) => t.name === "echo_echo")?.description;
    expect(after.tools.find((t) => t.name === "echo_echo")?.description).toBe(expected);
    // Six summaries landing within the debounce make one notification.
    expect(notifications).toBe(1);
    await client.close();
  });
});
