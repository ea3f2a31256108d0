/**
 * The shared summary cache on Redis (config `cache_url`), with a real redis-server on a loopback
 * port and the OpenAI-compatible fake endpoint the tests use:
 * - N bridges warming the same catalog at once: LLM requests (must equal the tool count: one per
 *   tool across the fleet) and wall time, beside the same bridges each with its own JSONL cache;
 * - loading K entries into memory from Redis (`RedisStore.open`) and from a JSONL file
 *   (`JsonlStore.open`), median of a few runs.
 *
 *   npx tsx bench/fleetCache.ts     (writes bench/results/fleetCache.json, prints the markdown)
 */
import { mkdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Redis } from "ioredis";
import type { CacheEntry } from "../src/cache/cacheEntry.js";
import { JsonlStore } from "../src/cache/jsonlStore.js";
import { RedisStore } from "../src/cache/redisStore.js";
import { parseConfigText } from "../src/config/parseConfigText.js";
import { Bridge } from "../src/core/bridge.js";
import { startFakeOpenAi } from "../test/helpers/fakeOpenAi.js";
import { fixtureCommand } from "../test/helpers/processes.js";
import { startRedis } from "../test/helpers/redisServer.js";
import { markdownTable } from "./markdownTable.js";
import { median, round } from "./measure.js";
import { runStandalone } from "./standalone.js";

const HOSTS = 3;
const GENERATED_TOOLS = 30;
const LOAD_ENTRIES = 50_000;
const LOAD_RUNS = 3;
/** What each fake LLM answer takes: enough for the summaries, not the start of the fixture servers, to dominate the wall time. */
const LLM_DELAY_MS = 200;

/** One fleet warm. */
export interface WarmFigures {
  hosts: number;
  tools: number;
  /** Requests the LLM endpoint received. */
  llmRequests: number;
  /** Tools named in those requests, over all of them (a tool asked twice counts twice). */
  toolsAsked: number;
  /** From the first start to the last host drained. */
  wallMs: number;
}

/** Result of {@link runFleetCache}. */
export interface FleetCacheResult {
  /** Every host on one Redis (`cache_url`): single flight across the fleet. */
  shared: WarmFigures;
  /** The same hosts, each with its own JSONL cache: every host summarizes everything. */
  separate: WarmFigures;
  load: {
    entries: number;
    /** `RedisStore.open` until every entry is in memory (median ms). */
    redisMs: number;
    /** `JsonlStore.open` of the same entries (median ms). */
    jsonlMs: number;
  };
}

function hostToml(options: { cacheUrl?: string; llm: string; marker: string }): string {
  const { command, args } = fixtureCommand("echoServer.ts", ["--tools", String(GENERATED_TOOLS), "--name", options.marker]);
  return [
    ...(options.cacheUrl !== undefined ? [`cache_url = ${JSON.stringify(options.cacheUrl)}`] : []),
    "startup_grace_ms = 60000",
    "[summary]",
    'summarizer = "openai"',
    `base_url = ${JSON.stringify(options.llm)}`,
    "batch_size = 4",
    "max_concurrency = 2",
    "[servers.echo]",
    `command = ${JSON.stringify(command)}`,
    `args = ${JSON.stringify(args)}`,
    "",
  ].join("\n");
}

async function warmFleet(dir: string, llmUrl: string, cacheUrl: string | undefined, requests: () => { tools: string[] }[]): Promise<WarmFigures> {
  const before = requests().length;
  const bridges = await Promise.all(
    Array.from({ length: HOSTS }, async (_, i) => {
      const hostDir = path.join(dir, `${cacheUrl === undefined ? "separate" : "shared"}-${i}`);
      // A stdio server starts in its config's folder.
      await mkdir(hostDir, { recursive: true });
      const config = parseConfigText(hostToml({ ...(cacheUrl !== undefined ? { cacheUrl } : {}), llm: llmUrl, marker: `bench-fleet-${process.pid}` }), {
        file: path.join(hostDir, "abridge.toml"),
        env: {},
      });
      return Bridge.open({ config, cacheFile: path.join(hostDir, "cache", "summaries.jsonl"), stateDir: path.join(hostDir, "state"), env: {} });
    }),
  );
  try {
    const started = performance.now();
    await Promise.all(
      bridges.map(async (bridge) => {
        await bridge.start();
        await bridge.drainSummaries();
      }),
    );
    const wallMs = performance.now() - started;
    const failed = bridges.flatMap((bridge) => bridge.servers().filter((s) => s.state !== "ready"));
    if (failed.length > 0) throw new Error(`a fleet host's server did not start: ${failed.map((s) => s.error?.message ?? s.state).join("; ")}`);
    const made = requests().slice(before);
    return {
      hosts: HOSTS,
      tools: bridges[0]!.tools().length,
      llmRequests: made.length,
      toolsAsked: made.reduce((n, r) => n + r.tools.length, 0),
      wallMs: round(wallMs, 0),
    };
  } finally {
    await Promise.all(bridges.map((bridge) => bridge.close()));
  }
}

