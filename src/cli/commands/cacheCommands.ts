import { clearSummaryCache, compactSummaryCache, verifySummaryCache } from "../../core/cacheAdmin.js";
import { AbridgeError, ErrorCode } from "../../model/errors.js";
import { ExitCode, type CommandContext, type CommandSpec } from "../command.js";
import { writeLine } from "../cliIo.js";
import { formatCount } from "../formatTable.js";
import { CACHE_DIR_OPTION, cacheFileFor } from "../openBridge.js";

/**
 * The cache file without requiring a config: cache maintenance works with none. Only a config that
 * is not there is optional; an invalid one is reported (exit 2), because the `cache_dir` it may set
 * is unknown and falling back to the default would clear or rewrite another cache than intended.
 */
async function cacheFile(ctx: CommandContext): Promise<string> {
  const explicit = ctx.values.config !== undefined || ctx.io.env.ABRIDGE_CONFIG !== undefined;
  // `--cache-dir` names the file on its own; a config looked for by default may well be absent.
  const configOptional = typeof ctx.values["cache-dir"] === "string" || !explicit;
  try {
    return cacheFileFor(ctx, await ctx.loadConfig());
  } catch (err) {
    if (configOptional && err instanceof AbridgeError && err.code === ErrorCode.CONFIG_NOT_FOUND) return cacheFileFor(ctx);
    throw err;
  }
}

const MAX_LISTED = 20;

/** `abridge cache verify`. */
export const cacheVerifyCommand: CommandSpec = {
  path: ["cache", "verify"],
  summary: "Check every line of the summary cache; exit 1 when any line is torn or invalid",
  options: { json: { type: "boolean", description: "Print the report as JSON" }, ...CACHE_DIR_OPTION },
  async run(ctx) {
    const file = await cacheFile(ctx);
    const report = await verifySummaryCache(file, { signal: ctx.io.signal });
    if (ctx.values.json) {
      writeLine(ctx.io.stdout, JSON.stringify({ file, ...report }, null, 2));
    } else {
      writeLine(ctx.io.stdout, `${file}${report.exists ? "" : " (does not exist yet)"}`);
      writeLine(
        ctx.io.stdout,
        `lines ${formatCount(report.lines)}, valid ${formatCount(report.valid)}, invalid ${formatCount(report.invalid.length)}, live keys ${formatCount(report.liveKeys)}, superseded ${formatCount(report.superseded)}`,
      );
      for (const bad of report.invalid.slice(0, MAX_LISTED)) writeLine(ctx.io.stdout, `  line ${bad.line}: ${bad.reason}`);
      if (report.invalid.length > MAX_LISTED) writeLine(ctx.io.stdout, `  ... and ${report.invalid.length - MAX_LISTED} more`);
      if (report.invalid.length > 0) writeLine(ctx.io.stdout, "`abridge cache compact` rewrites the file without them.");
    }
    return report.invalid.length > 0 ? ExitCode.FAILURE : ExitCode.OK;
  },
};

/** `abridge cache compact`. */
export const cacheCompactCommand: CommandSpec = {
  path: ["cache", "compact"],
  summary: "Rewrite the summary cache atomically with one line per live key",
  options: { ...CACHE_DIR_OPTION },
  async run(ctx) {
    const file = await cacheFile(ctx);
    const report = await compactSummaryCache(file, { signal: ctx.io.signal });
    writeLine(ctx.io.stdout, `${file}: ${formatCount(report.before)} lines -> ${formatCount(report.after)}`);
    return ExitCode.OK;
  },
};

/** `abridge cache clear [--server S]`. */
export const cacheClearCommand: CommandSpec = {
  path: ["cache", "clear"],
  summary: "Remove every cached summary, or only one server's",
  options: { server: { type: "string", value: "NAME", description: "Only this server's entries" }, ...CACHE_DIR_OPTION },
  async run(ctx) {
    const file = await cacheFile(ctx);
    const server = ctx.values.server as string | undefined;
    const report = await clearSummaryCache(file, { ...(server !== undefined ? { server } : {}), signal: ctx.io.signal });
    writeLine(ctx.io.stdout, `${file}: removed ${formatCount(report.removed)} lines${server !== undefined ? ` of server ${server}` : ""}`);
    return ExitCode.OK;
  },
};
