import type { Config } from "../../config/schema.js";
import type { Bridge } from "../../core/bridge.js";
import { tokenReport, type CacheEntry } from "../../core/toolViews.js";
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

/** Per-server outcome of a warm run. */
interface WarmRow {
  server: string;
  state: string;
  tools: number;
  hits: number;
  generated: number;
  failed: number;
  full: number;
  compact: number;
  summary: number;
}

/** Builds the per-server rows and the total from the bridge's current catalog. */
function warmRows(bridge: Bridge, generated: Map<string, number>, failed: Map<string, number>): WarmRow[] {
  const discovery = new Map(bridge.discovery().map((d) => [d.server, d]));
  // The compact list carries one get_schema tool for all servers; per server it is left out, so
  // the rows show each server's own cost and the total row counts it once.
  const shared = tokenReport([], { separator: bridge.config.separator }).compact.openAiTokens;
  return bridge.servers().map((status) => {
    const tools = bridge.tools(status.name);
    const tokens = tokenReport(tools, { separator: bridge.config.separator });
    return {
      server: status.name,
      state: status.state === "ready" ? "ready" : `${status.state}${status.error ? `: ${status.error.message}` : ""}`,
      tools: tools.length,
      hits: discovery.get(status.name)?.hits ?? 0,
      generated: generated.get(status.name) ?? 0,
      failed: failed.get(status.name) ?? 0,
      full: tokens.full.openAiTokens,
      compact: tools.length === 0 ? 0 : Math.max(0, tokens.compact.openAiTokens - shared),
      summary: tokens.summary.openAiTokens,
    };
  });
}

function printWarmTable(ctx: CommandContext, bridge: Bridge, rows: WarmRow[]): void {
  const total = tokenReport(bridge.tools(), { separator: bridge.config.separator });
  const sum = (pick: (r: WarmRow) => number): number => rows.reduce((n, r) => n + pick(r), 0);
  const body = rows.map((r) => [
    r.server,
    String(r.tools),
    String(r.hits),
    String(r.generated),
    String(r.failed),
    `${formatCount(r.full)} -> ${formatCount(r.compact)}`,
    r.full === 0 ? "-" : formatShare(r.compact / r.full),
    r.state === "ready" ? "" : r.state,
  ]);
  body.push([
    "total",
    String(sum((r) => r.tools)),
    String(sum((r) => r.hits)),
    String(sum((r) => r.generated)),
    String(sum((r) => r.failed)),
    `${formatCount(total.full.openAiTokens)} -> ${formatCount(total.compact.openAiTokens)}`,
    total.full.openAiTokens === 0 ? "-" : formatShare(total.compact.ratioOfFull),
    "",
  ]);
  writeLine(
    ctx.io.stdout,
    formatTable(
      ["server", "tools", "hits", "generated", "failed", "tokens full -> compact", "share", "note"],
      body,
      ["left", "right", "right", "right", "right", "right", "right"],
    ),
  );
  writeLine(
    ctx.io.stdout,
    `all modes (o200k tokens of the tool list): full ${formatCount(total.full.openAiTokens)}, summary ${formatCount(total.summary.openAiTokens)} (${formatShare(total.summary.ratioOfFull)}), compact ${formatCount(total.compact.openAiTokens)} (${formatShare(total.compact.ratioOfFull)}), lazy ${formatCount(total.lazy.openAiTokens)} (${formatShare(total.lazy.ratioOfFull)})`,
  );
  const q = bridge.stats().queue;
  writeLine(
    ctx.io.stdout,
    `summarizer ${bridge.summarizerIdentity().summarizer}: ${formatCount(q.requests)} requests, ${formatCount(q.generated)} generated, ${formatCount(q.fallbacks)} fell back to extractive, ${formatCount(q.retries)} retries${q.fromPeers > 0 ? `, ${formatCount(q.fromPeers)} written by other hosts meanwhile` : ""}`,
  );
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
    ...CACHE_DIR_OPTION,
  },
  async run(ctx) {
    const config = await summarizeConfig(ctx);
    return withBridge(
      ctx,
      async (bridge) => {
        const generated = new Map<string, number>();
        const failed = new Map<string, number>();
        const queued = bridge.discovery().reduce((n, d) => n + d.queued, 0);
        const progress = progressReporter(ctx, queued);
        // A summary that was made but could not be written (full disk, read-only file) is lost
        // when this process ends: counted apart, so "generated" never passes for "saved".
        const sinkErrorsBefore = bridge.stats().queue.sinkErrors;
        bridge.onSummary((entry) => {
          generated.set(entry.server, (generated.get(entry.server) ?? 0) + 1);
          if (entry.fallback !== undefined) failed.set(entry.server, (failed.get(entry.server) ?? 0) + 1);
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
        printWarmTable(ctx, bridge, warmRows(bridge, generated, failed));
        const notWritten = bridge.stats().queue.sinkErrors - sinkErrorsBefore;
        if (notWritten > 0) {
          const made = [...generated.values()].reduce((a, b) => a + b, 0);
          writeLine(
            ctx.io.stderr,
            `abridge: ${formatCount(notWritten)} of ${formatCount(made)} summaries could not be written to ${bridge.cacheFile} (see the warnings above); they are not cached [${ErrorCode.CACHE_IO}]`,
          );
        }
        if (interrupted) {
          writeLine(ctx.io.stderr, "abridge: interrupted; every summary written so far is kept");
          return ExitCode.INTERRUPTED;
        }
        return notWritten > 0 || bridge.servers().some((s) => s.state === "failed") ? ExitCode.FAILURE : ExitCode.OK;
      },
      {
        config,
        discover: {
          ...(ctx.values.force ? { force: true } : {}),
          // Filled in by start(): the stale check needs the summarizer the bridge built.
        },
        staleCheck: ctx.values.stale === true,
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
