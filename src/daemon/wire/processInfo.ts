/**
 * What the daemon and its client need to know about, and do to, processes. Kept in one small
 * file so the rest of the daemon code never reaches for the `process` global.
 */
import { readFile } from "node:fs/promises";

/** The current process's id. */
export function currentPid(): number {
  return process.pid;
}

/** The current process's user id, or undefined where there are none (Windows). */
export function currentUid(): number | undefined {
  return process.getuid?.();
}

export { isPidAlive } from "../../util/pidAlive.js";

/** The command line of `pid` (arguments joined by spaces), or undefined when it cannot be read (Linux /proc). */
export async function processCommandLine(pid: number): Promise<string | undefined> {
  try {
    return (await readFile(`/proc/${pid}/cmdline`, "utf8")).split("\0").join(" ").trim();
  } catch {
    return undefined;
  }
}

/** The process group of `pid` (field 5 of /proc/<pid>/stat), or undefined. */
export async function processGroupOf(pid: number): Promise<number | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) is in parentheses and may contain spaces: count from its end.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const group = Number(fields[2]);
    return Number.isInteger(group) && group > 0 ? group : undefined;
  } catch {
    return undefined;
  }
}

/** Sends `signal` to `pid` (a negative pid: its process group); false when it no longer exists. */
export function signalProcess(pid: number, signal: "SIGTERM" | "SIGKILL"): boolean {
  try {
    process.kill(pid, signal);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ESRCH") return false;
    throw err;
  }
}
