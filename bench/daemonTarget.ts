import path from "node:path";
import { DaemonClient } from "../src/daemon/client/daemonClient.js";
import type { Connected } from "./mcpTarget.js";
import { isAlive } from "./mcpTarget.js";
import { sleep } from "./measure.js";

/** Options of {@link connectDaemon}. */
export interface DaemonTargetOptions {
  /** Config file the daemon loads. */
  config: string;
  /** A fresh directory: the daemon's state dir (lockfile, log) goes below it. */
  cacheDir: string;
  /** Server whose tools `call` reaches (calls name the upstream's own tool). */
  server: string;
  signal?: AbortSignal;
}

/**
 * Starts a daemon for `config` through the client (`DaemonClient` with auto-start, which runs
 * `ensureDaemon`) in a private state dir, and returns it as a call target. Closing shuts the
 * daemon down and makes sure its pid is gone.
 */
export async function connectDaemon(options: DaemonTargetOptions): Promise<Connected> {
  const stateDir = path.join(options.cacheDir, "daemon-state");
  const client = new DaemonClient({
    stateDir,
    autoStart: { config: options.config, env: { ...process.env, ABRIDGE_CACHE_DIR: options.cacheDir }, logLevel: "error" },
  });
  let pid: number | undefined;
  // The client waits for the spawned daemon on unref'd timers; with nothing else pending in this
  // process Node would exit mid-await (code 13), so a ref'd timer holds the loop open meanwhile.
  const keepAlive = setInterval(() => {}, 1_000);
  try {
    pid = (await client.connect({ signal: options.signal ? AbortSignal.any([options.signal, AbortSignal.timeout(60_000)]) : AbortSignal.timeout(60_000) })).pid;
  } catch (err) {
    client.close();
    throw err;
  } finally {
    clearInterval(keepAlive);
  }
  let closing: Promise<void> | undefined;
  return {
    call: (tool, args, signal) => client.callTool(options.server, tool, args, signal ? { signal } : {}),
    listTools: async (signal) => (await client.listTools(signal ? { signal } : {})).length,
    ...(pid !== undefined ? { pid } : {}),
    close: () =>
      (closing ??= (async () => {
        await client.shutdown().catch(() => {});
        client.close();
        if (pid === undefined) return;
        const deadline = Date.now() + 10_000;
        while (isAlive(pid) && Date.now() < deadline) await sleep(50);
        if (isAlive(pid)) process.kill(pid, "SIGKILL");
      })()),
  };
}
