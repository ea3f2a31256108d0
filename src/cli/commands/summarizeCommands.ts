import type { Config } from "../../config/schema.js";
import type { Bridge } from "../../core/bridge.js";
import { fallbackCause, type FallbackCause } from "../../core/summaryPipeline.js";
import { tokenReport, type CacheEntry, type CatalogTool } from "../../core/toolViews.js";
import { failedStartReason } from "../../core/failedStart.js";
import { isAbridgeError, ErrorCode } from "../../model/errors.js";
import { ExitCode, type CommandContext, type CommandSpec } from "../command.js";
import { writeLine } from "../cliIo.js";
import { formatCount, formatShare, formatTable } from "../formatTable.js";
import { CACHE_DIR_OPTION, selectServers, withBridge } from "../openBridge.js";
import { usageError } from "../usageError.js";

const SERVER_OPTION = {
  server: { type: "string" as const, multiple: true, value: "NAME", description: "Only this server (repeatable)" },
};

async function summarizeConfig(ctx: CommandContext): Promise<Config> {
  let config = selectServers(await ctx.loadConfig(), ctx.values.server as string[] | undefined);
  const summarizer = ctx.values.summarizer;
  if (summarizer !== undefined) {
    if (summarizer !== "extractive" && summarizer !== "openai") {
      throw usageError(`--summarizer: expected extractive or openai, got "${String(summarizer)}"`);
    }
    config = { ...config, summary: { ...config.summary, summarizer } };
  }
  return config;
}

/** What the summaries written by this run came from: per server, and the fallbacks by cause. */
class WarmTally {
  /** Per server: summaries the configured summarizer wrote (accepted by the guard). */
  readonly generated = new Map<string, number>();
  /** Per server: summaries the extractive fallback wrote in the summarizer's place. */
  readonly fallback = new Map<string, number>();
  /** The fallbacks by cause. */
  readonly causes: Record<FallbackCause, number> = { failed: 0, rejected: 0, capped: 0 };

  add(entry: CacheEntry): void {
    const counts = entry.fallback === undefined ? this.generated : this.fallback;
    counts.set(entry.server, (counts.get(entry.server) ?? 0) + 1);
    if (entry.fallback !== undefined) this.causes[fallbackCause(entry.fallback)] += 1;
  }

  /** Summaries this run made, whether or not the cache could store them. */
  get written(): number {
    return sumOf(this.generated) + sumOf(this.fallback);
  }

  /**
   * Every call to the summarizer failed: some tool fell back after a failed call, and no call
   * came back with a summary (none written by the summarizer, none rejected by the guard).
   */
  get everyCallFailed(): boolean {
    return this.causes.failed > 0 && sumOf(this.generated) === 0 && this.causes.rejected === 0;
  }
}

function sumOf(counts: ReadonlyMap<string, number>): number {
  return [...counts.values()].reduce((a, b) => a + b, 0);
}

/** One row of the warm table: a server, or the tokens no single server owns. */
interface WarmRow {
  label: string;
  /** Tool counts; absent on the row of the shared tokens. */
  counts?: { tools: number; hits: number; generated: number; fallback: number };
  /** o200k tokens this row adds to the full and to the compact list. */
  full: number;
  compact: number;
  note: string;
}

/**
 * The rows of the warm table. A server's tokens are those of its tools in a list of their own,
 * without the list's brackets or compact mode's `get_schema`; the list of every tool carries those
 * once, and its joins between servers count a few tokens more or less than the parts: all of that
 * is the `(shared)` row, so the rows add up to the list measured as a whole (the "all modes" line).
 */
function warmRows(bridge: Bridge, tally: WarmTally): { rows: WarmRow[]; whole: ReturnType<typeof tokenReport> } {
  const options = { separator: bridge.config.separator };
  const empty = tokenReport([], options);
  const discovery = new Map(bridge.discovery().map((d) => [d.server, d]));
  const all: CatalogTool[] = [];
  const rows: WarmRow[] = bridge.servers().map((status) => {
    const tools = bridge.tools(status.name);
    all.push(...tools);
    const tokens = tokenReport(tools, options);
    return {
      label: status.name,
      counts: {
        tools: tools.length,
        hits: discovery.get(status.name)?.hits ?? 0,
        generated: tally.generated.get(status.name) ?? 0,
        fallback: tally.fallback.get(status.name) ?? 0,
      },
      full: tools.length === 0 ? 0 : tokens.full.openAiTokens - empty.full.openAiTokens,
      compact: tools.length === 0 ? 0 : tokens.compact.openAiTokens - empty.compact.openAiTokens,
      // The one place a failed server is shown (the command passes reportFailed: false).
      note: status.state === "ready" ? "" : `${status.state}${status.error ? `: ${failedStartReason(status)} [${status.error.code}]` : ""}`,
    };
  });
  const whole = tokenReport(all, options);
  const sum = (pick: (r: WarmRow) => number): number => rows.reduce((n, r) => n + pick(r), 0);
  rows.push({
    label: "(shared)",
    full: whole.full.openAiTokens - sum((r) => r.full),
    compact: whole.compact.openAiTokens - sum((r) => r.compact),
    note: "get_schema (compact mode's meta-tool), the list's brackets and the joins between servers",
  });
  return { rows, whole };
}

