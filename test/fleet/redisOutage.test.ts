import { readFile } from "node:fs/promises";
import path from "node:path";
import { Redis } from "ioredis";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseCacheLine } from "../../src/cache/parseCacheLine.js";
import { ErrorCode } from "../../src/model/errors.js";
import { runAbridge, writeConfig } from "../helpers/cliHarness.js";
import type { FakeOpenAi } from "../helpers/fakeOpenAi.js";
import { freePort, startRedis, type RedisServer } from "../helpers/redisServer.js";
import { waitFor } from "../helpers/waitFor.js";
import { closeFleetCase, closeHosts, type FleetCase, fleetToml, openFleetCase, openHost } from "./fleetHarness.js";

describe("fleet: when Redis is down", () => {
  let llm: FakeOpenAi;
  let dir: string;
  let fleetCase: FleetCase;
  let marker: string;
  const servers: RedisServer[] = [];
  const clients: Redis[] = [];
  beforeEach(async () => {
    fleetCase = await openFleetCase("outage");
    ({ dir, marker, llm } = fleetCase);
  });

  afterEach(async () => {
    await closeHosts();
    for (const client of clients.splice(0)) client.disconnect();
    await Promise.all(servers.splice(0).map((s) => s.destroy()));
    await closeFleetCase(fleetCase);
  });

  async function admin(port: number): Promise<Redis> {
    const client = new Redis({ host: "127.0.0.1", port, lazyConnect: true, retryStrategy: () => 50 });
    clients.push(client);
    await client.connect();
    return client;
  }

  it("loses nothing when Redis restarts in the middle of a warm", async () => {
    const redis = await startRedis({ persistent: true });
    servers.push(redis);
    // Slow enough that stopping Redis takes far less than the summaries left to make.
    llm.setDefault({ kind: "ok", delayMs: 300 });
    const tools = 8;
    const total = tools + 2;
    const host = await openHost(
      fleetToml({
        cacheUrl: redis.url(),
        marker,
        tools,
        summary: ['summarizer = "openai"', `base_url = ${JSON.stringify(llm.baseUrl)}`, "batch_size = 1", "max_concurrency = 1"],
      }),
    );
    await host.bridge.start();
    await waitFor(() => llm.requests.length >= 3, { what: "the first summaries" });
    await redis.stop();
    const atStop = llm.requests.length;
    // Summaries go on being made while Redis is away.
    await waitFor(() => llm.requests.length >= atStop + 2, { what: "summaries during the outage" });
    await redis.restart();
    await host.bridge.drainSummaries();

    const reader = await admin(redis.port);
    await waitFor(async () => (await reader.hlen("abridge:summaries")) === total, { what: "every entry in Redis after the restart" });
    const entries = Object.values(await reader.hgetall("abridge:summaries")).map((text) => parseCacheLine(text));
    expect(entries.every((e) => e.ok && e.entry.summarizer.startsWith("openai:"))).toBe(true);
    expect(llm.requests.flatMap((r) => r.tools)).toHaveLength(total);
    // Written entries were not lost by the restart either: they came back from the append-only file.
    expect(host.bridge.stats().catalog).toMatchObject({ tools: total, summarized: total });
    expect(host.lines.filter((l) => l.includes("summary cache on Redis is unreachable"))).toHaveLength(1);
    expect(host.lines.some((l) => l.includes("reachable again"))).toBe(true);
  });

  it("serves and summarizes with Redis down at start, keeps what it made in the spool, and writes it when Redis comes", async () => {
    const port = await freePort();
    const stateDir = path.join(dir, "state");
    const config = await writeConfig(dir, fleetToml({ cacheUrl: `redis://127.0.0.1:${port}/0`, marker, tools: 3 }));
    const warm = await runAbridge(["summarize", "warm", "--config", config], { cwd: dir, env: { ABRIDGE_STATE_DIR: stateDir } });
    expect(warm.code).toBe(0);
    expect(warm.stdout).toMatch(/^echo\s+5\s+0\s+5\s+0/m);
    // One warning for the outage, with its code; no stack of reconnection errors.
    const warnings = warm.stderr.split("\n").filter((l) => l.includes("unreachable"));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(ErrorCode.CACHE_UNAVAILABLE);
    const spool = path.join(stateDir, "redis-spool", `127.0.0.1-${port}-0.jsonl`);
    expect((await readFile(spool, "utf8")).split("\n").filter((l) => l !== "")).toHaveLength(5);

    const redis = await startRedis({ port });
    servers.push(redis);
    const status = await runAbridge(["summarize", "status", "--config", config, "--json"], { cwd: dir, env: { ABRIDGE_STATE_DIR: stateDir } });
    expect(status.code).toBe(0);
    expect((JSON.parse(status.stdout) as { servers: unknown[] }).servers).toEqual([
      expect.objectContaining({ server: "echo", tools: 5, cached: 5, missing: 0 }),
    ]);
    const reader = await admin(port);
    expect(await reader.hlen("abridge:summaries")).toBe(5);
    expect(await readFile(spool, "utf8")).toBe("");
  });

  it("a bridge started while Redis is down serves the originals and takes the summaries in when Redis comes", async () => {
    const redis = await startRedis({ persistent: true });
    servers.push(redis);
    const toml = fleetToml({ cacheUrl: redis.url(), marker, tools: 3, summary: ['summarizer = "openai"', `base_url = ${JSON.stringify(llm.baseUrl)}`] });
    const warm = await openHost(toml);
    await warm.bridge.start();
    await warm.bridge.drainSummaries();
    const summarized = JSON.stringify(warm.bridge.list("summary"));
    await warm.bridge.close();
    await redis.stop();

    const late = await openHost(toml);
    await late.bridge.start(undefined, { queue: false });
    expect(late.bridge.stats().catalog).toMatchObject({ tools: 5, summarized: 0 });
    expect(late.bridge.list("summary").find((t) => t.name === "echo_echo")?.description).toBe("Returns the text it is given.");
    await redis.restart();
    await waitFor(() => late.bridge.stats().catalog.summarized === 5, { what: "the summaries loaded once Redis is back" });
    expect(JSON.stringify(late.bridge.list("summary"))).toBe(summarized);
  });

  it("fails a malformed cache_url as a config error naming the field, without the password", async () => {
    const bad = await writeConfig(dir, fleetToml({ cacheUrl: "http://127.0.0.1:6379/0", marker, tools: 1 }));
    const http = await runAbridge(["summarize", "warm", "--config", bad], { cwd: dir });
    expect(http.code).toBe(2);
    expect(http.stderr).toContain("cache_url");
    expect(http.stderr).toContain("expected redis://");
    expect(http.stderr).toContain(ErrorCode.CONFIG_INVALID);

    const secretDb = await writeConfig(dir, fleetToml({ cacheUrl: "redis://:${CACHE_PASSWORD}@127.0.0.1:6379/zero", marker, tools: 1 }));
    const db = await runAbridge(["summarize", "warm", "--config", secretDb], { cwd: dir, env: { CACHE_PASSWORD: "s3cret-pass-word" } });
    expect(db.code).toBe(2);
    expect(db.stderr).toContain("cache_url");
    expect(db.stderr).toContain("expected a database number");
    expect(db.stderr).not.toContain("s3cret-pass-word");
  });
});
