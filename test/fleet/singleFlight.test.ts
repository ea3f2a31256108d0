import path from "node:path";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { pidsWithMarker, tempDir } from "../helpers/cliHarness.js";
import { startFakeOpenAi, type FakeOpenAi } from "../helpers/fakeOpenAi.js";
import { startRedis, type RedisServer } from "../helpers/redisServer.js";
import { closeHosts, fleetToml, openHost } from "./fleetHarness.js";

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
});
