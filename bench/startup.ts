import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { promisify } from "node:util";
import os from "node:os";
import path from "node:path";
import { ToolCatalog } from "../src/catalog/toolCatalog.js";
import { openSummaryPipeline } from "../src/core/summaryPipeline.js";
import { ExtractiveSummarizer } from "../src/summarize/extractiveSummarizer.js";
import { CLI_BIN, configToml, CORPUS_FIXTURE, ECHO_FIXTURE, stdioServerToml, tsxCommand } from "./benchConfig.js";
import { admittedExposed, exposeCorpus, REPO_ROOT, type CorpusServer } from "./corpus.js";
import { median, nowMs, processMemoryKiB, sleep } from "./measure.js";
import { targetPeakRss, type Connected } from "./mcpTarget.js";
import { serveOverStdio, serveUnavailable } from "./serveProcess.js";
import { runStartupUpstreams, type StartupUpstreamsResult, type StartupUpstreamsRow } from "./startupUpstreams.js";
import { messageOf } from "../src/model/errors.js";

/** Time to the first complete `tools/list` with N upstreams, beside the floor (bench/startupUpstreams.ts). */
export type StartupRow = StartupUpstreamsRow;

/** Result of {@link runStartup}. */
export interface StartupResult extends StartupUpstreamsResult {
  listing: {
    tools: number;
    /** In-process: discovery against a warm cache plus rendering the compact list (median). */
    discoverAndRenderMsMedian: number;
    /** The discovery part of {@link discoverAndRenderMsMedian} (median of its own). */
    discoverMsMedian: number;
    /** In-process: `ToolCatalog.list` once rendered (what a repeated tools/list costs). */
    cachedListMsMedian: number;
    /** Round trip of `tools/list` (compact) through `abridge serve` over stdio, warm (median). */
    serveRoundTripMsMedian?: number;
    notAvailable?: string;
  };
  memory: {
    servers: number;
    tools: number;
    /**
     * Peak RSS (VmHWM) of `abridge serve` after listing every corpus tool (`tools` says how many were
     * listed), over a cache `abridge summarize warm` filled first, as a user's is.
     */
    servePeakRssMiB?: number;
    /** RSS (VmRSS) of `abridge serve` with one echo upstream of 20 tools, warm, after a compact list, settled. */
    idleOneUpstreamRssMiB?: number;
    notAvailable?: string;
  };
}

/** Options of {@link runStartup}. */
export interface StartupOptions {
  corpus: readonly CorpusServer[];
  signal?: AbortSignal;
  /** Upstream counts (default 1, 10, 50). */
  counts?: number[];
}

/** 1,000 tools: the corpus repeated under three server names, cut to 1,000. */
async function listing(
  corpus: readonly CorpusServer[],
  dir: string,
  serveOk: boolean,
  serveWhy: string | undefined,
  signal?: AbortSignal,
): Promise<StartupResult["listing"]> {
  const copies = [0, 1, 2].flatMap((k) => corpus.map((s) => ({ ...s, server: `${s.server}-${k}` })));
  const exposed = exposeCorpus(copies).slice(0, 1_000);
  // Warmed by the summary pipeline the bridge uses; each round then discovers into a catalog of
  // its own over the same store (as a restarted bridge does), queueing nothing.
  const pipeline = await openSummaryPipeline({ cacheFile: path.join(dir, "listing.jsonl"), env: {}, summarizer: new ExtractiveSummarizer() });
  const { store, hasher, memo } = pipeline;
  pipeline.catalog.setTools(exposed);
  await pipeline.queue.drain(signal);
  await pipeline.queue.close();
  const render: number[] = [];
  const discover: number[] = [];
  const cached: number[] = [];
  for (let i = 0; i < 21; i++) {
    // New objects every round, as an upstream's relist hands in: what is kept across catalogs must
    // be found by content, not by the objects of the round before.
    // Admitted as the upstream admits its list, before the catalog takes it (not timed here: the
    // upstream's edge, not discovery). The catalog shares the pipeline's memo, as a bridge's does.
    const relisted = admittedExposed(JSON.parse(JSON.stringify(exposed)) as typeof exposed);
    const catalog = new ToolCatalog({ store, hasher, memo });
    const start = nowMs();
    catalog.setTools(relisted, { queue: false });
    const discovered = nowMs();
    catalog.list("compact");
    const mid = nowMs();
    catalog.list("compact");
    const end = nowMs();
    if (i > 0) {
      render.push(mid - start);
      discover.push(discovered - start);
      cached.push(end - mid);
    }
    catalog.close();
  }
  await pipeline.close();
  const out: StartupResult["listing"] = {
    tools: exposed.length,
    discoverAndRenderMsMedian: median(render),
    discoverMsMedian: median(discover),
    cachedListMsMedian: median(cached),
  };
  if (!serveOk) return { ...out, notAvailable: serveWhy ?? "abridge serve is not available" };
  const configFile = path.join(dir, "listing.toml");
  await writeFile(configFile, configToml([stdioServerToml("echo", ECHO_FIXTURE, ["--tools", "998", "--page-size", "1000"])]));
  let target: Connected | undefined;
  try {
    target = await serveOverStdio({ config: configFile, cacheDir: path.join(dir, "listing-cache"), ...(signal ? { signal } : {}) });
    await target.listTools(signal);
    await sleep(500, signal);
    // Warm: the first ten lists of 1,000 tools run 3-30 ms on both ends while the JIT compiles
    // the paths a list this size takes (the same before and after the catalog memo).
    for (let i = 0; i < 10; i++) await target.listTools(signal);
    const times: number[] = [];
    for (let i = 0; i < 20; i++) {
      const start = nowMs();
      await target.listTools(signal);
      times.push(nowMs() - start);
    }
    return { ...out, serveRoundTripMsMedian: median(times) };
  } catch (err) {
    return { ...out, notAvailable: messageOf(err) };
  } finally {
    await target?.close();
  }
}

