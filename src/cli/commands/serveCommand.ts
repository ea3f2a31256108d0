import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import { ExitCode, type CommandContext, type CommandSpec } from "../command.js";
import { writeLine } from "../cliIo.js";
import { CACHE_DIR_OPTION, cacheFileFor, STATE_DIR_OPTION, stateDirFor } from "../openBridge.js";
import { positiveIntOption, usageError } from "../usageError.js";
import { ErrorCode, isAbridgeError, messageOf } from "../../model/errors.js";
import { modeChoices, parseMode } from "./toolsCommand.js";
import { Bridge } from "../../core/bridge.js";
import { serveStdio } from "../../serve/serveStdio.js";
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

/** Largest token file read: a token is a line, not a document. */
const MAX_TOKEN_FILE_BYTES = 4096;

/**
 * The bearer token from `--token-file`: the file's first line, trimmed. A file others can read is
 * accepted with a warning (the token is only as private as the file).
 */
async function readTokenFile(ctx: CommandContext, file: string): Promise<string> {
  const where = path.resolve(ctx.io.cwd, file);
  let text: string;
  try {
    const info = await stat(where);
    if (!info.isFile()) throw usageError(`--token-file: ${where} is not a regular file`);
    if (info.size > MAX_TOKEN_FILE_BYTES)
      throw usageError(`--token-file: ${where} is ${info.size} bytes; a token file holds one line (at most ${MAX_TOKEN_FILE_BYTES} bytes)`);
    if ((info.mode & 0o077) !== 0) ctx.logger.warn("the token file is readable by other users; chmod 600 it", { file: where });
    text = await readFile(where, "utf8");
  } catch (err) {
    if (isAbridgeError(err, ErrorCode.USAGE)) throw err;
    throw usageError(`--token-file: cannot read ${where}: ${messageOf(err)}`);
  }
  const token = (text.split(/\r?\n/)[0] ?? "").trim();
  if (token === "") throw usageError(`--token-file: ${where} is empty; its first line must be the token`);
  return token;
}

