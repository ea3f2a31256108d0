/**
 * The two facts about processes the daemon and its client need. Kept in one small file so the
 * rest of the daemon code never reaches for the `process` global.
 */

/** The current process's id. */
export function currentPid(): number {
  return process.pid;
}

/**
 * True while a process with `pid` exists. `kill(pid, 0)` sends nothing and only checks; EPERM
 * means the process exists but belongs to another user, which still makes a lock holder alive.
 */
export function isPidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
