import { writeLine } from "../cliIo.js";
import { ExitCode, type CommandSpec } from "../command.js";
import { CACHE_DIR_OPTION, cacheFileFor, STATE_DIR_OPTION, stateDirFor } from "../openBridge.js";
import { positiveIntOption, usageError } from "../usageError.js";
import { modeChoices, parseMode } from "./toolsCommand.js";
import { NATS_SECURITY_OPTIONS, natsAgentFrom, natsSecurityFrom } from "./natsOptions.js";
import { BusWorker } from "../../bus/worker/busWorker.js";
import { Bridge } from "../../core/bridge.js";
import { AbridgeError, ErrorCode } from "../../model/errors.js";
import { ConfigWatcher } from "../../core/configWatcher.js";
import { DEFAULT_WORKER_TIMEOUT_MS } from "../../bus/wire/busProtocol.js";
import { connectNats } from "../../bus/wire/natsConnection.js";

/** How long calls in flight may finish after SIGTERM (as `serve` and the daemon give). */
const DEFAULT_BUS_GRACE_MS = 10_000;

/** `--NAME N` as an integer of 0 or more, or undefined when not given. */
function nonNegativeIntOption(values: Readonly<Record<string, unknown>>, name: string): number | undefined {
  const text = values[name];
  if (typeof text !== "string") return undefined;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0) throw usageError(`--${name}: expected an integer of 0 or more, got "${text}"`);
  return value;
}

/** `abridge bus`: one agent's worker on a NATS bus. */
export const busCommand: CommandSpec = {
  path: ["bus"],
  summary: "Serve every upstream to agents over a NATS message bus (one agent's worker)",
  details: [
    "Publishes the tool list on tool.meta.mcp.<agent> (at start, on config and list changes, on tool.meta.mcp.refresh.<agent>)",
    "and answers calls on tool.invoke.mcp.<agent> in the queue group of the agent's workers; results go to the reply subject,",
    "else to tool.result.<agent>. The shared subjects tool.invoke.mcp and tool.meta.mcp.refresh are served too unless the",
    "NATS server's permissions refuse them. At most --max-concurrent calls run and --max-queued wait; past that a call is",
    "answered busy (retryable). The config file is watched. SIGTERM lets calls in flight finish (--grace-ms).",
  ].join("\n"),
  options: {
    nats: { type: "string", value: "URL", description: "The NATS server, nats://HOST:PORT (required)" },
    agent: { type: "string", value: "NAME", description: "The agent this worker serves: letters, digits, _ and - (required)" },
    mode: { type: "string", value: "MODE", description: `${modeChoices()} (default: the config's mode)` },
    "timeout-ms": { type: "string", value: "MS", description: `Each call's limit; keep it below the requesters' (default ${DEFAULT_WORKER_TIMEOUT_MS})` },
    "grace-ms": { type: "string", value: "MS", description: `On SIGTERM, time calls in flight get to finish (default ${DEFAULT_BUS_GRACE_MS})` },
    "max-concurrent": { type: "string", value: "N", description: "Calls run at once (default: the config's bus_max_concurrent, 64)" },
    "max-queued": { type: "string", value: "N", description: "Calls waiting for a slot before busy answers (default: the config's bus_max_queued, 256)" },
    ...NATS_SECURITY_OPTIONS,
    "no-watch": { type: "boolean", description: "Do not watch the config file for changes" },
    "read-only": { type: "boolean", description: "Expose and allow only tools annotated readOnlyHint, for every server" },
    ...CACHE_DIR_OPTION,
    ...STATE_DIR_OPTION,
  },
  async run(ctx) {
    const { url, agent } = natsAgentFrom(ctx.values, ctx.secrets, "the agent whose calls this worker takes");
    const flagMode = ctx.values.mode === undefined ? undefined : parseMode(ctx.values.mode, "compact");
    const callTimeoutMs = positiveIntOption(ctx.values, "timeout-ms") ?? DEFAULT_WORKER_TIMEOUT_MS;
    const graceMs = positiveIntOption(ctx.values, "grace-ms") ?? DEFAULT_BUS_GRACE_MS;
    const flagMaxConcurrent = positiveIntOption(ctx.values, "max-concurrent");
    const flagMaxQueued = nonNegativeIntOption(ctx.values, "max-queued");
    const security = natsSecurityFrom(ctx.values);
    const config = await ctx.loadConfig();

    // Before any upstream is started: a wrong address or credentials fail at once, with nothing to clean up.
    const connection = await connectNats({ url, security, name: `abridge-bus:${agent}`, logger: ctx.logger });
    let bridge: Bridge | undefined;
    let watcher: ConfigWatcher | undefined;
    let worker: BusWorker | undefined;
    try {
      bridge = await Bridge.open({
        config,
        cacheFile: cacheFileFor(ctx, config),
        env: ctx.io.env,
        logger: ctx.logger,
        stateDir: stateDirFor(ctx, config),
        ...(ctx.values["read-only"] === true ? { forceReadOnly: true } : {}),
        // The upstreams are spawned first, and the cache and the rest open while they start.
        begin: { signal: ctx.io.signal },
      });
      const mode = flagMode ?? config.mode;
      const started = new BusWorker({
        bridge,
        connection,
        agent,
        mode,
        callTimeoutMs,
        maxConcurrent: flagMaxConcurrent ?? config.bus_max_concurrent,
        maxQueued: flagMaxQueued ?? config.bus_max_queued,
        refreshIntervalMs: config.bus_refresh_interval_ms,
        logger: ctx.logger,
      });
      worker = started;
      if (ctx.values["no-watch"] !== true && config.source !== "<built-in>") {
        watcher = new ConfigWatcher({
          file: config.source,
          load: () => ctx.loadConfig(),
          bridge,
          logger: ctx.logger,
          // An edit that was applied is published even when the list reads the same: subscribers
          // learn that the agent's config changed (its policy, its servers' states).
          onReload: (outcome) => {
            if (outcome.ok) started.publishTools("config");
          },
        });
        watcher.start();
      }
      await worker.start(ctx.io.signal);
      const servers = bridge.servers().filter((s) => s.state !== "disabled").length;
      writeLine(ctx.io.stderr, `abridge bus: agent ${agent}, ${servers} upstream server(s) (${mode} mode), worker ${worker.id} on ${url.server}`);
      // Until a signal, or until the connection ends for good: the client reconnects by itself, so
      // that is a fatal error (the server refused this client), and a worker that cannot hear
      // calls must not linger as if it served.
      const lost = await new Promise<Error | undefined>((resolve) => {
        if (ctx.io.signal.aborted) resolve(undefined);
        ctx.io.signal.addEventListener("abort", () => resolve(undefined), { once: true });
        void connection.closed().then((err) => resolve(err ?? new Error("closed by the server")));
      });
      if (lost !== undefined)
        throw new AbridgeError(ErrorCode.BUS_UNAVAILABLE, `the connection to the NATS server at ${url.server} ended: ${lost.message}`, { cause: lost });
      return ExitCode.OK;
    } finally {
      // Serve side first (answers flushed), then the config watch, the connection and the upstreams.
      await worker?.close(graceMs);
      await watcher?.close();
      await connection.close().catch(() => undefined);
      await bridge?.close();
    }
  },
};
