/**
 * Calls through abridge to a JSON-RPC backend: the test backend (test/fixtures/jsonRpcBackend.ts)
 * as its own process on a unix socket, abridge in-process (Bridge + the MCP front end over the
 * SDK's linked in-memory transports, compact mode, so every call is also validated against the
 * manifest's schema). Calls per second and p50/p99 latency at 1 and at 64 calls in flight, with
 * the same figures for the backend called directly over one socket client (no MCP, no bridge)
 * as the floor.
 *
 *   npx tsx bench/jsonRpc.ts     # prints markdown, writes bench/results/json-rpc.json
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { silentLogger } from "../src/log/logger.js";
import { Bridge } from "../src/core/bridge.js";
import { createMcpFrontend } from "../src/serve/mcpFrontend.js";
import { DEFAULT_BACKOFF } from "../src/upstream/backoff.js";
import { JsonRpcClient } from "../src/upstream/jsonrpc/jsonRpcClient.js";
import { writeBackendManifests } from "../test/fixtures/jsonRpcBackend.js";
import { benchConfig, tsxCommand } from "./benchConfig.js";
import { REPO_ROOT } from "./corpus.js";
import { markdownTable } from "./markdownTable.js";
import { percentile, round } from "./measure.js";
import { runStandalone } from "./standalone.js";

const BACKEND = path.join(REPO_ROOT, "test", "fixtures", "jsonRpcBackend.ts");
/** Calls per measured run; the first tenth again before it, unmeasured, as warm-up. */
const CALLS = 4_000;
const CONCURRENCY = [1, 64] as const;

/** One measured run. */
export interface JsonRpcRun {
  path: "bridge (MCP, compact)" | "socket client alone";
  concurrency: number;
  calls: number;
  callsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
}

/** Result of {@link runJsonRpc}. */
export interface JsonRpcResult {
  runs: JsonRpcRun[];
}

/** `calls` calls of `call`, `concurrency` at a time; latency of each and the wall time. */
async function measure(call: () => Promise<void>, calls: number, concurrency: number): Promise<{ latencies: number[]; wallMs: number }> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  const worker = async (): Promise<void> => {
    while (next < calls) {
      next += 1;
      const t = performance.now();
      await call();
      latencies.push(performance.now() - t);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { latencies, wallMs: performance.now() - started };
}

async function run(path_: JsonRpcRun["path"], call: () => Promise<void>, concurrency: number): Promise<JsonRpcRun> {
  await measure(call, CALLS / 10, concurrency);
  const { latencies, wallMs } = await measure(call, CALLS, concurrency);
  return {
    path: path_,
    concurrency,
    calls: CALLS,
    callsPerSecond: Math.round((CALLS / wallMs) * 1000),
    p50Ms: round(percentile(latencies, 50), 3),
    p99Ms: round(percentile(latencies, 99), 3),
  };
}

/** Starts the backend process and waits until it listens. */
async function startBackend(socket: string): Promise<ChildProcess> {
  const { command, args } = tsxCommand(BACKEND, ["--socket", socket]);
  const child = spawn(command, args, { stdio: ["ignore", "pipe", "inherit"] });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on("data", (b: Buffer) => {
      if (b.toString("utf8").includes("ready")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`the backend exited with ${code}`)));
  });
  return child;
}

/** Measures both paths at each concurrency. */
export async function runJsonRpc(): Promise<JsonRpcResult> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "abridge-bench-jrpc-"));
  const socket = path.join(dir, "backend.sock");
  let backend: ChildProcess | undefined;
  try {
    await writeBackendManifests(path.join(dir, "manifests"));
    backend = await startBackend(socket);
    const runs: JsonRpcRun[] = [];

    const direct = new JsonRpcClient({
      address: { kind: "unix", path: socket },
      label: `unix:${socket}`,
      logger: silentLogger,
      backoff: DEFAULT_BACKOFF,
      random: Math.random,
      maxLineBytes: 1024 * 1024,
      connectTimeoutMs: () => 10_000,
      onHealth: () => undefined,
    });
    try {
      for (const c of CONCURRENCY) {
        runs.push(await run("socket client alone", async () => void (await direct.call("calc.add", { a: 1, b: 2 }, { timeoutMs: 30_000 })), c));
      }
    } finally {
      direct.close();
    }

    const config = benchConfig(
      `mode = "compact"\nlog_level = "error"\n[servers.svc]\njsonrpc = "unix:backend.sock"\nmanifests = "manifests"\n`,
      path.join(dir, "abridge.toml"),
    );
    await mkdir(path.join(dir, "cache"));
    const bridge = await Bridge.open({ config, cacheFile: path.join(dir, "cache", "summaries.jsonl"), env: {}, stateDir: path.join(dir, "state") });
    try {
      await bridge.start();
      const frontend = createMcpFrontend(bridge, { mode: "compact" });
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      await frontend.server.connect(serverSide);
      const client = new Client({ name: "bench", version: "1" });
      await client.connect(clientSide);
      const call = async (): Promise<void> => {
        const result = await client.callTool({ name: "svc_add", arguments: { a: 1, b: 2 } });
        if (result.isError) throw new Error(`call failed: ${JSON.stringify(result.content)}`);
      };
      for (const c of CONCURRENCY) runs.push(await run("bridge (MCP, compact)", call, c));
      await client.close();
      frontend.dispose();
    } finally {
      await bridge.close();
    }
    return { runs };
  } finally {
    if (backend && backend.exitCode === null) {
      const exited = new Promise((resolve) => backend!.once("exit", resolve));
      backend.kill("SIGTERM");
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  }
}

/** Markdown of a {@link JsonRpcResult}. */
export function jsonRpcMarkdown(r: JsonRpcResult): string {
  return [
    `### JSON-RPC backend (unix socket, \`calc.add\`, ${CALLS} calls per run)`,
    "",
    markdownTable(
      ["path", "in flight>", "calls/s>", "p50 ms>", "p99 ms>"],
      r.runs.map((run) => [run.path, run.concurrency, run.callsPerSecond, run.p50Ms.toFixed(3), run.p99Ms.toFixed(3)]),
    ),
    "",
    "The bridge path is a full MCP `tools/call` (in-memory transport): name resolution, argument",
    "validation against the manifest's schema, policy, audit and output limit, then one pipelined",
    "JSON-RPC request over the connection pool; the socket client alone is the floor.",
  ].join("\n");
}

await runStandalone(import.meta.url, { name: "json-rpc", run: () => runJsonRpc(), markdown: jsonRpcMarkdown, json: (r) => r });
