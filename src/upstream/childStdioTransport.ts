import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { StdioServerParameters } from "@modelcontextprotocol/sdk/client/stdio.js";

/** How often a pid is probed while waiting for a child to go away. */
const REAP_POLL_MS = 25;
/** After the SDK's own SIGKILL, how long to wait before sending SIGKILL again. */
const REKILL_AFTER_MS = 2_000;

/** True while a process with this pid exists (signal 0 probes without delivering anything). */
export function isPidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else (a reused pid); still "alive" for our purposes.
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Sleeps on an unref'd timer: shutdown must never be what keeps the event loop alive. */
function sleepUnref(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** Resolves once `pid` is gone, re-sending SIGKILL now and then in case the first was missed. */
export async function waitForPidExit(pid: number): Promise<void> {
  let waitedMs = 0;
  while (isPidAlive(pid)) {
    await sleepUnref(REAP_POLL_MS);
    waitedMs += REAP_POLL_MS;
    if (waitedMs >= REKILL_AFTER_MS) {
      waitedMs = 0;
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Already gone between the probe and the kill.
      }
    }
  }
}

/**
 * The environment of a stdio server: the SDK's default safe set (HOME, LOGNAME, PATH, SHELL,
 * TERM, USER on POSIX) with the configured `env` on top. The rest of abridge's own environment is
 * deliberately NOT inherited: it may hold other servers' tokens and the summarizer's API key, and
 * a server should only see the secrets its config entry hands it.
 */
export function childEnvironment(env: Record<string, string>): Record<string, string> {
  return { ...getDefaultEnvironment(), ...env };
}

/**
 * The SDK's stdio transport plus what its `close()` lacks. The SDK ends stdin, waits 2 s, sends
 * SIGTERM, waits 2 s, sends SIGKILL (all on unref'd timers) but returns without waiting for the
 * SIGKILL to take effect, and a second `close()` after the child died on its own does nothing.
 * Here `close()` is idempotent (the promise is kept) and resolves only when the pid is gone, so
 * a pool's `close()` can promise that no process is left behind. A spawn that failed (ENOENT)
 * has no process to end and closes at once instead of sitting through the SDK's grace periods.
 */
export class ChildStdioTransport extends StdioClientTransport {
  private spawnedPid: number | undefined;
  private closing: Promise<void> | undefined;
  private starting: Promise<void> | undefined;

  constructor(params: StdioServerParameters) {
    super(params);
  }

  /** Pid of the child once spawned; kept after it exits (unlike the SDK's `pid`). */
  get childPid(): number | undefined {
    return this.spawnedPid;
  }

  override async start(): Promise<void> {
    this.starting = super.start();
    await this.starting;
    this.spawnedPid = this.pid ?? undefined;
  }

  override close(): Promise<void> {
    this.closing ??= this.closeAndReap();
    return this.closing;
  }

  private async closeAndReap(): Promise<void> {
    // A close that races the spawn must wait for it, or the child would be born after the reaping.
    await this.starting?.catch(() => undefined);
    const pid = this.spawnedPid ?? this.pid ?? undefined;
    if (pid === undefined) {
      // Never spawned: the SDK would still wait for a 'close' that may not come.
      this.onclose?.();
      return;
    }
    await super.close();
    await waitForPidExit(pid);
  }
}
