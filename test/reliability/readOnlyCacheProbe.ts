/**
 * Run by cacheFaults.test.ts inside `bwrap --ro-bind <cache dir>` (a read-only directory even for
 * root): opens a Bridge over the echo fixture (`--tools <argv[3]>`) with its cache in that folder, waits for the
 * summaries, calls a tool, and prints what it saw as one JSON line.
 */
import path from "node:path";
import { parseConfigText } from "../../src/config/parseConfigText.js";
import { Bridge } from "../../src/core/bridge.js";
import { createLogger } from "../../src/log/logger.js";
import { fixtureCommand } from "../helpers/processes.js";

const dir = process.argv[2]!;
const generatedTools = process.argv[3] ?? "5";
const logLines: string[] = [];
const { command, args } = fixtureCommand("echoServer.ts", ["--tools", generatedTools]);
const toml = `mode = "summary"\n[servers.echo]\ncommand = ${JSON.stringify(command)}\nargs = ${JSON.stringify(args)}\n`;
const config = parseConfigText(toml, { file: path.join(dir, "abridge.toml"), env: {} });
const bridge = await Bridge.open({
  config,
  cacheFile: path.join(dir, "cache", "summaries.jsonl"),
  env: {},
  stateDir: path.join(dir, "state"),
  logger: createLogger({ level: "debug", sink: (line) => logLines.push(line) }),
});
const counts = await bridge.start();
await bridge.drainSummaries(AbortSignal.timeout(20_000)).catch((err: unknown) => {
  throw new Error(`summaries never finished: ${String(err)}`);
});
const call = await bridge.callTool("echo_echo", { text: "ro" });
const listed = bridge.list("summary");
const stats = bridge.stats();
await bridge.close();
process.stdout.write(
  `${JSON.stringify({
    hits: counts[0]?.hits,
    tools: listed.length,
    summarized: stats.catalog.summarized,
    writeErrors: stats.cache.writeErrors,
    call: call.content,
    warned: logLines.some((l) => l.includes("could not append to the summary cache")),
  })}\n`,
);