/** `abridge serve`: the MCP front end. */
export const serveCommand: CommandSpec = {
  path: ["serve"],
  summary: "Serve every upstream as one MCP server over stdio (or streamable HTTP with --http)",
  details: [
    "The config file is watched: servers added, removed or changed are applied without a restart.",
    "Over stdio, the end of stdin ends abridge and every upstream it started.",
    "initialize is answered at once; a first tools/list waits up to startup_grace_ms for upstreams still starting.",
  ].join("\n"),
  options: {
    mode: { type: "string", value: "MODE", description: `${modeChoices()} (default: the config's mode)` },
    http: { type: "string", value: "HOST:PORT", description: "Serve streamable HTTP at http://HOST:PORT/mcp (loopback only; port 0 picks one)" },
    "token-file": { type: "string", value: "FILE", description: "Read the bearer token HTTP clients must send from FILE (default $ABRIDGE_TOKEN)" },
    token: {
      type: "string",
      value: "TOKEN",
      description: "Refused: a token in the arguments is visible to every local user in ps; use $ABRIDGE_TOKEN or --token-file",
    },
    "page-size": { type: "string", value: "N", description: "Tools per tools/list page (default 500)" },
    "no-watch": { type: "boolean", description: "Do not watch the config file for changes" },
    "read-only": { type: "boolean", description: "Expose and allow only tools annotated readOnlyHint, for every server" },
    ...CACHE_DIR_OPTION,
    ...STATE_DIR_OPTION,
  },
  async run(ctx) {
    const flagMode = ctx.values.mode === undefined ? undefined : parseMode(ctx.values.mode, "compact");
    const listen = typeof ctx.values.http === "string" ? parseListen(ctx.values.http) : undefined;
    const pageSize = positiveIntOption(ctx.values, "page-size");
    if (ctx.values.token !== undefined) {
      throw usageError(
        "--token is refused: a token on the command line is visible to every local user (ps, /proc/PID/cmdline); set $ABRIDGE_TOKEN or put it in a file and pass --token-file FILE",
      );
    }
    const tokenFile = ctx.values["token-file"] as string | undefined;
    const token = tokenFile !== undefined ? await readTokenFile(ctx, tokenFile) : ctx.io.env.ABRIDGE_TOKEN;
    // An empty token matched a request with no Authorization header: ABRIDGE_TOKEN="" (a unit
    // file's ${UNSET}) turned authentication off without a word. It is refused, as an empty
    // --token-file is.
    if (token !== undefined && token.trim() === "" && listen) {
      throw usageError("$ABRIDGE_TOKEN is set but empty: set it to the token HTTP clients must send, or unset it to serve without a token");
    }
    if (token !== undefined && token !== "") ctx.secrets.add(token);

    const config = await ctx.loadConfig();
    const bridge = await Bridge.open({
      config,
      cacheFile: cacheFileFor(ctx, config),
      env: ctx.io.env,
      logger: ctx.logger,
      stateDir: stateDirFor(ctx, config),
      ...(ctx.values["read-only"] === true ? { forceReadOnly: true } : {}),
      // The upstreams are spawned first, then the cache and the rest open while they start. Not
      // awaited: a client is answered at once, whatever the upstreams do. Lists give servers
      // still starting `startup_grace_ms`; calls to one wait for it; a failure is logged by the
      // server's connection and shown in its status, and the others are served.
      begin: { signal: ctx.io.signal },
    });
    let watcher: ConfigWatcher | undefined;
    try {
      if (ctx.values["no-watch"] !== true && config.source !== "<built-in>") {
        watcher = new ConfigWatcher({ file: config.source, load: () => ctx.loadConfig(), bridge, logger: ctx.logger });
        watcher.start();
      }
      const mode = flagMode ?? config.mode;
      if (listen) {
        // Loaded only here: a stdio serve has no use for the HTTP server and its modules.
        const { startHttpServer } = await import("../../serve/httpServer.js");
        const http = await startHttpServer(bridge, {
          host: listen.host,
          port: listen.port,
          mode,
          logger: ctx.logger,
          ...(token !== undefined ? { token } : {}),
          ...(pageSize !== undefined ? { pageSize } : {}),
          sessionIdleMs: config.http_session_idle_minutes * 60_000,
          maxSessions: config.http_max_sessions,
          maxCallsPerSession: config.http_max_calls_per_session,
          maxConnections: config.http_max_connections,
        });
        const servers = bridge.servers().filter((s) => s.state !== "disabled").length;
        writeLine(ctx.io.stderr, `abridge serving ${servers} upstream server(s) (${mode} mode) at ${http.url}`);
        if (token === undefined) {
          // Loopback is not private: every local user and process can reach the port and would
          // call every upstream with the operator's credentials.
          ctx.logger.warn("serving HTTP without a token: any local process can call these tools; set $ABRIDGE_TOKEN or --token-file");
        }
        await new Promise<void>((resolve) => {
          if (ctx.io.signal.aborted) resolve();
          ctx.io.signal.addEventListener("abort", () => resolve(), { once: true });
        });
        // SIGTERM is "stop", not "drop": calls in flight get the daemon's grace to be answered.
        await http.close(SHUTDOWN_GRACE_MS);
      } else {
        await serveStdio(bridge, {
          stdin: ctx.io.stdin,
          stdout: ctx.io.stdout,
          mode,
          logger: ctx.logger,
          signal: ctx.io.signal,
          ...(pageSize !== undefined ? { pageSize } : {}),
        });
        // Answers still in stdout's buffer when serving stopped: the client is gone or not reading.
        if (ctx.io.stdout.writableLength > 0) ctx.io.abandonOutput?.();
      }
      return ExitCode.OK;
    } finally {
      await watcher?.close();
      await bridge.close();
    }
  },
};