function printWarmTable(ctx: CommandContext, bridge: Bridge, tally: WarmTally): void {
  const { rows, whole } = warmRows(bridge, tally);
  const sum = (pick: (r: WarmRow) => number): number => rows.reduce((n, r) => n + pick(r), 0);
  const sumCount = (pick: (c: NonNullable<WarmRow["counts"]>) => number): number => sum((r) => (r.counts ? pick(r.counts) : 0));
  const total: WarmRow = {
    label: "total",
    counts: {
      tools: sumCount((c) => c.tools),
      hits: sumCount((c) => c.hits),
      generated: sumCount((c) => c.generated),
      fallback: sumCount((c) => c.fallback),
    },
    full: sum((r) => r.full),
    compact: sum((r) => r.compact),
    note: "",
  };
  const body = [...rows, total].map((r) => [
    r.label,
    r.counts ? String(r.counts.tools) : "-",
    r.counts ? String(r.counts.hits) : "-",
    r.counts ? String(r.counts.generated) : "-",
    r.counts ? String(r.counts.fallback) : "-",
    `${formatCount(r.full)} -> ${formatCount(r.compact)}`,
    // The shared tokens are no tools' full form made smaller: a share of them would mean nothing.
    r.counts === undefined || r.full <= 0 ? "-" : formatShare(r.compact / r.full),
    r.note,
  ]);
  writeLine(
    ctx.io.stdout,
    formatTable(["server", "tools", "hits", "generated", "fallback", "tokens full -> compact", "share", "note"], body, [
      "left",
      "right",
      "right",
      "right",
      "right",
      "right",
      "right",
    ]),
  );
  writeLine(
    ctx.io.stdout,
    `all modes (o200k tokens of the tool list): full ${formatCount(whole.full.openAiTokens)}, summary ${formatCount(whole.summary.openAiTokens)} (${formatShare(whole.summary.ratioOfFull)}), compact ${formatCount(whole.compact.openAiTokens)} (${formatShare(whole.compact.ratioOfFull)}), lazy ${formatCount(whole.lazy.openAiTokens)} (${formatShare(whole.lazy.ratioOfFull)})`,
  );
  const q = bridge.stats().queue;
  const id = bridge.summarizerIdentity().summarizer;
  const generated = sumOf(tally.generated);
  const fallback = sumOf(tally.fallback);
  const causes = [
    tally.causes.failed > 0 ? `${formatCount(tally.causes.failed)} after a failed call` : "",
    tally.causes.rejected > 0 ? `${formatCount(tally.causes.rejected)} rejected by the guard` : "",
    tally.causes.capped > 0 ? `${formatCount(tally.causes.capped)} over the spend cap` : "",
  ].filter((c) => c !== "");
  writeLine(
    ctx.io.stdout,
    `summarizer ${id}: ${formatCount(q.requests)} requests, ${formatCount(generated)} generated, ${formatCount(fallback)} fell back to extractive${causes.length > 0 ? ` (${causes.join(", ")})` : ""}, ${formatCount(q.retries)} retries${q.fromPeers > 0 ? `, ${formatCount(q.fromPeers)} written by other hosts meanwhile` : ""}`,
  );
  if (tally.everyCallFailed) {
    writeLine(
      ctx.io.stdout,
      `every summarizer call failed: all ${formatCount(fallback)} summaries written are extractive; \`abridge summarize warm --stale\` redoes them`,
    );
  } else if (tally.causes.failed > 0) {
    writeLine(
      ctx.io.stdout,
      `some summarizer calls failed: ${formatCount(tally.causes.failed)} of ${formatCount(tally.written)} summaries written are extractive instead; \`abridge summarize warm --stale\` redoes them`,
    );
  }
}

/** Progress on stderr: a bar on a terminal, a few plain lines otherwise. */
function progressReporter(ctx: CommandContext, total: number): { tick(entry: CacheEntry): void; done(): void } {
  let count = 0;
  const step = Math.max(1, Math.ceil(total / 10));
  return {
    tick(entry) {
      count += 1;
      if (ctx.io.isTTY) {
        const width = 30;
        const filled = Math.round((count / Math.max(total, 1)) * width);
        ctx.io.stderr.write(`\r[${"#".repeat(filled)}${".".repeat(width - filled)}] ${count}/${total} ${entry.server}`.padEnd(70));
      } else if (count % step === 0 || count === total) {
        writeLine(ctx.io.stderr, `summarized ${count}/${total} (${entry.server}:${entry.tool})`);
      }
    },
    done() {
      if (ctx.io.isTTY && count > 0) ctx.io.stderr.write("\n");
    },
  };
}

