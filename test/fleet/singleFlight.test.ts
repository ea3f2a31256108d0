import path from "node:path";
import { describe, expect, it } from "vitest";
import { runAbridge, writeConfig } from "../helpers/cliHarness.js";
import type { FakeOpenAi } from "../helpers/fakeOpenAi.js";
import type { RedisServer } from "../helpers/redisServer.js";
import { RedisStore } from "../../src/cache/redisStore.js";
import { waitFor } from "../helpers/waitFor.js";
import { fleetToml, openHost, useFleet } from "./fleetHarness.js";

describe("fleet: one LLM request per tool across every host", () => {
  let redis: RedisServer;
  let llm: FakeOpenAi;
  let dir: string;
  let marker: string;
  useFleet("flight", (setup) => ({ redis, dir, marker, llm } = setup));

  it("three bridges warming the same catalog at once make exactly one request per tool", async () => {
    // Slow answers keep every host's requests overlapping with the others' claims.
    llm.setDefault({ kind: "ok", delayMs: 150 });
    const tools = 10;
    const total = tools + 2;
    const toml = fleetToml({
      cacheUrl: redis.url(3),
      marker,
      tools,
      summary: ['summarizer = "openai"', `base_url = ${JSON.stringify(llm.baseUrl)}`, "batch_size = 2", "max_concurrency = 2"],
    });
    const hosts = await Promise.all([openHost(toml), openHost(toml), openHost(toml)]);
    await Promise.all(
      hosts.map(async (host) => {
        await host.bridge.start();
        await host.bridge.drainSummaries();
      }),
    );

    const asked = llm.requests.flatMap((r) => r.tools);
    expect(asked).toHaveLength(total);
    expect(new Set(asked).size).toBe(total);
    const stats = hosts.map((host) => host.bridge.stats());
    expect(stats.reduce((n, s) => n + s.queue.generated, 0)).toBe(total);
    for (const [i, s] of stats.entries()) {
      // Each tool, on each host: a hit when it started, generated there, or taken from a peer
      // that held its claim.
      const hits = hosts[i]!.bridge.discovery().reduce((n, d) => n + d.hits, 0);
      expect(hits + s.queue.generated + s.queue.fromPeers).toBe(total);
      expect(s.queue).toMatchObject({ queued: 0, running: 0, waiting: 0, fallbacks: 0 });
      expect(s.catalog).toMatchObject({ tools: total, summarized: total });
    }
    // All three serve the same list, byte for byte.
    const lists = hosts.map((host) => JSON.stringify(host.bridge.list("compact")));
    expect(new Set(lists).size).toBe(1);

    const admin = await redis.admin(3);
    try {
      expect(await admin.hlen("abridge:summaries")).toBe(total);
      // Every claim was released when its job ended.
      expect(await admin.keys("abridge:claim:*")).toEqual([]);
    } finally {
      admin.disconnect();
    }
  });

  it("a job longer than its lease keeps its claim by renewing it; closing releases it to a waiting host at once", async () => {
    // The first host's request never answers: only its renewals keep the claim.
    llm.setDefault({ kind: "hang" });
    const toml = fleetToml({
      cacheUrl: redis.url(6),
      marker,
      tools: 1,
      // A lease of a second, renewed every third of it: a loaded machine's late timers still renew in time.
      extra: ["cache_lease_ms = 1000"],
      summary: ['summarizer = "openai"', `base_url = ${JSON.stringify(llm.baseUrl)}`, "batch_size = 10"],
    });
    const first = await openHost(toml);
    await first.bridge.start();
    await waitFor(() => llm.requests.length === 1, { what: "the first host's request" });
    const second = await openHost(toml);
    await second.bridge.start();
    await waitFor(() => second.bridge.stats().queue.waiting === 3, { what: "the second host's jobs to wait" });
    // Fixed sleep, kept: proves the second host does NOT take the jobs over; 3 s = three 1 s leases, so only renewals keep the claim.
    await new Promise((r) => setTimeout(r, 3_000));
    expect(llm.requests).toHaveLength(1);
    expect(second.bridge.stats().queue).toMatchObject({ waiting: 3, requests: 0 });

    llm.setDefault({ kind: "ok" });
    await first.bridge.close();
    await second.bridge.drainSummaries();
    expect(llm.requests).toHaveLength(2);
    expect([...llm.requests[1]!.tools].sort()).toEqual([...llm.requests[0]!.tools].sort());
    expect(second.bridge.stats().catalog).toMatchObject({ tools: 3, summarized: 3 });
  });

  it("summarize warm waits for the keys another host holds and takes their summaries when they land", async () => {
    const url = redis.url(8);
    const toml = fleetToml({ cacheUrl: url, marker, tools: 2, summary: ['summarizer = "openai"', `base_url = ${JSON.stringify(llm.baseUrl)}`] });
    const probe = await openHost(toml);
    await probe.bridge.start(undefined, { queue: false });
    const tools = probe.bridge.tools();
    const held = tools.slice(0, 2);
    const other = await RedisStore.open({ url });
    const admin = await redis.admin(8);
    try {
      const leases = [];
      for (const tool of held) {
        const claim = await other.claim(tool.key);
        if (!claim.granted) throw new Error(`${tool.key} was claimed already`);
        leases.push(claim.lease);
      }
      const config = await writeConfig(dir, toml);
      const warming = runAbridge(["summarize", "warm", "--config", config], { cwd: dir, env: { ABRIDGE_STATE_DIR: path.join(dir, "state") } });
      // Everything it could claim is written: what is left is what it waits for.
      await waitFor(async () => (await admin.hlen("abridge:summaries")) === tools.length - held.length, { what: "the warm host's own summaries" });
      for (const [i, tool] of held.entries()) {
        await other.append({
          key: tool.key,
          server: tool.server,
          tool: tool.tool.name,
          hash: tool.key.slice(tool.key.lastIndexOf(":") + 1),
          summary: "Written elsewhere",
          summarizer: "openai:other-host",
          prompt: "summarize-tool@1",
          tokensBefore: 10,
          tokensAfter: 2,
          createdAt: new Date().toISOString(),
        });
        await leases[i]!.release();
      }
      const warm = await warming;
      expect(warm.code).toBe(0);
      expect(warm.stdout).toContain(`${tools.length - held.length} generated`);
      expect(warm.stdout).toContain("2 written by other hosts meanwhile");
      const asked = llm.requests.flatMap((r) => r.tools);
      for (const tool of held) expect(asked).not.toContain(tool.tool.name);
      expect(asked).toHaveLength(tools.length - held.length);
    } finally {
      admin.disconnect();
      await other.close();
    }
  });

  it("closes at once with jobs parked behind another host's claim, and leaves that claim alone", async () => {
    const toml = fleetToml({ cacheUrl: redis.url(7), marker, tools: 1, summary: ['summarizer = "openai"', `base_url = ${JSON.stringify(llm.baseUrl)}`] });
    // Another host holds every key the bridge will want: claimed first, through the same store.
    const other = await RedisStore.open({ url: redis.url(7) });
    try {
      const probe = await openHost(toml);
      await probe.bridge.start(undefined, { queue: false });
      const keys = probe.bridge.tools().map((t) => t.key);
      for (const key of keys) expect((await other.claim(key)).granted).toBe(true);

      const host = await openHost(toml);
      await host.bridge.start();
      await waitFor(() => host.bridge.stats().queue.waiting === keys.length, { what: "every job parked" });
      expect(llm.requests).toHaveLength(0);
      await host.bridge.close();
      expect(host.bridge.stats().queue).toMatchObject({ waiting: 0, requests: 0 });
      // The claims are still the other host's.
      for (const key of keys) expect((await other.claim(key)).granted).toBe(false);
    } finally {
      await other.close();
    }
  });
});
