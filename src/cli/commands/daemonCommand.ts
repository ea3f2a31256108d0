import path from "node:path";
import { DaemonClient } from "../../daemon/client/daemonClient.js";
import { ensureDaemon } from "../../daemon/client/ensureDaemon.js";
import type { Config } from "../../config/schema.js";
import { Daemon, DEFAULT_GRACE_MS } from "../../daemon/server/daemon.js";
import { configIdentity, configMismatch } from "../../daemon/wire/configIdentity.js";
import { judgeLock, lockFilePath, readLock, releaseLock, type LockInfo } from "../../daemon/wire/lockfile.js";
import { isPidAlive, processCommandLine, processGroupOf, signalProcess } from "../../daemon/wire/processInfo.js";
import { isAbridgeError, ErrorCode } from "../../model/errors.js";
import { delay } from "../../model/timers.js";
import type { DaemonStats } from "../../daemon/wire/protocol.js";
import { writeLine } from "../cliIo.js";
import { ExitCode, type CommandContext, type CommandSpec } from "../command.js";
import { CACHE_DIR_OPTION, cacheFileFor, STATE_DIR_OPTION, stateDirFor } from "../openBridge.js";
import { positiveIntOption, usageError } from "../usageError.js";

/**
 * The config, when one is named or found. `status` and `stop` only need it for `state_dir`, so
 * they work without one (state dir from the flag, the environment or the default).
 */
async function optionalConfig(ctx: CommandContext): Promise<Config | undefined> {
  try {
    return await ctx.loadConfig();
  } catch (err) {
    if (ctx.values.config === undefined && isAbridgeError(err, ErrorCode.CONFIG_NOT_FOUND)) return undefined;
    throw err;
  }
}

function formatUptime(ms: number): string {
  const s = Math.floor(ms / 1000);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return h > 0 ? `${h}h${String(m).padStart(2, "0")}m` : m > 0 ? `${m}m${String(s % 60).padStart(2, "0")}s` : `${s}s`;
}

/** `abridge daemon`: run the daemon in the foreground until idle, `shutdown`, or a signal. */
export const daemonCommand: CommandSpec = {
  path: ["daemon"],
  summary: "Run the local daemon for host applications in the foreground (JSON lines over a unix socket or loopback TCP)",
  details: [
    "Listens on the unix socket <state dir>/daemon.sock (or --socket PATH; on 127.0.0.1 on a random port with --tcp,",
    "on Windows, or when that path is too long for a unix socket), writes <state dir>/abridge.lock (0600) with",
    "its pid, address and token, and exits after idle_timeout_minutes without requests.",
    "Subcommands: `daemon start` (detached), `daemon stop`, `daemon status`.",
  ].join("\n"),
  options: {
    ...STATE_DIR_OPTION,
    socket: { type: "string", value: "PATH", description: "Listen on this unix socket instead of <state dir>/daemon.sock" },
    tcp: { type: "boolean", description: "Listen on loopback TCP (127.0.0.1, a random port) instead of a unix socket" },
    "heartbeat-ms": { type: "string", value: "MS", description: "Lockfile heartbeat interval (default 5000)" },
    "grace-ms": { type: "string", value: "MS", description: `On SIGTERM, time calls in flight get to finish (default ${DEFAULT_GRACE_MS})` },
    "read-only": { type: "boolean", description: "Expose and allow only tools annotated readOnlyHint, for every server" },
    ...CACHE_DIR_OPTION,
  },
  async run(ctx) {
    const heartbeatMs = positiveIntOption(ctx.values, "heartbeat-ms");
    const graceMs = positiveIntOption(ctx.values, "grace-ms");
    const socket = ctx.values.socket;
    if (typeof socket === "string" && ctx.values.tcp === true) throw usageError("--socket and --tcp exclude each other");
    const config = await ctx.loadConfig();
    const stateDir = stateDirFor(ctx, config);
    const result = await Daemon.start({
      config,
      stateDir,
      cacheFile: cacheFileFor(ctx, config),
      env: ctx.io.env,
      logger: ctx.logger,
      ...(typeof socket === "string" ? { socketPath: path.resolve(ctx.io.cwd, socket) } : {}),
      ...(ctx.values.tcp === true ? { tcp: true } : {}),
      ...(heartbeatMs !== undefined ? { heartbeatMs } : {}),
      bridge: { stateDir, ...(ctx.values["read-only"] === true ? { forceReadOnly: true } : {}) },
      signal: ctx.io.signal,
    });
    if (result.status === "running") {
      // Serving another config is: the caller would believe its config is served.
      const identity = await configIdentity(config.source).catch(() => undefined);
      const mismatch = identity ? configMismatch(result.holder, identity, stateDir) : undefined;
      if (mismatch) throw mismatch;
      // Lost a start-up race, or started by hand beside a running one: not an error.
      writeLine(ctx.io.stderr, `abridge daemon: already running (pid ${result.holder.pid}, ${result.holder.address})`);
      return ExitCode.OK;
    }
    const daemon = result.daemon;
    ctx.secrets.add(daemon.token);
    writeLine(ctx.io.stderr, `abridge daemon: listening on ${daemon.address} (pid ${daemon.info.pid}, lockfile ${daemon.lockFile})`);
    const onSignal = (): void => void daemon.close({ reason: "signal", ...(graceMs !== undefined ? { graceMs } : {}) });
    if (ctx.io.signal.aborted) onSignal();
    else ctx.io.signal.addEventListener("abort", onSignal, { once: true });
    const reason = await daemon.closed;
    ctx.io.signal.removeEventListener("abort", onSignal);
    writeLine(ctx.io.stderr, `abridge daemon: stopped (${reason})`);
    return reason === "lost-lock" ? ExitCode.FAILURE : ExitCode.OK;
  },
};

