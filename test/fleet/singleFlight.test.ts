import path from "node:path";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { pidsWithMarker, runAbridge, tempDir, writeConfig } from "../helpers/cliHarness.js";
import { startFakeOpenAi, type FakeOpenAi } from "../helpers/fakeOpenAi.js";
import { startRedis, type RedisServer } from "../helpers/redisServer.js";
import { RedisStore } from "../../src/cache/redisStore.js";
import { closeHosts, fleetToml, openHost, until } from "./fleetHarness.js";

describe("fleet: one LLM request per tool across every host", () => {
  let redis: RedisServer;
  let llm: FakeOpenAi;
  let dir: string;
  let cleanup: () => Promise<void>;
  let marker: string;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => redis.destroy());
  beforeEach(async () => {
    ({ dir, cleanup } = await tempDir());
    marker = `flight-${path.basename(dir)}`;
    llm = await startFakeOpenAi();
  });
  afterEach(async () => {
    await closeHosts();
    await llm.close();
    expect(pidsWithMarker(marker)).toEqual([]);
    await cleanup();
  });

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
    await Promise.all(hosts.map(async (host) => {
      await host.bridge.start();
      await host.bridge.drainSummaries();
    }));

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

    const admin = new Redis({ host: "127.0.0.1", port: redis.port, db: 3, lazyConnect: true });
    try {
      await admin.connect();
      expect(await admin.hlen("abridge:summaries")).toBe(total);
      // Every claim was released when its job ended.
      expect(await admin.keys("abridge:claim:*")).toEqual([]);
    } finally {
      admin.disconnect();
    }
  });

  it("a job longer than its lease keeps its claim by renewing it: a host arriving meanwhile waits", async () => {
    // Each answer takes several leases; without renewal the second host would take every job over.
    // Long enough that the second host, a whole CLI run starting its own server, arrives while it runs.
    llm.setDefault({ kind: "ok", delayMs: 4_000 });
    const toml = fleetToml({
      cacheUrl: redis.url(6),
      marker,
      tools: 1,
      extra: ["cache_lease_ms = 300"],
      summary: ['summarizer = "openai"', `base_url = ${JSON.stringify(llm.baseUrl)}`, "batch_size = 10"],
    });
    const first = await openHost(toml);
    await first.bridge.start();
    await until(() => llm.requests.length === 1, "the first host's request");
    // The second host is `summarize warm`, which says where its summaries came from.
    const config = await writeConfig(dir, toml);
    const [second] = await Promise.all([
      runAbridge(["summarize", "warm", "--config", config], { cwd: dir, env: { ABRIDGE_STATE_DIR: path.join(dir, "state") } }),
      first.bridge.drainSummaries(),
    ]);
    expect(second.code).toBe(0);
    expect(second.stdout).toContain("0 requests, 0 generated");
    expect(second.stdout).toContain("3 written by other hosts meanwhile");
    expect(llm.requests).toHaveLength(1);
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
      await until(() => host.bridge.stats().queue.waiting === keys.length, "every job parked");
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
