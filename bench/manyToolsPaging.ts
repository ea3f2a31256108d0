/**
 * 100k tools through one `serve` front end (in-process, the SDK's linked in-memory transports):
 * how many `notifications/tools/list_changed` a client gets while the background summarization
 * of all of them runs (one is promised), and how long paging the whole list takes, during that
 * summarization and after it. Prints the figures and writes them to
 * bench/results/many-tools-paging.json.
 *
 *   npx tsx bench/manyToolsPaging.ts [--tools 100000]
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { parseConfigText } from "../src/config/parseConfigText.js";
import { Bridge } from "../src/core/bridge.js";
import { createMcpFrontend } from "../src/serve/mcpFrontend.js";

const argIndex = process.argv.indexOf("--tools");
const TOOLS = argIndex === -1 ? 100_000 : Number(process.argv[argIndex + 1]);
const here = path.dirname(fileURLToPath(import.meta.url));
const fixture = path.join(here, "..", "test", "fixtures", "echoServer.ts");
// tsx as a file URL: the server's working directory is the temp dir, where `tsx` does not resolve.
const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;

async function pageAll(client: Client): Promise<{ pages: number; tools: number; ms: number }> {
  const started = performance.now();
  let cursor: string | undefined;
  let pages = 0;
  let tools = 0;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    pages += 1;
    tools += page.tools.length;
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return { pages, tools, ms: performance.now() - started };
}

const dir = await mkdtemp(path.join(os.tmpdir(), "abridge-bench-paging-"));
try {
  const toml = [
    'mode = "compact"',
    "[servers.many]",
    `command = ${JSON.stringify(process.execPath)}`,
    `args = ${JSON.stringify(["--import", tsx, fixture, "--tools", String(TOOLS), "--page-size", "5000", "--long"])}`,
    "connect_timeout_ms = 600000",
    "timeout_ms = 600000",
  ].join("\n");
  const config = parseConfigText(toml, { file: path.join(dir, "abridge.toml"), env: {} });
  await mkdir(path.join(dir, "cache"));
  const bridge = await Bridge.open({ config, cacheFile: path.join(dir, "cache", "summaries.jsonl"), env: {}, stateDir: path.join(dir, "state") });
  const startedAt = performance.now();
  await bridge.start();
  const startMs = performance.now() - startedAt;
  const frontend = createMcpFrontend(bridge, { mode: "compact" });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await frontend.server.connect(serverSide);
  const client = new Client({ name: "bench", version: "1" });
  let listChanged = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    listChanged += 1;
  });
  await client.connect(clientSide);

  const during = await pageAll(client);
  const queue = bridge.stats().queue;
  const summarizing = queue.queued > 0 || queue.running > 0;
  await bridge.drainSummaries();
  // The last list_changed comes one debounce after the queue went idle.
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  const after = await pageAll(client);
  const result = {
    tools: TOOLS,
    startMs: Math.round(startMs),
    listChangedDuringSummarization: listChanged,
    pagingWhileSummarizing: { ...during, ms: Math.round(during.ms), stillSummarizingAfter: summarizing },
    pagingAfter: { ...after, ms: Math.round(after.ms) },
  };
  console.log(JSON.stringify(result, null, 2));
  await mkdir(path.join(here, "results"), { recursive: true });
  await writeFile(path.join(here, "results", "many-tools-paging.json"), `${JSON.stringify(result, null, 2)}\n`);
  await client.close();
  frontend.dispose();
  await bridge.close();
} finally {
  await rm(dir, { recursive: true, force: true });
}
