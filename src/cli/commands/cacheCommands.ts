import path from "node:path";
import {
  clearSummaryCache,
  compactSummaryCache,
  describeLocation,
  exportSummaryCache,
  importSummaryCache,
  verifySummaryCache,
  type CacheLocation,
} from "../../core/cacheAdmin.js";
import { parseRedisUrl } from "../../config/redisUrl.js";
import type { Config } from "../../config/schema.js";
import { AbridgeError, ErrorCode } from "../../model/errors.js";
import { ExitCode, type CommandContext, type CommandSpec, type OptionSpec } from "../command.js";
import { writeLine } from "../cliIo.js";
import { formatCount } from "../formatTable.js";
import { CACHE_DIR_OPTION, cacheFileFor } from "../openBridge.js";
import { usageError } from "../usageError.js";

/** `--cache-url`: a Redis summary cache, instead of the one the config names. */
const CACHE_URL_OPTION: Record<string, OptionSpec> = {
  "cache-url": {
    type: "string",
    value: "URL",
    description: "Redis summary cache redis://[:password@]host[:port][/db] (overrides config cache_url and --cache-dir)",
  },
};

const LOCATION_OPTIONS: Record<string, OptionSpec> = { ...CACHE_URL_OPTION, ...CACHE_DIR_OPTION };

/** The config if there is one: cache maintenance works with none (see {@link cacheLocation}). */
async function optionalConfig(ctx: CommandContext): Promise<Config | undefined> {
  const explicit = ctx.values.config !== undefined || ctx.io.env.ABRIDGE_CONFIG !== undefined;
  try {
    return await ctx.loadConfig();
  } catch (err) {
    if (!explicit && err instanceof AbridgeError && err.code === ErrorCode.CONFIG_NOT_FOUND) return undefined;
    throw err;
  }
}

/**
 * The cache a command works on: `--cache-url`, then `--cache-dir`, then the config's `cache_url`,
 * then the file its `cache_dir` (or `$ABRIDGE_CACHE_DIR`, or the default) names. Only a config that
 * is not there is optional; an invalid one is reported (exit 2), because the cache it names is
 * unknown and falling back to the default would clear or rewrite another cache than intended.
 */
async function cacheLocation(ctx: CommandContext): Promise<CacheLocation> {
  const url = ctx.values["cache-url"];
  if (typeof url === "string") {
    const parsed = parseRedisUrl(url);
    if (!parsed.ok) throw usageError(`--cache-url: ${parsed.message}`);
    return { url };
  }
  // `--cache-dir` names the file on its own; a config looked for by default may well be absent.
  if (typeof ctx.values["cache-dir"] === "string") {
    try {
      return cacheFileFor(ctx, await ctx.loadConfig());
    } catch (err) {
      if (err instanceof AbridgeError && err.code === ErrorCode.CONFIG_NOT_FOUND) return cacheFileFor(ctx);
      throw err;
    }
  }
  const config = await optionalConfig(ctx);
  if (config?.cache_url !== undefined) return { url: config.cache_url };
  return cacheFileFor(ctx, config);
}

const MAX_LISTED = 20;

/** `abridge cache verify`. */
export const cacheVerifyCommand: CommandSpec = {
  path: ["cache", "verify"],
  summary: "Check every entry of the summary cache; exit 1 when any is torn or invalid",
  options: { json: { type: "boolean", description: "Print the report as JSON" }, ...LOCATION_OPTIONS },
  async run(ctx) {
    const cache = await cacheLocation(ctx);
    const where = describeLocation(cache);
    const report = await verifySummaryCache(cache, { signal: ctx.io.signal });
    if (ctx.values.json) {
      writeLine(ctx.io.stdout, JSON.stringify({ [typeof cache === "string" ? "file" : "url"]: where, ...report }, null, 2));
    } else {
      writeLine(ctx.io.stdout, `${where}${report.exists ? "" : typeof cache === "string" ? " (does not exist yet)" : " (empty)"}`);
      writeLine(
        ctx.io.stdout,
        `${typeof cache === "string" ? "lines" : "entries"} ${formatCount(report.lines)}, valid ${formatCount(report.valid)}, invalid ${formatCount(report.invalid.length)}, live keys ${formatCount(report.liveKeys)}, superseded ${formatCount(report.superseded)}`,
      );
      for (const bad of report.invalid.slice(0, MAX_LISTED)) {
        writeLine(ctx.io.stdout, bad.field !== undefined ? `  field ${bad.field}: ${bad.reason}` : `  line ${bad.line}: ${bad.reason}`);
      }
      if (report.invalid.length > MAX_LISTED) writeLine(ctx.io.stdout, `  ... and ${report.invalid.length - MAX_LISTED} more`);
      if (report.invalid.length > 0)
        writeLine(ctx.io.stdout, `\`abridge cache compact\` rewrites the ${typeof cache === "string" ? "file" : "cache"} without them.`);
    }
    return report.invalid.length > 0 ? ExitCode.FAILURE : ExitCode.OK;
  },
};