/** `abridge daemon start`: make sure a daemon runs (detached), print its pid and address. */
export const daemonStartCommand: CommandSpec = {
  path: ["daemon", "start"],
  summary: "Start the daemon in the background unless one is running; print its pid and address",
  details: "Fails with DAEMON_CONFIG_MISMATCH when the daemon running for the state dir serves another config (or an older version of this one).",
  options: {
    ...STATE_DIR_OPTION,
    "timeout-ms": { type: "string", value: "MS", description: "How long to wait for it to answer (default 30000)" },
    socket: { type: "string", value: "PATH", description: "Have the daemon listen on this unix socket instead of <state dir>/daemon.sock" },
    tcp: { type: "boolean", description: "Have the daemon listen on loopback TCP instead of a unix socket" },
    "read-only": { type: "boolean", description: "Have the daemon expose and allow only tools annotated readOnlyHint" },
    ...CACHE_DIR_OPTION,
  },
  async run(ctx) {
    const timeoutMs = positiveIntOption(ctx.values, "timeout-ms");
    const config = await ctx.loadConfig();
    const stateDir = stateDirFor(ctx, config);
    const level = ctx.values["log-level"];
    // Paths resolved here: the daemon runs in the config's folder, not in this one.
    const socket = ctx.values.socket;
    if (typeof socket === "string" && ctx.values.tcp === true) throw usageError("--socket and --tcp exclude each other");
    const cacheDir = ctx.values["cache-dir"];
    const daemonArgs = [
      ...(typeof socket === "string" ? ["--socket", path.resolve(ctx.io.cwd, socket)] : []),
      ...(ctx.values.tcp === true ? ["--tcp"] : []),
      ...(typeof cacheDir === "string" ? ["--cache-dir", path.resolve(ctx.io.cwd, cacheDir)] : []),
      ...(ctx.values["read-only"] === true ? ["--read-only"] : []),
    ];
    const handle = await ensureDaemon({
      stateDir,
      config,
      env: ctx.io.env,
      signal: ctx.io.signal,
      logger: ctx.logger,
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      ...(typeof level === "string" ? { logLevel: level } : {}),
      ...(daemonArgs.length > 0 ? { daemonArgs } : {}),
    });
    writeLine(
      ctx.io.stdout,
      `abridge daemon ${handle.spawned ? "started" : "already running"}: pid ${handle.info.pid}, address ${handle.info.address}, state dir ${stateDir}`,
    );
    return ExitCode.OK;
  },
};

