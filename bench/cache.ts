import { execFile } from "node:child_process";
import { createWriteStream } from "node:fs";
import { mkdtemp, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { finished } from "node:stream/promises";
import { promisify } from "node:util";
import type { CacheEntry } from "../src/cache/cacheEntry.js";
import { createToolHasher } from "../src/catalog/toolHash.js";
import type { RawTool } from "../src/model/types.js";
import { admittedTool, loadCorpus, REPO_ROOT, type CorpusServer } from "./corpus.js";
import { markdownTable } from "./markdownTable.js";
import { median, nowMs, round } from "./measure.js";
import { runStandalone } from "./standalone.js";

const run = promisify(execFile);

/** Load figures of one cache size. */
export interface CacheLoadRow {
  entries: number;
  fileMiB: number;
  runs: number;
  /** Median wall time of `JsonlStore.open` in a fresh process. */
  loadMsMedian: number;
  loadMsRuns: number[];
  /** Median CPU time of the load (user + system, all threads of the process). */
  loadCpuMsMedian: number;
  /** Median heap growth after a forced GC (what the entries keep alive). */
  heapMiBMedian: number;
  /** Median RSS growth after the load and a forced GC. */
  rssMiBMedian: number;
  /** Median peak RSS growth during the load (process high-water mark minus RSS before). */
  rssPeakMiBMedian: number;
  liveKeys: number;
  /** Median time of the first `get` of 1,000 keys after the load (each read, parsed and validated). */
  firstGets1000MsMedian: number;
}

/** Result of {@link runCache}. */
export interface CacheResult {
  load: CacheLoadRow[];
  hashing: {
    /** Corpus tools hashed per round. */
    toolsPerRound: number;
    rounds: number;
    /** Median milliseconds to hash 1,000 corpus tools (canonical JSON + xxhash64). */
    msPer1000Median: number;
  };
}

/** Options of {@link runCache}. */
export interface CacheOptions {
  corpus: readonly CorpusServer[];
  /** Cache sizes to load (default 10,000, 100,000 and 1,000,000). */
  sizes?: number[];
  signal?: AbortSignal;
}

/**
 * Writes `count` entries shaped like real ones (corpus server and tool names, a 24-word summary,
 * a few param summaries) so the file has a realistic line length.
 */
async function writeSyntheticCache(file: string, count: number, corpus: readonly CorpusServer[]): Promise<void> {
  const tools = corpus.flatMap((s) => s.tools.map((t) => ({ server: s.server, tool: t })));
  const out = createWriteStream(file);
  for (let i = 0; i < count; i++) {
    const { server, tool } = tools[i % tools.length] as { server: string; tool: RawTool };
    const hash = (BigInt(i) * 0x9e3779b97f4a7c15n).toString(16).padStart(16, "0").slice(-16);
    const params: Record<string, string> = {};
    for (const name of Object.keys((tool.inputSchema.properties as Record<string, unknown> | undefined) ?? {}).slice(0, 3)) {
      params[name] = `The ${name} to use for this call, as the upstream expects it.`;
    }
    const entry: CacheEntry = {
      key: `${server}:${tool.name}:${hash}`,
      server,
      tool: tool.name,
      hash,
      summary: "Creates or updates a resource in the connected service and returns its identifier, status and the fields that changed, for follow-up calls.",
      params,
      summarizer: "extractive@1",
      prompt: "none",
      tokensBefore: 400 + (i % 300),
      tokensAfter: 40 + (i % 30),
      createdAt: "2026-11-21T10:00:00.000Z",
    };
    if (!out.write(`${JSON.stringify(entry)}\n`)) await new Promise<void>((resolve) => out.once("drain", () => resolve()));
  }
  out.end();
  await finished(out);
}

interface ProbeResult {
  loadMs: number;
  loadCpuMs: number;
  heapMiB: number;
  rssMiB: number;
  rssPeakMiB: number;
  liveKeys: number;
  firstGetsMs: number;
}

async function probe(file: string, signal?: AbortSignal): Promise<ProbeResult> {
  const script = path.join(REPO_ROOT, "bench", "cacheLoadProbe.ts");
  const { stdout } = await run(process.execPath, ["--expose-gc", "--import", "tsx", script, file], {
    cwd: REPO_ROOT,
    maxBuffer: 1 << 20,
    ...(signal ? { signal } : {}),
  });
  return JSON.parse(stdout.trim().split("\n").pop() ?? "{}") as ProbeResult;
}

/** Fresh-process loads per cache size: fewer for the large files, to keep the run short. */
function runsFor(entries: number): number {
  if (entries >= 1_000_000) return 2;
  return entries >= 100_000 ? 3 : 5;
}

/**
 * Cache: load time and memory of `JsonlStore.open` over synthetic 10k, 100k and 1M-entry files
 * (each written once per run in a temp dir, each load in a fresh process, medians), and the time
 * to hash 1,000 corpus tools.
 */
export async function runCache(options: CacheOptions): Promise<CacheResult> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "abridge-bench-cache-"));
  const load: CacheLoadRow[] = [];
  try {
    for (const entries of options.sizes ?? [10_000, 100_000, 1_000_000]) {
      const file = path.join(dir, `summaries-${entries}.jsonl`);
      await writeSyntheticCache(file, entries, options.corpus);
      const runs = runsFor(entries);
      const results: ProbeResult[] = [];
      for (let i = 0; i < runs; i++) results.push(await probe(file, options.signal));
      // The 1M-entry file is over half a GiB: gone before the next one is written.
      const fileMiB = (await stat(file)).size / 2 ** 20;
      await rm(file, { force: true });
      load.push({
        entries,
        fileMiB,
        runs,
        loadMsMedian: median(results.map((r) => r.loadMs)),
        loadMsRuns: results.map((r) => r.loadMs),
        loadCpuMsMedian: median(results.map((r) => r.loadCpuMs)),
        heapMiBMedian: median(results.map((r) => r.heapMiB)),
        rssMiBMedian: median(results.map((r) => r.rssMiB)),
        rssPeakMiBMedian: median(results.map((r) => r.rssPeakMiB)),
        liveKeys: results[0]?.liveKeys ?? 0,
        firstGets1000MsMedian: median(results.map((r) => r.firstGetsMs)),
      });
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }

  const hasher = await createToolHasher();
  // Admitted once, as an upstream admits what it lists: the hasher takes admitted tools only.
  const tools = options.corpus.flatMap((s) => s.tools.map(admittedTool));
  const rounds = 15;
  const perThousand: number[] = [];
  for (let i = 0; i < rounds + 2; i++) {
    const start = nowMs();
    for (const tool of tools) hasher.hash(tool);
    const ms = nowMs() - start;
    // The first two rounds warm the JIT; a long-running bridge hashes with warm code.
    if (i >= 2) perThousand.push((ms / tools.length) * 1000);
  }
  return { load, hashing: { toolsPerRound: tools.length, rounds, msPer1000Median: median(perThousand) } };
}

