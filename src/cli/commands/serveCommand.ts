import { ExitCode, type CommandSpec } from "../command.js";
import { writeLine } from "../cliIo.js";
import { CACHE_DIR_OPTION, cacheFileFor, STATE_DIR_OPTION, stateDirFor } from "../openBridge.js";
import { usageError } from "../usageError.js";
import { parseMode } from "./toolsCommand.js";
import { Bridge } from "../../core/bridge.js";
import { serveStdio } from "../../serve/serveStdio.js";
import { startHttpServer } from "../../serve/httpServer.js";
import { ConfigWatcher } from "../../core/configWatcher.js";

/** How long calls in flight may finish after SIGTERM over HTTP (stdio uses the same default). */
const SHUTDOWN_GRACE_MS = 10_000;

/** Parses `--http HOST:PORT` (or a bare port). */
export function parseListen(value: string): { host: string; port: number } {
  const match = /^(?:(\[[^\]]+\]|[^:]+):)?(\d{1,5})$/.exec(value);
  const port = match ? Number(match[2]) : NaN;
  if (!match || port > 65535) throw usageError(`--http: expected HOST:PORT such as 127.0.0.1:8808, got "${value}"`);
  const host = (match[1] ?? "127.0.0.1").replace(/^\[(.*)\]$/, "$1");
  return { host, port };
}

/** `abridge serve`: the MCP front end. */
export const serveCommand: CommandSpec = {
  path: ["serve"],
  summary: "Serve every upstream as one MCP server over stdio (or streamable HTTP with --http)",
  details: [
    "The config file is watched: servers added, removed or changed are applied without a restart.",
    "Over stdio, the end of stdin ends abridge and every upstream it started.",
  ].join("\n"),
  options: {
    mode: { type: "string", value: "MODE", description: "full | summary | compact (default) | lazy" },
    http: { type: "string", value: "HOST:PORT", description: "Serve streamable HTTP at http://HOST:PORT/mcp (loopback only; port 0 picks one)" },
    token: { type: "string", value: "TOKEN", description: "Bearer token HTTP clients must send (default $ABRIDGE_TOKEN)" },
    "page-size": { type: "string", value: "N", description: "Tools per tools/list page (default 500)" },
    "no-watch": { type: "boolean", description: "Do not watch the config file for changes" },
    "read-only": { type: "boolean", description: "Expose and allow only tools annotated readOnlyHint, for every server" },
    ...CACHE_DIR_OPTION,
    ...STATE_DIR_OPTION,
  },
  async run(ctx) {
    const flagMode = ctx.values.mode === undefined ? undefined : parseMode(ctx.values.mode, "compact");
    const listen = typeof ctx.values.http === "string" ? parseListen(ctx.values.http) : undefined;
    const pageText = ctx.values["page-size"] as string | undefined;
    const pageSize = pageText === undefined ? undefined : Number(pageText);
    if (pageSize !== undefined && (!Number.isInteger(pageSize) || pageSize < 1)) throw usageError(`--page-size: expected a positive integer, got "${pageText}"`);
    const token = (ctx.values.token as string | undefined) ?? ctx.io.env.ABRIDGE_TOKEN;
    if (token !== undefined) ctx.secrets.add(token);

    const config = await ctx.loadConfig();
    const bridge = await Bridge.open({
      config,
      cacheFile: cacheFileFor(ctx, config),
      env: ctx.io.env,
      logger: ctx.logger,
      stateDir: stateDirFor(ctx, config),
      ...(ctx.values["read-only"] === true ? { forceReadOnly: true } : {}),
    });
    let watcher: ConfigWatcher | undefined;
    try {
      await bridge.start(ctx.io.signal);
      for (const s of bridge.servers().filter((s) => s.state === "failed")) {
        ctx.logger.warn("upstream failed to start; serving the others", { server: s.name, error: s.error?.message });
      }
      if (ctx.values["no-watch"] !== true && config.source !== "<built-in>") {
        watcher = new ConfigWatcher({ file: config.source, load: () => ctx.loadConfig(), bridge, logger: ctx.logger });
        watcher.start();
      }
      const mode = flagMode ?? config.mode;
      if (listen) {
        const http = await startHttpServer(bridge, {
          host: listen.host,
          port: listen.port,
          mode,
          logger: ctx.logger,
          ...(token !== undefined ? { token } : {}),
          ...(pageSize !== undefined ? { pageSize } : {}),
        });
        writeLine(ctx.io.stderr, `abridge serving ${bridge.catalog.tools().length} tools (${mode} mode) at ${http.url}`);
        if (token === undefined) {
          // Loopback is not private: every local user and process can reach the port and would
          // call every upstream with the operator's credentials.
          ctx.logger.warn("serving HTTP without a token: any local process can call these tools; set $ABRIDGE_TOKEN or --token");
        }
        await new Promise<void>((resolve) => {
          if (ctx.io.signal.aborted) resolve();
          ctx.io.signal.addEventListener("abort", () => resolve(), { once: true });
        });
        // SIGTERM is "stop", not "drop": calls in flight get the daemon's grace to be answered.
        await http.close(SHUTDOWN_GRACE_MS);
      } else {
        await serveStdio(bridge, { stdin: ctx.io.stdin, stdout: ctx.io.stdout, mode, logger: ctx.logger, signal: ctx.io.signal, ...(pageSize !== undefined ? { pageSize } : {}) });
      }
      return ExitCode.OK;
    } finally {
      await watcher?.close();
      await bridge.close();
    }
  },
};
