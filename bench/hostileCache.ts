/**
 * The shared summary cache under attack by someone who can reach its Redis (a real redis-server,
 * real `abridge serve` processes over stdio with the echo fixture, summaries warmed into Redis):
 * - a publish flood: N invented entries published on the landed channel (nothing written to the
 *   hash), then one real write, heard once every message before it was;
 * - a big value: one valid entry of B bytes in the hash, and a new bridge starting on it.
 * Per case: the serve process's RSS before, after and at its peak, healthy `echo` calls through it
 * meanwhile (p50/p99), and the summaries it serves. Not an assertion: figures only.
 *
 *   npx tsx bench/hostileCache.ts            (50,000 entries, a 64 MiB value: a couple of minutes)
 *   npx tsx bench/hostileCache.ts --full     (300,000 entries, a 536,870,900-byte value)
 *   npx tsx bench/hostileCache.ts --flood N --big-bytes B
 *
 * Writes bench/results/hostile-cache.json and prints the markdown.
 */
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { Redis } from "ioredis";
import type { CacheEntry } from "../src/cache/cacheEntry.js";
import { flagArg, numberArg } from "../test/fixtures/fixtureArgs.js";
import { fakeHash } from "../test/helpers/cacheEntries.js";
import { runAbridge } from "../test/helpers/cliHarness.js";
import { startRedis, type RedisServer } from "../test/helpers/redisServer.js";
import { CLI_BIN, ECHO_FIXTURE, tsxCommand } from "./benchConfig.js";
import { markdownTable } from "./markdownTable.js";
import { percentile, round, processMemoryKiB } from "./measure.js";
import { runStandalone } from "./standalone.js";

/** Invented entries published in the flood: default, and with `full`. */
const FLOOD = { default: 50_000, full: 300_000 };
/** Size of the big value in bytes: default, and with `full` (just under Redis's 512 MiB bulk limit). */
const BIG_BYTES = { default: 64 * 1024 * 1024, full: 536_870_900 };
/** Generated tools of the echo fixture (echo and add come on top). */
const GENERATED = 48;
/** Healthy calls in flight at once. */
const CALL_CONCURRENCY = 4;
/** How long a bridge on the big value is given to serve every summary. */
const SERVE_WAIT_MS = 60_000;
/** Healthy calls go on for at least this long in each case, so p99 has a few hundred calls behind it. */
const MIN_CALLS_MS = 5_000;
const HASH = "abridge:summaries";
const CHANNEL = "abridge:landed:0";

/** One attack's figures. */
export interface HostileCacheCase {
  case: string;
  /** A bridge serving every summary before the attack (the one attacked, or one like it for a bridge starting). */
  rssBeforeMiB: number;
  rssAfterMiB: number;
  rssPeakMiB: number;
  healthyCalls: number;
  healthyFailed: number;
  p50Ms: number;
  p99Ms: number;
  /** Summaries the bridge serves (tools whose description is their cached summary), of those in the cache. */
  summariesServed: number;
  summariesCached: number;
  seconds: number;
  detail?: Record<string, unknown>;
}

/** Result of {@link runHostileCache}. */
export interface HostileCacheResult {
  date: string;
  flood: number;
  bigBytes: number;
  cases: HostileCacheCase[];
}

/** Resolves once `ms` have passed since `started` (a `performance.now()`). */
function untilElapsed(started: number, ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, started + ms - performance.now())));
}

interface Serve {
  client: Client;
  pid: number;
  stderr: string[];
  close(): Promise<void>;
}

const mib = (kib: number): number => round(kib / 1024, 0);

async function startServe(config: string, dir: string, name: string): Promise<Serve> {
  const { command, args } = tsxCommand(CLI_BIN, ["serve", "--config", config, "--mode", "summary", "--no-watch"]);
  const transport = new StdioClientTransport({
    command,
    args,
    cwd: dir,
    stderr: "pipe",
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      ABRIDGE_STATE_DIR: path.join(dir, `state-${name}`),
      ABRIDGE_CACHE_DIR: path.join(dir, `cache-${name}`),
    },
  });
  const stderr: string[] = [];
  transport.stderr?.on("data", (chunk: Buffer) => {
    for (const line of chunk.toString("utf8").split("\n")) if (line.trim() !== "") stderr.push(line);
    if (stderr.length > 200) stderr.splice(0, stderr.length - 200);
  });
  const client = new Client({ name: "abridge-bench-hostile-cache", version: "0.1.0" });
  await client.connect(transport, { timeout: 120_000 });
  const pid = transport.pid;
  if (pid === null) throw new Error("serve has no pid");
  return { client, pid, stderr, close: () => client.close() };
}

