/**
 * 100k tools through one `serve` front end (in-process, the SDK's linked in-memory transports):
 * how many `notifications/tools/list_changed` a client gets while the background summarization
 * of all of them runs (one is promised), and how long paging the whole list takes, during that
 * summarization and after it. Prints the figures and writes them to
 * bench/results/many-tools-paging.json and .md.
 *
 *   npx tsx bench/manyToolsPaging.ts [--tools 100000]
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
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
import { markdownTable } from "./markdownTable.js";
import { runStandalone } from "./standalone.js";

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

/** What paging `tools` tools through one front end measured, during and after summarization. */
interface ManyToolsPagingResult {
  tools: number;
  startMs: number;
  listChangedDuringSummarization: number;
  pagingWhileSummarizing: { pages: number; tools: number; ms: number; stillSummarizingAfter: boolean };
  pagingAfter: { pages: number; tools: number; ms: number };
}

/** Serves `tools` tools of the echo fixture and pages the whole list while and after they are summarized. */
async function runManyToolsPaging(tools: number): Promise<ManyToolsPagingResult> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "abridge-bench-paging-"));
  try {
    const toml = [
      'mode = "compact"',
      "[servers.many]",
      `command = ${JSON.stringify(process.execPath)}`,
      `args = ${JSON.stringify(["--import", tsx, fixture, "--tools", String(tools), "--page-size", "5000", "--long"])}`,
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
      tools,
      startMs: Math.round(startMs),
      listChangedDuringSummarization: listChanged,
      pagingWhileSummarizing: { ...during, ms: Math.round(during.ms), stillSummarizingAfter: summarizing },
      pagingAfter: { ...after, ms: Math.round(after.ms) },
    };
    await client.close();
    frontend.dispose();
    await bridge.close();
    return result;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function manyToolsPagingMarkdown(r: ManyToolsPagingResult): string {
  return [
    `${r.tools.toLocaleString("en-US")} tools through one front end: started in ${r.startMs.toLocaleString("en-US")} ms; ${r.listChangedDuringSummarization} tools/list_changed during summarization (one is promised).\n`,
    markdownTable(
      ["paging the whole list", "pages>", "tools>", "ms>"],
      [
        [
          `while summarizing${r.pagingWhileSummarizing.stillSummarizingAfter ? "" : " (done before paging ended)"}`,
          r.pagingWhileSummarizing.pages,
          r.pagingWhileSummarizing.tools,
          r.pagingWhileSummarizing.ms,
        ],
        ["after", r.pagingAfter.pages, r.pagingAfter.tools, r.pagingAfter.ms],
      ],
    ),
  ].join("\n");
}

await runStandalone(import.meta.url, {
  name: "many-tools-paging",
  run: (argv) => {
    const at = argv.indexOf("--tools");
    return runManyToolsPaging(at === -1 ? 100_000 : Number(argv[at + 1]));
  },
  markdown: manyToolsPagingMarkdown,
  json: (r) => r,
});
