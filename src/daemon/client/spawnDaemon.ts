// The one client file that reaches for `process`: a detached daemon is started with the same
// Node binary that runs the host, and inherits its environment unless told otherwise.
import { spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** Name of the daemon's log file (its stdout and stderr) in the state directory. */
export const DAEMON_LOG_NAME = "daemon.log";

/** Options of {@link spawnDaemon}. */
export interface SpawnDaemonOptions {
  stateDir: string;
  /** Absolute path of the config file the daemon loads. */
  configPath: string;
  /** Working directory of the daemon (relative paths in the config resolve against it). */
  cwd: string;
  /** Environment of the daemon (default: this process's). */
  env?: Record<string, string | undefined>;
  logLevel?: string;
  /** More `abridge daemon` arguments (`--socket`, `--heartbeat-ms`). */
  extraArgs?: readonly string[];
}

/** A daemon process just started. */
export interface SpawnedDaemon {
  pid: number;
  logFile: string;
  /** Exit code once it has exited (null: killed by a signal); undefined while running. */
  exitCode(): number | null | undefined;
}

/**
 * The command that runs abridge's CLI. From source (this module is a `.ts` file, run by tsx or
 * vitest) that is Node with the tsx loader and `src/cli/bin.ts`; from a build, `dist/cli/bin.js`
 * (reached from dist/daemon/client/ in the library's files, or from beside it in the CLI bundle).
 * The loader is given as an absolute URL so the daemon does not depend on its working directory
 * to find tsx.
 */
export function cliCommand(): { command: string; args: string[] } {
  const here = import.meta.url;
  if (here.endsWith(".ts")) {
    const loader = createRequire(here).resolve("tsx");
    return { command: process.execPath, args: ["--import", pathToFileURL(loader).href, fileURLToPath(new URL("../../cli/bin.ts", here))] };
  }
  // In the CLI's bundle (build/bundleCli.ts) this code is in a chunk beside bin.js, in dist/cli/.
  const bin = here.endsWith("/spawnDaemon.js") ? "../../cli/bin.js" : "./bin.js";
  return { command: process.execPath, args: [fileURLToPath(new URL(bin, here))] };
}

/**
 * Starts `abridge daemon --config F --state-dir D` detached (its own process group, so the host's
 * Ctrl-C does not reach it), output appended to `<stateDir>/daemon.log`, and unref'd so the host
 * can exit while the daemon lives on.
 */
export function spawnDaemon(options: SpawnDaemonOptions): SpawnedDaemon {
  const { command, args } = cliCommand();
  const logFile = join(options.stateDir, DAEMON_LOG_NAME);
  const fd = openSync(logFile, "a", 0o600);
  let code: number | null | undefined;
  try {
    const child = spawn(
      command,
      [
        ...args,
        "daemon",
        "--config",
        options.configPath,
        "--state-dir",
        options.stateDir,
        // Without an explicit level the daemon follows the config's `log_level` (default warn).
        ...(options.logLevel !== undefined ? ["--log-level", options.logLevel] : []),
        ...(options.extraArgs ?? []),
      ],
      {
        detached: true,
        stdio: ["ignore", fd, fd],
        cwd: options.cwd,
        env: options.env ?? process.env,
      },
    );
    child.on("error", () => (code = null));
    child.on("exit", (exitCode) => (code = exitCode));
    child.unref();
    if (child.pid === undefined) throw new Error(`could not start ${command}`);
    return { pid: child.pid, logFile, exitCode: () => code };
  } finally {
    // The child holds its own copy of the descriptor.
    closeSync(fd);
  }
}
