import { spawn, type ChildProcess } from "node:child_process";
import { silentLogger, type Logger } from "../../log/logger.js";
import { messageOf } from "../../model/errors.js";

/**
 * The watchdog, in POSIX sh. It reads `+PGID` and `-PGID` lines on stdin and keeps the set of
 * process groups alive; at end of input (abridge exited, however: `kill -9` included, since the
 * kernel closes the pipe of a dead process) it sends SIGTERM to each group, waits, and sends
 * SIGKILL. It ignores the terminal's signals: its only way to learn that abridge is gone must not
 * be cut short by the same Ctrl-C that abridge itself handles in order.
 */
const SCRIPT = `
trap '' INT TERM HUP
groups=""
while IFS= read -r line; do
  case "$line" in
    +*) groups="$groups \${line#+}" ;;
    -*) kept=""; for g in $groups; do [ "$g" = "\${line#-}" ] || kept="$kept $g"; done; groups="$kept" ;;
  esac
done
[ -z "$groups" ] && exit 0
for g in $groups; do kill -TERM "-$g" 2>/dev/null; done
sleep 2
for g in $groups; do kill -KILL "-$g" 2>/dev/null; done
exit 0
`;

/** What a child transport tells the watchdog. */
export interface ProcessGroupWatch {
  /** A child was spawned as the leader of process group `pgid`. */
  watch(pgid: number): void;
  /** That child has exited: its group id may be reused and must not be signalled any more. */
  unwatch(pgid: number): void;
}

/**
 * Ends abridge's stdio servers when abridge dies without closing them. Node offers no
 * `PR_SET_PDEATHSIG`, and a `kill -9` runs no handler of ours, so a server that ignores the end
 * of its stdin and SIGTERM lived on as an orphan. Every child is started in a process group of
 * its own (so its own children go with it), and a tiny `sh` outside abridge's process group holds
 * the read end of a pipe from abridge: when abridge is gone, however it went, the kernel closes
 * the pipe and the watchdog signals every group still registered. One watchdog serves a whole
 * pool; it is spawned on the first watch. Without `sh` the watch is a no-op and a warning is logged
 * (close() still ends every child on an orderly exit).
 */
export class ChildWatchdog implements ProcessGroupWatch {
  private process: ChildProcess | undefined;
  private failed = false;
  private closed = false;
  private readonly logger: Logger;
  private readonly shell: string;

  constructor(options: { logger?: Logger; shell?: string } = {}) {
    this.logger = options.logger ?? silentLogger;
    this.shell = options.shell ?? "/bin/sh";
  }

  watch(pgid: number): void {
    this.send(`+${pgid}`);
  }

  unwatch(pgid: number): void {
    if (this.process !== undefined) this.send(`-${pgid}`);
  }

  /** Pid of the watchdog process, once started. */
  get pid(): number | undefined {
    return this.process?.pid;
  }

  /** Ends the watchdog (an orderly exit: every child was closed already). Idempotent. */
  close(): void {
    this.closed = true;
    this.process?.stdin?.end();
  }

  private send(line: string): void {
    if (this.closed || this.failed) return;
    const child = this.process ?? this.start();
    if (child?.stdin?.writable) child.stdin.write(`${line}\n`);
  }

  private start(): ChildProcess | undefined {
    try {
      const child = spawn(this.shell, ["-c", SCRIPT], {
        stdio: ["pipe", "ignore", "ignore"],
        // Its own session: the terminal's Ctrl-C and a signal to abridge's group do not reach it.
        detached: true,
        env: {},
      });
      child.on("error", (err) => {
        this.failed = true;
        this.logger.warn("cannot start the child watchdog; servers may outlive a killed abridge", { error: err.message });
      });
      child.stdin?.on("error", () => undefined);
      // Neither the process nor the pipe may keep abridge's event loop alive.
      child.unref();
      (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
      this.process = child;
      return child;
    } catch (err) {
      this.failed = true;
      this.logger.warn("cannot start the child watchdog; servers may outlive a killed abridge", { error: messageOf(err) });
      return undefined;
    }
  }
}