/** Descriptions `serve` lists, by tool name. */
async function listed(serve: Serve): Promise<Map<string, string>> {
  const tools = new Map<string, string>();
  let cursor: string | undefined;
  do {
    const page = await serve.client.listTools(cursor === undefined ? {} : { cursor }, { timeout: 120_000 });
    for (const tool of page.tools) tools.set(tool.name, tool.description ?? "");
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return tools;
}

/** How many of `expected` (exposed name -> summary) `serve` lists with that summary. */
async function served(serve: Serve, expected: ReadonlyMap<string, string>): Promise<number> {
  const tools = await listed(serve);
  let count = 0;
  for (const [name, summary] of expected) if (tools.get(name) === summary) count += 1;
  return count;
}

/** Healthy `echo_echo` calls at {@link CALL_CONCURRENCY} until `stop` resolves. */
function healthyCalls(serve: Serve, stop: Promise<void>): Promise<{ latencies: number[]; failed: number }> {
  const latencies: number[] = [];
  let failed = 0;
  let stopped = false;
  void stop.then(() => (stopped = true));
  const worker = async (): Promise<void> => {
    while (!stopped) {
      const started = performance.now();
      try {
        await serve.client.callTool({ name: "echo_echo", arguments: { text: "hi" } }, undefined, { timeout: 60_000 });
        latencies.push(performance.now() - started);
      } catch {
        failed += 1;
      }
    }
  };
  return Promise.all(Array.from({ length: CALL_CONCURRENCY }, worker)).then(() => ({ latencies, failed }));
}

/** Polls `check` every 100 ms until it holds or `timeoutMs` passes; returns whether it held. */
async function poll(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() >= end) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Bytes Redis holds for its subscribers, not yet sent (the largest output buffer). */
async function subscriberBacklog(admin: Redis): Promise<number> {
  const clients = String(await admin.call("CLIENT", "LIST", "TYPE", "pubsub"));
  return Math.max(0, ...[...clients.matchAll(/omem=(\d+)/g)].map((match) => Number(match[1])));
}

async function redisStat(admin: Redis, section: string, field: string): Promise<number> {
  const info = await admin.info(section);
  return Number(new RegExp(`^${field}:(\\d+)`, "m").exec(info)?.[1] ?? Number.NaN);
}

function invented(i: number): CacheEntry {
  const hash = fakeHash(1_000_000 + i);
  const tool = `invented_${i}`;
  return {
    key: `echo:${tool}:${hash}`,
    server: "echo",
    tool,
    hash,
    summary: `Does invented thing number ${i} to whatever it is given and returns the result.`,
    params: { id: "Item id" },
    summarizer: "openai:gpt-4o-mini",
    prompt: "summarize-tool@1",
    tokensBefore: 120,
    tokensAfter: 30,
    createdAt: new Date().toISOString(),
  };
}

/** A valid entry of exactly `bytes` bytes (its summary fills it), as a Buffer. */
function bigEntry(bytes: number): { key: string; value: Buffer } {
  const hash = fakeHash(999);
  const key = `echo:huge:${hash}`;
  const head = `{"key":"${key}","server":"echo","tool":"huge","hash":"${hash}","summary":"`;
  const tail = `","params":{},"summarizer":"openai:gpt-4o-mini","prompt":"summarize-tool@1","tokensBefore":1,"tokensAfter":1,"createdAt":"${new Date().toISOString()}"}`;
  const fill = bytes - Buffer.byteLength(head) - Buffer.byteLength(tail);
  if (fill < 0) throw new Error(`--big-bytes ${bytes} is smaller than an entry`);
  const value = Buffer.alloc(bytes, 0x78);
  value.write(head, 0, "utf8");
  value.write(tail, bytes - Buffer.byteLength(tail), "utf8");
  return { key, value };
}

/**
 * The summaries of the warmed tools, by exposed name: those that differ from the original
 * description (a tool whose summary equals its description cannot show where it came from).
 */
async function cachedSummaries(admin: Redis, originals: ReadonlyMap<string, string>): Promise<Map<string, string>> {
  const expected = new Map<string, string>();
  for (const text of Object.values(await admin.hgetall(HASH))) {
    const entry = JSON.parse(text) as CacheEntry;
    const name = `${entry.server}_${entry.tool}`;
    if (originals.has(name) && originals.get(name) !== entry.summary) expected.set(name, entry.summary);
  }
  return expected;
}

async function figures(
  name: string,
  serve: Serve,
  rssBeforeKiB: number,
  started: number,
  calls: { latencies: number[]; failed: number },
  servedNow: number,
  cached: number,
  detail: Record<string, unknown>,
): Promise<HostileCacheCase> {
  return {
    case: name,
    rssBeforeMiB: mib(rssBeforeKiB),
    rssAfterMiB: mib(processMemoryKiB(serve.pid, "VmRSS")),
    rssPeakMiB: mib(processMemoryKiB(serve.pid, "VmHWM")),
    healthyCalls: calls.latencies.length,
    healthyFailed: calls.failed,
    p50Ms: round(percentile(calls.latencies, 50), 1),
    p99Ms: round(percentile(calls.latencies, 99), 1),
    summariesServed: servedNow,
    summariesCached: cached,
    seconds: round((performance.now() - started) / 1000, 1),
    detail,
  };
}

/** Options of {@link runHostileCache}: the full sizes, or sizes of one's own. */
export interface HostileCacheOptions {
  full?: boolean;
  flood?: number;
  bigBytes?: number;
}

/** Runs both attacks against fresh serve processes and one redis-server. */
export async function runHostileCache(options: HostileCacheOptions = {}): Promise<HostileCacheResult> {
  const flood = options.flood ?? (options.full === true ? FLOOD.full : FLOOD.default);
  const bigBytes = options.bigBytes ?? (options.full === true ? BIG_BYTES.full : BIG_BYTES.default);
  const dir = await mkdtemp(path.join(os.tmpdir(), "abridge-bench-hostile-cache-"));
  let redis: RedisServer | undefined;
  let admin: Redis | undefined;
  const serves: Serve[] = [];
  try {
    redis = await startRedis();
    admin = await redis.admin();
    const { command, args } = tsxCommand(ECHO_FIXTURE, ["--tools", String(GENERATED), "--long", "--page-size", "100"]);
    const config = path.join(dir, "abridge.toml");
    await writeFile(
      config,
      [
        `cache_url = ${JSON.stringify(redis.url())}`,
        "startup_grace_ms = 60000",
        'log_level = "warn"',
        "[servers.echo]",
        `command = ${JSON.stringify(command)}`,
        `args = ${JSON.stringify(args)}`,
        "",
      ].join("\n"),
    );
    const warm = await runAbridge(["summarize", "warm", "--config", config], {
      cwd: dir,
      env: { ABRIDGE_STATE_DIR: path.join(dir, "state-warm"), ABRIDGE_CACHE_DIR: path.join(dir, "cache-warm") },
    });
    if (warm.code !== 0) throw new Error(`summarize warm failed: ${warm.stderr}`);

    const cases: HostileCacheCase[] = [];
    const first = await startServe(config, dir, "first");
    serves.push(first);
    // The original descriptions: what a bridge on an empty database lists in summary mode.
    const bare = path.join(dir, "bare.toml");
    await writeFile(bare, readFileSync(config, "utf8").replace(redis.url(), redis.url(15)));
    const plain = await startServe(bare, dir, "bare");
    const originals = await listed(plain);
    await plain.close();
    const expected = await cachedSummaries(admin, originals);
    if (!(await poll(async () => (await served(first, expected)) === expected.size, 60_000)))
      throw new Error("the first bridge does not serve the warmed summaries");
    const baselineKiB = processMemoryKiB(first.pid, "VmRSS");

    // Publish flood.
    {
      const started = performance.now();
      let stop: () => void = () => undefined;
      const calls = healthyCalls(first, new Promise<void>((resolve) => (stop = resolve)));
      for (let i = 0; i < flood; i += 1_000) {
        const batch = admin.pipeline();
        for (let j = i; j < Math.min(flood, i + 1_000); j++) batch.publish(CHANNEL, JSON.stringify(invented(j)));
        await batch.exec();
        // Paced so that every message reaches the bridge: Redis drops a subscriber whose output
        // buffer passes 32 MB, and the bridge would then miss the rest of the flood.
        if ((await subscriberBacklog(admin)) > 4 * 1024 * 1024) await poll(async () => (await subscriberBacklog(admin!)) < 1024 * 1024, 120_000);
      }
      // One real write after the flood: written to the hash and published, so a bridge that lost its
      // subscription to the flood (Redis drops a subscriber whose output buffer fills) reads it on reload.
      const echoKey = (await admin.hkeys(HASH)).find((field) => field.startsWith("echo:echo:"))!;
      const sentinel = { ...(JSON.parse((await admin.hget(HASH, echoKey))!) as CacheEntry), createdAt: new Date().toISOString() };
      await admin.hset(HASH, sentinel.key, JSON.stringify(sentinel));
      await admin.publish(CHANNEL, JSON.stringify(sentinel));
      const publishedMs = performance.now() - started;
      // The sentinel changes nothing listed; the flood is over for the bridge once its subscriber's
      // output buffer in Redis is empty and a listing answers.
      await poll(async () => (await subscriberBacklog(admin!)) === 0, 120_000);
      await listed(first);
      const consumedMs = performance.now() - started;
      await untilElapsed(started, MIN_CALLS_MS);
      stop();
      const result = await calls;
      cases.push(
        await figures(
          `publish flood: ${flood.toLocaleString("en-US")} invented entries on the landed channel`,
          first,
          baselineKiB,
          started,
          result,
          await served(first, expected),
          expected.size,
          {
            publishSeconds: round(publishedMs / 1000, 1),
            consumedSeconds: round(consumedMs / 1000, 1),
          },
        ),
      );
    }

    // Big value.
    {
      const big = bigEntry(bigBytes);
      await admin.hset(HASH, big.key, big.value);
      const sentBefore = await redisStat(admin, "stats", "total_net_output_bytes");
      const started = performance.now();
      const second = await startServe(config, dir, "second");
      serves.push(second);
      let servedNow = 0;
      let servedAfterMs = Number.NaN;
      const serving = poll(async () => {
        servedNow = await served(second, expected);
        if (servedNow === expected.size) servedAfterMs = performance.now() - started;
        return servedNow === expected.size;
      }, SERVE_WAIT_MS);
      // Healthy calls from the first one answered (the echo server started): what a client sees.
      await second.client.callTool({ name: "echo_echo", arguments: { text: "hi" } }, undefined, { timeout: 120_000 });
      const callsStarted = performance.now();
      let stop: () => void = () => undefined;
      const calls = healthyCalls(second, new Promise<void>((resolve) => (stop = resolve)));
      const all = await serving;
      await untilElapsed(callsStarted, MIN_CALLS_MS);
      stop();
      const result = await calls;
      const sentBytes = (await redisStat(admin, "stats", "total_net_output_bytes")) - sentBefore;
      cases.push(
        await figures(
          `big value: one ${bigBytes.toLocaleString("en-US")}-byte entry in the hash, a bridge starting`,
          second,
          baselineKiB,
          started,
          result,
          servedNow,
          expected.size,
          {
            allServed: all,
            secondsToServeAll: all ? round(servedAfterMs / 1000, 1) : undefined,
            redisSentMiB: round(sentBytes / 1024 / 1024, 1),
            redisPeakMiB: round((await redisStat(admin, "memory", "used_memory_peak")) / 1024 / 1024, 0),
            skippedLogged: second.stderr.some((line) => line.includes("skipped a summary cache entry over")),
          },
        ),
      );
      await admin.hdel(HASH, big.key);
    }
    return { date: new Date().toISOString(), flood, bigBytes, cases };
  } finally {
    await Promise.allSettled(serves.map((serve) => serve.close()));
    admin?.disconnect();
    await redis?.destroy();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The markdown table of a {@link HostileCacheResult}. */
export function hostileCacheMarkdown(result: HostileCacheResult): string {
  return [
    "### Shared summary cache under attack",
    "",
    markdownTable(
      ["case", "RSS before MiB", "after", "peak", "healthy calls", "failed", "p50 ms", "p99 ms", "summaries served", "s"],
      result.cases.map((c) => [
        c.case,
        c.rssBeforeMiB,
        c.rssAfterMiB,
        c.rssPeakMiB,
        c.healthyCalls,
        c.healthyFailed,
        c.p50Ms,
        c.p99Ms,
        `${c.summariesServed} of ${c.summariesCached}`,
        c.seconds,
      ]),
    ),
    "",
    ...result.cases.map((c) => `- ${c.case}: ${JSON.stringify(c.detail)}`),
  ].join("\n");
}

await runStandalone(import.meta.url, {
  name: "hostile-cache",
  run: () =>
    runHostileCache({
      full: flagArg("full"),
      ...(process.argv.includes("--flood") ? { flood: numberArg("flood", FLOOD.default) } : {}),
      ...(process.argv.includes("--big-bytes") ? { bigBytes: numberArg("big-bytes", BIG_BYTES.default) } : {}),
    }),
  markdown: hostileCacheMarkdown,
  json: (r) => r,
});