function syntheticEntry(i: number): CacheEntry {
  const hash = (BigInt(i + 1) * 0x9e3779b97f4a7c15n).toString(16).padStart(16, "0").slice(-16);
  return {
    key: `server${i % 50}:tool_${i}:${hash}`,
    server: `server${i % 50}`,
    tool: `tool_${i}`,
    hash,
    summary: `Does the work of tool ${i} on the items it is given and returns what changed.`,
    params: { id: "Item id", limit: "Most results" },
    summarizer: "openai:gpt-4o-mini",
    prompt: "summarize-tool@1",
    tokensBefore: 180,
    tokensAfter: 40,
    createdAt: "2026-11-21T10:00:00.000Z",
  };
}

async function measureLoad(dir: string, port: number): Promise<FleetCacheResult["load"]> {
  const entries = Array.from({ length: LOAD_ENTRIES }, (_, i) => syntheticEntry(i));
  const file = path.join(dir, "load.jsonl");
  await writeFile(file, entries.map((e) => `${JSON.stringify(e)}\n`).join(""));
  const admin = new Redis({ host: "127.0.0.1", port, db: 9, lazyConnect: true });
  await admin.connect();
  try {
    for (let i = 0; i < entries.length; i += 1_000) {
      const chunk = entries.slice(i, i + 1_000).flatMap((e) => [e.key, JSON.stringify(e)]);
      await admin.hset("abridge:summaries", ...chunk);
    }
  } finally {
    admin.disconnect();
  }
  const redisMs: number[] = [];
  const jsonlMs: number[] = [];
  for (let run = 0; run < LOAD_RUNS; run++) {
    let started = performance.now();
    // A bridge keeps 20,000 entries of tools it has not listed; this measures a load of all of them.
    const redis = await RedisStore.open({ url: `redis://127.0.0.1:${port}/9`, startWaitMs: 60_000, memoryEntries: LOAD_ENTRIES });
    redisMs.push(performance.now() - started);
    if (redis.size !== LOAD_ENTRIES) throw new Error(`Redis store loaded ${redis.size} of ${LOAD_ENTRIES}`);
    await redis.close();
    started = performance.now();
    const jsonl = await JsonlStore.open({ file, readOnly: true });
    jsonlMs.push(performance.now() - started);
    if (jsonl.size !== LOAD_ENTRIES) throw new Error(`JSONL store loaded ${jsonl.size} of ${LOAD_ENTRIES}`);
    await jsonl.close();
  }
  return { entries: LOAD_ENTRIES, redisMs: round(median(redisMs), 0), jsonlMs: round(median(jsonlMs), 0) };
}

/** Runs the fleet warm (shared and separate caches) and the load comparison. */
export async function runFleetCache(): Promise<FleetCacheResult> {
  const dir = await mkdirTemp();
  const redis = await startRedis();
  const llm = await startFakeOpenAi();
  llm.setDefault({ kind: "ok", delayMs: LLM_DELAY_MS });
  try {
    const requests = (): { tools: string[] }[] => llm.requests;
    // Separate first: the first fleet also pays for compiling the fixture server once.
    const separate = await warmFleet(dir, llm.baseUrl, undefined, requests);
    const shared = await warmFleet(dir, llm.baseUrl, redis.url(1), requests);
    if (shared.toolsAsked !== shared.tools) throw new Error(`shared cache asked ${shared.toolsAsked} tools of the LLM for ${shared.tools} tools`);
    const load = await measureLoad(dir, redis.port);
    return { shared, separate, load };
  } finally {
    await llm.close();
    await redis.destroy();
    await rm(dir, { recursive: true, force: true });
  }
}

async function mkdirTemp(): Promise<string> {
  const dir = path.join(os.tmpdir(), `abridge-bench-fleet-${process.pid}-${Date.now()}`);
  await mkdir(dir, { recursive: true });
  return dir;
}

/** The markdown section of a {@link FleetCacheResult} (docs/fleet.md carries its figures). */
export function fleetCacheMarkdown(result: FleetCacheResult): string {
  const row = (label: string, w: WarmFigures): string[] => [
    label,
    String(w.hosts),
    String(w.tools),
    String(w.llmRequests),
    String(w.toolsAsked),
    `${w.wallMs}`,
  ];
  return [
    `### Fleet: ${result.shared.hosts} bridges warming one catalog at once`,
    "",
    markdownTable(
      ["caches", "hosts", "tools", "LLM requests", "tools asked of the LLM", "wall ms"],
      [row("one Redis (`cache_url`)", result.shared), row("one JSONL file each", result.separate)],
    ),
    "",
    `Loading ${result.load.entries.toLocaleString("en-US")} entries into memory: Redis ${result.load.redisMs} ms, JSONL ${result.load.jsonlMs} ms (median of ${LOAD_RUNS}).`,
  ].join("\n");
}

await runStandalone(import.meta.url, { name: "fleetCache", run: () => runFleetCache(), markdown: fleetCacheMarkdown, json: (r) => r });