/** `abridge summarize warm`. */
export const summarizeWarmCommand: CommandSpec = {
  path: ["summarize", "warm"],
  summary: "Connect to every server and fill every missing summary; ends with a token table per server",
  details: [
    "A second run makes no summarizer call: every tool is a cache hit.",
    "Ctrl-C stops at once; every summary already written stays in the cache.",
  ].join("\n"),
  options: {
    ...SERVER_OPTION,
    summarizer: { type: "string", value: "NAME", description: "extractive (default, offline) | openai" },
    force: { type: "boolean", description: "Summarize every tool again, cached or not" },
    stale: { type: "boolean", description: "Redo entries written by another summarizer or prompt version" },
    "allow-fallback": {
      type: "boolean",
      description: `Exit 0 even when every summarizer call failed and every summary is the extractive fallback (otherwise exit ${ExitCode.SUMMARIZER_FAILED})`,
    },
    ...CACHE_DIR_OPTION,
  },
  async run(ctx) {
    const config = await summarizeConfig(ctx);
    return withBridge(
      ctx,
      async (bridge) => {
        const tally = new WarmTally();
        const queued = bridge.discovery().reduce((n, d) => n + d.queued, 0);
        const progress = progressReporter(ctx, queued);
        // A summary that was made but could not be written (full disk, read-only file) is lost
        // when this process ends: counted apart, so "generated" never passes for "saved".
        const sinkErrorsBefore = bridge.stats().queue.sinkErrors;
        bridge.onSummary((entry) => {
          tally.add(entry);
          progress.tick(entry);
        });
        let interrupted = false;
        try {
          await bridge.drainSummaries(ctx.io.signal);
        } catch (err) {
          if (!isAbridgeError(err, ErrorCode.CANCELLED)) throw err;
          interrupted = true;
        }
        progress.done();
        printWarmTable(ctx, bridge, tally);
        const notWritten = bridge.stats().queue.sinkErrors - sinkErrorsBefore;
        if (notWritten > 0) {
          writeLine(
            ctx.io.stderr,
            `abridge: ${formatCount(notWritten)} of ${formatCount(tally.written)} summaries could not be written to ${bridge.cacheFile} (see the warnings above); they are not cached [${ErrorCode.CACHE_IO}]`,
          );
        }
        const refuseFallback = tally.everyCallFailed && ctx.values["allow-fallback"] !== true;
        if (refuseFallback) {
          writeLine(
            ctx.io.stderr,
            `abridge: every call to the summarizer ${bridge.summarizerIdentity().summarizer} failed (see the warnings above); the summaries written are the extractive fallback (--allow-fallback accepts them) [${ErrorCode.SUMMARIZER_FAILED}]`,
          );
        }
        if (interrupted) {
          writeLine(ctx.io.stderr, "abridge: interrupted; every summary written so far is kept");
          return ExitCode.INTERRUPTED;
        }
        if (notWritten > 0 || bridge.servers().some((s) => s.state === "failed")) return ExitCode.FAILURE;
        return refuseFallback ? ExitCode.SUMMARIZER_FAILED : ExitCode.OK;
      },
      {
        config,
        discover: {
          ...(ctx.values.force ? { force: true } : {}),
          // Filled in by start(): the stale check needs the summarizer the bridge built.
        },
        staleCheck: ctx.values.stale === true,
        reportFailed: false,
      },
    );
  },
};

/** `abridge summarize status`. */
export const summarizeStatusCommand: CommandSpec = {
  path: ["summarize", "status"],
  summary: "Summary coverage per server: tools, cached, stale (other summarizer or prompt), missing",
  options: { ...SERVER_OPTION, json: { type: "boolean", description: "Print JSON" }, ...CACHE_DIR_OPTION },
  async run(ctx) {
    const config = selectServers(await ctx.loadConfig(), ctx.values.server as string[] | undefined);
    return withBridge(
      ctx,
      async (bridge) => {
        const current = bridge.summarizerIdentity();
        const rows = bridge.servers().map((status) => {
          const tools = bridge.tools(status.name);
          let cached = 0;
          let stale = 0;
          for (const tool of tools) {
            const entry = bridge.cachedEntry(tool);
            if (!entry) continue;
            cached += 1;
            if (entry.summarizer !== current.summarizer || entry.prompt !== current.prompt) stale += 1;
          }
          return { server: status.name, state: status.state, tools: tools.length, cached, stale, missing: tools.length - cached };
        });
        if (ctx.values.json) {
          writeLine(ctx.io.stdout, JSON.stringify({ summarizer: current, servers: rows }, null, 2));
        } else {
          writeLine(
            ctx.io.stdout,
            formatTable(
              ["server", "state", "tools", "cached", "stale", "missing", "coverage"],
              rows.map((r) => [
                r.server,
                r.state,
                String(r.tools),
                String(r.cached),
                String(r.stale),
                String(r.missing),
                r.tools === 0 ? "-" : formatShare(r.cached / r.tools),
              ]),
              ["left", "left", "right", "right", "right", "right", "right"],
            ),
          );
          writeLine(ctx.io.stdout, `current summarizer ${current.summarizer}, prompt ${current.prompt}`);
        }
        return ExitCode.OK;
      },
      // Status only looks: it must not queue summaries for what is missing.
      { config, queueMisses: false },
    );
  },
};
