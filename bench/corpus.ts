import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { SearchResult } from "../src/catalog/searchIndex.js";
import type { AdmittedExposedTool, CatalogTool } from "../src/catalog/types.js";
import { admitTool, type AdmittedTool } from "../src/upstream/admitTool.js";
import { AbridgeError, ErrorCode } from "../src/model/errors.js";
import { openSummaryPipeline, type Summarizer } from "../src/core/summaryPipeline.js";
import { assignNames } from "../src/model/names.js";
import type { RawTool } from "../src/model/types.js";

/** The repository root (bench/ lives directly below it). */
export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** The vendored corpus, `bench/corpus` in the repository. */
export const CORPUS_DIR = path.resolve(REPO_ROOT, "bench/corpus");

/** One recorded `tools/list` answer of the corpus. */
export interface CorpusServer {
  server: string;
  /** Absolute path of its JSON file. */
  file: string;
  tools: RawTool[];
}

/** One labelled query of `queries.jsonl`. */
export interface CorpusQuery {
  id: string;
  query: string;
  /** `server:tool` a model should pick. */
  expect: string;
  /** Other `server:tool` answers that count as right. */
  also_ok: string[];
}

function missing(what: string): AbridgeError {
  return new AbridgeError(ErrorCode.INPUT_INVALID, `benchmark corpus missing: expected ${what} (${CORPUS_DIR}, vendored in the repository under bench/corpus)`);
}

/** Every `servers/*.json` in name order; throws a clear error when the corpus is not there. */
export function loadCorpus(): CorpusServer[] {
  const dir = path.join(CORPUS_DIR, "servers");
  if (!existsSync(dir)) throw missing(`the recorded tools/list answers in ${dir}`);
  const files = readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .sort();
  if (files.length === 0) throw missing(`at least one servers/*.json in ${dir}`);
  return files.map((name) => {
    const file = path.join(dir, name);
    const data = JSON.parse(readFileSync(file, "utf8")) as { server?: string; tools: RawTool[] };
    return { server: data.server ?? name.replace(/\.json$/, ""), file, tools: data.tools };
  });
}

/** The labelled queries; throws a clear error when the file is not there. */
export function loadQueries(): CorpusQuery[] {
  const file = path.join(CORPUS_DIR, "queries.jsonl");
  if (!existsSync(file)) throw missing(`the labelled queries in ${file}`);
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => {
      const q = JSON.parse(line) as Partial<CorpusQuery>;
      return { id: String(q.id), query: String(q.query), expect: String(q.expect), also_ok: q.also_ok ?? [] };
    });
}

/** `tool` admitted as an upstream admits what it lists (see admitTool); a corpus tool it refuses is an error. */
export function admittedTool(tool: unknown): AdmittedTool {
  const admission = admitTool(tool);
  if (!admission.ok)
    throw new AbridgeError(ErrorCode.INPUT_INVALID, `corpus tool not admitted: ${admission.problem.field || "tool"}: ${admission.problem.message}`);
  return admission.tool;
}

/** `exposed` with each tool admitted anew (a relist's new objects; see {@link admittedTool}). */
export function admittedExposed(exposed: readonly AdmittedExposedTool[]): AdmittedExposedTool[] {
  return exposed.map((t) => ({ ...t, tool: admittedTool(t.tool) }));
}

/** Every corpus tool, admitted, with the name and URI discovery gives it (`<server>_<tool>`). */
export function exposeCorpus(servers: readonly CorpusServer[], separator = "_"): AdmittedExposedTool[] {
  const requests = servers.flatMap((s) => s.tools.map((t) => ({ server: s.server, tool: t.name, prefix: true })));
  const names = assignNames(requests, separator);
  const byOrigin = new Map(names.map((n) => [`${n.server}\u0000${n.tool}`, n]));
  return servers.flatMap((s) =>
    s.tools.map((tool) => {
      const assigned = byOrigin.get(`${s.server}\u0000${tool.name}`);
      if (assigned === undefined) throw new AbridgeError(ErrorCode.INTERNAL, `no name assigned to ${s.server}:${tool.name}`);
      return { server: s.server, tool: admittedTool(tool), name: assigned.name, uri: assigned.uri };
    }),
  );
}

/**
 * The corpus as a catalog serves it after `summarize warm` with `summarizer`: the bridge's own
 * summary pipeline (hash, store lookup, summarize queue with guard and extractive fallback,
 * catalog), against a cache file in a temp dir that is removed afterwards.
 */
export async function summarizedCatalog(
  servers: readonly CorpusServer[],
  summarizer: Summarizer,
  options: { signal?: AbortSignal; concurrency?: number } = {},
): Promise<{
  tools: CatalogTool[];
  fallbacks: number;
  guardRejections: number;
  /** The catalog's own `search_tools` ranking over these tools (usable after the catalog closed). */
  search: (query: string, limit?: number) => SearchResult[];
}> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "abridge-bench-"));
  try {
    const { catalog, queue, close } = await openSummaryPipeline({
      cacheFile: path.join(dir, "summaries.jsonl"),
      env: {},
      summarizer,
      concurrency: options.concurrency ?? 4,
    });
    try {
      catalog.setTools(exposeCorpus(servers));
      await queue.drain(options.signal);
      const stats = queue.stats();
      return {
        tools: [...catalog.tools()],
        fallbacks: stats.fallbacks,
        guardRejections: stats.guardRejections,
        search: (query, limit) => catalog.search(query, limit),
      };
    } finally {
      await close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
