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
import { REPO_ROOT, type CorpusServer } from "./corpus.js";
import { median, nowMs } from "./measure.js";

const run = promisify(execFile);

/** Load figures of one cache size. */
export interface CacheLoadRow {
  entries: number;
  fileMiB: number;
  runs: number;
  /** Median wall time of `JsonlStore.open` in a fresh process. */
  loadMsMedian: number;
  loadMsRuns: number[];
  /** Median heap growth after a forced GC (what the entries keep alive). */
  heapMiBMedian: number;
  rssMiBMedian: number;
  liveKeys: number;
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
  /** Cache sizes to load (default 10,000 and 100,000). */
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

async function probe(file: string, signal?: AbortSignal): Promise<{ loadMs: number; heapMiB: number; rssMiB: number; liveKeys: number }> {
  const script = path.join(REPO_ROOT, "bench", "cacheLoadProbe.ts");
  const { stdout } = await run(process.execPath, ["--expose-gc", "--import", "tsx", script, file], {
    cwd: REPO_ROOT,
    maxBuffer: 1 << 20,
    ...(signal ? { signal } : {}),
  });
  return JSON.parse(stdout.trim().split("\n").pop() ?? "{}") as { loadMs: number; heapMiB: number; rssMiB: number; liveKeys: number };
}

/**
 * Cache: load time and memory of `JsonlStore.open` over synthetic 10k and 100k-entry files (each
 * run in a fresh process, medians), and the time to hash 1,000 corpus tools.
 */
export async function runCache(options: CacheOptions): Promise<CacheResult> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "abridge-bench-cache-"));
  const load: CacheLoadRow[] = [];
  try {
    for (const entries of options.sizes ?? [10_000, 100_000]) {
      const file = path.join(dir, `summaries-${entries}.jsonl`);
      await writeSyntheticCache(file, entries, options.corpus);
      const runs = entries >= 100_000 ? 3 : 5;
      const results = [];
      for (let i = 0; i < runs; i++) results.push(await probe(file, options.signal));
      load.push({
        entries,
        fileMiB: (await stat(file)).size / 2 ** 20,
        runs,
        loadMsMedian: median(results.map((r) => r.loadMs)),
        loadMsRuns: results.map((r) => r.loadMs),
        heapMiBMedian: median(results.map((r) => r.heapMiB)),
        rssMiBMedian: median(results.map((r) => r.rssMiB)),
        liveKeys: results[0]?.liveKeys ?? 0,
      });
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }

  const hasher = await createToolHasher();
  const tools = options.corpus.flatMap((s) => s.tools);
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