/** `abridge daemon stop`: ask the daemon to shut down and wait for its process to end. */
export const daemonStopCommand: CommandSpec = {
  path: ["daemon", "stop"],
  summary: "Stop the running daemon (calls in flight finish first)",
  options: {
    ...STATE_DIR_OPTION,
    "timeout-ms": { type: "string", value: "MS", description: "How long to wait for it to exit (default 30000)" },
  },
  async run(ctx) {
    const timeoutMs = positiveIntOption(ctx.values, "timeout-ms") ?? 30_000;
    const stateDir = stateDirFor(ctx, await optionalConfig(ctx));
    const lockFile = lockFilePath(stateDir);
    const seen = await readLock(lockFile);
    const verdict = await judgeLock(seen);
    if (seen.state === "ok" && verdict === "hung") {
      // Its pid alive, its heartbeat late and no answer at its address: a hung daemon (or a
      // reused pid, which the command line tells apart). It cannot answer `shutdown`, so it is
      // signalled. A daemon that is only slow (a busy machine) answers and is stopped below.
      return stopHungDaemon(ctx, seen.lock, lockFile, timeoutMs);
    }
    if (seen.state !== "ok" || verdict !== "live") {
      // A stale lock left by a daemon that died: clear it so the next start need not take it over.
      if (seen.state === "ok") await releaseLock(lockFile, seen.lock.token);
      writeLine(ctx.io.stdout, `abridge daemon: not running (state dir ${stateDir})`);
      return ExitCode.OK;
    }
    const client = new DaemonClient({ stateDir, logger: ctx.logger });
    try {
      await client.shutdown({ signal: ctx.io.signal });
    } finally {
      client.close();
    }
    const deadline = Date.now() + timeoutMs;
    while (isPidAlive(seen.lock.pid)) {
      if (Date.now() >= deadline) {
        writeLine(ctx.io.stderr, `abridge daemon: pid ${seen.lock.pid} still running after ${timeoutMs} ms`);
        return ExitCode.FAILURE;
      }
      await delay(50, ctx.io.signal);
    }
    writeLine(ctx.io.stdout, `abridge daemon: stopped pid ${seen.lock.pid}`);
    return ExitCode.OK;
  },
};

/** True when a command line is abridge's `daemon` command (source or build, or an installed `abridge`). */
function isDaemonCommandLine(cmdline: string): boolean {
  const args = cmdline.split(" ");
  return args.includes("daemon") && args.some((a) => /(^|\/)abridge$|\/cli\/bin\.(ts|js)$/.test(a));
}

/** How long a hung daemon gets after SIGTERM before SIGKILL (at most; the command's timeout bounds it). */
const HUNG_TERM_GRACE_MS = 5_000;

async function waitForExit(pid: number, timeoutMs: number, signal: AbortSignal): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (isPidAlive(pid)) {
    if (Date.now() >= deadline) return false;
    await delay(50, signal);
  }
  return true;
}

/**
 * Stops a daemon whose lock is stale by heartbeat while its pid lives: SIGTERM, a grace period,
 * then SIGKILL. A daemon started detached leads its own process group, and the group is what is
 * killed, so its upstream children go too (a SIGKILLed daemon cannot end them itself). A pid whose
 * command line is not an abridge daemon was reused by something else and is left alone.
 */
