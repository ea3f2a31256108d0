import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { summaryTokens } from "../../src/catalog/renderTools.js";
import type { CatalogTool } from "../../src/catalog/types.js";
import { ExtractiveSummarizer } from "../../src/summarize/extractiveSummarizer.js";
import type { RawTool } from "../../src/model/types.js";
import { admitted } from "../helpers/admitted.js";
import { UNIT_TEST_SERVERS } from "../helpers/corpusServers.js";

/** The corpus vendored in the repository, `bench/corpus`. */
export const CORPUS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../bench/corpus");

/** One corpus file: the server's name and its tools exactly as recorded. */
export interface CorpusServer {
  server: string;
  file: string;
  tools: RawTool[];
}

/** Reads the `servers/*.json` of {@link UNIT_TEST_SERVERS}; throws a clear error when the corpus is missing. */
export function loadCorpus(): CorpusServer[] {
  const dir = path.join(CORPUS_DIR, "servers");
  if (!existsSync(dir)) {
    throw new Error(`corpus missing: expected the real tools/list answers in ${dir} (bench/corpus in the repository)`);
  }
  return readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .sort()
    .map((file) => {
      const data = JSON.parse(readFileSync(path.join(dir, file), "utf8")) as { server: string; tools: RawTool[] };
      return { server: data.server, file, tools: data.tools };
    })
    .filter((s) => UNIT_TEST_SERVERS.has(s.server));
}

/** The real offline summarizer, so the views are tested with the summaries they will serve. */
const summarizer = new ExtractiveSummarizer();

/**
 * A catalog tool as discovery would build it: `<server>_<tool>`, `mcp://server/tool`. Its summary
 * is written against `neighbours` (its server's tools, as discovery batches them) and comes with
 * the token counts its cache entry would carry (see {@link withFormTokens}).
 */
export function catalogTool(server: string, tool: RawTool, summarize = true, neighbours: readonly RawTool[] = []): CatalogTool {
  const out: CatalogTool = {
    name: `${server}_${tool.name}`,
    server,
    uri: `mcp://${server}/${tool.name}`,
    key: `${server}:${tool.name}:test`,
    tool: admitted(tool),
  };
  if (summarize) out.summary = summarizer.summarizeTool(tool, neighbours);
  return summarize ? withFormTokens(out) : out;
}

/**
 * `tool` with the `formTokens` a cache entry written for its summary would carry (as a warm cache
 * serves it); without a summary, `tool` without counts (a miss has no entry).
 */
export function withFormTokens(tool: CatalogTool): CatalogTool {
  const { formTokens: _old, ...rest } = tool;
  if (tool.summary === undefined) return rest;
  const counts = summaryTokens({ key: tool.key, server: tool.server, tool: tool.tool, name: tool.name }, tool.summary).formTokens;
  return counts === undefined ? rest : { ...rest, formTokens: counts };
}

/** Every corpus tool as a {@link CatalogTool} with an extractive summary. */
export function corpusCatalog(servers: CorpusServer[] = loadCorpus()): CatalogTool[] {
  return servers.flatMap((s) => s.tools.map((t) => catalogTool(s.server, t, true, s.tools)));
}

/** The recorded tool `server:tool`; throws when it is not in the corpus. */
export function corpusTool(servers: CorpusServer[], server: string, tool: string): RawTool {
  const found = servers.find((s) => s.server === server)?.tools.find((t) => t.name === tool);
  if (found === undefined) throw new Error(`corpus has no tool ${server}:${tool}`);
  return found;
}