/** `abridge cache compact`. */
export const cacheCompactCommand: CommandSpec = {
  path: ["cache", "compact"],
  summary: "Rewrite the summary cache with one entry per live key, invalid ones dropped",
  options: { ...LOCATION_OPTIONS },
  async run(ctx) {
    const cache = await cacheLocation(ctx);
    const report = await compactSummaryCache(cache, { signal: ctx.io.signal });
    writeLine(
      ctx.io.stdout,
      `${describeLocation(cache)}: ${formatCount(report.before)} ${typeof cache === "string" ? "lines" : "entries"} -> ${formatCount(report.after)}`,
    );
    return ExitCode.OK;
  },
};

/** `abridge cache clear [--server S]`. */
export const cacheClearCommand: CommandSpec = {
  path: ["cache", "clear"],
  summary: "Remove every cached summary, or only one server's",
  options: { server: { type: "string", value: "NAME", description: "Only this server's entries" }, ...LOCATION_OPTIONS },
  async run(ctx) {
    const cache = await cacheLocation(ctx);
    const server = ctx.values.server as string | undefined;
    const report = await clearSummaryCache(cache, { ...(server !== undefined ? { server } : {}), signal: ctx.io.signal });
    const unit = typeof cache === "string" ? "lines" : "entries";
    writeLine(ctx.io.stdout, `${describeLocation(cache)}: removed ${formatCount(report.removed)} ${unit}${server !== undefined ? ` of server ${server}` : ""}`);
    return ExitCode.OK;
  },
};

/** `abridge cache export FILE`. */
export const cacheExportCommand: CommandSpec = {
  path: ["cache", "export"],
  summary: "Write every entry of the summary cache (file or Redis) to a JSONL file",
  args: "<file>",
  positionals: { min: 1, max: 1 },
  details: "The file has the format of summaries.jsonl: `abridge cache import` reads it, and a bridge can serve it as its cache_dir's file.",
  options: { ...LOCATION_OPTIONS },
  async run(ctx) {
    const [file] = ctx.positionals as [string];
    const target = path.resolve(ctx.io.cwd, file);
    const report = await exportSummaryCache(await cacheLocation(ctx), target, { signal: ctx.io.signal });
    writeLine(ctx.io.stdout, `${report.from} -> ${target}: ${formatCount(report.entries)} entries`);
    return ExitCode.OK;
  },
};

/** `abridge cache import FILE`. */
export const cacheImportCommand: CommandSpec = {
  path: ["cache", "import"],
  summary: "Read the entries of a JSONL file into the summary cache (file or Redis); newest wins",
  args: "<file>",
  positionals: { min: 1, max: 1 },
  details: [
    "An entry is left out where the cache holds a newer summary of the same key.",
    "Lines that are not valid entries are listed and skipped (exit 1); the valid ones are imported.",
  ].join("\n"),
  options: { ...LOCATION_OPTIONS },
  async run(ctx) {
    const [file] = ctx.positionals as [string];
    const source = path.resolve(ctx.io.cwd, file);
    const cache = await cacheLocation(ctx);
    const report = await importSummaryCache(cache, source, { signal: ctx.io.signal });
    writeLine(
      ctx.io.stdout,
      `${source} -> ${report.to}: ${formatCount(report.imported)} imported, ${formatCount(report.kept)} kept (the cache had them or newer), ${formatCount(report.invalid.length)} invalid lines`,
    );
    for (const bad of report.invalid.slice(0, MAX_LISTED))
      writeLine(ctx.io.stderr, `abridge: ${source}:${bad.line}: ${bad.reason} [${ErrorCode.CACHE_CORRUPT_LINE}]`);
    if (report.invalid.length > MAX_LISTED) writeLine(ctx.io.stderr, `abridge: ... and ${report.invalid.length - MAX_LISTED} more invalid lines`);
    return report.invalid.length > 0 ? ExitCode.FAILURE : ExitCode.OK;
  },
};
