import type { Config } from "../config/schema.js";
import { Bridge } from "../core/bridge.js";
import { failedStartError } from "../core/failedStart.js";
import { stateDir, summaryCacheFile } from "../core/cacheAdmin.js";
import type { DiscoverOptions, Summarizer } from "../core/summaryPipeline.js";
import type { CommandContext, OptionSpec } from "./command.js";
import { writeLine } from "./cliIo.js";
import { usageError } from "./usageError.js";
import { didYouMean } from "../util/suggest.js";

/** `--cache-dir`, shared by every command that reads or writes the summary cache. */
export const CACHE_DIR_OPTION: Record<string, OptionSpec> = {
  "cache-dir": { type: "string", value: "DIR", description: "Directory of summaries.jsonl (overrides config and $ABRIDGE_CACHE_DIR)" },
};

/** `--state-dir`: the daemon's lockfile and log, and spilled tool outputs. */
export const STATE_DIR_OPTION: Record<string, OptionSpec> = {
  "state-dir": { type: "string", value: "DIR", description: "Directory of the daemon lockfile and spilled outputs (overrides config and $ABRIDGE_STATE_DIR)" },
};

/** The state dir a command uses: `--state-dir`, `$ABRIDGE_STATE_DIR`, config `state_dir`, default. */
export function stateDirFor(ctx: CommandContext, config: Config | undefined): string {
  return stateDir({
    ...(typeof ctx.values["state-dir"] === "string" ? { flag: ctx.values["state-dir"] } : {}),
    env: ctx.io.env,
    ...(config !== undefined ? { config } : {}),
    cwd: ctx.io.cwd,
  });
}

/** The cache file a command uses: `--cache-dir`, `$ABRIDGE_CACHE_DIR`, config `cache_dir`, default. */
export function cacheFileFor(ctx: CommandContext, config?: Config): string {
  return summaryCacheFile({
    ...(typeof ctx.values["cache-dir"] === "string" ? { flag: ctx.values["cache-dir"] } : {}),
    env: ctx.io.env,
    ...(config !== undefined ? { config } : {}),
    cwd: ctx.io.cwd,
  });
}

/**
 * Keeps only the named servers, failing with a hint on an unknown name. `from` is where the names
 * came from: `--server` (named in the message), or a positional argument such as `call <server>`,
 * where speaking of an option would send the user looking for one that does not exist.
 */
export function selectServers(config: Config, names: string[] | undefined, from: "--server" | "positional" = "--server"): Config {
  if (!names || names.length === 0) return config;
  const known = config.servers.map((s) => s.name);
  for (const name of names) {
    if (!known.includes(name)) {
      const hint = didYouMean(name, known);
      const message = `no server "${name}" in ${config.source}${hint ? `; did you mean "${hint}"?` : ""} (servers: ${known.join(", ") || "none"})`;
      throw usageError(from === "positional" ? message : `${from}: ${message}`);
    }
  }
  return { ...config, servers: config.servers.filter((s) => names.includes(s.name)) };
}

/**
 * Loads the config, opens a {@link Bridge}, connects the upstreams and runs `fn`; the bridge is
 * closed (children ended) whatever happens. A one-shot command: a server that fails to start is
 * not retried (the command ends before a retry could help), and unless `reportFailed` is false
 * each such server is named once on stderr after `fn`, with its error and code.
 */
export async function withBridge<T>(
  ctx: CommandContext,
  fn: (bridge: Bridge) => Promise<T>,
  options: {
    config?: Config;
    summarizer?: Summarizer;
    start?: boolean;
    discover?: DiscoverOptions;
    /** Queue again the hits written by another summarizer or prompt than the bridge's (`--stale`). */
    staleCheck?: boolean;
    /** false: look only, queue no summaries for misses (`summarize status`). */
    queueMisses?: boolean;
    /**
     * false: the command shows the servers that failed to start itself (`servers` in its table,
     * `call` in the error it ends with), so they are not named again on stderr.
     */
    reportFailed?: boolean;
  } = {},
): Promise<T> {
  const config = options.config ?? (await ctx.loadConfig());
  const bridge = await Bridge.open({
    config,
    cacheFile: cacheFileFor(ctx, config),
    env: ctx.io.env,
    logger: ctx.logger,
    retryFailedStart: false,
    ...(options.summarizer ? { summarizer: options.summarizer } : {}),
  });
  try {
    if (options.start !== false) {
      await bridge.start(ctx.io.signal, {
        ...options.discover,
        ...(options.staleCheck ? { stale: bridge.summarizerIdentity() } : {}),
        ...(options.queueMisses === false ? { queue: false } : {}),
      });
    }
    const result = await fn(bridge);
    if (options.reportFailed !== false) {
      for (const status of bridge.servers()) {
        if (status.state !== "failed") continue;
        const error = failedStartError(status);
        writeLine(ctx.io.stderr, ctx.secrets.redact(`abridge: ${error.message} [${error.code}]`));
      }
    }
    return result;
  } finally {
    await bridge.close();
  }
}
