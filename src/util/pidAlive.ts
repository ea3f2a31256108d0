import { readFileSync } from "node:fs";

/**
 * True while a process with this pid runs. Signal 0 probes without delivering anything; EPERM
 * means the process exists but belongs to another user, which still counts (a lock holder, a
 * reused pid). A zombie counts as gone: it has exited and only waits for its parent to reap it,
 * which a detached daemon's parent (init, or a container's first process that reaps slowly or
 * never) may do late; waiting on it as if it ran made `daemon stop` wait out its timeout.
 */
export function isPidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
  return !isZombie(pid);
}

/** True when /proc says `pid` has exited and not been reaped (state Z); false where /proc is not readable. */
function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The state follows the command name, which is in parentheses and may itself hold ") ".
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) === "Z";
  } catch {
    return false;
  }
}