/**
 * Fills the cache of `configFile` the way a user does before serving, in a process of its own:
 * serve then finds every summary, with its forms' token counts, and has nothing to summarize or count.
 */
async function warmCache(configFile: string, cacheDir: string, signal?: AbortSignal): Promise<void> {
  const warm = tsxCommand(CLI_BIN, ["summarize", "warm", "--config", configFile, "--cache-dir", cacheDir]);
  await promisify(execFile)(warm.command, warm.args, { cwd: REPO_ROOT, maxBuffer: 64 * 1024 * 1024, ...(signal ? { signal } : {}) });
}

/** VmRSS of `abridge serve` with one warm echo upstream, two seconds after its first compact list. */
async function idleRss(dir: string, signal?: AbortSignal): Promise<number | undefined> {
  const configFile = path.join(dir, "one.toml");
  const cacheDir = path.join(dir, "one-cache");
  await writeFile(configFile, configToml([stdioServerToml("echo", ECHO_FIXTURE, ["--tools", "20"])]));
  await warmCache(configFile, cacheDir, signal);
  const target = await serveOverStdio({ config: configFile, cacheDir, ...(signal ? { signal } : {}) });
  try {
    await target.listTools(signal);
    await sleep(2_000, signal);
    return target.pid === undefined ? undefined : processMemoryKiB(target.pid, "VmRSS") / 1024;
  } finally {
    await target.close();
  }
}

async function memory(
  corpus: readonly CorpusServer[],
  dir: string,
  serveOk: boolean,
  serveWhy: string | undefined,
  signal?: AbortSignal,
): Promise<StartupResult["memory"]> {
  const tools = corpus.reduce((n, s) => n + s.tools.length, 0);
  const base = { servers: corpus.length, tools };
  if (!serveOk) return { ...base, notAvailable: serveWhy ?? "abridge serve is not available" };
  const configFile = path.join(dir, "corpus.toml");
  await writeFile(configFile, configToml(corpus.map((s) => stdioServerToml(s.server, CORPUS_FIXTURE, ["--file", s.file]))));
  const cacheDir = path.join(dir, "corpus-cache");
  let target: Connected | undefined;
  try {
    const idle = await idleRss(dir, signal);
    await warmCache(configFile, cacheDir, signal);
    target = await serveOverStdio({ config: configFile, cacheDir, ...(signal ? { signal } : {}) });
    // The first answer waits startup_grace_ms only: 24 tsx upstreams on a busy machine are not all
    // up by then, and a peak taken over part of the catalog flatters. List until every corpus tool
    // is there (compact adds get_schema), for two minutes at most.
    let listed = await target.listTools(signal);
    const until = nowMs() + 120_000;
    while (listed < tools && nowMs() < until) {
      await sleep(500, signal);
      listed = await target.listTools(signal);
    }
    // Let every summary be written and the catalog re-rendered, then list once more.
    await sleep(1_500, signal);
    listed = await target.listTools(signal);
    const peak = targetPeakRss(target);
    return {
      ...base,
      tools: listed,
      ...(idle !== undefined ? { idleOneUpstreamRssMiB: idle } : {}),
      ...(peak !== undefined ? { servePeakRssMiB: peak } : { notAvailable: "no /proc status for the serve process" }),
    };
  } catch (err) {
    return { ...base, notAvailable: messageOf(err) };
  } finally {
    await target?.close();
  }
}

/**
 * Start-up and scale: time to the first `tools/list` with 1, 10 and 50 echo upstreams (cold cache
 * and warm cache, medians), listing 1,000 tools warm, and the peak memory of `abridge serve` with
 * every corpus catalog loaded.
 */
export async function runStartup(options: StartupOptions): Promise<StartupResult> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "abridge-bench-startup-"));
  try {
    const why = await serveUnavailable(options.signal);
    const serveOk = why === undefined;
    const upstreams = await runStartupUpstreams({
      ...(options.counts ? { counts: options.counts } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return {
      ...upstreams,
      listing: await listing(options.corpus, dir, serveOk, why, options.signal),
      memory: await memory(options.corpus, dir, serveOk, why, options.signal),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
