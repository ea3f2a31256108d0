/**
 * Timing of a huge upstream result (a bench script, not a test): the huge fixture sends one
 * JSON-RPC line of `--mb` megabytes (default 50, five times the SDK's 10 MiB line limit). Measured
 * three ways, each `--runs` times after one warm-up:
 *   - transport: an SDK client over ChildStdioTransport straight to the fixture (reading only);
 *   - bridge: Bridge.callTool, the result cut to max_output_bytes (200,000) by the policy layer;
 *   - serve: an SDK client over stdio to `abridge serve`, which answers with the cut result.
 *
 *   npx tsx test/reliability/hugeResultBench.ts [--mb 50] [--runs 5]
 *
 * Prints one JSON line per way: median and max milliseconds, and the peak RSS of this process.
 */
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { parseConfigText } from "../../src/config/parseConfigText.js";
import { Bridge } from "../../src/core/bridge.js";
import { silentLogger } from "../../src/log/logger.js";
import { ChildStdioTransport } from "../../src/upstream/process/childStdioTransport.js";
import { numberArg } from "../fixtures/fixtureArgs.js";
import { fixtureServerToml, tempDir, writeConfig } from "../helpers/cliHarness.js";
import { fixtureCommand } from "../helpers/processes.js";
import { BIN } from "../helpers/serveHarness.js";

const MB = numberArg("mb", 50);
const RUNS = numberArg("runs", 5);

async function measure(way: string, call: () => Promise<unknown>): Promise<void> {
  await call();
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    await call();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)]!;
  console.log(
    JSON.stringify({
      way,
      mb: MB,
      runs: RUNS,
      medianMs: Math.round(median),
      maxMs: Math.round(times.at(-1)!),
      rssMiB: Math.round(process.memoryUsage().rss / 2 ** 20),
    }),
  );
}

const { dir, cleanup } = await tempDir("abridge-huge-bench-");
try {
  {
    const client = new Client({ name: "bench", version: "1" });
    await client.connect(new ChildStdioTransport({ ...fixtureCommand("hugeOutputServer.ts"), stderr: "ignore" }));
    await measure("transport", () => client.callTool({ name: "huge", arguments: { mb: MB } }));
    await client.close();
  }
  {
    const toml = `mode = "full"\ncache_dir = ${JSON.stringify(path.join(dir, "cache"))}\n${fixtureServerToml("huge", "hugeOutputServer.ts")}`;
    const config = parseConfigText(toml, { file: path.join(dir, "abridge.toml"), env: {} });
    const bridge = await Bridge.open({
      config,
      cacheFile: path.join(dir, "cache", "summaries.jsonl"),
      env: {},
      logger: silentLogger,
      stateDir: path.join(dir, "state"),
    });
    await bridge.start();
    await measure("bridge", () => bridge.callTool("huge_huge", { mb: MB }));
    await bridge.close();
  }
  {
    const config = await writeConfig(dir, `mode = "full"\ncache_dir = "cache"\n${fixtureServerToml("huge", "hugeOutputServer.ts")}`);
    const client = new Client({ name: "bench", version: "1" });
    await client.connect(
      new StdioClientTransport({ command: process.execPath, args: ["--import", "tsx", BIN, "serve", "--config", config], stderr: "ignore" }),
    );
    await measure("serve", () => client.callTool({ name: "huge_huge", arguments: { mb: MB } }));
    await client.close();
  }
} finally {
  await cleanup();
}