/** The markdown section of a {@link CacheResult}. */
export function cacheLoadMarkdown(r: CacheResult): string {
  return [
    "## Cache\n",
    markdownTable(
      ["entries>", "file MiB>", "load ms (median)>", "CPU ms>", "runs>", "heap MiB>", "RSS MiB>", "peak RSS MiB>", "first 1,000 gets ms>"],
      r.load.map((l) => [
        l.entries,
        round(l.fileMiB, 1),
        round(l.loadMsMedian, 1),
        round(l.loadCpuMsMedian, 1),
        l.runs,
        round(l.heapMiBMedian, 1),
        round(l.rssMiBMedian, 1),
        round(l.rssPeakMiBMedian, 1),
        round(l.firstGets1000MsMedian, 1),
      ]),
    ),
    `\nEach load runs in a fresh process (\`JsonlStore.open\`, read-only): it indexes key -> line offset, entries are parsed on first use. RSS is the growth over the process before the load (after it and a forced GC; peak: the high-water mark). Hashing (canonical JSON + xxhash64): ${round(r.hashing.msPer1000Median, 2)} ms per 1,000 corpus tools (median of ${r.hashing.rounds} rounds of ${r.hashing.toolsPerRound}).`,
  ].join("\n");
}

await runStandalone(import.meta.url, { name: "cache", run: () => runCache({ corpus: loadCorpus() }), markdown: cacheLoadMarkdown, json: (r) => r });