async function stopHungDaemon(ctx: CommandContext, lock: LockInfo, lockFile: string, timeoutMs: number): Promise<number> {
  const pid = lock.pid;
  const cmdline = await processCommandLine(pid);
  if (cmdline === undefined || !isDaemonCommandLine(cmdline)) {
    await releaseLock(lockFile, lock.token);
    writeLine(
      ctx.io.stdout,
      `abridge daemon: not running (the lock's pid ${pid} is ${cmdline === undefined ? "not readable" : "another program"}; stale lock removed)`,
    );
    return ExitCode.OK;
  }
  const group = await processGroupOf(pid);
  const target = group === pid ? -pid : pid;
  writeLine(ctx.io.stderr, `abridge daemon: pid ${pid} is alive but its heartbeat stopped (hung); sending SIGTERM`);
  signalProcess(target, "SIGTERM");
  if (await waitForExit(pid, Math.min(HUNG_TERM_GRACE_MS, timeoutMs), ctx.io.signal)) {
    await releaseLock(lockFile, lock.token);
    writeLine(ctx.io.stdout, `abridge daemon: stopped hung pid ${pid} with SIGTERM`);
    return ExitCode.OK;
  }
  signalProcess(target, "SIGKILL");
  if (!(await waitForExit(pid, timeoutMs, ctx.io.signal))) {
    writeLine(ctx.io.stderr, `abridge daemon: pid ${pid} still running after SIGKILL`);
    return ExitCode.FAILURE;
  }
  // A killed daemon cannot remove its lock or its socket file; the next start takes both over.
  await releaseLock(lockFile, lock.token);
  writeLine(ctx.io.stdout, `abridge daemon: killed hung pid ${pid} with SIGKILL (no answer to SIGTERM)`);
  return ExitCode.OK;
}

/** `abridge daemon status`: pid, address, uptime and upstreams of the running daemon (exit 1 when none). */
export const daemonStatusCommand: CommandSpec = {
  path: ["daemon", "status"],
  summary: "Show the running daemon's pid, address, uptime and upstreams (exit 1 when none runs)",
  options: {
    ...STATE_DIR_OPTION,
    json: { type: "boolean", description: "Print the daemon's stats as JSON" },
  },
  async run(ctx) {
    const stateDir = stateDirFor(ctx, await optionalConfig(ctx));
    const seen = await readLock(lockFilePath(stateDir));
    const verdict = await judgeLock(seen);
    if (seen.state === "ok" && verdict === "hung") {
      writeLine(
        ctx.io.stderr,
        `abridge daemon: pid ${seen.lock.pid} is alive but its heartbeat stopped and it does not answer (hung); \`abridge daemon stop\` ends it`,
      );
      return ExitCode.FAILURE;
    }
    if (seen.state !== "ok" || verdict !== "live") {
      writeLine(ctx.io.stderr, `abridge daemon: not running (state dir ${stateDir})`);
      return ExitCode.FAILURE;
    }
    const client = new DaemonClient({ stateDir, logger: ctx.logger });
    let stats: DaemonStats;
    try {
      stats = await client.stats({ signal: ctx.io.signal });
    } catch (err) {
      if (isAbridgeError(err, ErrorCode.DAEMON_UNAVAILABLE)) {
        writeLine(ctx.io.stderr, `abridge daemon: pid ${seen.lock.pid} does not answer (${err.message})`);
        return ExitCode.FAILURE;
      }
      throw err;
    } finally {
      client.close();
    }
    if (ctx.values.json === true) {
      writeLine(ctx.io.stdout, JSON.stringify(stats, null, 2));
      return ExitCode.OK;
    }
    const { catalog, tokens } = stats;
    const lines = [
      `pid       ${String(stats.pid)}`,
      `address   ${String(stats.address)}`,
      `version   ${String(stats.version)}`,
      `uptime    ${formatUptime(stats.uptimeMs)}`,
      `tools     ${catalog.tools} (cache hits ${catalog.hits}, misses ${catalog.misses}, queue ${stats.queueDepth})`,
      `tokens    ${tokens.current} in ${tokens.mode} mode vs ${tokens.full} full (${tokens.saved} saved)`,
      "upstreams",
      ...stats.upstreams.map(
        (s) => `  ${s.name.padEnd(20)} ${s.state.padEnd(10)} ${String(s.toolCount).padStart(4)} tools${s.error ? `  ${s.error.message}` : ""}`,
      ),
    ];
    writeLine(ctx.io.stdout, lines.join("\n"));
    return ExitCode.OK;
  },
};
